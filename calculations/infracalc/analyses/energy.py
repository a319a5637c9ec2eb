"""Energy and cost of one pass, composed from the ledger's totals (no formula of its own for FLOPs or
bytes: `forward` counts them).

Energy ledger: E = sum over byte classes of bytes x e(level) + matrix FLOPs x e(FLOP), with the
per-byte and per-FLOP energies of FIGURES (each one a quoted figure of a public source, converted
exactly). The ledger's bytes are off-chip traffic, so they are priced at the HBM figure; the other
levels are a ladder ("if every weight and KV byte came from that level"), not a data path. A level
with no sourced figure is unknown (None), never a guess; so are vector FLOPs (no sourced per-op
energy for the vector unit), which the total leaves out and says so.

Alternative: board power x time, E = TDP x t for a stated time (the ideal lower bound, the
operator-sum estimate, the prediction): the energy the device's rated power draws over the pass;
beside it the ledger's average power E_ledger / t.

Cost: C = devices x t / 3600 x price per device-hour; per million tokens C x 10^6 / tokens.
"""

from fractions import Fraction

PJ = Fraction(1, 10**12)

# (level, energy per byte in pJ, quoted figure, source). pJ/word figures are 32-bit words (/ 4),
# pJ/bit figures x 8; the conversions are the book's (bojieli/ai-infra-book:
# calculations/src/infra_calc/topics/energy_ledger.py), the quotes the sources'.
FIGURES = (
    ("register", None, None, "no public per-byte figure found"),
    ("shared_l1", Fraction(5, 4), "5 pJ/word (32-bit), local SRAM (KB level), 45 nm",
     "W. Dally, Hardware for Deep Learning, Hot Chips 2023 keynote (energy table after Horowitz, "
     "ISSCC 2014)"),
    ("l2", Fraction(50, 4), "50 pJ/word (32-bit), on-chip SRAM (MB level), 45 nm",
     "W. Dally, Hardware for Deep Learning, Hot Chips 2023 keynote (after Horowitz, ISSCC 2014)"),
    ("hbm", Fraction("3.97") * 8, "3.97 pJ/bit, HBM2 access",
     "M. O'Connor et al., Fine-Grained DRAM, MICRO-50 (2017): \"The energy to access a bit in HBM2 is "
     "approximately 3.97 pJ/bit\""),
    ("nvlink", Fraction("1.3") * 8, "1.3 pJ/bit, NVLink-C2C",
     "NVIDIA, Grace Hopper Superchip architecture blog: \"NVLink-C2C also only uses 1.3 picojoules "
     "per bit\""),
    ("nic", None, None, "no public per-byte figure found (the ConnectX-7 datasheet gives none)"),
)
# Reference per-byte figures of other memories and wires (the book's comparison rows; not levels of
# this device's path): (name, pJ per byte, quoted figure, source).
REFERENCES = (
    ("dram_lpddr_45nm", Fraction(640, 4), "640 pJ/word (32-bit), LPDDR DRAM, 45 nm",
     "W. Dally, Hot Chips 2023 keynote (energy table after Horowitz, ISSCC 2014)"),
    ("dram_access_dally_aha", Fraction(5 * 8), "5 pJ/bit DRAM access",
     "W. Dally, Stanford AHA retreat keynote (2023-08-31): \"Part of 5pJ/b access\""),
    ("hbm2_including_ecc", Fraction("3.92") * 8, "3.92 pJ/bit, HBM2 access including ECC",
     "M. O'Connor et al., Fine-Grained DRAM, MICRO-50 (2017)"),
    ("gddr5", Fraction("14.0") * 8, "14.0 pJ/bit, GDDR5", "M. O'Connor et al., Fine-Grained DRAM, MICRO-50 (2017)"),
    ("on_die_wire_48mm_round_trip", Fraction(100, 1000) * 48 * 8, "100 fJ/bit-mm x 48 mm = 4.8 pJ/bit",
     "W. Dally, Stanford AHA retreat keynote (2023-08-31): \"4.8pJ/b @ 100fJ/b-mm\""),
)
# one FP16 fused multiply-add (2 FLOPs) 1.5 pJ at 45 nm
PJ_PER_MATRIX_FLOP = Fraction(3, 4)
FLOP_SOURCE = ("1.5 pJ per HFMA (FP16 fused multiply-add = 2 FLOPs), 45 nm; W. Dally, Hot Chips 2023 "
               "keynote (after Horowitz, ISSCC 2014)")


def joules(count, pj):
    """count x pJ in joules (exact), or None when the energy is unknown."""
    return None if pj is None else count * pj * PJ


def ledger(totals, passes_tokens, requests):
    """The energy ledger of one pass from `forward`'s totals: each term's bytes or FLOPs and
    joules, the total of the known terms, per token and per request."""
    hbm = dict((lv, pj) for lv, pj, _, _ in FIGURES)["hbm"]
    terms = [("weight reads", "hbm", totals["weight_bytes_read"], hbm),
             ("KV reads", "hbm", totals["kv_bytes_read"], hbm),
             ("activation reads", "hbm", totals["act_bytes_read"], hbm),
             ("writes", "hbm", totals["bytes_written"], hbm),
             ("matrix FLOPs", "compute", totals["matrix_flops"], PJ_PER_MATRIX_FLOP),
             ("vector FLOPs", "compute", totals["vector_flops"], None)]
    rows = [{"term": t, "level": lv, "count": n, "pj_per_unit": _text(pj), "joules": _float(joules(n, pj))}
            for t, lv, n, pj in terms]
    total = sum(joules(n, pj) for _, _, n, pj in terms if pj is not None)
    book = sum(joules(n, pj) for t, _, n, pj in terms if t in ("weight reads", "KV reads", "matrix FLOPs"))
    w_bytes, kv_bytes = totals["weight_bytes_read"], totals["kv_bytes_read"]
    weights = joules(w_bytes, hbm)

    def rung(lv, pj, q, s):
        return {"level": lv, "pj_per_byte": _text(pj), "quoted": q, "source": s,
                "weight_joules": _float(joules(w_bytes, pj)), "kv_joules": _float(joules(kv_bytes, pj)),
                "weight_plus_kv_joules": _float(joules(w_bytes + kv_bytes, pj))}

    return {
        "terms": rows,
        "known_joules": float(total),
        "weights_kv_matrix_joules": float(book),
        "known_joules_per_token": float(total / passes_tokens),
        "known_joules_per_request": float(total / requests),
        "weights_kv_matrix_joules_per_token": float(book / passes_tokens),
        "unknown_terms": [t for t, _, _, pj in terms if pj is None],
        "weight_fraction_of_weights_kv_matrix": float(weights) / float(book) if book else None,   # binary64
        "levels": [rung(*f) for f in FIGURES],
        "reference_levels": [rung(*f) for f in REFERENCES],
    }


def board(tdp_watts, times, tokens, ledger_joules):
    """TDP x each stated time: joules per pass and per token (None with no TDP in the device file),
    and the energy ledger's average power over that time, ledger joules / t (the book's comparison of
    the ledger with the board's rated power)."""
    return [{"time": what, "seconds": t, "joules": tdp_watts * t if tdp_watts else None,
             "joules_per_token": tdp_watts * t / tokens if tdp_watts else None,
             "ledger_watts": ledger_joules / t}
            for what, t in times if t is not None]


def cost(price_per_device_hour, devices, times, tokens):
    """Each stated time's device-hours, dollars per pass and per million tokens."""
    rows = []
    for what, t in times:
        if t is None:
            continue
        hours = devices * t / 3600
        dollars = hours * price_per_device_hour
        rows.append({"time": what, "device_hours": hours, "dollars": dollars,
                     "dollars_per_million_tokens": dollars * 10**6 / tokens})
    return rows


def _text(pj):
    return None if pj is None else str(pj)


def _float(x):
    return None if x is None else float(x)

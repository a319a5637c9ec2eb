"""Two dense models' passes padded to one kernel tile and served at declared matrix rates
(`budget tile-order`): which one finishes its matrix work first (the book's architecture-tile-*).

Each model's valid, rectangular and padded FLOPs are `forward --tile`'s totals
(analyses/tile_padding). From them, at a declared rate R that serves padded work:

    causal extra    = rectangular - valid          (masked query-key pairs a dense kernel computes)
    tile extra      = padded - rectangular         (tails of whole tiles)
    service         = padded / R                   (seconds, a conditional figure, not a latency)
    effective rate  = valid / service              (= R x valid / padded)

Second against first: valid_2 / valid_1 and padded_2 / padded_1, exact; the second finishes
first iff R_2 / R_1 > padded_2 / padded_1 (equal: neither).

Worked case: padded 200 at R 100 and padded 100 at R 40 (valid 150 and 90): services 2 and 2.5,
effective rates 75 and 36; the padded ratio 1/2 exceeds the rate ratio 2/5, so the second is not
faster.
"""

from fractions import Fraction

TILE_ORDER_CONVENTIONS = [
    "Matrix work of each pass as `forward --tile` counts it (valid = causal pairs for attention; rectangular "
    "= the whole query-key rectangle; padded = whole tiles, masked ones included); causal extra = rectangular "
    "- valid, tile extra = padded - rectangular: the two are disjoint and never added twice.",
    "Conditional service = padded FLOPs / the declared matrix rate (the rate serves padded work; binary64 "
    "division), effective valid rate = valid FLOPs / that service: arithmetic under a declared rate, not a "
    "measured tensor-core utilization or a latency (vector work, launches and memory are outside it).",
    "Second against first: exact valid and padded ratios; the second finishes its matrix work first iff its "
    "rate ratio exceeds its padded ratio.",
]


def _exact(f):
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def service(model, params, totals, rate):
    """One pass's tile figures at a declared rate (FLOP/s, an integer)."""
    valid, rect, padded = (totals[k] for k in ("valid_matrix_flops", "rectangular_matrix_flops",
                                               "padded_matrix_flops"))
    seconds = padded / rate
    return {"model": model, "parameters": params, "valid_matrix_flops": valid, "rectangular_matrix_flops": rect,
            "padded_matrix_flops": padded, "causal_extra_flops": rect - valid, "tile_extra_flops": padded - rect,
            "valid_fraction_of_padded": _exact(Fraction(valid, padded)),
            "padded_over_valid": _exact(Fraction(padded, valid)),
            "declared_rate_flops_per_s": rate, "conditional_matrix_service_s": seconds,
            "effective_valid_flops_per_s": valid / seconds}


def tile_order(first, second):
    """The two `service` records and their comparison (second against first)."""
    padded = Fraction(second["padded_matrix_flops"], first["padded_matrix_flops"])
    rates = Fraction(second["declared_rate_flops_per_s"], first["declared_rate_flops_per_s"])
    return {"passes": [first, second],
            "second_over_first_valid": _exact(Fraction(second["valid_matrix_flops"], first["valid_matrix_flops"])),
            "second_over_first_padded": _exact(padded), "second_over_first_rate": _exact(rates),
            "second_faster": rates > padded}

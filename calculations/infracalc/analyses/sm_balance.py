"""Steady-state resource balance of one attention tile on one SM (the book's chapter-4 reading of
the FlashAttention-4 paper's Table 1): tensor-core, exponential-unit and shared-memory cycles of
the QK^T -> exp -> PV work of an M x N tile with head dimension d, on 128 x 128 MMA output tiles.

    matrix FLOPs = 4 M N d                          (QK^T and PV, dense rectangle)
    exponentials = M N
    shared-memory reads = (M/128)(N/128) x (128 d + 128 d) x 2 B      (QK^T: Q and K per output tile)
                        + (M/128)(d/128) x N x 128 x 2 B              (PV: V per output tile; P from TMEM)
    cycles of a resource = its work / (its rate per SM cycle x a declared supply multiplier)
    bound = max of the three (ideal overlap: a steady-state bound, not the serial latency)

The default rates are the paper's B200 per-SM analysis inputs as the book records them (BF16 MMA
8,192 FLOPs, 16 exponentials and 128 shared-memory bytes per SM cycle: T. Dao et al.,
FlashAttention-4, MLSys 2026, Table 1); the multipliers are hypothetical supply changes, not
another GPU. Reductions, scaling, TMEM traffic and synchronisation are not counted (not zero).
"""

from fractions import Fraction

from .runtime_choices import exact

SM_BALANCE_CONVENTIONS = [
    "One M x N attention tile of head dimension d on one SM, 128 x 128 MMA output tiles, BF16: matrix 4MNd FLOPs, "
    "MN exponentials, shared-memory reads of Q and K per QK^T output tile and of V per PV output tile (P from "
    "TMEM); cycles = work / (per-SM-cycle rate x supply multiplier), the bound is their maximum (ideal overlap, "
    "not the serial QK^T-softmax-PV latency). Default rates: FlashAttention-4 (Dao et al., MLSys 2026) Table 1, "
    "B200 per SM, as the book records them; multipliers are hypothetical supply changes. Reductions, scaling, "
    "TMEM traffic and synchronisation are not counted.",
]

MMA = 128


def tile_balance(m, n, d, *, rates, supply):
    qk_tiles, pv_tiles = (m // MMA) * (n // MMA), (m // MMA) * (d // MMA)
    qk_smem, pv_smem = qk_tiles * 2 * MMA * d * 2, pv_tiles * n * MMA * 2
    work = {"matrix": 4 * m * n * d, "smem": qk_smem + pv_smem, "exp": m * n}
    cycles = {k: Fraction(work[k], rates[k] * supply[k]) for k in ("matrix", "smem", "exp")}
    bound = max(cycles.values())
    return {"m": m, "n": n, "supply": "{matrix}:{exp}:{smem}".format(**supply),
            "qk_output_tiles": qk_tiles, "pv_output_tiles": pv_tiles,
            "matrix_flops": work["matrix"], "smem_read_bytes": work["smem"], "exponentials": work["exp"],
            "unique_qkv_bytes": 2 * (m * d + 2 * n * d),
            **{f"{k}_cycles": exact(v) for k, v in cycles.items()}, "bound_cycles": exact(bound),
            "limited_by": ", ".join(k for k, v in cycles.items() if v == bound)}


def sm_balance(*, head_dim, tiles, supplies, rates):
    rows = []
    for m, n in tiles:
        base = None
        for s in supplies:
            row = tile_balance(m, n, head_dim, rates=rates, supply=s)
            base = base or Fraction(row["bound_cycles"])
            row["bound_ratio_to_first"] = exact(Fraction(row["bound_cycles"]) / base)
            rows.append(row)
    return {"head_dim": head_dim, "rates_per_sm_cycle": dict(rates), "rows": rows}

"""MoE capacity factor (`budget capacity`): with a fixed capacity per expert, tokens routed
beyond it are dropped and the slots below it are padding that the expert GEMM still computes.

A tokens x top-k = A assignments over E experts, expert i receiving n_i (sum n_i = A: a declared
integer histogram, or relative loads that split A into whole tokens). For a capacity factor f:

  capacity per expert  C = ceil(f A / E)          (the mean load scaled by f, whole tokens)
  dropped              D = sum_i max(0, n_i - C)  (fraction D / A)
  padding              P = sum_i max(0, C - n_i)  (fraction P / (E C) of the executed slots)
  executed slots       E C = A - D + P       (E C / A of the assignments; the busiest expert runs
                                             min(max_i n_i, C) rows)

Per run of consecutive experts with one load (`expert_groups`): each one's executed rows
min(n, C), dropped max(0, n - C) and padding max(0, C - n).

With a model (`--model`), the expert GEMM work per MoE layer of the executed slots is
E C x 2 x (3 h I) FLOPs (gate, up and down projections of width I on hidden h), of which
(A - D) x 2 x 3 h I are useful; padding and drops are not in `forward`'s ledger, which
counts the routed tokens themselves (no capacity limit).
"""

from fractions import Fraction

from ..errors import UserError


def loads_of(weights, assignments, experts):
    """Whole-token loads: the relative `weights` (one per expert) split `assignments` exactly."""
    if len(weights) != experts:
        raise UserError(f"--loads gives {len(weights)} experts' loads; the layer has {experts} experts")
    total = sum(weights)
    if total <= 0:
        raise UserError("--loads must have a positive sum")
    out = []
    for w in weights:
        share = Fraction(assignments * w, total)
        if share.denominator != 1:
            raise UserError(f"--loads do not split {assignments:,} assignments into whole tokens per expert "
                            f"(an expert of weight {w} gets {float(share):g}); give integer loads summing to it")
        out.append(int(share))
    return out


def capacity_rows(loads, factors):
    """One row per capacity factor (module docstring)."""
    experts, assignments = len(loads), sum(loads)
    rows = []
    for f in factors:
        mean = Fraction(f) * assignments / experts
        cap = -(-mean.numerator // mean.denominator)          # ceil(f A / E)
        dropped = sum(max(0, n - cap) for n in loads)
        padded = sum(max(0, cap - n) for n in loads)
        rows.append({"capacity_factor": str(Fraction(f)), "capacity_per_expert": cap, "executed_slots": experts * cap,
                     "executed_over_assignments": str(Fraction(experts * cap, assignments)),
                     "busiest_expert_rows": min(max(loads), cap),
                     "dropped_total": dropped, "dropped_fraction": str(Fraction(dropped, assignments)),
                     "padded_total": padded, "padded_fraction_of_executed": str(Fraction(padded, experts * cap))})
    return rows


def expert_groups(loads, rows):
    """Per capacity row and per run of consecutive experts with one load: each expert's executed rows,
    dropped and padded assignments (module docstring)."""
    runs, start = [], 0
    for i in range(1, len(loads) + 1):
        if i == len(loads) or loads[i] != loads[start]:
            runs.append((start, i - 1, loads[start]))
            start = i
    out = []
    for r in rows:
        cap = r["capacity_per_expert"]
        for first, last, n in runs:
            out.append({"capacity_factor": r["capacity_factor"],
                        "experts": str(first) if first == last else f"{first}-{last}",
                        "assignments_each": n, "executed_rows_each": min(n, cap),
                        "dropped_each": max(0, n - cap), "padded_each": max(0, cap - n)})
    return out


def expert_flops(rows, hidden, intermediate, assignments):
    """Per MoE layer: executed (padded) and useful expert matrix FLOPs of each row."""
    per_slot = 2 * 3 * hidden * intermediate
    for r in rows:
        r["executed_expert_flops_per_layer"] = r["executed_slots"] * per_slot
        r["useful_expert_flops_per_layer"] = (assignments - r["dropped_total"]) * per_slot
    return rows

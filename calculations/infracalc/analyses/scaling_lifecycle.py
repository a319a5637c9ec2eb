"""Training plus lifetime serving cost of candidate model sizes that reach one target loss under a fitted
law L = E + A (N/N0)^-alpha + B (D/D0)^-beta (the book's chapter-3 experiments 3-7 and 3-8).

For each candidate N (in order): the loss left for data is g = L* - E - A (N/N0)^-alpha; N is infeasible
when g <= 0, else the tokens that reach L* are D = D0 (g / B)^(-1/beta). With declared prices per FLOP:

    training FLOPs       = 6 N D                         (k N D with k = 6)
    prefill FLOPs / call = 2 N P                         (P input tokens)
    decode FLOPs / call  = 2 N G'                        (G' decode steps: the first output token comes
                                                          from the input pass, so G returned tokens are
                                                          G' = G - 1 steps)
    upfront  = training FLOPs x train price + setup
    per call = prefill FLOPs x prefill price + decode FLOPs x decode price
    total(C) = upfront + C x per call                    (C calls)

Two feasible sizes cross at C = (upfront_right - upfront_left) / (per_left - per_right): a
non-negative crossing, a negative one (the line of the smaller per-call cost is also cheaper upfront,
never crossed), parallel (equal per-call cost) or coincident. For each declared call count the
candidate of least total cost is named (the first on a tie). A candidate's extrapolation factor is
max(1, lo / x, x / hi) for its N and D against the fit box [lo, hi]. With fixed compute budgets C_f
(no bounds), the continuous optimum of 6 N D = C_f is N = N0 exp((ln(alpha A / (beta B)) + beta ln Q) /
(alpha + beta)), Q = C_f / (6 N0 D0), and D = C_f / 6 / N; an allocation policy N = N_anchor (C_f /
C_f0)^x (D = C_f / (6 N)) starts from the first budget's optimum.

Binary64 in the book calculator's order (bojieli/ai-infra-book:calculations/src/infra_calc/topics/
scaling_law.py, `lifecycle` and `compute_optimum`): products left to right as written above.

Worked case (by hand): E = 1, A = B = 1, alpha = beta = 1/2, N0 = D0 = 1, L* = 2.5 and N = 4: g = 2.5 - 1
- 1/2 = 1, D = 1, training 6 x 4 x 1 = 24 FLOPs; P = 2, G' = 3 at prices 1/8 and 1/2: per call
2 x 4 x 2 / 8 + 2 x 4 x 3 / 2 = 14.
"""

import math

from .scaling_fit import SCALING_FIT_CONVENTIONS, law_loss, power_term


def candidate(law, n, target_loss, prices, input_tokens, decode_steps, k=6):
    """One size's row: D at the target, training and per-call FLOPs and costs (None when infeasible)."""
    gap = target_loss - law["E"] - power_term(law["A"], n, law["N0"], law["alpha"])
    if gap <= 0:
        return {"N": n, "feasible": False}
    d = power_term(law["D0"], gap, law["B"], 1 / law["beta"])
    train = k * n * d
    prefill = 2 * n * input_tokens
    decode = 2 * n * decode_steps
    upfront = train * prices["train"] + prices["setup"]
    per_call = prefill * prices["prefill"] + decode * prices["decode"]
    return {"N": n, "feasible": True, "D": d, "predicted_loss": law_loss(law, n, d), "training_flops": train,
            "prefill_flops_per_call": prefill, "decode_flops_per_call": decode,
            "training_cost": train * prices["train"], "upfront_cost": upfront, "cost_per_call": per_call}


def crossing(left, right):
    """The call count at which two cost lines meet, and its kind."""
    diff = left["cost_per_call"] - right["cost_per_call"]
    calls = (right["upfront_cost"] - left["upfront_cost"]) / diff if diff else None
    if not diff:
        status = "coincident" if left["upfront_cost"] == right["upfront_cost"] else "parallel"
    else:
        status = "nonnegative_crossing" if calls >= 0 else "negative_crossing"
    row = {"left_N": left["N"], "right_N": right["N"], "calls": calls if status == "nonnegative_crossing" else None,
           "status": status, "relative_cost_equality_error": None}
    if row["calls"] is not None:   # both lines at the crossing, as a check of the rounding
        lcost = left["upfront_cost"] + calls * left["cost_per_call"]
        rcost = right["upfront_cost"] + calls * right["cost_per_call"]
        row["relative_cost_equality_error"] = abs(lcost - rcost) / max(1, abs(lcost), abs(rcost))
    return row


def extrapolation(box, value, key):
    lo, hi = box[key]
    return max(1, lo / value, value / hi)


def compute_optimum(law, budget, k=6):
    """The continuous N, D minimising the law under k N D = budget (no bounds)."""
    a, b = law["alpha"], law["beta"]
    q = budget / (k * law["N0"] * law["D0"])
    ratio = a * law["A"] / (b * law["B"])
    n = math.exp((math.log(ratio) + b * math.log(q)) / (a + b)) * law["N0"]
    d = budget / k / n
    return {"budget_flops": budget, "N": n, "D": d, "training_flops": k * n * d,
            "predicted_loss": law_loss(law, n, d)}


def lifecycle(*, law, box, sizes, target_loss, prices, input_tokens, decode_steps, call_counts,
              lifetime_calls=None, budgets=(), policies=()):
    """Rows per size, pairwise crossings, the cheapest size per call count; optional optima and policies."""
    rows = [candidate(law, n, target_loss, prices, input_tokens, decode_steps) for n in sizes]
    feasible = [r for r in rows if r["feasible"]]
    for r in feasible:
        r["outside_fit_box"] = any(not box[k][0] <= r[k] <= box[k][1] for k in ("N", "D"))
        r["N_extrapolation"] = extrapolation(box, r["N"], "N")
        r["D_extrapolation"] = extrapolation(box, r["D"], "D")
        if lifetime_calls is not None:
            r["lifetime_inference_cost"] = lifetime_calls * r["cost_per_call"]
            r["total_cost"] = r["upfront_cost"] + r["lifetime_inference_cost"]
    crossings = [crossing(left, right) for i, left in enumerate(feasible) for right in feasible[i + 1:]]
    curves = []
    for calls in call_counts:
        values = [(r["N"], r["upfront_cost"] + calls * r["cost_per_call"]) for r in feasible]
        best = min(values, key=lambda v: v[1])[0] if values else None
        curves += [{"calls": calls, "N": n, "total_cost": total, "cheapest_N": best} for n, total in values]
    out = {"rows": rows, "crossings": crossings, "curves": curves}
    if lifetime_calls is not None:
        out["lifetime_calls"] = lifetime_calls
        out["cheapest_N_over_lifetime"] = min(feasible, key=lambda r: r["total_cost"])["N"] if feasible else None
    if budgets:
        out["budget_optima"] = [compute_optimum(law, c) for c in budgets]
    if policies:
        anchor = compute_optimum(law, budgets[0])["N"]
        out["allocation_policies"] = []
        for name, exponent in policies:
            for c in budgets:
                n = anchor * (c / budgets[0]) ** exponent
                out["allocation_policies"].append({"policy": name, "budget_flops": c, "N": n, "D": c / (6 * n),
                                                   "predicted_loss": law_loss(law, n, c / (6 * n))})
    return out


SCALING_LIFECYCLE_CONVENTIONS = SCALING_FIT_CONVENTIONS + [
    "A size N reaches the target loss L* with "
    "D = D0 ((L* - E - A (N/N0)^-alpha) / B)^(-1/beta) tokens, or is infeasible when that gap is <= 0.",
    "Proxy work, not a hardware model: training 6 N D FLOPs; a call 2 N P (input) + 2 N (G - 1) (decode "
    "steps: the first output comes from the input pass) FLOPs; no attention, KV, batching or communication. "
    "Costs are declared prices per FLOP (any unit) plus a setup cost: upfront = training x price + setup, "
    "total(C calls) = upfront + C x cost per call; two sizes cross at the call count where their lines meet.",
    "Equal predicted loss is a quality proxy on one data and evaluation set, not equal task quality; the "
    "cheapest size is over the declared candidates only.",
]

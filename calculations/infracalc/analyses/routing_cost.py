"""Routing between priced services with a prefix cache: expected attempt cost, quality and
quality-and-deadline successes, and where one service's cost per success crosses another's (the
book's chapter-11 routing cost).

A request has F fresh and X prefix tokens. Candidate k charges declared prices per million tokens
(input i_k, cached input h_k, output o_k), emits R_k reasoning + V_k visible tokens (billed once as
output), succeeds in quality with probability q_k, finds its prefix cached with probability f_k
and then takes t_hit, else t_miss (declared request times):

    hit   = (F i + X h + (R + V) o) / 10^6,     miss = ((F + X) i + (R + V) o) / 10^6,
    E[cost] = f hit + (1 - f) miss,   cost per quality success = E[cost] / q,
    on time = f [t_hit <= D] + (1 - f) [t_miss <= D],   joint = q x on time (quality independent of the branch).

Against the first candidate (the reference, cost per quality success c_0), candidate k's cost per
quality success equals c_0 at the hit fraction f* = (miss - c_0 q) / (miss - hit) (may fall outside
[0, 1]); the smallest f with joint >= a target T is 0 when q [t_miss <= D] >= T, else
(T - q [t_miss <= D]) / (q ([t_hit <= D] - [t_miss <= D])) when that is reachable at f <= 1, else none.
For N tasks: N E[cost] dollars, N q quality and N joint joint successes. Exact fractions; prices and
times are declared, not quotes or measurements.
"""

from fractions import Fraction

MILLION = 10**6


def attempt_costs(c, fresh, prefix):
    """(hit, miss) dollars of one attempt of candidate c."""
    out = (c["reasoning"] + c["visible"]) * c["output_price"]
    return ((fresh * c["input_price"] + prefix * c["cache_price"] + out) / MILLION,
            ((fresh + prefix) * c["input_price"] + out) / MILLION)


def on_time(c, deadline):
    return c["hit"] * (c["hit_s"] <= deadline) + (1 - c["hit"]) * (c["miss_s"] <= deadline)


def minimum_hit(c, deadline, target):
    """The smallest hit fraction whose joint success reaches the target, or None."""
    a, b, q = int(c["hit_s"] <= deadline), int(c["miss_s"] <= deadline), c["quality"]
    if q * b >= target:
        return Fraction(0)
    if q * a >= target:
        return (target - q * b) / (q * (a - b))
    return None


def _ratio(a, b):
    return str(a / b) if b else None


def routing_cost(*, candidates, fresh, prefix, tasks, deadline_s, target):
    rows = []
    for c in candidates:
        hit, miss = attempt_costs(c, fresh, prefix)
        cost = c["hit"] * hit + (1 - c["hit"]) * miss
        joint = c["quality"] * on_time(c, deadline_s)
        rows.append({"candidate": c["name"], "hit_fraction_exact": str(c["hit"]), "hit_attempt_cost_exact": str(hit),
                     "miss_attempt_cost_exact": str(miss), "expected_attempt_cost_exact": str(cost),
                     "total_cost_exact": str(tasks * cost), "quality_successes_exact": str(tasks * c["quality"]),
                     "cost_per_quality_success_exact": str(cost / c["quality"]),
                     "joint_successes_exact": str(tasks * joint), "joint_fraction_exact": str(joint),
                     "cost_per_joint_success_exact": _ratio(cost, joint)})
    reference = Fraction(rows[0]["cost_per_quality_success_exact"])
    comparisons = []
    for c, row in list(zip(candidates, rows))[1:]:
        hit, miss = Fraction(row["hit_attempt_cost_exact"]), Fraction(row["miss_attempt_cost_exact"])
        crossover = (miss - reference * c["quality"]) / (miss - hit) if miss != hit else None
        least = minimum_hit(c, deadline_s, target)
        comparisons.append({
            "candidate": c["name"], "against": candidates[0]["name"],
            "cost_crossover_hit_fraction_exact": None if crossover is None else str(crossover),
            "crossover_in_unit_interval": crossover is not None and 0 <= crossover <= 1,
            "cheaper_per_quality_success": Fraction(row["cost_per_quality_success_exact"]) < reference,
            "minimum_hit_for_joint_target_exact": None if least is None else str(least),
            "meets_joint_target": Fraction(row["joint_fraction_exact"]) >= target})
    return {"joint_target_exact": str(target), "candidates": rows, "comparisons": comparisons}


ROUTING_CONVENTIONS = [
    "Attempt cost = (fresh x input price + prefix x cached price, or (fresh + prefix) x input price on a miss, + "
    "(reasoning + visible) x output price) / 10^6 at declared prices per million tokens; expected over the "
    "declared hit fraction. Cost per quality success = expected cost / quality probability (every attempt billed, "
    "failures included); on time = hit fraction x [hit time <= deadline] + the rest x [miss time <= deadline]; "
    "joint = quality x on time (independent).",
    "Each later candidate against the first: the hit fraction at which its cost per quality success equals the "
    "first's (exact; may fall outside [0, 1]), whether it is strictly cheaper, and the smallest hit fraction "
    "reaching the joint target (none when no fraction can). Prices and times are declared teaching figures.",
]

"""Checkpoint intervals: the blocking save cost c, the failure rate, Young's first-order interval
and the optimum of the Poisson retry model (the book's chapter 10).

A blocking checkpoint of P bytes at a sustained write bandwidth W costs c = P / W seconds of
training. Failures of n devices, each exponential with mean time between failures M, and an
independent job-level shock of mean M_j arrive at rate lambda = n / M + 1 / M_j. With tau useful
seconds between saves and a restart costing r:

- first order (Young 1974): lost fraction c / tau + lambda tau / 2 + lambda r, least at
  tau* = sqrt(2 c / lambda);
- Poisson retry model (saves and work both fail; a failure loses the round; r itself never
  fails): one round's expected wall time E = (exp(lambda (tau + c)) - 1) (1 / lambda + r), useful
  share tau / E, most at y = lambda tau solving y - 1 + exp(-y - lambda c) = 0 (r does not move
  it). Solved by bisection on y in (0, 1] (the left side rises from -1 + exp(-lambda c) < 0).

With no failures (lambda = 0) neither has a finite optimum: None (save as rarely as allowed).

A failure inside a round loses, in expectation, half its useful work, tau / 2; a restart from the
last checkpoint then costs tau / 2 + r (the evict response to a straggler). c, lambda and the
first-order loss are exact rationals of the declared inputs (printed beside their floats).
"""

import math
from fractions import Fraction


def payload_bytes(params, weight_bytes_per_param, grad_bytes_per_param, optimizer_bytes_per_param):
    """Bytes one full checkpoint writes: every parameter's weight, gradient (0 when not saved)
    and optimizer state."""
    return params * (weight_bytes_per_param + grad_bytes_per_param + optimizer_bytes_per_param)


def failure_rate(devices, device_mtbf_s, job_mtbf_s=None):
    """lambda = devices / MTBF + 1 / job MTBF (per second), exact; None parts are absent."""
    rate = Fraction(0)
    if device_mtbf_s is not None:
        rate += Fraction(devices) / Fraction(device_mtbf_s)
    if job_mtbf_s is not None:
        rate += 1 / Fraction(job_mtbf_s)
    return rate


def poisson_optimum(rate, cost_s, steps=100):
    """tau maximising tau / E in the Poisson retry model: y / lambda with y - 1 + exp(-y - lambda c) = 0,
    written y + expm1(-y - lambda c) = 0 so that small y keep their digits (100 bisections)."""
    a = float(rate * cost_s)
    lo, hi = 0.0, 1.0
    for _ in range(steps):
        mid = (lo + hi) / 2
        if mid + math.expm1(-mid - a) < 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2 / float(rate)


def interval(*, payload, write_bandwidth, rate, recovery_s, candidates=()):
    """c, lambda, Young's interval, the Poisson optimum and each candidate tau's loss and share."""
    cost = Fraction(payload) / Fraction(write_bandwidth)
    recovery = Fraction(recovery_s)
    rows = []
    for tau in candidates:
        first = cost / tau + rate * tau / 2 + rate * recovery
        expected = (math.expm1(float(rate * (tau + cost))) * (1 / float(rate) + float(recovery))
                    if rate else tau + float(cost))
        rows.append({"tau_s": tau, "first_order_loss": float(first), "first_order_loss_exact": str(first),
                     "poisson_round_s": expected, "poisson_useful_share": tau / expected,
                     "expected_lost_work_s": float(Fraction(tau, 2)), "restart_cost_s": float(Fraction(tau, 2) + recovery)})
    return {
        "payload_bytes": payload,
        "save_cost_s": float(cost),
        "save_cost_s_exact": str(cost),
        "failure_rate_per_s": float(rate),
        "failure_rate_per_s_exact": str(rate),
        "job_mtbf_s": float(1 / rate) if rate else None,
        "young_interval_s": math.sqrt(2 * cost / rate) if rate else None,
        "poisson_interval_s": poisson_optimum(rate, cost) if rate else None,
        "candidates": rows,
    }

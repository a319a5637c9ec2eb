"""Stragglers (`budget straggler`): a synchronous step waits for its slowest rank.

Each rank's compute time is declared independent normal N(mu, sigma^2); the step takes the
maximum over the N ranks plus a declared overhead (communication and input wait). With Z_(N) the
largest of N standard normals,

  E[step] = mu + sigma E[Z_(N)] + overhead,  E[Z_(N)] = int z N phi(z) Phi(z)^(N-1) dz

(phi, Phi the standard normal density and distribution; David and Nagaraja, "Order Statistics",
3rd ed., sec. 3.1). The integral is evaluated by composite Simpson quadrature on [-12, 12] with
4,000 intervals (the standard library's erf and exp) and rounded to 12 decimals: for N up to
1,024 the digits equal those of 24,000 intervals (the book's choice), up to 10^6 they agree to
3e-11. E[Z_(1)] = 0, E[Z_(2)] = 1/sqrt(pi).

Per N also: the mean rank's expected wait sigma E[Z_(N)]; the probability that some rank is
beyond mu + k sigma, 1 - Phi(k)^N; and the three responses to one rank slow at mu + k sigma:
wait (the step takes max(mu + k sigma, mu + sigma E[Z_(N-1)]) + overhead), redistribute (its work
spread over the other N - 1: mean mu N/(N-1), step mu N/(N-1) + sigma E[Z_(N-1)] + overhead, no
migration cost) and evict (a restart from the last checkpoint; `budget checkpoint` prices it).
Beside them: the expected step over the mean step (mu + overhead), the mean rank's wait over mu,
and what the others wait for the slow rank, max(0, mu + k sigma - (mu + sigma E[Z_(N-1)])).
"""

from fractions import Fraction

from math import erf, exp, pi, sqrt

from ..errors import UserError
from ..summation import plain_sum

INTERVALS, BOUND = 4000, 12.0


def _phi(z):
    return exp(-z * z / 2) / sqrt(2 * pi)


def _Phi(z):
    return 0.5 * (1 + erf(z / sqrt(2)))


_GRID = None


def _grid():
    """The Simpson nodes once per process: (weight x z x phi(z), Phi(z)) at each z; Phi(z) = 0 far left
    (its terms vanish for every n >= 2) is dropped."""
    global _GRID
    if _GRID is None:
        h = 2 * BOUND / INTERVALS
        nodes = []
        for i in range(INTERVALS + 1):
            z = -BOUND + i * h
            weight = 1 if i in (0, INTERVALS) else (4 if i % 2 else 2)
            cdf = _Phi(z)
            if cdf > 0.0:
                nodes.append((weight * z * _phi(z), cdf))
        _GRID = (h, nodes)
    return _GRID


def expected_standard_max(n):
    """E[max of n iid standard normals] (module docstring), rounded to 12 decimals."""
    if n < 1:
        raise UserError(f"a step needs at least one rank, got {n}")
    if n == 1:
        return 0.0
    h, nodes = _grid()
    return round(n * plain_sum(a * cdf ** (n - 1) for a, cdf in nodes) * h / 3, 12)


def straggler(*, mean_s, sigma_s, overhead_s, ranks, k):
    """One row per rank count (module docstring). The times are exact rationals (the redistributed mean
    is printed exact); the order statistics are floats."""
    mean_step = float(mean_s + overhead_s)
    mean_s, sigma_s, overhead_exact, overhead_s = Fraction(mean_s), float(sigma_s), overhead_s, float(overhead_s)
    rows = []
    for n in ranks:
        z = expected_standard_max(n)
        z_rest = expected_standard_max(n - 1) if n > 1 else 0.0
        mean = float(mean_s)
        slow = mean + k * sigma_s
        rest = mean + sigma_s * z_rest
        spread = mean_s * n / (n - 1) if n > 1 else None
        step = mean + sigma_s * z + overhead_s
        rows.append({"ranks": n, "expected_standard_max": z, "expected_max_s": mean + sigma_s * z,
                     "expected_step_s": step, "expected_step_over_mean_step": step / mean_step,
                     "mean_rank_wait_s": sigma_s * z, "mean_rank_wait_over_compute": sigma_s * z / mean,
                     "p_some_rank_beyond_k_sigma": round(1 - _Phi(k) ** n, 12),
                     "others_wait_for_slow_rank_s": max(0.0, slow - rest),
                     "wait_response_step_s": max(slow, rest) + overhead_s,
                     "redistribute_ranks": n - 1,
                     "redistribute_mean_s_exact": None if spread is None else str(spread),
                     "redistribute_step_s": None if spread is None else float(spread) + sigma_s * z_rest + overhead_s})
    return {"mean_step_s": mean_step, "mean_step_s_exact": str(mean_s + overhead_exact),
            "straggler_at_s": float(mean_s) + k * sigma_s, "rows": rows}

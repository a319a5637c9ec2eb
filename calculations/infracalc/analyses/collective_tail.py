"""Completion of a barrier collective from declared per-rank ready times, over a finite record of
observations (the book's chapter-7 collective tail), with three paired counterfactuals.

An observation repeated c times has ranks ready at r_1 .. r_n, an exchange E that starts when the
last rank is ready, then a serial recovery R and a post-collective compute P (all declared ns):

    baseline        = max r + E + R + P,
    faster exchange = max r + E / s + R + P     (the exchange alone s times faster),
    aligned ready   = min r + E + R + P         (every rank ready at the observation's earliest),
    no recovery     = max r + E + P,
    rank wait_i     = max r - r_i               (rank time, not wall clock).

Each policy is applied to every observation (the joint record is kept: no marginal quantiles are
added). Over the N = sum c completions: mean = sum c x / N; the p-quantile is the ceil(p N / 100)-th
smallest (nearest rank, no interpolation); max. With a model, each rank's payload is BF16
[tokens, hidden] = 2 x tokens x hidden bytes (not used for the times, which are declared).
"""

from fractions import Fraction

POLICIES = ("baseline", "faster_exchange", "aligned_ready", "no_recovery")


def completions(*, ready_ns, exchange_ns, recovery_ns, post_ns, speedup):
    """The four policies' completion times of one observation."""
    last, first = max(ready_ns), min(ready_ns)
    return {"baseline": last + exchange_ns + recovery_ns + post_ns,
            "faster_exchange": last + Fraction(exchange_ns) / speedup + recovery_ns + post_ns,
            "aligned_ready": first + exchange_ns + recovery_ns + post_ns,
            "no_recovery": last + exchange_ns + post_ns}


def nearest_rank(pairs, percent):
    """The ceil(percent N / 100)-th smallest of (value, count) pairs, N = sum of counts."""
    target = -(-percent * sum(c for _, c in pairs) // 100)
    seen = 0
    for value, count in sorted(pairs):
        seen += count
        if seen >= target:
            return value
    raise ValueError("no observations")


def collective_tail(*, observations, speedup=2, post_ns=0, payload_bytes=None):
    """observations: [(name, count, ready_ns list, exchange_ns, recovery_ns)]."""
    rows, per_policy = [], {p: [] for p in POLICIES}
    for name, count, ready, exchange, recovery in observations:
        done = completions(ready_ns=ready, exchange_ns=exchange, recovery_ns=recovery, post_ns=post_ns,
                           speedup=speedup)
        for p in POLICIES:
            per_policy[p].append((Fraction(done[p]), count))
        rows.append({"observation": name, "count": count, "ready_ns": list(ready),
                     "rank_wait_ns": [max(ready) - t for t in ready], "exchange_ns": exchange,
                     "recovery_ns": recovery, **{f"{p}_ns": str(done[p]) for p in POLICIES}})
    n = sum(c for _, c, _, _, _ in observations)
    policies = [{"policy": p, "mean_ns": str(sum(v * c for v, c in per_policy[p]) / n),
                 "p50_ns": str(nearest_rank(per_policy[p], 50)), "p99_ns": str(nearest_rank(per_policy[p], 99)),
                 "max_ns": str(max(v for v, _ in per_policy[p]))} for p in POLICIES]
    out = {"ranks": len(observations[0][2]), "observations": n, "exchange_speedup": str(speedup),
           "post_compute_ns": post_ns}
    if payload_bytes is not None:
        out["payload_bytes_per_rank"] = payload_bytes
    return dict(out, policies=policies, records=rows)


COLLECTIVE_TAIL_CONVENTIONS = [
    "Barrier model: the exchange starts when the last rank is ready, then a serial recovery and the "
    "post-collective compute; every time is a declared record, not derived from the payload or a link.",
    "Paired counterfactuals on each observation: the exchange alone s times faster (recovery does not "
    "shrink), every rank ready at the observation's earliest ready time, no recovery. Quantiles are nearest "
    "rank (the ceil(p N / 100)-th smallest of the N repeated completions), never interpolated; observed "
    "quantiles are not an SLO. Rank waits are rank time and do not add to the wall clock.",
]

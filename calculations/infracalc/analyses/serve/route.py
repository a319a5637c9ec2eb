"""Cache routing for one request whose prefix may be cached (the book's chapter-9 `cache-route`
group): worker A holds the prefix in HBM (valid with probability p; otherwise every tier has lost
it and A recomputes), worker B has no copy and either recomputes or fetches it from a remote store
through host memory.

With queue waits q_A, q_B, the full and the warm (prefix cached) compute times t_full, t_warm, a
lookup l, the prefix's cache S bytes, a remote link R and a host-to-device link H (declared):

    A hit    = q_A + t_warm               A miss = q_A + t_full
    B cold   = q_B + t_full
    B remote = max(q_B, l + S/R + S/H) + t_warm    (retrieval overlapping the queue; after it:
                                                    q_B + l + S/R + S/H + t_warm)
    A host   = max(q_A, S/H) + t_warm               (a host copy survives: the same rule)

A's expected time is p A_hit + (1 - p) A_miss; its p99 is A_hit when p >= 99/100, else A_miss;
it meets an SLO with the probability of the outcomes within it; the fastest path is the least of
A hit, B cold, B remote and A host (the first on a tie, in that order).
"""

from fractions import Fraction

ROUTE_CONVENTION = (
    "Cache route (declared times): A hit = q_A + t_warm, A miss = q_A + t_full (probability 1 - p), B "
    "cold = q_B + t_full, B remote = max(q_B, l + S/R + S/H) + t_warm (retrieval after the queue: "
    "q_B + l + S/R + S/H + t_warm), A host copy = max(q_A, S/H) + t_warm; A's mean p A_hit + (1 - p) "
    "A_miss, p99 = A_hit when p >= 99/100; exact rationals of ns.")


def route(size, qa, qb, full, warm, lookup, remote_bw, host_bw, p, slo, after_queue=False):
    h2d = Fraction(size * 10**9, host_bw)
    ready = lookup + Fraction(size * 10**9, remote_bw) + h2d

    def finish(queue, ready_ns):
        return queue + ready_ns + warm if after_queue else max(Fraction(queue), ready_ns) + warm

    a_hit, a_miss, b_cold = Fraction(qa + warm), Fraction(qa + full), Fraction(qb + full)
    paths = [("A valid HBM", a_hit), ("B recompute", b_cold), ("B remote through host", finish(qb, ready)),
             ("A CPU copy survives", finish(qa, h2d))]
    return {"prefix_bytes": size, "a_hit_ns": a_hit, "a_miss_ns": a_miss, "b_cold_ns": b_cold,
            "paths": [{"path": n, "finish_ns": t} for n, t in paths],
            "a_expected_ns": p * a_hit + (1 - p) * a_miss,
            "a_p99_ns": a_hit if p >= Fraction(99, 100) else a_miss,
            "a_slo_probability": (p if a_hit <= slo else 0) + (1 - p if a_miss <= slo else 0),
            "hit_probability_where_a_mean_equals_b": (a_miss - b_cold) / (a_miss - a_hit),
            "fastest_valid_path": min(paths, key=lambda x: x[1])[0]}

"""Destination deduplication of an MoE dispatch from explicit per-token destinations (the book's
chapter-6 example): a token goes once to each rank that holds any of its experts, and the return
carries one partial sum per token and destination. Exact integer bytes.

P ranks each hold E / P contiguous experts and T tokens; token t of rank s selects k experts, of
which c_{s,t}(d) live on rank d. Off-diagonal traffic (d != s) only; with hidden size h, dispatch
element bytes b_d (BF16: 2) and combine element bytes b_c:

    per assignment   dispatch = sum_{d != s} c(d) h b_d,   combine = sum_{d != s} c(d) h b_c,
    per destination  dispatch = sum_{d != s} [c(d) > 0] h b_d,   combine likewise with b_c,
    reduction adds   source-side k - 1 per token per element = P T (k - 1) h in all; deduplicated:
                     (c(d) - 1) h on each destination d and (#destinations - 1) h left on the source.

Patterns (synthetic, not measured routing): clustered puts all k experts of token t of rank s on rank
(s + t) mod P; spread puts expert j on rank (s + t + j) mod P. A pairwise all-to-all of a P x P byte
matrix runs P - 1 rounds, rank s sending to (s + r) mod P in round r; a round takes the startup + its
largest message / bandwidth.
"""

from collections import Counter
from fractions import Fraction

NS = 10**9


def destinations(pattern, ranks, source, token, top_k):
    """{destination rank: experts of this token there}."""
    if pattern == "clustered":
        return {(source + token) % ranks: top_k}
    return Counter((source + token + j) % ranks for j in range(top_k))


def pairwise_ns(matrix, bandwidth, startup_ns):
    """P - 1 rounds; round r: startup + max_s matrix[s][(s + r) mod P] / bandwidth."""
    p = len(matrix)
    return sum(startup_ns + Fraction(max(matrix[s][(s + r) % p] for s in range(p)) * NS, bandwidth) for r in range(1, p))


def moe_dedup(*, ranks, tokens_per_rank, experts, top_k, hidden, pattern, dispatch_bytes=2, combine_bytes=4,
              bandwidth=None, startup_ns=0):
    per_rank = experts // ranks
    assign = [[0] * ranks for _ in range(ranks)]
    unique = [[0] * ranks for _ in range(ranks)]
    dest_adds, source_adds = [0] * ranks, [0] * ranks
    for s in range(ranks):
        for t in range(tokens_per_rank):
            where = destinations(pattern, ranks, s, t, top_k)
            if max(where.values()) > per_rank:
                raise ValueError(f"{max(where.values())} experts of a token on one rank, which holds {per_rank}")
            for d, c in where.items():
                assign[s][d] += c
                unique[s][d] += 1
                dest_adds[d] += (c - 1) * hidden
            source_adds[s] += (len(where) - 1) * hidden

    def wire(matrix, element):
        return sum(matrix[s][d] for s in range(ranks) for d in range(ranks) if d != s) * hidden * element

    out = {
        "ranks": ranks, "experts_per_rank": per_rank, "assignments": ranks * tokens_per_rank * top_k,
        "per_assignment_dispatch_bytes": wire(assign, dispatch_bytes),
        "deduplicated_dispatch_bytes": wire(unique, dispatch_bytes),
        "per_assignment_combine_bytes": wire(assign, combine_bytes),
        "destination_combined_return_bytes": wire(unique, combine_bytes),
    }
    out.update(dispatch_saved_bytes=out["per_assignment_dispatch_bytes"] - out["deduplicated_dispatch_bytes"],
               combine_saved_bytes=out["per_assignment_combine_bytes"] - out["destination_combined_return_bytes"],
               source_reduction_adds=ranks * tokens_per_rank * (top_k - 1) * hidden,
               destination_reduction_adds=sum(dest_adds), remaining_source_reduction_adds=sum(source_adds))
    if bandwidth is not None:
        def phases(matrix):
            dispatch = [[x * hidden * dispatch_bytes for x in row] for row in matrix]
            combine = [[matrix[d][s] * hidden * combine_bytes for d in range(ranks)] for s in range(ranks)]
            return pairwise_ns(dispatch, bandwidth, startup_ns) + pairwise_ns(combine, bandwidth, startup_ns)
        out.update(per_assignment_pairwise_ns=str(phases(assign)), deduplicated_pairwise_ns=str(phases(unique)))
    out["by_rank"] = [{"rank": s, "assignments_sent_to": assign[s], "tokens_sent_to": unique[s],
                       "adds_as_destination": dest_adds[s], "adds_as_source": source_adds[s]} for s in range(ranks)]
    return out


MOE_DEDUP_CONVENTIONS = [
    "One MoE layer, experts placed contiguously and equally over the ranks; each token's destinations follow the "
    "declared pattern (clustered: all its experts on one rank; spread: expert j on rank s + t + j), not measured "
    "routing: assignment histograms alone do not determine deduplication. Local (diagonal) traffic is excluded.",
    "Deduplicated dispatch sends a token once per destination rank (expert GEMM rows are unchanged); the "
    "destination-combined return carries one partial per token and destination, with the routing weights "
    "applied before the destination's sum: the additions are conserved, their place changes (floating-point "
    "results may differ). Pairwise all-to-all: P - 1 rounds, each startup + its largest message / bandwidth.",
]

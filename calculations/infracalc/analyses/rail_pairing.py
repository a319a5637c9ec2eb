"""The cross-server phase of a two-server hierarchical AllReduce on a rail-optimized network (the book's
chapter-7 rail example): each server's R local ranks own one shard of the gradient, rank i's NIC is on
rail i, and rank i of server 0 exchanges its shard with its peer on server 1 (a ReduceScatter and an
AllGather of half a shard each way). Exact rationals.

    shard = G / R,   per pair each direction: G / (2R) + G / (2R) = G / R,   2 cross-server rounds
    aligned: peer i (same rail: through its rail's leaf only);  shifted: peer (i + 1) mod R (every pair
    crosses two rails: its bytes go through the spine)
    per rail = shard / B + 2 alpha,   one NIC for all = R shard / B + 2 alpha,   speedup = their ratio

Worked case: G = 800 B, R = 4, B = 100 B/s, alpha = 0: shard 200 B, per rail 2 s, one NIC 8 s (4x);
shifted, all 800 B cross the spine; aligned none.
"""

from fractions import Fraction


def rail_pairing(*, gradient_bytes, rails, nic_rate, startup_s, pairing):
    shard = gradient_bytes // rails
    pairs, spine = [], 0
    for rank in range(rails):
        peer = rank if pairing == "aligned" else (rank + 1) % rails
        crosses = peer != rank
        spine += shard if crosses else 0
        pairs.append({"server0_rank": rank, "server1_rank": peer, "rail_server0": rank, "rail_server1": peer,
                      "crosses_rails": crosses, "reduce_scatter_bytes_each_direction": shard // 2,
                      "all_gather_bytes_each_direction": shard // 2, "bytes_each_direction": shard})
    per_rail = Fraction(shard, nic_rate) + 2 * startup_s
    single = Fraction(rails * shard, nic_rate) + 2 * startup_s
    return {"gradient_bytes": gradient_bytes, "servers": 2, "rails": rails, "shard_bytes": shard, "pairing": pairing,
            "cross_server_rounds": 2, "bytes_per_rail_each_direction": shard,
            "bytes_all_rails_each_direction": rails * shard, "spine_crossing_bytes": spine,
            "per_rail_s": str(per_rail), "single_nic_s": str(single), "rail_parallel_speedup": str(single / per_rail),
            "pairs": pairs}


RAIL_CONVENTIONS = [
    "Two servers of R ranks, rank i's NIC on rail i (its leaf switch); the hierarchical AllReduce's cross-server "
    "phase is a two-rank ReduceScatter + AllGather per shard, half a shard each way in each. Aligned pairing "
    "stays on one rail; shifted pairing (peer i + 1) crosses rails, every byte through the spine.",
    "Time counts the NIC's serial send and the startup of each of the 2 rounds; no local NVLink stage, "
    "propagation or switch queueing.",
]

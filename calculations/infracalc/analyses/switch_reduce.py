"""An in-network (switch) reduction of the cross-server phase against the hierarchical AllReduce's ring
(the book's chapter-7 example, after NVIDIA SHARP: each rank sends its shard once and receives the
result once, one round). The hierarchical figures are `gradient-ring`'s (`gradient_rings`). Exact.

    shard = G / local ranks,   switch: shard each way per rank, cross-server bytes = shard x ranks,
    time = shard / B + alpha (one round);   ring among S servers: 2 (S - 1) / S x shard per NIC in
    2 (S - 1) rounds, time = that / B + 2 (S - 1) alpha

Worked case: shard 100 B at B = 100 B/s, alpha = 0: switch 1 s; ring of 2 servers 1 s (2 rounds),
of 4 servers 3/2 s: the switch takes 2/3 of it.
"""

from fractions import Fraction


def switch_seconds(*, shard, nic_rate, startup_s):
    return Fraction(shard, nic_rate) + startup_s


def ring_seconds(*, servers, shard, nic_rate, startup_s):
    """(bytes per NIC, rounds, seconds) of a ring AllReduce of one shard among S servers."""
    moved = Fraction(2 * (servers - 1), servers) * shard
    rounds = 2 * (servers - 1)
    return moved, rounds, moved / nic_rate + rounds * startup_s


def switch_reduce(*, hierarchical, ranks_per_server, nic_rate, startup_s, server_counts):
    """hierarchical: a `gradient_rings(organization="hierarchical")` record."""
    ranks, gradient = hierarchical["ranks"], hierarchical["bytes_per_rank"]
    shard = gradient // ranks_per_server
    cross = next(s for s in hierarchical["stages"] if "cross_server" in s["stage"])
    switch = switch_seconds(shard=shard, nic_rate=nic_rate, startup_s=startup_s)
    hier_s = Fraction(cross["barrier_lower_s"])
    sweep = []
    for s in server_counts:
        moved, rounds, ring = ring_seconds(servers=s, shard=shard, nic_rate=nic_rate, startup_s=startup_s)
        sweep.append({"servers": s, "ranks": s * ranks_per_server, "ring_bytes_per_nic": str(moved),
                      "ring_rounds": rounds, "ring_s": str(ring), "ring_s_float": float(ring),
                      "switch_bytes_per_nic": shard, "switch_rounds": 1, "switch_s": str(switch),
                      "switch_s_float": float(switch), "switch_over_ring": str(switch / ring),
                      "switch_over_ring_float": float(switch / ring)})
    return {"ranks": ranks, "servers": ranks // ranks_per_server, "local_ranks": ranks_per_server,
            "gradient_bytes_per_rank": gradient, "shard_bytes": shard, "nic_bytes_per_s": nic_rate,
            "switch_rounds": 1, "switch_send_bytes_per_rank": shard, "switch_receive_bytes_per_rank": shard,
            "switch_cross_server_bytes": shard * ranks, "switch_s": str(switch), "switch_s_float": float(switch),
            "switch_over_hierarchical_bytes": str(Fraction(shard * ranks, cross["remote_send_bytes"])),
            "switch_over_hierarchical_s": str(switch / hier_s) if hier_s else None,
            "hierarchical_stage": cross["stage"], "hierarchical_rounds": cross["rounds"],
            "hierarchical_cross_server_bytes": cross["remote_send_bytes"], "hierarchical_s": str(hier_s),
            "hierarchical_s_float": float(hier_s), "hierarchical_total_remote_bytes": hierarchical["remote_send_bytes"],
            "hierarchical_total_rounds": hierarchical["rounds"],
            "hierarchical_serial_barrier_s": hierarchical["serial_barrier_lower_s_exact"],
            "servers_sweep": sweep}


SWITCH_REDUCE_CONVENTIONS = [
    "Switch reduction (SHARP-style): each rank sends its shard once and receives the reduced shard once, one "
    "round; only that operation count is taken from NVIDIA's description, no switch throughput (the time is the "
    "NIC's serial send + one startup). The hierarchical figures are `gradient-ring --organization hierarchical`.",
    "Sweep: the cross-server phase generalised to S servers as a ring AllReduce among the S owners of a shard, "
    "2 (S - 1) / S shard per NIC in 2 (S - 1) rounds, against the switch's one round of one shard.",
]

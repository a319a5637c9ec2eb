"""A ring all-reduce whose every edge is staged through one host buffer, charged on a declared host's
physical resources (the book's chapter-6 PCIe/NUMA staging example). Exact bytes and fractions of ns.

p GPUs each sit on a NUMA node; the logical ring's rank i runs on GPU ring[i] and sends to rank i + 1.
A ring all-reduce of S bytes per rank runs 2 (p - 1) rounds, every rank sending S / p bytes to the
next. Each edge (sender on node a, receiver on node b, buffer on node m: the sender's node, or one
declared node for every buffer) is served by, in order,

    gpu_sender to host (PCIe),  a -> m if a != m,  dram_m twice (write, then read),  m -> b if m != b,
    gpu_receiver from host (PCIe),

PCIe directions independent, each node's DRAM one read-plus-write resource, each inter-node
direction its own. A resource carrying B bytes at rate r is busy B / r. Lower bounds: the busiest
resource over the whole collective (aggregate), and the sum over rounds of each round's busiest
resource (rounds separated by barriers), plus a declared startup per round.
"""

from fractions import Fraction

NS = 10**9


def edge_path(sender_gpu, receiver_gpu, numa, buffer_node=None):
    a, b = numa[sender_gpu], numa[receiver_gpu]
    m = a if buffer_node is None else buffer_node
    path = [f"gpu{sender_gpu}_to_host"] + ([f"{a}_to_{m}"] if a != m else []) + [f"dram_{m}", f"dram_{m}"]
    return path + ([f"{m}_to_{b}"] if m != b else []) + [f"gpu{receiver_gpu}_from_host"]


def rate_of(resource, pcie, dram, link):
    return pcie if resource.startswith("gpu") else dram if resource.startswith("dram_") else link


def host_staging(*, message_bytes, numa, ring, buffer_node, pcie, dram, link, startup_ns=0):
    p = len(ring)
    rounds, chunk = 2 * (p - 1), Fraction(message_bytes, p)
    edges = [{"sender_gpu": ring[i], "receiver_gpu": ring[(i + 1) % p],
              "resources": edge_path(ring[i], ring[(i + 1) % p], numa, buffer_node)} for i in range(p)]
    per_round = {}
    for e in edges:
        for r in e["resources"]:
            per_round[r] = per_round.get(r, 0) + chunk
    busy = {r: b * NS / rate_of(r, pcie, dram, link) for r, b in per_round.items()}   # one round's busy time
    aggregate = max(rounds * t for t in busy.values())      # the whole collective's busiest resource
    by_rounds = sum(max(busy.values()) for _ in range(rounds))   # each round's busiest, summed (equal here:
    #                                                              every ring round carries the same traffic)
    return {
        "message_bytes": message_bytes, "rounds": rounds, "chunk_bytes": str(chunk),
        "logical_send_bytes": str(rounds * p * chunk),
        "aggregate_lower_ns": str(aggregate), "round_sum_lower_ns": str(by_rounds),
        "round_sum_with_startup_ns": str(by_rounds + rounds * startup_ns),
        "edges": [dict(e, resources=" > ".join(e["resources"])) for e in edges],
        "resources": [{"resource": r, "bytes": str(rounds * per_round[r]), "rate_bytes_per_s": rate_of(r, pcie, dram, link),
                       "busy_ns": str(rounds * busy[r])} for r in sorted(per_round)],
    }


STAGING_CONVENTIONS = [
    "A declared host: each GPU on a NUMA node, every ring edge staged through one host buffer (the sender's node "
    "or one declared node): sender PCIe to host, the crossing to the buffer's node, the buffer's DRAM written and "
    "read (its read-plus-write rate charged twice), the crossing to the receiver's node, receiver PCIe from host; "
    "PCIe and inter-node directions are independent resources. No CPU copy, P2P, protocol bytes or reduction time.",
    "Ring all-reduce: 2 (p - 1) rounds of S / p bytes per rank (S = BF16 [tokens, hidden]). Lower bounds: the "
    "busiest resource over the collective, and each round's busiest summed (equal for a ring, whose rounds are "
    "alike), plus a declared startup per round. Rates are declared teaching figures, not a platform's.",
]

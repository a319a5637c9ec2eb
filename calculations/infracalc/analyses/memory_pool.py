"""A pooled memory of declared nodes: capacity borrowed for an over-subscribed job, periodic reads of
the borrowed bytes through a transaction window, and which jobs a set of failed nodes takes down
(the book's chapter-6 memory-pool example). Exact integer bytes and fractions of seconds.

Node i holds C_i bytes and runs job i of demand D_i. A node short by d_i = D_i - C_i > 0 keeps its
compute and C_i local bytes and borrows d_i from `copies` donor nodes (the first ones in index order,
other than itself, with d_i free; each holds one full copy): used_j = min(D_j, C_j) + the copies it
holds. Slack unusable before pooling = sum max(0, C_j - D_j); extra replica storage = (copies - 1) d.

Access (each declared interface B, latency L, N transactions of m bytes, startup s, f reads per
second of the borrowed P bytes, as `budget window`): rate R = min(B, N m / L), one read serially takes
t = s + max(L, P / R); load = f t; periodic reads never queue iff t <= 1 / f; spare = 1 / f - t; the
largest frequency 1 / t. Failure: job i is down when its node fails or all its donors fail, for every
nonempty set of failed nodes (by size, then in order). No probabilities or recovery times.
"""

from fractions import Fraction
from itertools import combinations


def pool_capacity(capacity, demand, copies):
    n = len(capacity)
    free = [max(0, c - d) for c, d in zip(capacity, demand)]
    held = [0] * n
    donors = {}
    for i in range(n):
        short = demand[i] - capacity[i]
        if short <= 0:
            continue
        chosen = [j for j in range(n) if j != i and free[j] >= short][:copies]
        if len(chosen) < copies:
            raise ValueError(f"node {i} needs {copies} donors with {short:,} B free; {len(chosen)} have it")
        for j in chosen:
            free[j] -= short
            held[j] += short
        donors[i] = chosen
    deficit = [max(0, d - c) for c, d in zip(capacity, demand)]
    used = [min(c, d) + h for c, d, h in zip(capacity, demand, held)]
    return {
        "total_capacity_bytes": sum(capacity), "total_demand_bytes": sum(demand), "local_deficit_bytes": deficit,
        "unusable_slack_before_pool_bytes": sum(max(0, c - d) for c, d in zip(capacity, demand)),
        "borrowed_bytes": sum(deficit),
        "whole_job_fits_on": {i: [j for j in range(n) if j != i and capacity[j] >= demand[i]] for i in donors},
        "donors": donors, "used_after_pool_bytes": used, "free_after_pool_bytes": [c - u for c, u in zip(capacity, used)],
        "extra_replica_bytes": (copies - 1) * sum(deficit), "total_used_bytes": sum(used),
    }


def access(*, payload_bytes, bandwidth, latency_ns, transactions, transaction_bytes, startup_ns, reads_per_s):
    latency = Fraction(latency_ns, 10**9)
    rate = min(Fraction(bandwidth), transactions * transaction_bytes / latency)
    service = Fraction(startup_ns, 10**9) + max(latency, payload_bytes / rate)
    period = 1 / Fraction(reads_per_s)
    return {"bandwidth_bytes_per_s": bandwidth, "latency_ns": latency_ns, "transactions": transactions,
            "reads_per_s": str(reads_per_s), "rate_bytes_per_s": str(rate), "read_s": str(service),
            "load": str(reads_per_s * service), "never_queues": service <= period, "spare_s": str(period - service),
            "max_reads_per_s": str(1 / service)}


def failures(n, donors):
    rows = []
    for size in range(1, n + 1):
        for failed in combinations(range(n), size):
            down = [i for i in range(n) if i in failed or (i in donors and set(donors[i]) <= set(failed))]
            rows.append({"failed_nodes": list(failed), "jobs_down": down})
    return rows


MEMORY_POOL_CONVENTIONS = [
    "Declared node capacities and job demands: a short node keeps its compute and local bytes and borrows the rest "
    "from donor nodes (first in index order with room; one full copy each; copies do not add bandwidth, one live "
    "copy serves a read). Fill and copy traffic and their time are not counted; whole-job migration is listed "
    "where a node could hold it; a split migration's cost is unknown.",
    "Reads of the borrowed bytes: rate min(interface, N m / L), each read startup + max(L, bytes / rate), serial; "
    "strictly periodic reads never queue iff the read time <= the period (bursts and contention not modelled). "
    "Failure table: static availability for each set of permanently failed nodes, no probabilities.",
]

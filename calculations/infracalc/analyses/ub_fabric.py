"""Unified Bus (UB) against RoCE from first principles (the book's chapter-6 UB fabric section): endpoint
state, the context cache's spill point, one 64 B remote read phase by phase, hosts per cache, connection
setup, request rate and a silicon cost, all from declared per-record sizes and per-phase latencies.
Exact integers and fractions (ns, bytes, cycles of a declared clock).

    state, N local endpoints reaching M = N remote:   UB   = N (jetty + segment) + M channel
                                                       RoCE = N M qp + N segment
    spill point: the least N whose state exceeds the context cache (bytes); a spill costs a context
                 refetch on both ends: RoCE 2 x PCIe DMA read, UB 2 x (on-chip bus + local DRAM)
    round trip of one 64 B read: the sum of its serial phases (NIC pipelines at cycles / clock):
      UB load/store  bus + nic_ls + link + nic_ls + bus + DRAM row + nic_ls + link + nic_ls + bus
      UB URMA        post + WQE + (the load/store path with nic_urma) + on-chip CQE poll + verb poll
      RoCE DMA       post + WQE + MMIO + DMA read + nic_r + link + nic_r + DMA read + DRAM row + nic_r
                     + link + nic_r + 2 x DMA write + host CQE poll + verb poll + PSN serialization
    hosts with A endpoints each, all to all, one NIC's state: UB A (jetty + segment) + (H - 1) channel,
      RoCE A^2 (H - 1) qp + A segment; the most hosts whose state fits the cache:
      UB floor((cache - A (jetty + segment)) / channel) + 1, RoCE floor((cache - A segment) / (A^2 qp)) + 1
    setup of N x N relations: RoCE N^2 (4 ioctl + OOB RTT), UB N ioctl + N (ioctl + OOB RTT); in parallel
      / cores (the serial total shared evenly)
    request rate: 1000 / (initiation interval cycles x cycle ns) per us (UB II, RoCE cycles per request)
    silicon: UB LUTs / FPGA LUTs; (UB - RoCE) cold-start cycles x cycle ns

Worked case (by hand): 1,024 endpoints give UB 1,024 x 52 + 1,024 x 56 = 110,592 B and RoCE
1,024^2 x 512 + 1,024 x 32 = 536,903,680 B (ratio 4,854.8...); a 256 KiB cache holds RoCE to N = 22
(22 x (22 x 512 + 32) = 248,512 B; 23 gives 271,584) and UB to N = 2,427 (2,428 x 108 = 262,224 > 262,144).

The declared figures (defaults) are the book's, taken from the OpenURMA implementation and paper
(arXiv:2605.28717) as `899ms/ai-infra-book:calculations/src/infra_calc/topics/ub_fabric.py` states them.
"""

from fractions import Fraction
from math import isqrt

# name: (default, meaning); every input of the model, overridable by --set NAME=VALUE
INPUTS = {
    "jetty_bytes": (20, "state of one UB Jetty (send/receive endpoint), B"),
    "segment_bytes": (32, "state of one registered memory segment, B"),
    "channel_bytes": (56, "state of one UB transport channel to a remote endpoint, B"),
    "qp_bytes": (512, "state of one RoCE RC queue pair, B"),
    "endpoints": (1024, "N local endpoints reaching N remote ones (state, setup)"),
    "context_cache_bytes": (262144, "on-chip context cache, B"),
    "apps_per_host": (8, "A endpoints on every host (the hosts-per-cache case)"),
    "membus_ns": (30, "on-chip bus crossing"),
    "local_dram_ns": (70, "local DRAM access (a UB context refetch)"),
    "dram_row_ns": (30, "target DRAM row hit"),
    "link_ns": (100, "one-way link"),
    "pcie_mmio_ns": (150, "PCIe doorbell MMIO write"),
    "pcie_dma_read_ns": (500, "PCIe DMA read"),
    "pcie_dma_write_ns": (250, "PCIe DMA write"),
    "verb_post_ns": (50, "verbs-library post"),
    "wqe_construct_ns": (30, "building the work request"),
    "cqe_poll_host_ns": (70, "host completion-queue poll"),
    "cqe_poll_onchip_ns": (5, "on-chip completion-queue poll"),
    "verb_poll_ns": (30, "verbs-library poll"),
    "psn_serialize_ns": (50, "RoCE packet sequence number serialization"),
    "clock_hz": (322000000, "NIC clock, Hz"),
    "ldst_pipeline_cycles": (8, "UB load/store NIC pipeline, cycles per pass"),
    "urma_pipeline_cycles": (25, "UB URMA NIC pipeline, cycles per pass"),
    "roce_pipeline_cycles": (9, "RoCE NIC pipeline, cycles per pass"),
    "ub_initiation_interval_cycles": (2, "UB pipeline initiation interval, cycles"),
    "roce_cycles_per_request": (6, "RoCE sequence-number dependency, cycles per request"),
    "ioctl_ns": (5000, "one control system call"),
    "oob_rtt_ns": (500000, "one out-of-band round trip"),
    "setup_cores": (32, "cores sharing connection setup"),
    "ub_luts": (122710, "UB NIC LUTs (synthesis result)"),
    "roce_luts": (46636, "RoCE NIC LUTs"),
    "fpga_luts": (871680, "LUTs of the FPGA"),
    "ub_cold_cycles": (24, "UB cold-start cycles"),
    "roce_cold_cycles": (9, "RoCE cold-start cycles"),
}


def ub_state(v, n, m):
    return n * (v["jetty_bytes"] + v["segment_bytes"]) + m * v["channel_bytes"]


def roce_state(v, n, m):
    return n * m * v["qp_bytes"] + n * v["segment_bytes"]


def ub_spill(v):
    """The least N with N (jetty + segment + channel) > cache."""
    return v["context_cache_bytes"] // (v["jetty_bytes"] + v["segment_bytes"] + v["channel_bytes"]) + 1


def roce_spill(v):
    """The least N with N^2 qp + N segment > cache (from the root of N^2 qp = cache, adjusted)."""
    n = max(1, isqrt(v["context_cache_bytes"] // v["qp_bytes"]))
    while n > 1 and roce_state(v, n - 1, n - 1) > v["context_cache_bytes"]:
        n -= 1
    while roce_state(v, n, n) <= v["context_cache_bytes"]:
        n += 1
    return n


def phases(v):
    """{stack: [(phase, group, ns)]} of one 64 B remote read."""
    cycle = Fraction(10**9, v["clock_hz"])
    ls, urma, roce = (v[k] * cycle for k in ("ldst_pipeline_cycles", "urma_pipeline_cycles", "roce_pipeline_cycles"))
    bus, link, row = v["membus_ns"], v["link_ns"], v["dram_row_ns"]

    def remote(nic):
        return [("bus submit", "on-chip bus", bus), ("NIC send", "NIC pipeline", nic), ("link out", "link", link),
                ("NIC receive", "NIC pipeline", nic), ("target bus to memory", "on-chip bus", bus),
                ("target DRAM row hit", "memory and completion", row), ("NIC response", "NIC pipeline", nic),
                ("link back", "link", link), ("NIC response receive", "NIC pipeline", nic),
                ("bus completion", "on-chip bus", bus)]
    post = [("verbs post", "software submit", v["verb_post_ns"]), ("build WQE", "software submit", v["wqe_construct_ns"])]
    read, write = v["pcie_dma_read_ns"], v["pcie_dma_write_ns"]
    return {
        "ub_loadstore": remote(ls),
        "ub_urma": post + remote(urma) + [("on-chip CQE poll", "memory and completion", v["cqe_poll_onchip_ns"]),
                                          ("verbs poll", "memory and completion", v["verb_poll_ns"])],
        "roce_dma": post + [("doorbell MMIO", "PCIe", v["pcie_mmio_ns"]), ("DMA read WQE", "PCIe", read),
                            ("NIC send", "NIC pipeline", roce), ("link out", "link", link),
                            ("NIC receive", "NIC pipeline", roce), ("target DMA read of host memory", "PCIe", read),
                            ("target DRAM row hit", "memory and completion", row),
                            ("NIC response", "NIC pipeline", roce), ("link back", "link", link),
                            ("NIC response receive", "NIC pipeline", roce), ("payload DMA write", "PCIe", write),
                            ("completion DMA write", "PCIe", write),
                            ("host CQE poll", "memory and completion", v["cqe_poll_host_ns"]),
                            ("verbs poll", "memory and completion", v["verb_poll_ns"]),
                            ("PSN serialization", "memory and completion", v["psn_serialize_ns"])],
    }


def max_hosts(v):
    """(UB, RoCE): the most hosts of A endpoints whose one-NIC state fits the cache (0: none)."""
    a, cache = v["apps_per_host"], v["context_cache_bytes"]
    ub_fixed, roce_fixed = a * (v["jetty_bytes"] + v["segment_bytes"]), a * v["segment_bytes"]
    ub = (cache - ub_fixed) // v["channel_bytes"] + 1 if cache >= ub_fixed else 0
    roce = (cache - roce_fixed) // (a * a * v["qp_bytes"]) + 1 if cache >= roce_fixed else 0
    return ub, roce


def setup_ns(v, n):
    """(UB, RoCE) serial control time of N x N relations, ns."""
    ioctl, oob = v["ioctl_ns"], v["oob_rtt_ns"]
    return n * ioctl + n * (ioctl + oob), n * n * (4 * ioctl + oob)


def _q(x):
    """An exact fraction as text (integers stay integers)."""
    return int(x) if x.denominator == 1 else str(x)


def ub_fabric(values):
    v = values
    cycle = Fraction(10**9, v["clock_hz"])
    n = v["endpoints"]
    ub, roce = ub_state(v, n, n), roce_state(v, n, n)
    trips = {}
    for stack, rows in phases(v).items():
        total = sum(Fraction(ns) for _, _, ns in rows)
        trips[stack] = {"total_ns": total, "rows": rows}
    pcie = sum(Fraction(ns) for _, g, ns in phases(v)["roce_dma"] if g == "PCIe")
    hosts_ub, hosts_roce = max_hosts(v)
    setup_ub, setup_roce = setup_ns(v, n)
    ub_interval = v["ub_initiation_interval_cycles"] * cycle
    roce_interval = v["roce_cycles_per_request"] * cycle
    summary = [
        ("endpoints", n, "N = M"),
        ("ub_state_bytes", ub, "N (jetty + segment) + N channel"),
        ("roce_state_bytes", roce, "N^2 qp + N segment"),
        ("state_ratio", Fraction(roce, ub), "RoCE / UB state"),
        ("roce_spill_endpoints", roce_spill(v), "least N with RoCE state > cache"),
        ("ub_spill_endpoints", ub_spill(v), "least N with UB state > cache"),
        ("roce_refetch_ns", 2 * v["pcie_dma_read_ns"], "2 x PCIe DMA read"),
        ("ub_refetch_ns", 2 * (v["membus_ns"] + v["local_dram_ns"]), "2 x (bus + local DRAM)"),
        ("ub_loadstore_round_trip_ns", trips["ub_loadstore"]["total_ns"], "sum of its phases"),
        ("ub_urma_round_trip_ns", trips["ub_urma"]["total_ns"], "sum of its phases"),
        ("roce_dma_round_trip_ns", trips["roce_dma"]["total_ns"], "sum of its phases"),
        ("roce_pcie_ns", pcie, "RoCE phases crossing PCIe"),
        ("round_trip_ratio", trips["roce_dma"]["total_ns"] / trips["ub_loadstore"]["total_ns"], "RoCE / UB load/store"),
        ("apps_per_host", v["apps_per_host"], "A"),
        ("roce_max_hosts_in_cache", hosts_roce, "floor((cache - A segment) / (A^2 qp)) + 1"),
        ("ub_max_hosts_in_cache", hosts_ub, "floor((cache - A (jetty + segment)) / channel) + 1"),
        ("roce_setup_parallel_s", Fraction(setup_roce, 10**9 * v["setup_cores"]), "N^2 (4 ioctl + OOB) / cores"),
        ("ub_setup_parallel_s", Fraction(setup_ub, 10**9 * v["setup_cores"]), "(N ioctl + N (ioctl + OOB)) / cores"),
        ("setup_ratio", Fraction(setup_roce, setup_ub), "RoCE / UB setup"),
        ("ub_requests_per_us", 1000 / ub_interval, "1000 / (II x cycle)"),
        ("roce_requests_per_us", 1000 / roce_interval, "1000 / (cycles per request x cycle)"),
        ("ub_lut_share", Fraction(v["ub_luts"], v["fpga_luts"]), "UB LUTs / FPGA LUTs"),
        ("extra_cold_ns", (v["ub_cold_cycles"] - v["roce_cold_cycles"]) * cycle, "(UB - RoCE) cold cycles x cycle"),
    ]
    rows = [{"quantity": q, "exact": _q(Fraction(x)), "decimal": float(x), "rule": rule} for q, x, rule in summary]
    phase_rows = [{"stack": stack, "phase": p, "group": g, "ns": _q(Fraction(ns)), "ns_decimal": float(ns)}
                  for stack, t in trips.items() for p, g, ns in t["rows"]]
    return {"summary": rows, "phases": phase_rows}


UB_FABRIC_CONVENTIONS = [
    "Declared per-record state sizes and per-phase latencies (defaults: the book's OpenURMA figures; --set "
    "NAME=VALUE overrides one); exact integers and fractions, decimals beside them. Not a measurement: every "
    "phase of a read is serial on the critical path, and the paper's simulator figures are not inputs.",
    "State: UB N (jetty + segment) + M channel, RoCE N M qp + N segment, M = N; a cache spills at the least N "
    "whose state exceeds its bytes (a byte criterion, not the paper's entry counts), and a spill costs a context "
    "refetch at both ends. Hosts: A endpoints each, all to all, one NIC's initiating state. Setup: RoCE 4 "
    "system calls + 1 out-of-band round trip per QP, UB 1 call per Jetty and 1 call + 1 round trip per channel, "
    "shared evenly over the cores. Rate: 1000 / (slowest stage's interval) requests per us.",
]

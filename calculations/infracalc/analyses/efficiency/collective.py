"""Predicted time of a collective: NCCL's own cost model, per algorithm and protocol.

The bound (comm.lower_bound_s) charges the link's full bandwidth and one LL step latency per
step. What NCCL achieves is what its tuner predicts for the (algorithm, protocol) it picks, the
minimum-time pair (NVIDIA/nccl v2.28.3, src/graph/tuning.cc: ncclTunerConstantsDefaults and
ncclTopoTuneModel; src/graph/topo.h for the link bandwidths). For one run of S bytes:

    t(a, p) = latency(a, p) + bandwidth_time(a) / (eta_link x protocol(a, p))
    predicted = min over the algorithms that apply (comm.applicable) and their protocols

1. bandwidth_time(a): comm's formula for algorithm a (ring, tree, NVLS, the cross-domain ones)
   with no latency, on links whose bandwidth is scaled by eta_link: the bandwidth NCCL's topology
   assigns a link over its nominal figure. NVLink: topo.h's per-link figure over the nominal 25
   (NVLink 2-4) or 50 GB/s (NVLink 5) per direction: SM70 and SM80 20.0, SM90 20.6, SM100 40.1
   GB/s (0.80, 0.824, 0.802). The network: the slower of the NICs' port speed (NCCL takes it as
   it is) and the rank's PCIe host link at NCCL's PCIe figure (src/graph/topo.cc: width x the
   per-lane code / 80, Gen5 x16 48 GB/s, 0.75 of nominal), the path a NIC reaches the GPU by:
   0.96 for one 400 Gb/s NIC per Gen5 GPU, 0.75 where the host link caps the NICs (comm.host_capped).
   Every other fabric: 1.0 (a stated convention, not a measurement).
2. protocol(a, p), ncclTopoTuneModel's refinements: ring LL 0.5 (8-byte stores carrying 4 data
   bytes), LL128 0.92 (120 of 128 bytes), Simple 1; tree all-reduce 0.92 (all protocols), times
   1/3.8 for LL and 7/9 (one node) or 120/128 (across nodes) for LL128. NVLS, NVLS tree, CollNet
   and direct sends run Simple only. The per-channel caps (llMaxBw and the per-channel maxima)
   are not modelled: they need the channel count of NCCL's topology search.
3. latency(a, p) in us, base + hardware latency per step (tuning.cc's tables, `BASE_US` and
   `HW_US` below), hardware NVLink on a scale-up domain of NVLink (PCI on PCIe), NET across:
   ring inside a domain: base + steps x hw (steps: all-reduce 2(n-1), all-gather and
   reduce-scatter n-1, broadcast n-1, all-to-all n-1 rounds, p2p 1);
   ring across m domains: base + (steps - inter) x intra + inter x net, inter = 2(m-1) for an
   all-reduce and m-1 otherwise, intra at least NCCL's network post overhead (1 us, x3 for Simple;
   x86 Intel default); with one rank per domain the net figure is the tree's (ppn = 1);
   tree: base + 2 ((g-1) intra + floor(log2 m) net) (inside one domain, a chain: 2 (n-1) intra);
   NVLS: 25 us (NVLink); NVLS tree: 25 + 2 floor(log2 m) x 14 us; CollNet direct:
   2 (min(1, g-1) x 3.7 + 0.4 (g-1)) + 31 us;
   direct all-to-all (every send posted at once; tuning.cc has no all-to-all entry): one Simple
   ring step, base + hw (8.4 + 3.4 us on NVLink, 8.4 + 14 across);
   two_level (ours, three NCCL calls): a ring reduce-scatter and all-gather inside and a ring
   all-reduce across, each with its base.
   A torus (TPU ICI) has no published library model: the prediction is comm's own best time.

A run that forced NCCL_ALGO (a case's `setup.nccl_algo`) lets the tuner pick its protocol only.

4. NCCL's all-to-all on NVLink, measured where topo.h's figure is not what it reaches: its
   peer-to-peer sends do not run at the ring's per-link figure. On SM100 (NVLink 5, 900 GB/s per
   direction) nccl-tests' alltoall_perf at 1 GiB per rank on one 8-GPU node reports busbw 628.87
   (2 ranks), 446.20 (4), 383.43 GB/s (8) (rapidsai/rapidsmpf issue #590; the 2-rank figure is
   above any NVLink 4 link, 450 GB/s, so the node is NVLink 5: an HGX B200 or B300). From 4 ranks
   up an all-to-all inside an SM100 NVLink domain runs at the measured busbw of the largest
   measured rank count <= n (8 ranks for every larger group, NVL72's 64 and 72 included: no
   published NVL72 alltoall_perf; an extrapolation, stated), with no residual (a measured rate);
   2 ranks keep topo.h's figure (629 measured, 613 = 721.8 x the residual). SM90: topo.h's 370.8
   GB/s is what NCCL's maintainer quotes for non-all-reduce operations (NVIDIA/nccl-tests issue
   #212) and what NVIDIA/nccl issue #2169 measures on 4 H100 (335 GB/s): no measured override.
   An EP dispatch that does not run NCCL's all-to-all (`dispatcher` "hybridep", Megatron-Core's
   flex dispatcher with NVIDIA's HybridEP backend, or "deepep") runs at its backend's published
   rate where a row applies (efficiency.dispatcher: the bytes its benchmark counts over its
   bandwidth, no residual); elsewhere at topo.h's figure and the residual (a stated stand-in).

The prediction is never below the bound (`bound_s` is the floor), and on this model's own terms
it is not: every latency above is at least the bound's per-step LL figure times its steps and
every efficiency is at most 1.
"""

import functools

from ... import comm
from ...errors import UserError
from .dispatcher import seconds as dispatcher_seconds

SOURCE = "NVIDIA/nccl v2.28.3: src/graph/tuning.cc (ncclTunerConstantsDefaults, ncclTopoTuneModel)"
TOPO_SOURCE = "NVIDIA/nccl: src/graph/topo.h (SM70/SM80_NVLINK_BW 20.0, SM90 20.6, SM100 40.1 GB/s)"
PROTOCOLS = ("LL", "LL128", "Simple")

# tuning.cc: baseLatencies (us), {LL, LL128, Simple}
BASE_US = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4)}
# tuning.cc: hwLatencies (us) per hardware, algorithm, {LL, LL128, Simple}
HW_US = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "collnet_direct": (0, 0, 3.7),
               "nvls": (0, 0, 25.0), "nvls_tree": (0, 0, 25.0)},
    "pci": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7), "collnet_direct": (0, 0, 3.7),
            "nvls": (0, 0, 0.0), "nvls_tree": (0, 0, 0.0)},
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "collnet_direct": (0, 0, 31.0),
            "nvls": (0, 0, 18.0), "nvls_tree": (0, 0, 14.0)},
}
NET_OVERHEAD_US = 1.0      # getNetOverhead: x86 Intel (and default); x3 for Simple
COLLNET_ARITY_US = 0.4     # CollNet direct's arity serialisation per local rank

# topo.h: the bandwidth NCCL assigns one NVLink (GB/s per direction), by GPU generation, and the
# nominal per-link figure it is a share of.
NVLINK_NCCL_GBPS = {"sm70": 20.0, "sm80": 20.0, "sm90": 20.6, "sm100": 40.1}
NVLINK_NOMINAL_GBPS = {"sm70": 25.0, "sm80": 25.0, "sm90": 25.0, "sm100": 50.0}
# topo.cc (ncclTopoAddPci): a PCIe link is width x the per-lane code / 80 GB/s, the code 15, 30, 60,
# 120, 240, 480 (x100 Mb/s per lane) for 2.5 to 64 GT/s: Gen3 x16 12, Gen4 x16 24, Gen5 x16 48 GB/s,
# 0.75 of the nominal 16, 32, 64 GB/s. A rank's path to its NIC is the slower of the port and that.
PCI_NCCL_SHARE = 0.75
PCI_SOURCE = "NVIDIA/nccl: src/graph/topo.cc (ncclTopoAddPci, kvDictPciGen: width x speed / 80)"
GENERATION = {"v100-sxm2": "sm70", "a100-sxm-80gb": "sm80", "h100-sxm": "sm90", "h100-nvl": "sm90",
              "h200": "sm90", "h800": "sm90", "h20": "sm90", "b200": "sm100", "b300": "sm100",
              "gb200": "sm100", "gb300": "sm100"}


def protocol_factor(algorithm, protocol, across):
    """Share of the algorithm's bandwidth a protocol delivers (ncclTopoTuneModel's refinements)."""
    i = PROTOCOLS.index(protocol)
    if algorithm == "ring":
        return (0.5, 0.92, 1.0)[i]
    if algorithm == "tree":
        return 0.92 * (1 / 3.8, 120 / 128 if across else 7 / 9, 1.0)[i]
    return 1.0


def protocols(algorithm):
    """The protocols NCCL runs an algorithm with (NVLS, CollNet and direct sends: Simple only)."""
    return PROTOCOLS if algorithm in ("ring", "tree") else ("Simple",)


def link_efficiency(device_id, link):
    """(eta, basis): the share of a link's nominal bandwidth NCCL's topology assigns it."""
    gen = GENERATION.get(device_id)
    if link is not None and link.tier == "up" and gen and "NVLink" in link.name:
        per_link = link.bytes_per_s_per_link or NVLINK_NOMINAL_GBPS[gen] * 1e9
        return min(1.0, NVLINK_NCCL_GBPS[gen] * 1e9 / per_link), f"NCCL's {gen} NVLink figure ({TOPO_SOURCE})"
    if link is not None and link.tier == "out" and link.host_bytes_per_s:
        path = min(link.bytes_per_s, PCI_NCCL_SHARE * link.host_bytes_per_s)
        return path / link.bytes_per_s, f"the NIC path at NCCL's PCIe figure ({PCI_SOURCE})"
    return 1.0, "the link's own figure (NCCL takes the port speed)"


def _hardware(up):
    return "pci" if up is not None and "PCIe" in up.name else "nvlink"


def _log2i(n):
    return n.bit_length() - 1


def _steps(kind, n):
    if kind == "all_reduce":
        return 2 * (n - 1)
    if kind == "p2p":
        return 1
    return n - 1


def latency_s(c, algorithm, protocol, up):
    """NCCL's latency of one run (module docstring, item 3), in seconds."""
    i = PROTOCOLS.index(protocol)
    intra_hw = _hardware(up)
    n = c.group
    if c.tier == "up":
        g, m = n, 1
    else:
        g, m = (c.local if up is not None else 1), -(-n // (c.local if up is not None else 1))
    if algorithm == "direct":
        return (BASE_US["ring"][2] + HW_US[intra_hw if c.tier == "up" else "net"]["ring"][2]) * 1e-6
    if algorithm == "in_network":
        return HW_US[intra_hw]["nvls"][2] * 1e-6
    if algorithm == "nvls_tree":
        return (HW_US[intra_hw]["nvls_tree"][2] + 2 * _log2i(m) * HW_US["net"]["nvls_tree"][2]) * 1e-6
    if algorithm == "collnet":
        return (2 * (min(1, g - 1) * HW_US[intra_hw]["collnet_direct"][2] + COLLNET_ARITY_US * (g - 1))
                + HW_US["net"]["collnet_direct"][2]) * 1e-6
    if algorithm == "tree":
        intra = HW_US[intra_hw]["tree"][i]
        return (BASE_US["tree"][i] + 2 * ((g - 1) * intra + _log2i(m) * HW_US["net"]["tree"][i])) * 1e-6
    if algorithm == "two_level":   # a ring inside (twice for an all-reduce), a ring across its domains
        inside = _ring_us("all_gather", g, 1, i, intra_hw)
        return ((2 if c.kind == "all_reduce" else 1) * inside + _ring_us(c.kind, m, m, i, intra_hw, ppn=1)) * 1e-6
    return _ring_us(c.kind, n, m, i, intra_hw, ppn=g) * 1e-6


def _ring_us(kind, n, m, i, intra_hw, ppn=None):
    """A ring's latency (us) over n ranks in m domains."""
    steps = _steps(kind, n)
    if m <= 1:
        return BASE_US["ring"][i] + steps * HW_US[intra_hw]["ring"][i]
    inter = (2 * (m - 1) if kind == "all_reduce" else m - 1)
    net = HW_US["net"]["tree" if ppn == 1 else "ring"][i]
    intra = max(HW_US[intra_hw]["ring"][i], NET_OVERHEAD_US * (3 if PROTOCOLS[i] == "Simple" else 1))
    return BASE_US["ring"][i] + (steps - inter) * intra + inter * net


def _achievable(link, eta):
    if link is None:
        return None
    return link.replace(efficiency=link.efficiency * eta, alpha_s=0.0, in_network_alpha_s=0.0)


# Item 4: NCCL's all-to-all busbw (GB/s) on NVLink by generation, ((ranks, busbw), ...) ascending.
A2A_NVLINK_BUSBW_GBPS = {"sm100": ((4, 446.20), (8, 383.43))}
A2A_URL = "https://github.com/rapidsai/rapidsmpf/issues/590"   # its corpus cases restate these figures
A2A_SOURCE = ("rapidsai/rapidsmpf issue #590 (nccl-tests alltoall_perf busbw, 1 GiB per rank, one 8-GPU "
              "NVLink 5 node: 628.87 / 446.20 / 383.43 GB/s at 2 / 4 / 8 ranks)")
# The EP dispatchers a training recipe runs (Megatron-Core moe_token_dispatcher_type "alltoall", or
# its flex dispatcher with moe_flex_dispatcher_backend "hybridep" or "deepep").
EP_DISPATCHERS = ("alltoall", "hybridep", "deepep")


def a2a_busbw(device_id, link, ranks, dispatcher="alltoall"):
    """The measured busbw (bytes/s) NCCL's all-to-all reaches over `ranks` ranks on the scale-up
    `link` of `device_id` (item 4), or None where topo.h's figure stands (another generation or
    fabric, fewer ranks than measured, or a dispatcher that is not NCCL's all-to-all)."""
    gen = GENERATION.get(device_id)
    if dispatcher != "alltoall" or link is None or link.tier != "up" or "NVLink" not in link.name:
        return None
    got = [bw for n, bw in A2A_NVLINK_BUSBW_GBPS.get(gen, ()) if n <= ranks]
    return got[-1] * 1e9 if got else None


# NCCL_ALGO's names (lower case) -> comm's algorithm: what a run that forces one lets the tuner pick.
NCCL_ALGOS = {"ring": "ring", "tree": "tree", "nvls": "in_network", "nvlstree": "nvls_tree",
              "collnet": "collnet"}


def choices(c, links, device_id, residual=1.0, forced=None, dispatcher="alltoall"):
    """[(algorithm, protocol, latency s, bandwidth s)] of every pair NCCL's tuner weighs for one
    run of `c`; the bandwidth seconds at the protocol's share and `residual` (FITTED). `forced`:
    an NCCL_ALGO value (`NCCL_ALGOS`) the run set, which leaves the tuner that algorithm alone.
    An all-to-all with a measured rate (`a2a_busbw`, item 4) runs its link at that busbw, no residual."""
    up, out = links.get("up"), links.get("out")
    link = up if c.tier == "up" else out
    a_up = _achievable(up, link_efficiency(device_id, up)[0])
    a_link = a_up if c.tier == "up" else _achievable(out, link_efficiency(device_id, out)[0])
    measured = a2a_busbw(device_id, link, c.group, dispatcher) if c.kind == "all_to_all" else None
    if measured is not None:
        a_link = a_up = _achievable(up, measured / up.bytes_per_s)
        residual = 1.0
    across = c.tier == "out"
    rows = []
    names = comm.applicable(c, link, up)
    if forced is not None:
        if NCCL_ALGOS.get(forced) not in names:
            raise UserError(f"NCCL_ALGO={forced} does not apply to {c.kind} over {c.group} ranks, "
                            f"{c.local} per node; choose from {', '.join(sorted(NCCL_ALGOS))}")
        names = [NCCL_ALGOS[forced]]
    for name in names:
        bw = comm.time_s(c, a_link, name, up=a_up)
        for p in protocols(name):
            rows.append((name, p, latency_s(c, name, p, up), bw / (protocol_factor(name, p, across) * residual)))
    return rows


def predicted_s(c, links, device_id, residual=None, forced=None, dispatcher="alltoall"):
    """(seconds, algorithm, protocol) of one run of `c` as NCCL runs it: the fastest pair of
    `choices` (of the `forced` NCCL_ALGO alone, when the run set one) at the residual efficiency
    (default FITTED["all"]), never below the bound; `dispatcher`: what runs an EP all-to-all
    (`EP_DISPATCHERS`; item 4). A torus scale-up tier (no library model):
    comm's best time over the residual."""
    if c.group == 1 or c.bytes == 0:
        return 0.0, "-", "-"
    residual = FITTED["all"] if residual is None else residual
    up = links.get("up")
    link = up if c.tier == "up" else links.get("out")
    bound = comm.lower_bound_s(c, link, up)
    if link.topology == "torus" and c.tier == "up":
        name, t = comm.choose(c, link, up=up)
        return max(t / residual, bound), name, "-"
    t = dispatcher_seconds(c, links, device_id, dispatcher)
    if t is not None:   # the flex dispatcher's backend at its published rate (efficiency.dispatcher)
        return max(t, bound), dispatcher, "-"
    name, p, lat, bw = min(choices(c, links, device_id, residual, forced, dispatcher), key=lambda r: r[2] + r[3])
    return max(lat + bw, bound), name, p


@functools.lru_cache(maxsize=1 << 14)
def seconds(c, up, out, device_id, dispatcher="alltoall"):
    """`predicted_s`'s seconds of one run of `c` on the links `up` and `out` (records, so
    hashable), memoized: a search meets the same collective on the same links under many layouts."""
    return predicted_s(c, {"up": up, "out": out}, device_id, dispatcher=dispatcher)[0]


# The residual: the share of NCCL's own bandwidth model that published runs reach (NCCL's tuner
# is optimistic: its per-channel caps, chunking and the measured clusters' own losses are not in
# it). One fitted figure on the collective corpus, leave one publication out (analyses/
# validate_predict.fit_collectives; tests/test_prediction.py refits it): "all" on every case.
FITTED = {"all": 0.8505251448435689}   # = analyses/validate_predict.COLLECTIVE_FITTED["all"]

"""Cost of a collective: the alpha-beta model per algorithm, per link tier, from device data.

One run of a collective of S bytes (nccl-tests' S, see `collectives`) over n ranks takes

    t = factor(kind, n) * S * skew / (B * efficiency)  +  steps(kind, n) * alpha

with B the per-direction bandwidth one rank can use for it and alpha the per-step latency.
The algorithms (formulas with sources in `ALGORITHMS`; `describe()` lists them):

- ring (NCCL's bandwidth-optimal default; nccl-tests PERFORMANCE.md): all-reduce
  2(n-1)/n S/B + 2(n-1) alpha; all-gather, reduce-scatter, all-to-all (n-1)/n S/B + (n-1) alpha;
  broadcast S/B + (n-1) alpha (pipelined); point-to-point S/B + alpha.
- tree (all-reduce only, for latency-bound sizes): 2 S/B + 2 ceil(log2 n) alpha: a binary
  tree reduces up and broadcasts down, log2 n levels each way (the double binary tree of
  Sanders, Speck and Traeff 2009, which NCCL runs across nodes); bandwidth as NCCL's tree,
  algBw = busBw / 2 (tuning.cc; its further x0.92 and per-channel caps are not modelled).
  Inside one node NCCL chains the ranks instead, so its own tree latency there is 2(n-1) steps.
- binomial (all-reduce only; the book's unsegmented binomial tree, bojieli/ai-infra-book
  calculations/results/tree-*.md): a binomial reduce to rank 0, then the reverse broadcast, each
  edge carrying the whole S-byte buffer in one round: 2 ceil(log2 n) (S/B + alpha). The busiest
  rank sends ceil(log2 n) S; the group sends 2(n-1) S, the ring's volume. Not chosen by best.
  A binomial broadcast is the second half alone: ceil(log2 n) (S/B + alpha), (n-1) S sent (the
  book's sampled-token feedback, `parallel --token-feedback`).
- in_network (all-reduce only, scale-up tier, where the device reduces in the switch: NVLS):
  S / (B * eta) + alpha_nvls; eta is NCCL's nvlsEfficiency (Hopper 0.85, Blackwell 0.74) and
  alpha_nvls its NVLS latency (25 us), NVIDIA/nccl:src/graph/tuning.cc (v2.30.7).
- best: the fastest of the above that apply (NCCL also picks the minimum-time algorithm).

Which B a group gets depends on the tier and the topology:
- switch (NVSwitch, PCIe switch, a fat-tree fabric): every rank injects at the device's full
  per-direction bandwidth, whatever n.
- mesh (AMD Infinity Fabric, Gaudi 3, an NVLink bridge pair): direct links to each of the D-1
  peers of the domain, B/(D-1) each; a group of n uses the n-1 links to its members:
  B * (n-1)/(D-1) (RCCL-style multi-ring; a single ring would use one link).
- torus (TPU ICI, jax-ml/scaling-book tpus.md), a group along one axis of length n: a
  bidirectional ring over the axis's two links per rank when the axis wraps around
  (n a multiple of the device's `wraparound_axis`), one link otherwise: B = 2 W_link or W_link
  (the scaling-book: no wraparound doubles the time); latency floor(n/2) hops with wraparound,
  n-1 without. All-to-all is limited by the bisection: floor(L^2/4) S/L over 2 W_link with
  wraparound (W_link without), L the axis length; on one axis about a quarter of an all-gather
  of the whole array (scaling-book). A group over several axes (`axes`, L = n^(1/axes) chips
  each): all-gather-type bandwidth scales with the axes, hops add up per axis.
- a group spanning scale-up domains ("out"): n ranks, g of them in each domain (`Collective.local`,
  `group_local`), m = n / g domains; B_o is one device's scale-out bandwidth (its NIC bandwidth times
  its NICs, the device file's per-device figure, never above the device's PCIe host link, which
  its NIC traffic crosses: `host_capped`), so the g ranks of a domain own g B_o of NIC
  ("rails"), B_u the scale-up bandwidth among them. `across` lists the algorithms (formulas with
  their sources in `ACROSS`):
  ring (NCCL's multi-rail rings: one channel per NIC, each ring leaves every domain once, so a
  rank's ring traffic f S splits into f S / g through its NIC and (g-1)/g f S over the scale-up
  link, concurrently): f S max(1/(g B_o), (g-1)/(g B_u)) + steps alpha_o; with g = 1 the flat ring
  over one NIC;
  tree (all-reduce: a chain inside the domain, NCCL's double binary tree across m domains, each
  of the g ranks on its own rail with S/g): S max(t_m/(g B_o), 2/B_u) + 2 (ceil(log2 m) alpha_o
  + (g-1) alpha_u). Per direction a domain's NICs carry t_m S: t_m = 1 on two domains (each of the
  two trees is one edge: S/2 up one, S/2 down the other), 2 beyond (interior in one tree: 3 S/2,
  a leaf in the other: S/2); a rank of the chain sends S up and S down over the scale-up link;
  two_level (all-reduce: reduce-scatter inside, all-reduce of the S/g shard across domains on
  each rank's rail, all-gather inside, one after the other; all-gather and reduce-scatter the
  two halves): 2(g-1)/g S/B_u + 2(m-1)/m S/(g B_o) + 2 (g-1) alpha_u + 2 (m-1) alpha_o;
  nvls_tree (all-reduce where the scale-up switch reduces, NCCL's NVLSTree: NVLS inside, a tree
  of the g NVLS heads across domains, pipelined): max(S/(B_u eta), t_m S/(g B_o)) + alpha_nvls
  + 2 ceil(log2 m) alpha_o;
  collnet (all-reduce where the scale-out switch reduces, SHARP, device data
  `scale_out.in_network_reduce`): max(intra, S/(g B_o)) + alpha_nvls or 2 alpha_o.
  All-to-all: a rank sends (g-1)/n S to its domain peers over B_u and (n-g)/n S to the rest over
  its own NIC, concurrently: skew S max((g-1)/(n B_u), (n-g)/(n B_o)) plus (n-1) alpha_o as
  pairwise rounds (ring, the book's convention) or one alpha_o with every send posted at once
  (direct: DeepEP, NCCL's grouped send/recv). NCCL's all-to-all cannot aggregate several NICs
  (NVIDIA/nccl-tests issue #267, maintainer's answer).
  The estimate picks the fastest of these (NCCL's tuner also picks the minimum predicted time,
  NVIDIA/nccl:src/graph/tuning.cc); the bound is `bound_s`: the fastest of them and a lower
  bound no algorithm can beat (`ACROSS`, "bound").

Latency alpha: NCCL's per-step figures for the LL protocol (NVLink 0.6 us, PCIe 1.0 us,
network 2.7 us; tuning.cc v2.30.7), about 1 us per ICI hop for TPUs (scaling-book). NCCL's
fixed per-call base latency (6.6-8.4 us) is not included. Where the device data has no alpha
(not published), DEFAULT_ALPHA_S is used and the link says so in `assumptions`.
All-to-all inside one domain: (n-1)/n S/B plus (n-1) alpha (ring: pairwise rounds) or one alpha
(direct: concurrent sends).
"""

import functools

from .collectives import (Collective, cp_attention_pairs, cp_collectives, distinct_devices,  # noqa: F401
                          dp_gradient_collectives, ep_collectives, moe_collectives, moe_keeps_tp_reduction,
                          node_share, pp_boundary_collectives, pp_collectives, token_bytes, tp_collectives,
                          WIRE_FORMATS)
from .errors import MissingLink, UserError
from .record import Record
from .splits import ceil_div

DEFAULT_ALPHA_S = 1e-6   # stated default when a device publishes no latency (order of NCCL PCI/LL, ICI hop)
MAX_ALPHA_S = 1.0
MAX_BANDWIDTH = 10**30


def bus_factor(kind, n):
    """nccl-tests' bus-bandwidth factor (NVIDIA/nccl-tests:doc/PERFORMANCE.md), busbw = algbw *
    factor; it equals the ring algorithm's bytes on the wire per rank over S."""
    if kind == "all_reduce":
        return 2 * (n - 1) / n
    if kind in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0   # broadcast, p2p (and reduce)


def _ring_steps(kind, n):
    if kind == "all_reduce":
        return 2 * (n - 1)
    if kind == "p2p":
        return 1
    return n - 1


class Algorithm(Record):
    name: str
    applies_to: str
    formula: str
    source: str


ALGORITHMS = (
    Algorithm("ring", "all-reduce", "2(n-1)/n * S/B + 2(n-1) * alpha",
              "NVIDIA/nccl-tests:doc/PERFORMANCE.md (ring all-reduce, busbw factor 2(n-1)/n)"),
    Algorithm("ring", "all-gather, reduce-scatter", "(n-1)/n * S/B + (n-1) * alpha",
              "NVIDIA/nccl-tests:doc/PERFORMANCE.md (busbw factor (n-1)/n; S = gathered size)"),
    Algorithm("ring", "all-to-all", "(n-1)/n * S/B + (n-1) * alpha (pairwise exchange, n-1 rounds)",
              "NVIDIA/nccl-tests:doc/PERFORMANCE.md (busbw factor (n-1)/n); the book's convention"),
    Algorithm("direct", "all-to-all", "(n-1)/n * S/B + alpha (every send posted at once: one round)",
              "deepseek-ai/DeepEP README (dispatch/combine kernels send to all peers concurrently); "
              "NCCL grouped send/recv"),
    Algorithm("ring", "broadcast", "S/B + (n-1) * alpha", "pipelined ring; nccl-tests busbw factor 1"),
    Algorithm("ring", "point-to-point", "S/B + alpha", "one message over one hop"),
    Algorithm("tree", "all-reduce", "2 * S/B + 2 ceil(log2 n) * alpha",
              "binary tree up and down (double binary tree: Sanders, Speck, Traeff 2009); "
              "NVIDIA/nccl:src/graph/tuning.cc tree algBw = busBw/2"),
    Algorithm("binomial", "all-reduce", "2 ceil(log2 n) * (S/B + alpha)",
              "unsegmented binomial reduce then broadcast, whole buffer per edge "
              "(bojieli/ai-infra-book:calculations/results/tree-qwen3-8b-t1-p8.md)"),
    Algorithm("binomial", "broadcast", "ceil(log2 n) * (S/B + alpha)",
              "binomial tree, whole buffer per edge (bojieli/ai-infra-book:calculations/results/"
              "dense-comm-qwen8-tp8-pp1-t1.md, selected_token_first_stage_broadcast)"),
    Algorithm("in_network", "all-reduce (scale-up, NVLS)", "S/(B * eta) + alpha_nvls",
              "NVIDIA/nccl:src/graph/tuning.cc v2.30.7: nvlsEfficiency Hopper 0.85, Blackwell 0.74; NVLS latency 25 us"),
    Algorithm("torus axis", "all-gather, reduce-scatter (all-reduce twice)",
              "(n-1)/n * S/(2 W_link axes) + axes floor(L/2) alpha with wraparound; W_link and L-1 hops without",
              "jax-ml/scaling-book tpus.md (bidirectional ring; no wraparound doubles the time)"),
    Algorithm("torus axis", "all-to-all", "floor(L^2/4) * S/L / (2 W_link) with wraparound, / W_link without",
              "derived: bisection of the torus, L chips per axis (one axis: about 1/4 of an all-gather "
              "of the array, scaling-book)"),
)
ACROSS = (
    Algorithm("ring", "all-reduce, all-gather, reduce-scatter, broadcast across domains",
              "f S max(1/(g B_o), (g-1)/(g B_u)) + steps alpha_o",
              "NCCL multi-rail rings, one channel per NIC (NVIDIA/nccl-tests:doc/PERFORMANCE.md: busbw "
              "of a multi-node ring is the node's NIC bandwidth per GPU x rails)"),
    Algorithm("tree", "all-reduce across domains",
              "S max(t_m/(g B_o), 2/B_u) + 2 (ceil(log2 m) alpha_o + (g-1) alpha_u); t_m = 1 if m = 2 else 2",
              "NCCL tree: chain inside the node, double binary tree across nodes (Sanders, Speck, Traeff 2009): "
              "a domain's NICs carry t_m S per direction (on two nodes NVIDIA/nccl-tests issue #196: the tree "
              "goes beyond the network bottleneck)"),
    Algorithm("two_level", "all-reduce, all-gather, reduce-scatter across domains",
              "2(g-1)/g S/B_u + 2(m-1)/m S/(g B_o) + 2(g-1) alpha_u + 2(m-1) alpha_o (all-reduce)",
              "hierarchical all-reduce: reduce-scatter inside, shard across, all-gather inside "
              "(Megatron-LM/Horovod style); all-gather and reduce-scatter: one half each"),
    Algorithm("nvls_tree", "all-reduce across domains (scale-up in-network reduction)",
              "max(S/(B_u eta), t_m S/(g B_o)) + alpha_nvls + 2 ceil(log2 m) alpha_o",
              "NCCL NVLSTree (NVLS heads per rail, NVIDIA/nccl issue #1357 log; issue #1649 maintainer's answer)"),
    Algorithm("collnet", "all-reduce across domains (scale-out in-network reduction, SHARP)",
              "max(intra, S/(g B_o)) + intra alpha + 2 alpha_o",
              "NCCL CollNet (SHARP): the node's reduced buffer enters the switch once and returns once"),
    Algorithm("bound", "all-reduce across domains (lower bound)",
              "max(r S/(g B_o), e (n-1)/n S/(B_u + B_o)) + ceil(log2 m) alpha_o; "
              "r = 2(m-1)/m (1 with SHARP), e = 2 (1 with any in-network reduction)",
              "every byte a domain contributes leaves through its g NICs and every result byte enters "
              "through them (Patarasuk and Yuan 2009 over m domains); a rank sends 2(n-1)/n S over all its "
              "links without in-network reduction; recursive doubling: ceil(log2 m) rounds across"),
    Algorithm("bound", "all-gather, reduce-scatter across domains (lower bound)",
              "max((m-1)/m S/(g B_o), (n-1)/n S/(B_u + B_o)) + ceil(log2 m) alpha_o",
              "a domain receives (m-1)/m of the gathered buffer through its g NICs"),
    Algorithm("direct", "all-to-all across domains",
              "skew S max((g-1)/(n B_u), (n-g)/(n B_o)) + alpha_o (ring: + (n-1) alpha_o)",
              "concurrent sends, domain peers over the scale-up link (deepseek-ai/DeepEP; NVIDIA/nccl-tests "
              "issue #267: all-to-all runs at one NIC per rank)"),
)
ALGORITHM_CHOICES = ("ring", "tree", "binomial", "in_network", "direct", "two_level", "nvls_tree", "collnet",
                     "best")


def describe():
    """The algorithm table as rows (for the CLI to print)."""
    return [{"algorithm": a.name, "collective": a.applies_to, "time": a.formula, "source": a.source}
            for a in ALGORITHMS + ACROSS]


class Link(Record):
    """One tier of one device, ready for costing. bytes_per_s: per direction, per device."""
    tier: str
    name: str
    bytes_per_s: int
    alpha_s: float
    efficiency: float = 1.0
    in_network_reduce: bool = False
    topology: str = "switch"     # switch | mesh | torus
    domain_size: int = 1
    links_per_device: int = 0
    bytes_per_s_per_link: int = 0
    wraparound_axis: int = 0
    in_network_efficiency: float = 0.0
    in_network_alpha_s: float = 0.0
    host_bytes_per_s: int = 0    # "out" only: the PCIe host link the rank's NIC traffic crosses (0: none)
    assumptions: tuple = ()      # defaults and overrides in force, in words


def _alpha(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_ALPHA_S:
        raise UserError(f"{what} must be a latency in seconds from 0 to 1, got {value!r}")
    return float(value)


def _bandwidth(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= MAX_BANDWIDTH:
        raise UserError(f"{what} must be a bandwidth from 1 to 1e30 bytes/s, got {value!r}")
    return int(value)   # >= 1: a bandwidth below one byte/s would truncate to 0 and divide by it


def _link(tier, data, alpha, bw, efficiency):
    notes = []
    if alpha is not None:
        a = _alpha(alpha, f"--alpha-{tier}")
        notes.append(f"alpha {a * 1e6:g} us (override)")
    elif data.alpha_s is not None:
        a = data.alpha_s
    else:
        a = DEFAULT_ALPHA_S
        notes.append(f"alpha not published: {a * 1e6:g} us assumed")
    topology = data.topology
    if not topology:
        topology = "switch"
        if tier == "up" and data.domain_size > 1:
            notes.append("topology not stated: costed as a switch")
    per_link, links = data.bytes_per_s_per_link, data.links_per_device
    if bw is not None:
        total = _bandwidth(bw, f"--link-bw-{tier}")
        per_link = total // links if links else 0
        notes.append(f"bandwidth {total / 1e9:g} GB/s per direction (override)")
    else:
        total = data.bytes_per_s
    if efficiency != 1.0:
        notes.append(f"efficiency {efficiency:g}")
    return Link(tier, data.name, total, alpha_s=a, efficiency=efficiency, in_network_reduce=data.in_network_reduce,
                topology=topology, domain_size=data.domain_size, links_per_device=links,
                bytes_per_s_per_link=per_link, wraparound_axis=data.wraparound_axis,
                in_network_efficiency=data.in_network_efficiency or 0.0,
                in_network_alpha_s=data.in_network_alpha_s or 0.0, assumptions=tuple(notes))


def links(device, alpha_up=None, alpha_out=None, link_bw_up=None, link_bw_out=None, comm_efficiency=None):
    """{"up": Link, "out": Link or None} for a device; the keyword overrides are the
    --alpha-up/--alpha-out (seconds), --link-bw-up/--link-bw-out (bytes/s per direction per
    device) and --comm-efficiency (a factor on every bandwidth) options; None keeps the data.
    A device without a scale-out link (TPU v4; the PCIe cards state their PCIe link as the default) has "out" None unless
    --link-bw-out supplies one (likewise "up")."""
    from .load.hardware import Link as DataLink

    eff = 1.0 if comm_efficiency is None else comm_efficiency
    if isinstance(eff, bool) or not isinstance(eff, (int, float)) or not 1e-6 <= eff <= 1:
        raise UserError(f"--comm-efficiency must be from 1e-6 to 1, got {eff!r}")
    eff = float(eff)
    result = {}
    for name, data, alpha, bw in (("up", device.scale_up, alpha_up, link_bw_up),
                                  ("out", device.scale_out, alpha_out, link_bw_out)):
        if data is None and bw is not None:
            data = DataLink(f"scale-{name} (given)", _bandwidth(bw, f"--link-bw-{name}"))
        result[name] = None if data is None else _link(name, data, alpha, bw, eff)
    if result["out"] is not None and device.scale_out is not None:
        result["out"] = host_capped(result["out"], device.host_link)
    return result


def host_capped(out, host):
    """The scale-out Link of a device whose NICs sit on PCIe behind its host link: a rank's NIC
    traffic (GPUDirect RDMA reads and writes its memory through that link) crosses its own PCIe
    link, so B_o = min(NICs, host link) per direction. With one GPU per node and four 400 Gb/s NICs
    (NVIDIA/nccl-tests issue #232) the rank gets 64 GB/s (PCIe Gen5 x16), not 200. Unchanged when
    the host link is not PCIe (NVLink-C2C) or not published."""
    if host is None or "PCIe" not in host.name:
        return out
    capped = out.replace(host_bytes_per_s=host.bytes_per_s)
    if out.bytes_per_s <= host.bytes_per_s:
        return capped
    return capped.replace(bytes_per_s=host.bytes_per_s, assumptions=out.assumptions + (
        f"NICs {out.bytes_per_s / 1e9:g} GB/s per direction capped at the {host.name} host link's "
        f"{host.bytes_per_s / 1e9:g} GB/s (a rank's NIC traffic crosses it)",))


def tier(layout_group_span_devices, device):
    """"up" when a group spanning this many consecutive ranks fits one scale-up domain (groups
    are placed aligned to domains), else "out" (always "out" on a device with no scale-up tier)."""
    span = layout_group_span_devices
    if isinstance(span, bool) or not isinstance(span, int) or span < 1:
        raise UserError(f"a group spans a positive number of devices, got {span!r}")
    return "up" if device.scale_up is not None and span <= device.scale_up.domain_size else "out"


def axis_length(n, axes):
    """Chips per axis of a group of n spread evenly over `axes` torus axes (n = L^axes)."""
    length = round(n ** (1 / axes))
    if length ** axes != n:
        raise UserError(f"a group of {n} chips does not spread evenly over {axes} torus axes")
    return length


def wraparound(link, n):
    """A torus axis of n chips wraps around when n is a multiple of the device's wraparound axis."""
    return bool(link.wraparound_axis) and n % link.wraparound_axis == 0


def _torus_link_bw(link):
    if link.bytes_per_s_per_link:
        return link.bytes_per_s_per_link
    if link.links_per_device:
        return link.bytes_per_s // link.links_per_device
    raise UserError(f"{link.name}: a torus needs links_per_device or bytes_per_s_per_link in the device data")


def _torus_time(c, link, axes, wrap):
    """Per-axis formulas (scaling-book tpus.md). A group over `axes` axes of L = n^(1/axes) chips
    each uses the links of every axis at once (bandwidth x axes) and pays each axis's hops."""
    n, w_link = c.group, _torus_link_bw(link) * link.efficiency
    if c.kind == "p2p":                       # one message to a neighbour over one link
        return c.bytes / w_link + link.alpha_s
    length = axis_length(n, axes)
    wrap = wraparound(link, length) if wrap is None else wrap
    hops = axes * (length // 2 if wrap else length - 1)
    per_axis = (2 if wrap else 1) * w_link    # one rank's ring bandwidth on one axis
    if c.kind == "all_to_all":
        # Bisection across one axis: floor(L^2/4) S / L per rank-row of the cut, per direction.
        return (length * length // 4) * c.bytes * c.skew / length / per_axis + hops * link.alpha_s
    cut = per_axis * axes
    phases = 2 if c.kind == "all_reduce" else 1
    factor = 1.0 if c.kind == "broadcast" else (n - 1) / n
    return phases * (factor * c.bytes * c.skew / cut + hops * link.alpha_s)


def group_bandwidth(c, link):
    """B a rank of this group can use (bytes/s per direction), before efficiency."""
    if link.topology == "mesh" and c.tier == "up" and link.domain_size > 1:
        if c.group > link.domain_size:
            raise UserError(f"a group of {c.group} does not fit the {link.domain_size}-device mesh of {link.name}")
        peers = 1 if c.kind == "p2p" else c.group - 1
        return link.bytes_per_s * peers / (link.domain_size - 1)
    return link.bytes_per_s


def time_s(c, link, algorithm="ring", *, axes=1, wrap=None, up=None):
    """Seconds for ONE run of collective `c` over `link` (multiply by c.count for a pass).
    `axes` and `wrap` apply to a torus: the number of axes the group spans (its n chips spread
    evenly, n^(1/axes) per axis; the caller that knows the slice shape passes it), and whether
    they wrap around (default: from the device's wraparound axis). `up`: the scale-up Link, which
    a group spanning domains with c.local > 1 ranks per domain also uses (module docstring)."""
    if algorithm not in ALGORITHM_CHOICES:
        raise UserError(f"unknown collective algorithm '{algorithm}'; choose from {', '.join(ALGORITHM_CHOICES)}")
    if link is None:
        raise MissingLink(c.tier, c.name)
    if c.group == 1 or c.bytes == 0:
        return 0.0
    if algorithm == "best":
        return choose(c, link, axes, wrap, up)[1]
    if c.tier == "out":
        return _across(c, link, up, algorithm)
    if algorithm in ACROSS_ONLY:
        raise UserError(f"the {algorithm} algorithm applies to a group spanning scale-up domains")
    if algorithm == "in_network":
        if c.kind != "all_reduce":
            raise UserError(f"in-network reduction is modelled for all-reduce only, not {c.kind}")
        if not (link.in_network_reduce and c.tier == "up"):
            raise UserError(f"{link.name} has no in-network reduction (NVLS) on the {c.tier} tier")
        return c.bytes * c.skew / (link.bytes_per_s * link.in_network_efficiency * link.efficiency) \
            + link.in_network_alpha_s
    if link.topology == "torus" and c.tier == "up":
        if algorithm in ("tree", "binomial"):
            raise UserError(f"the {algorithm} algorithm is not modelled on a torus; use ring")
        return _torus_time(c, link, axes, wrap)
    b = group_bandwidth(c, link) * link.efficiency
    if algorithm == "direct":
        if c.kind != "all_to_all":
            raise UserError(f"the direct algorithm is modelled for all-to-all only, not {c.kind}")
        return bus_factor(c.kind, c.group) * c.bytes * c.skew / b + link.alpha_s
    if algorithm == "tree":
        if c.kind != "all_reduce":
            raise UserError(f"the tree algorithm is modelled for all-reduce only, not {c.kind}")
        return 2 * c.bytes * c.skew / b + 2 * binomial_rounds(c.group) * link.alpha_s   # depth ceil(log2 n)
    if algorithm == "binomial":
        return _binomial(c, b, link.alpha_s)
    return bus_factor(c.kind, c.group) * c.bytes * c.skew / b + _ring_steps(c.kind, c.group) * link.alpha_s


def _binomial(c, b, alpha):
    """The unsegmented binomial tree at bandwidth b: an all-reduce 2 ceil(log2 n) rounds (reduce,
    then broadcast), a broadcast ceil(log2 n), each round the whole buffer over one edge."""
    if c.kind not in ("all_reduce", "broadcast"):
        raise UserError(f"the binomial algorithm is modelled for all-reduce and broadcast only, not {c.kind}")
    rounds = binomial_rounds(c.group) * (2 if c.kind == "all_reduce" else 1)
    return rounds * (c.bytes * c.skew / b + alpha)


def applicable(c, link, up=None):
    """Algorithms that apply to this collective on this link, in a fixed order."""
    out = ["ring"]
    if c.kind == "all_to_all" and not (link.topology == "torus" and c.tier == "up"):
        out.append("direct")
    if c.tier == "out":
        g, m = _domains(c, up)
        if c.kind == "all_reduce":
            out.append("tree")
        if g > 1 and m > 1 and c.kind in ("all_reduce", "all_gather", "reduce_scatter"):
            out.append("two_level")
        if c.kind == "all_reduce" and g > 1 and m > 1 and up.in_network_reduce:
            out.append("nvls_tree")
        if c.kind == "all_reduce" and link.in_network_reduce and m > 1:
            out.append("collnet")
        return out
    torus = link.topology == "torus"
    if c.kind == "all_reduce" and not torus:
        out.append("tree")
    if c.kind == "all_reduce" and link.in_network_reduce:
        out.append("in_network")
    return out


def choose(c, link, axes=1, wrap=None, up=None):
    """(algorithm, seconds) of the fastest applicable algorithm; ties keep the earlier one."""
    best = None
    for name in applicable(c, link, up):
        t = time_s(c, link, name, axes=axes, wrap=wrap, up=up)
        if best is None or t < best[1]:
            best = (name, t)
    return best


ACROSS_ONLY = ("two_level", "nvls_tree", "collnet")


def group_local(span_ranks, stride, size, domain):
    """Ranks of a group inside one scale-up domain of `domain` ranks (groups placed aligned to
    domains): all `size` when its span fits; else the members stride apart that one domain holds,
    ceil(domain / stride) (at least 1, at most size). `span_ranks`: the group's span
    (Layout.group_span)."""
    if span_ranks <= domain:
        return size
    return max(1, min(size, ceil_div(domain, stride)))


def ranks_per_domain(lay, dim, domain):
    """`group_local` of a layout's `dim` group (tp, ep, cp, dp) on devices with `domain` ranks per
    scale-up domain; 1 when the group fits one domain (its collectives then stay on "up"). An EP
    group wider than TP is tp consecutive ranks repeated every DP stride."""
    size = {"tp": lay.tp, "ep": lay.ep, "cp": lay.cp, "dp": lay.dp}[dim]
    span = lay.group_span(dim)
    if span <= domain:
        return 1
    if dim == "ep" and lay.ep > lay.tp:
        return min(lay.tp, domain) * group_local(span, lay.group_stride("dp"), lay.ep // lay.tp, domain)
    return group_local(span, lay.group_stride(dim), size, domain)


def _domains(c, up):
    """(g, m): ranks per scale-up domain and domains of a group on the "out" tier."""
    g = c.local if up is not None else 1
    return g, ceil_div(c.group, g)


def _up_bandwidth(up, g):
    """B_u of g ranks of one domain (mesh: the g-1 direct links to the others)."""
    if up.topology == "mesh" and up.domain_size > 1:
        return up.bytes_per_s * (g - 1) / (up.domain_size - 1) * up.efficiency
    return up.bytes_per_s * up.efficiency


def _across(c, link, up, algorithm):
    """One run of `c` over a group spanning m domains of g ranks (module docstring)."""
    if algorithm == "in_network":
        raise UserError(f"{link.name}: in-network reduction across domains is the collnet algorithm")
    if algorithm == "binomial":
        return _binomial(c, link.bytes_per_s * link.efficiency, link.alpha_s)
    if algorithm not in applicable(c, link, up):
        raise UserError(f"the {algorithm} algorithm does not apply to {c.kind} over {c.group} ranks, "
                        f"{c.local} per domain, on {link.name}")
    n, s = c.group, c.bytes * c.skew
    g, m = _domains(c, up)
    b_o = link.bytes_per_s * link.efficiency
    b_u = _up_bandwidth(up, g) if g > 1 else 0.0
    a_o, a_u = link.alpha_s, (up.alpha_s if g > 1 else 0.0)
    inside = (g - 1) / (g * b_u) if g > 1 else 0.0      # seconds per byte of ring traffic kept inside
    if c.kind == "p2p":
        return s / b_o + a_o
    if c.kind == "all_to_all":
        local = (g - 1) / (n * b_u) if g > 1 else 0.0
        return s * max(local, (n - g) / (n * b_o)) + (1 if algorithm == "direct" else n - 1) * a_o
    if algorithm == "ring":
        return bus_factor(c.kind, n) * s * max(1 / (g * b_o), inside) + _ring_steps(c.kind, n) * a_o
    t_m = 1 if m == 2 else 2
    if algorithm == "tree":
        return s * max(t_m / (g * b_o), 2 / b_u if g > 1 else 0.0) + \
            2 * (binomial_rounds(m) * a_o + (g - 1) * a_u)
    if algorithm == "two_level":
        phases = 2 if c.kind == "all_reduce" else 1
        return phases * ((g - 1) / g * s / b_u + (m - 1) / m * s / (g * b_o) + (g - 1) * a_u + (m - 1) * a_o)
    if algorithm == "nvls_tree":
        return max(s / (b_u * up.in_network_efficiency), t_m * s / (g * b_o)) + up.in_network_alpha_s + \
            2 * binomial_rounds(m) * a_o
    # collnet: the node reduces inside (NVLS where the switch reduces, else a ring reduce-scatter
    # and all-gather), the scale-out switch reduces the node's S across domains
    if g > 1 and up.in_network_reduce:
        intra, a_in = s / (b_u * up.in_network_efficiency), up.in_network_alpha_s
    else:
        intra, a_in = 2 * s * inside, 2 * (g - 1) * a_u
    return max(intra, s / (g * b_o)) + a_in + 2 * a_o


def lower_bound_s(c, link, up=None):
    """Seconds no algorithm can beat for one run of `c` on its tier: inside one domain the
    fastest of `applicable` and (all-reduce, not a torus) the binomial tree; across domains also
    the physical floor (`ACROSS`, "bound": a domain's bytes through its g NICs, a rank's bytes
    through all its links, ceil(log2 m) rounds of alpha_o), never above the fastest algorithm."""
    if link is None or c.group == 1 or c.bytes == 0:
        return time_s(c, link, "ring", up=up)
    best = choose(c, link, up=up)[1]
    torus = link.topology == "torus" and c.tier == "up"
    if c.kind == "all_reduce" and not torus:
        best = min(best, time_s(c, link, "binomial", up=up))
    if c.tier == "out" and c.kind == "all_to_all" and c.nic_share < 1:
        # a node-deduplicating dispatch (DeepEP's normal mode) sends only c.nic_share of the
        # per-copy NIC bytes; its forwarding inside the node is not charged (a lower bound)
        g, _ = _domains(c, up)
        b_o = link.bytes_per_s * link.efficiency
        return min(best, c.nic_share * c.bytes * c.skew * (c.group - g) / (c.group * b_o) + link.alpha_s)
    if c.tier == "up" or c.kind not in ("all_reduce", "all_gather", "reduce_scatter"):
        return best
    n, s = c.group, c.bytes * c.skew
    g, m = _domains(c, up)
    b_o = link.bytes_per_s * link.efficiency
    b_all = b_o + (_up_bandwidth(up, g) if g > 1 else 0.0)
    if c.kind == "all_reduce":
        reduce_in_network = link.in_network_reduce or (g > 1 and up.in_network_reduce)
        inter = (1 if link.in_network_reduce else 2 * (m - 1) / m) * s / (g * b_o)
        egress = (1 if reduce_in_network else 2) * (n - 1) / n * s / b_all
    else:
        inter = (m - 1) / m * s / (g * b_o)
        egress = (n - 1) / n * s / b_all
    return min(best, max(inter, egress) + binomial_rounds(m) * link.alpha_s)


def algbw(c, t):
    """nccl-tests' algorithm bandwidth: S / t (bytes/s)."""
    return c.bytes / t


def busbw(c, t, in_network=False):
    """nccl-tests' bus bandwidth: algbw * 2(n-1)/n for all-reduce ((n-1)/(n+1) for an
    in-network reduction), * (n-1)/n for all-gather, reduce-scatter and all-to-all, * 1
    otherwise (NVIDIA/nccl-tests:doc/PERFORMANCE.md). For a ring at alpha = 0 it equals the
    link bandwidth B."""
    if in_network and c.kind == "all_reduce":
        return algbw(c, t) * (c.group - 1) / (c.group + 1)
    return algbw(c, t) * bus_factor(c.kind, c.group)


def binomial_rounds(n):
    """Rounds of one binomial reduce (or broadcast) over n ranks: ceil(log2 n)."""
    return (n - 1).bit_length()


def wire_bytes(c, algorithm="ring"):
    """Bytes one rank sends per run: under the ring algorithm S * the bus factor (all-to-all:
    the (ep-1)/ep of the copies that leave the rank); under the binomial all-reduce the busiest
    rank's ceil(log2 n) * S (rank 0 broadcasting to each of its children)."""
    if algorithm == "binomial" and c.kind == "all_reduce":
        return c.bytes * binomial_rounds(c.group)
    return c.bytes * bus_factor(c.kind, c.group)


RUN_CHOICES = ("ring", "binomial", "best", "bound")


def prunable(links):
    """True when `run_s` refuses no collective on these links with the ring, binomial or best
    charge: both tiers present (no MissingLink) and both switches (a mesh refuses a group larger
    than its domain, a torus one that does not spread over its axes). A search prunes layouts
    by a bound only then: a refusal it skipped would have been a rejection."""
    return all(links.get(t) is not None and links[t].topology == "switch" for t in ("up", "out"))


def run_s(c, links, algorithm="ring"):
    """Seconds of ONE run of `c` over a device's links ({"up": Link, "out": Link}, `links`): THE
    charge `parallel`, `train` and `collective` share. ring and binomial name the estimate's
    algorithm (binomial for all-reduces, ring for the rest); best is the fastest applicable
    (`choose`); bound is `lower_bound_s`. A group spanning domains also uses the scale-up link."""
    return _run(c, links.get("up"), links.get("out"), algorithm)


def bandwidth_s(c, links, algorithm="ring"):
    """The bandwidth share of `run_s(c, links, algorithm)` (ring, binomial or best): the same
    run, by the algorithm run_s charges on these links, with every per-step latency (alpha,
    the in-network alpha) zero; run_s minus it is the startup share. Exact for the ring and
    the binomial tree, whose time is a bandwidth term plus steps x alpha."""
    up, out = links.get("up"), links.get("out")
    link = up if c.tier == "up" else out
    if link is None or c.group == 1 or not c.bytes:
        return 0.0
    name = "binomial" if algorithm == "binomial" and c.kind == "all_reduce" else "ring"
    if algorithm == "best":
        name = choose(c, link, up=up)[0]
    up0 = without_alpha(up)
    return time_s(c, up0 if c.tier == "up" else without_alpha(out), name, up=up0)


def without_alpha(link):
    """The link (or None) with every per-step latency zero: what a run's bandwidth share is costed on."""
    return None if link is None else link.replace(alpha_s=0.0, in_network_alpha_s=0.0)


@functools.lru_cache(maxsize=1 << 16)
def _run(c, up, out, algorithm):
    """`run_s` memoized by its (hashable) records: a search meets the same collective on the
    same links under many layouts."""
    link = up if c.tier == "up" else out
    if algorithm == "bound":
        return lower_bound_s(c, link, up)
    if algorithm == "best" and link is not None and c.group > 1 and c.bytes:
        return choose(c, link, up=up)[1]
    name = "binomial" if algorithm == "binomial" and c.kind == "all_reduce" else "ring"
    return time_s(c, link, name, up=up)

"""`collective`: one collective over a device's links, nccl-tests style (the communication model
`parallel` and `train` charge, exposed directly).

For an operation, n ranks, g ranks per node (scale-up domain) and a device: per message size S
(nccl-tests' S: the whole buffer for all-reduce, the gathered output for all-gather, the input
for reduce-scatter, what a rank sends plus keeps for all-to-all, the message for send/recv) the
time of every applicable algorithm (`comm.applicable`, costed by `comm.time_s`), its algbw = S/t
and busbw = algbw x nccl-tests' bus factor (NVIDIA/nccl-tests:doc/PERFORMANCE.md; the factor
does not depend on the algorithm, as nccl-tests reports it), which algorithm the estimate picks
(`--algorithm best`: the fastest) and the lower bound (`comm.lower_bound_s`, what `parallel`'s
bound charges). A group fits one domain ("up" tier) when n = g; else it spans n / g domains.
"""

from .. import comm
from ..errors import UserError
from .records import SCHEMA_VERSION

OPERATIONS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
              "all_to_all": "all_to_all", "send_recv": "p2p", "broadcast": "broadcast"}


def domain_of(device):
    return device.scale_up.domain_size if device.scale_up else 1


def placed(operation, size, ranks, ranks_per_node, device, *, experts=0, top_k=0):
    """The Collective of one run: its tier and ranks per domain from n and g (errors name the
    impossible ones). `experts` and `top_k` make an all-to-all an EP dispatch or combine under
    uniform routing, whose bound lets a node-deduplicating dispatch send less through the NICs
    (`collectives.node_share`, as `parallel` and `train` charge it)."""
    if operation not in OPERATIONS:
        from ..errors import unknown
        raise unknown("operation", operation, tuple(OPERATIONS))
    kind = OPERATIONS[operation]
    if ranks < 2:
        raise UserError(f"a collective needs at least 2 ranks, got --ranks {ranks}")
    domain = domain_of(device)
    g = min(ranks, domain) if ranks_per_node is None else ranks_per_node
    if g > ranks:
        raise UserError(f"--ranks-per-node {g} exceeds --ranks {ranks}")
    if g > domain:
        raise UserError(f"--ranks-per-node {g} exceeds the {domain}-device scale-up domain of {device.id}")
    if ranks % g:
        raise UserError(f"--ranks {ranks} is not a multiple of --ranks-per-node {g}")
    if kind == "p2p" and ranks != 2:
        raise UserError("send_recv runs between 2 ranks (--ranks 2); --ranks-per-node 1 sends across nodes")
    tier = "up" if g == ranks else "out"
    share = 1.0
    if experts or top_k:
        if kind != "all_to_all" or not (experts and top_k):
            raise UserError("--experts and --top-k (both) describe an EP all-to-all; they apply to all_to_all only")
        if experts % ranks or top_k > experts:
            raise UserError(f"--experts {experts} must be a multiple of --ranks {ranks} and at least --top-k {top_k}")
        if tier == "out":
            share = comm.node_share(experts, top_k, ranks, g)
    return comm.Collective(operation, kind, size, ranks, tier, local=1 if tier == "up" else g, nic_share=share)


def rows(c, links, device_id=None):
    """[{algorithm, time_s, algbw, busbw, estimate, bound, predicted}] of one collective: every
    applicable algorithm, the bound (`comm.lower_bound_s`), then, given the device id, the
    predicted row (efficiency.collective: NCCL's model, its algorithm and protocol named)."""
    link, up = links.get(c.tier), links.get("up")
    if link is None:
        raise UserError(f"{c.name} over {c.group} ranks crosses the scale-{c.tier} tier, but the device has no "
                        f"such link; give --link-bw-{c.tier}")
    pick = comm.choose(c, link, up=up)[0]
    out = []
    for name in comm.applicable(c, link, up):
        t = comm.time_s(c, link, name, up=up)
        out.append(_row(c, name, t, estimate=name == pick, bound=False))
    out.append(_row(c, "bound", comm.lower_bound_s(c, link, up), estimate=False, bound=True))
    if device_id is not None:
        from .efficiency.collective import predicted_s
        t, name, proto = predicted_s(c, links, device_id)
        out.append(_row(c, f"predicted {name}/{proto}", t, estimate=False, bound=False, predicted=True))
    return out


def _row(c, name, t, estimate, bound, predicted=False):
    return {"bytes": c.bytes, "algorithm": name, "time_s": t, "algbw_bytes_per_s": comm.algbw(c, t),
            "busbw_bytes_per_s": comm.busbw(c, t), "estimate": estimate, "bound": bound, "predicted": predicted}


def reconfiguration(c, links, new_links, algorithm, setup_s, calls):
    """Reconfiguring the group's links to another bandwidth (an optical circuit switch re-wiring a
    ring, a wider slice): one run before (t0, the current links) and after (t1, the same alpha,
    the new bandwidth) for `algorithm`, the saving t0 - t1 per call, and the calls a one-off setup
    cost needs before it pays: the strict payback count, the least n with n (t0 - t1) > setup,
    floor(setup / (t0 - t1)) + 1 (none when nothing is saved); over a lifetime of `calls` calls the
    new path wins when setup + calls t1 < calls t0."""
    link, new = links.get(c.tier), new_links.get(c.tier)
    if algorithm not in comm.applicable(c, link, links.get("up")):
        raise UserError(f"--algorithm {algorithm} does not apply to {c.name} over {c.group} ranks; "
                        f"choose from {', '.join(comm.applicable(c, link, links.get('up')))}")
    before = comm.time_s(c, link, algorithm, up=links.get("up"))
    after = comm.time_s(c, new, algorithm, up=new_links.get("up"))
    saving = before - after
    payback = int(setup_s // saving) + 1 if saving > 0 else None
    return {"bytes": c.bytes, "algorithm": algorithm, "before_s": before, "after_s": after, "saving_s": saving,
            "setup_s": setup_s, "payback_calls": payback, "calls": calls,
            "wins_within_calls": None if calls is None else setup_s + calls * after < calls * before}


def sizes(min_bytes, max_bytes, factor):
    """nccl-tests' -b/-e/-f sweep: min, min x f, ... up to max."""
    if min_bytes > max_bytes:
        raise UserError(f"--min-bytes {min_bytes} exceeds --max-bytes {max_bytes}")
    if factor < 2:
        raise UserError(f"--step-factor must be at least 2, got {factor}")
    out, s = [], min_bytes
    while s <= max_bytes:
        out.append(s)
        s *= factor
    return out


def record(device, operation, ranks, ranks_per_node, byte_sizes, *, links, link_record, experts=0, top_k=0,
           reconfigure=None):
    """The `collective` record: inputs, links, one row per (size, algorithm); with `reconfigure`
    (new_links, algorithm, setup_s, calls) one reconfiguration row per size."""
    table, moved = [], []
    for size in byte_sizes:
        c = placed(operation, size, ranks, ranks_per_node, device=device, experts=experts, top_k=top_k)
        table += rows(c, links, device.id)
        if reconfigure:
            moved.append(reconfiguration(c, links, *reconfigure))
    c = placed(operation, byte_sizes[0], ranks, ranks_per_node, device=device, experts=experts, top_k=top_k)
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "collective",
        "device": {"id": device.id, "name": device.name},
        "inputs": {"operation": operation, "ranks": ranks, "ranks_per_node": c.local if c.tier == "out" else ranks,
                   "tier": c.tier, "nodes": 1 if c.tier == "up" else ranks // c.local,
                   "experts": experts or None, "top_k": top_k or None, "nic_share": c.nic_share},
        "links": link_record,
        "rows": table,
        **({"reconfiguration": moved} if reconfigure else {}),
        "conventions": list(CONVENTIONS) + ([RECONFIGURE] if reconfigure else []),
    }


CONVENTIONS = (
    "S as nccl-tests counts it: the whole buffer for all-reduce, the gathered output for all-gather, the input "
    "for reduce-scatter, what a rank sends plus keeps for all-to-all, the message for send/recv.",
    "algbw = S / time; busbw = algbw x 2(n-1)/n (all-reduce), x (n-1)/n (all-gather, reduce-scatter, "
    "all-to-all), x 1 (broadcast, send/recv), whatever the algorithm (NVIDIA/nccl-tests:doc/PERFORMANCE.md).",
    "Times: alpha-beta per algorithm (docs/communication.md), one run, NCCL's fixed per-call latency not "
    "included; 'estimate' marks the fastest algorithm (what --algorithm best charges in parallel and train); "
    "the bound row is comm.lower_bound_s, what parallel's lower bound charges: no run can be faster.",
    "A group of n ranks with g per node fits one scale-up domain when n = g (tier up); otherwise it spans "
    "n / g nodes, the g ranks of a node using their g NICs (rails) and the scale-up link among them; a "
    "rank's NICs never faster than its PCIe host link, which their traffic crosses.",
    "Predicted (a third figure, not a bound): NCCL's own cost model, the fastest (algorithm, protocol) for "
    "the size: latency per algorithm and protocol (LL, LL128, Simple) and their bandwidth shares from "
    "NVIDIA/nccl tuning.cc, NVLinks at NCCL's topo.h figures, a NIC path at NCCL's PCIe figure (topo.cc), "
    "one fitted residual on the bandwidth; an all-to-all of 4 or more ranks on SM100 NVLink at NCCL's "
    "measured all-to-all busbw instead (446 GB/s at 4 ranks, 383 from 8; rapidsai/rapidsmpf #590), no residual "
    "(efficiency.collective; docs/prediction.md); never below the bound.",
)

RECONFIGURE = (
    "Reconfiguration: one run of the named algorithm before (the links above) and after (the same alpha, "
    "--reconfigure-bw on the group's tier); the strict payback count is the least n with n x saving > the "
    "one-off --setup-cost, floor(setup / saving) + 1 (none when nothing is saved); the setup is charged once, "
    "the startup terms do not shrink with bandwidth.")

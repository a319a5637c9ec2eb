"""`collective`: one collective over a device's links, nccl-tests style."""

from . import common


def add_arguments(p):
    from ..analyses.collective import OPERATIONS

    p.add_argument("operation", choices=tuple(OPERATIONS), metavar="OPERATION",
                   help=f"one of {', '.join(OPERATIONS)}")
    p.add_argument("--ranks", type=common.positive_int, required=True, metavar="N",
                   help="ranks in the group (nccl-tests' number of GPUs)")
    p.add_argument("--ranks-per-node", type=common.positive_int, default=None, metavar="G",
                   help="ranks per node (scale-up domain); default: all in one domain when they fit, "
                        "else the domain size")
    p.add_argument("--device", default="h100-sxm", metavar="ID|DEVICE.json",
                   help="a bundled device id (see `hardware`) or a device JSON path (default h100-sxm)")
    p.add_argument("--min-bytes", type=common.byte_size, default=1024, metavar="S",
                   help="smallest message (nccl-tests -b; default 1KiB)")
    p.add_argument("--max-bytes", type=common.byte_size, default=8 << 30, metavar="S",
                   help="largest message (nccl-tests -e; default 8GiB)")
    p.add_argument("--step-factor", type=common.positive_int, default=8, metavar="F",
                   help="multiply the size by F each row (nccl-tests -f; default 8)")
    p.add_argument("--experts", type=common.positive_int, default=0, metavar="E",
                   help="all_to_all as an EP dispatch/combine of E routed experts (E/N per rank, uniform routing)")
    p.add_argument("--top-k", type=common.positive_int, default=0, metavar="K",
                   help="experts per token of that dispatch (with --experts): the bound lets a node-deduplicating "
                        "dispatch (DeepEP's normal mode) send one copy per destination node")
    p.add_argument("--bytes", type=common.byte_size, default=None, metavar="S",
                   help="one message size (sets --min-bytes and --max-bytes to S)")
    common.add_link_options(p.add_argument_group("links (override the device data)"))
    rc = p.add_argument_group("reconfiguring the links (docs/collective.md)")
    rc.add_argument("--reconfigure-bw", type=common.bandwidth, default=None, metavar="BW",
                    help="the group's link bandwidth after a reconfiguration (same alpha): each size's time "
                         "before and after, the saving and the calls --setup-cost needs to pay back")
    rc.add_argument("--setup-cost", type=common.duration, default=None, metavar="T",
                    help="one-off cost of the reconfiguration (e.g. 100ms; with --reconfigure-bw)")
    rc.add_argument("--algorithm", default=None, metavar="A",
                    help="the algorithm the reconfiguration rows cost (default ring)")
    rc.add_argument("--calls", type=common.positive_int, default=None, metavar="N",
                    help="calls over the reconfigured path's lifetime: whether the new path wins within them")
    ring = p.add_argument_group("physical paths on a declared ring (docs/collective.md)")
    ring.add_argument("--topology", choices=("ring",), default=None,
                      help="enumerate each round's messages on a bidirectional ring of --ranks nodes: the directed "
                           "links each crosses, bytes per link and the per-round bound (reduce_scatter only)")
    ring.add_argument("--rounds", type=common.positive_int, default=None, metavar="R",
                      help="halving rounds to enumerate (default log2 of --ranks)")
    ring.add_argument("--patterns", default="recursive,swing", metavar="P[,P]",
                      help="recursive (peer r XOR 2^s), swing (De Sensi et al. 2024, eq. 2) or both (the default)")
    ring.add_argument("--link-bw-ring", type=common.bandwidth, default=None, metavar="BW",
                      help="bandwidth of each directed ring link (required with --topology ring)")
    common.add_output(p)


def run(args):
    if args.bytes is not None:
        args.min_bytes = args.max_bytes = args.bytes
    if args.topology or args.rounds or args.link_bw_ring:
        return _ring(args)
    from .. import comm
    from ..analyses.collective import record, sizes
    from ..analyses.records import links_record
    from ..render import collective as render

    from ..load.hardware import load_device

    device = load_device(args.device)
    links = comm.links(device, alpha_up=args.alpha_up, alpha_out=args.alpha_out, link_bw_up=args.link_bw_up,
                       link_bw_out=args.link_bw_out, comm_efficiency=args.comm_efficiency)
    reconfigure = None
    if (args.reconfigure_bw is None) != (args.setup_cost is None):
        from ..errors import UserError
        raise UserError("--reconfigure-bw and --setup-cost go together")
    if args.reconfigure_bw is not None:
        tier = "up" if (args.ranks_per_node or min(args.ranks, _domain(device))) == args.ranks else "out"
        new = comm.links(device, alpha_up=args.alpha_up, alpha_out=args.alpha_out,
                         link_bw_up=args.reconfigure_bw if tier == "up" else args.link_bw_up,
                         link_bw_out=args.reconfigure_bw if tier == "out" else args.link_bw_out,
                         comm_efficiency=args.comm_efficiency)
        reconfigure = (new, args.algorithm or "ring", args.setup_cost, args.calls)
    elif args.calls is not None or args.algorithm is not None:
        from ..errors import UserError
        flag = "--calls is the reconfigured path's lifetime" if args.calls is not None else \
            "--algorithm chooses the reconfiguration rows' algorithm"
        raise UserError(f"{flag}; give --reconfigure-bw and --setup-cost")
    rec = record(device, args.operation, args.ranks, args.ranks_per_node,
                 sizes(args.min_bytes, args.max_bytes,
                       args.step_factor), links=links, link_record=links_record(links),
                 experts=args.experts, top_k=args.top_k, reconfigure=reconfigure)
    return common.emit(args, rec, render.markdown, render.csv)


def _domain(device):
    from ..analyses.collective import domain_of
    return domain_of(device)


def _ring(args):
    from ..analyses.collective import sizes
    from ..analyses.ring_paths import PATTERNS, record
    from ..errors import UserError, unknown
    from ..render import collective as render

    if not args.topology:
        raise UserError("--rounds and --link-bw-ring describe a declared topology; give --topology ring")
    if args.link_bw_ring is None:
        raise UserError("--topology ring needs --link-bw-ring BW (each directed ring link's bandwidth)")
    patterns = tuple(p.strip() for p in args.patterns.split(","))
    for p in patterns:
        if p not in PATTERNS:
            raise unknown("pattern", p, PATTERNS)
    rounds = args.rounds or args.ranks.bit_length() - 1
    rec = record(args.operation, args.ranks, sizes(args.min_bytes, args.max_bytes, args.step_factor), rounds,
                 patterns, args.link_bw_ring)
    return common.emit(args, rec, render.ring_markdown, render.ring_csv)

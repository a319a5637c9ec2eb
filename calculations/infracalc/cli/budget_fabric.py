"""The switching-fabric `budget` kinds of chapter 7 (incast, ...): arguments and run.

Each `_<kind>_arguments(q)` adds the kind's options, each `_<kind>(args)` returns its result record;
cli/budget.py lists the kinds and dispatches to them (a '-' in a kind's name is '_' here).
"""

from . import common


def _rate(text):
    from .budget_net import byte_rate

    return byte_rate(text)


def _ns(text):
    from .budget import exact_ns

    return exact_ns(text)


def _incast_arguments(q):
    q.add_argument("--groups", type=common.positive_int_list, required=True, metavar="N[,N...]",
                   help="receiver-group sizes N: N - 1 senders into one receiver each (8,16,64)")
    q.add_argument("--sender-rate", type=_rate, required=True, metavar="R", help="each sender's rate (50GB/s)")
    q.add_argument("--egress", type=_rate, required=True, metavar="R", help="the receiver port's rate (50GB/s)")
    q.add_argument("--buffer", type=common.byte_size, required=True, metavar="BYTES",
                   help="free buffer of the egress port (1MiB)")
    q.add_argument("--cable-m", type=common.positive_int, required=True, metavar="M",
                   help="cable length of the one hop a pause travels (30)")
    q.add_argument("--ns-per-m", type=common.positive_int, default=5, metavar="NS",
                   help="propagation per metre (default 5)")
    q.add_argument("--mtu", type=common.positive_int, required=True, metavar="BYTES",
                   help="one MTU serialized before the pause acts (1500)")
    q.add_argument("--rtt", type=_ns, required=True, metavar="T", help="the end-to-end feedback's RTT (20us)")


def _incast(args):
    from ..analyses.incast import incast
    from ..errors import UserError

    if min(args.groups) < 2:
        raise UserError("--groups: N must be at least 2 (one sender besides the receiver)")
    if not args.sender_rate or not args.egress:
        raise UserError("--sender-rate and --egress must be positive")
    if not args.rtt:
        raise UserError("--rtt must be positive")
    return incast(groups=args.groups, sender_rate=args.sender_rate, egress_rate=args.egress,
                  buffer_bytes=args.buffer, cable_m=args.cable_m, ns_per_m=args.ns_per_m, mtu_bytes=args.mtu,
                  rtt_ns=args.rtt)

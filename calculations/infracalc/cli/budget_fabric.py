"""The switching-fabric `budget` kinds of chapter 7 (incast, ...): arguments and run.

Each `_<kind>_arguments(q)` adds the kind's options, each `_<kind>(args)` returns its result record;
cli/budget.py lists the kinds and dispatches to them (a '-' in a kind's name is '_' here).
"""

from fractions import Fraction

from . import common
from .budget_values import exact_ns as _ns, exact_ns_list, seconds_at_most


def _rate(text):
    from .budget_net import byte_rate

    return byte_rate(text)


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


def _loss(text):
    from .budget_values import _exact

    value = _exact(text, "a probability strictly between 0 and 1 such as 0.14 or 7/50", 0, 1)
    if not 0 < value < 1:
        import argparse

        raise argparse.ArgumentTypeError(f"must be a probability strictly between 0 and 1 such as 0.14 or 7/50, "
                                         f"got '{text}'")
    return value


_seconds = seconds_at_most(10**6)   # a declared round trip, model time or round startup: exact, at most 10^6 s


def _wan_loss_arguments(q):
    from .budget_media import _line_rate

    q.add_argument("--rtt", type=_seconds, required=True, metavar="T", help="round trip of the path (0.2s, 200ms)")
    q.add_argument("--knee", type=_line_rate, required=True, metavar="R",
                   help="the path's capacity knee in bits/s (333Mb/s)")
    q.add_argument("--loss", type=_loss, required=True, metavar="P",
                   help="independent loss probability per packet (0.14)")
    q.add_argument("--mss", type=common.positive_int, default=1448, metavar="BYTES", help="segment payload (default 1448)")
    q.add_argument("--request-bytes", type=common.positive_int, required=True, metavar="BYTES",
                   help="the request's payload (354640)")
    q.add_argument("--model-time", type=_seconds, default=0, metavar="T", help="declared model time (38ms; default 0s)")
    q.add_argument("--fec-symbol", type=common.positive_int, default=1448, metavar="BYTES",
                   help="FEC symbol size (default 1448)")
    q.add_argument("--fec-target", type=_loss, default=Fraction(999, 1000), metavar="P",
                   help="block recovery probability the repair must reach (default 0.999)")
    q.add_argument("--fec-extra", type=_non_negative_list, default=(0, 1), metavar="E[,E...]",
                   help="extra losses tolerated beyond the least repair, one row each (default 0,1)")
    q.add_argument("--rounds-tail", type=_loss, default=Fraction(1, 10**6), metavar="P",
                   help="the expected-rounds sum stops at the first round delivering everything with probability "
                        ">= 1 - P (default 1/1000000)")


def _non_negative_list(text):
    import argparse

    items = text.split(",")
    if len(text) > 200 or not all(i.strip().isdigit() and len(i.strip()) <= 6 for i in items):
        raise argparse.ArgumentTypeError(f"must be non-negative integers separated by commas (0,1), got '{text}'")
    return tuple(int(i) for i in items)


WAN_LOSS_MAX_UNITS = 4096   # packets of the request, and FEC data symbols (the book's case: 245)


def _wan_loss(args):
    from ..analyses.wan_loss import wan_loss
    from ..errors import UserError

    if not args.rtt:
        raise UserError("--rtt must be positive")
    for option, size in (("--mss", args.mss), ("--fec-symbol", args.fec_symbol)):
        if -(-args.request_bytes // size) > WAN_LOSS_MAX_UNITS:   # the exact sums grow with the count
            raise UserError(f"--request-bytes {args.request_bytes:,} is over {WAN_LOSS_MAX_UNITS:,} units of {option} "
                            f"{size:,} (the exact binomial sums grow with the count); raise {option} or shrink the request")
    try:
        return wan_loss(rtt_s=args.rtt, knee_bits_per_s=args.knee, loss=args.loss, mss_bytes=args.mss,
                        request_bytes=args.request_bytes, model_s=args.model_time, symbol_bytes=args.fec_symbol,
                        target=args.fec_target, extras=args.fec_extra, tail=args.rounds_tail)
    except ValueError as e:   # repair_symbols: the target out of reach
        raise UserError(f"--fec-target: {e}")


def _hash_collision_arguments(q):
    q.add_argument("--flows", type=common.positive_int, required=True, metavar="N",
                   help="equal flows hashed onto the uplinks (one leaf's cross-spine flows; 8)")
    q.add_argument("--uplinks", type=common.positive_int, required=True, metavar="M", help="the leaf's uplinks (32)")
    q.add_argument("--path-delays", type=exact_ns_list, default=None, metavar="T,T,...",
                   help="spray the message over these paths instead, one delay each (1us,2us,...; optional)")
    q.add_argument("--path-rate", type=_rate, default=None, metavar="R", help="each spray path's bytes/s (50GB/s)")
    q.add_argument("--packet-bytes", type=common.positive_int, default=None, metavar="B", help="spray packet (4096)")
    q.add_argument("--model", default=None, help="a bundled model: the sprayed message is BF16 [tokens, hidden]")
    q.add_argument("--tokens", type=common.positive_int, default=1, help="tokens of that message (default 1)")


def _hash_collision(args):
    from ..analyses.hash_collision import MAX_FLOWS, MAX_UPLINKS, hash_collision, spray
    from ..errors import UserError

    if args.flows > MAX_FLOWS:
        raise UserError(f"--flows {args.flows}: at most {MAX_FLOWS} (the exact distribution's cost grows as n^2 L)")
    if args.uplinks > MAX_UPLINKS:
        raise UserError(f"--uplinks {args.uplinks}: at most {MAX_UPLINKS}")
    out = hash_collision(flows=args.flows, uplinks=args.uplinks)
    spray_options = (args.path_rate, args.packet_bytes, args.model)
    if args.path_delays is None:
        if any(v is not None for v in spray_options):
            raise UserError("--path-rate, --packet-bytes and --model describe a spray: give --path-delays too")
        return out
    if any(v is None for v in spray_options) or not args.path_rate:
        raise UserError("a spray (--path-delays) needs --path-rate (positive), --packet-bytes and --model")
    from ..load.models import load_model
    from ..splits import ceil_div

    payload = 2 * args.tokens * load_model(args.model).hidden_size
    if ceil_div(payload, args.packet_bytes) > 100_000:
        raise UserError("the spray has more than 100,000 packets (raise --packet-bytes)")
    out["spray"] = spray(payload_bytes=payload, packet_bytes=args.packet_bytes, path_delays_ns=args.path_delays,
                         path_rate=args.path_rate)
    return out


def _ratio(text):
    from .budget_values import _exact

    value = _exact(text, "a positive exact ratio such as 1, 3 or 3/2", 0, 10**6)
    if not value:
        import argparse

        raise argparse.ArgumentTypeError(f"must be a positive exact ratio such as 1, 3 or 3/2, got '{text}'")
    return value


def _supernode(text):
    """SIZE[:REMOTE_BYTES]: 8:127GB."""
    import argparse

    from .budget_values import byte_count

    size, _, remote = text.partition(":")
    try:
        return common.positive_int(size), byte_count(remote) if remote else None
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be SIZE[:REMOTE_BYTES] such as 8:127GB, got '{text}'")


def _clos_arguments(q):
    q.add_argument("--radix", type=common.positive_int, required=True, metavar="K", help="ports per switch (64)")
    q.add_argument("--oversubscription", type=_ratio, default=1, metavar="R",
                   help="leaf downlinks / uplinks (default 1: non-blocking; 3 for 3:1)")
    q.add_argument("--tiers", type=common.positive_int_list, default=(2, 3), metavar="T[,T]",
                   help="tier counts to report, 2 and/or 3 (default 2,3)")
    q.add_argument("--link-rate", type=_rate, required=True, metavar="R", help="one link's bytes/s (50GB/s)")
    q.add_argument("--partition", type=common.positive_int, required=True, metavar="E",
                   help="endpoints of a partition whose cut is reported (1024)")
    q.add_argument("--gpus", type=common.positive_int, default=None, metavar="N",
                   help="cards of the cluster cut into supernodes (with --supernode; 1024)")
    q.add_argument("--nic", type=_rate, default=None, metavar="R", help="each card's NIC (with --supernode; 50GB/s)")
    q.add_argument("--supernode", dest="supernodes", type=common.as_given(_supernode), action="append", default=[],
                   metavar="SIZE[:REMOTE_BYTES]",
                   help="a supernode of SIZE cards, with its declared remote bytes per direction (8:127GB; repeat)")


def _clos(args):
    from ..analyses.clos_cut import clos_cut, leaf_ports
    from ..errors import UserError

    if args.radix % 2:
        raise UserError(f"--radix {args.radix}: a folded Clos needs an even radix (k/2 down and up at each pod)")
    if leaf_ports(args.radix, args.oversubscription) is None:
        raise UserError(f"--oversubscription {args.oversubscription} does not split {args.radix} ports into whole "
                        f"down and up ports")
    if any(t not in (2, 3) for t in args.tiers):
        raise UserError("--tiers takes 2 and/or 3")
    supernodes = [_supernode(s) for s in args.supernodes]
    if supernodes and (args.gpus is None or not args.nic):
        raise UserError("--supernode needs --gpus and a positive --nic")
    for size, _ in supernodes:
        if args.gpus % size:
            raise UserError(f"--supernode {size} does not divide --gpus {args.gpus}")
    return clos_cut(radix=args.radix, oversubscription=args.oversubscription, tiers=args.tiers, link=args.link_rate,
                    partition_endpoints=args.partition, gpus=args.gpus, nic=args.nic, supernodes=supernodes)


def _rail_pairing_arguments(q):
    from .budget_training import _gradient_tensor_arguments

    _gradient_tensor_arguments(q)
    q.add_argument("--rails", type=common.positive_int, default=8, metavar="R",
                   help="ranks (and NIC rails) per server (default 8)")
    q.add_argument("--nic-bw", type=_rate, required=True, metavar="R", help="one NIC's bytes/s (50GB/s)")
    q.add_argument("--startup", type=_seconds, default=0, metavar="T", help="per round (833ns; default 0)")
    q.add_argument("--pairing", choices=("aligned", "shifted"), required=True,
                   help="peer of rank i: rank i (same rail) or rank i + 1 mod R (across rails)")


def _rail_pairing(args):
    from ..analyses.rail_pairing import rail_pairing
    from ..errors import UserError
    from .budget_training import _gradient_tensor

    if not args.nic_bw:
        raise UserError("--nic-bw must be positive")
    model, tensor = _gradient_tensor(args)
    width = 4 if args.grad_dtype == "fp32" else 2
    gradient = tensor.params * width
    if gradient % (2 * args.rails):
        raise UserError(f"a {gradient:,} B gradient does not split into {args.rails} whole shards and halves")
    return dict({"model": model, "tensor": f"layers.0.{tensor.name}", "shape": list(tensor.shape),
                 "bytes_per_element": width},
                **rail_pairing(gradient_bytes=gradient, rails=args.rails, nic_rate=args.nic_bw,
                               startup_s=args.startup, pairing=args.pairing))


def _switch_reduce_arguments(q):
    from .budget_training import _gradient_ring_arguments

    _gradient_ring_arguments(q, organization=False)
    q.add_argument("--servers-sweep", type=common.positive_int_list, default=(2, 4, 8, 16, 32), metavar="S,...",
                   help="server counts of the ring-versus-switch sweep (default 2,4,8,16,32)")


def _switch_reduce(args):
    from ..analyses.switch_reduce import switch_reduce
    from ..errors import UserError
    from .budget_training import _gradient_ring

    if min(args.servers_sweep) < 2:
        raise UserError("--servers-sweep: at least 2 servers")
    hierarchical = _gradient_ring(args, organization="hierarchical")
    if hierarchical["bytes_per_rank"] % args.ranks_per_server:
        raise UserError(f"the gradient does not split into {args.ranks_per_server} whole local shards")
    return dict({"model": hierarchical["model"], "tensor": hierarchical["tensor"]},
                **switch_reduce(hierarchical=hierarchical, ranks_per_server=args.ranks_per_server,
                                nic_rate=round(args.nic_bw), startup_s=args.startup,
                                server_counts=args.servers_sweep))

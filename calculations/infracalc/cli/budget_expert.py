"""The expert-execution `budget` kind: arguments and run.

`_expert_execution_arguments(q)` adds the kind's options, `_expert_execution(args)` returns its result
record; cli/budget.py lists the kinds and dispatches to them.
"""

import argparse

from . import common


def _route(text):
    """POSITION:IDS, IDS comma-separated ids or a-b ranges (0:0-3,32-35)."""
    pos, sep, ids = text.partition(":")
    try:
        out = []
        for part in ids.split(","):
            lo, dash, hi = part.partition("-")
            out += list(range(int(lo), int(hi) + 1)) if dash else [int(lo)]
        if not sep or int(pos) < 0 or any(i < 0 for i in out):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected POSITION:IDS such as 0:0-3,32-35, got '{text}'") from None
    return int(pos), out


def _expert_execution_arguments(q):
    common.add_model(q)
    q.add_argument("--tp", type=common.positive_int, required=True, help="tensor ranks per expert owner")
    q.add_argument("--ep", type=common.positive_int, required=True, help="expert owners per stage")
    q.add_argument("--pp", type=common.positive_int, default=1, help="pipeline stages (default 1)")
    q.add_argument("--requests", type=common.positive_int, default=1, help="requests in the cohort (default 1)")
    q.add_argument("--tokens", type=common.tokens, required=True, metavar="T", help="current tokens per request")
    q.add_argument("--routing", choices=("balanced", "hot"), default=None,
                   help="synthetic route table (default balanced: row i takes (i k + j) mod E; hot: every row 0..k-1)")
    q.add_argument("--route", type=_route, action="append", default=None, metavar="POSITION:IDS",
                   help="declare one position's experts in every layer and request (repeat for every position)")
    q.add_argument("--element-bytes", type=common.positive_int, default=2, help="wire bytes per element (default 2)")
    q.add_argument("--row-metadata-bytes", type=common.non_negative_int, default=16,
                   help="declared metadata per row (default 16)")
    q.add_argument("--link-bw", type=common.bandwidth, default=100e9, metavar="BW",
                   help="per-rank link rate per direction (default 100GB/s)")
    q.add_argument("--startup", type=common.latency, default=1e-6, metavar="T", help="per-message startup (1us)")
    q.add_argument("--rank-flops", type=common.vector_rate, default=100 * 10**12, metavar="FLOP/S",
                   help="declared matrix rate per rank (default 100T)")


def _expert_execution(args):
    from fractions import Fraction

    from ..analyses.expert_execution import expert_execution
    from ..errors import UserError
    from ..load.models import load_model

    declared = None
    if args.route and args.routing:
        raise UserError("give --routing or --route, not both")
    if args.route:
        declared = dict(args.route)
        if len(declared) != len(args.route):
            raise UserError("--route declares a position twice")
    return expert_execution(load_model(args.model), tp=args.tp, ep=args.ep, pp=args.pp, requests=args.requests,
                            tokens=args.tokens, policy=args.routing or "balanced", declared=declared,
                            element_bytes=args.element_bytes, metadata_bytes=args.row_metadata_bytes,
                            link=round(args.link_bw), startup_s=Fraction(repr(args.startup)),
                            rank_flops=args.rank_flops)

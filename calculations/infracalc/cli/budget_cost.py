"""Serving-cost `budget` kinds from declared prices and times (supernode, ...): arguments and run.

Each `_<kind>_arguments(q)` adds the kind's options, each `_<kind>(args)` returns its result record;
cli/budget.py lists the kinds and dispatches to them (a '-' in a kind's name is '_' here).
"""

import argparse

from . import common


def _candidate(text):
    """TP:PREFILL:DECODE: 8:20ms:6ms (declared stage times, whole ns)."""
    from .budget import exact_ns

    parts = text.split(":")
    try:
        if len(parts) != 3:
            raise argparse.ArgumentTypeError(text)
        return common.positive_int(parts[0]), exact_ns(parts[1]), exact_ns(parts[2])
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be TP:PREFILL:DECODE with times in units (8:20ms:6ms), got '{text}'")


def _time(text):
    from .budget import exact_ns

    return exact_ns(text)


def _credit(text):
    from .budget import _exact

    return _exact(text, "a non-negative exact number such as 1, 5 or 1/1000")


def _bytes_or_zero(text):
    from .budget import byte_count

    return byte_count(text)


def _share(text):
    from .budget import _share

    return _share(text)


def _supernode_arguments(q):
    common.add_model(q)
    q.add_argument("--requests", type=common.positive_int, required=True, metavar="N",
                   help="requests of the cohort, all arriving at 0")
    q.add_argument("--prompt", type=common.positive_int, required=True, metavar="P", help="prompt tokens per request")
    q.add_argument("--outputs", type=common.positive_int, required=True, metavar="G",
                   help="output tokens per request (a prefill, then G - 1 decode steps)")
    q.add_argument("--deadline", type=_time, required=True, metavar="T",
                   help="a request is valid when it completes by T (e.g. 250ms)")
    q.add_argument("--candidate", type=common.as_given(_candidate), action="append", required=True,
                   metavar="TP:PREFILL:DECODE",
                   help="an organisation of the cards as TP-way replicas with its declared prefill and per-decode-step "
                        "times; repeatable (8:20ms:6ms)")
    q.add_argument("--cards", type=common.positive_int, default=8, help="cards reserved for the cohort (default 8)")
    q.add_argument("--card-memory", type=common.byte_size, required=True, metavar="BYTES",
                   help="memory per card (24GB)")
    q.add_argument("--reserve", type=_bytes_or_zero, required=True, metavar="BYTES", help="workspace per card (2GiB)")
    q.add_argument("--fault-at", type=_time, default=None, metavar="T",
                   help="one fault of replica 0 (the replica holding card 0) at T (e.g. 50ms; default none)")
    q.add_argument("--recovery", type=_time, default=0, metavar="T",
                   help="replica 0's downtime after the fault (default 0s)")
    q.add_argument("--recovery-fee", type=_credit, default=0, metavar="C",
                   help="a declared fee charged once when the fault was used (default 0)")
    q.add_argument("--price-per-card-second", type=_credit, required=True, metavar="C",
                   help="declared price of one card for one second (the book's 1/1000 credit per card-ms is 1)")
    q.add_argument("--min-valid", type=_share, default=1, metavar="M",
                   help="minimum valid fraction of the requests (default 1; the book 3/4)")
    q.set_defaults(weight_dtype=None, act_dtype="bf16", kv_dtype=None)


def _stage_flops(arch, w, prompt, outputs):
    """[(stage, matrix FLOPs)]: the prefill (batch 1, last-position head), then decode steps 1..G-1."""
    from .. import ledger

    stages = [("prefill", ledger.field_sums(arch, w.replace(batch=1, tokens=prompt, history=0, logits="last"),
                                            ("matrix_flops",))[0])]
    for k in range(1, outputs):
        stages.append((f"decode {k}", ledger.field_sums(
            arch, w.replace(batch=1, tokens=1, history=prompt + k - 1, logits="last"), ("matrix_flops",))[0]))
    return stages


def _card_bytes(arch, w, tp, context):
    """(weight bytes of one TP rank, KV bytes of one request at `context` on it)."""
    from .. import layout as placement
    from ..analyses import kv

    lay = placement.Layout(tp=tp)
    placement.validate(arch, lay)
    (stage,) = kv.plan(arch, w, lay)
    return stage.weight_bytes, kv.demand(stage, w, context, tp, None, 0).own


def _supernode(args):
    from ..analyses.supernode import supernode
    from ..errors import UserError
    from ..load.models import load_model

    if args.requests > 10**4 or args.outputs > 4096:
        raise UserError("--requests at most 10,000 and --outputs at most 4,096")
    arch = load_model(args.model)
    w = common.workload(args, arch, 1, 1, 0)
    candidates = []
    for text in args.candidate:
        tp, prefill, decode = _candidate(text)
        if args.cards % tp:
            raise UserError(f"--candidate {text}: TP {tp} does not divide the {args.cards} cards")
        weights, kv_bytes = _card_bytes(arch, w, tp, args.prompt + args.outputs - 1)
        candidates.append({"tp": tp, "stage_ns": [prefill] + [decode] * (args.outputs - 1), "weight_bytes": weights,
                           "kv_bytes": kv_bytes, "workspace_bytes": args.reserve, "memory_bytes": args.card_memory})
    out = supernode(cards=args.cards, requests=args.requests, deadline_ns=args.deadline,
                    stage_flops=_stage_flops(arch, w, args.prompt, args.outputs), candidates=candidates,
                    fault_ns=args.fault_at, recovery_ns=args.recovery, recovery_fee=args.recovery_fee,
                    price_per_card_second=args.price_per_card_second, min_valid_fraction=args.min_valid)
    return dict({"model": arch.id, "prompt_tokens": args.prompt, "output_tokens": args.outputs,
                 "kv_context_tokens": args.prompt + args.outputs - 1}, **out)

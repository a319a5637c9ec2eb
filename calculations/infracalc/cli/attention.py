"""`attention`: one attention core (QK^T, softmax, PV) on one or more devices."""

import argparse

from . import common


def add_arguments(p):
    from ..dtypes import format_help

    p.epilog = format_help()
    p.add_argument("--queries", type=common.tokens, required=True,
                   help="new query tokens per request (T)")
    p.add_argument("--keys", type=common.tokens, required=True,
                   help="keys each request attends over, the queries' own included (context)")
    p.add_argument("--heads", type=common.positive_int, required=True, help="query heads")
    p.add_argument("--head-dim", type=common.positive_int, required=True, help="dimension per head")
    p.add_argument("--kv-heads", type=common.positive_int, default=None,
                   help="KV heads (GQA/MQA; default: --heads, i.e. MHA)")
    p.add_argument("--batch", type=common.positive_int, default=1, help="requests (default 1)")
    p.add_argument("--causal", action=argparse.BooleanOptionalAction, default=True,
                   help="causal mask: the queries are the last T of the keys and query p sees "
                        "keys 0..p (default); --no-causal: every query sees every key")
    p.add_argument("--act-dtype", default="bf16", metavar="FMT",
                   help="format of Q and the output, and of the compute (default bf16)")
    p.add_argument("--kv-dtype", default=None, metavar="FMT",
                   help="format of the cached K and V (default: the activation format)")
    common.add_devices(p)
    common.add_output(p)


def run(args):
    from ..analyses.kernel import ATTENTION_CONVENTIONS, attention_kernel, kernel_result
    from ..dtypes import dtype
    from ..render import kernel as render

    act = dtype(args.act_dtype)
    kv = dtype(args.kv_dtype) if args.kv_dtype else act
    kv_heads = args.kv_heads or args.heads
    kern = attention_kernel(args.queries, args.keys, args.heads, args.head_dim, kv_heads, args.causal,
                            args.batch, act, kv)
    inputs = {"batch": args.batch, "queries": args.queries, "keys": args.keys, "heads": args.heads,
              "kv_heads": kv_heads, "head_dim": args.head_dim, "causal": args.causal,
              "act_dtype": act.name, "kv_dtype": kv.name}
    rec = kernel_result("attention", inputs, kern, common.devices(args), args.compute_efficiency,
                        args.memory_efficiency, ATTENTION_CONVENTIONS, compute_option="--act-dtype")
    return common.emit(args, rec, render.markdown, render.csv)

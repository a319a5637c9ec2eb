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
    g = p.add_argument_group("tile view (docs/attention.md)")
    g.add_argument("--kv-block", type=common.positive_int, action="append", metavar="B",
                   help="a KV-block candidate of B key rows (repeatable); the query block is the largest "
                        "that fits --tile-capacity")
    g.add_argument("--tile-capacity", type=common.byte_size, metavar="BYTES",
                   help="on-chip working capacity a candidate must fit (required with --kv-block)")
    g.add_argument("--kv-slots", type=int, choices=(1, 2), default=1,
                   help="K/V tiles held at once: 1 (K and V take turns in one slot, default) or 2")
    common.add_devices(p)
    common.add_output(p)


def tile_view(args, act, kv):
    from ..analyses.tiles import attention_tiles, element_bytes

    if not common.tile_view_asked(args.kv_block, args.tile_capacity, "--kv-block B"):
        return None
    return attention_tiles(args.queries, args.keys, args.head_dim, args.kv_block, args.tile_capacity,
                           causal=args.causal, q_bytes=element_bytes(act, "the activation"),
                           kv_bytes=element_bytes(kv, "the KV"), slots=args.kv_slots)


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
    tiles = tile_view(args, act, kv)
    rec = kernel_result("attention", inputs, kern, common.devices(args), args.compute_efficiency,
                        args.memory_efficiency, ATTENTION_CONVENTIONS, compute_option="--act-dtype",
                        tiles=tiles)
    return common.emit(args, rec, render.markdown, render.csv)

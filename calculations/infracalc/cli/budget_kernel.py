"""The kernel-view `budget` kinds of chapter 5 (bank, rmsnorm, quant-gemm): arguments and run.

Each `_<kind>_arguments(q)` adds the kind's options, each `_<kind>(args)` returns its result
record; cli/budget.py lists the kinds and dispatches to them (a '-' in a kind's name is '_' here).
"""

from . import common


def _bank_arguments(q):
    from ..analyses.bank_mapping import ACCESSES

    q.add_argument("--access", choices=ACCESSES, required=True,
                   help="row 0, column 0, or one word for every lane")
    q.add_argument("--stride-words", type=common.positive_int, default=32, metavar="S",
                   help="row stride of the stored tile in words, padding included (default 32)")
    q.add_argument("--tile-rows", type=common.positive_int, default=32, metavar="R", help="rows of the tile (default 32)")
    q.add_argument("--tile-columns", type=common.positive_int, default=32, metavar="C",
                   help="words per row of the tile (default 32)")
    q.add_argument("--lanes", type=common.positive_int, default=32, help="lanes issuing one word each (default 32)")
    q.add_argument("--banks", type=common.positive_int, default=32, help="banks, word a in bank a mod B (default 32)")
    q.add_argument("--ports", type=common.positive_int, default=1, help="requests a bank serves per round (default 1)")
    q.add_argument("--broadcast", action="store_true", help="merge lanes reading the same word")
    q.add_argument("--word-bytes", type=common.positive_int, default=4, help="bytes per word (default 4)")


def _bank(args):
    from ..analyses.bank_mapping import bank_budget
    from ..errors import UserError

    if args.stride_words < args.tile_columns:
        raise UserError(f"--stride-words {args.stride_words} is below the {args.tile_columns} words of a row")
    if args.access == "row" and args.lanes > args.tile_columns or args.access == "column" and args.lanes > args.tile_rows:
        raise UserError(f"--lanes {args.lanes} exceeds the tile's {args.access} ({args.tile_rows} x {args.tile_columns})")
    return bank_budget(access=args.access, stride_words=args.stride_words, rows=args.tile_rows,
                       columns=args.tile_columns, lanes=args.lanes, banks=args.banks, ports=args.ports,
                       broadcast=args.broadcast, word_bytes=args.word_bytes)


def _rmsnorm_arguments(q):
    common.add_model(q)
    q.add_argument("--rows", type=common.positive_int, required=True, metavar="M", help="rows (tokens) normalized")
    q.add_argument("--splits", type=common.positive_int, required=True, metavar="S", help="parts per row of the split path")
    q.add_argument("--width-multiplier", type=common.positive_int, default=1, metavar="W",
                   help="widen the row to W x hidden_size (a teaching variant; default 1)")
    q.add_argument("--dtype", default="bf16", metavar="FMT", help="format of input, gamma and output (default bf16)")


def _rmsnorm(args):
    from ..analyses.split_reduction import split_rmsnorm
    from ..analyses.tiles import element_bytes
    from ..dtypes import dtype
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    width = arch.hidden_size * args.width_multiplier
    if args.splits > width:
        raise UserError(f"--splits {args.splits} exceeds the row width {width} (no empty part)")
    out = split_rmsnorm(rows=args.rows, width=width, splits=args.splits,
                        elem_bytes=element_bytes(dtype(args.dtype), "the row"))
    return dict({"model": arch.id, "hidden_size": arch.hidden_size}, **out)


def _quant_gemm_arguments(q):
    from .gemm import tile_shape

    common.add_model(q)
    q.add_argument("--tokens", type=common.tokens, required=True, metavar="M",
                   help="tokens the expert receives (rows M of its gate or up projection)")
    q.add_argument("--tile", type=tile_shape, required=True, metavar="MxKxN", help="output tile step (e.g. 128x128x128)")


def _quant_gemm(args):
    from ..analyses.quant_gemm import quant_gemm
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    moe = next((b for layer in arch.layers for b in layer.blocks if hasattr(b, "expert_inter")), None)
    if moe is None:
        raise UserError(f"model '{arch.id}' has no MoE layer (the projection is one routed expert's gate or up)")
    out = quant_gemm(m=args.tokens, k=moe.hidden, n=moe.expert_inter, tile=args.tile)
    return dict({"model": arch.id}, **out)

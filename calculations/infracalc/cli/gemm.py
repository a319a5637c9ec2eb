"""`gemm`: one GEMM [M,K]x[K,N] on one or more devices: FLOPs, bytes, intensity, roofline."""

from . import common


def add_arguments(p):
    from ..dtypes import format_help

    for name, what in (("--m", "rows of the input (tokens): [M,K]"),
                       ("--k", "inner dimension (input features)"),
                       ("--n", "columns of the output (output features): [K,N] weight")):
        p.add_argument(name, type=common.positive_int, required=True, help=what)
    p.add_argument("--input-dtype", default="bf16", metavar="FMT",
                   help="format of the [M,K] input (default bf16)")
    p.add_argument("--weight-dtype", default="bf16", metavar="FMT",
                   help="storage format of the [K,N] weight, scales included (default bf16)")
    p.add_argument("--output-dtype", default=None, metavar="FMT",
                   help="format of the [M,N] output (default: the input format)")
    p.add_argument("--compute-dtype", default=None, metavar="FMT",
                   help="format whose dense matrix peak the GEMM runs at (default: the input format; "
                        "a weight-only format such as int4-g128 is dequantized to it)")
    p.epilog = format_help()
    add_tile_options(p)
    common.add_devices(p)
    common.add_output(p)


def tile_shape(text):
    """--tile MxKxN: three positive integers joined by 'x' (e.g. 128x32x128)."""
    import argparse

    values = common.positive_ints(text.replace("x", ",")) if text.count("x") == 2 else None
    if values is None or len(values) != 3:
        from ..errors import quote
        raise argparse.ArgumentTypeError(f"must be MxKxN, three positive integers (e.g. 128x32x128), "
                                         f"got {quote(text)}")
    return values


def add_tile_options(p):
    from ..analyses.tiles import SCHEDULES

    g = p.add_argument_group("tile view (docs/gemm.md)")
    g.add_argument("--tile", type=tile_shape, action="append", metavar="MxKxN",
                   help="a tile candidate (repeatable): rows x inner x columns of one output tile's step")
    g.add_argument("--tile-capacity", type=common.byte_size, metavar="BYTES",
                   help="on-chip working capacity a candidate must fit (required with --tile)")
    g.add_argument("--tile-schedule", choices=SCHEDULES, default="output-stationary",
                   help="output-stationary (accumulator kept over the K loop, default) or k-outer "
                        "(FP32 partial sums stored and reloaded between K tiles)")
    g.add_argument("--input-buffers", type=int, choices=(1, 2), default=1,
                   help="input tile buffers reserved (2 = double buffering; default 1)")


def tile_view(args, inp, weight, out):
    from ..analyses.tiles import element_bytes, gemm_tiles

    if not common.tile_view_asked(args.tile, args.tile_capacity, "--tile MxKxN"):
        return None
    return gemm_tiles(args.m, args.k, args.n, args.tile, args.tile_capacity,
                      a_bytes=element_bytes(inp, "the input"), b_bytes=element_bytes(weight, "the weight"),
                      c_bytes=element_bytes(out, "the output"), schedule=args.tile_schedule,
                      buffers=args.input_buffers)


def run(args):
    from ..analyses.kernel import gemm_kernel, kernel_result
    from ..dtypes import dtype
    from ..render import kernel as render

    inp, weight = dtype(args.input_dtype), dtype(args.weight_dtype)
    out = dtype(args.output_dtype) if args.output_dtype else inp
    compute = dtype(args.compute_dtype) if args.compute_dtype else inp
    kern = gemm_kernel(args.m, args.k, args.n, inp, weight, out, compute)
    inputs = {"m": args.m, "k": args.k, "n": args.n, "input_dtype": inp.name, "weight_dtype": weight.name,
              "output_dtype": out.name, "compute_dtype": compute.name}
    tiles = tile_view(args, inp, weight, out)
    rec = kernel_result("gemm", inputs, kern, common.devices(args), args.compute_efficiency,
                        args.memory_efficiency, tiles=tiles)
    return common.emit(args, rec, render.markdown, render.csv)

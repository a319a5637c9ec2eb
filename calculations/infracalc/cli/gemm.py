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
    common.add_devices(p)
    common.add_output(p)


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
    rec = kernel_result("gemm", inputs, kern, common.devices(args), args.compute_efficiency,
                        args.memory_efficiency)
    return common.emit(args, rec, render.markdown, render.csv)

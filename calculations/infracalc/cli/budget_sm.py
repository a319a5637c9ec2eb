"""The SM occupancy `budget` kind (sm-occupancy): arguments and run.

`_sm_occupancy_arguments(q)` adds the kind's options, `_sm_occupancy(args)` returns its result record;
cli/budget.py lists the kinds and dispatches to them.
"""

import argparse

from . import common
from .budget_values import exact_ns as _ns


def _shape(text):
    """AxBxC: three positive integers (128x128x64)."""
    values = common.positive_ints(text.replace("x", ",")) if text.count("x") == 2 else None
    if values is None or len(values) != 3:
        raise argparse.ArgumentTypeError(f"must be three positive integers joined by x (128x128x64), got '{text}'")
    return values


def _sm_occupancy_arguments(q):
    q.add_argument("--tile", type=_shape, required=True, metavar="MxNxK", help="the GEMM tile (128x128x64)")
    q.add_argument("--threads", type=common.positive_int, required=True, help="threads per block (256)")
    q.add_argument("--registers", type=common.positive_int, required=True,
                   help="declared registers per thread, the accumulator's aside (128)")
    q.add_argument("--accumulator", choices=("shared", "registers"), required=True,
                   help="where the FP32 accumulator lives: shared memory, or registers (m n / threads per thread)")
    q.add_argument("--extra-shared", type=common.non_negative_int, default=0, metavar="BYTES",
                   help="more shared bytes per block (default 0)")
    q.add_argument("--warp-size", type=common.positive_int, default=32, help="threads per warp (default 32)")
    q.add_argument("--device", default="h100-sxm", metavar="ID|DEVICE.json",
                   help="device whose memory bandwidth applies (default h100-sxm, 3.35 TB/s)")
    q.add_argument("--memory-bandwidth", type=common.bandwidth, default=None, metavar="BW",
                   help="declare a memory bandwidth instead of the device's")
    q.add_argument("--sms", type=common.positive_int, required=True, help="SMs sharing the bandwidth (H100 SXM5: 132)")
    q.add_argument("--latency", type=_ns, required=True, metavar="T", help="declared memory latency (600ns, whole ns)")
    q.add_argument("--loads-per-warp", type=common.positive_int, required=True,
                   help="declared outstanding loads per warp (4)")
    q.add_argument("--load-bytes", type=common.positive_int, required=True, help="bytes per thread per load (16)")
    q.add_argument("--mma", type=_shape, required=True, metavar="MxNxK", help="MMA instruction shape (16x8x16)")


def _sm_occupancy(args):
    from fractions import Fraction

    from ..analyses.sm_occupancy import CC90, block_resources, sm_occupancy
    from ..errors import UserError
    from ..load.hardware import load_device

    m, n, k = args.tile
    if args.threads % args.warp_size:
        raise UserError(f"--threads {args.threads} is not a whole number of {args.warp_size}-thread warps")
    if args.accumulator == "registers" and (m * n) % args.threads:
        raise UserError(f"the {m}x{n} accumulator does not divide evenly over {args.threads} threads")
    if any(t % s for t, s in zip(args.tile, args.mma)):
        raise UserError(f"--tile {m}x{n}x{k} is not a whole number of --mma {'x'.join(map(str, args.mma))} shapes")
    shared, regs = block_resources(tile=args.tile, threads=args.threads, registers=args.registers,
                                   accumulator_in_shared=args.accumulator == "shared",
                                   extra_shared_bytes=args.extra_shared)
    if regs > CC90["max_registers_per_thread"]:
        raise UserError(f"{regs} registers per thread exceed the architectural 255")
    if shared > CC90["max_shared_memory_per_block_bytes"]:
        raise UserError(f"{shared:,} B of shared memory per block exceed the 232,448 B (227 KiB) maximum")
    bandwidth = args.memory_bandwidth or load_device(args.device).memory_bandwidth_bytes_per_s
    latency_ns = args.latency
    out = sm_occupancy(tile=args.tile, threads=args.threads, registers=args.registers,
                       accumulator_in_shared=args.accumulator == "shared", extra_shared_bytes=args.extra_shared,
                       warp_size=args.warp_size, bandwidth=Fraction(bandwidth), sms=args.sms, latency_ns=latency_ns,
                       loads_per_warp=args.loads_per_warp, load_bytes=args.load_bytes, mma_shape=args.mma)
    return dict({"memory_bandwidth_bytes_per_s": bandwidth, "latency_ns": str(latency_ns)}, **out)


def _copy_coordinates_arguments(q):
    common.add_model(q)
    q.add_argument("--rows", type=common.positive_int, required=True, metavar="M",
                   help="token rows through the shared expert (a multiple of 32)")
    q.add_argument("--tiles", action="store_true", help="list every copy's coordinates (long)")
    q.set_defaults(weight_dtype=None, act_dtype="bf16", kv_dtype=None)


def _copy_coordinates(args):
    from ..analyses.copy_coordinates import shared_expert
    from ..blocks.moe import MoE
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    moe = next((b for layer in arch.layers for b in layer.blocks if isinstance(b, MoE) and b.shared_inter), None)
    if moe is None:
        raise UserError(f"{arch.id} has no MoE layer with a shared expert (the kernel copies a shared expert's GEMMs)")
    if args.rows % 32 or moe.hidden % 128 or moe.shared_inter % 128:
        raise UserError(f"the kernel's blocks need rows % 32 == 0 and hidden, shared width % 128 == 0 "
                        f"(rows {args.rows}, hidden {moe.hidden}, shared width {moe.shared_inter})")
    if args.tiles and args.rows > 4096:
        raise UserError("--tiles lists at most 4,096 rows of copies")
    return dict({"model": arch.id, "rows": args.rows, "hidden": moe.hidden, "shared_inter": moe.shared_inter},
                **shared_expert(rows=args.rows, hidden=moe.hidden, inter=moe.shared_inter, tiles=args.tiles))

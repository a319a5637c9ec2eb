"""`forward`: one forward pass, operator by operator, with a roofline on a device."""

from . import common


def add_arguments(p):
    common.add_model(p)
    p.add_argument("--batch", type=common.positive_int, default=1, help="requests in the batch (default 1)")
    p.add_argument("--tokens", type=common.tokens, default=1,
                   help="new tokens per request (default 1)")
    p.add_argument("--history", type=common.tokens_or_zero, default=0,
                   help="cached tokens per request before the pass (default 0)")
    p.add_argument("--logits", choices=("last", "all", "none"), default="last",
                   help="positions the output head runs on (default last)")
    p.add_argument("--per-layer", action="store_true",
                   help="operator rows for one instance of each distinct block (not summed over the "
                        "layers that share it); totals stay those of the whole pass")
    p.add_argument("--mtp", action="store_true",
                   help="run one call of the model's multi-token-prediction module instead of the main model "
                        "(its input block, decoder layer, final norm and the shared embedding and head; "
                        "DeepSeek-V3/V4, GLM-4.5)")
    p.add_argument("--fp8-tiles", type=common.positive_int, metavar="ROWS",
                   help="add the block-scaled FP8 linears' kernel view: valid, tile (ROWS x 128 x 128) "
                        "and scale FLOPs per linear (needs fp8-b128 weights, e.g. DeepSeek-V3/V4's "
                        "native format; the book's v4-fp8-* tables use 32)")
    p.add_argument("--tile", type=_tile_shape, metavar="MxKxN",
                   help="add every matrix product padded to this kernel tile: valid, rectangular and padded "
                        "FLOPs per linear, QK^T and PV (dense decoders; the book's architecture-tile-* use 64x64x128)")
    p.add_argument("--reference-path", nargs="?", const="default", choices=("default", "record-past"), default="",
                   help="count the book's Qwen3.5/3.6 reference fallback as matrix work: the conv taps it "
                        "computes, DeltaNet chunks padded to 64, the eager attention rectangle, M-RoPE products "
                        "(record-past: the fallback's record_past conv)")
    p.add_argument("--kda-count", choices=("ledger", "recurrent-baseline"), default="ledger",
                   help="KDA layers' non-matrix work: ledger (default) or recurrent-baseline (the book's logical "
                        "recurrent count: every op and the recurrence as scalar FLOPs, per token, special "
                        "functions apart; adds the KDA summary)")
    p.add_argument("--vector-peak", type=common.vector_rate, default=None, metavar="FLOP/S",
                   help="a declared FP32 vector (non-tensor) peak instead of the device file's, e.g. 66.9T "
                        "(the book's H100 figure)")
    p.add_argument("--scalar-count", choices=("ledger", "book"), default="ledger",
                   help="ledger (default): vector FLOPs only; book: also the book's per-operator scalar FLOPs "
                        "and special functions (RMSNorm, RoPE and its table, causal softmax, SiLU, residual; "
                        "an error for an operator without a rule)")
    p.add_argument("--schedule", choices=("full", "ced"), default="full",
                   help="which layers run which positions: full (default: every layer every new token) or ced "
                        "(DeepSeek-V4.1's encoder/decoder serving schedule: on a fresh prompt the decoder layers "
                        "run its last window of positions only)")
    common.add_dtypes(p)
    common.add_architecture_options(p)
    common.add_device(p)
    common.add_output(p)


def _tile_shape(text):
    from .gemm import tile_shape
    return tile_shape(text)


def run(args):
    from ..analyses.forward import forward
    from ..load.hardware import load_device
    from ..load.models import load_model
    from ..render import forward as render

    arch = load_model(args.model)
    if args.mtp:
        from ..analyses.serve.speculation import mtp_drafter
        arch = mtp_drafter(arch)
    device = common.declared_figures(load_device(args.device), args)
    w = common.workload(args, arch, args.batch, args.tokens, args.history)
    if args.reference_path:
        from ..blocks.linear_attention import GatedDeltaNet
        from ..errors import UserError
        if arch.model_type not in ("qwen3_5_moe", "qwen3_5_moe_text") or not arch.has_block(GatedDeltaNet):
            raise UserError(f"--reference-path is the book's Qwen3.5/3.6 reference fallback (model_type "
                            f"qwen3_5_moe); {arch.id} is {arch.model_type}")
        w = w.replace(reference_path=args.reference_path)
    if args.kda_count != "ledger":
        from ..blocks.kimi import KDA
        from ..errors import UserError
        if not arch.has_block(KDA):
            raise UserError(f"--kda-count: {arch.id} has no KDA (Kimi Delta Attention) layers")
        w = w.replace(kda_count=args.kda_count)
    if args.schedule != "full":
        from ..errors import UserError
        if not arch.ced_split:
            raise UserError(f"--schedule ced: {arch.id} has no CED encoder/decoder split (DeepSeek-V4.1)")
        w = w.replace(schedule=args.schedule)
    if args.scalar_count != "ledger":
        w = w.replace(scalar_count=args.scalar_count)
    rec = forward(arch, w, device, args.compute_efficiency, args.memory_efficiency, args.per_layer)
    if args.fp8_tiles:
        from ..analyses.fp8_linears import fp8_linears
        rec["fp8_linears"] = fp8_linears(arch, w, args.fp8_tiles)
    if args.tile:
        from ..analyses.tile_padding import tile_padding
        head_rows = {"last": args.batch, "all": args.batch * args.tokens, "none": 0}[args.logits]
        rec["tile_padding"] = tile_padding(arch, w, args.tile, head_rows)
    return common.emit(args, rec, render.markdown, render.csv)

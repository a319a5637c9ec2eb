"""`train`: FLOPs of one training step and memory of one device (single device for now)."""

from . import common


def add_arguments(p):
    common.add_model(p)
    p.add_argument("--seq", type=common.positive_int, required=True, help="tokens per sequence")
    p.add_argument("--micro-batch", type=common.positive_int, default=1,
                   help="sequences per micro-batch (default 1)")
    p.add_argument("--global-batch", type=common.positive_int, default=None,
                   help="sequences per optimizer step (default: the micro-batch)")
    p.add_argument("--recompute", choices=("none", "selective", "full"), default="none",
                   help="activation recompute: none (default), selective (attention core), "
                        "full (every decoder layer keeps its input only)")
    p.add_argument("--flash-recompute", action="store_true",
                   help="count the QK^T a fused attention backward recomputes in hardware FLOPs")
    p.add_argument("--attention", choices=("fused", "unfused"), default="fused",
                   help="attention kernel for activation memory: fused (no T x T scores, default) "
                        "or unfused (keeps softmax probabilities and dropout masks)")
    p.add_argument("--zero", type=int, choices=(0, 1, 2, 3), default=0,
                   help="ZeRO stage over the data-parallel group (default 0; DP = 1 here)")
    p.add_argument("--optimizer", choices=("adamw", "adamw-bf16", "sgd"), default="adamw",
                   help="optimizer states: adamw (fp32 master + m + v = 12 B/param, default), "
                        "adamw-bf16 (fp32 master, bf16 m and v: 8), sgd (fp32 master + momentum: 8)")
    p.add_argument("--weight-dtype", default="bf16", metavar="FMT",
                   help="weight format during training (default bf16)")
    p.add_argument("--grad-dtype", default="bf16", metavar="FMT",
                   help="gradient format (default bf16; fp32 as Megatron-LM keeps them)")
    p.add_argument("--act-dtype", default="bf16", metavar="FMT",
                   help="activation and compute format (default bf16)")
    from ..load.hardware import MEMORY_CONVENTIONS
    p.add_argument("--memory-convention", choices=MEMORY_CONVENTIONS, default="physical",
                   help="device capacity: physical (default; what a server can allocate) or label "
                        "(the vendor's GB read as 10^9 bytes)")
    common.add_device(p)
    common.add_output(p)


def run(args):
    from ..analyses.train import train
    from ..dtypes import dtype
    from ..errors import UserError
    from ..load.hardware import load_device
    from ..load.models import load_model
    from ..render import train as render
    from ..workload import Workload

    arch = load_model(args.model)
    device = load_device(args.device, args.memory_convention)
    grad = dtype(args.grad_dtype)
    if grad.bits % 8 or grad.is_quantized:
        raise UserError(f"--grad-dtype must be a whole-byte format (bf16, fp16, fp32), got {grad.name}")
    act = dtype(args.act_dtype)
    w = Workload(batch=args.micro_batch, tokens=args.seq, logits="all",
                 weight_dtype=dtype(args.weight_dtype), act_dtype=act, kv_dtype=act)
    rec = train(arch, w, device, global_batch=args.global_batch or args.micro_batch,
                recompute=args.recompute, flash_recompute=args.flash_recompute, zero=args.zero,
                optimizer=args.optimizer, grad_bytes=grad.bits // 8, attention=args.attention)
    return common.emit(args, rec, render.markdown, render.csv)

"""`train`: FLOPs, memory per device and step time of one training step on a
layout of many devices, or a search over every layout."""

from . import common


def add_arguments(p):
    common.add_model(p)
    p.add_argument("--seq", type=common.tokens, required=True, help="tokens per sequence")
    p.add_argument("--supervised-tokens", type=common.tokens, default=None, metavar="N",
                   help="tokens per sequence the loss supervises, compacted so the output head and loss run "
                        "on them only (default: every position; a dense loss mask keeps the head on all)")
    p.add_argument("--loss-mask", choices=("compact", "dense"), default="compact",
                   help="with --supervised-tokens: compact (default: the head and loss run on the supervised "
                        "tokens only) or dense (the head runs on every position, the loss on the supervised)")
    p.add_argument("--scalar-count", choices=("ledger", "book"), default="ledger",
                   help="book: also the book's training tally of one micro-batch (per-operator forward and "
                        "backward scalar FLOPs, special functions apart, AdamW, saved objects; docs/train.md)")
    p.add_argument("--book-activation-policy", choices=("save-nonlinear", "recompute-silu"),
                   default="save-nonlinear",
                   help="with --scalar-count book: the SwiGLU keeps a, s, u (default) or keeps g, u and "
                        "recomputes s and a before its backward")
    p.add_argument("--hc-contractions", choices=("vector", "matrix"), default="vector",
                   help="mHC (DeepSeek-V4) pre weighted sum and post stream mix: vector FLOPs (default) or "
                        "matrix contractions with their backward (the book's training wrapper)")
    p.add_argument("--per-layer", action="store_true",
                   help="operator rows for one instance of each distinct block (not summed over the "
                        "layers that share it); every other figure stays the whole step")
    p.add_argument("--micro-batch", type=common.positive_int, default=1,
                   help="sequences per micro-batch (default 1)")
    p.add_argument("--global-batch", type=common.positive_int, default=None,
                   help="sequences per optimizer step (default: micro-batch x dp)")
    p.add_argument("--devices", type=common.positive_int, default=None,
                   help="devices in all (default: tp x pp x dp x cp); the rest of the degrees is dp")
    for dim, what in (("tp", "tensor-parallel"), ("pp", "pipeline stages"), ("dp", "data-parallel replicas"),
                      ("cp", "context-parallel"), ("ep", "expert-parallel, carved out of tp x dp")):
        p.add_argument(f"--{dim}", type=common.positive_int, default=None, help=f"{what} degree")
    p.add_argument("--sp", action="store_true", help="sequence parallelism (with --tp > 1)")
    p.add_argument("--pp-layers", type=_layers_list, default=(), metavar="N,N,...",
                   help="layers per pipeline stage, for every schedule (default: even, the first stages one "
                        "more; Megatron-LM's uneven first/last stages, e.g. 15,16,...,16,15 for 126 layers)")
    p.add_argument("--schedule", choices=("1f1b", "interleaved", "zero-bubble", "dualpipe"), default="1f1b",
                   help="pipeline schedule (default 1f1b)")
    p.add_argument("--virtual-stages", type=common.positive_int, default=None, metavar="V",
                   help="model chunks per stage for --schedule interleaved (default 2)")
    p.add_argument("--recompute", choices=("none", "selective", "full"), default="none",
                   help="activation recompute: none (default), selective (attention core), "
                        "full (every decoder layer keeps its input only)")
    p.add_argument("--recompute-modules", type=_modules, default=(), metavar="M,M,...",
                   help="parts of each layer run again in the backward, Megatron-LM's names: core_attn (the "
                        "attention core), layernorm (the residual-stream norms: the next projection keeps no "
                        "input), mla_up_proj (MLA's up-projections: attention keeps the latents and k_pe, not "
                        "Q/K/V), moe_act (the routed experts' activation: the down projection keeps no input)")
    p.add_argument("--activation-func-fp8-input-store", action="store_true",
                   help="activations (SwiGLU, GELU) keep their inputs in FP8 for the backward (Megatron-LM's "
                        "flag; DeepSeek-V3 caches its MoE SwiGLU inputs so)")
    p.add_argument("--cpu-offloading-num-layers", type=common.non_negative_int, default=0, metavar="N",
                   help="each stage's first N decoder layers keep their saved activations in host memory "
                        "(Megatron-LM's flag; one layer's set stays on the device in transit; the copies are "
                        "not charged time)")
    p.add_argument("--flash-recompute", action="store_true",
                   help="count the QK^T a fused attention backward recomputes in hardware FLOPs")
    for what in ("dispatch", "combine"):
        p.add_argument(f"--{what}-dtype", choices=("fp8", "bf16", "fp16", "fp32"), default="", metavar="FORMAT",
                       help=f"format of a token in the EP {what} all-to-all: fp8 (one fp32 scale per 128 values, "
                            "as DeepEP), bf16, fp16, fp32 (default: the activation format)")
    p.add_argument("--attention", choices=("fused", "unfused"), default="fused",
                   help="attention kernel for activation memory: fused (no T x T scores, default) "
                        "or unfused (keeps softmax probabilities and dropout masks)")
    p.add_argument("--zero", type=common.non_negative_int, choices=(0, 1, 2, 3), default=0,
                   help="ZeRO stage over the data-parallel group (default 0; Megatron's distributed "
                        "optimizer = 1)")
    p.add_argument("--optimizer", choices=("adamw", "adamw-bf16", "sgd"), default="adamw",
                   help="optimizer states: adamw (master + m + v fp32 = 12 B/param, default), "
                        "adamw-bf16 (bf16 m and v), sgd (master + momentum)")
    p.add_argument("--master-dtype", choices=("fp32", "bf16", "fp16", "none"), default="fp32",
                   help="master copy of the weights in the optimizer (default fp32; none: updated in place)")
    p.add_argument("--weight-dtype", default="bf16", metavar="FMT",
                   help="weight format during training (default bf16)")
    p.add_argument("--grad-dtype", default="bf16", metavar="FMT",
                   help="gradient format (default bf16; fp32 as Megatron-LM keeps them)")
    p.add_argument("--act-dtype", default="bf16", metavar="FMT",
                   help="activation and compute format (default bf16)")
    p.add_argument("--train-tokens", type=common.token_budget, default=None, metavar="TOKENS",
                   help="tokens to train on (e.g. 15T, 300B): time and device-hours")
    p.add_argument("--overlap-dp", action="store_true",
                   help="overlap the data-parallel gradient sync with the backward (and parameter "
                        "gathers with the forward)")
    p.add_argument("--ep-dispatcher", choices=("alltoall", "hybridep", "deepep"), default=None,
                   help="what runs the EP dispatch and combine in the predicted step: Megatron-Core's "
                        "all-to-all dispatcher (NCCL all-to-all, default) or its flex dispatcher's HybridEP "
                        "or DeepEP backend")
    common.add_link_options(p.add_argument_group("links (override the device data)"))
    p.add_argument("--search", action="store_true",
                   help="rank every layout of --devices by step time (or MFU)")
    p.add_argument("--objective", choices=("step", "mfu", "predicted"), default=None,
                   help="search ranking: step time (default), MFU (the same order) or the predicted "
                        "step of a well-tuned stack (docs/prediction.md)")
    p.add_argument("--top", type=common.positive_int, default=None, help="layouts to list (default 10)")
    p.add_argument("--cp-values", default=None, metavar="1,2,4",
                   help="context-parallel degrees the search tries (default 1)")
    from ..load.hardware import MEMORY_CONVENTIONS
    p.add_argument("--memory-convention", choices=MEMORY_CONVENTIONS, default="physical",
                   help="device capacity: physical (default; what a server can allocate) or label "
                        "(the vendor's GB read as 10^9 bytes)")
    common.add_device(p)
    common.add_output(p)


def _whole_bytes(d, flag):
    from ..errors import UserError

    if d.bits % 8 or d.is_quantized:
        raise UserError(f"{flag} must be a whole-byte format (bf16, fp16, fp32), got {d.name}")
    return d.bits // 8


def _modules(text):
    from ..analyses.train_flops import RECOMPUTE_MODULES
    from ..errors import UserError, quote

    names = [n.strip() for n in text.replace(" ", ",").split(",") if n.strip()]
    for n in names:
        if n not in RECOMPUTE_MODULES:
            raise UserError(f"--recompute-modules: unknown module {quote(n)} (choose from "
                            f"{', '.join(RECOMPUTE_MODULES)})")
    return tuple(m for m in RECOMPUTE_MODULES if m in names)


def _layers_list(text):
    from .parallel import layers_list
    return layers_list(text)


def layout(args):
    """The Layout the degrees and --devices describe (dp fills the rest)."""
    from ..errors import UserError
    from ..layout import Layout

    tp, pp, cp = args.tp or 1, args.pp or 1, args.cp or 1
    fixed = tp * pp * cp
    if args.dp is None:
        total = args.devices or fixed
        if total % fixed:
            raise UserError(f"--devices {total} is not a multiple of tp x pp x cp = {fixed}")
        dp = total // fixed
    else:
        dp = args.dp
        if args.devices is not None and args.devices != fixed * dp:
            raise UserError(f"--devices {args.devices} differs from tp x pp x dp x cp = {fixed * dp}")
    return Layout(tp=tp, pp=pp, dp=dp, cp=cp, ep=args.ep or 1, sp=args.sp, pp_layers=args.pp_layers)


def _cps(text):
    from ..errors import UserError, quote

    values = common.positive_ints(text)
    if values is None:
        raise UserError(f"--cp-values must list positive integers in ASCII digits, e.g. 1,2,4; got {quote(text)}")
    return tuple(sorted(set(values)))


def run(args):
    from ..analyses import train
    from ..comm import links
    from ..dtypes import dtype
    from ..errors import UserError
    from ..layout import moe_experts
    from ..load.models import load_model
    from ..render import train as render
    from ..workload import Workload

    arch = load_model(args.model)
    if args.hc_contractions != "vector":
        from ..blocks.hyper_connections import HCPre
        if not arch.has_block(HCPre):
            raise UserError(f"--hc-contractions {args.hc_contractions}: {args.model} has no mHC "
                            "(hyper-connection) streams; drop the flag")
    device = common.device_for(args)
    grad = _whole_bytes(dtype(args.grad_dtype), "--grad-dtype")
    master = 0 if args.master_dtype == "none" else _whole_bytes(dtype(args.master_dtype), "--master-dtype")
    act = dtype(args.act_dtype)
    if args.supervised_tokens is not None and args.supervised_tokens > args.seq:
        raise UserError(f"--supervised-tokens {args.supervised_tokens} exceeds --seq {args.seq}")
    if args.loss_mask == "dense" and args.supervised_tokens is None:
        raise UserError("--loss-mask dense needs --supervised-tokens (the tokens the loss supervises)")
    if args.book_activation_policy != "save-nonlinear" and args.scalar_count != "book":
        raise UserError("--book-activation-policy applies to --scalar-count book only")
    dense = args.loss_mask == "dense"
    w = Workload(batch=args.micro_batch, tokens=args.seq, logits="all",
                 weight_dtype=dtype(args.weight_dtype), act_dtype=act, kv_dtype=act,
                 head_positions=0 if dense else args.supervised_tokens or 0,
                 loss_positions=args.supervised_tokens if dense else 0, hc_contractions=args.hc_contractions)
    weight = _whole_bytes(w.weight_dtype, "--weight-dtype")
    chunks = args.virtual_stages or (2 if args.schedule == "interleaved" else 1)
    s = train.Setup(recompute=args.recompute, recompute_modules=args.recompute_modules,
                    fp8_activation_input=args.activation_func_fp8_input_store,
                    offload_layers=args.cpu_offloading_num_layers,
                    flash_recompute=args.flash_recompute, attention=args.attention,
                    zero=args.zero, optimizer=args.optimizer, weight_bytes=weight, grad_bytes=grad,
                    master_bytes=master, schedule=args.schedule, chunks=chunks,
                    compute_efficiency=args.compute_efficiency, memory_efficiency=args.memory_efficiency,
                    overlap_dp=args.overlap_dp, dispatch_dtype=args.dispatch_dtype,
                    combine_dtype=args.combine_dtype, ep_dispatcher=args.ep_dispatcher or "alltoall")
    common.search_only(args, ("objective", "top", "cp_values"))
    if args.ep_dispatcher is not None and not moe_experts(arch):
        raise UserError(f"--ep-dispatcher: {arch.id} has no routed experts (the EP dispatch it prices needs an "
                        "MoE model)")
    lk = links(device, alpha_up=args.alpha_up, alpha_out=args.alpha_out, link_bw_up=args.link_bw_up,
               link_bw_out=args.link_bw_out, comm_efficiency=args.comm_efficiency)
    if args.search:
        if args.scalar_count != "ledger":
            raise UserError("--scalar-count book counts one layout's micro-batch; drop --search")
        if not args.devices:
            raise UserError("--search needs --devices")
        if any(getattr(args, d) is not None for d in ("tp", "pp", "dp", "cp", "ep")) or args.sp or args.pp_layers:
            raise UserError("--search chooses tp, pp, dp, cp, ep, sp and even stages itself; drop them")
        gb = args.global_batch
        if gb is None:
            raise UserError("--search needs --global-batch")
        rec = train.search(arch, w, device, s, devices=args.devices, global_batch=gb, links=lk,
                           objective=args.objective or "step", top=args.top or 10, cps=_cps(args.cp_values or "1"))
        return common.emit(args, rec, render.search_markdown, render.search_csv)
    lay = layout(args)
    gb = args.global_batch or args.micro_batch * lay.dp
    m = train.micro_batches(gb, args.micro_batch, lay.dp)
    if isinstance(m, str):
        raise UserError(m)
    rec = train.train(arch, w, device, lay.replace(micro_batches=m), s, global_batch=gb, links=lk,
                      train_tokens=args.train_tokens, per_layer=args.per_layer)
    if args.scalar_count == "book":
        from ..analyses import train_book
        rec["book_count"] = train_book.tally(arch, w, s, args.book_activation_policy, args.per_layer)
        rec["conventions"].append(train_book.CONVENTION)
    return common.emit(args, rec, render.markdown, render.csv)

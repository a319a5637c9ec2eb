"""`parallel`: serve a model on N devices under a layout (TP, PP, DP, CP, EP, SP), or search layouts."""

import argparse

from . import common
from .. import comm

def layers_list(text):
    from ..errors import quote

    sizes = common.positive_ints(text)
    if sizes is None:
        raise argparse.ArgumentTypeError("must be positive layer counts per stage in ASCII digits, e.g. "
                                         f"20,20,20,20; got {quote(text)}")
    return sizes


def rank_order(text):
    """A rank order with tp innermost (the EP groups are carved out of consecutive TP ranks)."""
    dims = text.strip().split("-")
    if dims[:1] != ["tp"] or sorted(d for d in dims if d != "ep") != ["cp", "dp", "pp", "tp"] or dims.count("ep") > 1:
        raise argparse.ArgumentTypeError(f"must list tp first, then cp, dp and pp once each (ep optional), "
                                         f"e.g. tp-pp-cp-dp; got '{text}'")
    return "-".join(dims)


def add_arguments(p):
    common.add_model(p)
    p.add_argument("--devices", type=common.positive_int, default=None, metavar="N",
                   help="devices in the cluster (= tp x pp x dp x cp; default: that product, dp 1 "
                        "unless given; required with --search)")
    common.add_lengths(p)
    p.add_argument("--batch", type=common.positive_int, default=None, metavar="B",
                   help="concurrent requests per model replica (default 1; with --search "
                        "--objective throughput, default: the best of pp x 1, 4, 16, ... requests (pp "
                        "micro-batches of powers of 4) while they fit)")
    lay = p.add_argument_group("layout")
    for dim, text in (("tp", "tensor-parallel degree"), ("pp", "pipeline stages"),
                      ("cp", "context-parallel degree"),
                      ("ep", "expert-parallel degree (MoE; carved out of tp x dp)")):
        lay.add_argument(f"--{dim}", type=common.positive_int, default=1, help=f"{text} (default 1)")
    lay.add_argument("--dp", type=common.positive_int, default=None,
                     help="data-parallel replicas (default: devices / (tp x pp x cp))")
    lay.add_argument("--sp", action="store_true", help="sequence parallelism (with --tp > 1)")
    lay.add_argument("--ep-dedup", action="store_true",
                     help="EP dispatch sends one copy of a token per destination rank instead of one per "
                          "expert (DeepEP's dispatch; expected distinct ranks under uniform routing)")
    for what, text in (("dispatch", "EP dispatch"), ("combine", "EP combine")):
        lay.add_argument(f"--{what}-dtype", choices=comm.WIRE_FORMATS, default="", metavar="FORMAT",
                         help=f"format of a token on the wire in the {text} all-to-all: fp8 (with one fp32 "
                              "scale per 128 values, as DeepEP), bf16, fp16, fp32 (default: the activation format)")
    lay.add_argument("--logits-dtype", choices=("bf16", "fp16", "fp32"), default="", metavar="FORMAT",
                     help="format of the head's logits in the TP all-gather: bf16, fp16, fp32 (default: the "
                          "activation format; the book's dense communication path gathers fp32)")
    lay.add_argument("--pp-send", choices=("slice", "replicated"), default="slice",
                     help="PP boundary under TP without SP: slice (default; each TP rank sends its 1/tp slice, "
                          "the next stage all-gathers, Megatron's scatter/gather) or replicated (each TP rank "
                          "sends the whole tensor to its matching rank, the book's basic placement)")
    lay.add_argument("--cp-split", choices=("contiguous", "zigzag"), default="contiguous",
                     help="how --cp splits the prompt: contiguous (default; the last rank, with the most "
                          "causal pairs, bounds the prefill) or zigzag (2 x cp chunks, rank r holding r and "
                          "2cp-1-r: equal causal work)")
    lay.add_argument("--rank-order", type=rank_order, default="tp-cp-ep-dp-pp", metavar="ORDER",
                     help="rank order, innermost first (default tp-cp-ep-dp-pp, as Megatron-LM); tp stays "
                          "innermost, e.g. tp-pp-cp-dp keeps a pipeline's stages in one scale-up domain")
    lay.add_argument("--micro-batches", type=common.positive_int, default=None, metavar="M",
                     help="micro-batches per replica in the pipeline (default gcd(B, pp)); must divide B")
    lay.add_argument("--pp-layers", type=layers_list, default=(), metavar="N,N,...",
                     help="layers per pipeline stage (default: even, the first stages one more)")
    links = p.add_argument_group("links (override the device data)")
    common.add_link_options(links)
    links.add_argument("--algorithm", choices=("ring", "binomial", "best"), default="ring",
                       help="collective algorithm: ring (default), binomial (every all-reduce as the "
                            "book's unsegmented binomial tree: 2 ceil(log2 n) rounds of the whole "
                            "buffer; other collectives ring) or the fastest applicable "
                            "(ring, tree, in-network) per collective")
    p.add_argument("--overlap", action="store_true",
                   help="hide communication under the shard's kernels, up to their time")
    p.add_argument("--comm-path", action="store_true",
                   help="list the communication path of one micro-batch pass: every collective in pipeline "
                        "order with the bytes the replica sends, startup and bandwidth time, summed serially")
    p.add_argument("--token-feedback", action="store_true",
                   help="with --comm-path: add the sampled token IDs' return to the first stage (int32; "
                        "last stage to first stage, then a binomial broadcast over its TP ranks)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--batch-sweep", action="store_true",
                      help="B = 1, 2, 4, ... up to the replica's capacity for this layout")
    mode.add_argument("--search", action="store_true",
                      help="rank every layout of --devices the model admits")
    p.add_argument("--plot", type=common.file_name, metavar="FILE.svg", help="with --batch-sweep: an SVG of tokens/s per device "
                                                      "against tokens/s per request")
    s = p.add_argument_group("search")
    s.add_argument("--objective", choices=("throughput", "ttft", "tpot", "predicted"), default=None,
                   help="throughput: decode tokens/s per device (default); ttft; tpot; predicted: the "
                        "predicted output tokens/s per device of a tuned engine (every layout, CP included)")
    s.add_argument("--tpot-limit", type=common.duration, default=None, metavar="T",
                   help="the mean TPOT a layout must meet (e.g. 50ms), under any objective; the throughput "
                        "objective takes the best batch within it")
    s.add_argument("--top", type=common.positive_int, default=None, metavar="K",
                   help="layouts listed with their breakdown (default 10)")
    common.add_dtypes(p)
    common.add_architecture_options(p)
    common.add_device(p)
    common.add_memory(p, memory_bytes=True)
    common.add_output(p)


def _layout(args, devices):
    from ..errors import UserError
    from ..layout import Layout

    inner = args.tp * args.pp * args.cp
    dp = args.dp
    if devices is None:   # the layout's own size
        devices = inner * (dp or 1)
    if dp is None:
        if devices % inner:
            raise UserError(f"--devices {devices} is not a multiple of tp x pp x cp = {inner}")
        dp = devices // inner
    if inner * dp != devices:
        raise UserError(f"tp x pp x dp x cp = {inner * dp} devices, but --devices is {devices}")
    return Layout(tp=args.tp, pp=args.pp, dp=dp, cp=args.cp, ep=args.ep, sp=args.sp,
                  micro_batches=args.micro_batches or 1, pp_layers=args.pp_layers, order=args.rank_order)


def _searched(args):
    """Layout options given with --search (they would be ignored)."""
    given = [f"--{d}" for d in ("tp", "pp", "cp", "ep") if getattr(args, d) != 1]
    given += [f"--{name.replace('_', '-')}" for name in ("dp", "micro_batches") if getattr(args, name)]
    return (given + (["--sp"] if args.sp else []) + (["--pp-layers"] if args.pp_layers else [])
            + (["--cp-split"] if args.cp_split != "contiguous" else [])
            + (["--rank-order"] if args.rank_order != "tp-cp-ep-dp-pp" else []))


def run(args):
    from ..analyses import parallel
    from ..errors import UserError
    from ..load.models import load_model
    from ..render import parallel as render

    if args.plot and not args.batch_sweep:
        raise UserError("--plot needs --batch-sweep")
    common.search_only(args, ("tpot_limit", "objective", "top"))
    if args.search and _searched(args):
        raise UserError(f"--search enumerates the layout; drop {', '.join(_searched(args))}")
    if args.token_feedback and not args.comm_path:
        raise UserError("--token-feedback applies with --comm-path")
    if args.comm_path and (args.search or args.batch_sweep):
        raise UserError("--comm-path applies to one layout and batch; drop --search / --batch-sweep")
    if args.batch_sweep and args.batch is not None:
        raise UserError("--batch-sweep sweeps the batch; drop --batch")
    if args.cp_split != "contiguous" and args.cp == 1 and not args.search:
        raise UserError("--cp-split applies with --cp > 1")
    arch = load_model(args.model)
    device = common.device_for(args)
    w = common.workload(args, arch, 1, 1, 0)
    link_options = {"alpha_up": args.alpha_up, "alpha_out": args.alpha_out, "link_bw_up": args.link_bw_up,
                    "link_bw_out": args.link_bw_out, "comm_efficiency": args.comm_efficiency}
    plan = parallel.Plan(arch, w, device, args.input_len, args.output_len,
                         batch=1 if args.search or args.batch_sweep else args.batch or 1,
                         compute_efficiency=args.compute_efficiency, memory_efficiency=args.memory_efficiency,
                         reserve_bytes=common.reserve_bytes(args, device.memory_bytes), overlap=args.overlap,
                         algorithm=args.algorithm, link_options=link_options, ep_dedup=args.ep_dedup,
                         cp_split=args.cp_split, dispatch_dtype=args.dispatch_dtype,
                         combine_dtype=args.combine_dtype, logits_dtype=args.logits_dtype,
                         pp_send=args.pp_send)
    if args.search and args.devices is None:
        raise UserError("--search needs --devices N (the device count whose layouts it ranks)")
    if args.search:
        from ..analyses.parallel.search import search_record

        rec = search_record(plan, args.devices, objective=args.objective or "throughput",
                            tpot_limit=args.tpot_limit, top=args.top or 10, batch=args.batch)
        return common.emit(args, rec, render.search_markdown, render.search_csv)
    lay = _layout(args, args.devices)
    if args.batch_sweep:
        rec = parallel.sweep(plan, lay)
        if args.plot:
            from ..render.svg import parallel_plot
            common.add_file(args, "--plot", args.plot, parallel_plot(rec))
        return common.emit(args, rec, render.sweep_markdown, render.sweep_csv)
    rec = parallel.parallel(plan, lay, args.batch or 1, comm_path=args.comm_path,
                            token_feedback=args.token_feedback)
    return common.emit(args, rec, render.markdown, render.csv)

"""`decode`: TTFT and per-token time bounds for B requests on one device, or a batch sweep."""

from . import common


def add_arguments(p):
    common.add_model(p)
    common.add_lengths(p)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--batch", type=common.positive_int, default=1, metavar="B",
                      help="concurrent requests decoded in lockstep (default 1)")
    size.add_argument("--batch-sweep", action="store_true",
                      help="B = 1, 2, 4, ... up to the largest batch whose cache fits on the device")
    common.add_dtypes(p)
    common.add_architecture_options(p)
    p.add_argument("--schedule", choices=("full", "ced"), default="full",
                   help="the prefill's schedule: full (default) or ced (DeepSeek-V4.1: the decoder layers run "
                        "the prompt's last window only; decode steps run every layer either way)")
    p.add_argument("--tensor-shapes", choices=("config", "checkpoint"), default="config",
                   help="resident weight bytes from the config's tensor shapes (default) or the official "
                        "checkpoint's where they differ (Kimi K3's 128-element A_log)")
    common.add_device(p)
    common.add_memory(p, memory_bytes=True)
    common.add_output(p)
    spec = p.add_argument_group("speculative decoding")
    spec.add_argument("--draft-model", metavar="ID|CONFIG.json",
                      help="a draft model (same tokenizer) proposing tokens for the target to verify")
    spec.add_argument("--acceptance-rate", type=common.unit_interval, metavar="ALPHA",
                      help="probability that the target accepts a drafted token (0..1)")
    spec.add_argument("--draft-tokens", type=common.positive_int, default=4, metavar="K",
                      help="tokens drafted per verification step (default 4)")
    p.add_argument("--plot", type=common.file_name, metavar="FILE.svg",
                   help="with --batch-sweep: write an SVG of aggregate against per-request tokens/s")


def run(args):
    from ..analyses import decode
    from ..errors import UserError
    from ..load.models import load_model
    from ..render import decode as render

    if args.plot and not args.batch_sweep:
        raise UserError("--plot needs --batch-sweep")
    if (args.draft_model is None) != (args.acceptance_rate is None):
        raise UserError("--draft-model and --acceptance-rate go together")
    if args.draft_model and args.batch_sweep:
        raise UserError("speculative decoding (--draft-model) takes one --batch, not --batch-sweep")
    arch = load_model(args.model)
    if args.tensor_shapes != "config" and not any(t.checkpoint_shape for t, _ in arch._weight_tally()):
        raise UserError(f"--tensor-shapes {args.tensor_shapes}: {args.model}'s checkpoint tensors all have "
                        "the config's shapes; drop the flag")
    device = common.device_for(args)
    w = common.workload(args, arch, args.batch, 1, 0)
    if args.schedule != "full":
        if not arch.ced_split:
            raise UserError(f"--schedule ced: {arch.id} has no CED encoder/decoder split (DeepSeek-V4.1)")
        w = w.replace(schedule=args.schedule)
    eff = (args.compute_efficiency, args.memory_efficiency)
    reserve = common.reserve_bytes(args, device.memory_bytes)
    if not args.batch_sweep:
        rec = decode.decode(arch, w, device, args.input_len, args.output_len, *eff, reserve)
        if args.draft_model:
            from ..analyses.roofline import roof
            from ..analyses.speculative import speculative

            draft = load_model(args.draft_model)
            r = roof(device, w.compute_dtype, *eff)
            span = decode.step_histories(args.input_len, args.output_len)
            w = decode.decode_path(arch, w, *span, r)[0]
            wd = decode.decode_path(draft, common.workload(args, draft, args.batch, 1, 0), *span, r)[0]
            rec["speculative"] = speculative(arch, draft, w, wd, device, args.input_len,
                                             args.output_len, args.acceptance_rate,
                                             args.draft_tokens, r, rec)
        return common.emit(args, rec, render.markdown, render.csv)
    rec = decode.sweep(arch, w, device, args.input_len, args.output_len, *eff, reserve)
    if args.plot:
        from ..render.svg import throughput_plot
        common.add_file(args, "--plot", args.plot, throughput_plot(rec))
    return common.emit(args, rec, render.sweep_markdown, render.sweep_csv)

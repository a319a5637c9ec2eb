"""`kv`: KV cache sizing per layer type and request capacity on a device layout."""

from . import common

def add_arguments(p):
    common.add_model(p)
    p.add_argument("--context", type=common.tokens, required=True,
                   help="tokens per request (prompt + generated)")
    p.add_argument("--batch", type=common.positive_int, default=1,
                   help="concurrent requests for the memory-left and max-context figures (default 1)")
    common.add_dtypes(p)
    p.add_argument("--mla", choices=common.MLA_PATHS, default="absorbed",
                   help="MLA cache: absorbed (default) and expanded both keep the latent + rope key; "
                        "naive keeps the expanded K/V")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--device", default=None, metavar="ID|DEVICE.json",
                       help="a bundled device id or a device JSON path (default h100-sxm)")
    where.add_argument("--memory-bytes", type=common.byte_size, default=None, metavar="BYTES",
                       help="memory per device instead of a device (e.g. 85899345920 or 80GiB)")
    common.add_memory(p)
    p.set_defaults(memory_convention=None)  # None = not given: refused beside --memory-bytes
    p.add_argument("--tp", type=common.positive_int, default=1, help="tensor-parallel degree (default 1)")
    p.add_argument("--pp", type=common.positive_int, default=1, help="pipeline-parallel degree (default 1)")
    p.add_argument("--page-size", type=common.tokens, default=None, metavar="TOKENS",
                   help="paged KV cache: each layer allocates whole pages of this many tokens")
    p.add_argument("--shared-prefix", type=common.tokens_or_zero, default=0, metavar="TOKENS",
                   help="a common prefix of this many tokens stored once for the batch")
    p.add_argument("--conv-state", choices=("history", "kernel"), default="history",
                   help="positions a Gated DeltaNet conv state keeps per channel: history (default; kernel - 1, "
                        "vLLM's layout) or kernel (all conv_kernel, the book's reference path)")
    p.add_argument("--weights", choices=("text", "all"), default="text",
                   help="resident weights: text (default; the text model) or all (plus the checkpoint's vision "
                        "tower and MTP layers)")
    p.add_argument("--screen", type=memory_list, default=(), metavar="BYTES,BYTES,...",
                   help="more memory sizes per device to check the batch's necessary budget against "
                        "(e.g. 24GB,32GB,80GB): per size the need, fit and memory left")
    common.add_output(p)


def memory_list(text):
    """Comma-separated byte sizes (each as --memory-bytes takes it)."""
    return tuple(common.byte_size(item.strip()) for item in text.split(","))


def run(args):
    from ..analyses.kv import Request, kv
    from ..layout import Layout
    from ..load.models import load_model
    from ..render import kv as render

    arch = load_model(args.model)
    w = common.workload(args, arch, 1, 1, 0).replace(conv_state=args.conv_state)
    if args.conv_state != "history" and not any(hasattr(b, "conv_slot_bytes") for layer, _, _ in arch.layer_groups()
                                                for b in layer.blocks):
        from ..errors import UserError
        raise UserError(f"--conv-state: {arch.id} has no Gated DeltaNet layer whose conv state keeps kernel - 1 "
                        "positions")
    if args.memory_bytes is not None:
        if args.memory_convention is not None:
            from ..errors import UserError
            raise UserError("--memory-convention applies to a device's capacity; --memory-bytes "
                            "is already a byte count (give one or the other)")
        memory, device = args.memory_bytes, None
    else:
        from ..load.hardware import load_device
        args.memory_convention = args.memory_convention or "physical"
        dev = load_device(args.device or "h100-sxm", args.memory_convention)
        memory, device = dev.memory_bytes, dev.id
    res = common.reserve_bytes(args, memory)
    req = Request(args.context, args.batch, args.page_size, args.shared_prefix)
    rec = kv(arch, w, req, memory, Layout(tp=args.tp, pp=args.pp), res, device, weights=args.weights,
             screen=args.screen)
    if device:
        rec["inputs"]["memory_convention"] = args.memory_convention
    return common.emit(args, rec, render.markdown, render.csv)

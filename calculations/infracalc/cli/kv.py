"""`kv`: KV cache sizing per layer type and request capacity on a device layout."""

import argparse

from . import common

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


# The largest byte count taken: the bound on a device file's figures
# (load/hardware.py MAX_FIGURE, 10^30 B), so --memory-bytes accepts exactly the
# memories a device file may state, and every count divided by it stays a finite float.
MAX_BYTES = 10**30


def _bytes(text, low):
    """An integer count of bytes in [low, 10^30]: 85899345920, 80GiB, 141GB (GiB = 2^30, GB = 10^9)."""
    from ..errors import quote

    number = text.rstrip("KMGTIBkmgtib")
    value = common.digits(number) if len(number) <= 31 else None
    scale = _UNITS.get(text[len(number):].upper())
    what = "a positive" if low else "a non-negative"
    if value is None or scale is None or not low <= value * scale <= MAX_BYTES:
        raise argparse.ArgumentTypeError(
            f"must be {what} byte count up to 10^30 in ASCII digits with an optional unit "
            f"(e.g. 85899345920, 80GiB, 141GB), got {quote(text)}")
    return value * scale


def byte_size(text):
    """A positive byte count: 85899345920, 80GiB, 141GB."""
    return _bytes(text, 1)


def reserve(text):
    """A byte count (0 allowed), or a percentage of device memory ('5%', '7.5%'),
    kept exact as a fraction so the reserve is floor(memory x pct / 100) bytes."""
    if text.endswith("%"):
        from fractions import Fraction

        from ..errors import quote

        whole, _, tenths = text[:-1].partition(".")
        if common.digits(whole) is None or len(text) > 24 or (tenths and common.digits(tenths) is None):
            pct = -1
        else:
            pct = Fraction(text[:-1])
        if not 0 <= pct < 100:
            raise argparse.ArgumentTypeError(f"must be a percentage in [0, 100) in ASCII digits, "
                                             f"got {quote(text)}")
        return ("percent", pct)
    return ("bytes", _bytes(text, 0))


def add_arguments(p):
    common.add_model(p)
    p.add_argument("--context", type=common.positive_int, required=True,
                   help="tokens per request (prompt + generated)")
    p.add_argument("--batch", type=common.positive_int, default=1,
                   help="concurrent requests for the memory-left and max-context figures (default 1)")
    common.add_dtypes(p)
    p.add_argument("--mla", choices=common.MLA_PATHS, default="absorbed",
                   help="MLA cache: absorbed (latent + rope key, default) or naive (expanded K/V)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--device", default=None, metavar="ID|DEVICE.json",
                       help="a bundled device id or a device JSON path (default h100-sxm)")
    where.add_argument("--memory-bytes", type=byte_size, default=None, metavar="BYTES",
                       help="memory per device instead of a device (e.g. 85899345920 or 80GiB)")
    p.add_argument("--reserve", type=reserve, default=None, metavar="BYTES|PCT%",
                   help="workspace reserve per device (activations, runtime, fragmentation); "
                        "default 10%% of memory")
    p.add_argument("--tp", type=common.positive_int, default=1, help="tensor-parallel degree (default 1)")
    p.add_argument("--pp", type=common.positive_int, default=1, help="pipeline-parallel degree (default 1)")
    p.add_argument("--page-size", type=common.positive_int, default=None, metavar="TOKENS",
                   help="paged KV cache: each layer allocates whole pages of this many tokens")
    p.add_argument("--shared-prefix", type=common.non_negative_int, default=0, metavar="TOKENS",
                   help="a common prefix of this many tokens stored once for the batch")
    common.add_output(p)


def run(args):
    from ..analyses.kv import kv
    from ..load.models import load_model
    from ..render import kv as render

    arch = load_model(args.model)
    w = common.workload(args, arch, 1, 1, 0)
    if args.memory_bytes is not None:
        memory, device = args.memory_bytes, None
    else:
        from ..load.hardware import load_device
        dev = load_device(args.device or "h100-sxm")
        memory, device = dev.memory_bytes, dev.id
    res = None
    if args.reserve is not None:
        kind, value = args.reserve
        res = value if kind == "bytes" else int(memory * value // 100)
    rec = kv(arch, w, args.context, args.batch, memory, res, args.tp, args.pp,
             args.page_size, args.shared_prefix, device)
    return common.emit(args, rec, render.markdown, render.csv)

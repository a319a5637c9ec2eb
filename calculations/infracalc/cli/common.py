"""Arguments several subcommands share, and their parsing into objects."""

import argparse
import os

from ..workload import DELTA_FORMS, MLA_CHOICES, MLA_PATHS, NEW_KV

FORMATS = ("md", "json", "csv")

# Bounds on numeric arguments: far beyond any real workload, and small enough that
# every count (at most ~2^300 with the config bounds of load/config.py) divided by a
# rate stays a finite float.
MAX_COUNT = 10**15
MIN_EFFICIENCY = 1e-6


def digits(text):
    """The value of a string of ASCII digits 0-9 and nothing else (no sign, space,
    '_', ',' or other script's digits, which Python's int() would accept), or None."""
    if text and text.isascii() and text.isdigit():
        return int(text)
    return None


def positive_ints(text):
    """The positive integers of a comma-separated list ('20,20,20'; spaces around an
    item allowed), each in ASCII digits up to 10^15 as `positive_int` takes it, or None."""
    values = []
    for item in text.split(","):
        value = digits(item.strip()) if len(item) <= 40 else None
        if value is None or not 1 <= value <= MAX_COUNT:
            return None
        values.append(value)
    return tuple(values)


def as_given(parse):
    """An argument type that checks the text with `parse` and keeps the text (echoed as typed; the
    command parses it again)."""
    def check(text):
        parse(text)
        return text
    check.__name__ = getattr(parse, "__name__", "value")
    return check


def positive_int_list(text):
    """`positive_ints` as an argparse type: a list that does not parse is an error naming the form."""
    values = positive_ints(text)
    if values is None:
        raise argparse.ArgumentTypeError(f"must be positive integers separated by commas (48,96,192), got '{text}'")
    return values


def _int_at_least(text, low, what):
    from ..errors import quote

    value = digits(text) if len(text) <= 20 else None
    if value is None or not low <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be {what} up to 10^15 (ASCII digits only), "
                                         f"got {quote(text)}")
    return value


def positive_int(text):
    return _int_at_least(text, 1, "a positive integer")


def non_negative_int(text):
    return _int_at_least(text, 0, "a non-negative integer")


def _float_in(text, ok, interval):
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not ok(value):   # NaN fails every comparison
        from ..errors import quote
        raise argparse.ArgumentTypeError(f"must be a number in {interval}, got {quote(text)}")
    return value


def unit_interval(text):
    """A probability in [0, 1]."""
    return _float_in(text, lambda v: 0 <= v <= 1, "[0, 1]")


def fraction(text):
    """An efficiency factor in [MIN_EFFICIENCY, 1] (a smaller one could make a time overflow)."""
    return _float_in(text, lambda v: MIN_EFFICIENCY <= v <= 1, "[1e-6, 1]")


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
    value = digits(number) if len(number) <= 31 else None
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


def reserve_arg(text):
    """--reserve: a byte count (0 allowed), or a percentage of device memory ('5%', '7.5%'),
    kept exact as a fraction so the reserve is floor(memory x pct / 100) bytes."""
    if text.endswith("%"):
        from fractions import Fraction

        from ..errors import quote

        whole, _, tenths = text[:-1].partition(".")
        if digits(whole) is None or len(text) > 24 or (tenths and digits(tenths) is None):
            pct = -1
        else:
            pct = Fraction(text[:-1])
        if not 0 <= pct < 100:
            raise argparse.ArgumentTypeError(f"must be a percentage in [0, 100) in ASCII digits, "
                                             f"got {quote(text)}")
        return ("percent", pct)
    return ("bytes", _bytes(text, 0))


def add_memory(p, memory_bytes=False):
    """--reserve and --memory-convention: one definition for every command that sizes memory.
    With memory_bytes, also --memory-bytes (exclusive with --memory-convention): a declared
    capacity per device that replaces the device's, which keeps its peaks and bandwidth."""
    from ..load.hardware import MEMORY_CONVENTIONS

    p.add_argument("--reserve", type=reserve_arg, default=None, metavar="BYTES|PCT%",
                   help="workspace reserve per device (activations, runtime, fragmentation): bytes "
                        "(e.g. 4GiB) or a percentage of device memory; default 10%% of memory, "
                        "as vLLM's gpu_memory_utilization 0.9")
    where = p.add_mutually_exclusive_group() if memory_bytes else p
    where.add_argument("--memory-convention", choices=MEMORY_CONVENTIONS, default="physical",
                       help="device capacity: physical (default; what a server can allocate, e.g. "
                            "H100 SXM 81,559 MiB) or label (the vendor's GB read as 10^9 bytes, as the book)")
    if memory_bytes:
        where.add_argument("--memory-bytes", type=byte_size, default=None, metavar="BYTES",
                           help="memory per device instead of the device's capacity (e.g. 48GB = 48 x "
                                "10^9 B, 80GiB); the device keeps its peaks and bandwidth")


def search_only(args, names):
    """Refuse any option of `names` (argparse dests, None when not given) without --search: only the
    search reads them, so one given alone would be silently ignored."""
    if not args.search:
        for name in names:
            if getattr(args, name) is not None:
                from ..errors import UserError
                raise UserError(f"--{name.replace('_', '-')} applies to --search")


def device_for(args):
    """The --device with its capacity per --memory-convention, or the declared --memory-bytes
    (memory_convention 'declared') when that is given."""
    from ..load.hardware import load_device

    device = declared_figures(load_device(args.device, args.memory_convention), args)
    if getattr(args, "memory_bytes", None) is not None:
        device = device.replace(memory_bytes=args.memory_bytes, memory_convention="declared")
    return device


def reserve_bytes(args, memory_bytes):
    """The --reserve in bytes for a device of memory_bytes, or None (the default rule)."""
    if args.reserve is None:
        return None
    kind, value = args.reserve
    return value if kind == "bytes" else int(memory_bytes * value // 100)


def add_model(p, required=True):
    p.add_argument("--model", required=required, metavar="ID|CONFIG.json",
                   help="a bundled model id (see `models`), a path to a Hugging Face config.json, "
                        "or a directory holding one")


def add_lengths(p, required=True):
    """--input-len P and --output-len G, the request shape of decode and parallel (serve: optional,
    a replay gives each request its own)."""
    p.add_argument("--input-len", type=tokens, required=required, metavar="P",
                   help="prompt tokens per request (as vLLM's benchmark --input-len; 2048, 2k, 2K)")
    p.add_argument("--output-len", type=tokens, required=required, metavar="G",
                   help="generated tokens per request, the first one from the prefill pass")


def add_device(p):
    p.add_argument("--device", default="h100-sxm", metavar="ID|DEVICE.json",
                   help="a bundled device id (see `hardware`) or a device JSON path (default h100-sxm)")
    add_efficiency(p)


def add_efficiency(p):
    p.add_argument("--compute-efficiency", type=fraction, default=1.0,
                   help="fraction of the peak FLOP/s reached (default 1.0)")
    p.add_argument("--memory-efficiency", type=fraction, default=1.0,
                   help="fraction of the memory bandwidth reached (default 1.0)")
    p.add_argument("--matrix-peak", type=format_rate, action="append", default=None, metavar="FMT=FLOP/S",
                   help="a declared dense matrix peak for one format instead of the device file's, e.g. "
                        "bf16=989.4T (the H100 whitepaper's figure, which the book takes); repeatable")
    p.add_argument("--memory-bandwidth", type=bandwidth, default=None, metavar="BW",
                   help="a declared memory bandwidth instead of the device file's (e.g. 4.0TB/s)")


_FLOP_UNITS = (("P", 1e15), ("T", 1e12), ("G", 1e9))


def vector_rate(text):
    """FLOP/s for --vector-peak: 66.9T (T = 10^12, P = 10^15, G = 10^9)."""
    value = _scaled(text.removesuffix("FLOP/s"), _FLOP_UNITS, "a rate such as 66.9T (FLOP/s)", 1e30)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive FLOP/s, got '{text}'")
    return round(value)


def format_rate(text):
    """FMT=RATE for --matrix-peak: bf16=989.4T (FLOP/s; T = 10^12, P = 10^15, G = 10^9)."""
    from ..dtypes import DTYPES

    keys = sorted({d.peak for d in DTYPES.values() if d.peak})
    name, sep, rate = text.partition("=")
    if not sep or name not in keys:
        raise argparse.ArgumentTypeError(f"must be FORMAT=FLOP/S such as bf16=989.4T (formats with a "
                                         f"matrix peak: {', '.join(keys)}), got '{text}'")
    value = _scaled(rate.removesuffix("FLOP/s"), _FLOP_UNITS, "a rate such as 989.4T (FLOP/s)", 1e30)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive FLOP/s, got '{text}'")
    return name, round(value)


def declared_figures(device, args):
    """The device with the --matrix-peak and --memory-bandwidth figures the user declared in
    place of its file's, named in the device's name so every output shows them."""
    peaks = dict(getattr(args, "matrix_peak", None) or ())
    bw = getattr(args, "memory_bandwidth", None)
    vector = getattr(args, "vector_peak", None)
    if not peaks and bw is None and vector is None:
        return device
    table = dict(device.matrix_flops_per_s)
    said = []
    for key, rate in peaks.items():
        table[key] = rate
        said.append(f"{key} peak {rate / 1e12:g} TFLOP/s")
    changes = {"matrix_flops_per_s": tuple(table.items())}
    if bw is not None:
        changes["memory_bandwidth_bytes_per_s"] = round(bw)
        said.append(f"memory bandwidth {bw / 1e9:g} GB/s")
    if vector is not None:
        changes.update(vector_flops_per_s=vector, vector_peak_kind="fp32")
        said.append(f"fp32 vector peak {vector / 1e12:g} TFLOP/s")
    return device.replace(name=f"{device.name} (declared: {', '.join(said)})", **changes)


def add_devices(p):
    """--device repeatable, or `all` (every bundled device), and the efficiency factors."""
    p.add_argument("--device", action="append", metavar="ID|DEVICE.json|all",
                   help="a bundled device id (see `hardware`) or a device JSON path; repeatable; "
                        "`all` for every bundled device (default h100-sxm)")
    add_efficiency(p)


def devices(args):
    """The Devices named by a repeatable --device (`all` expands to every bundled one)."""
    from ..load.hardware import device_ids, load_device

    ids = []
    for spec in args.device or ["h100-sxm"]:
        for i in (device_ids() if spec == "all" else [spec]):
            if i not in ids:
                ids.append(i)
    if len(ids) > 1 and (getattr(args, "matrix_peak", None) or getattr(args, "memory_bandwidth", None)
                         or getattr(args, "vector_peak", None)):
        from ..errors import UserError
        raise UserError("--matrix-peak, --memory-bandwidth and --vector-peak declare one device's figures; "
                        "give one --device")
    return [declared_figures(load_device(i), args) for i in ids]


def add_dtypes(p):
    from ..dtypes import format_help

    p.epilog = format_help()
    p.add_argument("--weight-dtype", default=None, metavar="FMT",
                   help="weight storage format of the linear layers (formats below; default bf16, "
                        "or the checkpoint's native formats)")
    p.add_argument("--act-dtype", default="bf16", metavar="FMT",
                   help="activation and compute format (default bf16)")
    p.add_argument("--kv-dtype", default=None, metavar="FMT",
                   help="KV cache format (default: the activation format)")


def add_architecture_options(p):
    p.add_argument("--routing", default="uniform", metavar="MODEL|LOADS.json",
                   help="MoE routing model: uniform (default: the expected experts hit when every token "
                        "picks top-k at random; neither of the book's cases), balanced (the book's "
                        "'dispersed': routed tokens spread over min(E, N*k) experts), concentrated "
                        "(the book's 'concentrated': every token picks the same k experts), or a "
                        "JSON file with a list of relative loads per expert")
    p.add_argument("--mla", choices=MLA_CHOICES, default="auto",
                   help="MLA execution path: auto (default: each phase the cheaper of expanded and "
                        "absorbed by its roofline bound: a pass or prefill by its own, decode's "
                        "steps by their summed bound), absorbed (W_UK/W_UV folded, latent "
                        "cache), expanded (K/V up-projected per pass, latent cache) or naive "
                        "(expanded K/V cached, the HF reference)")
    p.add_argument("--new-kv", choices=NEW_KV, default="reread",
                   help="the pass's new K/V: reread (default; attention reads them back from the "
                        "cache after kv_store) or on-chip (attention takes them from the projections "
                        "and reads only the prior history, the convention of the book's tables)")
    p.add_argument("--delta-form", choices=DELTA_FORMS, default="auto",
                   help="linear-attention form (Gated DeltaNet, lightning attention): auto (chunked when a request has more than one new "
                        "token, recurrent for one; default), chunked or recurrent")


# The book's names for its two routing cases (its all-to-all tables call the
# concentrated case "hotspot"), answered with the option that selects each.
BOOK_ROUTING_NAMES = {"dispersed": "balanced", "hotspot": "concentrated"}


def routing(text):
    """(model, loads) from --routing: a model name or a JSON histogram file."""
    from ..errors import UserError, unknown
    from ..workload import ROUTING_MODELS

    if text in ROUTING_MODELS:
        return text, ()
    if text in BOOK_ROUTING_NAMES:
        raise UserError(f"unknown routing model '{text}': the book's '{text}' case is --routing "
                        f"{BOOK_ROUTING_NAMES[text]}")
    if not text.endswith(".json"):
        raise unknown("routing model", text, ROUTING_MODELS + ("FILE.json",))
    import math

    from ..load.models import read_json

    data = read_json(text, "routing file")
    loads = data.get("loads") if isinstance(data, dict) else data
    if (not isinstance(loads, list) or not loads
            or any(isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0 for x in loads)
            or not 0 < sum(loads) < math.inf):
        from ..errors import quote
        raise UserError(f"{quote(text)}: routing histogram must be a non-empty list of non-negative loads "
                        "(or {\"loads\": [...]}) with a positive, finite sum")
    return "histogram", tuple(loads)


def file_name(text):
    """A file name for an output option: not empty (an empty name would be ignored silently)."""
    if not text:
        raise argparse.ArgumentTypeError("needs a file name, got ''")
    return text


def add_output(p, formats=FORMATS):
    formats = tuple(formats) + (("html",) if "md" in formats else ())   # html: the Markdown as a report
    p.add_argument("--format", choices=formats, default=None,
                   help="output format (default: from --output's extension, else md)")
    p.add_argument("--output", type=file_name, metavar="FILE",
                   help="write to FILE instead of stdout (all or nothing: written to a temporary "
                        "file, renamed into place only when the command succeeds)")


def add_file(args, flag, path, text):
    """Queue a file the command writes besides its output (`--plot`); cli.main writes
    them all or none, once the command has succeeded (cli/files.py)."""
    args.files = getattr(args, "files", []) + [(flag, path, text)]


def workload(args, arch, batch, tokens, history):
    """A Workload from the shared dtype arguments (`workload.from_formats`)."""
    from ..workload import from_formats

    model, loads = routing(getattr(args, "routing", "uniform"))
    return from_formats(arch, weight_dtype=args.weight_dtype, act_dtype=args.act_dtype, kv_dtype=args.kv_dtype,
                        routing=model, routing_loads=loads, batch=batch, tokens=tokens, history=history,
                        logits=getattr(args, "logits", "last"), mla=getattr(args, "mla", "absorbed"),
                        delta_form=getattr(args, "delta_form", "auto"), new_kv=getattr(args, "new_kv", "reread"),
                        tensor_shapes=getattr(args, "tensor_shapes", "config"))


def output_format(args):
    """--format, else the extension of --output (.json, .csv, .md), else md."""
    if args.format is None:
        ext = os.path.splitext(args.output or "")[1].lower().lstrip(".")
        args.format = ext if ext in FORMATS + ("html",) else "md"
    return args.format


def emit(args, record, markdown, csv=None):
    """Render a record in the chosen format; `args.formats` (set by `reproduce`, never an option):
    a {format: text} dict of every format listed, all rendered from this one record."""
    formats = getattr(args, "formats", None)
    if formats:
        args.formats = None
        out = {}
        for fmt in formats:
            args.format = fmt
            out[fmt] = emit(args, record, markdown, csv)
        return out
    if args.format == "json":
        from ..render.table import to_json
        return to_json(record)
    if args.format == "csv":
        if csv is None:   # a command question whose record has no table form
            from ..errors import UserError
            raise UserError(f"--format csv: this {record.get('command', 'command')} question has no table form; "
                            "use --format json or md")
        return csv(record)
    if args.format == "html":   # a self-contained report: the full Markdown view, then SVG charts
        from ..render.html import page
        from ..render.table import view
        with view(full=True, explain=True):
            text = markdown(record)
        return page(record, text)
    return markdown(record)


# -- link options (parallel, train) ----------------------------------------

_TIME_UNITS = (("ns", 1e-9), ("us", 1e-6), ("\u00b5s", 1e-6), ("ms", 1e-3), ("s", 1.0),
               ("min", 60.0), ("h", 3600.0), ("d", 86400.0))
_RATE_UNITS = (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("B/s", 1.0))


def _scaled(text, units, what, high):
    """A non-negative number with an optional unit suffix, at most `high`."""
    raw = text.strip()
    factor = 1.0
    for suffix, f in units:
        if raw.endswith(suffix):
            raw, factor = raw[:-len(suffix)].strip(), f
            break
    try:
        value = float(raw) * factor
    except ValueError:
        value = None
    if value is None or not 0 <= value <= high:   # NaN fails every comparison
        raise argparse.ArgumentTypeError(f"must be {what}, got '{text}'")
    return value


def _time(text, what, high):
    """Seconds from a number with a time unit (ns, us, ms, s, min, h, d). A bare number is
    refused: '50' could be 50 ms or 50 s, and a silent guess is a wrong answer."""
    from ..errors import quote

    raw = text.strip()
    if raw and not raw.rstrip("0123456789.eE+-").strip() and any(c.isdigit() for c in raw):
        raise argparse.ArgumentTypeError(
            f"needs a unit, got {quote(text)}: write {raw}ms or {raw}s (units: ns, us, ms, s, min, h, d)")
    units = tuple(u for u in _TIME_UNITS if u[0] != "s") + (("s", 1.0),)   # 'ms' before 's'
    return _scaled(text, sorted(units, key=lambda u: -len(u[0])), what, high)


def duration(text):
    """A time limit (--tpot-limit, --ttft-limit, ...): 50ms, 2s, 0.5h, in seconds. The unit is
    required (a bare number is refused with the fix in the message); at most 10^6 s."""
    return _time(text, "a time with a unit such as 50ms or 2s, at most 1e6 s", 1e6)


def latency(text):
    """A per-step link latency (--alpha-up, --alpha-out): 0.6us, 2.7us, in seconds; the unit is
    required; at most 1 s."""
    return _time(text, "a latency with a unit such as 0.6us or 2.7us, from 0 to 1 s", 1.0)


# -- token counts ------------------------------------------------------------

# Suffixes of a token count, as vLLM's --max-model-len reads them (vllm-project/vllm:
# vllm/engine/arg_utils.py, human_readable_int): lower case decimal, upper case binary,
# so 32k = 32,000 and 32K = 32,768; a fraction only with a decimal suffix (25.6k).
TOKEN_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}


def _token_count(text, low):
    raw = text.strip()
    scale = TOKEN_SUFFIXES.get(raw[-1:], 1) if raw else 1
    number = raw[:-1] if scale != 1 else raw
    whole, point, part = number.partition(".")
    value = None
    if len(number) <= 24 and digits(whole) is not None and not point:
        value = digits(whole) * scale   # the common case: no fraction module needed
    elif (len(number) <= 24 and digits(whole) is not None and digits(part) is not None
            and raw[-1:] in "kmg"):
        from fractions import Fraction
        value = Fraction(number) * scale
    if value is None or getattr(value, "denominator", 1) != 1 or not low <= value <= MAX_COUNT:
        from ..errors import quote
        kind = "a positive" if low else "a non-negative"
        raise argparse.ArgumentTypeError(
            f"must be {kind} whole number of tokens up to 10^15 (8192, 32k = 32,000 or "
            f"32K = 32,768, as vLLM reads k/m/g and K/M/G), got {quote(text)}")
    return int(value)


def tokens(text):
    """A positive token count: 8192, 32k (32,000), 32K (32,768), 1M (1,048,576), 25.6k."""
    return _token_count(text, 1)


def tokens_or_zero(text):
    """A non-negative token count (a history, a shared prefix), suffixes as `tokens`."""
    return _token_count(text, 0)


_BUDGET_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12, "P": 10**15}


def token_budget(text):
    """A token total to train on: 15000000000000, 15T, 300B, 2.5T. Decimal suffixes K M B/G T P
    in either case, as token budgets are quoted ("15T tokens"); ASCII digits with at most one
    decimal point (no '_', ',' or other scripts' digits); at most 10^18."""
    from fractions import Fraction

    from ..errors import quote

    unit = text[-1:].upper() if text[-1:] and text[-1:].upper() in _BUDGET_SUFFIX else ""
    number = text[:len(text) - len(unit)]
    whole, point, part = number.partition(".")
    value = None
    if len(number) <= 40 and digits(whole) is not None and (not point or digits(part) is not None):
        value = Fraction(number) * _BUDGET_SUFFIX[unit]
    if value is None or value.denominator != 1 or not 1 <= value <= 10**18:
        raise argparse.ArgumentTypeError(f"must be a whole number of tokens up to 10^18 in ASCII digits "
                                         f"(e.g. 15T, 300B, 2.5T), got {quote(text)}")
    return int(value)


def bandwidth(text):
    """Bytes/s per direction: 450GB/s, 4.5e11."""
    value = _scaled(text, _RATE_UNITS, "a bandwidth such as 450GB/s or 4.5e11 (bytes/s)", 1e30)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive bandwidth, got '{text}'")
    return value


def add_link_options(group):
    """The options that override a device's link data, shared by parallel and train."""
    group.add_argument("--alpha-up", type=latency, default=None, metavar="T",
                       help="latency per step on the scale-up link (e.g. 0.6us; default: the device data)")
    group.add_argument("--alpha-out", type=latency, default=None, metavar="T",
                       help="latency per step on the scale-out link (e.g. 2.7us; default: the device data)")
    group.add_argument("--link-bw-up", type=bandwidth, default=None, metavar="BW",
                       help="scale-up bandwidth per direction per device (e.g. 450GB/s; default: the device data)")
    group.add_argument("--link-bw-out", type=bandwidth, default=None, metavar="BW",
                       help="scale-out bandwidth per direction per device (e.g. 50GB/s; default: the device data)")
    group.add_argument("--comm-efficiency", type=fraction, default=None, metavar="F",
                       help="fraction of every link bandwidth reached (default 1.0)")


def tile_view_asked(tiles, capacity, tile_flag):
    """Whether a tile view is asked for: `tile_flag` (repeatable, e.g. '--tile MxKxN') and
    --tile-capacity go together (gemm, attention)."""
    from ..errors import UserError

    if not tiles:
        if capacity is not None:
            raise UserError(f"--tile-capacity needs at least one {tile_flag}")
        return False
    if capacity is None:
        raise UserError(f"{tile_flag.split()[0]} needs --tile-capacity BYTES (the on-chip working capacity)")
    return True

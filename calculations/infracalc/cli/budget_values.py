"""The declared-value parsers the `budget` kinds share (byte counts, exact times, rates, shares, lists).
"""

import argparse
from fractions import Fraction

from . import common


def byte_count(text):
    """A non-negative byte count: 0, 1073741824, 1GiB."""
    return common._bytes(text, 0)


def _exact_time(text):
    """A declared duration with a unit, kept exact: 10ms, 0.02s, 1us, 0s, or a ratio such as 261/5s
    (a figure a source states as an exact fraction); at most 10^6 s."""
    import re
    from fractions import Fraction

    units = {"ns": Fraction(1, 10**9), "us": Fraction(1, 10**6), "ms": Fraction(1, 1000), "s": 1, "min": 60,
             "h": 3600, "d": 86400}
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|[0-9]+/0*[1-9][0-9]*)(ns|us|ms|s|min|h|d)",
                     text.strip()) if len(text) <= 48 else None
    value = Fraction(m.group(1)) * units[m.group(2)] if m else None
    if value is None or value > 10**6:
        raise argparse.ArgumentTypeError(f"must be a time with a unit such as 10ms, 0.02s or 261/5s (ns, us, ms, s, "
                                         f"min, h, d), at most 1e6 s, got '{text}'")
    return value


def _exact(text, what, low=0, high=10**30):
    """An exact non-negative number: 1, 0.75, 3/4, 10M (K, M, G = 10^3, 10^6, 10^9)."""
    from fractions import Fraction

    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(text[-1:].upper(), 1)
    try:
        value = Fraction(text[:-1] if scale > 1 else text) * scale
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or not low <= value <= high or len(text) > 40:
        raise argparse.ArgumentTypeError(f"must be {what}, got '{text}'")
    return value


def _share(text):
    """A fraction in (0, 1]: 1, 3/4, 0.25."""
    from fractions import Fraction

    value = _exact(text, "a fraction in (0, 1] such as 1, 3/4 or 0.25", 0, 1)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1] such as 1, 3/4 or 0.25, got '{text}'")
    return Fraction(value)


_EXACT_TIME_UNITS = (("min", 60), ("ns", Fraction(1, 10**9)), ("us", Fraction(1, 10**6)), ("ms", Fraction(1, 1000)),
                     ("h", 3600), ("s", 1))


def exact_seconds(text):
    """A declared time kept exact, unit required: 1/10s, 300ms, 0.2s, 5s (ns, us, ms, s, min, h)."""
    unit = next(((u, f) for u, f in _EXACT_TIME_UNITS if text.endswith(u)), None)
    try:
        value = Fraction(text[:-len(unit[0])]) * unit[1] if unit and len(text) <= 40 else None
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or not 0 <= value <= 10**9:
        raise argparse.ArgumentTypeError(f"must be a time with a unit such as 1/10s, 300ms or 5s, got '{text}'")
    return value


def exact_ns(text):
    """A declared time as whole nanoseconds: 20ms, 12ms, 1/20s (unit required)."""
    value = exact_seconds(text) * 10**9
    if value.denominator != 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of nanoseconds, got '{text}'")
    return int(value)


def exact_ns_list(text):
    """Up to 256 comma-separated `exact_ns` times: 1us,2us,3us."""
    items = text.split(",")
    if len(items) > 256:
        raise argparse.ArgumentTypeError("at most 256 times")
    return tuple(exact_ns(t.strip()) for t in items)


def _byte_rate(text):
    """Bytes per second: a size (50GB, 25GiB) or an exact positive number or fraction (256025000000000/25901553)."""
    from fractions import Fraction

    try:
        return Fraction(common.byte_size(text))
    except (argparse.ArgumentTypeError, ValueError):
        pass
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or not 0 < value <= 10**18 or len(text) > 60:
        raise argparse.ArgumentTypeError(f"must be a byte rate such as 50GB or an exact number such as "
                                         f"256025000000000/25901553 bytes/s, got '{text}'")
    return value


_RETRY_FIELDS = {"cost": "cost", "time": "seconds", "cpu": "cpu_seconds", "resident": "resident_bytes"}


def _retry_node(text):
    """ID,cost=C,time=T,cpu=T,resident=BYTES,TARGET=P,...: initial,cost=1/100,time=10s,cpu=3s,resident=2GiB,
    success=4/5,repair=3/25,upgrade=2/25 (targets are other nodes or success/failure)."""
    from ..analyses.retry_paths import TERMINALS

    name, *items = [t.strip() for t in text.split(",")]
    node = {"cost": Fraction(0), "seconds": Fraction(0), "cpu_seconds": Fraction(0), "resident_bytes": 0,
            "outcomes": []}
    bad = not name or name in TERMINALS or "=" in name or len(text) > 1000
    for item in items:
        key, eq, value = item.partition("=")
        if bad or not eq:
            bad = True
            break
        if key == "resident":
            node["resident_bytes"] = byte_count(value)
        elif key in ("time", "cpu"):
            node[_RETRY_FIELDS[key]] = exact_seconds(value)
        elif key == "cost":
            node["cost"] = Fraction(_exact(value, "a non-negative cost such as 1/100"))
        else:
            node["outcomes"].append((key, Fraction(_exact(value, "a probability such as 4/5", 0, 1))))
    if bad or not node["outcomes"]:
        raise argparse.ArgumentTypeError(f"must be ID,cost=C,time=T,cpu=T,resident=BYTES,TARGET=P,... with at least "
                                         f"one outcome (initial,cost=1/100,time=10s,success=4/5,repair=1/5), "
                                         f"got '{text}'")
    return name, node


def _params(q, required=True):
    q.add_argument("--params", type=common.token_budget, required=required, metavar="N",
                   help="nominal parameters (70B = 7 x 10^10, 1T; decimal suffixes)")


def _device(q):
    q.add_argument("--device", default="h100-sxm", metavar="ID|DEVICE.json",
                   help="device whose bf16 dense matrix peak, memory bandwidth and labelled memory apply "
                        "(default h100-sxm)")
    q.add_argument("--matrix-peak", type=common.format_rate, action="append", default=None,
                   metavar="FMT=FLOP/S", help="declare a matrix peak instead of the device's (e.g. bf16=989.4T)")
    q.add_argument("--memory-bandwidth", type=common.bandwidth, default=None, metavar="BW",
                   help="declare a memory bandwidth instead of the device's (e.g. 6.7TB/s)")
    q.add_argument("--memory-bytes", type=common.byte_size, default=None, metavar="BYTES",
                   help="capacity per device instead of its labelled memory (e.g. 80GB)")


def _list(parse):
    """A comma-separated list of values each read by `parse`, as a tuple."""
    def parse_list(text):
        if len(text) > 400:
            raise argparse.ArgumentTypeError("too long a list")
        return tuple(parse(item.strip()) for item in text.split(","))
    parse_list.__name__ = getattr(parse, "__name__", "list")
    return parse_list


def _history_model(text):
    from ..analyses.history import ids

    if text not in ids():
        from ..errors import suggest
        raise argparse.ArgumentTypeError(f"not in the catalogue: '{text}'"
                                         f"{suggest(text, ids()) or '; choose from ' + ', '.join(ids())}")
    return text


def _price(text):
    """A declared positive price in dollars: 2.5, 3."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e9:
        raise argparse.ArgumentTypeError(f"must be a positive price in dollars such as 2.5, got '{text}'")
    return value


def _device_figures(args, spec):
    """(device with any declared figures, capacity, bf16 dense peak)."""
    from ..dtypes import dtype
    from ..errors import UserError
    from ..load.hardware import load_device

    device = common.declared_figures(load_device(spec), args)
    peak = device.peak(dtype("bf16"))
    if peak is None:
        raise UserError(f"device {device.id} publishes no bf16 matrix peak; declare one with --matrix-peak")
    return device, args.memory_bytes or device.memory_label_bytes, peak

"""The declared-value parsers the `budget` kinds share (byte counts, exact times, rates, shares, lists).
"""

import argparse
from fractions import Fraction

from . import common


def byte_count(text):
    """A non-negative byte count: 0, 1073741824, 1GiB."""
    return common._bytes(text, 0)


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


# A declared time, kept exact: a number, an optional space, a unit. The number is a decimal (an exponent of
# at most two digits) or a ratio of whole numbers (a figure a source states as a fraction); ASCII digits, no sign.
_TIME_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?(?P<exponent>[0-9]+))?|[0-9]+/[0-9]+"
_TIME_UNITS = {"ns": Fraction(1, 10**9), "us": Fraction(1, 10**6), "\u00b5s": Fraction(1, 10**6),
               "ms": Fraction(1, 1000), "s": Fraction(1), "min": Fraction(60), "h": Fraction(3600),
               "d": Fraction(86400)}
TIME_FORMS = "a number and a unit such as 300ms, 0.02s, 2.5e-3s or 261/5s (ns, us, ms, s, min, h, d)"


def exact_seconds(text, high=10**9):
    """A declared time in seconds as an exact Fraction, from 0 to `high` (each caller's own cap): 300ms, 0.02s,
    .5s, 2.5e-3s, 261/5s, 5 s (units ns, us or \u00b5s, ms, s, min, h, d). Anything else is one line naming the
    problem and these forms."""
    import re

    raw = text.strip()
    match = re.fullmatch(rf"(?P<number>{_TIME_NUMBER}) ?(?P<unit>[a-z\u00b5]+)", raw) if len(raw) <= 48 else None
    problem = _time_problem(raw, match)
    value = None if problem else Fraction(match["number"]) * _TIME_UNITS[match["unit"]]
    if value is not None and value > high:
        problem = "is too large"
    if problem:
        from ..errors import quote
        raise argparse.ArgumentTypeError(f"{quote(text)} {problem}: give {TIME_FORMS}, at most {_cap(high)}")
    return value


def _time_problem(raw, match):
    """What is wrong with a time (None when nothing is)."""
    import re

    if len(raw) > 48:
        return "is longer than 48 characters"
    if raw.startswith(("+", "-")):
        return "has a sign"
    if match is None:
        return "has no unit" if re.fullmatch(_TIME_NUMBER, raw) else "is not a time"
    if match["unit"] not in _TIME_UNITS:
        return f"has an unknown unit '{match['unit']}'"
    if match["exponent"] and int(match["exponent"]) > 99:
        return "has an exponent of more than two digits"
    _, slash, denominator = match["number"].partition("/")
    return "divides by zero" if slash and int(denominator) == 0 else None


def _cap(high):
    """A cap in seconds as the messages print it: 10^6 s."""
    k = len(str(high)) - 1
    return f"10^{k} s" if high == 10**k else f"{high} s"


def seconds_at_most(high):
    """The argparse type of `exact_seconds` with the cap `high` (in seconds)."""
    def parse(text):
        return exact_seconds(text, high)
    parse.__name__ = "exact_seconds"
    return parse


def exact_ns(text):
    """A declared time as whole nanoseconds: 20ms, 12ms, 1/20s (`exact_seconds`, at most 10^9 s)."""
    value = exact_seconds(text) * 10**9
    if value.denominator != 1:
        from ..errors import quote
        raise argparse.ArgumentTypeError(f"{quote(text)} is not a whole number of nanoseconds: give a time such as "
                                         f"20ms, 833ns or 1/20s")
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

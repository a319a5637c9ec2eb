"""Human units for Markdown: GiB (2^30) for capacities, decimal for rates."""


def integer(n):
    """12,345,678 (exact, with thousands separators); None (not derivable) is 'unknown'."""
    return "unknown" if n is None else f"{n:,}"


def count(n, noun, plural=None):
    """'1 replica', '8 replicas', '12,345 tokens': n with thousands separators and the noun in
    the singular for exactly one, else the plural (noun + 's' unless given)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def _scaled(value, units):
    """value in the first of `units` ((factor, name), largest first) it reaches, to 3 decimals."""
    size = abs(value)
    for factor, unit in units:
        if size >= factor:
            return f"{value / factor:,.3f} {unit}"
    return f"{value:,.3f} {units[-1][1]}" if value else f"0 {units[-1][1]}"


def flops(n):
    """FLOPs in decimal units: 1.234 TFLOP."""
    return _scaled(n, ((1e18, "EFLOP"), (1e15, "PFLOP"), (1e12, "TFLOP"), (1e9, "GFLOP"),
                       (1e6, "MFLOP"), (1e3, "kFLOP"), (1, "FLOP")))


_BINARY = ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B"))


def nbytes(n):
    """Bytes in binary units: 1.500 GiB (each nonzero count formatted once per process, as `seconds`)."""
    text = _NBYTES.get(n)
    if text is None:
        text = _scaled(n, _BINARY)
        if n and len(_NBYTES) < 4096:
            _NBYTES[n] = text
    return text


_NBYTES = {}


def rate_flops(x):
    """TFLOP/s; None (no published peak) is 'unknown'."""
    return "unknown" if x is None else f"{x / 1e12:,.1f} TFLOP/s"


def rate_bytes(x):
    return f"{x / 1e9:,.0f} GB/s"


def seconds(s):
    """Seconds in the unit that reads best: 12.345 ms. Each nonzero value is formatted once per
    process (a deep pipeline's tables repeat a few values thousands of times)."""
    text = _SECONDS.get(s)
    if text is None:
        if s is None:
            return "-"
        if s >= 1:
            text = f"{s:,.3f} s"
        elif s >= 1e-3:
            text = f"{s * 1e3:,.3f} ms"
        else:
            text = f"{s * 1e6:,.3f} us"
        if s and len(_SECONDS) < 4096:   # zero (and -0.0, which would share its entry) is not kept
            _SECONDS[s] = text
    return text


_SECONDS = {}


def ratio(x, digits=1):
    return "-" if x is None else f"{x:,.{digits}f}"


def decimal(x, digits=1):
    """12,345.6 (thousands separators, `digits` decimals); None is 'unknown'."""
    return "unknown" if x is None else f"{x:,.{digits}f}"


def percent(fraction):
    """0.5393 -> '53.9%'; None is 'unknown'."""
    return "unknown" if fraction is None else f"{100 * fraction:.1f}%"


def tokens_short(n):
    """A token total as budgets are quoted: 1T, 15T, 300B, 2.5T (exact, else the integer)."""
    for factor, suffix in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
        if n >= factor and (n * 10) % factor == 0:
            value = n / factor
            return f"{value:g}{suffix}"
    return f"{n:,}"

"""The one reader of JSON input files (model configs, device files, routing
histograms, the scenario list).

Whatever the file, a problem is a one-line UserError naming the path the user
gave: anything but a regular file (a FIFO would block, a device never end) is
refused before it is opened; a file over MAX_BYTES is refused unread; the text
is UTF-8 (a byte-order mark is accepted); the JSON must be strict: no NaN,
Infinity or number that overflows to it, no key given twice in one object (a
config with two values for one field is ambiguous), no nesting deeper than
MAX_DEPTH and no integer longer than MAX_DIGITS digits.
"""

import math
import os
import stat

from ..errors import UserError, quote

# No real input approaches these: the bundled configs are under 10 kB, and a
# layer_types list for the 65,536-layer maximum (load/config.py) takes about 1.5 MB.
MAX_BYTES = 8 * 2**20
MAX_DEPTH = 64            # Hugging Face configs nest 3 or 4 levels
MAX_DIGITS = 4300         # Python's own limit on int(str) (sys.get_int_max_str_digits)

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def regular_file(path, what="file"):
    """Refuse, without opening it, anything at `path` but an existing regular file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UserError(f"{what} not found: {quote(path)}") from None
    except (OSError, ValueError) as e:   # ValueError: an embedded NUL byte
        raise UserError(f"{what} {quote(path)}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise UserError(f"{what} {quote(path)} is {kind}, not a regular file")


class _Refused(Exception):
    """Raised inside the parser's hooks; turned into a UserError with the path."""


def _pairs(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise _Refused(f"key {quote(key)} appears twice in one object")
        obj[key] = value
    return obj


def _int(text):
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _Refused(f"an integer of {len(text.lstrip('-')):,} digits (at most {MAX_DIGITS:,})")
    return int(text)


def _float(text):
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {quote(text, 40)} is too large for a float")
    return value


def _constant(name):
    raise _Refused(f"{name} is not a JSON number")


def _depth_ok(value):
    """True when no list or object nests deeper than MAX_DEPTH (a walk one depth at a time,
    over the containers alone: a scenario list's thousands of strings are only looked at)."""
    level = [value] if isinstance(value, (list, dict)) else []
    depth = 1
    while level:
        if depth > MAX_DEPTH:
            return False
        inner = []
        for v in level:
            inner += [x for x in (v.values() if isinstance(v, dict) else v) if isinstance(x, (list, dict))]
        level, depth = inner, depth + 1
    return True


class _Strict:
    """The parser's settings as json.loads(text, object_pairs_hook=_pairs, parse_int=_int,
    parse_float=_float, parse_constant=_constant) gives them to the scanner."""
    strict = True
    object_hook = None
    object_pairs_hook = staticmethod(_pairs)
    parse_int = staticmethod(_int)
    parse_float = staticmethod(_float)
    parse_constant = staticmethod(_constant)


_WHITESPACE = " \t\n\r"   # what json's decoder skips around the document


def _loads(text):
    """json.loads(text) with the _Strict settings, errors included (json.JSONDecodeError, whose
    module is imported only then), through json's C scanner alone: the json package compiles six
    regular expressions as it loads (~5.8 M instructions, every command that reads a file).
    Without the C scanner (another Python), json.loads itself."""
    try:
        from _json import make_scanner
    except ImportError:
        import json
        return json.loads(text, object_pairs_hook=_pairs, parse_int=_int, parse_float=_float,
                          parse_constant=_constant)
    if text.startswith("\ufeff"):
        from json import JSONDecodeError
        raise JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        try:
            value, end = make_scanner(_Strict)(text, start)
        except SystemError:   # a syntax error: the scanner raises json.decoder's error only once it is loaded
            import json.decoder   # noqa: F401
            value, end = make_scanner(_Strict)(text, start)
    except StopIteration as e:
        from json import JSONDecodeError
        raise JSONDecodeError("Expecting value", text, e.value) from None
    end = len(text) - len(text[end:].lstrip(_WHITESPACE))
    if end != len(text):
        from json import JSONDecodeError
        raise JSONDecodeError("Extra data", text, end)
    return value


def _malformed(e):
    """True for json.JSONDecodeError (a ValueError whose module may not be loaded)."""
    from json import JSONDecodeError
    return isinstance(e, JSONDecodeError)


def read_json(path, what="file"):
    """Parse the JSON file at `path` under the rules of this module."""
    regular_file(path, what)
    where = quote(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):   # replaced since the check
                raise UserError(f"{what} {where} is not a regular file")
            raw = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise UserError(f"{where}: cannot read: {e.strerror or e}") from None
    if len(raw) > MAX_BYTES:
        raise UserError(f"{where}: larger than {MAX_BYTES // 2**20} MiB, far beyond any real "
                        "config or device file; refused unread")
    try:
        # = raw.decode("utf-8-sig"), error offsets included (that codec decodes the bytes after the
        # mark), without importing the utf_8_sig codec module (~1 M instructions, every command)
        text = (raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw).decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{where}: not UTF-8 text (byte {e.start}: {e.reason})") from None
    try:
        data = _loads(text)
    except _Refused as e:
        raise UserError(f"{where}: {e}") from None
    except ValueError as e:
        if not _malformed(e):
            raise
        raise UserError(f"{where}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        data = _Refused
    # Nesting depth is at most the number of opening brackets (those inside strings only
    # add to the count), so a text with few of them needs no walk (every bundled file).
    if data is _Refused or (text.count("[") + text.count("{") > MAX_DEPTH and not _depth_ok(data)):
        raise UserError(f"{where}: lists or objects nested more than {MAX_DEPTH} deep")
    return data

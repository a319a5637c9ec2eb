"""Markdown tables, CSV and JSON serialization."""

from operator import itemgetter

from ..errors import one_line


def inline(value):
    """Text from an input file (a device's id or name, a model id) for one
    Markdown line: newlines, terminal escapes and other control characters
    shown escaped as repr would, so the text cannot end the line or reach the
    terminal raw."""
    return one_line(str(value))


def shown(record):
    """A model or device record whose `id` and `name` are shown through `inline`
    (for the Markdown lines that name them)."""
    return dict(record, **{k: inline(record[k]) for k in ("id", "name") if k in record})


def cell(value):
    """One Markdown table cell: `inline`, and '|' escaped so it cannot end the cell (a table
    of a deep pipeline has thousands of cells: the common case, printable text without '|',
    is returned as it is)."""
    text = value if type(value) is str else str(value)
    if not text.isprintable():
        text = one_line(text)
    return text.replace("|", "\\|") if "|" in text else text


def _cells(row):
    """[cell(c) for c in row], with the common case (printable text without '|' in every
    cell) checked once for the whole row."""
    texts = list(map(str, row))   # str(c) is c itself for a str
    joined = "".join(texts)
    if joined.isprintable() and "|" not in joined:
        return texts
    return [cell(c) for c in texts]


def rejection_reasons(rejected):
    """Why a search admitted no layout, its reasons largest first ('' when none was
    considered): [{"reason", "layouts"}, ...] from the search record."""
    from .units import count

    return "; ".join(f"{count(r['layouts'], 'layout')}: {r['reason']}" for r in
                     sorted(rejected, key=lambda r: -r["layouts"]))


def no_layout_line(devices, rejected):
    """The verdict of a search that admitted no layout, naming its reasons rather than
    blaming the model."""
    from .units import count

    why = rejection_reasons(rejected) or "none considered"
    return f"**No layout of {count(devices, 'device')} is admitted: {why}.**"


# The default Markdown view fits a terminal of WIDTH columns: a table wider than that is
# shown as several tables of its columns, each repeating the first (the row's name), and a
# cell longer than LONG_CELL is cut at a clause or word and given in full in a note under the
# table. `--full` keeps every table whole and every cell in full (the wide view).
WIDTH = 100
LONG_CELL = 44


class _View:
    full = False
    explain = False


def view(full=False, explain=False):
    """Context manager: render the Markdown of one command in the full (wide) view or not, with
    the conventions in full (--explain) or as one line."""
    import contextlib

    @contextlib.contextmanager
    def scope():
        before = _View.full, _View.explain
        _View.full, _View.explain = bool(full), bool(explain)
        try:
            yield
        finally:
            _View.full, _View.explain = before

    return scope()


def conventions(items, title="Conventions"):
    """The conventions section, after the results: each statement's first sentence, and every
    statement in full with --explain (the manual, docs/, states them too)."""
    if _View.explain:
        return [f"## {title}", "", *[f"- {c}" for c in items], ""]
    return [f"## {title}", "", *[f"- {_first_sentence(c)}" for c in items], "",
            "(First sentences; `--explain` prints every convention in full.)", ""]


def _first_sentence(text):
    """text up to the end of its first sentence (a '. ' after at least 20 characters)."""
    at = text.find(". ", 20)
    return text if at < 0 else text[:at + 1]


def _short(text, limit):
    """text cut to at most `limit` characters at a clause, else a word, boundary, + '...';
    bold (**...**) and code (`...`) marks are kept around the cut text."""
    for mark in ("**", "`"):
        if len(text) > 2 * len(mark) and text.startswith(mark) and text.endswith(mark):
            return mark + _short(text[len(mark):-len(mark)], limit - 2 * len(mark)) + mark
    for stop in (" (", ": ", "; ", ", ", " = "):
        at = text.find(stop)
        if 8 <= at <= limit - 3:
            return text[:at] + "..."
    cut = text.rfind(" ", 0, limit - 3)
    return text[:cut if cut >= 8 else limit - 3] + "..."


def _width(widths):
    return sum(widths) + 3 * len(widths) + 1


def _lines(header, rows, align, widths):
    """The table's lines: each cell padded to its column's width (right- or left-aligned;
    one printf-style format per table, filled row by row: '%12s' pads as '{:>12}' does, and
    costs about half as much to fill)."""
    line = "| " + " | ".join(f"%{'' if a == 'r' else '-'}{w}s" for a, w in zip(align, widths)) + " |"
    sep = "| " + " | ".join("-" * (w - 1) + ":" if a == "r" else "-" * w
                            for a, w in zip(align, widths)) + " |"
    return [line % tuple(header), sep] + [line % tuple(r) for r in rows]


def _groups(widths):
    """Column groups, each led by column 0, that fit WIDTH (a group holds at least one more)."""
    groups, current = [], [0]
    for i in range(1, len(widths)):
        if len(current) > 1 and _width([widths[j] for j in current + [i]]) > WIDTH:
            groups.append(current)
            current = [0]
        current.append(i)
    return groups + [current]


def markdown_table(header, rows, align=None):
    """A GitHub-flavoured table; align is a string of 'l'/'r' per column; every cell goes
    through `cell`. The full view (--full) is one table of every cell in full. The default
    view pads the columns so that the table reads as plain text and fits WIDTH columns: a
    wider table has its cells longer than LONG_CELL cut (in full in a numbered note below)
    and is shown as several tables of its columns, each led by the first."""
    align = align or "l" + "r" * (len(header) - 1)
    header = _cells(header)
    rows = [_cells(row) for row in rows]
    if _View.full:
        sep = ["---:" if a == "r" else "---" for a in align]
        return "\n".join("| " + " | ".join(r) + " |" for r in [header, sep] + rows)

    def widths():
        return [max(3, max(map(len, column))) for column in zip(header, *rows)]

    notes = []
    w = widths()
    if _width(w) > WIDTH:
        def fit(text):
            notes.append(text)
            return f"{_short(text, LONG_CELL - 5)} [{len(notes)}]"

        header = [c if len(c) <= LONG_CELL else fit(c) for c in header]
        rows = [row if max(map(len, row)) <= LONG_CELL else [c if len(c) <= LONG_CELL else fit(c) for c in row]
                for row in rows]
        if notes:
            w = widths()
    out = []
    groups = _groups(w)
    for g in groups:
        if len(groups) == 1:
            part = rows
        else:   # each group's columns of every row (itemgetter: a tuple per row, in C)
            get = itemgetter(*g)
            part = [get(r) for r in rows] if len(g) > 1 else [[r[g[0]]] for r in rows]
        out += ([""] if out else []) + _lines([header[i] for i in g], part, [align[i] for i in g],
                                              [w[i] for i in g])
    if notes:
        out += [""] + [f"[{n}] {text}" for n, text in enumerate(notes, 1)]
    return "\n".join(out)


def to_json(record):
    """Stable JSON: insertion-ordered keys, no NaN/Infinity, trailing newline.

    The text of json.dumps(record, indent=2, allow_nan=False, ensure_ascii=False), written by
    one recursive function into a list: CPython before 3.13 has no C encoder for an indented
    dump, and its Python one (a generator per nesting level) took 13 ms for a 126-stage
    pipeline's record; this takes about half. Strings go through json's own (C) string
    encoder. tests/test_json_writer.py compares the two on every stored JSON result and on
    the edge cases (empty containers, non-string keys, subclasses, NaN, unknown types)."""
    out = []
    _json_value(record, "\n", out.append)
    out.append("\n")
    return "".join(out)


def _json_value(o, indent, add):
    t = type(o)
    if t is str:
        add(_json_string(o))
    elif t is int:
        add(int.__repr__(o))
    elif t is dict:
        if not o:
            add("{}")
            return
        inner = indent + "  "
        sep = "{" + inner
        for k, v in o.items():
            add(sep)
            add(_json_string(k if type(k) is str else _json_key(k)))
            add(": ")
            _json_value(v, inner, add)
            sep = "," + inner
        add(indent)
        add("}")
    elif t is list or t is tuple:
        if not o:
            add("[]")
            return
        inner = indent + "  "
        sep = "[" + inner
        for v in o:
            add(sep)
            _json_value(v, inner, add)
            sep = "," + inner
        add(indent)
        add("]")
    elif o is None:
        add("null")
    elif o is True:
        add("true")
    elif o is False:
        add("false")
    elif isinstance(o, float):
        add(_json_float(o))
    elif isinstance(o, str):
        add(_json_string(o))
    elif isinstance(o, int):
        add(int.__repr__(o))
    elif isinstance(o, dict):
        _json_value(dict(o), indent, add)
    elif isinstance(o, (list, tuple)):
        _json_value(list(o), indent, add)
    else:
        raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _json_float(x):
    if x != x or x in (_INF, -_INF):
        raise ValueError("Out of range float values are not JSON compliant: " + repr(x))
    return float.__repr__(x)


def _json_key(k):
    """A non-string key as json.dumps writes it."""
    if isinstance(k, str):
        return str.__str__(k)
    if isinstance(k, float):
        return _json_float(k)
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        return int.__repr__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


_INF = float("inf")
try:   # json.encoder.encode_basestring (ensure_ascii=False): the C encoder where built, without
    from _json import encode_basestring as _json_string   # importing json (its regexes: ~5.8 M instructions)
except ImportError:
    from json.encoder import encode_basestring as _json_string


def to_csv(header, rows):
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(["" if c is None else c for c in row] for row in rows)
    return buf.getvalue()


def records_to_csv(records, columns=()):
    """CSV of a list of flat dicts sharing keys (the first one's order); with no
    records, the header `columns` alone."""
    header = list(records[0]) if records else list(columns)
    return to_csv(header, [[r.get(k) for k in header] for r in records])

"""Markdown tables, CSV and JSON serialization."""

import json

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
    text = one_line(value if type(value) is str else str(value))
    return text.replace("|", "\\|") if "|" in text else text


def markdown_table(header, rows, align=None):
    """A GitHub-flavoured table; align is a string of 'l'/'r' per column; every
    cell goes through `cell`."""
    align = align or "l" + "r" * (len(header) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(map(cell, header)) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in rows]
    return "\n".join(lines)


def to_json(record):
    """Stable JSON: insertion-ordered keys, no NaN/Infinity, trailing newline."""
    return json.dumps(record, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


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

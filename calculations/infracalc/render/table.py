"""Markdown tables, CSV and JSON serialization."""

import json


def markdown_table(header, rows, align=None):
    """A GitHub-flavoured table; align is a string of 'l'/'r' per column."""
    align = align or "l" + "r" * (len(header) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
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

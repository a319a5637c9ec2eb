"""Rewrite the tables the docs copy from `validate`: docs/validation.md's efficiency spread and
docs/prediction.md's accuracy per family.

Run after a change that moves a validate figure or adds a case: `python3 scripts/validation_tables.py`
(prints the pages it rewrote). The rows are the ones tests/test_docs.py checks; the prose around the
tables (corpus counts, ranges) is written by hand.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from support import corpus  # noqa: E402
from test_docs import DOCS, VALIDATION_TABLES, table_rows  # noqa: E402


def main():
    rec = corpus()
    for page, header, rows in VALIDATION_TABLES:
        path = os.path.join(DOCS, page)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        old = "\n".join(table_rows(text, header))
        new = "\n".join(rows(rec))
        if old != new:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace(old, new, 1))
            print("rewrote", os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main()

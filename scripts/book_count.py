"""Rewrite the **Count:** line of calculations/results/book/README.md from its coverage table.

Run after editing or merging coverage rows: `python3 scripts/book_count.py` (prints the new line).
The rule is the one tests/test_book_coverage.py checks: one count per status, in its order.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from test_book_coverage import BOOK, STATUSES, coverage_rows  # noqa: E402


def main():
    path = os.path.join(BOOK, "README.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    _, rows = coverage_rows(text)
    counts = {s: 0 for s in STATUSES}
    for cells in rows:
        counts[cells[2].strip("*")] += 1
    line = "**Count: %d groups: %s.**" % (len(rows), ", ".join(f"{counts[s]} {s}" for s in STATUSES))
    new, n = re.subn(r"\*\*Count: [^\n]*\*\*", line, text, count=1)
    if n != 1:
        sys.exit("book_count: no **Count:** line in " + path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    print(line)


if __name__ == "__main__":
    main()

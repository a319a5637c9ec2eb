"""The coverage table of calculations/results/book/README.md is true to the stored results.

Every row of the table (one per result group of the book's calculator) has a status; a row that
claims figures (exact, exact with a convention, partial) names stored scenarios, and each name
(a `*` matching several) matches a scenario of calculations/results/book/scenarios.json; a pending
row names the issue that builds it; an out-of-scope row gives its reason; the count line above the
table is the table's own count.
"""

import fnmatch
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import ROOT  # noqa: E402

BOOK = os.path.join(ROOT, "calculations", "results", "book")
STATUSES = ("exact", "exact, convention", "partial", "pending", "out of scope")
COVERED = STATUSES[:3]


def coverage_rows(text):
    """[(chapter, group, status, scenario names, details)] of the table under '## Coverage'."""
    section = text.split("## Coverage", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.split("\n"):
        if not line.startswith("| ") or line.startswith(("| ch. |", "| ---")):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        rows.append(cells)
    return section, rows


def scenario_names():
    with open(os.path.join(BOOK, "scenarios.json"), encoding="utf-8") as f:
        return [s["name"] for s in json.load(f)["scenarios"]]


class CoverageTable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(BOOK, "README.md"), encoding="utf-8") as f:
            cls.section, cls.rows = coverage_rows(f.read())
        cls.names = scenario_names()

    def test_every_row_has_five_cells_and_a_status(self):
        self.assertGreater(len(self.rows), 100)
        for cells in self.rows:
            with self.subTest(row=cells[:2]):
                self.assertEqual(len(cells), 5, cells)
                self.assertRegex(cells[0], r"^\d+$")
                m = re.fullmatch(r"\*\*(.+?)\*\*", cells[2])
                self.assertIsNotNone(m, f"no status: {cells[2]!r}")
                self.assertIn(m.group(1), STATUSES)
                self.assertTrue(cells[4] and cells[4] != "—", "a row needs its figures or its reason")

    def test_covered_rows_name_stored_scenarios(self):
        for cells in self.rows:
            status = cells[2].strip("*")
            names = re.findall(r"`([^`]+)`", cells[3])
            with self.subTest(group=cells[1]):
                if status in COVERED:
                    self.assertTrue(names, "a covered row names the scenarios that regenerate it")
                for pattern in names:
                    self.assertTrue(fnmatch.filter(self.names, pattern),
                                    f"{pattern!r} matches no scenario of book/scenarios.json")
                if status == "pending":
                    self.assertRegex(cells[4], r"issue \w+")

    def test_count_line_is_the_tables(self):
        counts = {s: 0 for s in STATUSES}
        for cells in self.rows:
            counts[cells[2].strip("*")] += 1
        expected = "**Count: %d groups: %s.**" % (len(self.rows), ", ".join(f"{counts[s]} {s}" for s in STATUSES))
        self.assertIn(expected, self.section)

    def test_groups_are_unique(self):
        groups = [cells[1] for cells in self.rows]
        self.assertEqual(len(groups), len(set(groups)))


if __name__ == "__main__":
    unittest.main()

"""The README and docs/: size, links that resolve, examples that are real output, and no
statement kept in two places."""

import json
import os
import re
import shlex
import unittest

from support import ROOT, corpus, run_cli

README = os.path.join(ROOT, "README.md")
DOCS = os.path.join(ROOT, "docs")


def doc_files():
    yield README
    yield os.path.join(ROOT, "CHANGELOG.md")
    for name in sorted(os.listdir(DOCS)):
        if name.endswith(".md") and name != "printed-conventions.md":   # generated from the tool
            yield os.path.join(DOCS, name)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def examples(text):
    """(argv, shown lines) for each fenced block that starts with `$ python3 calculations/calc.py`."""
    for block in re.findall(r"^```\n(.*?)^```", text, flags=re.M | re.S):
        lines = block.rstrip("\n").split("\n")
        if lines[0].startswith("$ python3 calculations/calc.py "):
            argv = shlex.split(lines[0][len("$ python3 calculations/calc.py "):])
            yield argv, [line for line in lines[1:] if line.strip() and line != "..."]


def table_rows(text, header):
    """The body rows of the one Markdown table whose header line starts with `header`."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith(header)]
    if len(starts) != 1:
        raise AssertionError(f"{len(starts)} tables start with {header!r}")
    rows = []
    for line in lines[starts[0] + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def target_met(median, p90):
    """docs/prediction.md's column: 'yes', or 'no' with the figures that miss."""
    missed = [name for name, value, limit in (("median", median, 0.10), ("p90", p90, 0.25)) if value > limit]
    return "yes" if not missed else "no" if len(missed) == 2 else f"no ({missed[0]})"


def spread_rows(rec):
    """docs/validation.md's efficiency spread, one row per validate `spread` record."""
    return [f"| {r['kind']} | {r['device']} | {r['formats']} | {r['cases']} | {r['min_ratio']:.3f} | "
            f"{r['median_ratio']:.3f} | {r['max_ratio']:.3f} |" for r in rec["spread"]]


def accuracy_rows(rec):
    """docs/prediction.md's accuracy table, one row per validate `accuracy` record."""
    return [f"| {a['family']} | {a['cases']} | {100 * a['median_abs_error']:.1f}% | {100 * a['p90_abs_error']:.1f}% | "
            f"{target_met(a['median_abs_error'], a['p90_abs_error'])} |" for a in rec["accuracy"]]


# (page, the table's header start, its rows from validate's record)
VALIDATION_TABLES = (("validation.md", "| kind | device |", spread_rows),
                     ("prediction.md", "| family | cases |", accuracy_rows))


class ReadmeTest(unittest.TestCase):
    def test_readme_is_short(self):
        self.assertLessEqual(os.path.getsize(README), 12 * 1024)

    def test_readme_examples_are_real_output(self):
        # Every line the README shows under a command is a line of that command's output
        # ("..." marks what is trimmed), so the examples stay true as the tool changes.
        found = list(examples(read(README)))
        self.assertGreaterEqual(len(found), 3)
        for argv, shown in found:
            status, out, err = run_cli(*argv)
            self.assertEqual(status, 0, (argv, err))
            lines = set(out.split("\n"))
            for line in shown:
                self.assertIn(line, lines, " ".join(argv))


class DocsTest(unittest.TestCase):
    def test_links_resolve(self):
        for path in doc_files():
            for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", read(path)):
                if "://" in target:
                    continue
                full = os.path.normpath(os.path.join(os.path.dirname(path), target))
                self.assertTrue(os.path.exists(full), f"{os.path.relpath(path, ROOT)}: {target}")

    def test_no_statement_in_two_places(self):
        # A sentence of some length appears in one page only (tables and code excluded).
        seen = {}
        for path in doc_files():
            prose = re.sub(r"^```.*?^```", "", read(path), flags=re.M | re.S)
            prose = "\n".join(line for line in prose.split("\n") if not line.startswith(("|", "#")))
            sentences = (s for paragraph in re.split(r"\n\s*\n", prose)
                         for s in re.split(r"(?<=[.;:])\s+", " ".join(paragraph.split())))
            for sentence in sentences:
                if len(sentence) < 90:
                    continue
                where = seen.setdefault(sentence, os.path.relpath(path, ROOT))
                self.assertEqual(where, os.path.relpath(path, ROOT), sentence)

    def test_printed_conventions_page_is_the_tools_own(self):
        # docs/printed-conventions.md is generated from the tool: the docs and the output come
        # from one source (regenerate with `python3 scripts/conventions_page.py`)
        import importlib.util
        spec = importlib.util.spec_from_file_location("conventions_page",
                                                      os.path.join(ROOT, "scripts", "conventions_page.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        page = module.page()   # (runs every command it lists, validate over the corpus among them: once)
        self.assertEqual(read(os.path.join(DOCS, "printed-conventions.md")), page,
                         "run python3 scripts/conventions_page.py (a command's or a budget kind's conventions "
                         "changed, or a kind was added)")
        # every budget kind has its list there, and it is the one a call prints (inputs do not change it)
        from infracalc.cli.budget import KINDS
        from infracalc.render import budget
        self.assertEqual(len(re.findall(r"^### `budget ", page, re.M)), len(KINDS) + 1)
        status, out, err = run_cli("budget", "wan-loss", "--rtt", "1s", "--knee", "1Mb/s", "--loss", "1/4",
                                   "--request-bytes", "1000", "--format", "json")
        self.assertEqual(status, 0, err)
        printed = json.loads(out)["conventions"]
        self.assertEqual(printed, budget.conventions("wan-loss"))

    def test_validation_tables_are_validates_own(self):
        # The tables of figures the docs copy from `validate` equal what it prints now: the
        # efficiency spread (docs/validation.md) and the accuracy per family (docs/prediction.md,
        # its "target met" column by the stated target: median <= 10%, p90 <= 25%).
        # Regenerate both with `python3 scripts/validation_tables.py`.
        rec = corpus()
        for page, header, rows in VALIDATION_TABLES:
            self.assertEqual(table_rows(read(os.path.join(DOCS, page)), header), rows(rec),
                             f"docs/{page}: a table is not validate's (run python3 scripts/validation_tables.py)")

    def test_every_bundled_device_is_listed(self):
        # docs/hardware.md's "Bundled:" list is written by hand: every device file's id must be on it
        text = " ".join(read(os.path.join(DOCS, "hardware.md")).split())
        folder = os.path.join(ROOT, "calculations", "hardware")
        listed = text[text.index("Bundled:"):text.index("Conventions: dense peaks")]
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json"):
                self.assertRegex(listed, rf"(?<![\w-]){re.escape(name[:-5])}(?![\w-])", name)

    def test_every_command_has_a_page(self):
        from infracalc.cli import COMMANDS
        pages = set(os.listdir(DOCS))
        for name in COMMANDS:
            page = "validation.md" if name == "validate" else f"{name}.md"
            self.assertIn(page, pages, name)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Write docs/printed-conventions.md: the conventions each command prints (with --explain), and
every `budget` kind's, taken from the tool itself, so that the docs and the output come from one source.
tests/test_docs.py fails when the page and the tool disagree; rerun this script then."""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "calculations"))

# One representative call per command that states conventions (JSON: the 'conventions' list).
CALLS = [
    ("forward", ["forward", "--model", "qwen3-8b"]),
    ("kv", ["kv", "--model", "qwen3-8b", "--context", "4096"]),
    ("decode", ["decode", "--model", "qwen3-8b", "--input-len", "128", "--output-len", "8"]),
    ("parallel", ["parallel", "--model", "llama-3.1-8b", "--tp", "2", "--input-len", "128", "--output-len", "8"]),
    ("train", ["train", "--model", "llama-3.1-8b", "--devices", "8", "--seq", "4096", "--global-batch", "64"]),
    ("gemm", ["gemm", "--m", "256", "--k", "4096", "--n", "4096"]),
    ("serve", ["serve", "--model", "llama-3.1-8b", "--input-len", "1024", "--output-len", "128"]),
    ("validate", ["validate"]),
]


def page():
    from infracalc.cli import render

    out = ["# Conventions as the tool prints them", "",
           "Generated from the tool by `scripts/conventions_page.py` (a test keeps it in step): the",
           "`conventions` list of each command's JSON, which its Markdown prints after the results",
           "(each one's first sentence by default, in full with `--explain`). The manual's pages",
           "explain them at length; this page is their text.", ""]
    for name, argv in CALLS:
        rec = json.loads(render(argv + ["--format", "json"]))
        items = rec.get("conventions") or []
        out += [f"## `{name}`", "", f"`{' '.join(argv)}`", "", *[f"- {c}" for c in items], ""]
    return "\n".join(out + budget_kinds())


def budget_kinds():
    """`budget`: every kind's list (render/budget.conventions, the list each kind's JSON carries),
    in the order `budget --help` lists them; no call needed, the lists do not depend on the inputs."""
    from infracalc.cli.budget import KINDS
    from infracalc.render import budget

    out = ["## `budget`", "",
           "Each kind prints the same list whatever its inputs (`budget training` adds the cost rows",
           "below when given `--price-per-device-hour`).", ""]
    for kind in list(KINDS) + ["training-cost"]:
        title = "training, with --price-per-device-hour" if kind == "training-cost" else kind
        out += [f"### `budget {title}`", "", *[f"- {c}" for c in budget.conventions(kind)], ""]
    return out


if __name__ == "__main__":
    with open(os.path.join(ROOT, "docs", "printed-conventions.md"), "w", encoding="utf-8") as f:
        f.write(page())

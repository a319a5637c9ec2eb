"""The worked examples in README.md and docs/*.md are the tool's own output: in every code block
that opens with `$ python3 calculations/calc.py ...`, each line shown (blank lines and `...`
excepted, which stand for what is trimmed) appears in that command's output, in order. A
refit or a format change that leaves an example stale fails here, naming the file and line
(`python3 calculations/calc.py ...` prints what the example should show)."""

import glob
import os
import re
import shlex
import tempfile
import unittest

from support import ROOT, run_cli

PREFIX = "$ python3 calculations/calc.py "


def examples():
    """[(file, command line, shown lines)] of every worked example."""
    out = []
    for path in ["README.md"] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = f.read()
        for block in re.findall(r"```\n(.*?)```", text, re.S):
            lines = block.rstrip("\n").split("\n")
            if lines[0].startswith(PREFIX) and not lines[0].rstrip().endswith("\\"):
                out.append((os.path.relpath(os.path.join(ROOT, path), ROOT), lines[0], lines[1:]))
    return out


class WorkedExamples(unittest.TestCase):
    def test_every_shown_line_is_printed(self):
        found = examples()
        self.assertGreaterEqual(len(found), 5)
        with tempfile.TemporaryDirectory() as tmp:
            for path, command, shown in found:
                argv = shlex.split(command[len(PREFIX):])
                for i, a in enumerate(argv):   # files an example writes go to a temporary folder
                    if a in ("--plot", "--output") and i + 1 < len(argv):
                        argv[i + 1] = os.path.join(tmp, os.path.basename(argv[i + 1]))
                code, out, err = run_cli(*argv)
                printed = (out + err).split("\n")
                at = 0
                for line in shown:
                    if not line.strip() or line.strip() == "...":
                        continue
                    with self.subTest(example=f"{path}: {command[len(PREFIX):][:60]}", line=line[:80]):
                        near = [x for x in printed[at:] if x[:24] == line[:24]][:1]
                        self.assertTrue(line in printed[at:], f"{path}: the example shows a line the command does "
                                                              f"not print (or not in this order); it prints "
                                                              f"{near[0] if near else '-'!r}")
                        at = printed.index(line, at) + 1


if __name__ == "__main__":
    unittest.main()

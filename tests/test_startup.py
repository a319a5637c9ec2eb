"""Start-up laziness (the "Fast" standard: a command's own time under ~30 ms): what a command
does not use is not built. Each test checks the mechanism exactly, not a time."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402,F401  (support puts calculations/ on sys.path)

from infracalc import cli  # noqa: E402
from infracalc.cli import budget  # noqa: E402


class BudgetKinds(unittest.TestCase):
    def test_only_the_named_kinds_parser_is_made(self):
        # `budget` lists 75+ kinds; argparse looks up the one on the command line, and only that
        # one's parser exists afterwards (the help listing keeps every kind's line).
        parser = cli.Parser(prog="budget")
        budget.add_arguments(parser)
        sub = next(a for a in parser._actions if a.dest == "kind")
        parser.parse_args(["fp8-scale", "--block", "128"])
        made = [name for name in sub.choices if dict.__getitem__(sub.choices, name) is not None]
        self.assertEqual(made, ["fp8-scale"])
        self.assertEqual([a.dest for a in sub._choices_actions], list(budget.KINDS))


if __name__ == "__main__":
    unittest.main()

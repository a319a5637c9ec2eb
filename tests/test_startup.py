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

    def test_every_kind_has_its_options_and_its_run_in_its_home(self):
        # HOMES names the topic module of a kind (cli/budget_<topic>.py); the others are in budget.py,
        # whose run() computes the three nominal-model kinds itself
        import importlib
        for kind in budget.KINDS:
            with self.subTest(kind=kind):
                home = budget.HOMES.get(kind)
                module = importlib.import_module("infracalc.cli." + home) if home else budget
                for suffix in ("_arguments",) if kind in ("decode", "transfer", "training") else ("", "_arguments"):
                    function = budget.kind_function(kind, suffix)
                    self.assertIs(function, getattr(module, "_" + kind.replace("-", "_") + suffix))
        self.assertLessEqual(set(budget.HOMES), set(budget.KINDS))

    def test_a_kind_imports_only_its_own_topic_module(self):
        # parsing and running `budget fp8-scale` imports cli/budget_kernel.py and no other topic module
        import subprocess
        code = ("import sys\n"
                "from infracalc import cli\n"
                "from infracalc.cli import budget\n"
                "parser = cli.Parser(prog='budget')\n"
                "budget.add_arguments(parser)\n"
                "args = parser.parse_args(['fp8-scale', '--block', '128'])\n"
                "budget.kind_function(args.kind)(args)\n"
                "print(' '.join(sorted(m for m in sys.modules if m.startswith('infracalc.cli.budget_'))))")
        calc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "calculations")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=calc), check=True).stdout.split()
        self.assertIn("infracalc.cli.budget_kernel", out)
        for other in ("budget_training", "budget_media", "budget_model", "budget_net", "budget_cost"):
            self.assertNotIn("infracalc.cli." + other, out)


def modules_after(*argv):
    """The infracalc modules a fresh process has imported after running one command."""
    import subprocess
    code = ("import io, sys, contextlib\n"
            "from infracalc.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main({list(argv)!r})\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('infracalc'))))")
    calc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "calculations")
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=calc), check=True).stdout.split())


class TrainImports(unittest.TestCase):
    def test_a_layout_imports_no_search_ranking(self):
        # `train` on one layout ranks nothing: analyses.ranking is imported by --search alone, and
        # the binding stage comes from capacity (analyses.memory is the serving side's)
        one = modules_after("train", "--model", "qwen3-0.6b", "--seq", "128")
        self.assertIn("infracalc.analyses.train", one)   # not vacuous
        self.assertNotIn("infracalc.analyses.ranking", one)
        self.assertNotIn("infracalc.analyses.memory", one)
        search = modules_after("train", "--model", "qwen3-0.6b", "--seq", "128", "--devices", "2",
                               "--global-batch", "2", "--search")
        self.assertIn("infracalc.analyses.ranking", search)

    def test_parallel_on_a_layout_imports_no_search(self):
        # the layout search, its floors and the ranking are imported by --search (and serve's SLO
        # sizing) alone
        one = modules_after("parallel", "--model", "qwen3-0.6b", "--tp", "2", "--input-len", "16", "--output-len", "4")
        self.assertIn("infracalc.analyses.parallel.records", one)   # not vacuous
        for name in ("search", "bound"):
            self.assertNotIn("infracalc.analyses.parallel." + name, one)
        self.assertNotIn("infracalc.analyses.ranking", one)
        search = modules_after("parallel", "--model", "qwen3-0.6b", "--devices", "2", "--search", "--input-len", "16",
                               "--output-len", "4")
        self.assertIn("infracalc.analyses.parallel.search", search)


class BudgetImports(unittest.TestCase):
    def test_a_kind_loads_no_other_kinds_conventions_or_parsers(self):
        # render.budget resolves a kind's conventions when it runs (merge_numerics builds its FP8
        # table as it loads), hash-collision's time lists come from budget_values, not budget_net,
        # and analyses.nominal is imported by the three kinds budget.run computes itself
        got = modules_after("budget", "hash-collision", "--flows", "8", "--uplinks", "4")
        self.assertIn("infracalc.render.budget", got)   # not vacuous
        self.assertNotIn("infracalc.analyses.merge_numerics", got)
        self.assertNotIn("infracalc.cli.budget_net", got)
        self.assertNotIn("infracalc.analyses.nominal", got)   # the nominal-model kinds' (decode, ...)
        self.assertIn("infracalc.analyses.merge_numerics", modules_after("budget", "fp8-scale", "--block", "128"))


if __name__ == "__main__":
    unittest.main()

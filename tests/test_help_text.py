"""Help text states what the commands do (checked against the behaviour, not the code)."""

import os
import sys
import unittest

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(ROOT, "calculations"))



def help_of(command, option="--mla"):
    """The help string of one option of a subcommand (not the usage line or choices)."""
    import argparse
    from importlib import import_module
    p = argparse.ArgumentParser(prog=command)
    import_module(f"infracalc.cli.{command}").add_arguments(p)
    return next(a.help for a in p._actions if option in a.option_strings)


class MlaHelp(unittest.TestCase):
    def test_auto_does_not_claim_decode_is_always_absorbed(self):
        # decode --mla auto compares both paths over the decode steps (the output prints
        # "MLA path for the decode steps: absorbed (...) over expanded (...)"), so the help
        # may not say that decode steps are simply absorbed.
        for command in ("forward", "decode"):
            text = help_of(command)
            self.assertNotIn("decode steps absorbed", text, command)
            self.assertIn("summed bound", text, command)

    def test_kv_lists_every_path_it_accepts(self):
        # kv takes --mla absorbed|expanded|naive; the help names all three as paths
        # ("expanded K/V", the naive cache's contents, is not the expanded path).
        text = help_of("kv")
        for path in ("absorbed", "expanded", "naive"):
            self.assertRegex(text, rf"\b{path}\b(?! K/V)")


if __name__ == "__main__":
    unittest.main()

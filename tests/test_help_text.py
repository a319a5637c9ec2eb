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



class BookNames(unittest.TestCase):
    def test_routing_names_the_books_two_cases(self):
        # The book's "dispersed" (every expert touched) is balanced, its "concentrated" is
        # concentrated (the ledgers of tests/test_book.py check the figures); the default
        # uniform is neither, and the help must say so.
        for command in ("forward", "decode", "parallel"):
            text = help_of(command, "--routing")
            self.assertRegex(text, r"uniform \(default[^)]*neither of the book's cases\)", command)
            self.assertIn("balanced (the book's 'dispersed'", text, command)
            self.assertIn("concentrated (the book's 'concentrated'", text, command)

    def test_book_routing_names_point_to_the_option(self):
        # --routing dispersed / hotspot (the book's words) are not accepted silently as
        # something else: one line naming the option that selects the book's case, status 2.
        from support import run_cli
        for word, option in (("dispersed", "balanced"), ("hotspot", "concentrated")):
            status, _, err = run_cli("forward", "--model", "qwen3-30b-a3b", "--routing", word)
            self.assertEqual(status, 2)
            self.assertEqual(err.count("\n"), 1, err)
            self.assertIn(f"the book's '{word}' case is --routing {option}", err)

    def test_format_help_names_the_books_formats(self):
        # Every command's format list ends with the formats the book's tables use, each
        # a name the parser accepts and that sizes a [4096, 4096] weight as the book does.
        from infracalc.dtypes import BOOK_FORMATS, dtype, format_help
        help_text = format_help()
        self.assertIn("The book's tables use: ", help_text)
        for entry in BOOK_FORMATS:
            self.assertIn(entry, help_text)
        self.assertIn("int8-g128 (the book's '8-bit' weights", help_text)
        self.assertIn("int4-g128 (the book's '4-bit' weights", help_text)
        # payload + one BF16 scale per 128 (1000, the last short) values of each of 4096 rows
        self.assertEqual(dtype("int8-g128").nbytes((4096, 4096)), 4096 * 4096 + 4096 * 32 * 2)
        self.assertEqual(dtype("int4-g1000").nbytes((4096, 4096)), 4096 * 4096 // 2 + 4096 * 5 * 2)


class ParallelSearchBatchHelp(unittest.TestCase):
    def test_batches_the_search_tries(self):
        # With no --batch the throughput search tries pp micro-batches of 1, 4, 16, ...
        # requests while they fit: capacity 100 at pp 2 -> 2, 8, 32 (128 > 100); at pp 1
        # -> 1, 4, 16, 64. The help said "1, 2, 4, ... up to the capacity".
        from infracalc.analyses.parallel.search import search_batches
        self.assertEqual(search_batches(100, None, 2), [2, 8, 32])
        self.assertEqual(search_batches(100, None, 1), [1, 4, 16, 64])
        text = help_of("parallel", "--batch")
        self.assertNotIn("1, 2, 4", text)
        self.assertIn("pp x 1, 4, 16", text)


class MlaModelNote(unittest.TestCase):
    def test_note_matches_each_commands_default(self):
        # The DeepSeek loader's note is printed by every command. kv takes no `auto` (its
        # default is absorbed) and train has no --mla (naive form): the note may not tell
        # them "--mla auto (default ...)".
        from support import run_cli
        for argv in (("kv", "--model", "deepseek-v2-lite", "--context", "1024"),
                     ("train", "--model", "deepseek-v2-lite", "--seq", "128")):
            code, out, _ = run_cli(*argv)
            self.assertEqual(code, 0, argv)
            self.assertNotIn("--mla auto (default", out, argv[0])
            self.assertIn("kv to absorbed; train runs the naive form", out, argv[0])

if __name__ == "__main__":
    unittest.main()

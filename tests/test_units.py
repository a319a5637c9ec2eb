"""Shared argument parsers of cli/common.py: times take a unit, token counts take k/K suffixes
as vLLM reads them, token budgets take decimal suffixes."""

import argparse
import unittest

from support import run_cli

from infracalc.cli import common


class Durations(unittest.TestCase):
    def test_units(self):
        # 50 ms = 0.05 s; 2 s; 0.6 us = 6e-7 s; 1.5 min = 90 s; 0.5 h = 1800 s
        for text, seconds in (("50ms", 0.05), ("2s", 2.0), ("0.6us", 6e-7), ("1.5min", 90.0),
                              ("0.5h", 1800.0), ("250ns", 2.5e-7), ("50 ms", 0.05)):
            with self.subTest(text=text):
                self.assertAlmostEqual(common.duration(text), seconds, places=15)

    def test_a_bare_number_is_refused_with_the_fix(self):
        for text in ("50", "0.05", "1e-3"):
            with self.subTest(text=text):
                with self.assertRaises(argparse.ArgumentTypeError) as e:
                    common.duration(text)
                self.assertIn(f"needs a unit, got '{text}': write {text}ms or {text}s", str(e.exception))

    def test_garbage_and_range(self):
        for text in ("fast", "-1ms", "nanms", "infs", "2e6s", ""):
            with self.subTest(text=text):
                self.assertRaises(argparse.ArgumentTypeError, common.duration, text)
        self.assertRaises(argparse.ArgumentTypeError, common.latency, "2s")   # alpha at most 1 s

    def test_tpot_limit_on_the_command_line(self):
        argv = ("parallel", "--model", "llama-3.1-8b", "--devices", "2", "--search",
                "--input-len", "128", "--output-len", "8")
        status, out, err = run_cli(*argv, "--tpot-limit", "50")
        self.assertEqual((status, out), (2, ""))
        self.assertIn("argument --tpot-limit: needs a unit, got '50': write 50ms or 50s", err)
        status, out, err = run_cli(*argv, "--tpot-limit", "50ms")
        self.assertEqual(status, 0, err)


class TokenCounts(unittest.TestCase):
    def test_suffixes_as_vllm_reads_them(self):
        # lower case decimal, upper case binary (vllm/engine/arg_utils.py human_readable_int)
        for text, n in (("8192", 8192), ("32k", 32_000), ("32K", 32_768), ("1M", 1_048_576),
                        ("1m", 1_000_000), ("25.6k", 25_600), ("2G", 2**31), ("2g", 2 * 10**9)):
            with self.subTest(text=text):
                self.assertEqual(common.tokens(text), n)

    def test_refused(self):
        # a fraction with a binary suffix, a fraction of a token, zero, non-ASCII digits, 10^15 + 1
        for text in ("25.6K", "1.5", "0", "\u0661\u0660", "1_000", "1,000", "32x", "k", "", str(10**15 + 1)):
            with self.subTest(text=text):
                self.assertRaises(argparse.ArgumentTypeError, common.tokens, text)
        self.assertEqual(common.tokens_or_zero("0"), 0)

    def test_every_length_option_takes_them(self):
        status, out, err = run_cli("kv", "--model", "qwen3-8b", "--context", "32K", "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertIn('"context": 32768', out)
        status, out, err = run_cli("forward", "--model", "qwen3-8b", "--tokens", "1", "--history", "8K",
                                   "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertIn('"history": 8192', out)

    def test_budget_suffixes_are_decimal(self):
        self.assertEqual(common.token_budget("15T"), 15 * 10**12)
        self.assertEqual(common.token_budget("2.5t"), 25 * 10**11)
        self.assertEqual(common.token_budget("300B"), 300 * 10**9)


if __name__ == "__main__":
    unittest.main()

"""The one exact-time parser (cli/budget_values.exact_seconds) every `budget` kind reads declared times with:
each accepted form with its value as an exact Fraction worked by hand, each refusal with the problem its one
line names, and both caps the callers choose (10^6 s for the chapter-3 and chapter-10 step, stage and round
times; 10^9 s, the default, for request, retry and kernel times)."""

import argparse
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.cli.budget_values import exact_ns, exact_seconds, seconds_at_most  # noqa: E402

F = Fraction
# Accepted forms: text -> seconds, each by hand (1 ms = 1/1000 s, 1 us = 1/10^6 s, 1 min = 60 s, 1 d = 86,400 s).
ACCEPTED = {
    "0s": F(0),
    "5s": F(5),
    "300ms": F(3, 10),                    # 300 / 1000
    "0.02s": F(1, 50),
    ".5s": F(1, 2),                       # a decimal without a leading digit
    "1.s": F(1),                          # ... or without digits after the point
    "2.5e-3s": F(1, 400),                 # 25/10 x 1/1000
    "1E3ms": F(1),                        # exponent either case: 1000 ms
    "1e+2s": F(100),
    "261/5s": F(261, 5),                  # a ratio as a source states it: 52.2 s
    "1/3s": F(1, 3),                      # a ratio no decimal can write
    "0/5s": F(0),
    "1/010s": F(1, 10),                   # leading zeros in a denominator
    "833ns": F(833, 10**9),
    "10us": F(1, 10**5),
    "1\u00b5s": F(1, 10**6),              # the micro sign, as the float time options take it
    "2min": F(120),
    "2h": F(7200),
    "1d": F(86400),
    "5 ms": F(1, 200),                    # one space between the number and the unit
    " 50ms ": F(1, 20),                   # surrounding spaces dropped
}

# Refused: text -> the problem the line names (the valid forms follow it on the same line).
REFUSED = {
    "5": "has no unit",
    "0.5": "has no unit",
    "1/10": "has no unit",
    "": "is not a time",
    "x": "is not a time",
    "s": "is not a time",
    "5S": "is not a time",                # units are lower case
    "5  s": "is not a time",              # at most one space
    "5\ns": "is not a time",
    "1_000s": "is not a time",            # ASCII digits only, no separators ...
    "\u0661s": "is not a time",           # ... and no other script's digits
    "1.5/2s": "is not a time",            # a ratio of whole numbers only
    "+5s": "has a sign",
    "-0s": "has a sign",
    "5sec": "has an unknown unit 'sec'",
    "5m": "has an unknown unit 'm'",
    "1/0s": "divides by zero",
    "1/00s": "divides by zero",
    "1e100s": "has an exponent of more than two digits",
    "1e9999999s": "has an exponent of more than two digits",   # 10^9999999 would take seconds to build
    "0e-100s": "has an exponent of more than two digits",
    "1" * 48 + "s": "is longer than 48 characters",
}


class Accepted(unittest.TestCase):
    def test_forms_at_both_caps(self):
        for text, seconds in ACCEPTED.items():
            for high in (10**6, 10**9):
                value = exact_seconds(text, high)
                self.assertEqual((type(value), value), (Fraction, seconds), (text, high))

    def test_each_cap_is_inclusive(self):
        # 10^6 s = 1e6s = 1000000s; 10^9 s = 1e9s (the default cap); 11,574 d = 999,993,600 s <= 10^9 s.
        self.assertEqual(exact_seconds("1e6s", 10**6), 10**6)
        self.assertEqual(exact_seconds("1000000s", 10**6), 10**6)
        self.assertEqual(exact_seconds("1e9s"), 10**9)
        self.assertEqual(exact_seconds("11574d"), 999_993_600)
        self.assertEqual(seconds_at_most(10**6)("1e6s"), 10**6)
        self.assertEqual(seconds_at_most(10**6).__name__, "exact_seconds")

    def test_whole_nanoseconds(self):
        self.assertEqual(exact_ns("1/20s"), 50_000_000)
        self.assertEqual(exact_ns("833ns"), 833)
        self.assertEqual(exact_ns("2.5us"), 2500)


class Refused(unittest.TestCase):
    def message(self, text, high=10**9):
        with self.assertRaises(argparse.ArgumentTypeError) as caught:
            exact_seconds(text, high)
        return str(caught.exception)

    def test_each_problem_named_with_the_forms(self):
        for text, problem in REFUSED.items():
            for high, cap in ((10**6, "10^6 s"), (10**9, "10^9 s")):
                self.assertEqual(self.message(text, high),
                                 f"{text!r} {problem}: give a number and a unit such as 300ms, 0.02s, 2.5e-3s or "
                                 f"261/5s (ns, us, ms, s, min, h, d), at most {cap}", text)

    def test_over_each_cap(self):
        # Just above each cap, exactly: 10^6 s + 1 ns, 10^9 s + 1 ns; 11.57 d > 10^6 s.
        for text, high in (("1000000.000000001s", 10**6), ("12d", 10**6), ("1000000000.000000001s", 10**9),
                           ("1e10s", 10**9), ("11575d", 10**9)):
            self.assertEqual(self.message(text, high).split(":")[0], f"{text!r} is too large", text)
        self.assertEqual(exact_seconds("12d", 10**9), 12 * 86400)      # the same text under the larger cap

    def test_fraction_of_a_nanosecond(self):
        with self.assertRaises(argparse.ArgumentTypeError) as caught:
            exact_ns("1/3s")
        self.assertEqual(str(caught.exception),
                         "'1/3s' is not a whole number of nanoseconds: give a time such as 20ms, 833ns or 1/20s")


class CommandLine(unittest.TestCase):
    def test_one_line_exit_2_per_cap(self):
        # critical batch's --compute-time caps at 10^6 s; image request's --rtt at 10^9 s.
        batch = ("budget", "batch", "--noise-scale", "2M", "--train-tokens", "100B", "--seq", "8192",
                 "--reference-sequences", "384", "--reference-cards", "48", "--cards", "48")
        status, _, err = run_cli(*batch, "--compute-time", "2e6s")
        self.assertEqual((status, err.count("\n")), (2, 1))
        self.assertTrue(err.endswith("argument --compute-time: '2e6s' is too large: give a number and a unit such "
                                     "as 300ms, 0.02s, 2.5e-3s or 261/5s (ns, us, ms, s, min, h, d), at most "
                                     "10^6 s\n"), err)
        status, out, _ = run_cli(*batch, "--compute-time", "261/5s", "--format", "json")
        self.assertEqual(status, 0)
        self.assertIn('"261/5"', out)
        status, _, err = run_cli("budget", "image-request", "--input-bytes", "30MB", "--output-bytes", "5MB",
                                 "--download-rate", "100Mb/s", "--upload-rate", "20Mb/s", "--rtt", "1/10",
                                 "--model-time", "300ms")
        self.assertEqual((status, err.count("\n")), (2, 1))
        self.assertIn("argument --rtt: '1/10' has no unit: give", err)
        self.assertTrue(err.endswith("at most 10^9 s\n"), err)


if __name__ == "__main__":
    unittest.main()

"""`budget wan-loss`: Mathis, ideal BBR, a reliable stream's rounds and FEC repair on a lossy path; small cases
derived by hand in the comments, and the book's figures (public fork 899ms/ai-infra-book:
calculations/results/wan-loss-model-book.json, -p036.json)."""

import math
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.wan_loss import loss_tail, mathis_bits_per_s, repair_symbols, rounds_cdf  # noqa: E402


class Formulas(unittest.TestCase):
    def test_mathis_is_exact_for_a_square_loss(self):
        # 8 x 1000 / (1/10 x sqrt(1/4)) = 8000 / (1/20) = 160,000 bits/s, a rational.
        self.assertEqual(mathis_bits_per_s(mss_bytes=1000, rtt_s=Fraction(1, 10), loss=Fraction(1, 4)), 160000)

    def test_mathis_binary64_otherwise(self):
        # 11,584 bits / 0.2 s = 57,920; / sqrt(0.14) = 0.3741657... -> 154,797.71 bits/s (the book's 0.155 Mbit/s).
        rate = mathis_bits_per_s(mss_bytes=1448, rtt_s=Fraction(1, 5), loss=Fraction(7, 50))
        self.assertAlmostEqual(rate, 57920 / 0.37416573867739417, places=6)
        self.assertAlmostEqual(rate, 154797.7113, places=3)

    def test_rounds_stop_at_the_tail(self):
        # n = 2, p = 1/4: within r rounds (1 - 4^-r)^2: 0, 9/16, 225/256 (< 15/16), 3969/4096 (>= 15/16): stop.
        self.assertEqual(rounds_cdf(packets=2, loss=Fraction(1, 4), tail=Fraction(1, 16)),
                         [0, Fraction(9, 16), Fraction(225, 256), Fraction(3969, 4096)])

    def test_loss_tail_and_repair(self):
        # At most 1 of 2 lost at p = 1/4: 1 - 1/16 = 15/16. One data symbol at target 9/10: r = 0 gives 3/4
        # (short), r = 1 gives 15/16: 1. With one extra loss tolerated: r = 1 needs 0 of 2 lost (9/16, short),
        # r = 2 at most 1 of 3 lost: 27/64 + 27/64 = 54/64 (short), r = 3 at most 2 of 4 lost:
        # (81 + 108 + 54) / 256 = 243/256 >= 9/10: 3.
        self.assertEqual(loss_tail(symbols=2, lost_at_most=1, loss=Fraction(1, 4)), Fraction(15, 16))
        self.assertEqual(repair_symbols(data=1, loss=Fraction(1, 4), target=Fraction(9, 10), extra=0), 1)
        self.assertEqual(loss_tail(symbols=4, lost_at_most=2, loss=Fraction(1, 4)), Fraction(243, 256))
        self.assertEqual(repair_symbols(data=1, loss=Fraction(1, 4), target=Fraction(9, 10), extra=1), 3)

    def test_repair_is_the_least_count_meeting_the_target(self):
        # The bisection's answer against the definition, checked one count at a time: r meets the target
        # and r - 1 (when r > extra) does not.
        loss, target = Fraction(1, 5), Fraction(999, 1000)
        for data in (1, 7, 30):
            for extra in (0, 1, 4):
                r = repair_symbols(data=data, loss=loss, target=target, extra=extra)
                self.assertGreaterEqual(loss_tail(symbols=data + r, lost_at_most=r - extra, loss=loss), target)
                if r > extra:
                    self.assertLess(loss_tail(symbols=data + r - 1, lost_at_most=r - 1 - extra, loss=loss), target)

    def test_no_repair_count_is_an_error(self):
        # Certainty is never reached while a loss has a positive probability: none of the 10 x 1 + 100
        # counts tried meets a target of 1.
        with self.assertRaisesRegex(ValueError, "within 110 symbols"):
            repair_symbols(data=1, loss=Fraction(1, 2), target=Fraction(1), extra=0)


def binomial_tail(symbols, lost_at_most, loss):
    """The definition, summed afresh: sum_i C(N, i) p^i (1 - p)^(N - i), i <= m."""
    return sum((math.comb(symbols, i) * loss ** i * (1 - loss) ** (symbols - i) for i in range(lost_at_most + 1)),
               Fraction(0))


class Recurrences(unittest.TestCase):
    """loss_tail builds each binomial term from the last (no math.comb per term, which made a 4,096-packet
    request take 13 s) and repair_symbols searches by bisection; both must equal the definition."""

    def test_loss_tail_is_the_definition(self):
        for p in (Fraction(1, 4), Fraction(7, 50), Fraction(1, 2), Fraction(9, 10)):
            for n in range(12):
                for m in range(-1, n + 1):
                    self.assertEqual(loss_tail(symbols=n, lost_at_most=m, loss=p), binomial_tail(n, m, p), (p, n, m))

    def test_repair_is_the_least_r_of_the_definition(self):
        def least(data, p, target, extra):
            r = extra
            while binomial_tail(data + r, r - extra, p) < target:
                r += 1
            return r
        for data in (1, 2, 7, 30):
            for p in (Fraction(1, 4), Fraction(7, 50), Fraction(1, 2)):
                for target in (Fraction(1, 2), Fraction(9, 10), Fraction(999, 1000)):
                    for extra in (0, 1, 3):
                        self.assertEqual(repair_symbols(data=data, loss=p, target=target, extra=extra),
                                         least(data, p, target, extra), (data, p, target, extra))


BOOK = ["wan-loss", "--rtt", "0.2s", "--knee", "333Mb/s", "--mss", "1448", "--request-bytes", "354640",
        "--model-time", "0.038s"]


class Book(unittest.TestCase):
    def test_book_14_percent(self):
        # BDP 333e6 x 0.2 / 8 = 8,325,000 B; goodput 0.86 x 333e6 = 286,380,000; 245 packets; budget 0.2 + 0.038 +
        # 2,837,120 / 333e6 = 1026139/4162500 s; the book's p99 6 rounds and FEC 63 / 64 repair symbols.
        out = budget_result(*BOOK, "--loss", "0.14")
        self.assertEqual((out["bdp_bytes"], out["bbr_goodput_bits_per_s"], out["packets"]),
                         ("8325000", "286380000", 245))
        self.assertEqual(out["serial_budget_s"], "1026139/4162500")
        self.assertEqual((out["p50_rounds"], out["p99_rounds"], len(out["rounds"])), (3, 6, 11))
        self.assertEqual([r["repair_symbols"] for r in out["fec"]], [63, 64])
        self.assertEqual(out["expected_rounds"], 3.587173489001222)

    def test_book_3_6_percent(self):
        out = budget_result(*BOOK, "--loss", "0.036")
        self.assertEqual([r["repair_symbols"] for r in out["fec"]], [20, 21])
        self.assertEqual((out["p99_rounds"], out["fec"][0]["overhead_ratio"]), (4, "4/49"))

    def test_sizes_past_the_exact_sums_are_refused(self):
        # 10^15 bytes is 690,607,734,807 packets of 1448 B: refused in one line, not an hour of exact sums;
        # 4,096 packets is the cap, and an unreachable target names --fec-target.
        for argv, named in (([*BOOK, "--loss", "0.14"], None),
                            ([*BOOK[:8], "1000000000000000", *BOOK[9:], "--loss", "0.14"], "--request-bytes"),
                            ([*BOOK, "--loss", "0.14", "--fec-symbol", "86"], "--fec-symbol"),
                            ([*BOOK, "--loss", "0.95", "--fec-target", "0.999999"], "--fec-target")):
            status, out, err = run_cli("budget", *argv)
            if named is None:
                self.assertEqual(status, 0, err)
                continue
            self.assertEqual((status, out, len(err.strip().splitlines())), (2, "", 1), err)
            self.assertIn(named, err)

    def test_loss_of_one_is_an_error(self):
        status, _, err = run_cli("budget", *BOOK, "--loss", "1")
        self.assertEqual(status, 2)
        self.assertIn("strictly between 0 and 1", err)


if __name__ == "__main__":
    unittest.main()

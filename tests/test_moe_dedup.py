"""`budget moe-dedup`: MoE dispatch and combine per assignment against once per destination rank, from a
declared per-token destination pattern (the book's chapter-6 example); expected values derived by hand."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.moe_dedup import moe_dedup, pairwise_ns  # noqa: E402

QWEN235 = dict(ranks=8, tokens_per_rank=64, experts=128, top_k=8, hidden=4096)


class MoeDedup(unittest.TestCase):
    def test_clustered_by_hand(self):
        # Token t of rank s sends all 8 experts to rank (s + t) mod 8: 8 of its 64 tokens stay home, 56 leave.
        # Per assignment 56 x 8 x 4096 x 2 B = 3,670,016 per rank, x 8 = 29,360,128; once per destination
        # 56 x 8,192 x 8 = 3,670,016; the FP32 return twice each. All 7 additions per element move to the
        # destination: 8 x 64 x 7 x 4096 = 14,680,064, none left on the source.
        r = moe_dedup(**QWEN235, pattern="clustered")
        self.assertEqual((r["per_assignment_dispatch_bytes"], r["deduplicated_dispatch_bytes"]), (29360128, 3670016))
        self.assertEqual((r["per_assignment_combine_bytes"], r["destination_combined_return_bytes"]), (58720256, 7340032))
        self.assertEqual((r["destination_reduction_adds"], r["remaining_source_reduction_adds"]), (14680064, 0))

    def test_spread_saves_nothing(self):
        # Expert j on rank (s + t + j) mod 8: eight distinct ranks, seven remote, one expert each: no duplicates.
        r = moe_dedup(**QWEN235, pattern="spread")
        self.assertEqual(r["deduplicated_dispatch_bytes"], r["per_assignment_dispatch_bytes"])
        self.assertEqual((r["destination_combined_return_bytes"], r["remaining_source_reduction_adds"]), (58720256, 14680064))

    def test_additions_are_conserved(self):
        for pattern in ("clustered", "spread"):
            for kw in (QWEN235, dict(QWEN235, ranks=4, tokens_per_rank=9), dict(QWEN235, ranks=16, top_k=3)):
                r = moe_dedup(**kw, pattern=pattern)
                self.assertEqual(r["destination_reduction_adds"] + r["remaining_source_reduction_adds"],
                                 r["source_reduction_adds"])

    def test_pairwise_rounds(self):
        # Per assignment, every off-diagonal pair carries 64 x 8,192 = 524,288 B of dispatch: 7 rounds of 2 us +
        # 10.48576 us = 87.40032 us (the book's all-to-all-qwen235-t64-balanced); the FP32 return 7 x 22.97152 us;
        # together 248.20096 us. Deduplicated: 7 x (3.31072 + 4.62144) = 55.52512 us.
        r = moe_dedup(**QWEN235, pattern="clustered", bandwidth=50 * 10**9, startup_ns=2000)
        self.assertEqual((Fraction(r["per_assignment_pairwise_ns"]), Fraction(r["deduplicated_pairwise_ns"])),
                         (Fraction(24820096, 100), Fraction(5552512, 100)))
        self.assertEqual(pairwise_ns([[0, 5], [7, 0]], 10**9, 1), 1 + 7)     # one round: startup + the larger message

    def test_errors(self):
        for argv in (("--ranks", "3"), ("--ranks", "64", "--tokens-per-rank", "1", "--pattern", "clustered")):
            full = ("budget", "moe-dedup", "--model", "qwen3-235b-a22b", "--tokens-per-rank", "4", "--pattern", "spread") + argv
            status, _, err = run_cli(*full)
            self.assertEqual(status, 2, err)
        status, _, err = run_cli("budget", "moe-dedup", "--model", "qwen3-8b", "--ranks", "2", "--tokens-per-rank", "1",
                                 "--pattern", "spread")
        self.assertEqual(status, 2, err)


if __name__ == "__main__":
    unittest.main()

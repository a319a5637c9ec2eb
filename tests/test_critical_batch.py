"""`budget batch`: critical batch size from a declared gradient noise scale; expected values derived by
hand in the comments (the book's critical-batch figures: bojieli/ai-infra-book chapter 10's check script)."""

import json
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402

from infracalc.analyses.critical_batch import critical_batch  # noqa: E402
from infracalc.errors import UserError  # noqa: E402


class ByHand(unittest.TestCase):
    def test_small_case(self):
        # B_noise 100, reference 4 sequences x 25 tokens = 100 tokens per step, D 1000 -> S_ref 10 steps;
        # S_min = 10 / (1 + 100/100) = 5, E_min = 500. On 2x the cards (B 200): S = 5 (1 + 1/2) = 7.5 steps,
        # E = 500 (1 + 2) = 1500; the weak ceiling S_ref / S_min = 2. Step 1 + 1 s: weak 7.5 x 2 s; strong at
        # 2x cards 1/2 + 1 = 1.5 s per step.
        r = critical_batch(noise_tokens=100, tokens=1000, sequence_tokens=25, reference_sequences=4,
                           reference_cards=2, compute_s=Fraction(1), overhead_s=Fraction(1), cards=(4,))
        self.assertEqual((r["reference_steps"], r["s_min"], r["e_min_tokens"]), (10, 5.0, 500.0))
        row = r["rows"][0]
        self.assertEqual((row["weak_steps"], row["weak_examples_tokens"], row["strong_step_s"]), (7.5, 1500.0, 1.5))
        self.assertAlmostEqual(row["weak_wall_days"], 15 / 86400, places=15)
        self.assertEqual(r["weak_scaling_speedup_ceiling_exact"], "2")

    def test_uneven_reference_refused(self):
        with self.assertRaises(UserError):
            critical_batch(noise_tokens=1, tokens=10, sequence_tokens=1, reference_sequences=5, reference_cards=2,
                           compute_s=Fraction(1), overhead_s=Fraction(0), cards=(2,))


class Book(unittest.TestCase):
    def test_chapter_ten(self):
        # 384 x 8192 = 3,145,728 tokens per step; ceil(1e11 / 3,145,728) = 31,790 steps; S_min = 31,790 /
        # (1 + 2e6 / 3,145,728) = 19,434.1195...; the ceiling 1 + 2e6/3,145,728 = 40201/24576 = 1.64 (7.36 at
        # 2e7). Strong scaling at 96 cards: 31,790 x (52.2 x 48/96 + 0.5) s = 9.79 days.
        status, out, err = run_cli("budget", "batch", "--noise-scale", "2M", "--train-tokens", "100B", "--seq", "8192",
                                   "--reference-sequences", "384", "--reference-cards", "48", "--compute-time", "52.2s",
                                   "--overhead-time", "0.5s", "--cards", "96,1536", "--format", "json")
        self.assertEqual(status, 0, err)
        r = json.loads(out)["result"]
        self.assertEqual(r["reference_steps"], 31_790)
        self.assertAlmostEqual(r["s_min"], 19434.119549264942, places=9)
        self.assertEqual(r["weak_scaling_speedup_ceiling_exact"], "40201/24576")
        self.assertEqual([round(x["strong_wall_days"], 1) for x in r["rows"]], [9.8, 0.8])


if __name__ == "__main__":
    unittest.main()

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
        # E_ref = 10 x 100 = 1000 tokens, so E / E_ref = 1.5; B / B_noise = 2; weak wall 7.5 x 2 = 15 s; the
        # reference step 1 + 1 = 2 s and its wall 10 x 2 = 20 s; strong wall 10 x 1.5 = 15 s.
        self.assertEqual((r["reference_examples_tokens"], r["reference_step_s_exact"], r["reference_wall_s"]),
                         (1000, "2", 20.0))
        self.assertEqual((r["s_min_exact"], r["e_min_tokens_exact"], r["reference_batch_over_noise_scale_exact"]),
                         ("5", "500", "1"))
        self.assertEqual((row["weak_batch_sequences"], row["weak_steps_exact"], row["weak_examples_over_reference"],
                          row["weak_batch_over_noise_scale"], row["weak_wall_s"]), (8, "15/2", 1.5, 2.0, 15.0))
        self.assertEqual((row["strong_step_s_exact"], row["strong_wall_s"]), ("3/2", 15.0))

    def test_uneven_reference_refused(self):
        with self.assertRaises(UserError):
            critical_batch(noise_tokens=1, tokens=10, sequence_tokens=1, reference_sequences=5, reference_cards=2,
                           compute_s=Fraction(1), overhead_s=Fraction(0), cards=(2,))


class ExactTimes(unittest.TestCase):
    def test_ratio_time_kept_exact(self):
        # --compute-time 261/5s is 52.2 s exactly; 1/3s of overhead: the reference step 261/5 + 1/3 = 788/15 s.
        status, out, err = run_cli("budget", "batch", "--noise-scale", "2M", "--train-tokens", "100B", "--seq", "8192",
                                   "--reference-sequences", "384", "--reference-cards", "48", "--compute-time",
                                   "261/5s", "--overhead-time", "1/3s", "--cards", "48", "--format", "json")
        self.assertEqual(status, 0, err)
        d = json.loads(out)
        self.assertEqual((d["inputs"]["compute_time"], d["inputs"]["overhead_time"]), ("261/5", "1/3"))
        self.assertEqual(d["result"]["reference_step_s_exact"], "788/15")

    def test_zero_denominator_refused(self):
        status, _, err = run_cli("budget", "batch", "--noise-scale", "2M", "--train-tokens", "100B", "--seq", "8192",
                                 "--reference-sequences", "384", "--reference-cards", "48", "--compute-time", "1/0s",
                                 "--cards", "48")
        self.assertEqual(status, 2)
        self.assertIn("--compute-time", err)


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

"""`budget capacity`: MoE capacity factor, dropped and padded tokens; every expected value derived by
hand in its comment (the book's moe-capacity-book figures: bojieli/ai-infra-book chapter 10's check
script, "chapter capacity rows" and "model capacity rows")."""

import json
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402

from infracalc.analyses import moe_capacity as mc  # noqa: E402
from infracalc.errors import UserError  # noqa: E402


def capacity(*argv):
    status, out, err = run_cli("budget", "capacity", *argv, "--format", "json")
    assert status == 0, err
    return json.loads(out)["result"]


class Formulas(unittest.TestCase):
    def test_two_experts_by_hand(self):
        # 128 assignments, loads 96 and 32 (3:1). f = 1: C = 64, dropped 96 - 64 = 32, padded 64 - 32 = 32;
        # f = 5/4: C = 80, dropped 16, padded 48; f = 3/2: C = 96, dropped 0, padded 64; f = 2: C = 128,
        # padded 32 + 96 = 128 (half of the 256 executed slots).
        rows = mc.capacity_rows(mc.loads_of((3, 1), 128, 2), (1, Fraction(5, 4), Fraction(3, 2), 2))
        self.assertEqual([(r["capacity_per_expert"], r["dropped_total"], r["padded_total"]) for r in rows],
                         [(64, 32, 32), (80, 16, 48), (96, 0, 64), (128, 0, 128)])
        self.assertEqual(rows[3]["padded_fraction_of_executed"], "1/2")

    def test_expert_rows_by_hand(self):
        # Loads 96, 32 at f = 2: C = 128, 256 slots = 2 x the 128 assignments; the busiest expert runs its 96
        # rows (below C); expert 0 pads 128 - 96 = 32, expert 1 pads 96. At f = 1 (C = 64) expert 0 runs 64 and
        # drops 32. Loads 5, 5, 2 group as experts 0-1 and 2.
        rows = mc.capacity_rows([96, 32], (1, 2))
        self.assertEqual([(r["executed_over_assignments"], r["busiest_expert_rows"]) for r in rows],
                         [("1", 64), ("2", 96)])
        groups = mc.expert_groups([96, 32], rows)
        self.assertEqual([(g["capacity_factor"], g["experts"], g["executed_rows_each"], g["dropped_each"],
                           g["padded_each"]) for g in groups],
                         [("1", "0", 64, 32, 0), ("1", "1", 32, 0, 32), ("2", "0", 96, 0, 32), ("2", "1", 32, 0, 96)])
        groups = mc.expert_groups([5, 5, 2], mc.capacity_rows([5, 5, 2], (1,)))
        self.assertEqual([(g["experts"], g["assignments_each"], g["padded_each"]) for g in groups],
                         [("0-1", 5, 0), ("2", 2, 2)])

    def test_capacity_rounds_up(self):
        # 10 assignments over 3 experts at f = 1: 10/3 -> C = 4 (whole tokens); loads 4, 3, 3 -> no drop, 2 pads.
        r = mc.capacity_rows([4, 3, 3], (1,))[0]
        self.assertEqual((r["capacity_per_expert"], r["dropped_total"], r["padded_total"]), (4, 0, 2))

    def test_loads_must_split_whole(self):
        with self.assertRaises(UserError):
            mc.loads_of((1, 1, 1), 10, 3)     # 10/3 tokens each


class Book(unittest.TestCase):
    def test_qwen3_235b(self):
        # 8192 tokens x top-8 = 65,536 assignments over 128 experts, mean 512; half the experts at 3/2 the mean
        # (768), half at 1/2 (256). f = 1: C = 512, dropped 64 x 256 = 16,384 (1/4), padded 64 x 256 of
        # 65,536 slots (1/4); f = 5/4: C = 640, dropped 64 x 128 (1/8), padded 64 x 384 = 24,576 of 81,920
        # (3/10); f = 3/2: C = 768, padded 32,768 of 98,304 (1/3); f = 2: 65,536 of 131,072 (1/2).
        # Useful expert FLOPs per layer at f >= 3/2: 65,536 x 2 x 3 x 4096 x 1536 = 2,473,901,162,496.
        r = capacity("--model", "qwen3-235b-a22b", "--tokens", "8192", "--loads", "3x64,1x64",
                     "--capacity-factor", "1,1.25,1.5,2")
        self.assertEqual((r["experts"], r["top_k"], r["assignments"]), (128, 8, 65_536))
        rows = r["rows"]
        self.assertEqual([x["capacity_per_expert"] for x in rows], [512, 640, 768, 1024])
        self.assertEqual([x["dropped_fraction"] for x in rows], ["1/4", "1/8", "0", "0"])
        self.assertEqual([x["padded_fraction_of_executed"] for x in rows], ["1/4", "3/10", "1/3", "1/2"])
        self.assertEqual(rows[2]["useful_expert_flops_per_layer"], 2_473_901_162_496)

    def test_errors(self):
        for argv, text in [(("--model", "qwen3-8b", "--tokens", "8", "--loads", "1", "--capacity-factor", "1"),
                            "no MoE layer"),
                           (("--experts", "4", "--top-k", "1", "--tokens", "8", "--loads", "1,1",
                             "--capacity-factor", "1"), "4 experts"),
                           (("--experts", "2", "--top-k", "1", "--tokens", "8", "--loads", "1,1",
                             "--capacity-factor", "0"), "capacity factors")]:
            status, _, err = run_cli("budget", "capacity", *argv)
            self.assertEqual(status, 2, argv)
            self.assertIn(text, err)


if __name__ == "__main__":
    unittest.main()

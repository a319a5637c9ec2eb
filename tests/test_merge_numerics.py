"""`budget online-softmax` and `budget fp8-scale`: exact numerical witnesses; expected values
derived by hand in the comments."""

import math
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.merge_numerics import E4M3FN, fp8_dot, merge, online_softmax, round_e4m3fn  # noqa: E402


budget = budget_result


class OnlineSoftmax(unittest.TestCase):
    def test_book_row(self):
        # scores 0, ln 2, ln 4: weights 1 : 2 : 4; output (1 x 1 + 2 x 3 + 4 x -2) / 7 = -1/7. Blocks {1, 3} -> 7/3 and
        # {-2} -> -2: their mean 1/6 is off by 1/6 + 1/7 = 13/42; the merged states are exact to double rounding.
        r = budget("online-softmax", "--scores", "0,ln2,ln4", "--values", "1,3,-2", "--blocks", "2,1")
        self.assertAlmostEqual(r["direct_output"][0], -1 / 7, places=15)
        self.assertAlmostEqual(r["mean_max_abs_error"], 13 / 42, places=15)
        self.assertLess(r["sequential_max_abs_error"], 1e-15)
        # one merge of width 1: 1 comparison, 2 exponentials, 3 x (1 + 1) weighted-sum FLOPs, 1 division
        self.assertEqual((r["merges"], r["merge_exponentials"], r["merge_weighted_sum_flops"], r["final_divisions"]),
                         (1, 2, 6, 1))

    def test_empty_and_masked_blocks_are_the_identity(self):
        # masked and empty blocks carry no state; merge(None, s) = s
        s = (1.0, 2.0, (3.0,))
        self.assertEqual((merge(None, s), merge(s, None)), (s, s))
        r = online_softmax([None, 1000, 1001, None], [[0, 0], [1, 2], [3, -2], [5, 7]], [1, 0, 1, 2])
        # 1000 and 1001 are stable after subtracting the maximum: (e^-1 (1, 2) + (3, -2)) / (1 + e^-1)
        e = math.exp(-1)
        self.assertAlmostEqual(r["direct_output"][0], (e + 3) / (1 + e), places=12)
        self.assertEqual((r["blocks_with_state"], r["merges"]), (2, 1))
        r = online_softmax([None, None], [[1], [2]], [1, 1])
        self.assertEqual((r["direct_output"], r["sequential_max_abs_error"], r["mean_of_block_outputs"]), (None, None, None))

    def test_tree_equals_sequential(self):
        r = online_softmax([0.5, -1.0, 2.0, 0.0, 1.5], [[1], [2], [3], [4], [5]], [1, 2, 1, 1])
        self.assertAlmostEqual(r["tree_output"][0], r["direct_output"][0], places=14)


class FP8Scale(unittest.TestCase):
    def test_format(self):
        # 127 finite codes; the largest 0x7e = (8 + 6) / 8 x 2^(15 - 7) = 448; the smallest subnormal 2^-9
        self.assertEqual((len(E4M3FN), E4M3FN[-1][1], E4M3FN[1][1]), (127, 448, Fraction(1, 512)))
        # 44.8 lies in [32, 64), step 4: 44 is nearest. Ties go to the even code: 40 = 1.25 x 32 is exponent 12,
        # mantissa 2, code 98; 44 code 99; 48 code 100: 42 -> 40, 46 -> 48; saturating above 448; the sign kept
        self.assertEqual((round_e4m3fn(Fraction(448, 10)), round_e4m3fn(42), round_e4m3fn(46)), (44, 40, 48))
        self.assertEqual((round_e4m3fn(1000), round_e4m3fn(-3)), (448, -3))

    def test_prefix_scale_witness(self):
        # small block first: full-row scale 10/448 rounds 1 x 448/10 = 44.8 to 44 -> 44 x 10/448 = 55/56; the prefix
        # scale quantizes 1 exactly (448) under amax 1 and only rescales it: 448 x 1/10 x 10/448 = 1
        r = budget("fp8-scale", "--block", "128")
        self.assertEqual((r["full_row_result"], r["prefix_result"], r["exact_difference"]), ("55/56", "1", "1/56"))
        self.assertFalse(r["equal_after_fp16"])
        # large block first: the prefix already holds amax 10 when the 1 arrives: 55/56 both ways
        r = budget("fp8-scale", "--block", "128", "--larger-first")
        self.assertEqual((r["prefix_result"], r["exact_difference"], r["equal_after_fp16"]), ("55/56", "0", True))

    def test_zero_row(self):
        self.assertEqual(fp8_dot([0, 0], [1, 1], 1), 0)


if __name__ == "__main__":
    unittest.main()

"""`budget graph`, `budget deployment`, `budget specialization`: one-off preparations repaid per
call, with declared costs; every expected value derived by hand in its comment."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.runtime_choices import amortized_calls, deployment, specialization  # noqa: E402

SHAPES = ["--shape", "256:8", "--shape", "1536:1", "--shape", "2048:1"]
RATES = {"generic": 100 * 10**12, "bucket": 200 * 10**12, "specialized": 250 * 10**12}
COMPILE = {"generic": 10**8, "bucket": 2 * 10**8, "specialized": 3 * 10**8}


budget = budget_result


class Amortization(unittest.TestCase):
    def test_break_even_and_strict(self):
        # P / s = 10^9 / 9,000 = 111,111.1: ceil 111,112 and floor + 1 111,112; P / s = 6 exactly: 6 and 7
        self.assertEqual(amortized_calls(10**9, 9000), (111112, 111112))
        self.assertEqual(amortized_calls(600, 100), (6, 7))
        # no saving: never; nothing to repay and nothing saved: break-even at once, never strictly faster
        self.assertEqual(amortized_calls(5, 0), (None, None))
        self.assertEqual(amortized_calls(0, 0), (1, None))
        self.assertEqual(amortized_calls(0, Fraction(1, 2)), (1, 1))


class GraphBoundary(unittest.TestCase):
    def test_small_input_copies(self):
        # 256 x 4,096 BF16 = 2 MiB, copied read + write: 4,194,304 B at 2 TB/s = 2,097.152 ns; eager 20 + 20 = 40 us,
        # copy 20 + 3 + 2 + 2.097152 = 27.097152 us, indirect 31 us: copy per call; over 10^5 calls copy
        # 10^9 + 2.7097152e9 < eager 4e9: copy. Padding 1,536 -> 2,048 rows: 2 x 512 x 3 x 4,096 x 12,288 FLOPs.
        r = budget("graph", "--model", "qwen3-8b")
        self.assertEqual((r["extra_copy_bytes"], r["extra_copy_ns"]), (4194304, "262144/125"))
        self.assertEqual(r["padding_ffn_matrix_flops"], 2 * 512 * 3 * 4096 * 12288)
        self.assertEqual((r["steady_path"], r["lifetime_path"]), ("copy", "copy"))

    def test_large_input_prefers_indirect_per_call_but_eager_over_a_short_life(self):
        # 2,048 rows: 33,554,432 B copied, 16,777.216 ns -> copy 41.777 us > indirect 31 us; over 10^5 calls
        # indirect 10^9 + 3.1e9 = 4.1e9 > eager 4e9; over 10^6 calls indirect 3.2e10 < 4e10. Indirect pays back after
        # 10^9 / 9,000 -> 111,112 calls, direct output after 10^9 / 15,000 = 66,666.7 -> 66,667.
        r = budget("graph", "--model", "qwen3-8b", "--input-tokens", "2048")
        self.assertEqual((r["extra_copy_bytes"], r["steady_path"], r["lifetime_path"]), (33554432, "indirect", "eager"))
        r = budget("graph", "--model", "qwen3-8b", "--input-tokens", "2048", "--calls", "1000000")
        self.assertEqual(r["lifetime_path"], "indirect")
        paths = {p["path"]: p for p in r["paths"]}
        self.assertEqual((paths["indirect"]["break_even_calls"], paths["direct output"]["strictly_faster_calls"]),
                         (111112, 66667))
        self.assertEqual((paths["copy"]["break_even_calls"], paths["eager"]["break_even_calls"]), (None, 1))

    def test_configuration_pipeline(self):
        # 100 segments of 20 us host + 20 us device: serial 4,000 us, overlapped 40 + 99 x 20 = 2,020 us;
        # device x4 (5 us): 25 + 99 x 20 = 2,005; both x4 (5 + 5): 10 + 99 x 5 = 505 us
        r = budget("graph", "--model", "qwen3-8b")
        self.assertEqual([(p["serial_ns"], p["overlapped_ns"]) for p in r["configuration_pipeline"]],
                         [(4000000, 2020000), (2500000, 2005000), (1000000, 505000)])


class Deployment(unittest.TestCase):
    def shapes(self, cx=1, failed=()):
        return [("x", cx, 100000, {"A": 10000, "B": 50000}, set(failed)),
                ("y", 1, 100000, {"A": 200000, "B": 50000}, set())]

    def test_equal_counts(self):
        # uniform: A 10 + 200 = 210 us, B 100, baseline 200 -> B; dispatch x->A 10, y->B 50: 60 us, mean 30 us;
        # saving (100 - 60) / 2 = 20 us per call: 600 s / 20 us = 3 x 10^7 calls to break even, strictly + 1
        r = deployment(self.shapes(), extra_setup_ns=600 * 10**9)
        self.assertEqual((r["best_uniform"], r["dispatch_mean_ns"]), ("B", 30000))
        self.assertEqual((r["break_even_calls"], r["strictly_faster_calls"]), (30000000, 30000001))

    def test_skewed_counts_pick_a_uniform_and_shape_scores_mislead(self):
        # 9 x: A 9 x 10 + 200 = 290 us beats B 500: A; dispatch 9 x 10 + 50 = 140, mean 14 us; saving 15 us per call;
        # A's shape-mean ratio (10 + 0.5) / 2 = 21/4 whatever the counts
        r = budget("deployment", "--shape", "x:9:100us:A=10us,B=50us", "--shape", "y:1:100us:A=200us,B=50us")
        self.assertEqual((r["best_uniform"], r["dispatch_mean_ns"], r["break_even_calls"]), ("A", 14000, 40000000))
        self.assertEqual(r["break_even_cohorts"], 4000000)
        self.assertEqual(r["candidates"][1]["shape_mean_ratio"], "21/4")

    def test_dispatch_cost_or_failed_validation_removes_the_gain(self):
        # dispatch 20 us per call: (10 + 20 + 50 + 20) / 2 = 50 us = B: no saving, no payback
        r = deployment(self.shapes(), dispatch_ns=20000, extra_setup_ns=600 * 10**9)
        self.assertEqual((r["dispatch_mean_ns"], r["break_even_calls"]), (50000, None))
        # A fails on x: x falls back to 100 us for A, dispatch picks B there: 50 us mean; A scores (0 + 0.5) / 2
        r = deployment(self.shapes(failed=("A",)), extra_setup_ns=600 * 10**9)
        self.assertEqual((r["best_uniform"], r["dispatch_mean_ns"], r["strictly_faster_calls"]), ("B", 50000, None))
        a = r["candidates"][1]
        self.assertEqual((a["shape_mean_ratio"], a["fallback_calls"], a["cohort_ns"]), ("1/4", 1, 300000))


class Specialization(unittest.TestCase):
    def run_policy(self, repetitions, buckets=(512, 2048), specialized=(256, 1536, 2048), cached=()):
        return specialization(hidden=4096, inter=12288, shapes=[(256, 8), (1536, 1), (2048, 1)], buckets=list(buckets),
                              specialized=list(specialized), cached=set(cached), repetitions=repetitions,
                              rates=RATES, compile_ns=COMPILE)

    def test_costs_per_cohort(self):
        # 6HF = 301,989,888 FLOPs per row; 8 x 256 + 1,536 + 2,048 = 5,632 rows: 1,700,807,049,216 real FLOPs.
        # generic 5,632 rows at 100 TFLOP/s = 17,008,070.49 ns; bucket pads to 8 x 512 + 2,048 + 2,048 = 8,192 rows
        # at 200 T = 12,369,505.81 ns (2,560 padded rows = 773,094,113,280 FLOPs); specialized 5,632 at 250 T.
        r = self.run_policy(1)
        self.assertEqual(r["real_matrix_flops"], 1700807049216)
        g, b, s = r["policies"]
        self.assertEqual(Fraction(g["cohort_ns"]), Fraction(5632 * 301989888 * 10**9, 100 * 10**12))
        self.assertEqual(Fraction(b["cohort_ns"]), Fraction(8192 * 301989888 * 10**9, 200 * 10**12))
        self.assertEqual((b["padding_matrix_flops"], b["prepare_ns"], s["prepare_ns"]), (773094113280, 4 * 10**8, 9 * 10**8))
        self.assertEqual(b["cohort_matrix_flops"], 8192 * 301989888)

    def test_repetitions_move_the_choice(self):
        # generic = bucket at 3e8 / 4,638,564.68 = 64.7 repetitions, bucket = specialized at 5e8 / 5,566,277.6 = 89.8
        self.assertEqual([self.run_policy(n)["selected_policy"] for n in (64, 65, 89, 90)],
                         ["generic", "bucket", "bucket", "specialized"])

    def test_cache_and_fallback(self):
        # cached specialized artifacts prepare nothing: specialized even at 1 repetition
        r = self.run_policy(1, cached=("specialized:256", "specialized:1536", "specialized:2048"))
        self.assertEqual((r["selected_policy"], r["policies"][2]["prepare_ns"]), ("specialized", 0))
        # one bucket (512) and one specialized shape (256): the 1,536 and 2,048 calls fall back to generic, whose
        # artifact is prepared as well: bucket 2e8 + 1e8, specialized 3e8 + 1e8; 2 fallback calls each
        r = budget("specialization", "--model", "qwen3-8b", *SHAPES, "--buckets", "512", "--specialized", "256",
                   "--repetitions", "100")
        b, s = r["policies"][1:]
        self.assertEqual((b["prepare_ns"], s["prepare_ns"], b["fallback_calls"], s["fallback_calls"]),
                         (3 * 10**8, 4 * 10**8, 2, 2))
        self.assertEqual((b["padding_matrix_flops"], r["selected_policy"]), (8 * 256 * 301989888, "specialized"))

    def test_unknown_cached_artifact_is_an_error(self):
        status, _, err = run_cli("budget", "specialization", "--model", "qwen3-8b", *SHAPES, "--buckets", "512",
                                 "--specialized", "256", "--repetitions", "1", "--cached", "bucket:1024")
        self.assertEqual(status, 2)
        self.assertIn("not an artifact", err)


if __name__ == "__main__":
    unittest.main()

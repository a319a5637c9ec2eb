"""`budget decision`: a decision request (one forward, Q answers, no generation) against the LLM path; a small
case derived by hand and the book's published figures (the index's decision-request table)."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.decision_request import decision_request  # noqa: E402


def run(**kw):
    base = dict(input_tokens=1000, questions=1, prefill_flops=10**12, head_flops=10**9, weight_bytes=10**10,
                llm_steps=[], decode_batch=4, peak=10**15, bandwidth=10**12, compute_efficiency=Fraction(1, 2),
                memory_efficiency=Fraction(1, 2), price_per_gpu_hour=2)
    base.update(kw)
    return decision_request(**base)


class Rules(unittest.TestCase):
    def test_worked_case(self):
        # 10^12 FLOPs at 10^15 x 1/2: 1/500 s; 10^10 B at 10^12 x 1/2: 1/50 s (memory-bound latency); the GPU-
        # seconds are the compute share 1/500, at $2 an hour 1/500 x 2 / 3600 = 1/900,000 $.
        r = run()
        self.assertEqual((Fraction(r["decision_compute_s_exact"]), Fraction(r["decision_latency_s_exact"])),
                         (Fraction(1, 500), Fraction(1, 50)))
        self.assertEqual((r["decision_bound"], Fraction(r["decision_usd_exact"])), ("memory", Fraction(1, 900000)))

    def test_each_more_question_adds_one_head_position(self):
        self.assertEqual(run(questions=8)["decision_matrix_flops"], 10**12 + 7 * 10**9)

    def test_llm_path_latency_and_shared_gpu_seconds(self):
        # G = 3: 2 steps; batch 1 a memory-bound step of 2 x 10^10 B at 5 x 10^11 B/s = 1/25 s; batch 4 a
        # compute-bound step of 4 x 10^13 FLOPs at 5 x 10^14 = 2/25 s (its bytes take 1/25), shared by 4.
        # Latency 1/50 + 2 x 1/25 = 1/10; GPU-s 1/500 + 2 x (2/25) / 4 = 21/500.
        (row,) = run(llm_steps=[(3, 1001, (10**9, 2 * 10**10), (4 * 10**13, 2 * 10**10))])["llm_path"]
        self.assertEqual((Fraction(row["latency_s_exact"]), Fraction(row["gpu_s_exact"])),
                         (Fraction(1, 10), Fraction(21, 500)))
        self.assertEqual((row["step_bound_batch_1"], row["step_bound_batch"]), ("memory", "compute"))

    def test_compared_model_and_escalation_share(self):
        # F' = 3/2 x 10^12 at 10^15 x 1/2: 3/1000 GPU-s, x 2 / 3600 = 1/600,000 $; F' / F = 3/2 (F = 10^12, Q = 1);
        # list 1 $/M x 1000 tokens = 1/1000 $ = 600 x that floor; escalation 1/20 $: share (1/1000) / (1/20) = 1/50.
        r = run(list_price_per_million=1, compare={"model": "m", "schedule": "ced", "matrix_flops": 3 * 10**12 // 2},
                escalation_price=Fraction(1, 20))
        self.assertEqual([Fraction(r[k + "_exact"]) for k in ("compare_gpu_s", "compare_usd", "compare_usd_per_million_input",
                                                              "compare_flops_over_decision", "list_over_compare_floor",
                                                              "escalation_share_doubling_cost")],
                         [Fraction(3, 1000), Fraction(1, 600000), Fraction(1, 600), Fraction(3, 2), 600, Fraction(1, 50)])


class Book(unittest.TestCase):
    def test_decision_request_book(self):
        # the index's row decision-request-book: 1929 tokens, 0.070509 GPU-s, 0.0203 $/M, 2.07 x, LLM GPU-s
        # [0.090281, 0.240958], latency [0.651, 4.787] s.
        r = budget_result("decision", "--model", "qwen3-8b", "--device", "h100-sxm", "--matrix-peak", "bf16=989.4T",
                          "--input-tokens", "1929", "--compute-efficiency", "2/5", "--questions", "8", "--outputs",
                          "64,512", "--decode-batch", "64", "--memory-efficiency", "1/2", "--price-per-gpu-hour", "2",
                          "--list-price", "0.042", "--compare-model", "deepseek-v4.1-flash", "--compare-schedule", "ced",
                          "--escalation-price", "0.013880")
        # the book's V4.1 Flash CED column: its CED prefill of 1929 tokens (v41-forward row), 34,963,073,826,816
        # FLOPs, / (989.4T x 2/5) = 1422651116/16103515625 s (the book's exact figure), 0.0254 $/M, ratio 1.253,
        # Jev over that floor 1.65; escalation share to the demo LLM ($0.013880) 8.1018e-05 / 0.01388 = 0.00584.
        self.assertEqual((r["compare_matrix_flops"], r["compare_gpu_s_exact"]), (34963073826816, "1422651116/16103515625"))
        self.assertEqual((round(r["compare_usd_per_million_input"], 4), round(r["compare_flops_over_decision"], 3),
                          round(r["list_over_compare_floor"], 2), round(r["escalation_share_doubling_cost"], 5)),
                         (0.0254, 1.253, 1.65, 0.00584))
        self.assertEqual(r["head_flops_per_position"], 2 * 4096 * 151936)   # hidden x vocab, one position
        self.assertEqual((round(r["decision_gpu_s"], 6), round(r["decision_usd_per_million_input"], 4),
                          round(r["list_over_decision_floor"], 2)), (0.070509, 0.0203, 2.07))
        self.assertEqual([(x["midpoint_history"], round(x["gpu_s"], 6), round(x["latency_s"], 3)) for x in r["llm_path"]],
                         [(1960, 0.090281, 0.651), (2184, 0.240958, 4.787)])


class Errors(unittest.TestCase):
    def test_escalation_needs_list_price_and_ced_needs_a_split(self):
        from support import run_cli

        def budget_error(*argv):
            status, _, err = run_cli("budget", *argv)
            self.assertEqual((status, len(err.strip().splitlines())), (2, 1), err)
            return err

        base = ("decision", "--model", "qwen3-8b", "--input-tokens", "10", "--questions", "1", "--outputs", "2",
                "--decode-batch", "1", "--compute-efficiency", "1/2", "--memory-efficiency", "1/2",
                "--price-per-gpu-hour", "2")
        self.assertIn("needs --list-price", budget_error(*base, "--escalation-price", "1"))
        self.assertIn("no CED", budget_error(*base, "--compare-model", "qwen3-8b", "--compare-schedule", "ced"))


if __name__ == "__main__":
    unittest.main()

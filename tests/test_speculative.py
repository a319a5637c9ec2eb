"""Speculative decoding: expected tokens per step (Leviathan et al. 2023) and step costs."""

import unittest

from support import Workload, load_model, run_cli

from infracalc.analyses import decode as D
from infracalc.analyses.forward import forward
from infracalc.analyses.roofline import roof
from infracalc.analyses.speculative import expected_tokens, speculative
from infracalc.dtypes import DTYPES
from infracalc.load.hardware import load_device


class ExpectedTokens(unittest.TestCase):
    def test_formula(self):
        # E = (1 - a^(k+1)) / (1 - a): a = 0.7, k = 4: (1 - 0.16807) / 0.3 = 2.7731
        self.assertAlmostEqual(expected_tokens(0.7, 4), 2.7731, places=12)
        # a = 0.5, k = 1: (1 - 0.25) / 0.5 = 1.5
        self.assertAlmostEqual(expected_tokens(0.5, 1), 1.5, places=12)
        self.assertEqual(expected_tokens(0.0, 4), 1.0)      # only the target's own token
        self.assertEqual(expected_tokens(1.0, 4), 5.0)      # every draft accepted, plus one

    def test_more_acceptance_never_yields_fewer_tokens(self):
        values = [expected_tokens(a / 20, 5) for a in range(21)]
        self.assertEqual(values, sorted(values))


class StepCost(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.target, cls.draft = load_model("llama-3.1-8b"), load_model("llama-3.2-1b")
        cls.dev = load_device("h100-sxm")
        cls.w = Workload()
        cls.r = roof(cls.dev, DTYPES["bf16"])
        cls.plain = D.decode(cls.target, cls.w, cls.dev, 1000, 201)
        cls.rec = speculative(cls.target, cls.draft, cls.w, cls.w, cls.dev, 1000, 201, 0.8, 3,
                              cls.r, cls.plain)

    def test_verify_is_a_forward_pass_of_k_plus_one_tokens(self):
        fwd = forward(self.target, Workload(tokens=4, history=1000), self.dev)
        self.assertAlmostEqual(self.rec["first_step"]["verify_s"], fwd["totals"]["roofline_time_s"], places=15)
        self.assertEqual(self.rec["first_step"]["verify_matrix_flops"], fwd["totals"]["matrix_flops"])

    def test_draft_is_k_decode_steps(self):
        # the draft's three steps at histories 1000, 1001, 1002, each a one-token forward pass
        steps = [forward(self.draft, Workload(history=h), self.dev)["totals"] for h in (1000, 1001, 1002)]
        self.assertAlmostEqual(self.rec["first_step"]["draft_s"], sum(t["roofline_time_s"] for t in steps),
                               places=15)
        self.assertEqual(self.rec["first_step"]["draft_matrix_flops"], sum(t["matrix_flops"] for t in steps))

    def test_decode_time_and_speedup(self):
        e = (1 - 0.8 ** 4) / 0.2                       # 2.952
        s = self.rec
        self.assertAlmostEqual(s["expected_tokens_per_step"], e, places=12)
        self.assertEqual(s["mid_step"]["history"], 1000 + 200 // 2)
        self.assertAlmostEqual(s["decode_s"], 200 / e * s["mid_step"]["time_s"], places=15)
        self.assertAlmostEqual(s["speedup_vs_plain_decode"],
                               self.plain["latency"]["tpot_mean_s"] / (s["mid_step"]["time_s"] / e), places=12)
        # memory-bound at B = 1: verifying 4 tokens costs about one decode step, so speculation wins
        self.assertGreater(s["speedup_vs_plain_decode"], 1.5)

    def test_capacity_counts_both_models(self):
        # weights: target 16,060,522,496 + draft 2 x 1,235,814,400 = 2,471,628,800;
        # cache per request at P + G - 1 + k = 1203 tokens: (131,072 + 32,768) x 1203
        s = self.rec
        self.assertEqual(s["draft_weight_bytes"], 2_471_628_800)
        self.assertEqual(s["cache_bytes_per_request"], (131_072 + 32_768) * 1203)
        room = 85_520_809_984 - 8_552_080_998 - 16_060_522_496 - 2_471_628_800   # H100 SXM allocatable
        self.assertEqual(s["max_requests"], room // ((131_072 + 32_768) * 1203))


class Errors(unittest.TestCase):
    def run_bad(self, *args):
        status, out, err = run_cli("decode", "--model", "llama-3.1-8b", "--input-len", "64",
                                   "--output-len", "8", *args)
        self.assertEqual(status, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1)
        return err

    def test_tokenizer_must_match(self):
        self.assertIn("shared tokenizer",
                      self.run_bad("--draft-model", "qwen3-0.6b", "--acceptance-rate", "0.5"))

    def test_flags_go_together(self):
        self.assertIn("go together", self.run_bad("--draft-model", "llama-3.2-1b"))
        self.assertIn("go together", self.run_bad("--acceptance-rate", "0.5"))

    def test_rate_range_and_sweep(self):
        self.assertIn("[0, 1]", self.run_bad("--draft-model", "llama-3.2-1b", "--acceptance-rate", "nan"))
        self.assertIn("--batch-sweep", self.run_bad("--draft-model", "llama-3.2-1b",
                                                    "--acceptance-rate", "0.5", "--batch-sweep"))


if __name__ == "__main__":
    unittest.main()

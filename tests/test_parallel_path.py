"""`parallel --comm-path` and the book's dense-communication conventions (--logits-dtype,
--pp-send replicated, --token-feedback), against figures derived by hand.

Qwen3-8B: hidden 4,096, 36 layers, vocabulary 151,936; one token of BF16 activations is
S = 4,096 x 2 = 8,192 B. Links 2 us and 50 GB/s on one switch of 8 devices."""

import json
import unittest

import support  # noqa: F401
from support import run_cli

from infracalc import comm

LINKS = ("--alpha-up", "2us", "--link-bw-up", "50GB/s")
BOOK = ("--logits-dtype", "fp32", "--pp-send", "replicated", "--comm-path", "--token-feedback")


def path(*layout, options=BOOK, input_len="1"):
    status, out, err = run_cli("parallel", "--model", "qwen3-8b", "--devices", "8", *layout, "--input-len",
                               input_len, "--output-len", "1", *LINKS, *options, "--format", "json")
    assert status == 0, err
    return json.loads(out)["communication_path"]["prefill"]


class BookConventions(unittest.TestCase):
    def test_tp8_one_token(self):
        # 73 all-reduces (embedding + 2 x 36) of S: 8 ranks x 2 x 7/8 x 8,192 = 114,688 B each,
        # 14 steps x 2 us + 14,336 B / 50 GB/s; FP32 logits S = 151,936 x 4 = 607,744, all-gather
        # 8 x 7/8 x S = 4,254,208 B, 7 steps + 531,776 B / B; token broadcast 7 x 4 = 28 B in
        # 3 rounds of 2 us + 4 B / B.
        p = path("--tp", "8")
        self.assertEqual(p["bytes_sent_per_replica"], 73 * 114_688 + 4_254_208 + 28)   # 12,626,460
        self.assertEqual(p["operations"], 75)
        self.assertAlmostEqual(p["startup_s"], (73 * 14 + 7 + 3) * 2e-6, places=15)   # 2.064 ms
        self.assertAlmostEqual(p["bandwidth_s"], (73 * 14_336 + 531_776 + 3 * 4) / 50e9, places=15)
        self.assertAlmostEqual(p["serial_s"], 0.00209556632, places=15)   # the book's figure

    def test_tp8_prompt_8192(self):
        # S = 8,192 x 8,192 = 67,108,864 B per all-reduce; the head gathers the last position only.
        p = path("--tp", "8", input_len="8192")
        self.assertEqual(p["bytes_sent_per_replica"], 73 * 8 * 2 * 7 * 67_108_864 // 8 + 4_254_208 + 28)
        self.assertAlmostEqual(p["bandwidth_s"], (73 * 2 * 7 * 67_108_864 // 8 + 531_776 + 12) / 50e9, places=12)
        self.assertAlmostEqual(p["serial_s"] * 1e3, 173.537783, places=6)

    def test_tp2_pp4(self):
        # 73 all-reduces over 2 ranks: 2 x 1 x 8,192 = 16,384 B, 2 steps + 8,192 B / B each; 3
        # boundaries, each TP rank sending the whole 8,192 B (16,384 B, 1 step + 8,192 B / B);
        # logits 2 x 1/2 x 607,744 = 607,744 B (1 step + 303,872 B / B); token 4 B to the first
        # stage (1 step) and 4 B broadcast to the other TP rank (1 round).
        p = path("--tp", "2", "--pp", "4")
        self.assertEqual(p["bytes_sent_per_replica"], 73 * 16_384 + 3 * 16_384 + 607_744 + 4 + 4)   # 1,852,936
        self.assertEqual(p["operations"], 79)
        self.assertAlmostEqual(p["startup_s"], (73 * 2 + 3 + 1 + 2) * 2e-6, places=15)   # 0.304 ms
        self.assertAlmostEqual(p["bandwidth_s"], (73 * 8_192 + 3 * 8_192 + 303_872 + 8) / 50e9, places=15)

    def test_pp8(self):
        # 7 boundary sends of 8,192 B and the token's 4 B: 8 steps.
        p = path("--pp", "8")
        self.assertEqual(p["bytes_sent_per_replica"], 7 * 8_192 + 4)
        self.assertAlmostEqual(p["startup_s"], 8 * 2e-6, places=15)
        self.assertAlmostEqual(p["bandwidth_s"], (7 * 8_192 + 4) / 50e9, places=15)

    def test_defaults_differ_by_the_named_conventions(self):
        # Our defaults: BF16 logits (S = 303,872), Megatron's scatter/gather at a boundary (a
        # 4,096 B slice per TP rank, then an all-gather of 8,192 B over 2: 2 steps), no feedback.
        p = path("--tp", "2", "--pp", "4", options=("--comm-path",))
        self.assertEqual(p["bytes_sent_per_replica"], 73 * 16_384 + 3 * (2 * 4_096 + 2 * 4_096) + 303_872)
        self.assertAlmostEqual(p["startup_s"], (73 * 2 + 3 * 2 + 1) * 2e-6, places=15)


class Formulas(unittest.TestCase):
    link = comm.Link("up", "test", 50 * 10**9, alpha_s=2e-6)

    def test_binomial_broadcast(self):
        c = comm.Collective("b", "broadcast", 4, 8, "up")
        self.assertAlmostEqual(comm.time_s(c, self.link, "binomial"), 3 * (2e-6 + 4 / 50e9), places=18)

    def test_bandwidth_share_of_a_ring_all_reduce(self):
        c = comm.Collective("a", "all_reduce", 8192, 8, "up")
        self.assertAlmostEqual(comm.bandwidth_s(c, {"up": self.link, "out": None}), 2 * 7 / 8 * 8192 / 50e9,
                               places=18)

    def test_feedback_needs_the_path(self):
        status, _, err = run_cli("parallel", "--model", "qwen3-8b", "--tp", "2", "--input-len", "1",
                                 "--output-len", "1", "--token-feedback")
        self.assertEqual(status, 2)
        self.assertIn("--token-feedback applies with --comm-path", err)


if __name__ == "__main__":
    unittest.main()

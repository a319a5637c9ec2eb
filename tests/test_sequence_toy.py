"""`budget sequence-toy`: work and state of a toy RNN against a toy causal Transformer; values by hand."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402,F401  (puts calculations/ on sys.path)

import math  # noqa: E402

from infracalc.analyses.sequence_toy import call_flops, sequence_toy, toy_values  # noqa: E402


class Work(unittest.TestCase):
    def test_call_flops(self):
        # D 4, F 8, 3 layers. RNN, 4 positions: 3 x 4 x 2 x 2 x 16 = 768. Transformer, positions 0..3:
        # weights 3 x (4 x 2 x 4 x 16 + 2 x 2 x 4 x 4 x 8) = 3 x 1024 = 3,072; attention 3 x 16 x (1+2+3+4) = 480.
        self.assertEqual(call_flops("rnn", [0, 1, 2, 3], 3, 4, 8), (768, 0))
        self.assertEqual(call_flops("transformer", [0, 1, 2, 3], 3, 4, 8), (3072, 480))
        # one position at t = 4 (the next token from the cache): 3 x 256 + 3 x 16 x 5 = 768 + 240
        self.assertEqual(call_flops("transformer", [4], 3, 4, 8), (768, 240))

    def test_modes_and_state(self):
        r = sequence_toy(tokens=4, layers=3, d=4, f=8, vocabulary=5)
        work = {(w["model"], w["mode"]): w["matrix_flops"] for w in r["work"]}
        # every prefix recomputed: Transformer weights 256 x (1+2+3+4) x 3 = 7,680, attention 3 x 16 x (1+3+6+10) = 960
        self.assertEqual(work[("transformer", "every_prefix_recomputed")], 8640)
        self.assertEqual(work[("rnn", "every_prefix_recomputed")], 1920)       # 10 position-evaluations x 192
        # after 5 tokens the Transformer holds 2 x 3 x 5 x 4 = 120 binary64 values, the RNN 12
        last = {s["model"]: s for s in r["states"] if s["after_tokens"] == 5}
        self.assertEqual((last["transformer"]["state_bytes"], last["rnn"]["state_bytes"]), (960, 96))
        self.assertEqual((r["rnn_parameters"], r["transformer_parameters"], r["input_table_parameters"]), (96, 384, 20))
        self.assertEqual((r["rnn_critical_path_cells"], r["transformer_critical_path_cells"]), (6, 3))


class Listing(unittest.TestCase):
    def test_matrices(self):
        r = sequence_toy(tokens=4, layers=3, d=4, f=8, vocabulary=5)
        # RNN: 24 positions over the five modes x 3 layers x 2 products; Transformer: per call and layer 6 weight
        # products + 2 per position: 3 x (14 + 4 x 6 + 2 x 10 + 4 x 8 + 16 + 8) = 342
        self.assertEqual(len(r["matrices"]), 144 + 342)
        row = next(m for m in r["matrices"] if m["model"] == "transformer" and m["mode"] == "every_prefix_recomputed"
                   and m["call"] == 1 and m["operation"] == "qk_t1")
        # [1, 4] x [4, 2]: 16 FLOPs, 32 / 64 / 16 binary64 bytes
        self.assertEqual((row["flops"], row["lhs_bytes"], row["rhs_bytes"], row["output_bytes"]), (16, 32, 64, 16))
        for w in r["work"]:
            self.assertEqual(w["matrix_flops"], sum(m["flops"] for m in r["matrices"]
                                                    if (m["model"], m["mode"]) == (w["model"], w["mode"])))


class Values(unittest.TestCase):
    def test_one_layer_one_wide(self):
        # D = F = 1, one layer, token 0 then the supplied token 1. Weights ((17 + 11 + 7 s) mod 19 - 9) / 32:
        # table (s 1) 7/32, Wx (s 2) -5/32, V (s 6) 4/32, O (s 7) -8/32, up (s 8) -1/32, down (s 9) 6/32.
        # Input at position 0: 7/32 + 1/64 = 15/64. RNN: tanh(15/64 x -5/32). Transformer: attention over
        # itself returns V x, so m = x + x (4/32)(-8/32) = x 31/32, then m + tanh(-m / 32) x 6/32.
        rows = toy_values(tokens=1, layers=1, d=1, f=1, vocabulary=2)
        first = {r["model"]: r for r in rows if r["prefix_tokens"] == 1}
        x = 15 / 64
        self.assertAlmostEqual(first["rnn"]["recomputed"][0], math.tanh(x * -5 / 32), delta=1e-16)
        m = x * 31 / 32
        self.assertAlmostEqual(first["transformer"]["recomputed"][0], m + math.tanh(-m / 32) * 6 / 32, delta=1e-16)

    def test_book_outputs(self):
        r = sequence_toy(tokens=4, layers=3, d=4, f=8, vocabulary=5)
        out = {(o["model"], o["prefix_tokens"]): o for o in r["outputs"]}
        # the book's values, to 12 significant digits; the state-reused path equals the recomputed one exactly
        self.assertEqual(out[("transformer", 5)]["recomputed"], "0.0221323125337, -0.117663579302, 0.229741261875, "
                                                                 "0.15702929195")
        self.assertEqual(out[("rnn", 1)]["reused"], "-0.00250523976467, 0.0041134858578, -0.000700130146447, "
                                                    "0.00736976997757")
        self.assertEqual(r["max_abs_difference"], 0.0)


class Sizes(unittest.TestCase):
    def test_beyond_a_teaching_toy_is_refused_in_one_line(self):
        # the work grows as T^2 L (D^2 + D F): --tokens 1024 ran for over 20 s before the caps
        for option, value in (("--tokens", "17"), ("--layers", "9"), ("--width", "17"), ("--ff-width", "65"),
                              ("--vocabulary", "4097")):
            with self.subTest(option=option):
                status, out, err = support.run_cli("budget", "sequence-toy", option, value)
                self.assertEqual((status, out), (2, ""))
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(f"{option} at most", err)

    def test_the_caps_themselves_are_accepted(self):
        status, _, _ = support.run_cli("budget", "sequence-toy", "--tokens", "16", "--layers", "1",
                                       "--vocabulary", "4096", "--format", "json")
        self.assertEqual(status, 0)


if __name__ == "__main__":
    unittest.main()

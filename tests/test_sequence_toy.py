"""`budget sequence-toy`: work and state of a toy RNN against a toy causal Transformer; values by hand."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402,F401  (puts calculations/ on sys.path)

from infracalc.analyses.sequence_toy import call_flops, sequence_toy  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()

"""`train --supervised-tokens N`: the output head and the loss run on the N compacted supervised
tokens of each sequence only; expected values derived by hand in the comments."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402


def flops(*extra):
    code, out, err = run_cli("train", "--model", "qwen3-8b", "--seq", "8192", "--grad-dtype", "fp32",
                             "--format", "json", *extra)
    assert code == 0, err
    r = json.loads(out)
    ops = {o["name"]: o for o in r["operators_per_micro_batch"]}
    return r["flops_per_step"], ops, r["inputs"]


class SupervisedTokens(unittest.TestCase):
    def test_compact_half_by_hand(self):
        # Qwen3-8B: hidden 4096, vocabulary 151,936. The head's forward is 2*4096*151936 = 1,244,659,712
        # FLOPs per row, forward + backward 3x = 3,733,979,136; 4,096 fewer rows drop 15,294,378,541,056:
        # 431,367,993,163,776 (all rows, the book's 431.367993 TFLOPs) - that = 416,073,614,622,720
        # (the book's training-qwen3-8b-compact-half, 416.073615).
        full, ops_full, _ = flops()
        half, ops_half, inputs = flops("--supervised-tokens", "4096")
        self.assertEqual(full["model_flops"], 431_367_993_163_776)
        self.assertEqual(full["model_flops"] - half["model_flops"], 4096 * 3 * 2 * 4096 * 151936)
        self.assertEqual(half["model_flops"], 416_073_614_622_720)
        self.assertEqual(ops_half["lm_head"]["forward_matrix_flops"], 2 * 4096 * 4096 * 151936)
        # loss: 4 FLOPs per logit + 2 per row forward, 3 + 1 backward, on 4,096 rows
        self.assertEqual(ops_half["cross_entropy"]["forward_vector_flops"], 4096 * (151936 * 4 + 2))
        self.assertEqual(ops_half["cross_entropy"]["backward_vector_flops"], 4096 * (151936 * 3 + 1))
        self.assertEqual(inputs["supervised_tokens"], 4096)
        # every decoder-layer row is unchanged
        self.assertEqual(ops_half["gate_proj"], ops_full["gate_proj"])

    def test_bad_count(self):
        code, _, err = run_cli("train", "--model", "qwen3-8b", "--seq", "8", "--supervised-tokens", "9")
        self.assertEqual(code, 2)
        self.assertIn("exceeds --seq", err)


if __name__ == "__main__":
    unittest.main()

"""Training FLOPs per step: exact counts by hand and the closed forms beside them.

Qwen3-8B, one sequence of T = 8,192 tokens (see test_dense for the per-layer
derivation): linear FLOPs per token 13,891,534,848 (36 layers) x 8,192 =
113,799,453,474,816; the head on all 8,192 positions 2 x 4,096 x 151,936 x
8,192 = 10,196,252,360,704; causal attention 19,793,625,219,072. Forward
matrix = 143,789,331,054,592; model FLOPs = 3 x that = 431,367,993,163,776;
6ND = 6 x 8,190,735,360 x 8,192 = 402,591,024,414,720.

GPT-3 175B (l = 96, h = 12,288, V = 51,200), B = 1, s = 2,048: forward matrix
per sequence = 24 B s l h^2 (QKV 6h^2, o 2h^2, MLP 16h^2 per token and layer)
+ causal attention 4 h x s(s+1)/2 pairs x l + head 2 B s h V; with the full
square (s^2 pairs) 3 x that is Narayanan et al.'s 72Bslh^2 + 12Bs^2lh + 6BshV,
and with a recompute of the layers eq. 3's 96Bslh^2 + 16Bs^2lh + 6BshV.
"""

import unittest

from support import Workload, build, load_model

from infracalc.analyses import train_flops as tf
from infracalc.errors import UserError


def step(model, tokens, batch=1, mla="absorbed", **kw):
    arch = load_model(model)
    return arch, tf.step(arch, Workload(batch=batch, tokens=tokens, mla=mla), **kw)


class Qwen3Exact(unittest.TestCase):
    def setUp(self):
        self.arch, self.st = step("qwen3-8b", 8192)

    def test_forward_and_model_flops(self):
        self.assertEqual(self.st.forward_matrix_flops, 143_789_331_054_592)
        self.assertEqual(self.st.model_flops, 431_367_993_163_776)
        self.assertEqual(self.st.hardware_flops, self.st.model_flops)   # no recompute

    def test_6nd(self):
        six = tf.conventions(self.arch, self.st, 1, 8192)[1]
        self.assertEqual(six.flops, 402_591_024_414_720)
        self.assertAlmostEqual(six.ratio, 402_591_024_414_720 / 431_367_993_163_776)

    def test_palm_convention(self):
        # 6 (N - V h) D + 12 L H Q T D: N - Vh = 8,190,735,360 - 151,936 x 4,096 = 7,568,405,504
        palm = tf.conventions(self.arch, self.st, 1, 8192)[2]
        self.assertEqual(palm.flops, 6 * 7_568_405_504 * 8192 + 12 * 36 * 32 * 128 * 8192 * 8192)

    def test_backward_is_twice_forward_matrix(self):
        self.assertEqual(self.st.backward_matrix_flops, 2 * self.st.forward_matrix_flops)
        for r in self.st.ops:
            self.assertEqual(r.backward_matrix_flops, 2 * r.forward_matrix_flops, r.name)

    def test_embedding_backward_is_a_scatter_add(self):
        emb = next(r for r in self.st.ops if r.kind == "embedding")
        self.assertEqual((emb.forward_matrix_flops, emb.backward_matrix_flops), (0, 0))
        self.assertEqual(emb.backward_vector_flops, 8192 * 4096)    # one add per element of dY

    def test_loss_on_every_position(self):
        loss = next(r for r in self.st.ops if r.kind == "loss")
        # forward: 4 per logit + 2 per row; backward 3 per logit + 1 per row
        self.assertEqual(loss.forward_vector_flops, 8192 * 151936 * 4 + 8192 * 2)
        self.assertEqual(loss.backward_vector_flops, 8192 * 151936 * 3 + 8192)

    def test_recompute_levels(self):
        attn_core = 19_793_625_219_072
        _, sel = step("qwen3-8b", 8192, recompute="selective")
        self.assertEqual(sel.recompute_matrix_flops, attn_core)
        _, full = step("qwen3-8b", 8192, recompute="full")
        # one forward of the 36 layers: everything but the head
        self.assertEqual(full.recompute_matrix_flops, 143_789_331_054_592 - 10_196_252_360_704)
        self.assertEqual(full.model_flops, self.st.model_flops)
        _, flash = step("qwen3-8b", 8192, flash_recompute=True)
        # backward of the two attention matmuls 2.5x instead of 2x: + 0.5 x attn_core
        self.assertEqual(flash.hardware_flops - flash.model_flops, attn_core // 2)
        self.assertEqual(flash.model_flops, self.st.model_flops)

    def test_batch_scales_linearly(self):
        _, two = step("qwen3-8b", 8192, batch=2)
        self.assertEqual(two.model_flops, 2 * self.st.model_flops)

    def test_bad_inputs(self):
        with self.assertRaises(UserError):
            tf.step(self.arch, Workload(tokens=8), recompute="some")
        with self.assertRaises(UserError):
            tf.step(self.arch, Workload(tokens=8, history=4))


class MlaTrainsNaive(unittest.TestCase):
    def test_deepseek_v2_lite(self):
        # K and V up-projected per head (kv_b_proj on every token), no absorbed products;
        # QK^T over qk_nope + qk_rope = 192 dims, PV over v_head_dim = 128, 16 heads, 27 layers
        arch, st = step("deepseek-v2-lite", 64, mla="absorbed")
        names = {r.name for r in st.ops}
        self.assertIn("kv_b_proj", names)
        self.assertNotIn("q_absorb (W_UK)", names)
        qk = sum(r.forward_matrix_flops for r in st.ops if r.name == "attn_qk")   # dense + MoE layers
        self.assertEqual(qk, 27 * 2 * 16 * 192 * (64 * 65 // 2))


class Gpt3ClosedForms(unittest.TestCase):
    B, S, L, H, V = 1, 2048, 96, 12288, 51200

    def test_exact_by_hand(self):
        arch, st = step("gpt3-175b", self.S)
        b, s, l, h, v = self.B, self.S, self.L, self.H, self.V
        forward = 24 * b * s * l * h * h + 4 * h * (s * (s + 1) // 2) * l + 2 * b * s * h * v
        self.assertEqual(st.forward_matrix_flops, forward)
        self.assertEqual(st.model_flops, 3 * forward)

    def test_full_square_equals_narayanan(self):
        arch, st = step("gpt3-175b", self.S)
        t = build(arch, Workload(tokens=self.S, logits="all")).totals
        square = 3 * (t.linear_flops + t.attention_flops_rectangular)
        self.assertEqual(square, tf.megatron_closed_form(self.B, self.S, self.L, self.H, self.V, recompute=False))
        # eq. 3 adds one forward of the layers (square attention)
        eq3 = tf.megatron_closed_form(self.B, self.S, self.L, self.H, self.V)
        self.assertEqual(eq3 - square, 24 * self.S * self.L * self.H ** 2 + 4 * self.S ** 2 * self.L * self.H)
        meg = tf.conventions(arch, st, 1, self.S)[3]
        self.assertEqual(meg.flops, eq3)
        self.assertEqual(meg.exact_flops, st.model_flops + st.full_recompute_matrix_flops)
        self.assertGreater(meg.ratio, 1)    # causal halving: the exact count is smaller


if __name__ == "__main__":
    unittest.main()


class TrainCommand(unittest.TestCase):
    """The single-device `train` command echoes the exact figures above."""

    def test_json(self):
        import json

        from support import run_cli
        status, out, err = run_cli("train", "--model", "qwen3-8b", "--seq", "8192", "--global-batch", "2",
                                   "--format", "json")
        self.assertEqual((status, err), (0, ""))
        rec = json.loads(out)
        self.assertEqual(rec["flops_per_step"]["model_flops"], 2 * 431_367_993_163_776)
        six = next(c for c in rec["closed_forms"] if c["name"] == "6ND")
        self.assertEqual(six["flops"], 2 * 402_591_024_414_720)
        self.assertFalse(rec["memory"]["fits"])
        mem = rec["memory"]["stages"][0]
        # AdamW, bf16 weights and grads: 2 + 2 + 12 bytes per parameter
        self.assertEqual(mem["weights_bytes"] + mem["grads_bytes"] + mem["optimizer_bytes"],
                         16 * 8_190_735_360)
        self.assertEqual(mem["total_bytes"], 16 * 8_190_735_360 + mem["activations_bytes"])
        self.assertFalse(mem["fits"])   # 131 GB of model states > 80 GB

    def test_errors(self):
        from support import run_cli
        for argv, needle in ((("--global-batch", "3", "--micro-batch", "2"), "not a multiple"),
                             (("--grad-dtype", "int4"), "grad-dtype"),
                             (("--weight-dtype", "mxfp4"), "whole-byte")):
            status, out, err = run_cli("train", "--model", "qwen3-8b", "--seq", "16", *argv)
            self.assertEqual(status, 2, argv)
            self.assertIn(needle, err)
            self.assertEqual(len(err.strip().splitlines()), 1)


class OpTimes(unittest.TestCase):
    def test_copies_every_field_by_name(self):
        from infracalc.ops import Op
        op = Op("x", "linear", "[1]", matrix_flops=1, rect_flops=2, vector_flops=3, weight_read=4,
                act_read=5, kv_read=6, act_write=7, kv_write=8, compute="bf16", layers="-",
                repeats=1, kind="gemm", weight="w", saved_bytes=9, saved_replicated=10)
        got = op.times(3, "0-2")
        # the rule, not a list: every integer count of the row scales with the repeat (the repeat
        # itself is multiplied); text fields are copied. A new count field is covered unlisted.
        scaled = {f for f in Op._fields if type(getattr(op, f)) is int and f != "repeats"}
        self.assertGreaterEqual(len(scaled), 10)
        for f in Op._fields:
            want = {"layers": "0-2", "repeats": 3}.get(f, getattr(op, f) * 3 if f in scaled else getattr(op, f))
            self.assertEqual(getattr(got, f), want, f)

"""Training's fused attention rates (efficiency.attention): FlashAttention-3's per head dimension and
sequence figures, and how train_time prices an attention row with them."""

import unittest

from support import Workload, load_model
from infracalc.analyses import train_flops, train_time
from infracalc.analyses.efficiency import attention as A
from infracalc.dtypes import dtype
from infracalc.ledger import operators
from infracalc.load.hardware import load_device as _device


class TableFigure(unittest.TestCase):
    def test_published_points(self):
        # FA3 Figure 5(b): head dim 64, causal, 4k and 8k: 420 and 460 TFLOP/s; Figure 6(a): 453 at 4k
        self.assertEqual(A.table_figure(A.FORWARD_CAUSAL, 64, 4096), 420)
        self.assertEqual(A.table_figure(A.FORWARD_CAUSAL, 64, 8192), 460)
        self.assertEqual(A.table_figure(A.BACKWARD, 64, 4096), 453)
        # Figure 5(d) and 6(b), head dim 128 at 8k: 602 forward, 559 backward
        self.assertEqual(A.table_figure(A.FORWARD_CAUSAL, 128, 8192), 602)
        self.assertEqual(A.table_figure(A.BACKWARD, 128, 8192), 559)

    def test_interpolation_and_clamps(self):
        # halfway in log2 between 4k and 8k: (420 + 460) / 2 = 440
        self.assertAlmostEqual(A.table_figure(A.FORWARD_CAUSAL, 64, 2 ** 12.5), 440.0, places=9)
        # head dim 96, halfway between 64 and 128 at 4k: (420 + 579) / 2 = 499.5
        self.assertAlmostEqual(A.table_figure(A.FORWARD_CAUSAL, 96, 4096), 499.5, places=9)
        # below 512 the 512 figure (197), below head dim 64 the 64 column; backward above 128: 128's
        self.assertEqual(A.table_figure(A.FORWARD_CAUSAL, 64, 256), 197)
        self.assertEqual(A.table_figure(A.FORWARD_CAUSAL, 32, 4096), 420)
        self.assertEqual(A.table_figure(A.BACKWARD, 256, 16384), 561)


class Rates(unittest.TestCase):
    def test_h100_is_the_table(self):
        # H100 SXM (989.5 TFLOP/s in the device file): forward 740/989 of the peak at FA3's best shape, so a
        # head-dim-64 row whose queries see 2,048 keys (the causal 4k figure, 420) runs at
        # 989.5e12 x (740/989) x (420/740) = 989.5e12 x 420 / 989 FLOP/s
        r = A.training_rates(_device("h100-sxm"))
        f = 1e15
        self.assertAlmostEqual(r.forward_s(f, 64, 2048), f / (989.5e12 * 420 / 989), delta=1e-12)
        # backward: FA's 2.5x the forward work at Figure 6(a)'s 4k... at 2,048 keys per query the 2k
        # figure, 422: 2.5 f / (989.5e12 x 422 / 989)
        self.assertAlmostEqual(r.backward_s(f, 64, 2048), 2.5 * f / (989.5e12 * 422 / 989), delta=1e-12)
        self.assertEqual(r.basis, "measured")

    def test_b200_scales_flashmla_by_fa3s_shape(self):
        # B200: FlashMLA's 1460 forward and 1000 backward TFLOP/s (of 2250), FA3's shape on top:
        # forward at head dim 128 and 4,096 keys per query (the causal 8k figure, 602):
        # 1460e12 x 602 / 740; backward at 4,096 keys (Figure 6(b)'s 4k, 542): 1000e12 x 542 / 561
        r = A.training_rates(_device("b200"))
        f = 1e15
        self.assertAlmostEqual(r.forward_s(f, 128, 4096), f / (1460e12 * 602 / 740), delta=1e-12)
        self.assertAlmostEqual(r.backward_s(f, 128, 4096), 2.5 * f / (1000e12 * 542 / 561), delta=1e-12)
        # a row without a head dimension: the device's best figures
        self.assertAlmostEqual(r.forward_s(f, 0, 4096), f / 1460e12, delta=1e-12)

    def test_no_published_figure_no_rates(self):
        self.assertIsNone(A.training_rates(_device("mi300x")))

    def test_never_above_the_peak(self):
        # every fraction, and the table's shape factor, is at most 1: no attention row is predicted
        # faster than the bound's matrix peak
        self.assertTrue(all(v <= 1 for v in A.BACKWARD_MEASURED.values()))
        self.assertLessEqual(max(max(v) for v in A.FORWARD_CAUSAL.values()), A.FORWARD_BEST)
        self.assertLessEqual(max(max(v) for v in A.BACKWARD.values()), A.BACKWARD_BEST)


class TrainTimeRows(unittest.TestCase):
    def setUp(self):
        self.arch = load_model("gpt-oss-120b")
        bf16 = dtype("bf16")
        self.w = train_flops.training_workload(Workload(batch=1, tokens=4096, logits="all", weight_dtype=bf16,
                                                        act_dtype=bf16, kv_dtype=bf16))

    def test_geometry_of_gpt_oss_rows(self):
        # full causal layer: pairs T(T+1)/2 over T queries = (T + 1) / 2 = 2048.5 keys per query;
        # 128-token window: (128 x 129 / 2 + 128 x (T - 128)) / T = (8256 + 507904) / 4096 = 126.015625
        got = {}
        for op in operators(self.arch, self.w, per_layer=True):
            if op.kind == "attention" and op.name == "attn_qk":
                got.setdefault(op.head_dim, set()).add(train_time.row_terms(op, self.w, 0, "none", False)[-1])
        self.assertEqual(got, {64: {(64, 2048.5), (64, 126.015625)}})

    def test_the_estimate_keeps_the_matrix_peak(self):
        # the full-attention layer's QK^T (2,048.5 keys per query)
        op = next(o for o in operators(self.arch, self.w, per_layer=True)
                  if o.name == "attn_qk" and 2 * o.matrix_flops > o.rect_flops)
        terms = [train_time.row_terms(op, self.w, 0, "none", False)]
        dev = _device("h100-sxm")
        roofs = train_time.roofs_of(dev, self.w)
        fwd, bwd, _, _ = train_time.row_seconds(terms, roofs, 1)[0]
        self.assertAlmostEqual(fwd, max(op.matrix_flops / 989.5e12 + op.vector_flops / roofs[1].vector_flops_per_s,
                                        op.bytes_moved / roofs[1].bytes_per_s), delta=1e-15)
        # with the rates: the forward at the causal 4k figure (2 x 2048.5 keys), the backward 2.5x at 2k's
        rates = A.training_rates(dev)
        fwd_p, bwd_p, _, _ = train_time.row_seconds(terms, train_time.roofs_of(dev, self.w, attention=rates), 1)[0]
        self.assertAlmostEqual(fwd_p, max(rates.forward_s(op.matrix_flops, 64, 2048.5)
                                          + op.vector_flops / roofs[1].vector_flops_per_s,
                                          op.bytes_moved / roofs[1].bytes_per_s), delta=1e-15)
        self.assertGreater(fwd_p, fwd)
        self.assertGreater(bwd_p, bwd)


if __name__ == "__main__":
    unittest.main()

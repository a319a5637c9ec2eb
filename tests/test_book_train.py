"""train --scalar-count book: the book's training tally (analyses.train_book, ops.TrainCount),
each rule on a small case worked by hand, then the book's Qwen3-8B totals
(bojieli/ai-infra-book:calculations/research/training-nonmatrix-completion/summary.json)."""

import json
import unittest

from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc import ledger  # noqa: E402
from infracalc.analyses import train_book  # noqa: E402
from infracalc.analyses.train import Setup  # noqa: E402
from infracalc.analyses.train_flops import book_cross_entropy  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.ops import (TrainCount, train_count, train_evaluated, train_rmsnorm, train_softmax,  # noqa: E402
                           train_swiglu)
from infracalc.workload import Workload  # noqa: E402


class Rules(unittest.TestCase):
    def test_rmsnorm(self):
        # R = 2 rows of D = 3: forward 2 x (4 x 3 + 1) = 26, 2 rsqrt; backward dx 6 x 6 = 36 and
        # the weight gradient 2 x 3 multiplies + 1 x 3 adds = 9: 45; keeps z (6) and r (2) in FP32.
        c = train_rmsnorm(2, 3)
        self.assertEqual((c.forward, c.backward, c.forward_specials, c.saved_bytes, c.cast_in, c.cast_out),
                         (26, 45, (("rsqrt", 2),), 32, 6, 6))

    def test_swiglu_and_its_recompute(self):
        # E = 4: forward g s and a u = 8, 4 sigmoids; backward 6 x 4 = 24; a, s, u kept: 48 B.
        # recompute-silu: g, u kept (32 B); s and a again: 4 sigmoids and 4 multiplies more (28),
        # 32 B allocated again per instance.
        c = train_swiglu(4)
        self.assertEqual((c.forward, c.backward, c.forward_specials, c.saved_bytes), (8, 24, (("sigmoid", 4),), 48))
        r = c.under("recompute-silu")
        self.assertEqual((r.forward, r.backward, r.backward_specials, r.saved_bytes, r.temp_bytes),
                         (8, 28, (("sigmoid", 4),), 32, 32))
        self.assertIs(c.under("save-nonlinear"), c)

    def test_causal_softmax(self):
        # T = 3 causal rows of widths 1, 2, 3 (6 pairs): forward (4K - 1) = 3 + 7 + 11 = 21, 6 exp,
        # 0 + 1 + 2 = 3 max compares; backward (5K - 1) = 4 + 9 + 14 = 27; 6 FP32 probabilities.
        c = train_softmax(3, 6)
        self.assertEqual((c.forward, c.backward, dict(c.forward_specials), c.saved_bytes),
                         (21, 27, {"exp": 6, "max_compare": 3}, 24))

    def test_mean_cross_entropy(self):
        # S = 2 rows of V = 5: forward 2 x (3 x 5 + 1) + the mean 2 = 34, 10 exp, 2 log, 8 compares;
        # backward 2 x (5 + 1) = 12; 10 FP32 probabilities; 10 logits cast in.
        c = book_cross_entropy(2, 5)
        self.assertEqual((c.forward, c.backward, dict(c.forward_specials), c.saved_bytes, c.cast_in),
                         (34, 12, {"exp": 10, "log": 2, "max_compare": 8}, 40, 10))

    def test_times_scales_all_but_the_reallocation(self):
        c = train_swiglu(4).times(3)
        self.assertEqual((c.forward, c.backward, c.saved_bytes, c.temp_bytes, c.forward_specials),
                         (24, 72, 144, 0, (("sigmoid", 12),)))
        self.assertEqual(c.recomputed.temp_bytes, 32)
        self.assertEqual(c.recomputed.backward, 84)

    def test_adamw(self):
        # P = 10: 14 x 10 + 6 = 146, 10 sqrt, 2 pow; reads gradient, master, m, v 4 B each (160 B),
        # writes master, m, v (120 B) and the BF16 weights (20 B).
        a = train_book.adamw(10, Setup(grad_bytes=4))
        self.assertEqual((a["scalar_flops"], a["special_ops"], a["read_bytes"], a["write_bytes"],
                          a["weight_write_bytes"]), (146, {"pow": 2, "sqrt": 10}, 160, 120, 20))

    def test_peak_of_the_saved_subset(self):
        # a layer row keeping 10 B and re-allocating 8 B, then a head row keeping 5 B: the end of
        # the forward holds 15 B; the layer's recompute 15 - 5 + 8 = 18 B.
        layer = ledger.Op("swiglu", "vector", "", layers="0", kind="activation")
        head = ledger.Op("loss", "vector", "", layers="-", kind="loss")
        rows = [(layer, TrainCount(saved_bytes=10, temp_bytes=8)), (head, TrainCount(saved_bytes=5))]
        self.assertEqual(train_book.saved_peak(rows), (15, 18))

    def test_qwen3_8b_layer_rows(self):
        # one layer at T = 128: k and v join q's input gradient, up gate's, 128 x 4096 adds each;
        # the GQA sums (32 / 8 - 1) x 8 x 128 x 128 = 393,216 adds at QK^T (dK) and PV (dV)
        ops = ledger.operators(load_model("qwen3-8b"), Workload(tokens=128, logits="all"), per_layer=True)
        bwd = {op.name: train_evaluated(op.book_train).backward for op in ops if op.book_train is not None}
        self.assertEqual([bwd[n] for n in ("q_proj", "k_proj", "v_proj", "up_proj", "gate_proj")],
                         [0, 524_288, 524_288, 524_288, 0])
        self.assertEqual((bwd["attn_qk"], bwd["attn_pv"], bwd["rope"], bwd["embedding"]),
                         (393_216, 393_216, 3 * 128 * 40 * 128, 524_288))
        self.assertEqual(train_count(backward=3).backward, 3)


# The book's five Qwen3-8B scenarios (summary.json): forward, backward, optimizer scalar FLOPs,
# matrix + scalar, saved at the end of the forward, and some special functions.
BOOK = {
    "-book": ([], 565_679_488, 1_095_199_872, 5_943_238_646_278, 1_043_550_720, 28_958_720, 56_623_104),
    "-dense-mask": (["--supervised-tokens", "64", "--loss-mask", "dense"], 536_507_648, 1_085_475_904,
                    5_943_199_750_470, 1_004_655_104, 19_234_816, 56_623_104),
    "-compact-mask": (["--supervised-tokens", "64"], 536_507_648, 1_085_475_904, 5_704_225_085_766,
                      1_004_655_104, 19_234_816, 56_623_104),
    "-recompute-silu": (["--book-activation-policy", "recompute-silu"], 565_679_488, 1_151_822_976,
                        5_943_295_269_382, 817_058_304, 28_958_720, 113_246_208),
}


class BookTotals(unittest.TestCase):
    def test_the_books_scenarios(self):
        arch, s = load_model("qwen3-8b"), Setup(grad_bytes=4)
        for name, (args, fwd, bwd, total, saved, exp, sigmoid) in BOOK.items():
            with self.subTest(name):
                w = Workload(tokens=128, logits="all",
                             head_positions=64 if name == "-compact-mask" else 0,
                             loss_positions=64 if name == "-dense-mask" else 0)
                policy = "recompute-silu" if name == "-recompute-silu" else "save-nonlinear"
                b = train_book.tally(arch, w, s, policy)
                self.assertEqual((b["forward_scalar_flops"], b["backward_scalar_flops"],
                                  b["optimizer_scalar_flops"], b["matrix_plus_scalar_flops"],
                                  b["saved_at_forward_end_bytes"], b["saved_peak_bytes"],
                                  b["special_ops"]["exp"], b["special_ops"]["sigmoid"],
                                  b["special_ops"]["rsqrt"]),
                                 (fwd, bwd, 114_670_295_046, total, saved, saved, exp, sigmoid, 193_664))

    def test_cli_dense_mask(self):
        status, out, err = run_cli("train", "--model", "qwen3-8b", "--seq", "128", "--grad-dtype", "fp32",
                                   "--scalar-count", "book", *BOOK["-dense-mask"][0], "--format", "json")
        self.assertEqual(status, 0, err)
        b = json.loads(out)["book_count"]
        self.assertEqual((b["forward_scalar_flops"], b["data_operations"]["loss_gradient_zero_bytes"],
                          b["data_operations"]["cast_in_elements"]), (536_507_648, 77_791_232, 184_836_096))


class Errors(unittest.TestCase):
    def refused(self, *args):
        status, _, err = run_cli("train", "--seq", "16", *args)
        self.assertEqual(status, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        return err

    def test_refusals(self):
        for args, text in ((["--loss-mask", "dense"], "needs --supervised-tokens"),
                           (["--book-activation-policy", "recompute-silu"], "--scalar-count book only")):
            with self.subTest(args):
                self.assertIn(text, self.refused("--model", "qwen3-8b", *args))
        self.assertIn("--scalar-count book only",
                      self.refused("--model", "deepseek-v4-flash", "--book-activation-policy", "recompute-silu"))


class DeepSeekV4(unittest.TestCase):
    def test_mhc_wrapper_rules(self):
        # m = 2 streams of D = 3 (n = 6, M = 8 mixes), I = 1 (N = 1 normalization), R = 1 row.
        # forward: the RMS 2n + 1 = 13, the scale 8, the split affine 2M = 16 + pre/post 4 + the row
        # softmax m (4m - 1) = 14 + the normalization N 2m^2 = 8 (42): 63. Backward: mixes 3M - 1 =
        # 23, RMS n + 4 = 10, pre 6, joins 3n = 18 (57); the split 7m + (N + 1)(4m^2 - m) + M =
        # 14 + 28 + 8 = 50; the scale gradients 2RM - 3 = 13 and base M (R - 1) = 0: 120. Kept:
        # n + 1 + 2M + 2m + (2m + m^2 + N (m^2 + m)) = 41 values. The post: 2mD = 12, keeps D.
        from infracalc.blocks.hyper_connections import train_post, train_pre

        c = train_pre(1, 2, 3, 1)
        self.assertEqual((c.forward, c.backward, c.saved_bytes, dict(c.forward_specials)),
                         (63, 120, 164, {"exp": 4, "max_compare": 2, "rsqrt": 1, "sigmoid": 4}))
        p = train_post(1, 2, 3)
        self.assertEqual((p.forward, p.backward, p.saved_bytes), (12, 0, 12))

    def test_router_rule(self):
        # R = 2 rows, E = 4, k = 2: forward 2 x (3k - 1) = 10 and the bias adds 2 x 4 (not hashed):
        # 18; backward 2 x (5k - 1 + 3E) = 42; 8 softplus, 8 sqrt, 8 sigmoids in the backward.
        from infracalc.blocks.moe import train_router

        c = train_router(2, 4, 2, False)
        self.assertEqual((c.forward, c.backward, dict(c.forward_specials), dict(c.backward_specials)),
                         (18, 42, {"softplus": 8, "sqrt": 8}, {"sigmoid": 8}))
        self.assertEqual(train_router(2, 4, 2, True).forward, 10)

    def test_window_core_rules(self):
        # one head, T = 2 causal rows of K = 1 and 2 window slots (P = 3, Q = 2) and a sink: per row
        # scale K, subtract K + 1, sum K, divide K + 1 (4K + 2: 6 + 10 = 16), K + 1 exps (5), K max
        # compares (3); backward 5K (15) and the sink gradient over the 2 positions (1): 16; keeps
        # P + Q FP32 probabilities (20 B). PV: 2d adds per slot at d = 4, 24.
        from infracalc.blocks.compressed_attention import train_shared_kv_join, train_sink_softmax

        c = train_sink_softmax(3, 2, 1, 2)
        self.assertEqual((c.forward, c.backward, dict(c.forward_specials), c.saved_bytes),
                         (16, 16, {"exp": 5, "max_compare": 3}, 20))
        j = train_shared_kv_join(3, 4, 8)
        self.assertEqual((j.forward, j.backward, j.saved_bytes), (0, 24, 8))

    def test_the_books_window_cores(self):
        # bojieli/ai-infra-book:calculations/results/v4-attention-training-window128.md and
        # -window129-batch2.md: one core's totals.forward / backward_scalar_flops, exp calls, max
        # comparisons and saved_forward_boundary.total_bytes = our attn_qk + softmax + attn_pv rows
        # of one layer instance (train --per-layer)
        arch = load_model("deepseek-v4-flash")
        for (tokens, batch), want in {(128, 1): (2_129_920, 543_715_264, 536_576, 528_384, 19_251_200),
                                      (129, 2): (4_325_632, 1_104_289_856, 1_089_664, 1_073_152, 38_835_712)}.items():
            with self.subTest(tokens=tokens, batch=batch):
                b = train_book.tally(arch, Workload(batch=batch, tokens=tokens, logits="all"), Setup(grad_bytes=4),
                                     per_layer=True)
                ops = [o for o in b["operators"] if o["name"] in ("attn_qk", "softmax", "attn_pv")]
                self.assertEqual((sum(o["forward_scalar_flops"] for o in ops),
                                  sum(o["backward_scalar_flops"] for o in ops),
                                  sum(o["forward_special_ops"].get("exp", 0) for o in ops),
                                  sum(o["forward_special_ops"].get("max_compare", 0) for o in ops),
                                  sum(o["saved_bytes"] for o in ops)), want)

    def test_unweighted_rms_rule(self):
        # R = 2 rows of D = 3 without a weight: forward 2 x (3 squares + 2 adds + mean + epsilon +
        # 3 multiplies = 3D + 1 = 10) = 20, 2 rsqrt; backward 5D per row = 30; z and r kept (8 values)
        from infracalc.blocks.compressed_attention import train_unweighted_rms

        c = train_unweighted_rms(2, 3)
        self.assertEqual((c.forward, c.backward, c.forward_specials, c.saved_bytes), (20, 30, (("rsqrt", 2),), 32))

    def test_the_books_attention_periphery(self):
        # bojieli/ai-infra-book:calculations/results/v4-attention-projections-128.md: weighted q-rank
        # norm, weighted kv norm, weightless q-head norm (forward, backward, rsqrt), RoPE (q, kv and the
        # output's inverse) and the x join of the q and kv branches; and the three files' totals
        arch = load_model("deepseek-v4-flash")
        b = train_book.tally(arch, Workload(tokens=128, logits="all"), Setup(grad_bytes=4), per_layer=True)
        got = {o["name"]: (o["forward_scalar_flops"], o["backward_scalar_flops"], o["forward_special_ops"].get("rsqrt", 0))
               for o in b["operators"] if o["layers"] == "0-42" and o.get("rule", True) is not None}
        self.assertEqual(got["q_norm"], (524_416, 1_047_552, 128))
        self.assertEqual(got["kv_norm"], (262_272, 523_776, 128))
        self.assertEqual(got["q_rms"], (12_591_104, 20_971_520, 8_192))
        self.assertEqual(got["rope"][0] + got["rope_inverse"][0], 3_170_304)
        self.assertEqual(got["wkv"][1], 524_288)
        names = ("q_norm", "kv_norm", "q_rms", "rope", "rope_inverse", "wkv")
        for (tokens, batch), want in {(1, 1): (129_282, 203_456, 66), (128, 1): (16_548_096, 26_237_440, 8_448),
                                      (128, 2): (33_096_192, 52_476_416, 16_896)}.items():
            with self.subTest(tokens=tokens, batch=batch):
                b = train_book.tally(arch, Workload(batch=batch, tokens=tokens, logits="all"), Setup(grad_bytes=4),
                                     per_layer=True)
                ops = [o for o in b["operators"] if o["name"] in names and o["layers"] == "0-42"]
                self.assertEqual((sum(o["forward_scalar_flops"] for o in ops), sum(o["backward_scalar_flops"] for o in ops),
                                  sum(o["forward_special_ops"].get("rsqrt", 0) for o in ops)), want)

    def test_compressor_rules(self):
        # APE: R = 5 rows of W = 3, ratio 2: forward 15 adds; backward 3 x (5 - 2) = 9 (the rows
        # sharing each APE row summed); the projected rows kept (60 B).
        # pool, 4 tokens at ratio 2, d = 1, r_d = 2: E = 2 entries. Overlapping (S = 4 slots):
        # forward 2 x (5S - 2 = 18) + 2 x (4d + 1) + 3 x 2 x 2 = 36 + 10 + 12 = 58, 8 exps, 6 max
        # compares, 2 rsqrt; backward 2 x (6S - 1) = 46, the norm 6Ed + (2E - 1)d = 15, RoPE 12,
        # the scatter 2d (E S - B r) = 12 and the returned state 2 c d (r + tail) = 8: 93.
        # Unoverlapped (S = 2): forward 2 x 8 + 10 + 12 = 38; backward 2 x 11 + 15 + 12 = 49.
        from infracalc.blocks.compressed_attention import train_ape, train_pool

        a = train_ape(5, 3, 2)
        self.assertEqual((a.forward, a.backward, a.saved_bytes), (15, 9, 60))
        o = train_pool(1, 4, 2, 2, 1, 2)
        self.assertEqual((o.forward, o.backward, dict(o.forward_specials)),
                         (58, 93, {"exp": 8, "max_compare": 6, "rsqrt": 2}))
        u = train_pool(1, 4, 2, 1, 1, 2)
        self.assertEqual((u.forward, u.backward), (38, 49))

    def test_the_books_compressors(self):
        # bojieli/ai-infra-book:calculations/results/v4-compressor128-one-block.json and
        # v4-overlap-first-block.md, -two-blocks.md: totals.forward / backward_scalar_flops and the
        # specials; calculations/src/infra_calc/outline.py: v4-compressor128-two-blocks 788,866 /
        # 1,907,584 and v4-overlap-tail-state-batch2 105,220 / 246,016. Ours: the compressor's
        # score_ape + pool rows and the one input join of its two projections (the wgate row).
        arch = load_model("deepseek-v4-flash")
        names = ("attn.compressor.score_ape", "attn.compressor.pool", "attn.compressor.wgate")
        cases = {(128, 1, "3,5,...,41"): (394_433, 920_768, 65_536, 65_024, 1),
                 (256, 1, "3,5,...,41"): (788_866, 1_907_584, None, None, None),
                 (4, 1, "2,4,...,42"): (25_793, 56_512, 4_096, 3_584, 1),
                 (8, 1, "2,4,...,42"): (51_586, 113_536, 8_192, 7_168, 2),
                 (9, 2, "2,4,...,42"): (105_220, 246_016, None, None, None)}
        for (tokens, batch, layers), (fwd, bwd, exp, cmp_, rsqrt) in cases.items():
            with self.subTest(tokens=tokens, batch=batch):
                b = train_book.tally(arch, Workload(batch=batch, tokens=tokens, logits="all"), Setup(grad_bytes=4),
                                     per_layer=True)
                ops = [o for o in b["operators"] if o["name"] in names and o["layers"] == layers]
                self.assertEqual((sum(o["forward_scalar_flops"] for o in ops), sum(o["backward_scalar_flops"] for o in ops)),
                                 (fwd, bwd))
                if exp is not None:
                    sp = [o["forward_special_ops"] for o in ops if o["forward_special_ops"]][0]
                    self.assertEqual((sp["exp"], sp["max_compare"], sp["rsqrt"]), (exp, cmp_, rsqrt))
        # an unoverlapped compressor with a tail (129 = 128 + 1) has no book rule: unknown, not guessed
        b = train_book.tally(arch, Workload(tokens=129, logits="all"), Setup(grad_bytes=4), per_layer=True)
        self.assertIn("attn.compressor.pool", b["missing_rules"])

    def rows(self, tokens, batch=1, hc="matrix"):
        b = train_book.tally(load_model("deepseek-v4-flash"),
                             Workload(batch=batch, tokens=tokens, logits="all", hc_contractions=hc),
                             Setup(grad_bytes=4))
        self.assertIsNone(b["forward_scalar_flops"])   # rows without rules: the totals are unknown
        self.assertIn("hc_head", b["missing_rules"])
        return [o for o in b["operators"] if o.get("rule", True) is not None]

    def test_the_books_mhc_and_router_figures(self):
        # bojieli/ai-infra-book:calculations/results/v4-hc-training-one-row.md, -128.md and
        # .../v4-hc-training-completion/public/results/v4-hc-training-batch2.md: totals forward /
        # backward scalar, rsqrt, saved subset; .../v4-training-primitives-128.md and -batch2.md: the router
        hc = ("hc_attn.pre", "hc_attn.post", "hc_ffn.pre", "hc_ffn.post")
        # the frozen Sinkhorn split inside hc_*.pre, as .../v4-training-primitives-one-row.md, -128.md and
        # -batch2.md print it (sinkhorn_split forward / backward scalar, declared saved bytes)
        for (tokens, batch), want in {(1, 1): (117_304, 214_742, 276_576), (128, 1): (15_014_912, 27_781_870, 35_401_728),
                                      (128, 2): (30_029_824, 55_566_062, 70_803_456)}.items():
            parts = [p for o in self.rows(tokens, batch) for p in o.get("parts", ())]
            self.assertEqual((sum(p["forward_scalar_flops"] for p in parts), sum(p["backward_scalar_flops"] for p in parts),
                              sum(p["saved_bytes"] for p in parts)), want)
        for (tokens, batch), want in {(1, 1): (5_755_550, 7_266_312, 86, 7_341_304),
                                      (128, 1): (736_710_400, 930_382_830, 11_008, 939_686_912),
                                      (128, 2): (1_473_420_800, 1_860_767_982, 22_016, 1_879_373_824)}.items():
            with self.subTest(tokens=tokens, batch=batch):
                ops = [o for o in self.rows(tokens, batch) if o["name"] in hc]
                self.assertEqual((sum(o["forward_scalar_flops"] for o in ops),
                                  sum(o["backward_scalar_flops"] for o in ops),
                                  sum(o["forward_special_ops"].get("rsqrt", 0) for o in ops),
                                  sum(o["saved_bytes"] for o in ops)), want)
        for batch, want in ((1, (1_404_288, 4_386_688, 1_409_024)), (2, (2_808_576, 8_773_376, 2_818_048))):
            ops = [o for o in self.rows(128, batch, hc="vector") if o["name"] == "routing"]
            self.assertEqual((sum(o["forward_scalar_flops"] for o in ops), sum(o["backward_scalar_flops"] for o in ops),
                              sum(o["backward_special_ops"]["sigmoid"] for o in ops)), want)


if __name__ == "__main__":
    unittest.main()

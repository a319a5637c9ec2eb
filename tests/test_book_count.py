"""forward --scalar-count book: the book's per-operator scalar and special-function count
(ops.book), each rule on a small case worked by hand, then the book's own totals
(bojieli/ai-infra-book:calculations/results/stage-resources-qwen8-*.md,
compute_only_bounds.total_known_work)."""

import unittest

from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc import ledger  # noqa: E402
from infracalc.arch import Tensor  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.ops import residual, rmsnorm  # noqa: E402
from infracalc.workload import Workload, from_formats  # noqa: E402


def book_rows(w):
    """{name: (scalar, specials)} of one Qwen3-8B layer (and the pass-level rows)."""
    ops = ledger.operators(load_model("qwen3-8b"), w, per_layer=True)
    return {op.name: (op.book_scalar, dict(op.book_specials)) for op in ops}


class Rules(unittest.TestCase):
    def test_rmsnorm_and_residual(self):
        # 3 rows of width 5: 3 x (4 x 5 + 1) = 63 scalar, 3 rsqrt; the residual 3 x 5 = 15.
        n = rmsnorm(Workload(), "norm", 3, Tensor("norm.weight", (5,), "vector"))
        self.assertEqual((n.book_scalar, n.book_specials), (63, (("rsqrt", 3),)))
        self.assertEqual(residual(Workload(), 3, 5).book_scalar, 15)

    def test_qwen3_8b_layer_at_two_tokens(self):
        # T = 2 (D 4096, 32 + 8 heads of 128, inter 12288): q_norm 64 rows x 513 = 32,832; k_norm
        # 16 x 513 = 8,208; RoPE E = 2 x 40 x 128 = 10,240: 30,720 and 5,120 negations; softmax
        # V = 32 x 3 pairs = 96, Q = 64 rows, rectangle 32 x 4 = 128: 4 x 96 - 64 = 320, 96 exp,
        # 32 max compares, 128 mask decisions; SiLU E = 24,576: 98,304, as many exp and negations;
        # residual 8,192; the RoPE table 2 x 64 = 128 and 256 sin, 256 cos.
        r = book_rows(from_formats(load_model("qwen3-8b"), tokens=2, scalar_count="book"))
        self.assertEqual(r["input_layernorm"], (2 * 16_385, {"rsqrt": 2}))
        self.assertEqual(r["q_norm"], (32_832, {"rsqrt": 64}))
        self.assertEqual(r["k_norm"], (8_208, {"rsqrt": 16}))
        self.assertEqual(r["rope"], (30_720, {"negate": 5_120}))
        self.assertEqual(r["softmax"], (320, {"exp": 96, "compare_max": 32, "mask_decisions": 128}))
        self.assertEqual(r["swiglu"], (98_304, {"exp": 24_576, "negate": 24_576}))
        self.assertEqual(r["residual_add"], (8_192, {}))
        self.assertEqual(r["rope_table"], (128, {"cos": 256, "sin": 256}))
        self.assertEqual(r["q_proj"], (0, {}))

    def test_decode_softmax_and_layers(self):
        # 2 requests, 1 token after 3: V = 2 x 32 x 4 = 256 = the rectangle, Q = 64: 960 scalar,
        # 256 exp, 192 compares, 256 mask decisions; the whole pass has 36 x the layer's rows.
        arch = load_model("qwen3-8b")
        w = from_formats(arch, batch=2, tokens=1, history=3, scalar_count="book")
        self.assertEqual(book_rows(w)["softmax"], (960, {"exp": 256, "compare_max": 192, "mask_decisions": 256}))
        whole = [op for op in ledger.operators(arch, w) if op.name == "softmax"]
        self.assertEqual([(op.book_scalar, dict(op.book_specials)["exp"]) for op in whole], [(36 * 960, 36 * 256)])

    def test_interface_bytes(self):
        # The book's materialized-operand bytes = ours + the scores and probabilities it writes and
        # reads (QK^T writes the rectangle, softmax reads and writes it, PV reads it: BF16), the cos
        # and sin tables each RoPE reads, the int64 token ids and the table's own operands. T = 2,
        # 32 heads: rectangle 32 x 2 x 2 x 2 B = 256; tables 2 x 2 x 128 x 2 B = 1,024; ids 16 B;
        # rope_table reads 2 x 8 + 64 x 4 and writes 1,024: 1,296 B.
        arch = load_model("qwen3-8b")
        w = from_formats(arch, tokens=2, scalar_count="book")
        ops = {op.name: op for op in ledger.operators(arch, w, per_layer=True)}
        self.assertEqual([ops[n].book_extra_bytes for n in ("attn_qk", "softmax", "attn_pv", "rope", "embedding")],
                         [256, 512, 256, 1_024, 16])
        self.assertEqual(ops["rope_table"].bytes_moved + ops["rope_table"].book_extra_bytes, 1_296)

    def test_default_has_no_table_and_unruled_ops_fail(self):
        self.assertNotIn("rope_table", book_rows(from_formats(load_model("qwen3-8b"), tokens=2)))
        code, out, err = run_cli("forward", "--model", "deepseek-v4-flash", "--tokens", "2", "--scalar-count", "book")
        self.assertEqual(code, 2)
        self.assertIn("no book rule for deepseek-v4-flash's", err)


class BookTotals(unittest.TestCase):
    """compute_only_bounds.total_known_work of the book's Qwen3-8B stage files: vector_fp32 (its
    scalar count) and the seven special functions, from the ledger's rows."""

    BOOK = {  # (batch, tokens, history): vector_fp32, sin, cos, rsqrt, negate, exp, compare_max, mask
        (1, 128, 0): (620_582_016, 16_384, 16_384, 193_664, 68_419_584, 66_134_016, 9_363_456, 18_874_368),
        (8, 1, 32768): (1_244_404_616, 128, 128, 12_104, 4_276_224, 305_538_048, 301_989_888, 301_999_104),
    }

    def test_totals(self):
        keys = ("sin", "cos", "rsqrt", "negate", "exp", "compare_max", "mask_decisions")
        for (b, t, h), want in self.BOOK.items():
            with self.subTest(batch=b, tokens=t, history=h):
                code, out, err = run_cli("forward", "--model", "qwen3-8b", "--batch", str(b), "--tokens", str(t),
                                         "--history", str(h), "--scalar-count", "book", "--format", "json")
                import json
                c = json.loads(out)["book_count"]
                self.assertEqual((c["scalar_flops"],) + tuple(c["special_ops"][k] for k in keys), want)

    def test_stage_seconds_of_b1_prefill128(self):
        # The book's rates (989.4 / 66.9 TFLOP/s): input 8,192 scalar / 66.9T, 36 layers of
        # 49,527,390,208 matrix / 989.4T (their 17,179,904 scalar take less), head 1,244,659,712 / 989.4T;
        # a correctly rounded sum, 0.0018033462991241512 s; pooled 1,784,230,707,200 / 989.4T.
        import json
        import math
        code, out, err = run_cli("forward", "--model", "qwen3-8b", "--tokens", "128", "--scalar-count", "book",
                                 "--matrix-peak", "bf16=989.4T", "--vector-peak", "66.9T", "--format", "json")
        st = json.loads(out)["book_count"]["stages"]
        by_hand = math.fsum([8_192 / 66.9e12] + [49_527_390_208 / 989.4e12] * 36 + [1_244_659_712 / 989.4e12])
        self.assertEqual((st["known_serial_stage_max_sum_s"], st["known_global_max_s"]),
                         (by_hand, 1_784_230_707_200 / 989.4e12))
        self.assertEqual((by_hand, st["matrix_s"]), (0.0018033462991241512, 0.0018033461766727309))
        self.assertEqual((st["input_stage_s"], st["layer_stage_s"][0]), (8_192 / 66.9e12, 49_527_390_208 / 989.4e12))
        # b1-prefill512: the correctly rounded serial sum is the book's 0.007268214466114554 (left-to-right
        # float addition gives ...556).
        code, out, err = run_cli("forward", "--model", "qwen3-8b", "--tokens", "512", "--scalar-count", "book",
                                 "--matrix-peak", "bf16=989.4T", "--vector-peak", "66.9T", "--format", "json")
        self.assertEqual(json.loads(out)["book_count"]["stages"]["known_serial_stage_max_sum_s"], 0.007268214466114554)

    def test_stages_without_rates(self):
        # The M4 Max file publishes no BF16 matrix or FP32 vector rate: every stage's known maximum
        # is 0 s and so are the pooled and serial figures (the book's m4-max-40gpu-128gb), both named.
        import json
        code, out, err = run_cli("forward", "--model", "qwen3-8b", "--tokens", "1", "--history", "8192",
                                 "--device", "apple-m4-max", "--scalar-count", "book", "--format", "json")
        st = json.loads(out)["book_count"]["stages"]
        self.assertEqual((st["known_global_max_s"], st["known_serial_stage_max_sum_s"], st["unknown_rates"],
                          st["matrix_s"], set(st["layer_stage_s"])), (0.0, 0.0, ["matrix", "vector"], None, {0.0}))

    def test_interface_bytes_of_b1_prefill128(self):
        # The sum of the file's stage interface bytes: input 2,164,992 + 36 x 438,387,200 + head
        # (final norm 2,105,344 + head on the last row 1,244,971,776) = 17,031,181,312.
        import json
        code, out, err = run_cli("forward", "--model", "qwen3-8b", "--tokens", "128", "--scalar-count", "book",
                                 "--format", "json")
        self.assertEqual(json.loads(out)["book_count"]["interface_bytes"],
                         2_164_992 + 36 * 438_387_200 + 2_105_344 + 1_244_971_776)
        self.assertEqual(2_164_992 + 36 * 438_387_200 + 2_105_344 + 1_244_971_776, 17_031_181_312)


if __name__ == "__main__":
    unittest.main()

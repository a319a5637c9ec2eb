"""forward --fp8-tiles: the block-scaled FP8 linears' valid, tile and scale FLOPs
(analyses.fp8_linears), by hand on a tiny layer and against the book's v4-fp8-* rows."""

import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "calculations"))

from infracalc.analyses.fp8_linears import fp8_linears  # noqa: E402
from infracalc.arch import Tensor  # noqa: E402
from infracalc.dtypes import dtype  # noqa: E402
from infracalc.errors import UserError  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.workload import Workload  # noqa: E402


class _Layer:
    def tensors(self):
        return (Tensor("attn.wq_a.weight", (256, 200)),                       # selected
                Tensor("attn.wo_a.weight", (256, 256)),                       # grouped einsum: out
                Tensor("attn.compressor.wkv.weight", (128, 128), stored="bf16"),   # fixed format: out
                Tensor("ffn.experts.gate_up", (4, 128, 128), role="expert"),  # routed: out
                Tensor("attn_norm.weight", (200,), role="vector"))


class _Arch:
    id = "tiny"

    def layer_groups(self):
        return [(_Layer(), 2, (0, 1))]


def work(fmt, batch=3, tokens=11):
    return Workload(batch=batch, tokens=tokens, formats=(("matrix", dtype(fmt)),))


class ByHand(unittest.TestCase):
    """One linear [N, K] = [256, 200] in 2 layers, block 128: nb = 2, kb = ceil(200/128) = 2.
    M = 3 x 11 = 33 rows, tile 32 rows: 64 padded rows.
      valid        = 2 layers x 2*33*256*200          = 6,758,400
      tile         = 2 x 2*64*(2*128)*(2*128)          = 16,777,216
      scale products = 2 x 33*2*2                      = 264
      accumulation = 2 x 2*33*256*2                    = 67,584
      scale        = 264 + 67,584                      = 67,848
      padded scale = 2 x 64*(2*2 + 2*256*2)            = 131,584
      weight bytes = 2 x 256*200 = 102,400; scale bytes 2 x 4 blocks x 1 B (E8M0) = 8."""

    def test_tiny(self):
        f = fp8_linears(_Arch(), work("fp8-b128-e8m0"), 32)
        self.assertEqual([(r["name"], r["calls"], r["weight_shape"]) for r in f["linears"]],
                         [("attn.wq_a", 2, [256, 200])])
        t = f["totals"]
        self.assertEqual((f["rows"], f["tile_rows"], f["tile"]), (33, 64, [32, 128, 128]))
        self.assertEqual(t["valid_matrix_flops"], 6_758_400)
        self.assertEqual(t["tile_matrix_flops"], 16_777_216)
        self.assertEqual(t["scale_product_flops"], 264)
        self.assertEqual(t["scale_accumulation_flops"], 67_584)
        self.assertEqual(t["scale_flops"], 67_848)
        self.assertEqual(t["padded_scale_flops"], 131_584)
        self.assertEqual((t["weight_bytes"], t["weight_scale_bytes"], t["calls"]), (102_400, 8, 2))

    def test_fp32_scales(self):
        """fp8-block128 keeps one FP32 scale per block: 2 x 4 blocks x 4 B."""
        self.assertEqual(fp8_linears(_Arch(), work("fp8-block128"), 32)["totals"]["weight_scale_bytes"], 32)

    def test_tile_rows(self):
        """64-row tiles: 33 rows pad to 64 as with 32; 11 rows (batch 1) pad to 64, not 32."""
        self.assertEqual(fp8_linears(_Arch(), work("fp8-b128-e8m0", 1, 11), 64)["tile_rows"], 64)
        self.assertEqual(fp8_linears(_Arch(), work("fp8-b128-e8m0", 1, 11), 32)["tile_rows"], 32)

    def test_refused_without_block_scales(self):
        with self.assertRaisesRegex(UserError, "block scales.*bf16"):
            fp8_linears(_Arch(), work("bf16"), 32)
        r = subprocess.run([sys.executable, str(ROOT / "calculations" / "calc.py"), "forward", "--model",
                            "qwen3-8b", "--fp8-tiles", "32"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1)
        self.assertNotIn("Traceback", r.stderr)


def native(arch, **kw):
    return Workload(formats=tuple((r, dtype(n)) for r, n in arch.native_formats), **kw)


class BookFigures(unittest.TestCase):
    """bojieli/ai-infra-book:calculations/results/README.md, table "V4非routed FP8 Linear":
    valid / tile / scale FLOPs. Flash decode (1 row) 8,829,009,920 / 282,528,317,440 /
    69,246,080; Flash tail (33 rows) 291,357,327,360 / 565,056,634,880 / 2,285,120,640;
    Pro decode 37,213,962,240 / 1,190,846,791,680 / 291,869,760. The tail's book file
    (results/v4-fp8-flash-tail.md) splits the scale FLOPs into 8,891,520 scale products
    and 2,276,229,120 accumulation, padded 4,431,749,120; weights 4,414,504,960 B and
    scales 269,440 B; 322 Linear calls; wq_b 95,227,478,016 valid FLOPs."""

    def test_flash(self):
        arch = load_model("deepseek-v4-flash")
        t = fp8_linears(arch, native(arch), 32)["totals"]
        self.assertEqual((t["valid_matrix_flops"], t["tile_matrix_flops"], t["scale_flops"]),
                         (8_829_009_920, 282_528_317_440, 69_246_080))
        f = fp8_linears(arch, native(arch, tokens=33), 32)
        t = f["totals"]
        self.assertEqual((t["valid_matrix_flops"], t["tile_matrix_flops"], t["scale_flops"]),
                         (291_357_327_360, 565_056_634_880, 2_285_120_640))
        self.assertEqual((t["scale_product_flops"], t["scale_accumulation_flops"], t["padded_scale_flops"]),
                         (8_891_520, 2_276_229_120, 4_431_749_120))
        self.assertEqual((t["weight_bytes"], t["weight_scale_bytes"], t["calls"]), (4_414_504_960, 269_440, 322))
        by = {r["name"]: r for r in f["linears"]}
        self.assertEqual(by["attn.wq_b"]["valid_matrix_flops"], 95_227_478_016)
        self.assertNotIn("attn.wo_a", by)

    def test_pro(self):
        arch = load_model("deepseek-v4-pro")
        t = fp8_linears(arch, native(arch), 32)["totals"]
        self.assertEqual((t["valid_matrix_flops"], t["tile_matrix_flops"], t["scale_flops"]),
                         (37_213_962_240, 1_190_846_791_680, 291_869_760))


if __name__ == "__main__":
    unittest.main()

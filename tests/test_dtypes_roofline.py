"""Storage formats (exact bytes with scales) and the roofline arithmetic."""

import unittest

from support import DTYPES, Workload, build, load_model, run_cli

from infracalc.analyses.roofline import Roof, op_bound
from infracalc.ops import Op


class FormatBytes(unittest.TestCase):
    def test_plain_formats(self):
        self.assertEqual(DTYPES["bf16"].nbytes((4096, 4096)), 2 * 4096 * 4096)
        self.assertEqual(DTYPES["fp8"].nbytes((3, 5)), 15)
        self.assertEqual(DTYPES["fp4"].nbytes((3,)), 2)       # 12 bits round up to 2 bytes

    def test_mxfp4(self):
        # 4 bits per value + one 8-bit scale per 32 values along the last axis:
        # [2880, 2880]: 2880*2880/2 + 2880 * 90 = 4,147,200 + 259,200
        self.assertEqual(DTYPES["mxfp4"].nbytes((2880, 2880)), 4_147_200 + 259_200)

    def test_nvfp4(self):
        # 4 bits + one FP8 scale per 16 values + one FP32 per tensor: [16, 64]
        # 16*64/2 = 512; scales 16*4 = 64; +4
        self.assertEqual(DTYPES["nvfp4"].nbytes((16, 64)), 580)

    def test_fp8_block_scales(self):
        # DeepSeek-V3 FP8: one FP32 per 128x128 block: [7168, 18432] has 56*144 blocks
        self.assertEqual(DTYPES["fp8-block128"].nbytes((7168, 18432)), 7168 * 18432 + 56 * 144 * 4)
        # partial blocks round up: [129, 1] -> 2 x 1 blocks
        self.assertEqual(DTYPES["fp8-block128"].nbytes((129, 1)), 129 + 2 * 4)

    def test_int4_group_scales(self):
        # 4 bits + one BF16 scale per 128 values: [256, 256] -> 32768 + 512 groups * 2
        self.assertEqual(DTYPES["int4-g128"].nbytes((256, 256)), 32768 + 1024)


class RooflineArithmetic(unittest.TestCase):
    def test_op_bound_by_hand(self):
        roof = Roof(1e12, 1e11, 1e9)  # 1 TFLOP/s matrix, 0.1 TFLOP/s vector, 1 GB/s
        op = Op("x", "linear", "", matrix_flops=2_000_000, vector_flops=100_000, act_read=1000)
        c, m, t, bound = op_bound(op, roof)
        self.assertAlmostEqual(c, 2e-6 + 1e-6)
        self.assertAlmostEqual(m, 1e-6)
        self.assertEqual(bound, "compute")
        self.assertEqual(t, c)

    def test_dense_decode_is_weight_bound(self):
        # Qwen3-8B, B=1, one token, no history: every GEMM is memory-bound
        # (arithmetic intensity ~1 FLOP/byte, far below 989.5e12/3.35e12 = 295).
        from infracalc.analyses.forward import forward
        from infracalc.load.hardware import load_device

        rec = forward(load_model("qwen3-8b"), Workload(), load_device("h100-sxm"))
        gemms = [o for o in rec["operators"] if o["category"] == "linear"]
        self.assertGreater(len(gemms), 0)   # not vacuous
        self.assertTrue(all(o["bound"] == "memory" for o in gemms))
        t = rec["totals"]
        self.assertEqual(t["ideal_bound"], "memory")
        self.assertAlmostEqual(t["ideal_memory_time_s"], t["unique_bytes"] / 3.35e12)
        self.assertGreaterEqual(t["roofline_time_s"], t["ideal_time_s"])


    def test_unknown_compute_is_null_not_zero(self):
        # Apple M3 Ultra: no published matrix or vector peak. Qwen3-8B, one token: q_proj has
        # 2*4096*4096 = 33,554,432 FLOPs whose time is unknown, not 0 s (gemm reports the
        # same GEMM's compute time as null); its memory time is (4096*4096*2 + 2*4096*2) B
        # / 819e9 B/s. The ideal bound is memory-bound with the compute side unknown.
        from infracalc.analyses.forward import forward
        from infracalc.load.hardware import load_device

        rec = forward(load_model("qwen3-8b"), Workload(), load_device("apple-m3-ultra"))
        q = next(o for o in rec["operators"] if o["name"] == "q_proj")
        self.assertIsNone(q["compute_time_s"])
        self.assertAlmostEqual(q["memory_time_s"], 36 * (4096 * 4096 * 2 + 2 * 4096 * 2) / 819e9, places=15)
        self.assertEqual(q["bound"], "memory; compute unknown")
        t = rec["totals"]
        self.assertIsNone(t["ideal_compute_time_s"])
        self.assertEqual(t["ideal_bound"], "memory; compute unknown")
        self.assertEqual(t["ideal_time_s"], t["ideal_memory_time_s"])

    def test_tpu_compute_bound_names_its_unknown_vector_side(self):
        # TPU v5e: bf16 matrix peak 197e12 FLOP/s, no published vector peak. Qwen3-8B prefill
        # of 4,096 tokens: matrix FLOPs 61,849,981,681,664 (head on the last position) /
        # 197e12 = 0.313959... s > unique bytes 16,378,324,992 / 819e9 = 0.019998 s, so the
        # pass is compute-bound on its matrix part alone; its 68,781,604,864 vector FLOPs are
        # not counted, and the bound must say so (it read plain "compute").
        from infracalc.analyses.forward import forward
        from infracalc.load.hardware import load_device

        rec = forward(load_model("qwen3-8b"), Workload(tokens=4096), load_device("tpu-v5e"))
        t = rec["totals"]
        self.assertEqual(t["matrix_flops"], 61_849_981_681_664)
        self.assertAlmostEqual(t["ideal_compute_time_s"], 61_849_981_681_664 / 197e12, places=15)
        self.assertEqual(t["ideal_bound"], "compute; vector compute unknown")
        _, md, _ = run_cli("forward", "--model", "qwen3-8b", "--device", "tpu-v5e", "--tokens", "4096")
        self.assertIn("compute at peak; vector FLOPs not counted (no published peak)", md)
        # an H100 has both peaks: plain "compute"
        rec = forward(load_model("qwen3-8b"), Workload(tokens=4096), load_device("h100-sxm"))
        self.assertEqual(rec["totals"]["ideal_bound"], "compute")


if __name__ == "__main__":
    unittest.main()

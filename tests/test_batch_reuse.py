"""`budget batch-reuse`: the book's dense decode batch reuse (bojieli/ai-infra-book:calculations/results/
batch-reuse-*.md), by hand.

Qwen3-8B, BF16: resident 8,190,735,360 x 2 = 16,381,470,720 B; the embedding table 151,936 x 4,096 x 2
= 1,244,659,712 B, so the shared read is 16,381,470,720 - 1,244,659,712 = 15,136,811,008 B and each
request reads one 8,192 B row; KV 36 x 2 x 8 x 128 x 2 = 147,456 B per token."""

import unittest
from fractions import Fraction

import support  # noqa: F401
from support import budget_result

from infracalc.analyses.batch_reuse import batch_reuse

SHARED, ROW, U, RESIDENT = 15_136_811_008, 8_192, 147_456, 16_381_470_720


def run(history, *extra):
    return budget_result("batch-reuse", "--model", "qwen3-8b", "--history", str(history), *extra)


class Book(unittest.TestCase):
    def test_h100_2k(self):
        r = run(2048, "--memory-bytes", "80GB", "--matrix-peak", "bf16=989.4T")
        self.assertEqual((r["shared_decode_weight_read_bytes"], r["embedding_row_bytes"], r["weight_resident_bytes"]),
                         (SHARED, ROW, RESIDENT))
        # floor((80e9 - 16,381,470,720) / (2,049 x 147,456)) = floor(210.56); ceil(SHARED / (2,048 U)) = ceil(50.12)
        self.assertEqual(r["capacity_max_batch"], 210)
        self.assertEqual(r["kv_history_equals_weights_batch"], 51)
        self.assertIsNone(r["compute_memory_crossover_batch"])
        b4 = r["rows"][1]
        self.assertEqual(b4["declared_traffic_bytes"], SHARED + 4 * (ROW + 2048 * U + U))   # 16,345,393,152
        self.assertEqual(b4["saved_weight_read_bytes"], 3 * SHARED)
        self.assertEqual(b4["declared_resident_bytes"], RESIDENT + 4 * 2049 * U)   # 17,590,020,096

    def test_8k_and_4090(self):
        self.assertEqual(run(8192, "--memory-bytes", "80GB")["kv_history_equals_weights_batch"], 13)
        r = run(8192, "--device", "rtx-4090", "--memory-bytes", "24GB")
        self.assertEqual(r["capacity_max_batch"], (24 * 10**9 - RESIDENT) // (8193 * U))   # 6

    def test_no_history_crossover(self):
        # F = 15,136,784,384 matrix FLOPs, r = 8,192 + 147,456: B >= SHARED / (F W / P - r) = 296.24 -> 297
        r = run(0, "--memory-bytes", "80GB", "--matrix-peak", "bf16=989.4T")
        f = Fraction(15_136_784_384) * Fraction(3_350 * 10**9) / Fraction(9894 * 10**11) - (ROW + U)
        self.assertEqual(r["compute_memory_crossover_batch"], -(-SHARED // f))
        self.assertEqual(r["compute_memory_crossover_batch"], 297)
        self.assertIsNone(r["kv_history_equals_weights_batch"])
        self.assertEqual(r["capacity_max_batch"], (80 * 10**9 - RESIDENT) // U)   # 431,440

    def test_refuses_moe(self):
        from support import run_cli
        status, _, err = run_cli("budget", "batch-reuse", "--model", "qwen3-30b-a3b", "--history", "0")
        self.assertEqual(status, 2)
        self.assertIn("dense model", err)


class Formula(unittest.TestCase):
    def test_tiny_case(self):
        # shared 100, row 1, u 2, H 3: r = 1 + 6 + 2 = 9; F 10 at P 1 and W 1: F W / P - r = 1, so the
        # crossover is 100; KV = weights at ceil(100 / 6) = 17; capacity floor((1000 - 200) / 8) = 100.
        r = batch_reuse(resident=200, shared=100, embedding_row=1, kv_per_token=2, history=3, matrix_flops=10,
                        peak=1, bandwidth=1, capacity=1000, workspace=0, batches=(2,))
        self.assertEqual((r["compute_memory_crossover_batch"], r["kv_history_equals_weights_batch"],
                          r["capacity_max_batch"]), (100, 17, 100))
        row = r["rows"][0]
        self.assertEqual((row["declared_traffic_bytes"], row["declared_resident_bytes"], row["bound_by"]),
                         (118, 216, "memory"))


if __name__ == "__main__":
    unittest.main()

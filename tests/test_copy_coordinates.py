"""`budget copy-coordinates`: a shared expert's three FP8 GEMMs in DeepSeek-V4's kernel tiles (32 x 128 blocks,
K steps of 128); values derived by hand in the comments."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.copy_coordinates import gemm_copies, shared_expert, tile_copies  # noqa: E402


class CopyCoordinates(unittest.TestCase):
    def test_gemm_summary(self):
        # M 32, K 4096, N 2048: 1 x 16 blocks, 32 K steps each: 512 copies of A (32 x 128 B) and B (128 x 128 B)
        g = gemm_copies("w1", 32, 4096, 2048)
        self.assertEqual((g["grid_blocks"], g["A_copy_calls"], g["B_copy_calls"]), (16, 512, 512))
        self.assertEqual((g["A_payload_bytes"], g["B_payload_bytes"]), (2097152, 8388608))
        self.assertEqual((g["scale_read_bytes"], g["output_write_bytes"]), (16896, 131072))   # 512 x 33; 2 x 32 x 2048
        self.assertEqual((g["unique_A_bytes"], g["unique_B_bytes"], g["unique_scale_B_bytes"]), (131072, 8388608, 512))
        # 64 rows: twice the blocks and every A, B and scale payload doubles (B read again per M block)
        g = gemm_copies("w2", 64, 2048, 4096)
        self.assertEqual((g["grid_blocks"], g["B_payload_bytes"], g["output_write_bytes"]), (64, 16777216, 524288))

    def test_tile_offsets(self):
        # block (1, 2), K step 3 of M 64, K 4096, N 2048 (32 K steps):
        # A 32 x 4096 + 384 = 131,456; B 256 x 4096 + 384 = 1,048,960; scale B 2 x 32 + 3 = 67;
        # scale A 32 x 32 + 3 = 1,027; C 2 (32 x 2048 + 256) = 131,584
        t = tile_copies(64, 4096, 2048, 1, 2, 3)
        self.assertEqual((t["A_origin"], t["A_offset_bytes"], t["B_origin"], t["B_offset_bytes"]),
                         ([32, 384], 131456, [256, 384], 1048960))
        self.assertEqual((t["scale_B_offset_bytes"], t["scale_A_first_offset_bytes"], t["C_offset_bytes"]),
                         (67, 1027, 131584))
        self.assertEqual((t["A_row_stride_bytes"], t["scale_A_row_stride_bytes"], t["C_row_stride_bytes"]),
                         (4096, 32, 4096))

    def test_listing_matches_counts(self):
        out = shared_expert(rows=32, hidden=256, inter=128, tiles=True)
        # w1, w3: 1 x 1 blocks x 2 steps; w2: 1 x 2 blocks x 1 step: 6 copies
        self.assertEqual(len(out["copies"]), out["totals"]["A_copy_calls"])
        self.assertEqual(out["totals"]["A_copy_calls"], 6)

    def test_book_model_and_errors(self):
        r = budget_result("copy-coordinates", "--model", "deepseek-v4-flash", "--rows", "32")
        self.assertEqual([(c["call"], c["K"], c["N"]) for c in r["calls"]],
                         [("shared.w1", 4096, 2048), ("shared.w3", 4096, 2048), ("shared.w2", 2048, 4096)])
        status, _, err = run_cli("budget", "copy-coordinates", "--model", "deepseek-v4-flash", "--rows", "48")
        self.assertEqual(status, 2)
        self.assertIn("rows % 32", err)
        status, _, err = run_cli("budget", "copy-coordinates", "--model", "qwen3-8b", "--rows", "32")
        self.assertEqual(status, 2)
        self.assertIn("shared expert", err)


if __name__ == "__main__":
    unittest.main()

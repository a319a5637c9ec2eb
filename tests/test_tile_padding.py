"""`forward --tile MxKxN`: every matrix product of a dense pass padded to a kernel tile; expected
values derived by hand in the comments."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.tiles import padded_flops  # noqa: E402

DEEPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "calculations", "results", "book",
                      "configs", "qwen3-8b-deeper-same-width.json")


def forward(*argv):
    status, out, err = run_cli("forward", *argv, "--format", "json")
    assert status == 0, err
    return json.loads(out)


def by_name(rec):
    return {p["name"]: p for p in rec["tile_padding"]["products"]}


class TilePadding(unittest.TestCase):
    def test_padded_flops(self):
        # 129 x 4096 x 4096 at 64 x 64 x 128: 3 x 64 = 192 rows, 4096, 4096 -> 2 x 192 x 4096 x 4096
        self.assertEqual(padded_flops(129, 4096, 4096, (64, 64, 128)), 2 * 192 * 4096 * 4096)
        # 1 x 4096 x 151,936: one 64-row tile, 1,187 x 128 = 151,936 columns exactly
        self.assertEqual(padded_flops(1, 4096, 151936, (64, 64, 128)), 2 * 64 * 4096 * 151936)

    def test_tail_of_129_tokens(self):
        # deeper variant (48 layers, 32 heads, FFN 8,320), T = 129, no history: q_proj 48 x 2 x 129 x 4096^2 valid,
        # 48 x 2 x 192 x 4096^2 padded. QK^T per head [129, 128] x [128, 129]: 129 x 130 / 2 = 8,385 pairs, valid
        # 2 x 128 x 8,385 = 2,146,560, rectangle 2 x 129 x 129 x 128 = 4,260,096, padded 2 x 192 x 128 x 256 =
        # 12,582,912 (keys to 2 x 128); PV [129, 129] x [129, 128]: padded 2 x 192 x 192 x 128 = 9,437,184;
        # 48 x 32 = 1,536 calls each.
        p = by_name(forward("--model", DEEPER, "--tokens", "129", "--tile", "64x64x128"))
        self.assertEqual((p["q_proj"]["valid_matrix_flops"], p["q_proj"]["padded_matrix_flops"]),
                         (48 * 2 * 129 * 4096 * 4096, 48 * 2 * 192 * 4096 * 4096))
        self.assertEqual((p["qk"]["calls"], p["qk"]["valid_matrix_flops"], p["qk"]["rectangular_matrix_flops"]),
                         (1536, 1536 * 2146560, 1536 * 4260096))
        self.assertEqual((p["qk"]["padded_matrix_flops"], p["pv"]["padded_matrix_flops"]),
                         (1536 * 12582912, 1536 * 9437184))
        # the head on the last position only: M = 1, padded to one 64-row tile
        self.assertEqual((p["lm_head"]["m"], p["lm_head"]["padded_matrix_flops"]), (1, 2 * 64 * 4096 * 151936))

    def test_valid_work_is_the_pass(self):
        # the valid column sums to forward's own matrix FLOPs (causal attention + linears + head), here with history
        rec = forward("--model", "qwen3-8b", "--tokens", "100", "--history", "300", "--batch", "2",
                      "--logits", "all", "--tile", "64x64x128")
        self.assertEqual(rec["tile_padding"]["totals"]["valid_matrix_flops"], rec["totals"]["matrix_flops"])
        p = by_name(rec)
        # QK^T per request and head: [100, 128] x [128, 400]; 2 requests x 36 layers x 32 heads; head on 200 rows
        self.assertEqual((p["qk"]["m"], p["qk"]["n"], p["qk"]["calls"]), (100, 400, 2 * 36 * 32))
        self.assertEqual(p["lm_head"]["m"], 200)
        # rectangle 2 x 100 x 400 x 128 per call, not the 100 x 100 of the new tokens
        self.assertEqual(p["qk"]["rectangular_matrix_flops"], 2 * 36 * 32 * 2 * 100 * 400 * 128)

    def test_unit_tile_pads_nothing_beyond_the_rectangle(self):
        rec = forward("--model", "qwen3-8b", "--tokens", "7", "--tile", "1x1x1")
        t = rec["tile_padding"]["totals"]
        self.assertEqual(t["padded_matrix_flops"], t["rectangular_matrix_flops"])

    def test_moe_is_an_error(self):
        status, _, err = run_cli("forward", "--model", "qwen3-30b-a3b", "--tile", "8x8x8")
        self.assertEqual(status, 2)
        self.assertIn("MoE", err)


if __name__ == "__main__":
    unittest.main()

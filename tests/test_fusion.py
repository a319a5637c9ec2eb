"""`budget fusion` (analyses/fusion.py): interface bytes and tensor peaks of a dense MLP's pointwise
chain for every contiguous grouping; every expected value derived by hand in its comment."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses import fusion  # noqa: E402


class Chain(unittest.TestCase):
    def test_small_chain_by_hand(self):
        # M = 2 tokens, F = 3, bf16: X = 2*2*3 = 12 B per intermediate, stored Y = 6 B (int8).
        # All apart: swiglu reads gate (12) writes act (12); multiply reads act + up (24) writes product (12);
        # cast reads product (12) writes stored (6): 6X + Y = 78. All fused: gate + up + stored = 2X + Y = 30.
        # Peaks: apart, gate + up + act = 36 (gate freed after), then up + act + product = 36, then
        # product + stored = 18 -> 36; fused: gate + up + stored = 30.
        r = fusion.pointwise_fusion(2, 3, act_bytes=2, stored_bytes=6)
        self.assertEqual(r["separate_interface_bytes"], 78)
        self.assertEqual(r["fused_interface_bytes"], 30)
        self.assertEqual(r["separate_tensor_peak_bytes"], 36)
        self.assertEqual(r["fused_tensor_peak_bytes"], 30)
        self.assertEqual(len(r["groupings"]), 4)   # 2^(3-1) contiguous groupings
        # swiglu+multiply | cast: reads gate + up (24), writes product (12); cast 12 + 6: 54;
        # peak gate + up + product = 36. swiglu | multiply+cast: 12 + 12, then act + up + stored: 24 + 6 = 54.
        by = {g["groups"]: g for g in r["groupings"]}
        self.assertEqual(by["swiglu+multiply | cast"]["interface_bytes"], 54)
        self.assertEqual(by["swiglu+multiply | cast"]["tensor_peak_bytes"], 36)
        self.assertEqual(by["swiglu | multiply+cast"]["interface_bytes"], 54)
        self.assertEqual(by["swiglu | multiply+cast"]["saved_interface_bytes"], 24)   # one intermediate: 2X

    def test_layout_copy(self):
        # A standalone permute adds one read and one write of X apart (8X + Y) and nothing fused (2X + Y);
        # 8 groupings. Qwen3-8B at 1,024 tokens: X = 2*1024*12288 = 25,165,824, Y = 12,582,912:
        # 8X + Y = 213,909,504 and 2X + Y = 62,914,560 (the book's fusion-qwen8-layout).
        r = fusion.pointwise_fusion(1024, 12288, act_bytes=2, stored_bytes=12_582_912, layout_copy=True)
        self.assertEqual(len(r["groupings"]), 8)
        self.assertEqual(r["separate_interface_bytes"], 213_909_504)
        self.assertEqual(r["fused_interface_bytes"], 62_914_560)
        self.assertEqual(r["separate_tensor_peak_bytes"], 3 * 25_165_824)

    def test_command(self):
        # Qwen3-32B (F = 25,600) at 1,024 tokens: X = 52,428,800, Y = 26,214,400: 6X + Y = 340,787,200.
        code, out, _ = run_cli("budget", "fusion", "--model", "qwen3-32b", "--tokens", "1024", "--format", "json")
        self.assertEqual(code, 0)
        r = json.loads(out)["result"]
        self.assertEqual((r["separate_interface_bytes"], r["fused_interface_bytes"]), (340_787_200, 131_072_000))
        code, _, err = run_cli("budget", "fusion", "--model", "qwen3-30b-a3b", "--tokens", "4")
        self.assertEqual(code, 2)
        self.assertIn("no dense gated MLP", err)


if __name__ == "__main__":
    unittest.main()

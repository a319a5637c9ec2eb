"""`serve --residency`: immutable pages in memory tiers over declared intervals, by hand."""

import json
import unittest
from fractions import Fraction as F

from support import run_cli
from infracalc.analyses.serve.residency import residency


class ByHand(unittest.TestCase):
    def test_shared_prefix_and_copies(self):
        # c = 10 B per token. Tier X: A's 4 tokens in [0, 10), A's 8 in [5, 15) (shares the 4), B's 2 in [0, 5);
        # tier Y: A's 8 in [10, 20).
        iv = [("a1", "X", "A", 4, 0, 10), ("a2", "X", "A", 8, 5, 15), ("b", "X", "B", 2, 0, 5), ("ay", "Y", "A", 8, 10, 20)]
        rows, segs, s = residency(iv, {"X": 70, "Y": None}, 10)
        # segments: [0,5) X 40 + 20 = 60; [5,10) X 80 (logical 120); [10,15) X 80, Y 80; [15,20) Y 80
        self.assertEqual([(g["start_ns"], g["tier_physical_bytes"]["X"], g["tier_logical_bytes"]["X"],
                           g["tier_physical_bytes"]["Y"]) for g in segs],
                         [(0, 60, 60, 0), (5, 80, 120, 0), (10, 80, 80, 80), (15, 0, 0, 80)])
        x = rows[0]
        # X physical 60 x 5 + 80 x 5 + 80 x 5 = 1,100 byte-ns; logical 300 + 600 + 400 = 1,300; over 70 for 10 ns
        self.assertEqual((x["physical_byte_nanoseconds"], x["logical_byte_nanoseconds"], x["over_capacity_nanoseconds"]),
                         (1100, 1300, 10))
        self.assertEqual(x["shared_byte_seconds_saved"], F(200, 10**9))
        # unique: 60, 80, 80, 80 over 5 ns each = 1,500; all tiers 1,100 + 800 = 1,900; copies 400
        self.assertEqual((s["all_tier_physical_byte_seconds"], s["globally_unique_byte_seconds"],
                          s["cross_tier_copy_byte_seconds"]), (F(1900, 10**9), F(1500, 10**9), F(400, 10**9)))
        self.assertEqual((s["all_tier_peak_physical_bytes"], s["all_tiers_capacity_feasible"]), (160, False))

    def test_invariants(self):
        iv = [("p", "X", "A", 3, 0, 7), ("q", "Y", "A", 5, 2, 9), ("r", "X", "B", 1, 4, 6)]
        rows, segs, s = residency(iv, {}, 4)
        for g in segs:
            self.assertGreaterEqual(g["all_tier_physical_bytes"], g["globally_unique_page_bytes"])
            for t in ("X", "Y"):
                self.assertLessEqual(g["tier_physical_bytes"][t], g["tier_logical_bytes"][t])
        self.assertTrue(s["all_tiers_capacity_feasible"])   # no capacity declared: never over


class Command(unittest.TestCase):
    def test_book_and_refusals(self):
        argv = ["serve", "--model", "qwen3-8b", "--residency", "a:HBM:A:1024:0:10", "--residency", "b:DRAM:A:2048:5:20",
                "--tier-capacity", "HBM=512MiB", "--format", "json"]
        status, out, _ = run_cli(*argv)
        self.assertEqual(status, 0)
        r = json.loads(out)["residency"]
        self.assertEqual(r["kv_page_bytes"], 16 * 147456)
        self.assertEqual(r["all_tier_peak_physical_bytes"], (1024 + 2048) * 147456)   # both held during [5, 10)
        status, _, err = run_cli("serve", "--model", "qwen3-8b", "--residency", "a:HBM:A:1000:0:10")
        self.assertEqual(status, 2)
        self.assertIn("whole pages", err)


if __name__ == "__main__":
    unittest.main()

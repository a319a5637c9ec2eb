"""`budget ec-pool`: encoder-cache bytes and the E/PD split bound of a vision-language request; by hand."""

import json
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402,F401  (puts calculations/ on sys.path)

from infracalc.analyses.ec_pool import pool_splits  # noqa: E402


class Splits(unittest.TestCase):
    def test_bounds(self):
        # 4 workers, 4 images, no hits, 12 images/s per encoder, 4 requests/s per PD worker, 300 MB/s over
        # 32,768,000 B a request = 9375/1024 requests/s: e = 1 -> min(3, 12), e = 2 -> min(6, 8), e = 3 -> min(9, 4)
        rows = pool_splits(4, 4, Fraction(0), 12, 4, 300_000_000, 32_768_000)
        self.assertEqual([r["bound"] for r in rows], [3, 6, 4])
        self.assertEqual([r["bottlenecks"] for r in rows], [["uncached_encode"], ["uncached_encode"], ["pd"]])
        # 3/4 hits: one uncached image a request -> encoding 12 e; e = 1 -> min(12, 12, 9375/1024) = the network
        warm = pool_splits(4, 4, Fraction(3, 4), 12, 4, 300_000_000, 32_768_000)
        self.assertEqual([r["bound"] for r in warm], [Fraction(9375, 1024), 8, 4])
        # every image a hit: no encoding bound at all (not an infinite one)
        self.assertIsNone(pool_splits(4, 4, Fraction(1), 12, 4, 300_000_000, 32_768_000)[0]["uncached_encode_exact"])
        # the network carries bound x 32,768,000 B/s: 3 x -> 98,304,000; at the network's own bound all 300 MB/s
        self.assertEqual([r["network_bytes_per_s_at_bound_exact"] for r in rows], ["98304000", "196608000", "131072000"])
        self.assertEqual(warm[0]["network_bytes_per_s_at_bound_exact"], "300000000")


class Qwen3VL(unittest.TestCase):
    def test_book_default(self):
        status, out, err = support.run_cli(
            "budget", "ec-pool", "--model", "qwen3-vl-4b", "--image", "640x640", "--images", "4", "--text-tokens",
            "400", "--workers", "4", "--encoder-rate", "12", "--pd-rate", "4", "--network", "300MB",
            "--compressed-bytes", "800000", "--uplink-rate", "6400000b/s", "--format", "json")
        self.assertEqual((status, err), (0, ""))
        r = json.loads(out)["result"]
        # 40 x 40 patches of 16 px, 2 x 2 merged: 400 positions; EC 400 x 2560 x (1 + 3 DeepStack) x 2 B
        self.assertEqual((r["image_positions"], r["ec_bytes_per_image"]), (400, 8_192_000))
        # KV: 2 x 36 layers x 8 KV heads x 128 x 2 B = 147,456 B a position; 2,000 positions
        self.assertEqual((r["kv_bytes_per_position"], r["input_kv_bytes"]), (147_456, 2000 * 147_456))
        self.assertEqual((r["best_bound_requests_per_s_exact"], r["best_splits"]), ("6", "2E+2PD"))
        # 8,192,000 B at 6.4 Mb/s = 800,000 B/s: 256/25 s against the compressed image's 1 s
        self.assertEqual((r["ec_uplink_s_exact"], r["compressed_image_uplink_s_exact"]), ("256/25", "1"))
        # one temporal grid of 640/16 x 640/16 patches; the EC is [400, 2560] per output, 4 of them side by side
        self.assertEqual((r["grid_thw"], r["final_embedding_shape"], r["ec_shape"]), ([1, 40, 40], [400, 2560], [400, 10240]))
        self.assertEqual([(c["name"], c["bytes"]) for c in r["ec_components"]],
                         [("final_embedding", 2_048_000), ("deepstack_5", 2_048_000), ("deepstack_11", 2_048_000),
                          ("deepstack_17", 2_048_000)])
        self.assertEqual([x["arrival_below_bound"] for x in r["splits"]], [True, True, True])   # no arrival declared


if __name__ == "__main__":
    unittest.main()

"""`budget image-request`: a remote image request as serial declared stages; every expected value
derived by hand in its comment."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.image_request import image_request, serial_timeline, upload_break_even  # noqa: E402

F = Fraction
BOOK = ("--input-bytes", "30MB", "--output-bytes", "5MB", "--download-rate", "100Mb/s", "--rtt", "1/10s",
        "--model-time", "3/10s")


def budget(*argv):
    return budget_result("image-request", *BOOK, *argv)


def times(**declared):
    t = dict.fromkeys(("input_preparation", "connection", "request_round_trip", "queue", "input_decode", "model",
                       "final_image_encode", "output_use"), F(0))
    t.update(declared)
    return t


class SerialStages(unittest.TestCase):
    def test_book_request(self):
        # 30 MB up at 20 Mb/s: 8 x 3e7 / 2e7 = 12 s; 5 MB down at 100 Mb/s: 4e7 / 1e8 = 2/5 s;
        # 1/10 + 12 + 3/10 + 2/5 = 64/5 s; the model starts at 1/10 + 12 = 121/10 s.
        r = budget("--upload-rate", "20Mb/s")
        stage = {s["stage"]: s for s in r["stages"]}
        self.assertEqual((stage["upload"]["original_s_exact"], stage["download"]["original_s_exact"]), ("12", "2/5"))
        self.assertEqual(stage["input_decode"]["original_end_s_exact"], "121/10")
        self.assertEqual(r["variants"][0]["complete_s_exact"], "64/5")

    def test_connection_reuse_removes_only_the_connection(self):
        # A 1/5 s connection: 64/5 + 1/5 = 13 s; reused, the round trip stays: 64/5 s.
        (v,) = budget("--upload-rate", "20Mb/s", "--connection-time", "200ms")["variants"]
        self.assertEqual((v["complete_s_exact"], v["reused_connection_s_exact"]), ("13", "64/5"))

    def test_timeline_is_cumulative(self):
        # Durations 1/2, 0, 3/2: ends 1/2, 1/2, 2; each start is the previous end.
        t = serial_timeline([("a", F(1, 2)), ("b", F(0)), ("c", F(3, 2))])
        self.assertEqual([(s, e) for _, s, _, e in t], [(0, F(1, 2)), (F(1, 2), F(1, 2)), (F(1, 2), 2)])


class Comparisons(unittest.TestCase):
    def test_local_break_even_and_compression(self):
        # At 100 Mb/s: upload 12/5 s, complete 1/10 + 12/5 + 3/10 + 2/5 = 16/5 < 5 s local. The stages beside the
        # upload take 4/5 s, so the remote wins above 8 x 3e7 / (5 - 4/5) = 4e8/7 b/s. Compressed to 15 MB with
        # 1/5 + 1/10 s of codec: upload 6/5, complete 23/10; fixed 11/10 -> 1.2e8 / (39/10) = 4e8/13 b/s.
        # Saving 8 x 1.5e7 / 1e8 - 3/10 = 6/5 - 3/10 = 9/10 s, positive below 1.2e8 / (3/10) = 4e8 b/s.
        r = budget("--upload-rate", "100Mb/s", "--local-time", "5s", "--compressed-bytes", "15MB",
                   "--compress-time", "1/5s", "--decompress-time", "100ms")
        original, compressed = r["variants"]
        self.assertEqual((original["complete_s_exact"], compressed["complete_s_exact"]), ("16/5", "23/10"))
        self.assertEqual([v["remote_faster_above_bits_per_s_exact"] for v in r["variants"]],
                         ["400000000/7", "400000000/13"])
        self.assertTrue(original["remote_strictly_faster"])
        c = r["compression"]
        self.assertEqual((c["saving_s_exact"], c["compressed_faster_below_bits_per_s_exact"]), ("9/10", "400000000"))
        self.assertTrue(c["compressed_strictly_faster"])

    def test_compression_loses_above_break_even(self):
        # At 800 Mb/s the 15 MB saved upload 3/20 s < 3/10 s codec: saving -3/20 s, not faster.
        c = budget("--upload-rate", "800Mb/s", "--compressed-bytes", "15MB", "--compress-time", "200ms",
                   "--decompress-time", "100ms")["compression"]
        self.assertEqual((c["saving_s_exact"], c["compressed_strictly_faster"]), ("-3/20", False))

    def test_no_finite_rate_wins(self):
        # Local 1 s; the other stages take 1 + 0 s: L - fixed = 0, so no upload rate wins.
        self.assertIsNone(upload_break_even(upload_s=F(2), total_s=F(3), local_s=F(1), payload_bytes=10))
        r = image_request(input_bytes=10, output_bytes=1, upload_bits_per_s=80, download_bits_per_s=8,
                          times=times(model=F(1)), local_s=F(1))
        # upload 8 x 10 / 80 = 1 s, download 1 s, model 1 s: 3 s; fixed 2 s > 1 s local.
        self.assertEqual(r["variants"][0]["complete_s_exact"], "3")
        self.assertIsNone(r["variants"][0]["remote_faster_above_bits_per_s_exact"])

    def test_bad_input(self):
        for argv, text in ((["--compressed-bytes", "40MB"], "exceeds --input-bytes"),
                           (["--compress-time", "1s"], "need --compressed-bytes"),
                           (["--local-time", "5"], "'5' has no unit")):
            status, _, err = run_cli("budget", "image-request", *BOOK, "--upload-rate", "20Mb/s", *argv)
            self.assertEqual(status, 2, argv)
            self.assertIn(text, err)


if __name__ == "__main__":
    unittest.main()

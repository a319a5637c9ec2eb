"""`budget image-stream`: image blocks over an uplink, a server and a downlink that overlap; every
expected value derived by hand in its comment."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.image_stream import block_schedule  # noqa: E402

F = Fraction
BOOK = ("--blocks", "10MB:1MB:1/10s:0s,10MB:2MB:1/10s:0s,10MB:2MB:1/10s:0s", "--upload-rate", "20Mb/s",
        "--download-rate", "100Mb/s", "--forward-delay", "1/20s", "--reverse-delay", "1/20s")


def ends(r):
    return {e["event"]: (F(e["start_s_exact"]), F(e["end_s_exact"])) for e in r["events"]}


def budget(*argv):
    return budget_result("image-stream", *BOOK, *argv)


# Two blocks of 80 B in, 10 and 20 B out, at 80 b/s up and 80 b/s down: uploads 8 s each; process 1 s, encode 0.
TWO = [(80, 10, F(1), F(0)), (80, 20, F(1), F(0))]


def two(independent, **kw):
    return ends(block_schedule(blocks=TWO, independent=independent, upload_bits_per_s=80, download_bits_per_s=80,
                               forward_s=F(1), reverse_s=F(0), **kw))


class Barriers(unittest.TestCase):
    def test_whole_image_waits_for_every_input_and_encode(self):
        # Uploads end 8 and 16, arrive 9 and 17 (forward 1 s); both processes wait for 17: 17-18, 18-19;
        # both downloads wait for 19: 19-20 (10 B = 80 b / 80 b/s) and 20-22; usable at 22.
        e = two(False)
        self.assertEqual((e["process.0"], e["process.1"]), ((17, 18), (18, 19)))
        self.assertEqual((e["download.final.0"], e["download.final.1"]), ((19, 20), (20, 22)))
        self.assertEqual(e["final_usable"][1], 22)

    def test_independent_blocks_pipeline(self):
        # Block 0 processes at 9-10 and downloads 10-11 while block 1 still uploads; block 1: 17-18, 18-20.
        e = two(True)
        self.assertEqual((e["process.0"], e["download.final.0"]), ((9, 10), (10, 11)))
        self.assertEqual((e["process.1"], e["download.final.1"]), ((17, 18), (18, 20)))
        self.assertEqual(e["final_usable"][1], 20)

    def test_preview_occupies_server_and_downlink(self):
        # Independent, a 5 B preview encoded 1/2 s after block 0: server 10-21/2, preview download released at
        # 21/2 behind final.0 (10-11): 11-23/2; block 1 is unaffected (17-18, 18-20).
        e = two(True, preview=(0, 5, F(1, 2)))
        self.assertEqual((e["preview_encode"], e["download.preview"]), ((10, F(21, 2)), (11, F(23, 2))))
        self.assertEqual(e["final_usable"][1], 20)

    def test_preview_wins_a_tie_on_the_downlink(self):
        # Whole image, zero-time preview after block 1's encode: preview and finals are all released at 19;
        # the preview goes first: 19 - 19 + 8 x 5 / 80 = 39/2, then final.0 39/2 - 41/2.
        e = two(False, preview=(1, 5, F(0)))
        self.assertEqual((e["download.preview"], e["download.final.0"]), ((19, F(39, 2)), (F(39, 2), F(41, 2))))


class BookBlocks(unittest.TestCase):
    def test_book_scenarios(self):
        # 10 MB at 20 Mb/s = 4 s per block; whole image: all three in at 12 + 1/20 = 241/20, processes to 247/20,
        # downloads 2/25 + 4/25 + 4/25 = 2/5 s to 51/4, + 1/20 = 64/5 s. Independent: block 2 in at 241/20,
        # processed 243/20, 2 MB down 4/25 s -> 1231/100, + 1/20 = 309/25 s.
        self.assertEqual(budget()["complete_s_exact"], "64/5")
        self.assertEqual(budget("--independent")["complete_s_exact"], "309/25")
        # The preview after block 0 (500 kB, 1/20 s): whole image 61/5 + 1/25 + 1/20 = 1229/100; it delays the
        # barrier's processing by 1/20 s: final 257/20.
        r = budget("--preview", "0:500KB:1/20s")
        self.assertEqual((r["preview_ready_s_exact"], r["complete_s_exact"]), ("1229/100", "257/20"))

    def test_bad_input(self):
        for argv, text in ((["--preview", "3:1KB:0s"], "there are 3 blocks"), (["--preview", "0:1KB"], "AFTER:BYTES")):
            status, _, err = run_cli("budget", "image-stream", *BOOK, *argv)
            self.assertEqual(status, 2, argv)
            self.assertIn(text, err)
        status, _, err = run_cli("budget", "image-stream", "--blocks", "10MB:1MB:1/10s", "--upload-rate", "1Mb/s",
                                 "--download-rate", "1Mb/s")
        self.assertEqual(status, 2)
        self.assertIn("IN:OUT:PROCESS:ENCODE", err)


if __name__ == "__main__":
    unittest.main()

"""`budget ack-window`: the finite ACK-window teaching protocol; small cases derived by hand in the
comments (8,000 b/s links: 1,000 B take 1 s; 1 s one-way delays)."""

import json
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.ack_window import ack_window  # noqa: E402

F = Fraction


def run(**kw):
    base = dict(input_bytes=1000, output_bytes=1000, segment_bytes=1000, upload_bits_per_s=8000,
                download_bits_per_s=8000, forward_s=F(1), reverse_s=F(1), initial_window=1000, max_window=10000,
                receive_window=10000, growth=1000, header_bytes=0, ack_bytes=0, rto_s=F(100), model_s=F(0))
    base.update(kw)
    return ack_window(**base)


def times(r, *keys):
    return [tuple(F(t[k]) for k in keys) for t in r["transfers"]]


class OneRequest(unittest.TestCase):
    def test_serial_links_delays_and_model(self):
        # Upload 0-1 s, arrives 2; its (empty) ACK arrives 3. The model (1/2 s) starts at 2: the download is
        # serialized 5/2 - 7/2 and arrives 9/2; its ACK 11/2.
        r = run(model_s=F(1, 2))
        self.assertEqual(times(r, "complete_received_s_exact", "all_acked_s_exact"), [(2, 3), (F(9, 2), F(11, 2))])
        self.assertEqual((F(r["complete_final_image_s_exact"]), F(r["last_ack_s_exact"])), (F(9, 2), F(11, 2)))

    def test_window_growth_admits_more(self):
        # 3 segments, window 1 segment: seg 0 at 0-1 (arrives 2, ACK 3); the ACK grows the window to 2,000: segs 1, 2
        # at 3-4, 4-5, arriving 5 and 6 (upload complete at 6).
        r = run(input_bytes=3000)
        self.assertEqual(F(r["transfers"][0]["complete_received_s_exact"]), 6)

    def test_receive_window_limits(self):
        # The same with a large window but a 1,000 B receive window: the sender waits for each ACKed prefix:
        # segments at 0, 3, 6 -> complete at 8.
        r = run(input_bytes=3000, initial_window=3000, receive_window=1000)
        self.assertEqual(F(r["transfers"][0]["complete_received_s_exact"]), 8)

    def test_headers_and_acks_occupy_the_links(self):
        # 1,000 B payload + 1,000 B header: 2 s upload, arrives 3; a 1,000 B ACK takes 1 s down: arrives 5.
        r = run(header_bytes=1000, ack_bytes=1000, output_bytes=1)
        up = r["transfers"][0]
        self.assertEqual((F(up["complete_received_s_exact"]), F(up["all_acked_s_exact"])), (3, 5))
        self.assertEqual((up["data_wire_bytes"], up["ack_wire_bytes"]), (2000, 1000))

    def test_one_declared_loss(self):
        # Segment 0 dropped; its timer (5 s from the serialization end at 1) retransmits at 6-7: arrives 8.
        r = run(rto_s=F(5), drop=("upload", 0))
        up = r["transfers"][0]
        self.assertEqual((F(up["complete_received_s_exact"]), up["retransmission_wire_bytes"], r["recoveries"]),
                         (8, 1000, 1))

    def test_other_timeouts_are_refused(self):
        # A 1 s RTO expires before the ACK (3 s) on an undeclared segment: outside the finite contract.
        with self.assertRaises(ValueError):
            run(rto_s=F(1))


class Requests(unittest.TestCase):
    def test_handshake_and_reuse(self):
        # A c2s:1000, s2c:1000 handshake: 0-1 arrives 2, 2-3 arrives 4; the upload starts at 4.
        # Fresh: every request repeats it (2 x 2,000 B); reuse_warm: only the first (2,000 B) and request 2 starts
        # when request 1's response is complete.
        hs = [("c2s", 1000), ("s2c", 1000)]
        fresh = run(handshake=hs, requests=2, strategy="fresh")
        warm = run(handshake=hs, requests=2, strategy="reuse_warm")
        self.assertEqual(F(fresh["requests"][0]["ready_s_exact"]), 4)
        self.assertEqual((fresh["handshake_wire_bytes"], warm["handshake_wire_bytes"]), (4000, 2000))
        second = warm["requests"][1]
        self.assertEqual(second["submit_s_exact"], second["ready_s_exact"])
        self.assertEqual(second["submit_s_exact"], warm["requests"][0]["complete_received_s_exact"])

    def test_quiet_waits_for_the_last_ack(self):
        # submit-on quiet: request 2 follows request 1's last ACK (its download ACK), not the response.
        r = run(requests=2, strategy="reuse_warm", submit_on="quiet")
        self.assertEqual(r["requests"][1]["submit_s_exact"], r["requests"][0]["last_ack_s_exact"])

    def test_command_refusals(self):
        base = ("budget", "ack-window", "--input-bytes", "1000", "--output-bytes", "1000", "--segment-bytes", "1000",
                "--upload-rate", "8000b/s", "--download-rate", "8000b/s", "--forward-delay", "1s", "--reverse-delay",
                "1s", "--initial-window", "1000", "--max-window", "1000", "--receive-window", "1000", "--window-growth",
                "0", "--header-bytes", "0", "--ack-bytes", "0", "--rto", "100s", "--model-time", "0s")
        status, out, err = run_cli(*base, "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["result"]["complete_final_image_s_exact"], "4")
        for argv, text in ((["--drop", "upload:3"], "segments 0 to 0"), (["--handshake", "x:1"], "c2s:BYTES"),
                           (["--rto", "1s"], "outside the declared loss")):
            status, _, err = run_cli(*base, *argv)
            self.assertEqual(status, 2, argv)
            self.assertIn(text, err)


if __name__ == "__main__":
    unittest.main()

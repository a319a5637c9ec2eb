"""`budget async-checkpoint`: snapshot buffers, staging, upload and the recoverable snapshot; by hand."""

import os
import sys
import unittest
from fractions import Fraction as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402,F401  (puts calculations/ on sys.path)

from infracalc.analyses.checkpoint_async import async_checkpoint  # noqa: E402


def run(**kw):
    args = dict(parameters=8190735360, payload=112 * 10**9, snapshots=2, first=F(20), interval=F(20),
                staging=F(1, 2), bandwidth=8 * 10**9, slots=2, durability=F(0), failure=F(50))
    args.update(kw)
    return async_checkpoint(**args)


class AsyncCheckpoint(unittest.TestCase):
    def test_two_snapshots_by_hand(self):
        # 112e9 B at 8e9 B/s = 14 s; requests at 20, 40: staged 20.5, 40.5, uploads end 34.5 and 54.5; only the first is
        # durable by 50 s: recover the capture at 20, 30 s rolled back; one buffer live at 50 (the second's)
        r = run()
        self.assertEqual((r["upload_s_exact"], r["final_durable_s_exact"]), ("14", "109/2"))
        self.assertEqual((r["latest_recoverable_snapshot"], r["recovery_capture_s_exact"], r["rollback_s_exact"]),
                         (0, "20", "30"))
        self.assertEqual((r["live_buffer_peak_bytes"], r["live_buffers_at_failure"], r["training_pause_s_exact"]),
                         (112 * 10**9, 1, "1"))

    def test_one_slot_backpressure(self):
        # one slot, requests every 10 s: the second waits for the first upload to end at 34.5, staged at 35, uploads
        # 35-49, durable by 50: recovery capture 69/2 s; the pauses 20-20.5, 30-35, 40-49.5 and 50-93 sum to 58 s
        r = run(snapshots=6, interval=F(10), slots=1)
        second = r["snapshots"][1]
        self.assertEqual((second["capture_s"], second["upload_end_s"]), ("69/2", "49"))
        self.assertEqual((r["recovery_capture_s_exact"], r["training_pause_s_exact"]), ("69/2", "58"))
        self.assertFalse(r["upload_has_slack"])
        # capture delays: 20 - 20 = 0, 69/2 - 30 = 9/2, 49 - 40 = 9 (each waits for the previous upload's end)
        self.assertEqual([x["capture_delay_s"] for x in r["snapshots"][:3]], ["0", "9/2", "9"])
        # the declared 112 GB payload keeps the model's 14 B x 8,190,735,360 = 114,670,295,040 B as the reference
        self.assertEqual((r["payload_bytes"], r["reference_payload_bytes"]), (112 * 10**9, 114670295040))

    def test_two_slots_hold_two_payloads(self):
        # the book's default: 14 B x 8,190,735,360 = 114,670,295,040 B, 14.33 s uploads every 10 s: both slots live
        r = run(payload=None, snapshots=6, interval=F(10))
        self.assertEqual((r["payload_bytes"], r["live_buffer_peak_bytes"]), (114670295040, 2 * 114670295040))
        self.assertEqual(r["recovery_capture_s_exact"], "30")

    def test_the_index_rows_at_their_inferred_writer_rates(self):
        # the book's index prints -rounded and -fast with uploads 16 and 28/5 s; 112e9 B / 16 s = 7 GB/s and
        # 112e9 / (28/5) = 20 GB/s (inferred from those outputs; the stored files declare 8 and 16 GB/s).
        # 7 GB/s: durable at 20.5 + 16 = 36.5 and 40.5 + 16 = 56.5 > 50: recover the capture at 20 s.
        # 20 GB/s: 40.5 + 5.6 = 46.1 <= 50: recover the capture at 40 s. One 112 GB buffer live at a time.
        for bandwidth, upload, capture in ((7 * 10**9, "16", "20"), (20 * 10**9, "28/5", "40")):
            r = run(bandwidth=bandwidth)
            self.assertEqual((r["payload_bytes"], r["upload_s_exact"], r["live_buffer_peak_bytes"],
                              r["recovery_capture_s_exact"]), (112 * 10**9, upload, 112 * 10**9, capture))

    def test_durable_at_the_failure_counts(self):
        # a delay making the first durable exactly at 50 s: recoverable (<=); 20 s later it is not
        self.assertEqual(run(durability=F(31, 2))["latest_recoverable_snapshot"], 0)
        self.assertIsNone(run(durability=F(20))["latest_recoverable_snapshot"])


    def test_buffers_past_the_snapshots_are_never_taken(self):
        # 2 snapshots take at most 2 buffers: 10^6 buffers schedule as 2 do
        few, many = run(slots=2), run(slots=10**6)
        self.assertEqual({k: v for k, v in few.items() if k != "reserved_buffer_bytes"},
                         {k: v for k, v in many.items() if k != "reserved_buffer_bytes"})


if __name__ == "__main__":
    unittest.main()

"""`budget fifo-pipeline`: a FIFO generation pipeline of declared stage, link and feedback times and its
boundary buffers (the book's chapter-6 example); expected values derived by hand."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.fifo_pipeline import fifo_pipeline  # noqa: E402

MS, US = 10**6, 1000
A = 2 * 4096                   # BF16 [1, 4096]: one Qwen3-8B request's hidden state
BOOK = dict(stage_ns=[MS] * 4, transfer_ns=[100 * US] * 3, groups=4, steps=4, feedback_ns=100 * US, activation_bytes=A)


class FifoPipeline(unittest.TestCase):
    def test_one_group_by_hand(self):
        # 4 x 1 ms + 3 x 0.1 ms = 4.3 ms a step, then 0.1 ms of feedback: 4.3, 8.7, 13.1, 17.5 ms. At [1.0, 1.1) ms
        # boundary 0 holds the sender copy (production to send end) and the receiver copy (send start to the
        # consumer's end at 2.1): 2 x 8,192 B; boundary 1 takes over only after boundary 0's receiver is released.
        r = fifo_pipeline(**dict(BOOK, groups=1))
        self.assertEqual(r["completions_ns"][0]["steps_ns"], [4300 * US, 8700 * US, 13100 * US, 17500 * US])
        self.assertEqual((r["boundary_buffer_peak_bytes"], r["max_inter_step_completion_ns"]), (2 * A, 4400 * US))

    def test_four_groups_by_hand(self):
        # Stage 0 runs the four groups back to back: first-step completions 4.3, 5.3, 6.3, 7.3 ms; each group then
        # repeats every 4.4 ms without conflicts: the last finishes at 7.3 + 3 x 4.4 = 20.5 ms.
        r = fifo_pipeline(**BOOK)
        self.assertEqual([c["steps_ns"][0] for c in r["completions_ns"]], [4300 * US, 5300 * US, 6300 * US, 7300 * US])
        self.assertEqual((r["finish_ns"], r["transfer_payload_bytes"]), (20500 * US, 16 * 3 * A))
        self.assertEqual([s["busy_ns"] for s in r["stages"]], [16 * MS] * 4)

    def test_slow_links_and_imbalance(self):
        # 2 ms links: the first completion is 4 + 3 x 2 = 10 ms; a 2 ms stage 1: 1 + 0.1 + 2 + 0.1 + 1 + 0.1 + 1 = 5.3.
        self.assertEqual(fifo_pipeline(**dict(BOOK, transfer_ns=[2 * MS] * 3))["first_completion_ns"], 10 * MS)
        r = fifo_pipeline(**dict(BOOK, stage_ns=[MS, 2 * MS, MS, MS]))
        self.assertEqual((r["first_completion_ns"], r["finish_ns"]), (5300 * US, 35300 * US))

    def test_one_slot_reserves_before_the_compute(self):
        # One sender slot per boundary is taken at the producer's start and freed at the send end: group 1 cannot
        # start stage 0 until group 0's activation has left boundary 0 at 1.1 ms (a 0.1 ms wait), and likewise at
        # stage 0 for groups 2 and 3: 3 x 0.1 ms = 300 us of sender waits; the finish moves from 20.5 to 20.8 ms.
        r = fifo_pipeline(**dict(BOOK, slots=1))
        self.assertEqual((r["sender_buffer_wait_ns"], r["receiver_buffer_wait_ns"]), (300 * US, 0))
        self.assertEqual((r["finish_ns"], r["reserved_boundary_pool_bytes"]), (20800 * US, 2 * 3 * 1 * A))
        self.assertEqual([o["start_ns"] for o in r["operations"] if o["step"] == 0 and o["stage"] == 0],
                         [0, 1100 * US, 2200 * US, 3300 * US])

    def test_the_index_rows(self):
        # The book's index (first completion ms, all done ms, boundary buffer peak B) for its eight rows.
        slow = [2 * MS] * 3
        rows = [(dict(groups=1), 4.3, 17.5, 16384), ({}, 4.3, 20.5, 40960), (dict(groups=8), 4.3, 35.3, 40960),
                (dict(transfer_ns=slow), 10.0, 46.3, 57344), (dict(stage_ns=[MS, 2 * MS, MS, MS]), 5.3, 35.3, 40960),
                (dict(slots=1), 4.3, 20.8, 49152), (dict(slots=2), 4.3, 20.5, 57344),
                (dict(slots=1, transfer_ns=slow), 10.0, 55.0, 49152)]
        for kw, first, done, buffers in rows:
            r = fifo_pipeline(**dict(BOOK, **kw))
            self.assertEqual((r["first_completion_ns"], r["finish_ns"], r["boundary_buffer_peak_bytes"]),
                             (round(first * MS), round(done * MS), buffers), kw)

    def test_invariants(self):
        for kw in (BOOK, dict(BOOK, slots=1), dict(BOOK, slots=2, transfer_ns=[2 * MS] * 3), dict(BOOK, groups=8),
                   dict(BOOK, stage_ns=[3 * MS, MS], transfer_ns=[500 * US], slots=1)):
            r = fifo_pipeline(**kw)
            for k in range(len(kw["stage_ns"])):
                runs = [(o["start_ns"], o["end_ns"]) for o in r["operations"] if o["stage"] == k]
                self.assertTrue(all(a[1] <= b[0] for a, b in zip(runs, runs[1:])))        # serial, FIFO
            unbounded = fifo_pipeline(**dict(kw, slots=None))
            self.assertGreaterEqual(r["finish_ns"], unbounded["finish_ns"])
            if kw.get("slots"):
                self.assertLessEqual(r["boundary_buffer_peak_bytes"], r["reserved_boundary_pool_bytes"])

    def test_command(self):
        status, out, err = run_cli("budget", "fifo-pipeline", "--model", "qwen3-8b", "--groups", "8", "--steps", "4",
                                   "--stage-times", "1ms,1ms,1ms,1ms", "--transfer-times", "100us,100us,100us",
                                   "--feedback", "100us", "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["result"]["finish_ns"], 35300 * US)
        status, _, err = run_cli("budget", "fifo-pipeline", "--model", "qwen3-8b", "--groups", "1", "--steps", "1",
                                 "--stage-times", "1ms,1ms", "--transfer-times", "1ms,1ms")
        self.assertEqual(status, 2, err)


    def test_slots_past_the_transfers_are_never_taken(self):
        # a link moves steps x groups = 16 tensors: 10^6 slots schedule as 16 do; only
        # the reserved pool grows
        few, many = fifo_pipeline(**dict(BOOK, slots=16)), fifo_pipeline(**dict(BOOK, slots=10**6))
        self.assertEqual({k: v for k, v in few.items() if k != "reserved_boundary_pool_bytes"},
                         {k: v for k, v in many.items() if k != "reserved_boundary_pool_bytes"})
        self.assertEqual(many["reserved_boundary_pool_bytes"], 2 * 3 * 10**6 * 8192)


if __name__ == "__main__":
    unittest.main()

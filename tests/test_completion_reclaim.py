"""`budget completion-reclaim`: finite credits held until a periodic poll consumes each completion (the
book's chapter-7 example); expected values derived by hand."""

import json
import os
import sys
import unittest
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.completion_reclaim import completion_reclaim  # noqa: E402

US = 1000
BOOK = dict(operations=16, slots=8, submit_interval_ns=1 * US, latency_ns=5 * US, poll_interval_ns=20 * US, poll_batch=4)


class CompletionReclaim(unittest.TestCase):
    def test_book_case_by_hand(self):
        # Ops 0-7 take the 8 slots at 0..7 us and complete at 5..12 us. Polls at 20, 40, 60, 80 us consume 4 each
        # (FIFO): ops 0-3 at 20, 4-7 at 40. Ops 8-11 get slots 0-3 freed at 20 us: submit 20..23, complete 25..28,
        # consumed at 60; ops 12-15 get slots 4-7 at 40: submit 40..43 (delay 40 - 12 = 28 us), consumed at 80.
        r = completion_reclaim(**BOOK)
        self.assertEqual([o["consumed_ns"] for o in r["operations"]], [20 * US] * 4 + [40 * US] * 4 + [60 * US] * 4 + [80 * US] * 4)
        self.assertEqual((r["last_submit_ns"], r["all_transfers_complete_ns"], r["all_slots_reclaimed_ns"]),
                         (43 * US, 48 * US, 80 * US))
        # delays: 0 x 8, then 12 x 4 (20 - 8 .. 23 - 11) and 28 x 4: 48 + 112 = 160 us
        self.assertEqual((r["total_submission_delay_ns"], r["max_submission_delay_ns"]), (160 * US, 28 * US))
        # reclaim waits: ops 0-3 15+14+13+12 = 54, 4-7 31+30+29+28 = 118, 8-11 35+34+33+32 = 134, 12-15 134: 440 us
        self.assertEqual(r["total_reclaim_wait_ns"], 440 * US)
        # in flight: 5 ops submitted within one 5 us latency; all 8 completions wait for the 20 us poll
        self.assertEqual((r["peak_outstanding"], r["peak_in_flight"], r["peak_unconsumed_completions"]), (8, 5, 8))
        self.assertEqual(r["peak_retained_completion_bytes"], 8 * 64)

    def test_one_completion_per_poll(self):
        # b = 1: op i is consumed at the (i + 1)-th poll, 20 (i + 1) us; slot reuse makes op 8 wait for 20 us, ...,
        # op 15 submitted at 160 us (delay 145 us), complete 165, reclaimed 320 us.
        r = completion_reclaim(**dict(BOOK, poll_batch=1))
        self.assertEqual([o["consumed_ns"] for o in r["operations"]], [20 * US * (i + 1) for i in range(16)])
        self.assertEqual((r["max_submission_delay_ns"], r["all_transfers_complete_ns"]), (145 * US, 165 * US))

    def test_invariants(self):
        for kw in (BOOK, dict(BOOK, poll_interval_ns=5 * US), dict(BOOK, slots=3, poll_batch=2, latency_ns=7 * US),
                   dict(BOOK, operations=40, slots=5, submit_interval_ns=3 * US)):
            r = completion_reclaim(**kw)
            ops = r["operations"]
            for o in ops:
                self.assertGreaterEqual(o["consumed_ns"], o["complete_ns"])
                self.assertEqual(o["consumed_ns"] % kw["poll_interval_ns"], 0)
            self.assertLessEqual(max(Counter(o["consumed_ns"] for o in ops).values()), kw["poll_batch"])
            self.assertEqual([o["consumed_ns"] for o in ops], sorted(o["consumed_ns"] for o in ops))   # FIFO
            self.assertLessEqual(r["peak_outstanding"], kw["slots"])
            for a, b in zip(ops, ops[1:]):
                self.assertGreaterEqual(b["submit_ns"] - a["submit_ns"], kw["submit_interval_ns"])

    def test_command(self):
        status, out, err = run_cli("budget", "completion-reclaim", "--operations", "16", "--slots", "16", "--submit-interval",
                                   "1us", "--latency", "5us", "--poll-interval", "20us", "--poll-batch", "4", "--model",
                                   "qwen3-8b", "--format", "json")
        self.assertEqual(status, 0, err)
        r = json.loads(out)["result"]
        self.assertEqual((r["reserved_slot_payload_bytes"], r["peak_unconsumed_completions"]), (16 * 8192, 15))
        status, _, err = run_cli("budget", "completion-reclaim", "--operations", "1", "--slots", "1", "--submit-interval",
                                 "1us", "--latency", "5us", "--poll-interval", "0s", "--poll-batch", "4")
        self.assertEqual(status, 2, err)


if __name__ == "__main__":
    unittest.main()

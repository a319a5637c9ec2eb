"""`budget trace`: FIFO requests on workers with declared service times, live and reserved KV; every
expected value derived by hand in its comment."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.worker_trace import fifo_workers, worker_trace  # noqa: E402

# Requests (arrival, P, G, prefill, decode) in ns; c = 10 B of KV per token.
A = (0, 4, 3, 10, 5)     # service 10 + 2 x 5 = 20, reserves 10 x (4 + 3 - 1) = 60 B
B = (1, 2, 2, 4, 6)      # service 4 + 6 = 10, reserves 30 B
C = (2, 1, 1, 3, 100)    # service 3, reserves 10 B


class Scheduling(unittest.TestCase):
    def test_one_worker_fifo(self):
        # One worker: A 0-20, B waits to 20: 20-30, C 30-33; waits 0, 19, 28; TTFT 10, 19 + 4 = 23, 28 + 3 = 31.
        rows = fifo_workers([A, B, C], 1, 10)
        self.assertEqual([(r["start_ns"], r["finish_ns"]) for r in rows], [(0, 20), (20, 30), (30, 33)])
        self.assertEqual([r["ttft_ns"] for r in rows], [10, 23, 31])
        # first token = start + prefill: 0 + 10, 20 + 4, 30 + 3
        self.assertEqual([r["first_token_ns"] for r in rows], [10, 24, 33])

    def test_worker_free_longest_is_chosen(self):
        # Two workers: A on 0 (0-20), B on 1 (1-11); C at 2 waits for worker 1 (free at 11): 11-14 on worker 1.
        # A fourth request at 15 finds worker 1 free since 14 and worker 0 busy: worker 1 again (15-25); at 30
        # both are free, worker 0 since 20 and worker 1 since 25: worker 0, free the longest.
        rows = fifo_workers([A, B, C, (15, 1, 1, 10, 0), (30, 1, 1, 1, 0)], 2, 10)
        self.assertEqual([r["worker"] for r in rows], [0, 1, 1, 1, 0])
        self.assertEqual(rows[2]["start_ns"], 11)
        # With a 3 ns fourth request (15-18 on worker 1), at 30 worker 1 (free since 18) beats worker 0 (since 20).
        rows = fifo_workers([A, B, C, (15, 1, 1, 3, 0), (30, 1, 1, 1, 0)], 2, 10)
        self.assertEqual(rows[4]["worker"], 1)

    def test_capacity_is_strict_fifo(self):
        # Budget 80 B: A holds 60; B (30) waits for A's finish at 20 even with a worker free; C (10) would fit
        # beside A but may not pass B: it starts with B at 20 (30 + 10 <= 80).
        rows = fifo_workers([A, B, C], 2, 10, capacity=80)
        self.assertEqual([r["start_ns"] for r in rows], [0, 20, 20])


class Accounting(unittest.TestCase):
    def test_kv_peak_residency_and_reservations(self):
        # One worker, A then B. A: 40 B from 0, 50 at 10, 60 at 15, released at 20; B: 20 B at 20 (A's release
        # first), 30 at 24, released at 30: peak 60. Residency: A 10 x (4 x 10 + 5 x (2 x 4 + 3)) = 950, B
        # 10 x (2 x 4 + 6 x (1 x 2 + 1)) = 260: 1,210 byte-ns. Reserved with a 1 kB budget: 60 x 20 + 30 x 10
        # = 1,500 byte-ns, peak 60.
        r = worker_trace([A, B], 1, 10, capacity=1000)
        self.assertEqual((r["kv_peak_bytes"], r["kv_residency_byte_ns"]), (60, 1210))
        self.assertEqual((r["kv_reservation_peak_bytes"], r["kv_reservation_byte_ns"]), (60, 1500))

    def test_p95_is_nearest_rank(self):
        # Latencies 20, 29, 31 (one worker): ceil(0.95 x 3) = 3rd smallest = 31; mean wait (0 + 19 + 28) / 3.
        r = worker_trace([A, B, C], 1, 10)
        self.assertEqual((r["p95_latency_ns"], r["mean_wait_ns"]), (31, 47 / 3))

    def test_book_ledger_and_kv(self):
        # Qwen3-8B: 36 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 147,456 B per token; a 1024 + 128 request
        # holds 1151 tokens at its end: 169,721,856 B; two at once at their ends: 339,443,712.
        status, out, err = run_cli("budget", "trace", "--model", "qwen3-8b", "--workers", "2", "--request",
                                   "0ms:1024:128:1.024ms:1ms", "--request", "0.5ms:1024:128:1.024ms:1ms",
                                   "--format", "json")
        self.assertEqual(status, 0, err)
        r = json.loads(out)["result"]
        self.assertEqual((r["kv_bytes_per_token"], r["kv_peak_bytes"]), (147456, 339443712))
        self.assertEqual(r["finish_ns"], 500000 + 1024000 + 127 * 1000000)
        # each request's ledger figures; the summary is their sum
        rows = r["per_request"]
        self.assertEqual(sum(x["prefill_matrix_flops"] for x in rows), r["prefill_matrix_flops"])
        self.assertEqual(sum(x["decode_matrix_flops"] for x in rows), r["decode_matrix_flops"])

    def test_per_request_ledger_equals_the_book(self):
        # the book's trace-qwen8-correlated request 0 (512 + 64 tokens on Qwen3-8B): prefill 7,191,170,908,160 and
        # decode 973,794,705,408 matrix FLOPs
        status, out, err = run_cli("budget", "trace", "--model", "qwen3-8b", "--workers", "1", "--request",
                                   "0ms:512:64:512us:1ms", "--format", "json")
        self.assertEqual(status, 0, err)
        row = json.loads(out)["result"]["per_request"][0]
        self.assertEqual((row["prefill_matrix_flops"], row["decode_matrix_flops"]), (7191170908160, 973794705408))

    def test_bad_input(self):
        for argv, text in ((["--request", "0ms:10:2:1ms"], "ARRIVAL:P:G:PREFILL:DECODE"),
                           (["--request", "0ms:10000:2:1ms:1ms", "--kv-capacity", "1MiB"], "could never start")):
            status, _, err = run_cli("budget", "trace", "--model", "qwen3-8b", *argv)
            self.assertEqual(status, 2, argv)
            self.assertIn(text, err)


if __name__ == "__main__":
    unittest.main()

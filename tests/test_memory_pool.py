"""`budget memory-pool`: borrowed capacity, periodic reads of it and failure dependencies of a declared
pooled memory (the book's chapter-6 example); expected values derived by hand."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.memory_pool import access, failures, pool_capacity  # noqa: E402

GIB = 2**30
CAP, DEMAND = [64 * GIB] * 4, [80 * GIB, 48 * GIB, 32 * GIB, 32 * GIB]


class MemoryPool(unittest.TestCase):
    def test_borrowing_by_hand(self):
        # Node 0 is 16 GiB short; node 1 (16 GiB free) is the first donor: used 64, 64, 32, 32 GiB. Slack unusable
        # before pooling 0 + 16 + 32 + 32 = 80 GiB. Two copies: node 2 holds the second (48 GiB used, 16 extra).
        one = pool_capacity(CAP, DEMAND, 1)
        self.assertEqual((one["donors"], one["used_after_pool_bytes"]), ({0: [1]}, [64 * GIB, 64 * GIB, 32 * GIB, 32 * GIB]))
        self.assertEqual((one["unusable_slack_before_pool_bytes"], one["whole_job_fits_on"]), (80 * GIB, {0: []}))
        two = pool_capacity(CAP, DEMAND, 2)
        self.assertEqual((two["donors"], two["extra_replica_bytes"], two["total_used_bytes"]),
                         ({0: [1, 2]}, 16 * GIB, (192 + 16) * GIB))

    def test_read_times(self):
        # 16 GiB at 10 GB/s (128 x 256 B / 2 us = 16.384 GB/s does not bind): 5 us + 1.7179869184 s = 1073744949/625000000 s;
        # once a minute the load is 1/60 of that and reads never queue; once a second they do (1.718 s > 1 s).
        # At 40 GB/s the 128-transaction window binds: 16.384 GB/s, 5 us + 1.048576 s = 1.048581 s; 20 us latency: 1.6384 GB/s.
        kw = dict(payload_bytes=16 * GIB, transaction_bytes=256, startup_ns=5000)
        slow = access(**kw, bandwidth=10 * 10**9, latency_ns=2000, transactions=128, reads_per_s=Fraction(1, 60))
        self.assertEqual((slow["read_s"], slow["never_queues"]), ("1073744949/625000000", True))
        self.assertFalse(access(**kw, bandwidth=10 * 10**9, latency_ns=2000, transactions=128, reads_per_s=1)["never_queues"])
        self.assertEqual(access(**kw, bandwidth=40 * 10**9, latency_ns=2000, transactions=128, reads_per_s=1)["read_s"],
                         "1048581/1000000")
        self.assertEqual(access(**kw, bandwidth=40 * 10**9, latency_ns=20000, transactions=128, reads_per_s=1)["rate_bytes_per_s"],
                         "1638400000")

    def test_a_small_read_takes_one_latency(self):
        # 4 x 256 B in flight over 2 us: 512 MB/s, so 256 B would take 0.5 us, under the 2 us latency: 5 us + 2 us.
        r = access(payload_bytes=256, bandwidth=10 * 10**9, latency_ns=2000, transactions=4, transaction_bytes=256,
                   startup_ns=5000, reads_per_s=1)
        self.assertEqual(r["read_s"], "7/1000000")

    def test_failures(self):
        # One copy on node 1: losing node 1 takes down job 1 and the borrower job 0; with copies on 1 and 2, job 0
        # survives either alone and falls only with both (or its own node).
        one = {tuple(r["failed_nodes"]): r["jobs_down"] for r in failures(4, {0: [1]})}
        self.assertEqual((one[(1,)], one[(2, 3)], len(one)), ([0, 1], [2, 3], 15))
        two = {tuple(r["failed_nodes"]): r["jobs_down"] for r in failures(4, {0: [1, 2]})}
        self.assertEqual((two[(1,)], two[(1, 2)], two[(1, 3)]), ([1], [0, 1, 2], [1, 3]))

    def test_errors(self):
        base = ("budget", "memory-pool", "--node-capacity", "64GiB,64GiB", "--bandwidths", "1GB/s", "--latencies", "1us",
                "--transactions", "1", "--transaction-bytes", "1", "--reads-per-second", "1")
        for extra in (("--demand", "80GiB"), ("--demand", "100GiB,60GiB"), ("--demand", "80GiB,32GiB", "--copies", "2")):
            status, _, err = run_cli(*base, *extra)
            self.assertEqual(status, 2, err)


if __name__ == "__main__":
    unittest.main()

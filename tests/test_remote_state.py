"""`budget remote-state`: an immutable KV snapshot read remotely against staged once (the book's chapter-7
example); expected values derived by hand."""

import json
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.remote_state import remote_state  # noqa: E402

G = 10**9
P = 1024 * 147456      # Qwen3-8B: 36 layers x 8 KV heads x 128 x (K, V) x 2 B = 147,456 B per token
BOOK = dict(payload_bytes=P, reuses=4, remote_bandwidth=40 * G, latency_ns=2000, transaction_bytes=256, transactions=313,
            remote_startup_ns=5000, bulk_bandwidth=25 * G, bulk_startup_ns=10000, local_bandwidth=1000 * G,
            local_startup_ns=1000, local_available_bytes=256 * 2**20)


class RemoteState(unittest.TestCase):
    def test_reused_four_times_by_hand(self):
        # 313 x 256 B / 2 us = 40.064 GB/s > 40: the link binds, R = 40 GB/s (313 = ceil(40e9 x 2e-6 / 256)).
        # Remote read 5,000 + 150,994,944 / 40 = 3,779,873.6 ns; local read 1,000 + 150,994.944; staging 10,000 +
        # 6,039,797.76 + 150,994.944 = 6,200,792.704. Four reads: direct 15,119,494.4, staged 6,200,792.704 +
        # 4 x 151,994.944 = 6,808,772.48 ns (the chapter's 15.119494 and 6.808772 ms); saving per read 3,627,878.656:
        # strictly faster from floor(1.709) + 1 = 2 reads.
        r = remote_state(**BOOK)
        self.assertEqual((r["remote_rate_bytes_per_s"], r["window_transactions_for_link"]), (40 * G, 313))
        self.assertEqual((Fraction(r["direct_total_ns"]), Fraction(r["staged_total_ns"])),
                         (Fraction(151194944, 10), Fraction(680877248, 100)))
        self.assertEqual((r["strict_reuses_to_amortize"], r["selected"]), (2, "stage"))
        self.assertEqual((r["direct_network_bytes"], r["staged_network_bytes"], r["staged_local_read_bytes"]), (4 * P, P, 4 * P))

    def test_window_limited_and_capacity(self):
        # 128 in flight: 128 x 256 / 2 us = 16.384 GB/s binds: 5,000 + 9,216,000 = 9,221,000 ns for one read,
        # more than staging's 6,352,787.648: stage, strictly faster from the first read.
        r = remote_state(**dict(BOOK, reuses=1, transactions=128))
        self.assertEqual((r["remote_rate_bytes_per_s"], r["remote_read_ns"], r["selected"]), (16384000000, 9221000, "stage"))
        self.assertEqual(r["strict_reuses_to_amortize"], 1)
        # One read at the full window: direct 3,779,873.6 < 6,352,787.648; 128 MiB cannot hold 144 MiB: direct.
        self.assertEqual(remote_state(**dict(BOOK, reuses=1))["selected"], "direct")
        small = remote_state(**dict(BOOK, local_available_bytes=128 * 2**20))
        self.assertEqual((small["fits_local_capacity"], small["selected"]), (False, "direct"))

    def test_a_small_snapshot_takes_one_latency(self):
        # 256 B at 40 GB/s is 6.4 ns, under the 2 us latency: a read takes the start + 2,000 ns.
        self.assertEqual(remote_state(**dict(BOOK, payload_bytes=256))["remote_read_ns"], 7000)

    def test_the_index_rows_at_its_rates(self):
        # The index prints its rows for 50 GB/s remote and bulk links and 3.35 TB/s local memory (any window of at
        # least 391 transactions): remote read 5,000 + 150,994,944 / 50 = 3,024,898.88 = 75622472/25 ns; staging
        # once 10,000 + 3,019,898.88 + 2 x 45,073.117 + 1,000 = 5227750568/1675.
        rates = dict(remote_bandwidth=50 * G, bulk_bandwidth=50 * G, local_bandwidth=3350 * G, transactions=391)
        rows = {"once": dict(reuses=1), "reused": dict(reuses=4), "window-limited": dict(reuses=1, transactions=128),
                "capacity": dict(reuses=4, local_available_bytes=128 * 2**20)}
        want = {"once": ("75622472/25", "5227750568/1675", True, "direct"),
                "reused": ("302489888/25", "5459267984/1675", True, "stage"),
                "window-limited": (9221000, "5227750568/1675", True, "stage"),
                "capacity": ("302489888/25", "5459267984/1675", False, "direct")}
        for name, kw in rows.items():
            r = remote_state(**dict(dict(BOOK, **rates), **kw))
            self.assertEqual((r["snapshot_bytes"], r["direct_total_ns"], r["staged_total_ns"], r["fits_local_capacity"],
                              r["selected"]), (P,) + want[name], name)

    def test_command_takes_the_model_cache(self):
        status, out, err = run_cli("budget", "remote-state", "--model", "qwen3-8b", "--context", "1024", "--reuses", "4",
                                   "--remote-bandwidth", "40GB/s", "--latency", "2us", "--transaction-bytes", "256",
                                   "--transactions", "313", "--bulk-bandwidth", "25GB/s", "--local-bandwidth", "1TB/s",
                                   "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["result"]["snapshot_bytes"], P)
        status, _, err = run_cli("budget", "remote-state", "--model", "qwen3-8b", "--reuses", "1", "--remote-bandwidth",
                                 "1GB/s", "--latency", "1us", "--transaction-bytes", "1", "--transactions", "1",
                                 "--bulk-bandwidth", "1GB/s", "--local-bandwidth", "1GB/s")
        self.assertEqual(status, 2, err)


if __name__ == "__main__":
    unittest.main()

"""`budget incast`: the allowed feedback delay and the buffer two feedback distances need; small cases
derived by hand in the comments, and the book's figures (public fork 899ms/ai-infra-book:
calculations/results/incast-feedback-book.json)."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.incast import allowed_feedback_ns, buffer_needed, incast, one_hop_feedback_ns  # noqa: E402

GB = 10**9


class Formulas(unittest.TestCase):
    def test_one_hop_is_two_propagations_and_one_mtu(self):
        # 10 m at 5 ns/m = 50 ns each way; a 100 B MTU at 1 GB/s = 100 ns: 50 + 50 + 100 = 200 ns.
        self.assertEqual(one_hop_feedback_ns(cable_m=10, ns_per_m=5, mtu_bytes=100, sender_rate=GB), (200, 50, 100))
        # 1500 B at 400 Gb/s = 50 GB/s is 30 ns; 30 m at 5 ns/m 150 ns each way: 330 ns (the book's).
        self.assertEqual(one_hop_feedback_ns(cable_m=30, ns_per_m=5, mtu_bytes=1500, sender_rate=50 * GB)[0], 330)
        # A fractional serialization stays exact: 1000 B at 3 GB/s = 1000/3 ns.
        self.assertEqual(one_hop_feedback_ns(cable_m=1, ns_per_m=1, mtu_bytes=1000, sender_rate=3 * GB)[0],
                         Fraction(1006, 3))

    def test_allowed_delay_is_buffer_over_excess(self):
        # 1 MiB over 7 x 50 - 50 = 300 GB/s: 1048576 / 300 us = 262144/75 ns (3495.25 ns).
        self.assertEqual(allowed_feedback_ns(buffer_bytes=2**20, excess=300 * GB), Fraction(262144, 75))

    def test_buffer_needed_is_distance_times_excess(self):
        # 330 ns x 300 GB/s = 99,000 B; 20 us x 300 GB/s = 6,000,000 B.
        self.assertEqual(buffer_needed(feedback_ns=330, excess=300 * GB), 99000)
        self.assertEqual(buffer_needed(feedback_ns=20000, excess=300 * GB), 6000000)


class Worked(unittest.TestCase):
    def test_docstring_case(self):
        # N = 3 at B = E = 1 GB/s, Q = 1000 B: X = 1 GB/s, T = 1000 ns; the pause 200 ns needs 200 B (1/5 of Q),
        # a 2 us RTT 2000 B (2 Q); the fluid check at 1000 ns peaks at 1000 B with no drop.
        out = incast(groups=[3], sender_rate=GB, egress_rate=GB, buffer_bytes=1000, cable_m=10, ns_per_m=5,
                     mtu_bytes=100, rtt_ns=2000)
        row = out["groups"][0]
        self.assertEqual((row["excess_bytes_per_s"], row["allowed_feedback_ns"]), (GB, "1000"))
        self.assertEqual((row["one_hop_buffer_bytes"], row["one_hop_fits"], row["one_hop_buffer_fraction"]),
                         ("200", True, "1/5"))
        self.assertEqual((row["end_to_end_buffer_bytes"], row["end_to_end_fits"], row["end_to_end_buffer_fraction"]),
                         ("2000", False, "2"))
        self.assertEqual((row["fluid_feedback_ns"], row["fluid_dropped_bytes"], row["fluid_peak_queue_bytes"]),
                         (1000, "0", "1000"))

    def test_no_excess_needs_no_feedback(self):
        # N = 2 at B = E: one sender keeps the egress busy and builds no backlog.
        row = incast(groups=[2], sender_rate=GB, egress_rate=GB, buffer_bytes=1000, cable_m=10, ns_per_m=5,
                     mtu_bytes=100, rtt_ns=2000)["groups"][0]
        self.assertEqual((row["excess_bytes_per_s"], row["allowed_feedback_ns"], row["one_hop_fits"]), (0, None, None))


BOOK = ["incast", "--groups", "8,16,64", "--sender-rate", "50GB/s", "--egress", "50GB/s", "--cable-m", "30",
        "--mtu", "1500", "--rtt", "20us"]


class Book(unittest.TestCase):
    def test_book_1mib(self):
        # The book's incast-feedback-book figures: allowed 262144/75, /175, /775 ns; one hop 99,000 / 231,000 /
        # 1,023,000 B (fits), end to end 6 / 14 / 62 MB (does not); fluid peaks 1,048,500 / 1,047,900 / 1,047,800 B.
        out = budget_result(*BOOK, "--buffer", "1MiB")
        rows = out["groups"]
        self.assertEqual(out["one_hop_feedback_ns"], "330")
        self.assertEqual([r["allowed_feedback_ns"] for r in rows], ["262144/75", "262144/175", "262144/775"])
        self.assertEqual([r["one_hop_buffer_bytes"] for r in rows], ["99000", "231000", "1023000"])
        self.assertEqual([r["end_to_end_fits"] for r in rows], [False, False, False])
        self.assertEqual([r["fluid_peak_queue_bytes"] for r in rows], ["1048500", "1047900", "1047800"])

    def test_book_4mib(self):
        # incast-feedback-4mib: allowed 1048576/75 ns (13,981 ns in the fluid check, peak 4,194,300 B).
        row = budget_result(*BOOK, "--buffer", "4MiB")["groups"][0]
        self.assertEqual((row["allowed_feedback_ns"], row["fluid_feedback_ns"], row["fluid_peak_queue_bytes"]),
                         ("1048576/75", 13981, "4194300"))
        self.assertEqual(row["end_to_end_buffer_fraction"], "46875/32768")

    def test_group_of_one_is_an_error(self):
        status, _, err = run_cli("budget", *BOOK, "--buffer", "1MiB", "--groups", "1")
        self.assertEqual(status, 2)
        self.assertIn("at least 2", err)
        self.assertNotIn("Traceback", err)


if __name__ == "__main__":
    unittest.main()

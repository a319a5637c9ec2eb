"""`budget periodic-queue` and `budget feedback-queue`: a fluid queue of declared arrival rates on one
link (the book's chapter-7 periodic-demand and feedback examples); expected values derived by hand."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.fluid_queue import feedback_queue, fluid_queue, periodic_queue  # noqa: E402

G = 10**9
MS = 10**6


budget = budget_result


def two_jobs(second_offset_ns, rate=40 * G):
    return [(100 * MS, 20 * MS, 0, rate), (100 * MS, 20 * MS, second_offset_ns, rate)]


class PeriodicQueue(unittest.TestCase):
    def test_aligned_pulses_by_hand(self):
        # Two 40 GB/s pulses together for 20 ms on 50 GB/s: net +30 B/ns x 2e7 ns = 6e8 B; then no arrivals,
        # the queue drains at 50 B/ns in 1.2e7 ns (last drain 32 ms). Area = the triangle 6e8 x 3.2e7 / 2 =
        # 9.6e15 byte ns, mean 9.6e7 B over the 100 ms window; excess 6e8 -> compatibility 1 - 6e8 / 5e9 = 22/25;
        # the peak's virtual wait 6e8 / 50 B/ns = 1.2e7 ns. (The book's periodic-queue-aligned file.)
        r = periodic_queue(jobs=two_jobs(0), capacity=50 * G)
        self.assertEqual(r["window_ns"], 100 * MS)
        self.assertEqual((r["peak_queue_bytes"], r["excess_demand_bytes"], r["last_drain_ns"]),
                         ("600000000", "600000000", "32000000"))
        self.assertEqual((r["queue_area_byte_ns"], r["mean_queue_bytes"]), ("9600000000000000", "96000000"))
        self.assertEqual((r["compatibility"], r["peak_queue_wait_ns"]), ("22/25", "12000000"))
        self.assertEqual([(s["start_ns"], s["end_ns"]) for s in r["segments"]],
                         [("0", "20000000"), ("20000000", "32000000"), ("32000000", "100000000")])

    def test_wrapped_pulse_counts_its_tail(self):
        # Offset 95 ms: the pulse of the previous period covers [0, 15 ms) and [95, 100 ms). [0, 15): 80 GB/s,
        # +30 B/ns -> 4.5e8; [15, 20): 40 GB/s, -10 B/ns -> 4e8; [20, 28): -50 B/ns, empty at 28 ms;
        # [95, 100): 40 GB/s below capacity, no queue. Area 4.5e8 x 1.5e7 / 2 + (4.5e8 + 4e8) x 5e6 / 2
        # + 4e8 x 8e6 / 2 = 3.375e15 + 2.125e15 + 1.6e15 = 7.1e15; compatibility 1 - 4.5e8 / 5e9 = 91/100.
        r = periodic_queue(jobs=two_jobs(95 * MS), capacity=50 * G)
        self.assertEqual((r["peak_queue_bytes"], r["queue_area_byte_ns"]), ("450000000", "7100000000000000"))
        self.assertEqual((r["compatibility"], r["last_drain_ns"]), ("91/100", "28000000"))
        self.assertEqual(r["segments"][-1]["start_ns"], "95000000")

    def test_the_index_rows_at_50_gbps_jobs(self):
        # The index prints these rows for 50 GB/s jobs (peak demand 100 GB/s): aligned +50 B/ns for 20 ms = 1e9,
        # compatibility 1 - 1e9 / 5e9 = 0.8; staggered never above 50 GB/s; drift overlaps 5 ms: 2.5e8, 0.95;
        # wrapped overlaps 15 ms: 7.5e8, 0.85; overloaded 150 GB/s all window: 1e10 left, 1 - 1e10 / 5e9 = -1.
        rows = {"aligned": two_jobs(0, 50 * G), "staggered": two_jobs(20 * MS, 50 * G),
                "drift": two_jobs(15 * MS, 50 * G), "wrapped": two_jobs(95 * MS, 50 * G),
                "overloaded": [(100 * MS, 100 * MS, 0, 150 * G)]}
        want = {"aligned": (100 * G, "1000000000", "4/5", "0"), "staggered": (50 * G, "0", "1", "0"),
                "drift": (100 * G, "250000000", "19/20", "0"), "wrapped": (100 * G, "750000000", "17/20", "0"),
                "overloaded": (150 * G, "10000000000", "-1", "10000000000")}
        for name, jobs in rows.items():
            r = periodic_queue(jobs=jobs, capacity=50 * G)
            got = (r["peak_offered_bytes_per_s"], r["peak_queue_bytes"], r["compatibility"], r["final_queue_bytes"])
            self.assertEqual(got, want[name], name)

    def test_overload_leaves_a_backlog_to_drain(self):
        # 150 GB/s on 50 GB/s for 100 ms: 1e10 B left; with arrivals stopped it drains in 1e10 / 50 = 2e8 ns.
        r = periodic_queue(jobs=[(100 * MS, 100 * MS, 0, 150 * G)], capacity=50 * G)
        self.assertEqual((r["drain_after_window_ns"], r["last_drain_ns"]), ("200000000", None))
        self.assertEqual(r["served_bytes"], "5000000000")

    def test_window_defaults_to_the_least_common_multiple(self):
        r = periodic_queue(jobs=[(4 * MS, 1 * MS, 0, G), (6 * MS, 1 * MS, 0, G)], capacity=10 * G)
        self.assertEqual(r["window_ns"], 12 * MS)
        self.assertEqual(r["arrived_bytes"], str((3 + 2) * MS))   # 3 + 2 pulses of 1 ms at 1 B/ns

    def test_conservation_and_mean(self):
        # initial + arrived = served + dropped + final; mean = area / window; the queue never exceeds the buffer.
        for jobs, buffer, initial in ((two_jobs(7 * MS, 45 * G), 10**8, 5 * 10**7), (two_jobs(3 * MS), None, 10**9),
                                      ([(30 * MS, 11 * MS, 29 * MS, 70 * G), (100 * MS, 60 * MS, 50 * MS, 9 * G)],
                                       2 * 10**8, 0)):
            r = periodic_queue(jobs=jobs, capacity=50 * G, initial_bytes=initial, buffer_bytes=buffer)
            f = lambda k: Fraction(r[k])  # noqa: E731
            self.assertEqual(initial + f("arrived_bytes"), f("served_bytes") + f("dropped_bytes") + f("final_queue_bytes"))
            self.assertEqual(f("mean_queue_bytes") * r["window_ns"], f("queue_area_byte_ns"))
            for s in r["segments"]:
                self.assertGreaterEqual(Fraction(s["queue_end_bytes"]), 0)
                self.assertTrue(buffer is None or Fraction(s["queue_end_bytes"]) <= buffer)
                self.assertLessEqual(Fraction(s["served_bytes"]),
                                     Fraction(r["capacity_bytes_per_s"], G) * (Fraction(s["end_ns"]) - Fraction(s["start_ns"])))


class FeedbackQueue(unittest.TestCase):
    def test_roomy_buffer_by_hand(self):
        # 262,144 B at 0, +30 B/ns for 20,000 ns -> 862,144 (below the 1 MiB buffer); then 40 GB/s, -10 B/ns:
        # empty after 86,214.4 ns, at 106,214.4 = 531072/5 ns. Area (262144 + 862144) x 20000 / 2 + 862144 x
        # 86214.4 / 2 = 1.1242880e10 + 37164979865.6 = 242037469184/5; compatibility 1 - 6e5 / 6e6 = 9/10.
        r = feedback_queue(offered=80 * G, reduced=40 * G, capacity=50 * G, feedback_ns=20000, after_ns=100000,
                           initial_bytes=262144, buffer_bytes=2**20)
        self.assertEqual((r["queue_at_feedback_bytes"], r["peak_queue_bytes"], r["dropped_bytes"]), ("862144", "862144", "0"))
        self.assertEqual((r["last_drain_ns"], r["queue_area_byte_ns"]), ("531072/5", "242037469184/5"))
        self.assertEqual((r["compatibility"], r["served_bytes"]), ("9/10", "5862144"))

    def test_overflow_fills_then_drops(self):
        # 512 KiB buffer: full after (524288 - 262144) / 30 = 8738.13 ns; dropped 862144 - 524288 = 337,856 by
        # feedback; then -10 B/ns from 524,288: empty at 20000 + 52428.8 = 362144/5 ns (the book's 72.4288 us).
        r = feedback_queue(offered=80 * G, reduced=40 * G, capacity=50 * G, feedback_ns=20000, after_ns=100000,
                           initial_bytes=262144, buffer_bytes=2**19)
        self.assertEqual(r["segments"][0]["end_ns"], "131072/15")
        self.assertEqual((r["dropped_bytes"], r["last_drain_ns"]), ("337856", "362144/5"))
        self.assertEqual(r["unbounded_queue_at_feedback_bytes"], "862144")

    def test_reduced_to_capacity_keeps_the_backlog(self):
        r = feedback_queue(offered=80 * G, reduced=50 * G, capacity=50 * G, feedback_ns=20000, after_ns=100000,
                           initial_bytes=262144, buffer_bytes=2**20)
        self.assertEqual((r["final_queue_bytes"], r["reduced_rate_below_capacity"]), ("862144", False))

    def test_the_index_rows_at_100_gbps_offered(self):
        # The index prints its rows for 100 GB/s offered (+50 B/ns x 20 us = +1e6): roomy 1,262,144 peak, no drop,
        # -10 B/ns x 1e5 ns leaves 262,144; overflow (512 KiB) drops 1262144 - 524288 = 737,856; late (40 us)
        # drops 2262144 - 524288 = 1,737,856; no-drain (1 MiB, reduced to 50 GB/s) drops 213,568 and keeps 1 MiB.
        def run(buffer, feedback=20000, reduced=40 * G):
            r = feedback_queue(offered=100 * G, reduced=reduced, capacity=50 * G, feedback_ns=feedback,
                               after_ns=100000, initial_bytes=262144, buffer_bytes=buffer)
            return r["peak_queue_bytes"], r["dropped_bytes"], r["final_queue_bytes"]
        self.assertEqual(run(None), ("1262144", "0", "262144"))
        self.assertEqual(run(2**19), ("524288", "737856", "0"))
        self.assertEqual(run(2**19, feedback=40000), ("524288", "1737856", "0"))
        self.assertEqual(run(2**20, reduced=50 * G), ("1048576", "213568", "1048576"))


class Cli(unittest.TestCase):
    def test_periodic_command(self):
        r = budget("periodic-queue", "--job", "100ms:20ms:0ms:40GB/s", "--job", "100ms:20ms:95ms:40GB/s",
                   "--capacity", "50GB/s")
        self.assertEqual(r["peak_queue_bytes"], "450000000")

    def test_feedback_command(self):
        r = budget("feedback-queue", "--offered", "80GB/s", "--reduced", "40GB/s", "--capacity", "50GB/s",
                   "--feedback", "40us", "--after-feedback", "100us", "--initial-queue", "256KiB", "--buffer", "512KiB")
        self.assertEqual((r["dropped_bytes"], r["last_drain_ns"]), ("937856", "462144/5"))

    def test_bad_inputs_are_one_line_errors(self):
        for argv in (("periodic-queue", "--job", "100ms:200ms:0ms:40GB/s", "--capacity", "50GB/s"),
                     ("periodic-queue", "--job", "100ms:20ms:0ms:40Gb/s", "--capacity", "50GB/s"),
                     ("periodic-queue", "--job", "1ns:1ns:0ns:1B/s", "--capacity", "1B/s", "--window", "1s"),
                     ("feedback-queue", "--offered", "1GB/s", "--reduced", "0", "--capacity", "0", "--feedback", "1us",
                      "--after-feedback", "1us"),
                     ("feedback-queue", "--offered", "1GB/s", "--reduced", "0", "--capacity", "1GB/s", "--feedback", "1us",
                      "--after-feedback", "1us", "--initial-queue", "2KiB", "--buffer", "1KiB")):
            status, _, err = run_cli("budget", *argv)
            self.assertEqual(status, 2, argv)
            self.assertEqual(len(err.strip().splitlines()), 1, err)


if __name__ == "__main__":
    unittest.main()

"""`budget hash-collision`: the exact distribution of the busiest uplink when n flows hash onto m, and per-packet
spraying; small cases counted by hand in the comments (and by enumeration), and the book's figures (public
fork 899ms/ai-infra-book: calculations/results/hash-collision-*.json)."""

import os
import sys
import unittest
from fractions import Fraction
from itertools import product

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.hash_collision import hash_collision, max_load_counts, pascal_rows, spray  # noqa: E402


class Counts(unittest.TestCase):
    def test_three_flows_on_two_uplinks(self):
        # 2^3 = 8 assignments: 2 put all three on one uplink (max 3), the other 6 split 2 + 1 (max 2).
        self.assertEqual(max_load_counts(3, 2), [0, 0, 6, 8])

    def test_four_flows_on_three_uplinks(self):
        # 3^4 = 81: max 2 when the loads are (2,1,1) in some order: 3 x 4!/(2!1!1!) = 36, or (2,2,0): 3 x 4!/(2!2!) = 18,
        # so A(2) = 54; A(3) = 81 - 3 (all four on one uplink) = 78; A(1) = 0 (4 flows, 3 uplinks).
        self.assertEqual(max_load_counts(4, 3), [0, 0, 54, 78, 81])

    def test_against_enumeration(self):
        # Both branches (the recurrence below n/3, inclusion-exclusion above) against every assignment.
        for n in range(1, 8):
            for m in range(1, 5):
                brute = [0] * (n + 1)
                for a in product(range(m), repeat=n):
                    top = max(a.count(i) for i in range(m))
                    for L in range(top, n + 1):
                        brute[L] += 1
                self.assertEqual(max_load_counts(n, m), brute, (n, m))


    def test_pascal_rows_are_the_binomials(self):
        from math import comb
        self.assertEqual(pascal_rows(0), [[1]])
        self.assertEqual(pascal_rows(4)[4], [1, 4, 6, 4, 1])
        self.assertEqual(pascal_rows(128), [[comb(k, j) for j in range(k + 1)] for k in range(129)])


    def test_miller_counts_with_one_above_seeds(self):
        # q_k = (1/k) sum_{j=1}^{L} ((m+1) j - k) C(k, j) q_{k-j}, q_k = m^k for k <= L, run for every k
        # (the module seeds L < k <= 2L + 1 with the one-above count instead): the same A(L).
        from math import comb
        n, m = 90, 7
        counts = max_load_counts(n, m)
        for L in range(-(-n // m), n // 3):
            q = [m ** k for k in range(L + 1)]
            for k in range(L + 1, n + 1):
                q.append(sum(((m + 1) * j - k) * comb(k, j) * q[k - j] for j in range(1, L + 1)) // k)
            self.assertEqual(counts[L], q[n], L)


class Summary(unittest.TestCase):
    def test_docstring_case(self):
        # n = m = 2: P(max <= 1) = 1/2; E[max] = 1 + 1/2 = 3/2; no collision 1/2; empty 2 x 1/4 = 1/2;
        # effective uplinks 4/3, fraction 2/3; p99 = 2.
        out = hash_collision(flows=2, uplinks=2)
        self.assertEqual((out["expected_max_load"], out["no_collision_probability"], out["expected_empty_uplinks"]),
                         ("3/2", "1/2", "1/2"))
        self.assertEqual((out["effective_uplinks"], out["effective_fraction_of_nominal_cut"], out["p99_max_load"]),
                         ("4/3", "2/3", 2))
        self.assertEqual([(r["max_load"], r["probability"], r["cumulative"]) for r in out["max_load_distribution"]],
                         [(1, "1/2", "1/2"), (2, "1/2", "1")])

    def test_book_8_on_32(self):
        # No collision = 32 x 31 x ... x 25 / 32^8 = 828316125/2147483648; empty uplinks 32 (31/32)^8.
        out = hash_collision(flows=8, uplinks=32)
        self.assertEqual(out["no_collision_probability"], str(Fraction(828316125, 2147483648)))
        self.assertEqual(Fraction(out["expected_empty_uplinks"]), 32 * Fraction(31, 32) ** 8)
        self.assertEqual((out["expected_max_load"], out["p99_max_load"]), ("7149497699/4294967296", 3))


class Spray(unittest.TestCase):
    def test_two_paths(self):
        # 4 packets of 1000 B at 1 GB/s (1000 ns each) on paths of 0 and 500 ns: packets 0, 2 on path 0 arrive at
        # 1000, 2000; 1, 3 on path 1 at 1500, 2500: completion 2500. One path carries all: 4000 + 0 = 4000 ns,
        # speedup 8/5; ideal 4000 / 2 + 500 = 2500: no reorder wait.
        out = spray(payload_bytes=4000, packet_bytes=1000, path_delays_ns=[0, 500], path_rate=10**9)
        self.assertEqual((out["completion_ns"], out["single_path_serial_ns"], out["spray_speedup"],
                          out["reorder_wait_ns"]), ("2500", "4000", "8/5", "0"))

    def test_book_spray(self):
        # The book's 8 MiB message (Qwen3-8B, 1024 tokens) in 4096 B packets over paths of 1..8 us at 50 GB/s.
        out = budget_result("hash-collision", "--flows", "8", "--uplinks", "32", "--path-delays",
                            "1us,2us,3us,4us,5us,6us,7us,8us", "--path-rate", "50GB/s", "--packet-bytes", "4096",
                            "--model", "qwen3-8b", "--tokens", "1024")["spray"]
        self.assertEqual((out["packets"], out["completion_ns"], out["peak_retained_bytes"], out["spray_speedup"]),
                         (2048, "724288/25", 1388544, "527413/90536"))


class Book(unittest.TestCase):
    def test_book_128_on_16(self):
        # 128 flows on 16 uplinks: p99 18, no collision 0; the rows run from 8 (every uplink exactly 8:
        # 128! / (8!^16 16^128)) to 128 (all on one of the 16: 16 / 16^128).
        out = budget_result("hash-collision", "--flows", "128", "--uplinks", "16")
        rows = out["max_load_distribution"]
        self.assertEqual((out["p99_max_load"], out["no_collision_probability"], len(rows)), (18, "0", 121))
        from math import factorial
        self.assertEqual(Fraction(rows[0]["probability"]), Fraction(factorial(128), factorial(8) ** 16 * 16 ** 128))
        self.assertEqual(Fraction(rows[-1]["probability"]), Fraction(16, 16 ** 128))
        self.assertEqual(out["expected_max_load_float"], 13.356892883995142)

    def test_too_many_flows_is_an_error(self):
        status, _, err = run_cli("budget", "hash-collision", "--flows", "129", "--uplinks", "16")
        self.assertEqual(status, 2)
        self.assertIn("at most 128", err)

    def test_spray_needs_its_options(self):
        status, _, err = run_cli("budget", "hash-collision", "--flows", "8", "--uplinks", "16", "--path-rate", "50GB/s")
        self.assertEqual(status, 2)
        self.assertIn("--path-delays", err)


if __name__ == "__main__":
    unittest.main()

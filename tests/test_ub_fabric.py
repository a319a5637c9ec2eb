"""`budget ub-fabric`: UB against RoCE from declared state sizes and phase latencies; values derived by hand
in the comments from the book's declared inputs (899ms/ai-infra-book:calculations/src/infra_calc/topics/ub_fabric.py)."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.ub_fabric import INPUTS, max_hosts, roce_spill, setup_ns, ub_spill  # noqa: E402

BOOK = {k: d for k, (d, _) in INPUTS.items()}


def summary(*extra):
    return {r["quantity"]: Fraction(r["exact"]) for r in budget_result("ub-fabric", *extra)["summary"]}


class UbFabric(unittest.TestCase):
    def test_state_and_spill(self):
        s = summary()
        # UB 1,024 x (20 + 32) + 1,024 x 56 = 110,592; RoCE 1,024^2 x 512 + 1,024 x 32 = 536,903,680
        self.assertEqual((s["ub_state_bytes"], s["roce_state_bytes"]), (110592, 536903680))
        self.assertEqual(s["state_ratio"], Fraction(536903680, 110592))
        # RoCE: 22 x (22 x 512 + 32) = 248,512 <= 262,144 < 23 x (23 x 512 + 32) = 271,584
        # UB: 262,144 // 108 = 2,427, so 2,428 x 108 = 262,224 is the first above the cache
        self.assertEqual((roce_spill(BOOK), ub_spill(BOOK)), (23, 2428))
        # a 1 MiB cache: RoCE 45 x (45 x 512 + 32) = 1,038,240 fits, 46 -> 1,084,864 does not; UB 1,048,576 // 108 + 1
        big = dict(BOOK, context_cache_bytes=1048576)
        self.assertEqual((roce_spill(big), ub_spill(big)), (46, 9710))
        self.assertEqual(roce_spill(dict(BOOK, context_cache_bytes=100)), 1)   # one QP (544 B) already spills

    def test_round_trips(self):
        s = summary()
        cycle = Fraction(10**9, 322000000)   # 500/161 ns
        # load/store: 3 bus (90) + 2 links (200) + row (30) + 4 NIC passes of 8 cycles
        self.assertEqual(s["ub_loadstore_round_trip_ns"], 320 + 32 * cycle)
        # URMA: + post 50 + WQE 30 + on-chip poll 5 + verbs poll 30, 4 passes of 25 cycles
        self.assertEqual(s["ub_urma_round_trip_ns"], 320 + 115 + 100 * cycle)
        # RoCE: post 50 + WQE 30 + MMIO 150 + 2 DMA reads 1,000 + 2 links 200 + row 30 + 2 DMA writes 500
        #       + host poll 70 + verbs poll 30 + PSN 50 = 2,110, and 4 passes of 9 cycles
        self.assertEqual(s["roce_dma_round_trip_ns"], 2110 + 36 * cycle)
        self.assertEqual(s["roce_pcie_ns"], 150 + 1000 + 500)
        self.assertEqual(s["extra_cold_ns"], 15 * cycle)
        self.assertEqual((s["ub_requests_per_us"], s["roce_requests_per_us"]), (161, Fraction(161, 3)))

    def test_hosts_and_setup(self):
        # UB (262,144 - 8 x 52) // 56 + 1 = 4,674; RoCE (262,144 - 256) // (64 x 512) + 1 = 8
        self.assertEqual(max_hosts(BOOK), (4674, 8))
        self.assertEqual(max_hosts(dict(BOOK, apps_per_host=64)), (4622, 1))   # (262,144 - 3,328) // 56 + 1
        self.assertEqual(max_hosts(dict(BOOK, context_cache_bytes=100)), (0, 0))
        # 1,024 endpoints: UB 1,024 x 5,000 + 1,024 x 505,000; RoCE 1,024^2 x 520,000 (ns)
        self.assertEqual(setup_ns(BOOK, 1024), (522240000, 545259520000))
        s = summary()
        self.assertEqual(s["roce_setup_parallel_s"], Fraction(545259520000, 32 * 10**9))   # 17.03936 s

    def test_set_and_errors(self):
        self.assertEqual(summary("--set", "apps_per_host=64")["ub_max_hosts_in_cache"], 4622)
        status, _, err = run_cli("budget", "ub-fabric", "--set", "app_per_host=64")
        self.assertEqual(status, 2)
        self.assertIn("did you mean apps_per_host", err)
        status, _, err = run_cli("budget", "ub-fabric", "--set", "clock_hz=0")
        self.assertEqual(status, 2)
        self.assertIn("clock_hz must be positive", err)


if __name__ == "__main__":
    unittest.main()

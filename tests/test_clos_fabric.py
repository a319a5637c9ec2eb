"""`budget clos`, `rail-pairing`, `switch-reduce`: a folded Clos's switches, bisection and cuts, rail pairings of
the cross-server AllReduce phase, and a switch reduction against the ring; small cases derived by hand in the
comments, and the book's figures (public fork 899ms/ai-infra-book: calculations/results/clos-cut-*.json)."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.clos_cut import clos_cut, leaf_ports, partition, tier  # noqa: E402
from infracalc.analyses.rail_pairing import rail_pairing  # noqa: E402
from infracalc.analyses.switch_reduce import ring_seconds, switch_seconds  # noqa: E402


class Clos(unittest.TestCase):
    def test_leaf_ports(self):
        # k = 64: r = 1 -> 32 / 32; r = 3 -> 48 / 16; r = 2 -> 128/3 ports (not whole).
        self.assertEqual((leaf_ports(64, 1), leaf_ports(64, 3), leaf_ports(64, 2)), ((32, 32), (48, 16), None))

    def test_docstring_k4(self):
        # k = 4, r = 1: two tiers 4 leaves + 2 spines, 8 endpoints, bisection 8/2 = 4 links; three tiers 8 edge +
        # 8 aggregation + 4 core = 20 switches, 16 = k^3/4 endpoints, 4 per pod.
        two = tier(radix=4, down=2, up=2, tiers=2, link=1)
        three = tier(radix=4, down=2, up=2, tiers=3, link=1)
        self.assertEqual((two["total_switches"], two["endpoints"], two["bisection_bytes_per_s"]), (6, 8, "4"))
        self.assertEqual((three["total_switches"], three["endpoints"], three["endpoints_per_pod"]), (20, 16, 4))
        # 3 endpoints: ceil(3/2) = 2 leaves, 4 uplinks; one pod's 2 x 2 = 4 core links: 4, i.e. 4/3 per endpoint.
        cut = partition(radix=4, down=2, up=2, tiers=3, link=1, endpoints=3)
        self.assertEqual((cut["leaves_used"], cut["cut_links"], cut["cut_bytes_per_s_per_endpoint"]), (2, 4, "4/3"))

    def test_oversubscribed_cut_keeps_whole_leaves(self):
        # k = 64 at 3:1: 1024 endpoints need ceil(1024/48) = 22 leaves, 22 x 16 = 352 links x 50 GB/s = 17.6 TB/s.
        out = clos_cut(radix=64, oversubscription=Fraction(3), tiers=(2,), link=50 * 10**9, partition_endpoints=1024,
                       gpus=1024, nic=50 * 10**9, supernodes=[(8, 127 * 10**9)])
        self.assertEqual((out["partition_cuts"][0]["cut_links"], out["partition_cuts"][0]["cut_bytes_per_s"]),
                         (352, "17600000000000"))
        # 8 cards x 50 GB/s / 3 = 400/3 GB/s; 127 GB over it: 127e9 x 3 / 400e9 = 381/400 s.
        row = out["supernode_egress"][0]
        self.assertEqual((row["oversubscribed_egress_bytes_per_s"], row["remote_s_at_oversubscribed"]),
                         ("400000000000/3", "381/400"))

    def test_book_nonblocking(self):
        # The book's k = 64 non-blocking Clos: two tiers 96 switches, 2,048 endpoints, 51.2 TB/s bisection; three
        # tiers 5,120 switches, 65,536 endpoints, 1,638.4 TB/s.
        out = budget_result("clos", "--radix", "64", "--link-rate", "50GB/s", "--partition", "1024")
        t2, t3 = out["tier_rows"]
        self.assertEqual((t2["total_switches"], t2["endpoints"], t2["bisection_bytes_per_s"]), (96, 2048, "51200000000000"))
        self.assertEqual((t3["total_switches"], t3["endpoints"], t3["bisection_bytes_per_s"]),
                         (5120, 65536, "1638400000000000"))

    def test_odd_radix_is_an_error(self):
        status, _, err = run_cli("budget", "clos", "--radix", "63", "--link-rate", "50GB/s", "--partition", "8")
        self.assertEqual(status, 2)
        self.assertIn("even radix", err)


class Rails(unittest.TestCase):
    def test_docstring_case(self):
        # G = 800 B on 4 rails at 100 B/s: shard 200 B, per rail 2 s, one NIC 8 s, 4x; shifted: all 800 B via spine.
        out = rail_pairing(gradient_bytes=800, rails=4, nic_rate=100, startup_s=0, pairing="shifted")
        self.assertEqual((out["shard_bytes"], out["per_rail_s"], out["single_nic_s"], out["rail_parallel_speedup"]),
                         (200, "2", "8", "4"))
        self.assertEqual((out["spine_crossing_bytes"], out["pairs"][3]["server1_rank"]), (800, 0))
        aligned = rail_pairing(gradient_bytes=800, rails=4, nic_rate=100, startup_s=0, pairing="aligned")
        self.assertEqual(aligned["spine_crossing_bytes"], 0)

    def test_book_shifted(self):
        # Qwen3-8B layer-0 gate_proj FP32: 12288 x 4096 x 4 = 201,326,592 B, shard 25,165,824; per rail
        # 25,165,824 / 50e9 + 2 x 833 ns = 6312281/12500000000 s.
        out = budget_result("rail-pairing", "--model", "qwen3-8b", "--nic-bw", "50GB/s", "--startup", "833ns",
                            "--pairing", "shifted")
        self.assertEqual((out["gradient_bytes"], out["spine_crossing_bytes"], out["per_rail_s"]),
                         (201326592, 201326592, "6312281/12500000000"))


class SwitchReduce(unittest.TestCase):
    def test_docstring_case(self):
        # Shard 100 B at 100 B/s: switch 1 s; ring of 2 servers 100 B in 2 rounds, 1 s; of 4: 150 B, 3/2 s.
        self.assertEqual(switch_seconds(shard=100, nic_rate=100, startup_s=0), 1)
        self.assertEqual(ring_seconds(servers=2, shard=100, nic_rate=100, startup_s=0), (100, 2, 1))
        self.assertEqual(ring_seconds(servers=4, shard=100, nic_rate=100, startup_s=0), (150, 6, Fraction(3, 2)))

    def test_book_fp32_nic8(self):
        # Shard 25,165,824 B: switch 25,165,824 / 50e9 + 833 ns = 12603737/25000000000 s; the hierarchical
        # cross-server stage (gradient-ring) 6312281/12500000000 s; at 32 servers the ring moves 62/32 shards.
        out = budget_result("switch-reduce", "--model", "qwen3-8b", "--nic-bw", "50GB/s", "--local-bw", "450GB/s",
                            "--startup", "833ns")
        self.assertEqual((out["switch_s"], out["hierarchical_s"]), ("12603737/25000000000", "6312281/12500000000"))
        self.assertEqual(out["servers_sweep"][-1]["ring_bytes_per_nic"], str(Fraction(62, 32) * 25165824))


if __name__ == "__main__":
    unittest.main()

"""`budget nic` and `budget connections`: a host's packet budget at line rate and its connection
state; every expected value derived by hand in its comment."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.connection_states import connection_states  # noqa: E402
from infracalc.analyses.packet_budget import packet_budget  # noqa: E402


budget = budget_result


class PacketBudget(unittest.TestCase):
    def test_minimum_frames_at_40_gbps(self):
        # 64 B + 20 B overhead = 84 B on the wire; 40e9 / 8 = 5e9 B/s -> 5e9 / 84 = 1,250,000,000 / 21 packets/s;
        # at 10 Mpps a core: 125 / 21 = 5.95 -> 6 cores; at 20 Mpps 125 / 42 -> 3; frames 64 x 5e9 / 84.
        r = budget("nic", "--line-rate", "40Gb/s", "--core-rate", "10M,20M")
        self.assertEqual(r["mean_wire_bytes_exact"], "84")
        self.assertEqual(r["packets_per_s_exact"], "1250000000/21")
        self.assertEqual([c["busy_cores_exact"] for c in r["cores"]], ["125/21", "125/42"])
        self.assertEqual(r["dedicated_cores"], [6, 3])
        self.assertEqual((r["wire_bytes_per_s_exact"], r["frame_bytes_per_s_exact"]), ("5000000000", "80000000000/21"))

    def test_mix_is_by_packet_count(self):
        # Half 64 B (84 on the wire), half 1518 B (1538): mean 811 B, 5e9 / 811 packets/s (not the mean of the two
        # classes' line rates); work 1/2 x 1 + 1/2 x 2 = 3/2; at 1e7 packets/s: 5e9 x 3/2 / 811 / 1e7 = 750/811.
        r = packet_budget(line_bits_per_s=40 * 10**9, core_rates=[10**7],
                          classes=[(64, Fraction(1, 2), Fraction(1)), (1518, Fraction(1, 2), Fraction(2))])
        self.assertEqual((r["mean_wire_bytes_exact"], r["packets_per_s_exact"]), ("811", "5000000000/811"))
        self.assertEqual((r["cores"][0]["busy_cores_exact"], r["dedicated_cores"]), ("750/811", [1]))
        self.assertEqual([c["packets_per_s_exact"] for c in r["classes"]], ["2500000000/811"] * 2)

    def test_encapsulation_utilization_target_and_offload(self):
        # 64 + 50 + 20 = 134 B; 100e9 / 8 x 3/4 = 9.375e9 B/s -> 9.375e9 / 134 packets/s; a quarter of the host
        # work kept at 20 Mpps per core and a 1/2 target: busy 9.375e9 / 134 / 4 / 2e7 = 9375 / 10720,
        # provisioned twice that = 9375 / 5360 = 1.75 -> 2 cores.
        r = packet_budget(line_bits_per_s=100 * 10**9, classes=[(64, Fraction(1), Fraction(1))], core_rates=[2 * 10**7],
                          utilization=Fraction(3, 4), encapsulation_bytes=50, target_utilization=Fraction(1, 2),
                          retained=Fraction(1, 4))
        self.assertEqual(Fraction(r["cores"][0]["busy_cores_exact"]), Fraction(9375, 10720))
        self.assertEqual(Fraction(r["cores"][0]["provisioned_cores_exact"]), Fraction(9375, 5360))
        self.assertEqual(r["dedicated_cores"], [2])

    def test_bad_input(self):
        for argv, text in ((["--frames", "64:1/2"], "sum to exactly 1"), (["--frames", "32"], "at least 64 B"),
                           (["--utilization", "0"], "fraction in (0, 1]")):
            status, _, err = run_cli("budget", "nic", "--line-rate", "40Gb/s", "--core-rate", "10M", *argv)
            self.assertEqual(status, 2)
            self.assertIn(text, err)
        status, _, err = run_cli("budget", "nic", "--line-rate", "40Gb", "--core-rate", "10M")
        self.assertEqual(status, 2)
        self.assertIn("40Gb/s", err)


class ConnectionStates(unittest.TestCase):
    def test_full_mesh(self):
        # 64 x 128 = 8,192 relations; endpoints 64 x 256 = 16,384, bindings 8,192 x 64 = 524,288;
        # one transport per peer: 16,384 + 524,288 + 128 x 1,024 = 671,744; per relation + 8,192 x 1,024 = 8,929,280.
        r = connection_states(threads=64, peers=128, budget_bytes=2**20)
        self.assertEqual((r["active_relations"], r["shared_transports"]), (8192, 128))
        self.assertEqual((r["shared_total_bytes"], r["per_relation_total_bytes"]), (671_744, 8_929_280))
        self.assertEqual((r["shared_fits"], r["per_relation_fits"]), (True, False))
        self.assertEqual(r["largest_shared_group"], 64)

    def test_isolation_classes_split_sharing(self):
        # 8 classes: 128 peers x 8 = 1,024 transports, 16,384 + 524,288 + 1,048,576 = 1,589,248 B;
        # 64 classes (one per thread): 8,192 transports, the per-relation total.
        self.assertEqual(connection_states(threads=64, peers=128, classes=8)["shared_total_bytes"], 1_589_248)
        r = connection_states(threads=64, peers=128, classes=64)
        self.assertEqual((r["shared_transports"], r["shared_total_bytes"]), (8192, 8_929_280))

    def test_hot_peer_from_the_command_line(self):
        # 64 threads to one peer: 64 relations, 1 shared transport: 16,384 + 64 x 64 + 1,024 = 21,504 B.
        r = budget("connections", "--threads", "64", "--peers", "128", "--relations", "0-63:0")
        self.assertEqual((r["active_relations"], r["shared_transports"], r["shared_total_bytes"]), (64, 1, 21_504))
        self.assertEqual((r["active_peers"], r["possible_relations"]), (1, 8192))

    def test_bad_relations(self):
        for rel, text in (("0-64:0", "out of range"), ("0:0,0:0", "twice"), ("0-", "THREADS:PEERS")):
            status, _, err = run_cli("budget", "connections", "--threads", "64", "--peers", "128", "--relations", rel)
            self.assertEqual(status, 2)
            self.assertIn(text, err)


if __name__ == "__main__":
    unittest.main()

"""`budget gradient-ring`: one gradient all-reduced over two servers; expected values derived by hand in the
comments (the book's chapter-7 real-gradient collectives: bojieli/ai-infra-book's gradient-* results, as its
public fork 899ms/ai-infra-book stores them)."""

import json
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402

from infracalc.analyses.gradient_rings import gradient_rings, schedule  # noqa: E402
from infracalc.errors import UserError  # noqa: E402


def tiny(organization, **kw):
    # Two servers of 2 ranks (p = 4), G = 8 elements of 1 byte: chunks of 2 B; NICs 1 B/s, local links 2 B/s.
    args = dict(elements=8, width=1, organization=organization, ranks_per_server=2, nics_per_server=2, nic_rate=1,
                local_rate=2, startup_s=Fraction(1, 10))
    args.update(kw)
    return gradient_rings(**args)


class ByHand(unittest.TestCase):
    def test_flat_contiguous(self):
        # Ring 0 -> 1 -> 2 -> 3 -> 0: 3 + 3 rounds of 4 messages of 2 B, 8 B a round: 48 B = 2 (p - 1) G; the edges
        # 1 -> 2 and 3 -> 0 cross the servers, 4 B a round: 24 B = 4 (p - 1) G / p. Adds: (p - 1) G = 24.
        r = tiny("flat-contiguous")
        self.assertEqual((r["rounds"], r["network_send_bytes"], r["remote_send_bytes"], r["reduction_adds"]),
                         (6, 48, 24, 24))
        # A round: the remote 2 B cross one NIC at 1 B/s -> 2 s (the local links take 1 s); serial 6 x (2 + 1/10).
        self.assertEqual(r["serial_barrier_lower_s_exact"], str(6 * (2 + Fraction(1, 10))))
        # Aggregate: NIC 1 of server 0 (rank 1 sends) carries 6 x 2 B = 12 B at 1 B/s = 12 s.
        self.assertEqual(r["aggregate_lower_s_exact"], "12")
        # Ranks 1 and 3 send between the servers, both through NIC 1 mod 2 = 1: one NIC index in use.
        self.assertEqual((r["first_round_remote_messages"], r["sending_nics_per_server"]), (2, 1))

    def test_hierarchical(self):
        # Local RS (1 round: chunk pairs, 4 B a message), the pair all-reduce (2 rounds, 2 B a message, all remote),
        # local AG (1 round): 4 rounds; sent 2 x 4 x 4 + 2 x 4 x 2 = 48 B = 2 (p - 1) G; remote 2 G = 16 B.
        r = tiny("hierarchical")
        self.assertEqual([st["stage"] for st in r["stages"]],
                         ["local_reduce_scatter", "cross_server_allreduce", "local_all_gather"])
        self.assertEqual((r["rounds"], r["network_send_bytes"], r["remote_send_bytes"]), (4, 48, 16))
        # local rounds: 4 B on a 2 B/s link = 2 s; cross rounds: 2 B on a 1 B/s NIC = 2 s; serial 4 x 2.1 s.
        self.assertEqual(r["serial_barrier_lower_s_exact"], str(4 * (2 + Fraction(1, 10))))

    def test_striped_and_egress(self):
        # One NIC per server (striping over K = 1) and a 1/2 B/s shared egress: the cut is min(1, 1/2) = 1/2 B/s;
        # a flat-contiguous round's two remote messages (one each way) take 2 B / (1/2) = 4 s on the egress.
        r = tiny("flat-contiguous", nics_per_server=1, egress_rate=Fraction(1, 2))
        self.assertEqual(r["serial_barrier_lower_s_exact"], str(6 * (4 + Fraction(1, 10))))
        names = {x["resource"] for x in r["resources"]}
        self.assertTrue({"server0.egress", "server1.ingress", "cut.0->1", "shared_cut.bidirectional"} <= names)

    def test_schedule_owner_mapping(self):
        # After a ring reduce-scatter rank j owns chunk j + 1; the hierarchy pairs the owners of a coarse chunk.
        rounds = schedule("hierarchical", 2)
        self.assertEqual(len(rounds), 4)
        self.assertEqual(sorted((s, t) for s, t, _ in rounds[1][2]), [(0, 2), (1, 3), (2, 0), (3, 1)])

    def test_chunks_must_split(self):
        with self.assertRaises(UserError):
            tiny("flat-contiguous", elements=6)     # 6 elements do not make 4 chunks


class Book(unittest.TestCase):
    def test_qwen3_8b_hierarchical(self):
        # Qwen3-8B gate_proj 12288 x 4096 FP32 = 201,326,592 B a rank, 16 ranks: 14 local rounds of 25,165,824 B at
        # 450 GB/s and 2 cross rounds of 12,582,912 B at 50 GB/s, each + 833 ns: 6091787/4687500000 s (the book's
        # gradient-fp32-hierarchical-nic8); every rank tx/rx carries 377,487,360 B: 8192/9765625 s.
        status, out, err = run_cli("budget", "gradient-ring", "--model", "qwen3-8b", "--organization", "hierarchical",
                                   "--nic-bw", "50GB/s", "--local-bw", "450GB/s", "--startup", "833ns", "--budget",
                                   "3ms", "--format", "json")
        self.assertEqual(status, 0, err)
        r = json.loads(out)["result"]
        self.assertEqual((r["serial_barrier_lower_s_exact"], r["aggregate_lower_s_exact"], r["budget_not_excluded"]),
                         ("6091787/4687500000", "8192/9765625", True))
        self.assertEqual((r["network_send_bytes"], r["remote_send_bytes"]), (6_039_797_760, 402_653_184))


if __name__ == "__main__":
    unittest.main()

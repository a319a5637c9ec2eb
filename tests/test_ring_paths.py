"""`collective --topology ring`: messages of recursive-halving and Swing reduce-scatter rounds on a
bidirectional ring, the directed links they cross and the bytes per link; every expected value
derived by hand in its comment."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402

from infracalc.analyses import ring_paths  # noqa: E402
from infracalc.errors import UserError  # noqa: E402


class Formulas(unittest.TestCase):
    def test_swing_offsets(self):
        # rho(s) = sum_{i<=s} (-2)^i: 1; 1 - 2 = -1; 1 - 2 + 4 = 3; 3 - 8 = -5; -5 + 16 = 11.
        self.assertEqual([ring_paths.rho(s) for s in range(5)], [1, -1, 3, -5, 11])

    def test_peers(self):
        # recursive: 5 XOR 2 = 7; swing round 2 (rho 3): even 4 -> 7, odd 5 -> 2; round 1 (rho -1): 0 -> 15 mod 16.
        self.assertEqual(ring_paths.peer("recursive", 5, 1, 16), 7)
        self.assertEqual(ring_paths.peer("swing", 4, 2, 16), 7)
        self.assertEqual(ring_paths.peer("swing", 5, 2, 16), 2)
        self.assertEqual(ring_paths.peer("swing", 0, 1, 16), 15)

    def test_route_takes_the_short_way(self):
        # 14 -> 1 on 16 nodes: 3 hops clockwise (14->15->0->1) beats 13 anticlockwise.
        self.assertEqual(ring_paths.route(14, 1, 16), [(14, 15), (15, 0), (0, 1)])
        self.assertEqual(ring_paths.route(1, 14, 16), [(1, 0), (0, 15), (15, 14)])
        with self.assertRaises(UserError):      # 0 and 8 are 8 hops apart both ways
            ring_paths.route(0, 8, 16)

    def test_eight_nodes_by_hand(self):
        # n = 8, S = 1024 B, B = 1000 B/s. Recursive round 0: m = 512, peers 1 hop -> 8 x 512 = 4096 link
        # bytes, each link crossed once -> bound 512 / 1000. Round 1: m = 256, peers 2 hops -> 16 x 256 = 4096;
        # ranks 0, 1 (bit 1 clear) both cross 1->2 -> busiest 2 x 256 = 512 B.
        p = ring_paths.pattern_rounds("recursive", 8, 1024, 2, 1000)
        r0, r1 = p["rounds"]
        self.assertEqual((r0["message_bytes"], r0["physical_link_bytes"], r0["peak_link_bytes"]), (512, 4096, 512))
        self.assertEqual((r1["message_bytes"], r1["hops"], r1["physical_link_bytes"], r1["peak_link_messages"]),
                         (256, [2], 4096, 2))
        self.assertAlmostEqual(p["barrier_lower_bound_s"], 0.512 + 0.512, places=15)
        # Aggregate: round 0 puts 512 on 0->1, 2->3, 4->5, 6->7 (even r -> r+1) and on 1->0, 3->2, ...; round 1
        # sends ranks 0, 1, 4, 5 two hops clockwise: 256 on 0->1 and 2->3, 512 on 1->2 and 5->6. Busiest over
        # both rounds: 0->1 with 512 + 256 = 768 B -> 0.768 s, below the barrier sum 1.024 s.
        self.assertAlmostEqual(p["aggregate_lower_bound_s"], 0.768, places=15)
        # Swing round 1 (rho -1): even r -> r - 1, odd r -> r + 1, all 1 hop: 8 x 256 = 2048 link bytes.
        s = ring_paths.pattern_rounds("swing", 8, 1024, 2, 1000)
        self.assertEqual(s["rounds"][1]["physical_link_bytes"], 2048)
        self.assertEqual(s["physical_link_bytes"], 4096 + 2048)

    def test_book_sixteen_nodes(self):
        # bojieli/ai-infra-book collective-paths-book: S = 2 x 1024 x 4096 = 8 MiB (Qwen3-8B hidden, BF16).
        # Recursive: 16 x (1 x 4 + 2 x 2 + 4 x 1) MiB = 192 MiB = 201,326,592; Swing: hops 1, 1, 3:
        # 16 x (4 + 2 + 3) MiB = 144 MiB = 150,994,944; 16 ranks x 3 rounds x 2 patterns = 96 messages.
        rec = ring_paths.record("reduce_scatter", 16, [8 << 20], 3, ("recursive", "swing"), 50e9)
        block = rec["sizes"][0]
        self.assertEqual(block["messages"], 96)
        self.assertEqual([p["physical_link_bytes"] for p in block["patterns"]], [201_326_592, 150_994_944])
        # Swing round 2 (rho 3): clockwise link i->i+1 is crossed by the even senders among i-2, i-1, i: 2 at most.
        self.assertEqual(block["patterns"][1]["rounds"][2]["peak_link_messages"], 2)
        # Recursive round 2: ranks 0..3 all go +4 and cross 3->4: 4 x 1 MiB on it -> 4 MiB / 50 GB/s.
        self.assertAlmostEqual(block["patterns"][0]["rounds"][2]["round_lower_bound_s"], (4 << 20) / 50e9, places=18)


class Command(unittest.TestCase):
    def test_json(self):
        status, out, err = run_cli("collective", "reduce_scatter", "--ranks", "16", "--topology", "ring",
                                   "--rounds", "3", "--bytes", "8192", "--link-bw-ring", "50GB/s",
                                   "--format", "json")
        self.assertEqual(status, 0, err)
        rec = json.loads(out)
        # decode: S = 2 x 1 x 4096 = 8192; recursive 3 x 16 x 4096 = 196,608; Swing 16 x 9 x 1024 = 147,456.
        self.assertEqual([p["physical_link_bytes"] for p in rec["sizes"][0]["patterns"]], [196_608, 147_456])

    def test_errors(self):
        for argv, text in [(("--ranks", "12"), "power-of-two"), (("--ranks", "16", "--rounds", "5"), "exceeds"),
                           (("--ranks", "16"), "two shortest paths"), (("--ranks", "16", "--patterns", "tree"),
                                                                       "unknown pattern")]:
            status, _, err = run_cli("collective", "reduce_scatter", "--topology", "ring", "--link-bw-ring", "1GB/s",
                                     "--bytes", "1MiB", *argv)
            self.assertEqual(status, 2, argv)
            self.assertIn(text, err)
        status, _, err = run_cli("collective", "reduce_scatter", "--ranks", "16", "--topology", "ring")
        self.assertEqual(status, 2)
        self.assertIn("--link-bw-ring", err)


if __name__ == "__main__":
    unittest.main()

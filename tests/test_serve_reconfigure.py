"""`serve --reconfigure`: the TP/EP reconfiguration ledger, checked against hand derivations."""

from fractions import Fraction
import unittest

from support import load_model, run_cli
from infracalc.analyses.serve.reconfigure import Layout, kv_head_range, reconfigure, split

G = [f"g{i}" for i in range(16)]
RATES = {"fabric": 10**9, "sender": 10**8, "receiver": 2 * 10**8}


class Intervals(unittest.TestCase):
    def test_quotient_remainder_split(self):
        # 10 experts over 3 ranks: 4, 3, 3 (the first 10 mod 3 = 1 rank gets one more)
        self.assertEqual([split(10, 3, i) for i in range(3)], [(0, 4), (4, 7), (7, 10)])

    def test_kv_heads_replicate_when_tp_exceeds_them(self):
        # 32 query heads, 8 KV heads (g = 4), TP 16: 2 query heads per rank, ranks 0 and 1 both
        # need KV head 0, ranks 2 and 3 head 1
        self.assertEqual([kv_head_range(32, 8, 16, t) for t in range(4)], [(0, 1), (0, 1), (1, 2), (1, 2)])
        # TP 4: 8 query heads per rank, KV heads [2t, 2t + 2)
        self.assertEqual(kv_head_range(32, 8, 4, 3), (6, 8))


class Qwen3Tp4ToTp8(unittest.TestCase):
    """Qwen3-8B (36 layers, 32 / 8 heads x 128, 8,190,735,360 params, BF16) from tp4 on g0..g3 to
    tp8 on g0..g7, 2 requests x 8192 tokens of cache, 4096 B of auxiliary state."""

    def setUp(self):
        self.r = reconfigure(load_model("qwen3-8b"), Layout(4, 1, G[:4]), Layout(8, 1, G[:8]), batch=2,
                             history=8192, aux_bytes=4096, rates=RATES, capacity={d: 80 * 10**9 for d in G[:8]},
                             extra={d: 2**31 for d in G[:8]}, overhead_s=10, saving_s=Fraction(2, 10000))

    def test_kv(self):
        # one KV head of the cache: K and V, 2 B, 36 layers, 2 requests, 8192 tokens, 128 wide
        head = 2 * 2 * 36 * 2 * 8192 * 128
        # tp8 rank t holds KV head t; tp4 rank s held heads 2s, 2s + 1: only g0's head 0 stays local
        self.assertEqual(self.r["totals"]["kv"], {"local_bytes": head, "network_bytes": 7 * head})

    def test_busiest_sender(self):
        # replicated weights: 2 norms of 4096 and q/k norms of 128 per layer, the final norm: 308,224
        # params; every other weight is split. g1 held quarter 1 of each, the new g2, g3 take its two
        # eighths (and KV heads 2, 3, and aux pieces 2, 3 of 512 B); norms come from g0 (first by name).
        sharded = 2 * (8190735360 - (36 * (2 * 4096 + 2 * 128) + 4096))
        g1 = sharded // 4 + 2 * (2 * 2 * 36 * 2 * 8192 * 128) + 2 * 512
        self.assertEqual(self.r["sent_bytes"]["g1"], g1)
        self.assertEqual(self.r["transfer_lower_bound_s"], Fraction(g1, 10**8))
        self.assertEqual(self.r["transfer_lower_bound_s"], Fraction(18356228, 390625))   # the book's figure

    def test_peak_and_payback(self):
        old = 2 * (8190735360 - 308224) // 4 + 2 * 308224 + 2 * 301989888 + 1024   # a tp4 rank's share
        card = self.r["devices"][0]
        self.assertEqual((card["old_bytes"], card["peak_bytes"]), (old, old + card["new_bytes"] + 2**31))
        self.assertTrue(self.r["all_fit"])
        # 10 s / 0.0002 s = 50,000 steps to break even, strictly better at 50,001
        self.assertEqual((self.r["payback"]["break_even_steps"], self.r["payback"]["strictly_better_steps"]),
                         (50000, 50001))

    def test_replay_moves_no_cache_and_same_layout_moves_nothing(self):
        arch = load_model("qwen3-8b")
        r = reconfigure(arch, Layout(4, 1, G[:4]), Layout(8, 1, G[:8]), batch=2, history=8192, replay=True)
        self.assertEqual(r["totals"]["kv"], {"local_bytes": 0, "network_bytes": 0})
        same = reconfigure(arch, Layout(4, 1, G[:4]), Layout(4, 1, G[:4]), batch=2, history=8192,
                           runtime_s=Fraction(9))
        self.assertEqual((same["network_bytes"], same["transfer_lower_bound_s"], same["declared_serial_s"]),
                         (0, 0, 9))


class Experts(unittest.TestCase):
    def test_ep8_to_ep16_halves_each_ranks_experts(self):
        # Qwen3-235B-A22B: 128 experts of 3 x 4096 x 1536 per layer, 94 layers. ep8 rank e held
        # experts [16e, 16e + 16); ep16 rank e holds [8e, 8e + 8), held before by ep8 rank e // 2:
        # only rank 0 keeps its 8 experts locally, the other 15 ranks' 120 experts move. The rest
        # (attention, norms, router, embeddings) replicates over EP: local on g0..g7, moved to g8..g15.
        arch = load_model("qwen3-235b-a22b")
        r = reconfigure(arch, Layout(1, 8, G[:8]), Layout(1, 16, G))
        expert = 2 * 3 * 4096 * 1536 * 94
        dense = 2 * arch.params - 128 * expert
        self.assertEqual(r["totals"]["weight"]["network_bytes"], 120 * expert + 8 * dense)
        self.assertEqual(r["totals"]["weight"]["local_bytes"], 8 * expert + 8 * dense)
        self.assertEqual(r["totals"]["weight"]["network_bytes"], 553761562624)   # the book's figure


class Command(unittest.TestCase):
    def test_refusals(self):
        code, _, err = run_cli("serve", "--model", "qwen3-8b", "--reconfigure", "tp3", "tp8")
        self.assertEqual(code, 2)
        self.assertIn("TP 3 does not divide", err)
        code, _, err = run_cli("serve", "--model", "qwen3-8b", "--reconfigure", "tp4", "tp1ep2")
        self.assertEqual(code, 2)
        self.assertIn("EP needs routed experts", err)
        code, _, err = run_cli("serve", "--model", "qwen3-8b", "--reconfigure", "tp4", "x8")
        self.assertEqual(code, 2)


if __name__ == "__main__":
    unittest.main()

"""`budget server-scope`: one server at TP C against two at TP C/2 x PP 2; values by hand."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402,F401  (puts calculations/ on sys.path)

from infracalc.analyses.server_scope import crossover, decode_collectives, path_seconds  # noqa: E402


class Path(unittest.TestCase):
    def test_toy_graph(self):
        # TP 2 x PP 2, one layer a stage, hidden 1, vocabulary 2, one request: m = 2 bytes; each ring all-reduce
        # 2 startups and 2 x 1 x 2 / 2 = 2 bytes; the hop carries 2 copies (4 B); logits 1 x 4 x 2 / 2 = 4 B;
        # the token returns (4 B) and one broadcast round sends 4 B.
        ops = decode_collectives(layers_per_stage=[1, 1], tp=2, pp=2, hidden=1, vocab=2, batch=1)
        self.assertEqual([(o[0][:8], o[3], o[4], o[5]) for o in ops], [
            ("vocabula", False, 2, 2), ("attentio", False, 2, 2), ("ffn_outp", False, 2, 2),
            ("pipeline", True, 1, 4), ("attentio", False, 2, 2), ("ffn_outp", False, 2, 2),
            ("last_pos", False, 1, 4), ("selected", True, 1, 4), ("selected", False, 1, 4)])
        # local: 5 rings x (2 + 2) + logits (1 + 4) + broadcast (1 + 4) = 30 s at startup 1 s and 1 B/s;
        # remote at startup 1 s and 2 B/s: (1 + 4/2) + (1 + 4/2) = 6 s over 8 B and 2 startups
        self.assertEqual(path_seconds(ops, 1, 1, 1, 2), (30, 8, 2, 6))
        # against a one-server path of 40 s: bandwidth above 8 / (40 - 30 - 2) = 1; startup below (40 - 30 - 4) / 2
        self.assertEqual(crossover(Fraction(40), Fraction(30), 8, 2, 1, 2), (1, 3))
        self.assertEqual(crossover(Fraction(31), Fraction(30), 8, 2, 1, 2), (None, None))


class Qwen32(unittest.TestCase):
    def run_kind(self, *extra):
        import json

        status, out, err = support.run_cli(*["budget", "server-scope", "--model", "qwen3-32b", "--history", "8192", "--decode-steps", "32",
                  "--capacity-bytes", "10608683008", "--workspace-bytes", "2GiB", "--local-bw", "50GB",
                  "--local-startup", "2us", "--remote-bw", "25GB", "--remote-startup", "5us", *extra,
                  "--format", "json"])
        self.assertEqual((status, err), (0, ""))
        return json.loads(out)["result"]

    def test_book_default(self):
        r = self.run_kind()
        one, two = r["candidates"]
        # TP 8, hidden 5120: 129 rings x (14 x 2 us + 17,920 B / 50 GB/s) + logits (7 x 2 us + 531,776 B / 50 GB/s)
        # + broadcast (3 x 2 us + 12 B / 50 GB/s) = 3,658.2336 + 24.63552 + 6.00024 us
        self.assertEqual(Fraction(one["per_forward_s_exact"]), Fraction(46110867, 12500000000))
        # TP 4 x PP 2: 129 x 12.3072 + 15.11616 + 4.00016 local, (5 + 1.6384) + (5 + 0.00016) remote = 1,618.38368 us
        self.assertEqual(Fraction(two["per_forward_s_exact"]), Fraction(161838368, 10**11))
        self.assertEqual(Fraction(two["all_forwards_s_exact"]), 32 * Fraction(161838368, 10**11))
        # two servers cheaper above 40,964 B / (3,688.86936 - 1,606.74512 - 10 us)
        self.assertEqual(Fraction(r["two_servers_cheaper_above_remote_bw_exact"]),
                         Fraction(40964) / Fraction(207212424, 10**11))
        self.assertEqual(r["communication_preference"], "two_servers_tp4_pp2")
        # KV of 8 KV heads / 8 x 128 x 64 layers x 2 (K, V) x 8,224 positions x 2 B = 269,484,032 on every card
        self.assertEqual({c["kv_bytes"] for c in r["cards"]}, {2 * 128 * 64 * 2 * 8224})
        self.assertEqual((one["max_card_resident_bytes"], one["all_cards_fit"]), (10608683008, True))

    def test_capacity_and_blocked_startup(self):
        r = self.run_kind("--capacity-bytes", "10608011264")
        self.assertEqual([c["all_cards_fit"] for c in r["candidates"]], [False, True])
        r = self.run_kind("--remote-startup", "10ms")
        self.assertEqual((r["communication_preference"], r["two_servers_cheaper_above_remote_bw_exact"]),
                         ("single_server_tp8", None))


if __name__ == "__main__":
    unittest.main()

"""`budget energy`: the energy ledger (sourced pJ per byte and per FLOP on `forward`'s totals), board
power x time and cost at a declared price; every expected value derived by hand in its comment."""

import json
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses import energy  # noqa: E402

TOTALS = {"weight_bytes_read": 1000, "kv_bytes_read": 200, "act_bytes_read": 30, "bytes_written": 4,
          "matrix_flops": 8000, "vector_flops": 50}


class Figures(unittest.TestCase):
    def test_conversions(self):
        # HBM2 3.97 pJ/bit x 8 = 31.76 pJ/B; 5 and 50 pJ per 32-bit word / 4 = 1.25, 12.5 pJ/B;
        # NVLink-C2C 1.3 pJ/bit x 8 = 10.4 pJ/B; HFMA 1.5 pJ / 2 FLOPs = 0.75 pJ/FLOP.
        levels = {lv: pj for lv, pj, _, _ in energy.FIGURES}
        self.assertEqual(levels["hbm"], Fraction(3176, 100))
        self.assertEqual(levels["shared_l1"], Fraction(125, 100))
        self.assertEqual(levels["l2"], Fraction(125, 10))
        self.assertEqual(levels["nvlink"], Fraction(104, 10))
        self.assertIsNone(levels["register"])
        self.assertIsNone(levels["nic"])
        self.assertEqual(energy.PJ_PER_MATRIX_FLOP, Fraction(75, 100))
        self.assertTrue(all(src for _, _, _, src in energy.FIGURES))


class References(unittest.TestCase):
    def test_reference_conversions_and_split(self):
        # 640 pJ/word / 4 = 160 pJ/B; 5 pJ/bit x 8 = 40; 3.92 x 8 = 31.36; 14.0 x 8 = 112; a 48 mm round
        # trip at 100 fJ/bit-mm = 4.8 pJ/bit = 38.4 pJ/B (the book's file prints 384: a factor 10 off)
        refs = {lv: pj for lv, pj, _, _ in energy.REFERENCES}
        self.assertEqual(refs, {"dram_lpddr_45nm": 160, "dram_access_dally_aha": 40,
                                "hbm2_including_ecc": Fraction(3136, 100), "gddr5": 112,
                                "on_die_wire_48mm_round_trip": Fraction(384, 10)})
        # per level the weights and the KV apart: 1000 B x 160 pJ = 1.6e-7 J, 200 B x 160 pJ = 3.2e-8 J;
        # weight fraction 1000 x 31.76 / 44,112 pJ
        r = energy.ledger(TOTALS, passes_tokens=4, requests=2)
        lpddr = [x for x in r["reference_levels"] if x["level"] == "dram_lpddr_45nm"][0]
        self.assertAlmostEqual(lpddr["weight_joules"], 1.6e-7, delta=1e-20)
        self.assertAlmostEqual(lpddr["kv_joules"], 3.2e-8, delta=1e-20)
        self.assertAlmostEqual(r["weight_fraction_of_weights_kv_matrix"], 31760 / 44112, delta=1e-15)


class Ledger(unittest.TestCase):
    def test_by_hand(self):
        # HBM bytes 1000 + 200 + 30 + 4 = 1234 x 31.76 pJ = 39,191.84 pJ; matrix 8000 x 0.75 = 6000 pJ;
        # known total 45,191.84 pJ; vector FLOPs unknown. Book split: (1200 x 31.76 + 6000) pJ = 44,112 pJ.
        r = energy.ledger(TOTALS, passes_tokens=4, requests=2)
        self.assertAlmostEqual(r["known_joules"], 45191.84e-12, delta=1e-22)
        self.assertAlmostEqual(r["weights_kv_matrix_joules"], 44112e-12, delta=1e-22)
        self.assertAlmostEqual(r["known_joules_per_token"], 45191.84e-12 / 4, delta=1e-22)
        self.assertAlmostEqual(r["known_joules_per_request"], 45191.84e-12 / 2, delta=1e-22)
        self.assertEqual(r["unknown_terms"], ["vector FLOPs"])
        ladder = {row["level"]: row["weight_plus_kv_joules"] for row in r["levels"]}
        self.assertAlmostEqual(ladder["l2"], 1200 * 12.5e-12, delta=1e-22)  # 15,000 pJ
        self.assertIsNone(ladder["nic"])

    def test_board_and_cost(self):
        # 700 W x 0.01 s = 7 J, / 1000 tokens = 7 mJ; a 0.5 J ledger over 0.01 s averages 50 W; 8 devices x 450 s = 1 device-hour at $2 = $2,
        # x 10^6 / 4 x 10^6 tokens = $0.50 per million tokens. A device with no TDP: unknown.
        (b,) = energy.board(700, [("bound", 0.01)], 1000, 0.5)
        self.assertAlmostEqual(b["joules"], 7.0)
        self.assertAlmostEqual(b["ledger_watts"], 50.0)
        self.assertAlmostEqual(b["joules_per_token"], 0.007)
        self.assertIsNone(energy.board(0, [("bound", 0.01)], 1000, 0.5)[0]["joules"])
        (c,) = energy.cost(2.0, 8, [("bound", 450.0), ("none", None)], 4 * 10**6)
        self.assertAlmostEqual(c["device_hours"], 1.0)
        self.assertAlmostEqual(c["dollars"], 2.0)
        self.assertAlmostEqual(c["dollars_per_million_tokens"], 0.5)


class Command(unittest.TestCase):
    def test_book_decode_step(self):
        # Qwen3-8B, one request, 8192 history, new K/V on chip: weights 15,136,819,200 B x 31.76 pJ =
        # 0.480745377792 J; prior KV 1,207,959,552 B x 31.76 pJ = 0.03836479537152 J; matrix
        # 19,968,622,592 FLOPs x 0.75 pJ = 0.014976466944 J; sum 0.53408664010752 J (the book's split).
        status, out, err = run_cli("budget", "energy", "--model", "qwen3-8b", "--history", "8192", "--new-kv",
                                   "on-chip", "--price-per-device-hour", "3600", "--format", "json")
        self.assertEqual(status, 0, err)
        r = json.loads(out)["result"]
        terms = {t["term"]: t for t in r["terms"]}
        self.assertAlmostEqual(terms["weight reads"]["joules"], 0.480745377792, delta=1e-15)
        self.assertAlmostEqual(terms["KV reads"]["joules"], 0.03836479537152, delta=1e-15)
        self.assertAlmostEqual(terms["matrix FLOPs"]["joules"], 0.014976466944, delta=1e-15)
        self.assertAlmostEqual(r["weights_kv_matrix_joules_per_token"], 0.53408664010752, delta=1e-15)
        # $3600 per device-hour = $1 per device-second: the cost is the time in seconds; per Mtok x 10^6
        bound = r["board"][0]
        self.assertEqual(bound["time"], "ideal lower bound")
        self.assertAlmostEqual(r["cost"][0]["dollars"], bound["seconds"], delta=1e-15)
        self.assertAlmostEqual(bound["joules"], 700 * bound["seconds"], delta=1e-12)

    def test_training_cost(self):
        # 6 x 7e10 x 1.5e13 = 6.3e24 FLOPs at 989.4e12 x 2/5 = 3.9576e14 FLOP/s: 6.3e24 / 3.9576e14 s
        # = 1.5918738e10 s = 4,421,871.8 device-hours (6.3e24 / 3.9576e14 / 3600 = 6.3e10 / 14247.36);
        # at $2: x 2, per million tokens x 10^6 / 1.5e13.
        r = json.loads(run_cli("budget", "training", "--params", "70B", "--train-tokens", "15T", "--efficiency",
                               "2/5", "--days", "90", "--cards", "16384", "--matrix-peak", "bf16=989.4T",
                               "--price-per-device-hour", "2", "--format", "json")[1])
        (c,) = r["result"]["cost"]
        hours = 6.3e10 / 14247.36
        self.assertAlmostEqual(c["device_hours"], hours, delta=1e-6)
        self.assertAlmostEqual(c["dollars"], 2 * hours, delta=1e-6)
        self.assertAlmostEqual(c["dollars_per_million_tokens"], 2 * hours / 1.5e7, delta=1e-12)
        self.assertIn("No price is bundled", r["conventions"][-1])

    def test_does_not_fit_is_said(self):
        status, out, err = run_cli("budget", "energy", "--model", "deepseek-v3", "--device", "h100-sxm")
        self.assertEqual(status, 0, err)
        self.assertIn("does not fit on one h100-sxm", out.split("\n\n")[1])

    def test_bad_price(self):
        status, _, err = run_cli("budget", "energy", "--model", "qwen3-8b", "--price-per-device-hour", "-1")
        self.assertEqual(status, 2)
        self.assertIn("positive price", err)


if __name__ == "__main__":
    unittest.main()

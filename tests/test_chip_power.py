"""`budget chip-power` (analyses/chip_power.py): voltage, density, rack and bus arithmetic; every
expected value derived by hand (the book's energy-ledger-book file, chapter 4, beside it)."""

import json
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402

from infracalc.analyses import chip_power  # noqa: E402


class ByHand(unittest.TestCase):
    def test_voltage_and_density(self):
        # (0.55 / 0.85)^2 = (11/17)^2 = 121/289 = 0.41868512110726...; 0.75 / 0.60 = 5/4
        v = chip_power.voltage(Fraction("0.85"), Fraction("0.55"))
        self.assertEqual((v["dynamic_power_ratio"], v["voltage_before"]), ("121/289", "17/20"))
        self.assertEqual(v["reduction_fraction"], float(Fraction(168, 289)))
        self.assertEqual(chip_power.density(Fraction("0.75"), Fraction("0.60"))["density_ratio"], "5/4")

    def test_rack(self):
        # floor((120 - 12) / 1.2) = 90; 64 cards 12 + 76.8 = 88.8 kW, 96 cards 127.2 kW > 120;
        # a 40 kW limit: floor(28 / 1.2) = 23 cards; a limit below the fixed power: 0 cards
        r = chip_power.rack(Fraction(120), Fraction(12), Fraction("1.2"), cards=(64, 96), cooling=Fraction(40))
        self.assertEqual((r["max_cards"], r["max_cards_under_cooling"]), (90, 23))
        self.assertEqual([(x["power_kw"], x["within_budget"], x["within_cooling"]) for x in r["rows"]],
                         [("444/5", True, False), ("636/5", False, False)])
        self.assertEqual(chip_power.rack(Fraction(10), Fraction(12), Fraction(1))["max_cards"], 0)

    def test_bus(self):
        # 4 channels x 16 bits x 10.7e9 / 8 = 85.6e9 B/s; 15,136,819,200 B / 85.6e9 = 0.176832 s
        b = chip_power.bus(4, 16, Fraction("10.7e9"), 15136819200)
        self.assertEqual((b["channel_bytes_per_s"], b["bus_bytes_per_s"]), ("21400000000", "85600000000"))
        self.assertEqual(b["payload_read_s"], 0.176832)

    def test_command(self):
        code, out, err = run_cli("budget", "chip-power", "--rack", "120,12,1.2", "--bus", "4,16", "--pin-rate",
                                 "10.7Gb/s", "--format", "json")
        self.assertEqual(code, 0, err)
        r = json.loads(out)["result"]
        self.assertEqual((r["rack"]["max_cards"], r["bus"]["bus_bytes_per_s"]), (90, "85600000000"))
        self.assertNotIn("voltage", r)
        for bad in ([], ["--cooling", "40"], ["--bus", "4,16"], ["--voltage", "0.85"], ["--bus", "4", "--pin-rate", "1Gb/s"]):
            code, _, err = run_cli("budget", "chip-power", *bad)
            self.assertEqual(code, 2, bad)
            self.assertEqual(len(err.strip().splitlines()), 1, err)


if __name__ == "__main__":
    unittest.main()

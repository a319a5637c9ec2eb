"""`budget history` (analyses/history.py): the computed columns of the public training catalogue,
each expected value derived by hand from the published figures in its comment."""

import json
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402

from infracalc.analyses import history  # noqa: E402


def by_id(**kw):
    return {r["model"]: r for r in history.history(**kw)["catalogue"]}


class Catalogue(unittest.TestCase):
    def test_proxy_work_and_ratio(self):
        # Llama 1 7B: 6 x 6.7e9 x 1e12 = 4.02e22; D/N = 1e12 / 6.7e9 = 10000/67.
        # DeepSeek-V3 (37B activated, 14.8T): 6 x 37e9 x 14.8e12 = 3.2856e24, D/N = 400.
        rows = by_id()
        self.assertEqual(rows["llama1-7b"]["proxy_6nd_flops"], 40_200_000_000_000_000_000_000)
        self.assertEqual(rows["llama1-7b"]["tokens_per_param"], "10000/67")
        self.assertEqual(rows["deepseek-v3-pretraining"]["proxy_6nd_flops"], 3_285_600 * 10**18)
        self.assertEqual(rows["deepseek-v3-pretraining"]["tokens_per_param"], "400")
        self.assertEqual(rows["llama31-405b"]["tokens_per_param"], "1040/27")   # 15.6e12 / 405e9

    def test_days_only_with_a_device_count(self):
        # Llama 1 65B: 1,022,362 h / 2048 / 24 = 511181/24576 = 20.800008... days;
        # Llama 3.1 405B: 30,840,000 / 16384 / 24 = 160625/2048 = 78.43 (a lower bound: the maximum);
        # DeepSeek-V3: 2,664,000 / 2048 / 24 = 13875/256; no count published -> None.
        rows = by_id()
        self.assertEqual(rows["llama1-65b"]["days"], "511181/24576")
        self.assertEqual(rows["llama31-405b"]["days"], "160625/2048")
        self.assertEqual(rows["llama31-405b"]["device_role"], "reported_maximum")
        self.assertEqual(rows["deepseek-v3-pretraining"]["days"], "13875/256")
        self.assertIsNone(rows["llama2-70b"]["days"])

    def test_unknown_stays_unknown(self):
        r = by_id()["qwen35-397b"]
        self.assertIsNone(r["tokens"])
        self.assertIsNone(r["proxy_6nd_flops"])
        self.assertIsNone(r["gpu_hours"])
        self.assertTrue(all(m.source for m in history.CATALOGUE))

    def test_stage_hours_add_up(self):
        # DeepSeek-V3: 2,664,000 + 119,000 + 5,000 = 2,788,000, the reported total.
        s = history.history()["stage_hours"][0]
        self.assertEqual(s["summed"], 2_788_000)
        self.assertTrue(s["sum_matches_reported"])

    def test_command(self):
        code, out, _ = run_cli("budget", "history", "--model", "llama2-7b", "--format", "json")
        self.assertEqual(code, 0)
        r = json.loads(out)["result"]
        self.assertEqual(r["models"], 1)
        self.assertEqual(r["catalogue"][0]["proxy_6nd_flops"], 84 * 10**21)   # 6 x 7e9 x 2e12
        code, _, err = run_cli("budget", "history", "--model", "llama3-405b")
        self.assertEqual(code, 2)
        self.assertIn("llama31-405b", err)


class DeclaredOperations(unittest.TestCase):
    """The book's training-history-growth, -unknown-growth, -count-range and -declared-cost
    (bojieli/ai-infra-book:calculations/results/training-history-*.md), by hand."""

    def test_growth(self):
        # Llama 1 7B -> Llama 2 7B: N 7e9 / 6.7e9 = 70/67, D 2e12 / 1e12 = 2, 6ND 70/67 x 2 = 140/67;
        # Llama 2 7B -> Qwen3 8B proxy: 8/7, 36e12 / 2e12 = 18, 8/7 x 18 = 144/7.
        self.assertEqual(history.growth("llama1-7b", "llama2-7b"),
                         {"baseline": "llama1-7b", "target": "llama2-7b", "proxy_params_growth": "70/67",
                          "tokens_growth": "2", "proxy_6nd_growth": "140/67"})
        g = history.growth("llama2-7b", "qwen3-8b-proxy")
        self.assertEqual((g["proxy_params_growth"], g["tokens_growth"], g["proxy_6nd_growth"]), ("8/7", "18", "144/7"))
        # Qwen3.5 has neither N nor D published: every ratio unknown, not guessed
        g = history.growth("qwen3-8b-proxy", "qwen35-397b")
        self.assertEqual((g["proxy_params_growth"], g["tokens_growth"], g["proxy_6nd_growth"]), (None, None, None))

    def test_count_range(self):
        # Llama 2 70B: 1,720,320 GPU-hours / (4,096 x 24) = 17.5 = 35/2 days; / (1,024 x 24) = 70 days
        r = history.count_range("llama2-70b", 1024, 4096)
        self.assertEqual((r["days_at_max_devices"], r["days_at_min_devices"]), ("35/2", "70"))
        r = history.count_range("qwen3-8b-proxy", 1024, 4096)   # no GPU-hours published
        self.assertEqual((r["days_at_max_devices"], r["days_at_min_devices"]), (None, None))

    def test_lifecycle(self):
        # DeepSeek-V3 pretraining: 2,664,000 h x 2 = 5,328,000; 10^6 requests x 1/100 = 10,000;
        # scoped 5,328,000 + 10,000 + 0 = 5,338,000 (the book's teaching units)
        r = history.lifecycle("deepseek-v3-pretraining", Fraction(2), 10**6, Fraction(1, 100), Fraction(0))
        self.assertEqual((r["training_cost"], r["service_cost"], r["scoped_cost"]), ("5328000", "10000", "5338000"))
        r = history.lifecycle("qwen3-8b-proxy", Fraction(2), 10**6, Fraction(1, 100), Fraction(0))
        self.assertEqual((r["training_cost"], r["service_cost"], r["scoped_cost"]), (None, "10000", None))
        # an undeclared other cost leaves the scoped total unknown (0 would exclude it explicitly)
        r = history.lifecycle("deepseek-v3-pretraining", Fraction(2), 10**6, Fraction(1, 100))
        self.assertEqual((r["training_cost"], r["scoped_cost"]), ("5328000", None))

    def test_command(self):
        code, out, _ = run_cli("budget", "history", "--count-range", "llama2-70b:1024:4096", "--lifecycle",
                               "deepseek-v3-pretraining", "--gpu-hour-price", "2", "--service-usage", "1000000",
                               "--service-price", "1/100", "--other-cost", "0", "--format", "json")
        self.assertEqual(code, 0)
        r = json.loads(out)["result"]
        self.assertEqual(r["count_ranges"][0]["days_at_max_devices"], "35/2")
        self.assertEqual(r["lifecycle"][0]["scoped_cost"], "5338000")
        self.assertNotIn("comparisons", r)
        for bad in (["--lifecycle", "deepseek-v3-pretraining"], ["--other-cost", "0"],
                    ["--count-range", "llama2-70b:4096:1024"], ["--compare", "llama2-7b"]):
            code, _, err = run_cli("budget", "history", *bad)
            self.assertEqual(code, 2, bad)
            self.assertEqual(len(err.strip().splitlines()), 1, err)


if __name__ == "__main__":
    unittest.main()

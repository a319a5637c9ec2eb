"""`budget tile-order` (analyses/tile_order.py): two passes' tile work at declared rates, each
expected value derived by hand or taken from the book's file named in its comment."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402

from infracalc.analyses.tile_order import service, tile_order  # noqa: E402

BOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "calculations", "results", "book")


def totals(valid, rect, padded):
    return {"valid_matrix_flops": valid, "rectangular_matrix_flops": rect, "padded_matrix_flops": padded}


class WorkedCase(unittest.TestCase):
    def test_docstring_case(self):
        # padded 200 at rate 100, padded 100 at rate 40 (valid 150 and 90, rectangular 160 and 95):
        # services 200/100 = 2 s and 100/40 = 2.5 s; effective 150/2 = 75 and 90/2.5 = 36 FLOP/s;
        # causal extra 10 and 5, tile extra 40 and 5; padded ratio 1/2 > rate ratio 2/5: not faster
        a, b = service("a", 0, totals(150, 160, 200), 100), service("b", 0, totals(90, 95, 100), 40)
        self.assertEqual((a["conditional_matrix_service_s"], b["conditional_matrix_service_s"]), (2.0, 2.5))
        self.assertEqual((a["effective_valid_flops_per_s"], b["effective_valid_flops_per_s"]), (75.0, 36.0))
        self.assertEqual((a["causal_extra_flops"], a["tile_extra_flops"], b["causal_extra_flops"],
                          b["tile_extra_flops"]), (10, 40, 5, 5))
        self.assertEqual((a["valid_fraction_of_padded"], a["padded_over_valid"]), ("3/4", "4/3"))
        r = tile_order(a, b)
        self.assertEqual((r["second_over_first_valid"], r["second_over_first_padded"], r["second_over_first_rate"]),
                         ("3/5", "1/2", "2/5"))
        self.assertFalse(r["second_faster"])
        # at rate 60 the ratio 3/5 exceeds 1/2: the second finishes first (service 100/60 < 2)
        self.assertTrue(tile_order(a, service("b", 0, totals(90, 95, 100), 60))["second_faster"])
        # equal ratios: neither is faster
        self.assertFalse(tile_order(a, service("b", 0, totals(90, 95, 100), 50))["second_faster"])


class BookFiles(unittest.TestCase):
    def run_order(self, *extra):
        code, out, err = run_cli("budget", "tile-order", "--model", os.path.join(BOOK, "configs",
                                 "qwen3-8b-deeper-same-width.json"), "--model",
                                 os.path.join(BOOK, "configs", "qwen3-8b-shallower-wider.json"), *extra, "--format", "json")
        self.assertEqual(code, 0, err)
        return json.loads(out)["result"]

    def test_custom_rate(self):
        # bojieli/ai-infra-book:calculations/results/architecture-tile-custom-rate.json (tile_m 96,
        # tile_n 160, tile_k 80; 100T and 70T): padded 2,875,175,731,200 and 2,746,535,116,800, service
        # 0.028751757312 and 0.03923621595428571 s, effective 62373721556265.195, ratios 52557575/54728824,
        # 139696/146239, 7/10, not faster
        r = self.run_order("--tokens", "129", "--tile", "96x80x160", "--rate", "100T", "--rate", "70T")
        deep, shallow = r["passes"]
        self.assertEqual((deep["padded_matrix_flops"], shallow["padded_matrix_flops"]), (2875175731200, 2746535116800))
        self.assertEqual((deep["conditional_matrix_service_s"], shallow["conditional_matrix_service_s"]),
                         (0.028751757312, 0.03923621595428571))
        self.assertEqual(deep["effective_valid_flops_per_s"], 62373721556265.195)
        self.assertEqual((r["second_over_first_valid"], r["second_over_first_padded"], r["second_over_first_rate"],
                          r["second_faster"]), ("52557575/54728824", "139696/146239", "7/10", False))

    def test_decode8k(self):
        # bojieli/ai-infra-book:calculations/research/architecture-tile-work/scenario-summary.json,
        # architecture-tile-decode8k: valid 21,529,100,288, padded 1,382,643,924,992, no causal extra
        # (one query sees every key), fraction 82127/5274368; padded ratio 72235/82412
        r = self.run_order("--tokens", "1", "--history", "8192", "--tile", "64x64x128")
        deep = r["passes"][0]
        self.assertEqual((deep["valid_matrix_flops"], deep["padded_matrix_flops"], deep["causal_extra_flops"],
                          deep["valid_fraction_of_padded"]), (21529100288, 1382643924992, 0, "82127/5274368"))
        self.assertEqual((r["second_over_first_padded"], r["second_faster"]), ("72235/82412", True))

    def test_errors(self):
        for args in (["--model", "qwen3-8b", "--tokens", "1", "--tile", "64x64x128"],
                     ["--model", "qwen3-8b", "--model", "qwen3-8b", "--tokens", "1", "--tile", "64x64x128",
                      "--rate", "1T", "--rate", "2T", "--rate", "3T"]):
            code, _, err = run_cli("budget", "tile-order", *args)
            self.assertEqual(code, 2, err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)


if __name__ == "__main__":
    unittest.main()

"""`budget routing`: priced services with a prefix cache, cost per quality success and the crossover;
expected values derived by hand in the comments, and the book's earlier price set (its stored
`routing-cost-*` files at A = 1/0.1/4, B = 2/0.2/8 $ per million tokens) as a published check."""

import json
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.routing_cost import minimum_hit  # noqa: E402

F = Fraction


def routing(a_out, b_out, hit, deadline):
    a = f"A,input=1,cache=1/10,output={a_out},reasoning=1800,visible=200,quality=4/5,hit=1,hit-time=10s,miss-time=10s"
    b = (f"B,input=2,cache=1/5,output={b_out},reasoning=100,visible=200,quality=49/50,hit={hit},hit-time=4s,"
         f"miss-time=12s")
    status, out, err = run_cli("budget", "routing", "--candidate", a, "--candidate", b, "--fresh-tokens", "1000",
                               "--prefix-tokens", "19000", "--deadline", deadline, "--tasks", "1000", "--format", "json")
    assert status == 0, err
    return json.loads(out)["result"]


class Costs(unittest.TestCase):
    def test_attempt_costs_and_crossover(self):
        # A (always cached): (1000 x 1 + 19000 x 1/10 + 2000 x 5) / 1e6 = 0.0129 $, / 0.8 = 129/8000 per success.
        # B: hit (1000 x 2 + 19000 x 1/5 + 300 x 10) / 1e6 = 0.0088, miss (20000 x 2 + 3000) / 1e6 = 0.043.
        # Equal cost per success: (0.043 - 0.0342 f) / 0.98 = 129/8000 -> f = (0.043 - 0.0158025) / 0.0342
        # = 10879/13680.
        r = routing(5, 10, "1", "6s")
        a, b = r["candidates"]
        self.assertEqual((a["expected_attempt_cost_exact"], a["cost_per_quality_success_exact"]), ("129/10000", "129/8000"))
        self.assertEqual((b["hit_attempt_cost_exact"], b["miss_attempt_cost_exact"]), ("11/1250", "43/1000"))
        self.assertEqual(r["comparisons"][0]["cost_crossover_hit_fraction_exact"], "10879/13680")

    def test_joint_success_by_deadline(self):
        # Deadline 6 s: B is on time only on a hit (4 s); at f = 45/49 joint = 49/50 x 45/49 = 9/10, meeting the target
        # exactly; A (10 s) never: 0 joint successes and no cost per joint success.
        r = routing(5, 10, "45/49", "6s")
        a, b = r["candidates"]
        self.assertEqual((b["joint_fraction_exact"], b["joint_successes_exact"]), ("9/10", "900"))
        self.assertEqual((a["joint_successes_exact"], a["cost_per_joint_success_exact"]), ("0", None))
        self.assertTrue(r["comparisons"][0]["meets_joint_target"])

    def test_minimum_hit_rule(self):
        # q = 49/50, target 9/10: on time only on a hit -> 45/49; on time either way -> 0; never -> none;
        # only on a miss (slow cache) -> 0 (q >= target at f = 0).
        c = {"quality": F(49, 50), "hit_s": F(4), "miss_s": F(12)}
        self.assertEqual(minimum_hit(c, F(6), F(9, 10)), F(45, 49))
        self.assertEqual(minimum_hit(c, F(12), F(9, 10)), 0)
        self.assertIsNone(minimum_hit(c, F(3), F(9, 10)))
        self.assertEqual(minimum_hit({"quality": F(49, 50), "hit_s": F(12), "miss_s": F(4)}, F(6), F(9, 10)), 0)


class EarlierPrices(unittest.TestCase):
    """The book's stored files of the earlier price set (A output 4, B output 8 $ per million tokens)."""

    def test_files(self):
        for hit, deadline, b_row, least, cheaper, meets in (
                ("1", "6s", ("41/5", "41/4900", "980", "41/4900"), "45/49", True, True),                  # -book
                ("1/2", "6s", ("253/10", "253/9800", "490", "253/4900"), "45/49", False, False),          # -half
                ("1291/1520", "6s", ("5341/400", "109/8000", "63259/76", "2071/129100"), "45/49", False, False),
                ("45/49", "6s", ("2693/245", "2693/240100", "900", "2693/220500"), "45/49", True, True),
                ("0", "12s", ("212/5", "53/1225", "980", "53/1225"), "0", False, True),                 # -long-deadline
                ("1", "3s", ("41/5", "41/4900", "0", None), None, True, False)):                          # -impossible
            r = routing(4, 8, hit, deadline)
            a, b = r["candidates"]
            c = r["comparisons"][0]
            self.assertEqual((a["total_cost_exact"], a["cost_per_quality_success_exact"]), ("109/10", "109/8000"))
            self.assertEqual((b["total_cost_exact"], b["cost_per_quality_success_exact"], b["joint_successes_exact"],
                              b["cost_per_joint_success_exact"]), b_row, hit)
            self.assertEqual((c["cost_crossover_hit_fraction_exact"], c["minimum_hit_for_joint_target_exact"]),
                             ("1291/1520", least))
            self.assertEqual((c["cheaper_per_quality_success"], c["meets_joint_target"]), (cheaper, meets))

    def test_bad_candidate(self):
        status, _, err = run_cli("budget", "routing", "--candidate", "A,input=1", "--fresh-tokens", "1",
                                 "--prefix-tokens", "1", "--deadline", "1s")
        self.assertEqual(status, 2)
        self.assertIn("every key once", err)


if __name__ == "__main__":
    unittest.main()

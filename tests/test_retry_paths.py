"""`budget retry`: terminal paths of a finite retry graph and their expected resources; every expected
value derived by hand in its comment."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.retry_paths import retry_paths, terminal_paths  # noqa: E402

F = Fraction
BOOK = ("--node", "initial,cost=1/100,time=10s,cpu=3s,resident=2GiB,success=4/5,repair=3/25,upgrade=2/25",
        "--node", "repair,cost=3/500,time=4s,cpu=1s,resident=2GiB,success=3/5,upgrade=2/5",
        "--node", "upgrade,cost=3/100,time=8s,cpu=2s,resident=2GiB,success=49/50,failure=1/50")


def node(cost, seconds, outcomes, cpu=0, resident=0):
    return {"cost": F(cost), "seconds": F(seconds), "cpu_seconds": F(cpu), "resident_bytes": resident,
            "outcomes": [(t, F(p)) for t, p in outcomes]}


def budget(*argv):
    return budget_result("retry", *argv)


class Paths(unittest.TestCase):
    # Two attempts: a (cost 1, 2 s, 1 GiB held) succeeds with 1/2, else b (cost 3, 5 s) succeeds with 1/3.
    GRAPH = {"a": node(1, 2, [("success", "1/2"), ("b", "1/2")], cpu=1, resident=2**30),
             "b": node(3, 5, [("success", "1/3"), ("failure", "2/3")], cpu=2)}

    def test_path_products_and_sums(self):
        # a: p 1/2, cost 1, 2 s; a > b success: 1/2 x 1/3 = 1/6, cost 4, 7 s, CPU 3, byte-s 2^30 x 2 + 0;
        # a > b failure: 1/3, the same resources.
        paths = terminal_paths(self.GRAPH, "a")
        self.assertEqual([(p[0], p[1], p[2]) for p in paths],
                         [(("a",), "success", F(1, 2)), (("a", "b"), "success", F(1, 6)), (("a", "b"), "failure", F(1, 3))])
        self.assertEqual(paths[1][3:], (4, 7, 3, 2**31))

    def test_expectations_count_failed_paths(self):
        # P(success) 1/2 + 1/6 = 2/3; E[cost] 1/2 x 1 + 1/2 x 4 = 5/2 (the failure path's cost counted);
        # cost per success 5/2 / (2/3) = 15/4; E[attempts] 1/2 x 1 + 1/2 x 2 = 3/2; E[seconds] 1 + 7/2 = 9/2.
        # Deadline 6 s: only the 2 s success is on time -> 1/2, cost per timely success 5.
        r = retry_paths(nodes=self.GRAPH, start="a", deadline_s=F(6), tasks=10)
        self.assertEqual((r["success_probability_exact"], r["expected_per_task"]["cost_exact"]), ("2/3", "5/2"))
        self.assertEqual((r["cost_per_success_exact"], r["expected_attempts_exact"]), ("15/4", "3/2"))
        self.assertEqual(r["expected_per_task"]["seconds_exact"], "9/2")
        self.assertEqual((r["quality_and_deadline_probability_exact"], r["cost_per_quality_and_deadline_success_exact"]),
                         ("1/2", "5"))
        # 10 tasks: 25 dollars, 20/3 successes.
        self.assertEqual((r["total_expected_cost_exact"], r["expected_successes_exact"]), ("25", "20/3"))

    def test_deadline_judges_the_path_time(self):
        # At 7 s the 7 s success is on time too: 2/3; below 2 s none, and no cost per timely success.
        self.assertEqual(retry_paths(nodes=self.GRAPH, start="a", deadline_s=F(7), tasks=1)
                         ["quality_and_deadline_probability_exact"], "2/3")
        r = retry_paths(nodes=self.GRAPH, start="a", deadline_s=F(1), tasks=1)
        self.assertIsNone(r["cost_per_quality_and_deadline_success_exact"])

    def test_book_graph(self):
        # success 4/5 + 9/125 + 147/3125 + 49/625 = 3117/3125; on time by 20 s: all but the 22 s path:
        # 3117/3125 - 147/3125 = 2970/3125 = 594/625; E[cost] 4/5 x 1/100 + 9/125 x 2/125 + (147 + 3)/3125 x 23/500
        # + (49 + 1)/625 x 1/25 = 91/6250, per success 91/6250 x 3125/3117 = 91/6234.
        r = budget(*BOOK, "--deadline", "20s", "--tasks", "1000")
        self.assertEqual((r["success_probability_exact"], r["quality_and_deadline_probability_exact"]),
                         ("3117/3125", "594/625"))
        self.assertEqual((r["expected_per_task"]["cost_exact"], r["cost_per_success_exact"]), ("91/6250", "91/6234"))
        self.assertEqual(r["total_expected_cost_exact"], "364/25")   # 1000 x 91/6250
        # reach: initial 1; repair 3/25; upgrade directly 2/25 or after repair 3/25 x 2/5 = 6/125: 16/125
        self.assertEqual(r["node_reach_probabilities"], {"initial": "1", "repair": "3/25", "upgrade": "16/125"})

    def test_reach_sums_the_paths_through_a_node(self):
        # b is reached on both a > b paths: 1/6 + 1/3 = 1/2; an unreachable node c: 0
        graph = dict(self.GRAPH, c=node(1, 1, [("success", "1")]))
        r = retry_paths(nodes=graph, start="a", deadline_s=F(6), tasks=1)
        self.assertEqual(r["node_reach_probabilities"], {"a": "1", "b": "1/2", "c": "0"})

    def test_bad_graphs(self):
        for argv, text in ((["--node", "a,cost=1,time=1s,success=1/2,failure=1/3"], "sum to exactly 1"),
                           (["--node", "a,time=1s,b=1"], "unknown node 'b'"),
                           (["--node", "a,time=1s,b=1", "--node", "b,time=1s,a=1"], "cycle"),
                           (["--node", "success,time=1s,failure=1"], "must be ID"),
                           (["--node", "a,time=1,success=1"], "'1' has no unit")):
            status, _, err = run_cli("budget", "retry", *argv, "--deadline", "5s")
            self.assertEqual(status, 2, argv)
            self.assertIn(text, err)


if __name__ == "__main__":
    unittest.main()

"""`budget expert-execution`: the book's same-cohort Qwen3-235B execution; values derived by hand."""

import json
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

ROW = 4096 * 2 + 16   # one hidden row in BF16 + 16 B metadata = 8,208 B


def run(*extra):
    status, out, err = run_cli("budget", "expert-execution", "--model", "qwen3-235b-a22b", *extra, "--format", "json")
    assert status == 0, err
    return json.loads(out)["result"]


def svc(rows):   # 1 us startup + rows x 8,208 B at 100 GB/s
    return Fraction(1, 10**6) + Fraction(rows * ROW, 10**11)


class ExpertExecution(unittest.TestCase):
    def test_balanced_tp2_ep4_by_hand(self):
        # 16 tokens x top-8 cover the 128 experts once; owner o (32 experts) has tokens 4o..4o+3: 32 assignments.
        # Per layer: tp_reduce 4 owners x 4 rows, ep_reduce 3 x 4, ep_broadcast 3 x 16, tp_broadcast 4 x 16 = 140 rows
        r = run("--tp", "2", "--ep", "4", "--tokens", "16")
        self.assertEqual(r["total_wire_bytes"], 94 * 140 * ROW)
        self.assertEqual(r["total_wire_bytes"], 108017280)
        self.assertEqual(r["expert_matrix_flops"], 94 * 6 * 16 * 8 * 4096 * 1536)
        self.assertEqual(r["busiest_expert_compute_ranks"], list(range(8)))
        # per layer: busiest rank 6 x 32 x 4096 x 768 FLOPs at 100 TFLOP/s, tp_reduce svc(4), ep_reduce 3 svc(4)
        # into owner 0, ep_broadcast 3 svc(16) out of owner 0, tp_broadcast svc(16)
        layer = Fraction(6 * 32 * 4096 * 768, 10**14) + 4 * svc(4) + 4 * svc(16)
        self.assertEqual(Fraction(r["phase_barrier_bound_s_exact"]), 94 * layer)
        self.assertEqual(r["dispatch_wire_bytes"], 0)

    def test_hot_routes_load_owner_zero(self):
        # every token on experts 0..7 (owner 0): tp_reduce 16 rows, no ep_reduce, broadcasts 48 + 64 = 128 rows
        r = run("--tp", "2", "--ep", "4", "--tokens", "16", "--routing", "hot")
        self.assertEqual(r["total_wire_bytes"], 94 * 128 * ROW)
        self.assertEqual(r["busiest_expert_compute_ranks"], [0, 1])
        layer = Fraction(6 * 128 * 4096 * 768, 10**14) + svc(16) + 4 * svc(16)
        self.assertEqual(Fraction(r["phase_barrier_bound_s_exact"]), 94 * layer)

    def test_pipeline_boundary(self):
        # TP 1: no TP phases; 60 rows per layer; one boundary: a 16-row transfer and 3 x 16 replications
        r = run("--tp", "1", "--ep", "4", "--pp", "2", "--tokens", "16")
        self.assertEqual(r["total_wire_bytes"], (94 * 60 + 64) * ROW)
        self.assertEqual(r["busiest_expert_compute_ranks"], list(range(8)))
        layer = Fraction(6 * 32 * 4096 * 1536, 10**14) + 3 * svc(4) + 3 * svc(16)
        self.assertEqual(Fraction(r["phase_barrier_bound_s_exact"]), 94 * layer + 4 * svc(16))

    def test_equal_histograms_differ_in_rows(self):
        # both tables put 8 assignments on owners 0 and 1; pure: one token each (17 rows a layer), mixed: two each (20)
        pure = run("--tp", "2", "--ep", "4", "--tokens", "2", "--route", "0:0-7", "--route", "1:32-39")
        mixed = run("--tp", "2", "--ep", "4", "--tokens", "2", "--route", "0:0-3,32-35", "--route", "1:4-7,36-39")
        self.assertEqual((pure["total_wire_bytes"], mixed["total_wire_bytes"]), (94 * 17 * ROW, 94 * 20 * ROW))
        self.assertEqual(pure["expert_matrix_flops"], mixed["expert_matrix_flops"])
        self.assertEqual(pure["busiest_expert_compute_ranks"], [0, 1, 2, 3])

    def test_requests_scale_rows(self):
        r = run("--tp", "2", "--ep", "4", "--tokens", "16", "--requests", "2")
        self.assertEqual(r["total_wire_bytes"], 94 * 280 * ROW)
        self.assertEqual(r["assignments"], 94 * 32 * 8)

    def test_bad_routes(self):
        for extra in (("--route", "0:0-7"), ("--route", "0:0-6", "--route", "1:8-15"),
                      ("--routing", "hot", "--route", "0:0-7", "--route", "1:8-15"), ("--route", "x")):
            status, _, err = run_cli("budget", "expert-execution", "--model", "qwen3-235b-a22b", "--tp", "2",
                                     "--ep", "4", "--tokens", "2", *extra)
            self.assertEqual(status, 2, extra)
            self.assertNotIn("Traceback", err)


if __name__ == "__main__":
    unittest.main()

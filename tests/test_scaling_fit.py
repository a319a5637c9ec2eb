"""`budget scaling-fit` and `budget scaling-lifecycle`: the loss law fitted by exponent search and least
squares, and the lifecycle cost of sizes at a target loss. Small cases derived by hand in the comments;
the book's published figures (bojieli/ai-infra-book:calculations/results/datablations-real-c4-eight-point-fit.md,
real-c4-lifecycle-512-128.md, scaling-law-teaching.md) pin the float order."""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.scaling_fit import fit, law_loss  # noqa: E402
from infracalc.analyses.scaling_lifecycle import candidate, compute_optimum, crossing  # noqa: E402
from infracalc.summation import compensated_sum, plain_sum  # noqa: E402

UNIT = {"E": 1.0, "A": 1.0, "B": 1.0, "alpha": 0.5, "beta": 0.5, "N0": 1.0, "D0": 1.0}


def point(name, n, d, loss, split="fit"):
    return {"id": name, "split": split, "N": n, "D": d, "loss": loss}


# L = 1 + N^-1/2 + D^-1/2 at N, D in {1, 4, 16} (N^-1/2 = 1, 1/2, 1/4 exactly; three levels, so only
# the generating pair fits exactly); a holdout at N = D = 64 predicted 1 + 1/8 + 1/8 = 1.25 but
# observed 1.75: residual -0.5.
POINTS = [point(f"{n:g}x{d:g}", n, d, 1 + n ** -0.5 + d ** -0.5) for n in (1.0, 4.0, 16.0) for d in (1.0, 4.0, 16.0)]
POINTS.append(point("h", 64.0, 64.0, 1.75, "holdout"))
# the book's eight C4 points (reported N, D; datablations-real-c4-eight-point-fit.md)
C4 = [point("2b855b55b", 2810000000.0, 55000000000.0, 2.574117, "holdout"),
      point("8b7178b178b", 8670000000.0, 178000000000.0, 2.336741, "holdout"),
      point("1b1100m100m", 1096300000.0, 100000000.0, 6.611002), point("14m100m100m", 14100000.0, 100000000.0, 7.278144),
      point("196m1b51b5", 201236224.0, 1500000000.0, 3.929866), point("1b11b51b5", 1096300000.0, 1500000000.0, 3.680017),
      point("1b112b12b", 1096300000.0, 12000000000.0, 2.925644), point("1b191b91b", 1096300000.0, 91000000000.0, 2.636805)]
C4_GRID = [(a / 100, b / 100) for a in range(10, 61, 5) for b in range(10, 61, 5)]


class Fit(unittest.TestCase):
    def test_exact_recovery(self):
        out = fit(POINTS, [(0.5, 0.5)], 1.0, 1.0)
        for k in ("E", "A", "B"):
            self.assertAlmostEqual(out["law"][k], 1.0, places=12)
        self.assertLess(out["fit_sse"], 1e-28)
        held = out["predictions"][-1]
        self.assertAlmostEqual(held["predicted_loss"], 1.25, places=12)
        self.assertAlmostEqual(held["residual"], -0.5, places=12)
        self.assertAlmostEqual(out["holdout_rmse"], 0.5, places=12)   # sqrt(0.25 / 1)
        self.assertTrue(held["outside_fit_box"])                       # 64 > the fit box's 16
        self.assertEqual(out["fit_box"], {"N": [1.0, 16.0], "D": [1.0, 16.0]})

    def test_least_sse_pair_wins_and_holdout_never_trains(self):
        grid = [(1.0, 1.0), (0.5, 0.5), (0.25, 0.5)]
        out = fit(POINTS, grid, 1.0, 1.0)
        self.assertEqual((out["law"]["alpha"], out["law"]["beta"]), (0.5, 0.5))
        moved = [dict(p, loss=p["loss"] + 10) if p["split"] == "holdout" else p for p in POINTS]
        self.assertEqual(fit(moved, grid, 1.0, 1.0)["law"], out["law"])

    def test_negative_coefficient_rejected(self):
        # loss rising with N: A < 0 at every pair, so no admissible law
        rising = [point("a", 1.0, 1.0, 2.0), point("b", 1.0, 4.0, 1.5), point("c", 4.0, 1.0, 2.5),
                  point("d", 4.0, 4.0, 2.0), point("h", 16.0, 16.0, 2.0, "holdout")]
        out = fit(rising, [(0.5, 0.5)], 1.0, 1.0)
        self.assertIsNone(out["law"])
        self.assertEqual(out["rejected"], [{"alpha": 0.5, "beta": 0.5,
                                            "reason": "coefficients violate E >= 0, A > 0, B > 0"}])

    def test_tiny_negative_intercept_is_zero(self):
        # L = N^-1/2 + D^-1/2 (E = 0) at N, D in {1, 2, 3}: the solve gives E a few ulp below 0, inside
        # 64 ulp(max loss), so E is set to 0 and the pair admitted (else it would be rejected as E < 0)
        pts = [point(f"{n:g}x{d:g}", n, d, n ** -0.5 + d ** -0.5) for n in (1.0, 2.0, 3.0) for d in (1.0, 2.0, 3.0)]
        out = fit(pts + [point("h", 9.0, 9.0, 2 / 3, "holdout")], [(0.5, 0.5)], 1.0, 1.0)
        self.assertEqual(out["law"]["E"], 0.0)
        self.assertEqual(out["rejected"], [])

    def test_dependent_design_rejected(self):
        # every fit point at one D: the D column is a multiple of the ones column
        flat = [point(str(i), n, 4.0, 1.0 + n ** -0.5) for i, n in enumerate((1.0, 4.0, 9.0, 16.0))]
        out = fit(flat + [point("h", 25.0, 4.0, 1.2, "holdout")], [(0.5, 0.5)], 1.0, 1.0)
        self.assertEqual(out["rejected"][0]["reason"], "rank-deficient design")

    def test_book_c4_fit_to_the_last_bit(self):
        # the book file's JSON (full repr) and its printed holdout RMSE, left-to-right sums
        out = fit(C4, C4_GRID, 1e9, 1e10)
        self.assertEqual((out["law"]["E"], out["law"]["A"], out["law"]["B"]),
                         (1.2112421705646654, 1.2512538552831556, 0.5234301353650054))
        self.assertEqual((out["law"]["alpha"], out["law"]["beta"]), (0.1, 0.45))
        self.assertEqual(out["fit_sse"], 0.0005997233448120746)
        self.assertEqual(out["holdout_rmse"], 0.019344538649002298)
        self.assertEqual((len(out["candidates"]), len(out["rejected"])), (97, 24))

    def test_compensated_order_is_python_312s(self):
        # the book's lifecycle file was written by a Python whose sum() compensates: its law's E
        out = fit(C4, C4_GRID, 1e9, 1e10, "compensated")
        self.assertEqual(out["law"]["E"], 1.2112421705646648)
        self.assertEqual(compensated_sum([1e16, 1.0, -1e16]), 1.0)   # 1e16 + 1 rounds to 1e16; c keeps the 1
        self.assertEqual(plain_sum([1e16, 1.0, -1e16]), 0.0)
        self.assertEqual(compensated_sum([0.1, 0.2, 0.3]), 0.6)     # plain: 0.6000000000000001
        if sys.version_info >= (3, 12):
            terms = [0.1 * k for k in range(1, 50)]
            self.assertEqual(compensated_sum(terms), sum(terms))


class Lifecycle(unittest.TestCase):
    PRICES = {"train": 1.0, "prefill": 0.125, "decode": 0.5, "setup": 0.0}

    def test_worked_case(self):
        # N = 4: g = 2.5 - 1 - 4^-1/2 = 1, D = 1 x (1 / 1)^-2 = 1; training 6 x 4 x 1 = 24;
        # per call 2 x 4 x 2 x 1/8 + 2 x 4 x 3 x 1/2 = 2 + 12 = 14
        row = candidate(UNIT, 4.0, 2.5, self.PRICES, 2, 3)
        self.assertEqual((row["D"], row["training_flops"], row["upfront_cost"]), (1.0, 24.0, 24.0))
        self.assertEqual((row["prefill_flops_per_call"], row["decode_flops_per_call"], row["cost_per_call"]),
                         (16.0, 24.0, 14.0))
        self.assertEqual(row["predicted_loss"], 2.5)
        # N = 1/4: 1 + (1/4)^-1/2 = 3 > 2.5, no data reaches the target
        self.assertEqual(candidate(UNIT, 0.25, 2.5, self.PRICES, 2, 3), {"N": 0.25, "feasible": False})
        # D grows as g^(-1/beta): N = 1 leaves g = 1/2, D = (1/2)^-2 = 4
        self.assertEqual(candidate(UNIT, 1.0, 2.5, self.PRICES, 2, 3)["D"], 4.0)

    def test_crossing(self):
        # lines 10 + C and 4 + 3C meet at C = (4 - 10) / (1 - 3) = 3
        left, right = {"N": 1, "upfront_cost": 10.0, "cost_per_call": 1.0}, {"N": 2, "upfront_cost": 4.0,
                                                                            "cost_per_call": 3.0}
        self.assertEqual(crossing(left, right), {"left_N": 1, "right_N": 2, "calls": 3.0, "status": "nonnegative_crossing",
                                                 "relative_cost_equality_error": 0.0})
        cheaper = dict(right, upfront_cost=12.0)   # (12 - 10) / (1 - 3) = -1: never crossed
        self.assertEqual(crossing(left, cheaper)["status"], "negative_crossing")
        self.assertEqual(crossing(left, dict(left, N=2))["status"], "coincident")
        self.assertEqual(crossing(left, dict(left, N=2, upfront_cost=11.0))["status"], "parallel")

    def test_compute_optimum(self):
        # alpha A = beta B: N = N0 Q^(beta / (alpha + beta)) = sqrt(Q), Q = 600 / 6 = 100: N = D = 10
        out = compute_optimum(UNIT, 600.0)
        self.assertAlmostEqual(out["N"], 10.0, places=12)
        self.assertAlmostEqual(out["D"], 10.0, places=12)
        self.assertAlmostEqual(out["predicted_loss"], law_loss(UNIT, 10.0, 10.0), places=12)

    def test_compute_optimum_unequal_exponents(self):
        # alpha = 1, beta = 1/2, A = 1, B = 2: alpha A / (beta B) = 1, so N = Q^(beta / (alpha + beta)) = Q^(1/3);
        # budget 6000: Q = 1000, N = 10, D = 6000 / 6 / 10 = 100
        law = {"E": 0.0, "A": 1.0, "B": 2.0, "alpha": 1.0, "beta": 0.5, "N0": 1.0, "D0": 1.0}
        out = compute_optimum(law, 6000.0)
        self.assertAlmostEqual(out["N"], 10.0, places=10)
        self.assertAlmostEqual(out["D"], 100.0, places=8)

    def test_book_lifecycle_figures(self):
        # real-c4-lifecycle-512-128.md (compensated sums): crossings printed in full, the cheapest size
        args = ["scaling-lifecycle"]
        for p in C4:
            args += ["--point", f"{p['id']}:{p['split']}:{p['N']!r}:{p['D']!r}:{p['loss']!r}"]
        args += ["--alpha", "0.1:0.6:0.05", "--beta", "0.1:0.6:0.05", "--target-loss", "2.9", "--sizes",
                 "1e8,5e8,1e9,2.81e9", "--input-tokens", "512", "--decode-steps", "127", "--train-price", "1e-18",
                 "--calls", "0,1000000000", "--summation", "compensated"]
        out = budget_result(*args)
        self.assertEqual([c["calls"] for c in out["crossings"][:3]],
                         [204789774.70332453, 78050274.8056683, 9883694.131780138])
        self.assertEqual(f"{out['rows'][0]['D']:.9g}", "2.98578849e+11")
        self.assertEqual(f"{out['rows'][3]['cost_per_call']:.9g}", "3.59118e-06")   # 2 x 2.81e9 x 639 x 1e-18
        self.assertEqual(f"{out['rows'][0]['D_extrapolation']:.4g}", "3.281")
        self.assertEqual(sorted({(c["calls"], c["cheapest_N"]) for c in out["curves"]}),
                         [(0, 500000000.0), (1000000000, 100000000.0)])

    def test_errors(self):
        status, _, err = run_cli("budget", "scaling-fit", "--point", "a:fit:1:1:3", "--alpha", "0.5", "--beta", "0.5")
        self.assertEqual(status, 2)
        self.assertIn("at least four", err)
        status, _, err = run_cli("budget", "scaling-fit", "--point", "a:train:1:1:3", "--alpha", "0.5", "--beta", "0.5")
        self.assertEqual(status, 2)
        self.assertIn("SPLIT fit or holdout", err)
        self.assertTrue(math.isfinite(law_loss(UNIT, 1.0, 1.0)))


if __name__ == "__main__":
    unittest.main()

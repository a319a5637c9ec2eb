"""`budget sampling`: one speculative-sampling step, exact fractions, derived by hand and by
enumerating every proposal / accept / replacement path."""

import json
import random
import unittest
from fractions import Fraction as F

from support import run_cli
from infracalc.analyses.speculative_sampling import sampling, total_variation


def enumerate_paths(p, q):
    """Brute force: the output distribution of Algorithm 1 by walking every path
    (propose x ~ q; accept with min(1, p/q); else replace y ~ max(0, p - q) normalized)."""
    out = [F(0)] * len(p)
    excess = [max(F(0), a - b) for a, b in zip(p, q)]
    mass = sum(excess)
    for x, qx in enumerate(q):
        if not qx:
            continue
        keep = min(F(1), p[x] / qx)
        out[x] += qx * keep
        for y, e in enumerate(excess):
            if mass:
                out[y] += qx * (1 - keep) * e / mass
    return out


class ByHand(unittest.TestCase):
    def test_book_case(self):
        # p = (1/2, 1/3, 1/6), q = (1/6, 1/3, 1/2): min(p, q) = (1/6, 1/3, 1/6), beta = 2/3;
        # residual max(0, p - q) = (1/3, 0, 0) -> (1, 0, 0); output (1/6 + 1/3, 1/3, 1/6) = p;
        # wrong: min + 1/3 p = (1/6 + 1/6, 1/3 + 1/9, 1/6 + 1/18) = (1/3, 4/9, 2/9), TV = (1/6 + 1/9 + 1/18)/2 = 1/6
        r = sampling(target=(F(1, 2), F(1, 3), F(1, 6)), draft=(F(1, 6), F(1, 3), F(1, 2)))
        self.assertEqual((r["acceptance_exact"], r["rejection_exact"]), ("2/3", "1/3"))
        self.assertEqual([t["wrong_output_exact"] for t in r["sampling_tokens"]], ["1/3", "4/9", "2/9"])
        self.assertEqual([t["conditional_accept_exact"] for t in r["sampling_tokens"]], ["1", "1", "1/3"])
        self.assertEqual(r["wrong_total_variation_exact"], "1/6")
        self.assertEqual(r["total_variation_exact"], "0")
        # only proposal 2 is ever rejected (q - min = 1/3): replacements (1/3, 0, 0), wrong (1/6, 1/9, 1/18)
        self.assertEqual([(b["proposal_token"], b["corrected_mass_exact"], b["wrong_mass_exact"])
                          for b in r["rejection_branches"]], [(2, "1/3", "1/6"), (2, "0", "1/9"), (2, "0", "1/18")])

    def test_unreachable_quantities_are_none(self):
        # q(0) = 0: token 0 is never proposed; p = q: nothing is rejected, the residual is 0/0
        r = sampling(target=(F(1, 2), F(1, 2), F(0)), draft=(F(0), F(1, 2), F(1, 2)))
        self.assertIsNone(r["sampling_tokens"][0]["conditional_accept_exact"])
        self.assertEqual(r["wrong_total_variation_exact"], "1/4")   # wrong (1/4, 3/4, 0) against (1/2, 1/2, 0)
        r = sampling(target=(F(1, 2), F(1, 2)), draft=(F(1, 2), F(1, 2)))
        self.assertEqual([t["residual_exact"] for t in r["sampling_tokens"]], [None, None])
        self.assertEqual(r["rejection_branches"], [])

    def test_total_variation(self):
        self.assertEqual(total_variation([F(1), F(0)], [F(0), F(1)]), 1)
        self.assertEqual(total_variation([F(1, 4), F(3, 4)], [F(1, 2), F(1, 2)]), F(1, 4))


class Invariants(unittest.TestCase):
    def test_output_is_the_target_and_equals_the_enumeration(self):
        rng = random.Random(7)
        for _ in range(200):
            n = rng.randint(1, 6)
            p = [F(rng.randint(0, 5)) for _ in range(n)]
            q = [F(rng.randint(0, 5)) for _ in range(n)]
            if not sum(p) or not sum(q):
                continue
            p, q = [x / sum(p) for x in p], [x / sum(q) for x in q]
            r = sampling(target=p, draft=q)
            out = [F(t["output_exact"]) for t in r["sampling_tokens"]]
            self.assertEqual(out, enumerate_paths(p, q))
            self.assertEqual(out, p)
            self.assertTrue(r["output_matches_target"])
            self.assertEqual(F(r["acceptance_exact"]), 1 - total_variation(p, q))   # beta = 1 - TV(p, q)
            branches = sum(F(b["corrected_mass_exact"]) for b in r["rejection_branches"])
            self.assertEqual(branches, F(r["rejection_exact"]))


class Command(unittest.TestCase):
    def test_cli_and_refusals(self):
        status, out, _ = run_cli("budget", "sampling", "--target-probs", "1,0", "--draft-probs", "0,1", "--format", "json")
        self.assertEqual(status, 0)
        self.assertEqual(json.loads(out)["result"]["acceptance_exact"], "0")
        for p, q in (("1/2,1/3", "1/2,1/2"), ("1/2,1/2", "1/3,1/3,1/3"), ("-1,2", "1/2,1/2")):
            status, _, err = run_cli("budget", "sampling", "--target-probs", p, "--draft-probs", q)
            self.assertEqual(status, 2, (p, q))


if __name__ == "__main__":
    unittest.main()

"""plain_sum: float terms added left to right on every Python (the built-in sum() compensates
float sums from Python 3.12), so a stored result re-derives to the same text on 3.10 and 3.13."""

import os
import re
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "calculations"))

from infracalc.summation import plain_sum  # noqa: E402

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "calculations", "infracalc")
# the modules that sum times and rates: every sum there goes through plain_sum
TIMED = ("analyses/parallel", "analyses/efficiency", "analyses/serve", "analyses/forward.py",
         "analyses/decode.py", "analyses/decode_sum.py", "analyses/train_time.py", "analyses/mla_path.py",
         "ledger.py", "collectives.py")


class PlainSum(unittest.TestCase):
    def test_left_to_right(self):
        # (1e16 + 1.0) rounds to 1e16 (the spacing of doubles there is 2), then - 1e16 = 0.0;
        # a compensated sum (Neumaier, Python 3.12's sum) keeps the lost 1.0 and returns 1.0.
        self.assertEqual(plain_sum([1e16, 1.0, -1e16]), 0.0)
        # 0.1 + 0.2 = 0.30000000000000004 in binary64, + 0.3 = 0.6000000000000001
        self.assertEqual(plain_sum([0.1, 0.2, 0.3]), 0.6000000000000001)

    def test_exact_kinds_and_start(self):
        self.assertEqual(plain_sum(range(1, 101)), 5050)
        self.assertIs(type(plain_sum([1, 2])), int)
        self.assertEqual(plain_sum([Fraction(1, 3), Fraction(1, 6)]), Fraction(1, 2))
        self.assertEqual(plain_sum([1.5], 0.5), 2.0)
        self.assertEqual(plain_sum([]), 0)
        self.assertEqual(plain_sum(iter([2, 3]), 10), 15)

    def test_timed_modules_use_it(self):
        bare = re.compile(r"(?<![\w.])sum\(")
        found = []
        for part in TIMED:
            path = os.path.join(PACKAGE, part)
            files = [path] if path.endswith(".py") else [
                os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith(".py")]
            self.assertTrue(files, part)
            for f in files:
                with open(f, encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        code = line.split("#", 1)[0]
                        if bare.search(code) and '"' not in code and "'" not in code:
                            found.append(f"{os.path.relpath(f, PACKAGE)}:{n}")
        self.assertEqual(found, [], "use summation.plain_sum for float sums (Python 3.12's sum() differs)")


if __name__ == "__main__":
    unittest.main()

"""`budget voice-demand`: the TPU paper's voice-search anchor scaled linearly; expected values by hand."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402,F401  (puts calculations/ on sys.path)

from infracalc.analyses.voice_demand import voice_demand  # noqa: E402

F = Fraction


class VoiceDemand(unittest.TestCase):
    def test_anchor_doubles(self):
        # 3 minutes a day: one added unit, total 2 (Jouppi et al. 2017, sec. 2).
        r = voice_demand(minutes=F(3))
        self.assertEqual((r["increment_exact"], r["total_exact"]), ("1", "2"))

    def test_linear_factors_multiply(self):
        # 6 minutes x 3/2 population x 2 work x 1/2 peak: 2 x 3/2 x 2 x 1/2 = 3 added, total 4; the chain's
        # outputs 2, 3, 6, 3.
        r = voice_demand(minutes=F(6), population=F(3, 2), work=F(2), peak=F(1, 2))
        self.assertEqual(r["total_exact"], "4")
        self.assertEqual([s["output_exact"] for s in r["scaling"]], ["2", "3", "6", "3"])

    def test_servers_and_gain(self):
        # 1 minute: 1/3 added; 1,000 servers -> ceil(333.3) = 334; a gain of 4 on the added work: 1/12, total 13/12,
        # ceil(83.3) = 84.
        r = voice_demand(minutes=F(1), baseline_servers=1000, gain=F(4))
        self.assertEqual([(c["increment_exact"], c["total_exact"], c["added_server_equivalents"]) for c in r["candidates"]],
                         [("1/3", "4/3", 334), ("1/12", "13/12", 84)])
        # 1,000 x 1/3 = 1000/3 and 1,000 x 1/12 = 250/3 exact; whole servers in all 1,000 + 334 and 1,000 + 84
        self.assertEqual([(c["added_server_equivalents_exact"], c["total_server_equivalents"]) for c in r["candidates"]],
                         [("1000/3", 1334), ("250/3", 1084)])
        self.assertIsNone(voice_demand(minutes=F(1))["candidates"][0]["total_server_equivalents"])


if __name__ == "__main__":
    unittest.main()

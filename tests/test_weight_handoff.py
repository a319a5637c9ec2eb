"""`budget handoff`: BF16 weights per EP rank, unicast egress and phase memory; values derived by hand."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

DECLARED = ("--capacity", "64GiB", "--training-live", "40GiB", "--kv", "24GiB", "--common", "4GiB")


def handoff(model="qwen3-235b-a22b", ep="16", *extra, prod="50GB/s", recv="50GB/s"):
    status, out, err = run_cli("budget", "handoff", "--model", model, "--ep", ep, "--producer-bw", prod,
                               "--receiver-bw", recv, *DECLARED, *extra, "--format", "json")
    assert status == 0, err
    return json.loads(out)["result"]


class Handoff(unittest.TestCase):
    def test_uneven_ep_by_hand(self):
        # Qwen3-235B: 235,093,634,560 x 2 = 470,187,269,120 B; 128 experts x 94 layers x 3 x 4096 x 1536 x 2 B =
        # 454,192,791,552 (3,548,381,184 per expert); EP 7: 128 = 7 x 18 + 2, ranks 0-1 hold 19 experts:
        # 15,994,477,568 + 19 x 3,548,381,184 = 83,413,720,064; selective egress 7 x 15,994,477,568 + all experts
        r = handoff("qwen3-235b-a22b", "7")
        self.assertEqual((r["nonexpert_weight_bytes"], r["largest_rank_weight_bytes"]), (15994477568, 83413720064))
        self.assertEqual([x["experts"] for x in r["ranks"]][:3], ["[0,19)", "[19,38)", "[38,56)"])
        self.assertEqual(r["selective_egress_bytes"], 7 * 15994477568 + 454192791552)
        self.assertEqual(r["full_egress_bytes"], 7 * 470187269120)

    def test_phases(self):
        # EP 16: 8 experts, 44,381,527,040 B; rollout = weights + 24 GiB KV + 4 GiB common = 74,446,298,112; sync before
        # release = 40 GiB training + 4 GiB + weights = 91,626,167,296 > 64 GiB: does not fit
        r = handoff()
        self.assertEqual((r["rollout_bytes"], r["sync_weights_before_release_bytes"], r["staged_peak_bytes"]),
                         (74446298112, 91626167296, 91626167296))
        self.assertEqual((r["staged_fits"], r["restore_all_fits"]), (False, False))

    def test_transfer_bounds(self):
        # selective at 1 TB/s out, 1 GB/s in: the receiver binds, 44,381,527,040 / 1e9 = 17336534/390625 s
        r = handoff(prod="1TB/s", recv="1GB/s")
        self.assertEqual(r["unicast"][1]["lower_bound_s_exact"], "17336534/390625")
        # at 50 GB/s both ways the producer's 16 x 44,381,527,040 B bind: 710,104,432,640 / 5e10 = 138692272/9765625 s
        self.assertEqual(handoff()["unicast"][1]["lower_bound_s_exact"], "138692272/9765625")

    def test_replicas_and_dense(self):
        self.assertEqual(handoff("qwen3-235b-a22b", "16", "--replicas", "4")["selective_egress_bytes"], 4 * 710104432640)
        r = handoff("qwen3-8b", "1")
        self.assertEqual((r["largest_rank_weight_bytes"], r["selective_egress_bytes"]), (16381470720, 16381470720))


if __name__ == "__main__":
    unittest.main()

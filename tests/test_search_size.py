"""A layout search refuses, in one line and at once, a device count whose candidate
list could not be costed in seconds (issue 12: no call may run for minutes)."""

import time
import unittest

from support import run_cli


class SearchSize(unittest.TestCase):
    def test_candidate_counts_by_hand(self):
        from infracalc import layout
        from infracalc.load import models

        dense = models.load_model("llama-3.1-8b")
        moe = models.load_model("qwen3-30b-a3b")
        # 55,440 = 2^4 3^2 5 7 11: ordered factorizations into tp x pp x cp x dp =
        # C(7,3) C(5,3) C(4,3)^3 = 35 x 10 x 64 = 22,400 <= 50,000: allowed dense.
        layout.check_search_size(dense, 55_440)
        # with ep (each divisor of tp x dp) the MoE count passes 50,000: refused
        with self.assertRaises(Exception) as cm:
            layout.check_search_size(moe, 55_440)
        self.assertIn("more than 50,000 candidate layouts", str(cm.exception))
        # 2^24: C(27,3) = 2,925 dense layouts, 38,025 with ep: allowed
        layout.check_search_size(moe, 2 ** 24)

    def test_refusals_are_one_line_and_fast(self):
        for argv in (("parallel", "--model", "qwen3-30b-a3b", "--devices", "720720", "--search",
                      "--input-len", "2048", "--output-len", "256"),
                     ("train", "--model", "llama-3.1-8b", "--devices", "1000000000000000", "--seq", "4096",
                      "--global-batch", "512", "--search")):
            t0 = time.process_time()
            code, out, err = run_cli(*argv)
            self.assertLess(time.process_time() - t0, 2.0)
            self.assertEqual(code, 2)
            self.assertEqual(out, "")
            self.assertEqual(err.count("\n"), 1, err)
            self.assertIn("--search", err)


if __name__ == "__main__":
    unittest.main()

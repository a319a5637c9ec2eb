"""`budget environments`: clone placement, creation paths, snapshots and prewarm from declared inputs;
expected values derived by hand in the comments."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.environment_budget import clone_placements, creation_paths, prewarm  # noqa: E402

F = Fraction
MIB, GIB = 2**20, 2**30


class Placements(unittest.TestCase):
    def test_book_placements(self):
        # 100 environments of a 2 GiB template, 512 MiB touched, 128 MiB dirty, 256 MiB hot read-only, 4 MiB overhead:
        # share-read-only keeps 128 + 4 MiB = 138,412,032 B each; 64 GiB / that = 496.5 -> 496; 100 x 128 MiB at
        # 1 GiB/s = 12.5 s. Full copy 2 GiB + 4 MiB: 64 GiB holds 31.
        rows = {r["placement"]: r for r in clone_placements(environments=100, template=2 * GIB, touched=512 * MIB,
                                                            dirty=128 * MIB, hot_readonly=256 * MIB, overhead=4 * MIB,
                                                            local_budget=64 * GIB, bytes_per_s=GIB)}
        dirty = rows["share_readonly_copy_dirty"]
        self.assertEqual((dirty["per_environment_bytes"], dirty["environments_in_budget"]), (138412032, 496))
        self.assertEqual(dirty["serial_transfer_s_exact"], "25/2")
        self.assertEqual(rows["full_copy"]["environments_in_budget"], 31)
        # with the shared template: 2 GiB + 100 x (384 MiB + 4 MiB) for the hot read-only placement
        self.assertEqual(rows["localize_hot_readonly"]["with_shared_template_bytes"], 2 * GIB + 100 * 388 * MIB)

    def test_creation_paths(self):
        # cold: (2 GiB + 512 MiB) / 1 GiB/s = 5/2 s; clean rebuild 4 s.
        paths = {p["path"]: p["byte_service_s_exact"] for p in creation_paths(2 * GIB, 512 * MIB, GIB)}
        self.assertEqual((paths["cold_template"], paths["warm_template"], paths["clean_rebuild"]), ("5/2", "1/2", "4"))


class Prewarm(unittest.TestCase):
    def test_book_expectations(self):
        # Preparation 2 s, lead 1 s, hit 3/4, timeout 3 s: avoided 3/4 x 1 = 3/4, wait 5/4; allocated 3/4 x 2 +
        # 1/4 (1 + 3 + 2) = 3; unused 3/4 x 0 + 1/4 x 4 = 1; byte-seconds at 2 GiB: 6 GiB-s, extra (3 - 2) x 2 GiB.
        r = prewarm(preparation_s=F(2), lead_s=F(1), hit=F(3, 4), timeout_s=F(3), environment_bytes=2 * GIB)
        self.assertEqual((r["expected_wait_s_exact"], r["expected_avoided_wait_s_exact"]), ("5/4", "3/4"))
        self.assertEqual((r["expected_allocated_s_exact"], r["expected_unused_s_exact"]), ("3", "1"))
        self.assertEqual((r["expected_byte_seconds_exact"], r["extra_byte_seconds_vs_demand_exact"]),
                         (str(6 * GIB), str(2 * GIB)))

    def test_lead_longer_than_preparation(self):
        # Lead 3 s, always right: no wait, 2 s avoided; it lives 3 s, 1 s of it ready and unused.
        r = prewarm(preparation_s=F(2), lead_s=F(3), hit=F(1), timeout_s=F(3), environment_bytes=1)
        self.assertEqual((r["expected_wait_s_exact"], r["expected_allocated_s_exact"], r["expected_unused_s_exact"]),
                         ("0", "3", "1"))

    def test_bad_ranges(self):
        status, _, err = run_cli("budget", "environments", "--environments", "1", "--template-bytes", "1GiB",
                                 "--touched-bytes", "2GiB", "--dirty-bytes", "0", "--hot-readonly-bytes", "0",
                                 "--overhead-bytes", "0", "--local-budget-bytes", "1GiB", "--snapshot-delta-bytes", "0",
                                 "--environment-bytes", "1GiB", "--transfer-rate", "1GiB", "--preparation-time", "1s",
                                 "--lead-time", "1s", "--hit", "1", "--timeout", "1s")
        self.assertEqual(status, 2)
        self.assertIn("touched <= template", err)


if __name__ == "__main__":
    unittest.main()

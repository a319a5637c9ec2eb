"""`budget collective-tail` and `budget ordering`: a barrier collective's completion over declared
ready-time records, and publication dependencies with a stale-read witness (the book's chapter 7);
expected values derived by hand."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.collective_tail import collective_tail, nearest_rank  # noqa: E402
from infracalc.analyses.operation_ordering import ordering_schedules, stale_read  # noqa: E402

US, MS = 1000, 10**6
SKEW = ("book-ready-skew", 1, [0, 0, 0, 2 * MS], 400 * US, 0)


budget = budget_result


def policy(r, name):
    return next(p for p in r["policies"] if p["policy"] == name)


class CollectiveTail(unittest.TestCase):
    def test_one_late_rank(self):
        # The last rank is ready at 2 ms; the 0.4 ms exchange follows: 2.4 ms. Half the exchange: 2.2 ms;
        # all ranks ready at 0: 0.4 ms; no recovery to remove: 2.4 ms. With 1 ms of post compute all + 1 ms.
        r = collective_tail(observations=[SKEW])
        self.assertEqual([policy(r, p)["mean_ns"] for p in ("baseline", "faster_exchange", "aligned_ready", "no_recovery")],
                         ["2400000", "2200000", "400000", "2400000"])
        self.assertEqual(r["records"][0]["rank_wait_ns"], [2 * MS, 2 * MS, 2 * MS, 0])
        post = collective_tail(observations=[SKEW], post_ns=MS)
        self.assertEqual((policy(post, "baseline")["p99_ns"], policy(post, "aligned_ready")["max_ns"]), ("3400000", "1400000"))

    def test_mixed_record_mean_and_nearest_rank(self):
        # 98 x 0.4 ms, one late rank 2.4 ms, one 10 ms recovery 10.4 ms: mean (39.2 + 2.4 + 10.4) / 100 = 0.52 ms;
        # p99 = the 99th smallest = 2.4 ms, max 10.4 ms; faster exchange saves 0.2 ms on each: mean 0.32 ms;
        # without recovery the mean is (99 x 0.4 + 2.4) / 100 = 0.42 ms and the max 2.4 ms.
        obs = [("normal", 98, [0] * 4, 400 * US, 0), ("late-rank", 1, [0, 0, 0, 2 * MS], 400 * US, 0),
               ("recovery", 1, [0] * 4, 400 * US, 10 * MS)]
        r = collective_tail(observations=obs)
        b = policy(r, "baseline")
        self.assertEqual((b["mean_ns"], b["p50_ns"], b["p99_ns"], b["max_ns"]), ("520000", "400000", "2400000", "10400000"))
        self.assertEqual(policy(r, "faster_exchange")["mean_ns"], "320000")
        self.assertEqual((policy(r, "no_recovery")["mean_ns"], policy(r, "no_recovery")["max_ns"]), ("420000", "2400000"))
        # two recoveries out of 100: the 99th smallest is a recovery (the book's fault-heavy row)
        heavy = collective_tail(observations=[obs[0][:1] + (97,) + obs[0][2:], obs[1], obs[2][:1] + (2,) + obs[2][2:]])
        self.assertEqual((policy(heavy, "baseline")["mean_ns"], policy(heavy, "baseline")["p99_ns"]), ("620000", "10400000"))

    def test_nearest_rank_is_ceil(self):
        self.assertEqual(nearest_rank([(1, 1), (2, 1), (3, 1)], 50), 2)    # ceil(1.5) = 2nd
        self.assertEqual(nearest_rank([(1, 1), (2, 1)], 50), 1)            # ceil(1.0) = 1st
        self.assertEqual(nearest_rank([(5, 3), (1, 97)], 97), 1)
        self.assertEqual(nearest_rank([(5, 3), (1, 97)], 98), 5)

    def test_command_and_payload(self):
        # Qwen3-8B hidden 4096: BF16 [1024, 4096] = 8,388,608 B per rank.
        r = budget("collective-tail", "--record", "skew=1:400us:0s:0s,0s,0s,2ms", "--model", "qwen3-8b", "--tokens", "1024")
        self.assertEqual((r["payload_bytes_per_rank"], r["ranks"]), (8388608, 4))
        status, _, err = run_cli("budget", "collective-tail", "--record", "1:400us:0s:0s,0s", "--record", "1:1us:0s:0s")
        self.assertEqual(status, 2, err)


class Ordering(unittest.TestCase):
    def test_book_schedules(self):
        # Strict: write 20 + recovery 80 + notify 2 on one resource, then the independent 10: 112 us. Necessary: the
        # independent transfer runs at 0 on its own resource (done 10 us); the chain ends at 102 us.
        r = ordering_schedules(write_ns=20 * US, recovery_ns=80 * US, notification_ns=2 * US, independent_ns=10 * US)
        self.assertEqual((r["strict_all_done_ns"], r["dependency_all_done_ns"], r["dependency_independent_done_ns"]),
                         (112 * US, 102 * US, 10 * US))
        self.assertEqual(r["all_done_saved_ns"], 10 * US)

    def test_shared_resource_and_no_recovery(self):
        # Shared: the independent transfer queues behind the chain (ties go to the chain): done at 112 us either way.
        r = ordering_schedules(write_ns=20 * US, recovery_ns=80 * US, notification_ns=2 * US, independent_ns=10 * US,
                               shared_resource=True)
        self.assertEqual((r["dependency_all_done_ns"], r["dependency_independent_done_ns"]), (112 * US, 112 * US))
        # No recovery: strict 20 + 0 + 2 + 10 = 32 us, necessary max(22, 10) = 22 us.
        r = ordering_schedules(write_ns=20 * US, recovery_ns=0, notification_ns=2 * US, independent_ns=10 * US)
        self.assertEqual((r["strict_all_done_ns"], r["dependency_all_done_ns"]), (32 * US, 22 * US))

    def test_stale_read_witness(self):
        # Sample at 1 us before D is visible at 2 us: stale; the re-read after F (4 us) takes 2 us: 6 us, 12 B.
        w = stale_read(sample_ns=1000, data_visible_ns=2000, flag_visible_ns=3000, flag_read_ns=4000, response_ns=5000,
                       reread_ns=2000)
        self.assertEqual((w["response_order_only_valid"], w["validated_delivery_ns"], w["validated_read_bytes"]),
                         (False, 6000, 12))
        # A sample at the instant D becomes visible sees it: valid, delivered at the response, 5 us.
        w = stale_read(sample_ns=2000, data_visible_ns=2000, flag_visible_ns=3000, flag_read_ns=4000, response_ns=5000,
                       reread_ns=2000)
        self.assertEqual((w["response_order_only_valid"], w["validated_delivery_ns"]), (True, 5000))

    def test_command(self):
        r = budget("ordering", "--write", "20us", "--recovery", "80us", "--notification", "2us", "--independent", "10us",
                   "--read", "1us:2us:3us:4us:5us:2us", "--model", "qwen3-8b")
        self.assertEqual((r["transfer_bytes"], r["stale_read"]["reread_required"]), (8192, True))
        status, _, err = run_cli("budget", "ordering", "--write", "1us", "--recovery", "1us", "--notification", "1us",
                                 "--independent", "1us", "--read", "1us:3us:2us:4us:5us:1us")
        self.assertEqual(status, 2, err)


if __name__ == "__main__":
    unittest.main()

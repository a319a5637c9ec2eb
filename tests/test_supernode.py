"""`budget supernode`: one burst on fixed cards as TP x replicas, one fault, SLO and cost; small cases
derived by hand in the comments (times in ms, written as ns), and the book's published figures."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.supernode import candidate_schedule, cost, required_valid, serve_queue  # noqa: E402

MS = 10**6
STAGES = [20 * MS, 6 * MS, 6 * MS]   # a prefill and two decode steps: 32 ms a request


def completions(done):
    return [(q, t // MS, a) for q, t, a in done]


class Replicas(unittest.TestCase):
    def test_replicas_past_the_requests_are_not_walked(self):
        # 3 requests round-robin on 10^15 replicas: replicas 0, 1, 2 serve one each (32 ms), the rest nothing;
        # walking every replica took minutes at --cards 4294967296
        done, attempts, used = candidate_schedule(requests=3, replicas=10**15, stage_ns=STAGES, fault_ns=None,
                                                  recovery_ns=0)
        self.assertEqual([(d["request"], d["replica"], d["completion_ns"] // MS) for d in done],
                         [(0, 0, 32), (1, 1, 32), (2, 2, 32)])
        self.assertEqual((len(attempts), used), (3, False))


class Queue(unittest.TestCase):
    def test_no_fault_back_to_back(self):
        done, rows, used = serve_queue([0, 1], STAGES)
        self.assertEqual(completions(done), [(0, 32, 1), (1, 64, 1)])
        self.assertFalse(used)

    def test_fault_at_a_stage_end_restarts(self):
        # The docstring's case: the first decode ends at F = 26 (not the final stage): aborted with 2 stages done,
        # down until 36, restarted 36-68; request 1 runs 68-100.
        done, rows, used = serve_queue([0, 1], STAGES, 26 * MS, 10 * MS)
        self.assertEqual(completions(done), [(0, 68, 2), (1, 100, 1)])
        self.assertEqual((rows[0]["aborted"], rows[0]["completed_stages"], rows[0]["partial_stage_elapsed_ns"]),
                         (True, 2, None))
        self.assertEqual((rows[1]["start_ns"], rows[1]["end_ns"]), (36 * MS, 68 * MS))
        self.assertTrue(used)

    def test_fault_inside_a_stage_is_partial(self):
        # F = 23: the prefill (0-20) done, the first decode cut 3 ms in; restart at 23 + 10 = 33, done at 65.
        done, rows, _ = serve_queue([0], STAGES, 23 * MS, 10 * MS)
        self.assertEqual(completions(done), [(0, 65, 2)])
        self.assertEqual((rows[0]["completed_stages"], rows[0]["partial_stage_elapsed_ns"]), (1, 3 * MS))

    def test_completion_at_the_fault_commits_and_the_idle_replica_recovers(self):
        # Request 0 completes at 32 = F (commits first); request 1 would start at 32 >= F: it waits until 42 and
        # completes at 74. The fault was used (the fee applies).
        done, rows, used = serve_queue([0, 1], STAGES, 32 * MS, 10 * MS)
        self.assertEqual(completions(done), [(0, 32, 1), (1, 74, 1)])
        self.assertEqual([r["aborted"] for r in rows], [False, False])
        self.assertTrue(used)

    def test_fault_after_the_queue_is_not_used(self):
        done, _, used = serve_queue([0], STAGES, 40 * MS, 10 * MS)
        self.assertEqual(completions(done), [(0, 32, 1)])
        self.assertFalse(used)

    def test_fault_at_zero_delays_the_first_start(self):
        done, rows, used = serve_queue([0], STAGES, 0, 10 * MS)
        self.assertEqual(completions(done), [(0, 42, 1)])
        self.assertEqual(len(rows), 1)
        self.assertTrue(used)


class Rules(unittest.TestCase):
    def test_required_valid_is_a_ceiling(self):
        # ceil(3/4 N): N = 1 -> 1, 4 -> 3, 5 -> 15/4 -> 4, 8 -> 6.
        self.assertEqual([required_valid(n, Fraction(3, 4)) for n in (1, 4, 5, 8)], [1, 3, 4, 6])

    def test_cost_reserves_every_card(self):
        # 8 cards x 62 ms x 1 per card-second = 496/1000 = 62/125; the fee only when the fault was used.
        self.assertEqual(cost(cards=8, finish_ns=62 * MS, price_per_card_second=1, fault_used=False, recovery_fee=1),
                         (Fraction(62, 125), Fraction(62, 125)))
        self.assertEqual(cost(cards=8, finish_ns=312 * MS, price_per_card_second=1, fault_used=True,
                              recovery_fee=1)[1], Fraction(2496, 1000) + 1)


BOOK = ["--prompt", "256", "--outputs", "8", "--candidate", "8:20ms:6ms", "--candidate", "4:30ms:10ms",
        "--candidate", "2:48ms:16ms", "--card-memory", "24GB", "--reserve", "2GiB", "--price-per-card-second", "1",
        "--min-valid", "3/4"]


# The book's 32B times: twice the 8B ones (a declared factor, not a measured ratio).
BOOK_32B = [{"8:20ms:6ms": "8:40ms:12ms", "4:30ms:10ms": "4:60ms:20ms", "2:48ms:16ms": "2:96ms:32ms"}.get(a, a)
            for a in BOOK]


class Book(unittest.TestCase):
    """bojieli/ai-infra-book:calculations/results/supernode-qwen3-8b-n4-d250-short.md (fault 50 ms, recovery 20)."""

    @classmethod
    def setUpClass(cls):
        cls.r = budget_result("supernode", "--model", "qwen3-8b", "--requests", "4", "--deadline", "250ms",
                              "--fault-at", "50ms", "--recovery", "20ms", *BOOK)

    def test_candidate_table(self):
        rows = [(c["valid_requests"], c["finish_ns"] // MS, c["total_cost"], c["cost_per_valid_request"], c["eligible"])
                for c in self.r["candidates"]]
        self.assertEqual(rows, [(2, 318, "318/125", "159/125", False), (3, 270, "54/25", "18/25", True),
                                (4, 230, "46/25", "23/50", True)])
        self.assertEqual((self.r["required_valid_requests"], self.r["eligible"], self.r["min_cost_per_valid_request"],
                          self.r["winners"]), (3, ["tp4-replicas2", "tp2-replicas4"], "23/50", ["tp2-replicas4"]))

    def test_card_bytes(self):
        # KV of Qwen3-8B: 36 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 147,456 B a token; 263 tokens / TP 8.
        tp8 = self.r["candidates"][0]
        self.assertEqual(tp8["kv_bytes_per_card"], 147456 * 263 // 8)
        self.assertEqual(tp8["resident_bytes_per_card"], tp8["weight_bytes_per_card"] + 4847616 + 2 * 2**30)
        self.assertEqual(tp8["weight_bytes_per_card"], 2048223232)   # the book's placement card

    def test_stage_flops_and_abandoned_work(self):
        # Each decode step adds one key: QK^T and PV, 2 x 2 FLOPs x 32 heads x 128 x 36 layers = 589,824.
        f = [s["matrix_flops"] for s in self.r["stages"]]
        self.assertEqual({b - a for a, b in zip(f[1:], f[2:])}, {589824})
        self.assertEqual(f[:2], [3576880431104, 15287779328])
        # TP8's request 0 is cut at 50 = 20 + 5 x 6: the prefill and five decode steps abandoned.
        self.assertEqual(self.r["candidates"][0]["abandoned_completed_matrix_flops"], sum(f[:6]))
        self.assertEqual(sum(f[:6]), 3653325225984)


class BookCapacity(unittest.TestCase):
    def test_32b_tp2_does_not_fit_and_is_not_scheduled(self):
        # bojieli/ai-infra-book:calculations/results/supernode-qwen3-32b-n8-d600-healthy.md: TP2 fails capacity;
        # TP4's two replicas finish 8 x 100 ms = 800 ms with 6 of 8 valid: 64/10 / 6 = 16/15 wins.
        r = budget_result("supernode", "--model", "qwen3-32b", "--requests", "8", "--deadline", "600ms",
                          *BOOK_32B)
        tp8, tp4, tp2 = r["candidates"]
        self.assertEqual((tp2["fits"], tp2["finish_ns"], tp2["eligible"]), (False, None, False))
        self.assertGreater(tp2["resident_bytes_per_card"], 24 * 10**9)
        self.assertEqual((tp8["valid_requests"], tp8["finish_ns"] // MS, tp8["cost_per_valid_request"]),
                         (4, 992, "248/125"))
        self.assertEqual((tp4["valid_requests"], tp4["finish_ns"] // MS, tp4["total_cost"], r["winners"]),
                         (6, 800, "32/5", ["tp4-replicas2"]))


if __name__ == "__main__":
    unittest.main()

"""`budget rl-supply`: one RL batch's matrix work over declared pool rates; small cases derived by hand in
the comments, and the book's published figures (bojieli/ai-infra-book:calculations/results/rl-supply-*.md)."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.rl_supply import MATRIX_STAGES, rl_supply  # noqa: E402

T = 10**12


def run(flops=None, rates=None, verifier=("verifier", Fraction(1, 20), 8), candidates=32, speedups=None,
        sync_bytes=10**9):
    flops = flops or {s: 0 for s in MATRIX_STAGES}
    rates = rates or {s: ("gpu", Fraction(T)) for s in MATRIX_STAGES}
    return rl_supply(stage_flops=flops, rates=rates, verifier=verifier, sync_bytes=sync_bytes,
                     sync=("link", Fraction(10**9)), candidates=candidates, accepted=4, speedups=speedups or {})


def pools(r):
    return {p["pool"]: Fraction(p["demand_s_exact"]) for p in r["pools"]}


class Rules(unittest.TestCase):
    def test_stages_on_one_pool_add(self):
        # The docstring's case: prefill and update of 10^12 FLOPs each on one pool at 10^12 FLOPs/s: 2 s; the
        # sync of 10^9 B at 10^9 B/s 1 s; 32 candidates on 8 workers of 1/20 s: 4 rounds, 1/5 s.
        flops = dict.fromkeys(MATRIX_STAGES, 0)
        flops.update(rollout_prefill=T, policy_update=T)
        r = run(flops)
        self.assertEqual(pools(r), {"gpu": 2, "verifier": Fraction(1, 5), "link": 1})
        self.assertEqual((Fraction(r["serial_batch_s_exact"]), Fraction(r["ideal_pipeline_interval_s_exact"])),
                         (Fraction(16, 5), 2))
        self.assertEqual(r["limiting_pools"], ["gpu"])
        self.assertEqual(r["pipeline_accepted_per_s_upper"], 2.0)   # A = 4 over 2 s

    def test_verification_rounds_against_steady_demand(self):
        # 33 candidates on 8 workers of 1/20 s: steady 33/160 s, isolated ceil(33/8) = 5 rounds = 1/4 s.
        (row,) = [s for s in run(candidates=33)["stages"] if s["stage"] == "verification"]
        self.assertEqual((Fraction(row["steady_s_exact"]), Fraction(row["isolated_s_exact"])),
                         (Fraction(33, 160), Fraction(1, 4)))

    def test_a_pool_speedup_divides_its_stages(self):
        flops = dict.fromkeys(MATRIX_STAGES, T)
        r = run(flops, speedups={"gpu": Fraction(2)})
        self.assertEqual(pools(r)["gpu"], Fraction(5, 2))   # five stages of 1 s, twice as fast
        with self.assertRaises(ValueError):
            run(flops, speedups={"actor": Fraction(2)})


ARGS = ["--model", "qwen3-8b", "--prompt-tokens", "1024", "--output-tokens", "256", "--prompts", "8",
        "--samples-per-prompt", "4", "--accepted", "16", "--rate", "rollout-prefill=actor:200T",
        "--rate", "rollout-decode=actor:20T", "--rate", "reference-scoring=reference:200T",
        "--rate", "teacher-scoring=teacher:200T", "--rate", "policy-update=learner:200T",
        "--verifier", "verifier:50ms:8", "--sync", "weight_link:50GB/s"]


class Book(unittest.TestCase):
    """rl-supply-base and -double-actor: the book's printed seconds."""

    def test_base(self):
        r = budget_result("rl-supply", *ARGS)
        # The cycle's four matrix stages are the ch. 3 RL cycle's 2181.558727 TFLOPs (rl-qwen8-base).
        work = sum(r[f"{s}_matrix_flops"] for s in MATRIX_STAGES)
        self.assertEqual(round(work / T, 6), 2181.558727)
        self.assertEqual(r["weight_sync_bytes"], 2 * 8190735360)   # BF16 Qwen3-8B, one replica
        self.assertEqual(["%.9f" % Fraction(s["steady_s_exact"]) for s in r["stages"]],
                         ["2.325714557", "6.452794098", "3.174719868", "0.000000000", "4.762079802", "0.200000000",
                          "0.327629414"])
        self.assertEqual((r["serial_batch_s"], r["ideal_pipeline_interval_s"], r["limiting_pools"]),
                         (17.24293773901824, 8.77850865434624, ["actor"]))

    def test_double_actor_moves_the_limit_to_the_learner(self):
        r = budget_result("rl-supply", *ARGS, "--speedup", "actor=2")
        self.assertEqual((r["serial_batch_s"], r["ideal_pipeline_interval_s"], r["limiting_pools"]),
                         (12.85368341184512, 4.7620798021632, ["learner"]))


if __name__ == "__main__":
    unittest.main()

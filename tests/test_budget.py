"""`budget`: a nominal dense model's decode, transfer and training budgets, Little's-law memory
concurrency and checkpoint intervals; every expected value derived by hand in its comment."""

import json
import math
import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses import checkpoint, concurrency, nominal  # noqa: E402


def budget(*argv):
    status, out, err = run_cli("budget", *argv, "--format", "json")
    assert status == 0, err
    return json.loads(out)


class NominalDecode(unittest.TestCase):
    def test_by_hand(self):
        # N = 7e10 at 8 bits: W = 7e10 B; F = 2 N = 1.4e11 FLOPs; at 989.4e12 FLOP/s and 3.35e12 B/s:
        # compute 1.4e11 / 9.894e14 s, memory 7e10 / 3.35e12 = 0.0208955... s; crossover
        # ceil(W / (2N x 3.35e12 / 9.894e14)) = ceil(989.4 / 6.7) = ceil(147.67) = 148.
        r = nominal.decode_budget(params=70 * 10**9, weight_bits=8, batch=1, kv_history_bytes=0, kv_append_bytes=0,
                                  metadata_bytes=0, workspace_bytes=0, peak=989_400_000_000_000,
                                  bandwidth=3_350_000_000_000, capacity=80 * 10**9)
        self.assertEqual((r["matrix_flops"], r["weight_bytes"], r["crossover_batch"]), (140 * 10**9, 70 * 10**9, 148))
        self.assertAlmostEqual(r["compute_s"], 1.4e11 / 9.894e14, places=15)
        self.assertAlmostEqual(r["memory_s"], 7e10 / 3.35e12, places=15)
        self.assertEqual(r["bound"], "memory")
        self.assertTrue(r["fits"])

    def test_kv_that_outweighs_compute_never_crosses(self):
        # 64 requests of 1 GiB history each: 2N x B/P = 1.4e11 x 3.35 / 989.4 = 4.74e8 B < 2^30 per
        # request, so no batch is compute-bound; resident 7e10 + 64 x 2^30 = 138,719,476,736 > 8e10.
        r = nominal.decode_budget(params=70 * 10**9, weight_bits=8, batch=64, kv_history_bytes=2**30,
                                  kv_append_bytes=0, metadata_bytes=0, workspace_bytes=0,
                                  peak=989_400_000_000_000, bandwidth=3_350_000_000_000, capacity=80 * 10**9)
        self.assertIsNone(r["crossover_batch"])
        self.assertEqual(r["resident_bytes"], 138_719_476_736)
        self.assertFalse(r["fits"])
        self.assertIsNone(r["tokens_per_s_upper"])

    def test_weight_bytes_round_up(self):
        self.assertEqual(nominal.weight_bytes(3, 4), 2)    # 12 bits -> 2 bytes
        self.assertEqual(nominal.weight_bytes(7 * 10**10, 16), 14 * 10**10)

    def test_declared_peak_on_the_command_line(self):
        d = budget("decode", "--params", "70B", "--weight-bits", "8", "--matrix-peak", "bf16=1978.8T")
        self.assertEqual(d["device"]["bf16_matrix_flops_per_s"], 1_978_800_000_000_000)
        self.assertEqual(d["result"]["crossover_batch"], 296)   # ceil(1978.8 / 6.7) = ceil(295.34)


class NominalTransfer(unittest.TestCase):
    def test_serial_transfer(self):
        # 70B at 16 bits = 1.4e11 B on two 8e10 B cards, all on card 0: the pair holds it (1.6e11), card 0
        # does not; 3 us + 1.4e11 / 5e10 = 2.800003 s; crossover 3e-6 x 5e10 = 150,000 B.
        r = nominal.transfer_budget(params=70 * 10**9, weight_bits=16, shards=(70 * 10**9, 0),
                                    card_capacity=80 * 10**9, payload_bytes=140 * 10**9,
                                    link_bandwidth=50e9, link_efficiency=1.0, startup_s=3e-6, messages=1)
        self.assertTrue(r["aggregate_fits"])
        self.assertFalse(r["every_card_fits"])
        self.assertEqual(r["cards"][0]["left_bytes"], -60 * 10**9)
        self.assertAlmostEqual(r["serial_transfer_s"], 2.800003, places=12)
        self.assertAlmostEqual(r["startup_bandwidth_crossover_bytes"], 150_000, places=6)

    def test_shards_must_sum(self):
        status, _, err = run_cli("budget", "transfer", "--params", "70B", "--cards", "2", "--card-memory", "80GB",
                                 "--shards", "1,2", "--link-bw", "50GB/s")
        self.assertEqual(status, 2)
        self.assertIn("summing to --params", err)


class NominalTraining(unittest.TestCase):
    def test_fixed_tokens(self):
        # 6ND = 6 x 1e12 x 2e13 = 1.2e26; rate 989.4e12 x 3/10 = 2.9682e14; 90 days = 7,776,000 s:
        # ceil(1.2e26 / (2.9682e14 x 7.776e6)) = ceil(51991.6) = 51992 devices; the state 16 x 1e12 B
        # on 8e10 B: 200; on 16,384 devices: 1.2e26 / (16384 x 2.9682e14) / 86400 = 285.5975 days; the
        # largest N: 16384 x 2.9682e14 x 7.776e6 / (6 x 2e13) = 315,128,807,424 exactly.
        r = nominal.training_scale(params=10**12, tokens=2 * 10**13, tokens_per_param=None,
                                   peak=989_400_000_000_000, efficiency=Fraction(3, 10), deadline_days=90,
                                   unavailable_days=0, cards=16384, state_bytes_per_param=16, capacity=80 * 10**9)
        self.assertEqual((r["compute_cards"], r["capacity_cards"], r["needed_cards"]), (51992, 200, 51992))
        self.assertEqual(r["compute_params_bound"], 315_128_807_424)
        self.assertEqual(r["capacity_params_bound"], 16384 * 80 * 10**9 // 16)
        self.assertAlmostEqual(r["training_days_on_cards"], 1.2e26 / (16384 * 2.9682e14) / 86400, places=9)

    def test_tokens_proportional_to_params(self):
        # rate 100 FLOP/s, one device, one day: budget 8,640,000 FLOPs = 6 k N^2 with k = 1 ->
        # N <= sqrt(1,440,000) = 1200 exactly (1201 would need 6 x 1201^2 = 8,654,406).
        r = nominal.training_scale(params=1000, tokens=None, tokens_per_param=1, peak=100, efficiency=1,
                                   deadline_days=1, unavailable_days=0, cards=1, state_bytes_per_param=16,
                                   capacity=10**6)
        self.assertEqual(r["compute_params_bound"], 1200)
        self.assertEqual(r["work_flops"], 6 * 1000 * 1000)

    def test_unavailable_days_shorten_the_deadline(self):
        # 30 of 90 days lost: the devices for 90 days with 60 useful, = those for 60 days.
        a = nominal.training_scale(params=10**12, tokens=2 * 10**13, tokens_per_param=None, peak=312 * 10**12,
                                   efficiency=Fraction(3, 10), deadline_days=90, unavailable_days=30, cards=16384,
                                   state_bytes_per_param=16, capacity=80 * 10**9)
        b = nominal.training_scale(params=10**12, tokens=2 * 10**13, tokens_per_param=None, peak=312 * 10**12,
                                   efficiency=Fraction(3, 10), deadline_days=60, unavailable_days=0, cards=16384,
                                   state_bytes_per_param=16, capacity=80 * 10**9)
        self.assertEqual(a["compute_cards"], b["compute_cards"])
        self.assertEqual(a["compute_cards"], 247310)   # 1.2e26 / (9.36e13 x 5,184,000) = 247,310.0 exactly


class LittlesLaw(unittest.TestCase):
    def test_transaction_window(self):
        # 128 transactions of 128 B at 500 ns: 16,384 B / 5e-7 s = 3.2768e10 B/s < 1e12; window for the
        # interface 1e12 x 5e-7 = 500,000 B = ceil(3906.25) = 3907 transactions; 1,207,959,552 B takes
        # 1,207,959,552 / 3.2768e10 = 0.036864 s.
        r = concurrency.memory_window(payload_bytes=1_207_959_552, bandwidth=10**12, latency_ns=500,
                                      transaction_bytes=128, transactions=128)
        self.assertEqual(r["effective_bandwidth_bytes_per_s"], 32_768_000_000)
        self.assertEqual(r["limiters"], ["transaction_window"])
        self.assertEqual(r["required_transactions"], 3907)
        self.assertAlmostEqual(r["service_lower_bound_s"], 0.036864, places=15)

    def test_serial_service_and_active(self):
        # 256 B every 100 ns = 2.56e9 B/s binds below 128 x 256 / 2 us = 1.6384e10 and 5e10; one active
        # transaction: 256 / 2 us = 1.28e8 B/s; the window for 5e10 B/s: 1e5 B = 390.6 -> 391.
        r = concurrency.memory_window(payload_bytes=1000, bandwidth=5 * 10**10, latency_ns=2000, transaction_bytes=256,
                                      transactions=128, service_interval_ns=100)
        self.assertEqual((r["effective_bandwidth_bytes_per_s"], r["limiters"]), (2.56e9, ["serial_service"]))
        self.assertEqual(r["required_transactions"], 391)
        self.assertEqual(r["service_lower_bound_s"], 2e-6)   # 1000 B / 2.56e9 = 0.39 us < one latency
        r = concurrency.memory_window(payload_bytes=1000, bandwidth=5 * 10**10, latency_ns=2000, transaction_bytes=256,
                                      transactions=128, active=1)
        self.assertEqual(r["effective_bandwidth_bytes_per_s"], 1.28e8)

    def test_payload_is_the_ledgers_kv(self):
        # qwen3-8b at 8192 tokens: 36 layers x 2 x 8 KV heads x 128 x 2 B x 8192 = 1,207,959,552 B per request.
        d = budget("window", "--model", "qwen3-8b", "--context", "8192", "--batch", "2", "--bandwidth", "1TB/s",
                   "--latency", "500ns", "--transaction-bytes", "128", "--transactions", "128")
        self.assertEqual(d["result"]["payload_bytes"], 2 * 1_207_959_552)
        status, _, err = run_cli("budget", "window", "--bandwidth", "1TB/s", "--latency", "500ns",
                                 "--transaction-bytes", "128", "--transactions", "128")
        self.assertEqual(status, 2)


class CheckpointInterval(unittest.TestCase):
    def test_young_and_poisson(self):
        # qwen3-8b: 8,190,735,360 params x 16 B = 131,051,765,760 B; at 8e9 B/s c = 16.38147072 s; job MTBF
        # 28,440 s: Young sqrt(2 x 16.38147072 x 28440) = 965.28651... s.
        d = budget("checkpoint", "--model", "qwen3-8b", "--write-bandwidth", "8GB/s", "--job-mtbf", "28440s")["result"]
        self.assertEqual(d["payload_bytes"], 131_051_765_760)
        self.assertEqual(d["save_cost_s"], 16.38147072)
        self.assertAlmostEqual(d["young_interval_s"], math.sqrt(2 * 16.38147072 * 28440), places=9)
        # the Poisson optimum solves y - 1 + exp(-y - lambda c) = 0, y = lambda tau, and is the best tau / E
        rate, c, tau = 1 / 28440, 16.38147072, d["poisson_interval_s"]
        y = rate * tau
        self.assertAlmostEqual(y - 1 + math.exp(-y - rate * c), 0, places=14)
        share = lambda t: t / math.expm1(rate * (t + c))  # noqa: E731  (tau / E up to the factor 1/lambda + r)
        self.assertGreater(share(tau), share(tau - 1))
        self.assertGreater(share(tau), share(tau + 1))

    def test_failure_rate(self):
        # 1024 devices of 365 d: 1024 / 31,536,000 s; plus a 1 d job shock: + 1 / 86,400.
        self.assertEqual(checkpoint.failure_rate(1024, 31_536_000), Fraction(1024, 31_536_000))
        self.assertEqual(checkpoint.failure_rate(1, 28440, 86400), Fraction(1, 28440) + Fraction(1, 86400))
        self.assertEqual(checkpoint.failure_rate(1, None), 0)

    def test_no_failures_no_optimum(self):
        r = checkpoint.interval(payload=8 * 10**9, write_bandwidth=8 * 10**9, rate=Fraction(0), recovery_s=0,
                                candidates=(60,))
        self.assertIsNone(r["young_interval_s"])
        self.assertIsNone(r["poisson_interval_s"])
        self.assertEqual(r["candidates"][0]["poisson_round_s"], 61.0)   # tau + c without failures

    def test_first_order_loss(self):
        # tau 900, c 16, lambda 1/28800, r 0: 16/900 + 900 / 57600 = 0.017778 + 0.015625
        r = checkpoint.interval(payload=16, write_bandwidth=1, rate=Fraction(1, 28800), recovery_s=0,
                                candidates=(900,))
        self.assertAlmostEqual(r["candidates"][0]["first_order_loss"], 16 / 900 + 900 / 57600, places=15)
        # exactly 4/225 + 1/64 = (256 + 225) / 14400 = 481/14400
        self.assertEqual(r["candidates"][0]["first_order_loss_exact"], "481/14400")
        self.assertEqual((r["save_cost_s_exact"], r["failure_rate_per_s_exact"]), ("16", "1/28800"))

    def test_restart_cost(self):
        # A failure loses half the round's useful work on average: tau 900 -> 450 s lost; with r 120 s the
        # restart costs 450 + 120 = 570 s; the loss adds lambda r = 120 / 28800 = 1/240: 481/14400 + 60/14400.
        r = checkpoint.interval(payload=16, write_bandwidth=1, rate=Fraction(1, 28800), recovery_s=Fraction(120),
                                candidates=(900,))["candidates"][0]
        self.assertEqual((r["expected_lost_work_s"], r["restart_cost_s"]), (450.0, 570.0))
        self.assertEqual(r["first_order_loss_exact"], "541/14400")


if __name__ == "__main__":
    unittest.main()

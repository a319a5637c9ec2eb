"""`serve`: the schedulers on a 2-layer toy model derived by hand, queueing by hand, the SLO
sizing, and the command's contract."""

import json
import unittest

from support import load_model, run_cli, write_config
from infracalc.analyses.roofline import Roof
from infracalc.analyses.serve import batching, iteration, queueing
from infracalc.workload import Workload

# A 2-layer Llama: hidden 8, 2 query heads of 4 sharing 1 KV head, MLP 16, vocabulary 10,
# untied head. Matrix FLOPs by hand (a multiply-add is 2 FLOPs):
# - linear per token and layer: q 8x8 + k 8x4 + v 8x4 + o 8x8 + gate, up, down 3 x 8x16
#   = 64 + 32 + 32 + 64 + 384 = 576 weights -> 1,152 FLOPs; 2 layers: 2,304 per token;
# - head on the last position: 2 x 8 x 10 = 160 per sequence;
# - attention per query-key pair and layer: 2 heads x (QK^T 2 x 4 + PV 2 x 4) = 32; 2 layers: 64.
TOY = {"model_type": "llama", "hidden_size": 8, "intermediate_size": 16, "num_attention_heads": 2,
       "num_key_value_heads": 1, "head_dim": 4, "num_hidden_layers": 2, "vocab_size": 10,
       "max_position_embeddings": 64, "tie_word_embeddings": False}
P, G = 4, 3
# prefill of P = 4: 4 x 2,304 + 160 + 64 x (4 x 5 / 2 = 10 pairs) = 10,016
PREFILL = 4 * 2304 + 160 + 64 * 10
# G - 1 = 2 decode steps at histories 4 and 5: 2 x (2,304 + 160) + 64 x (5 + 6 pairs) = 5,632
DECODE = 2 * (2304 + 160) + 64 * (5 + 6)
# Compute-bound roof: matrix 1e12 FLOP/s; vector peak and bandwidth so large that their
# time vanishes beside it (1e30): every time is matrix FLOPs / 1e12.
ROOF = Roof(1e12, 1e30, 1e30)


def toy(test):
    return load_model(write_config(test, TOY))


class ToyIterations(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.parts = iteration.Parts(load_model(write_config(cls, TOY)), Workload(), P, G)

    @classmethod
    def addCleanup(cls, *args):   # write_config's cleanup, at class level
        cls._cleanups = getattr(cls, "_cleanups", []) + [args]

    @classmethod
    def tearDownClass(cls):
        for f, *a in cls._cleanups:
            f(*a)

    def test_request_work_by_hand(self):
        self.assertEqual(PREFILL, 10_016)
        self.assertEqual(DECODE, 5_632)
        pre = iteration.totals(self.parts.prefill)[0]
        dec = iteration.totals(self.parts.decode)[0]
        self.assertEqual((pre, dec), (PREFILL, DECODE))

    def test_weights_read_once_per_iteration(self):
        # the weights of an iteration do not scale with the prompts it carries: 1,152 B of
        # linear weights per layer... the ledger's weight reads at the iteration's token count
        one = iteration.work_record(self.parts.mix(1, 2, 6))["weight_bytes_read"]
        two = iteration.work_record(self.parts.mix(2, 2, 6))["weight_bytes_read"]
        self.assertEqual(one, two)
        # 2 layers x (576 x 2 B of matrices + 2 norms x 8 x 2 B) + final norm 16 B + head
        # 80 x 2 B + 6 embedding rows of 8 x 2 B = 2,368 + 16 + 160 + 96
        self.assertEqual(one, 2 * (576 * 2 + 32) + 16 + 160 + 6 * 16)

    def test_chunked_by_hand(self):
        # T = 6, N = 4, memory unbounded: d = min(4, T (G - 1) / (P + G - 1) = 6 x 2 / 6 = 2) = 2
        # decoding, rho = d / (G - 1) = 1 prompt per iteration; the mean iteration is one
        # request's whole work: 15,648 FLOPs = 15.648 ns.
        row = batching.chunked(self.parts, ROOF, 4, None, 6, 0)
        self.assertEqual(row["concurrency"], 2)
        self.assertEqual(row["limited_by"], "--max-batched-tokens")
        t = (PREFILL + DECODE) / 1e12
        for kind in ("lower_bound", "estimate"):
            self.assertAlmostEqual(row["iteration_s"][kind] / t, 1, places=12)
            self.assertAlmostEqual(row["requests_per_s"][kind] * t, 1, places=12)
            self.assertAlmostEqual(row["output_tokens_per_s"][kind] * t, G, places=12)
            # k = ceil(4 / (6 - 2)) = 1 chunk: TTFT = one iteration carrying the whole prompt
            self.assertAlmostEqual(row["ttft_s"][kind] / t, 1, places=12)

    def test_continuous_by_hand(self):
        # d = N = 4 decoding; rho = 4 / 2 = 2 prompts per decode iteration; the decode
        # iteration is 4 mean steps = 2 x 5,632 = 11,264 FLOPs; cycle = 11,264 + 2 x 10,016
        # = 31,296: requests/s = 2 / 31.296 ns; TPOT = the cycle; max ITL = step + 2 prefills
        row = batching.continuous(self.parts, ROOF, 4, None, 6, 0)
        cycle = (2 * DECODE + 2 * PREFILL) / 1e12
        self.assertAlmostEqual(row["requests_per_s"]["lower_bound"] * cycle, 2, places=12)
        self.assertAlmostEqual(row["tpot_s"]["estimate"] / cycle, 1, places=12)
        self.assertAlmostEqual(row["max_itl_s"]["estimate"] / cycle, 1, places=12)
        self.assertAlmostEqual(row["ttft_s"]["estimate"] * 1e12 / PREFILL, 1, places=12)

    def test_continuous_refuses_a_prompt_over_the_budget(self):
        row = batching.continuous(self.parts, ROOF, 4, None, 3, 0)
        self.assertIn("exceeds --max-batched-tokens 3", row["refused"])

    def test_fixed_by_hand(self):
        # B = min(N = 4, 3 that fit at the final length) = 3: prefill of 3 prompts 30,048,
        # mean step 3 x 5,632 / 2 = 8,448; cycle 30,048 + 2 x 8,448 = 46,944 FLOPs;
        # last step (history 5, batch 3): 3 x (2,304 + 160) + 3 x 64 x 6 = 8,544
        row = batching.fixed(self.parts, ROOF, 4, 3, 100, P + G - 2)
        self.assertEqual(row["concurrency"], 3)
        self.assertAlmostEqual(row["requests_per_s"]["estimate"] * 46_944e-12, 3, places=12)
        self.assertAlmostEqual(row["ttft_s"]["lower_bound"] / 30_048e-12, 1, places=12)
        self.assertAlmostEqual(row["tpot_s"]["lower_bound"] / 8_448e-12, 1, places=12)
        self.assertAlmostEqual(row["max_itl_s"]["lower_bound"] / 8_544e-12, 1, places=12)
        self.assertEqual(row["kv_peak_bytes"], 300)

    def test_memory_side_bound_weighs_unique_bytes(self):
        # bandwidth 1 B/s, compute free: the lower bound of the chunked mean iteration is its
        # weights (read once) + KV read and written, in seconds
        roof = Roof(1e30, 1e30, 1.0)
        row = batching.chunked(self.parts, roof, 4, None, 6, 0)
        w = iteration.work_record(self.parts.mix(1, 2, 6))   # 2 decode + 4 prompt tokens
        self.assertAlmostEqual(row["iteration_s"]["lower_bound"],
                               w["weight_bytes_read"] + w["kv_bytes_read"] + w["kv_bytes_written"])
        # the estimate counts activations too, operator by operator: never below the bound
        self.assertGreater(row["iteration_s"]["estimate"], row["iteration_s"]["lower_bound"])


class Queueing(unittest.TestCase):
    def test_md1_by_hand(self):
        # mu = 10/s, rate 5/s: rho = 1/2, Wq = rho / (2 mu (1 - rho)) = 0.5 / 10 = 0.05 s
        self.assertAlmostEqual(queueing.wait_s(5, 10), 0.05)
        # M/G/1 with c^2 = 1 (M/M/1): twice the M/D/1 wait
        self.assertAlmostEqual(queueing.wait_s(5, 10, 1.0), 0.1)
        self.assertIsNone(queueing.wait_s(10, 10))

    def test_breaking_rate_by_hand(self):
        # TTFT 0.1 s, limit 0.2 s: slack 0.1 = rho / (20 (1 - rho)) -> rho = 2/3, rate 20/3
        self.assertAlmostEqual(queueing.breaking_rate(10, 0.1, 0.2), 20 / 3)
        self.assertAlmostEqual(queueing.wait_s(20 / 3, 10), 0.1)
        self.assertEqual(queueing.breaking_rate(10, 0.3, 0.2), 0.0)

    def test_littles_law(self):
        q = queueing.load(5, 10, 0.1, 1.0)
        self.assertAlmostEqual(q["requests_in_system"], 5 * (0.05 + 1.0))
        self.assertAlmostEqual(q["utilisation"], 0.5)


class SloCommand(unittest.TestCase):
    def test_fewest_h100s_for_llama_70b(self):
        # Llama-3.1-70B in BF16 is 141,107,412,992 B of weights: one 80 GB H100 cannot hold
        # them (short by 64,138,684,006 B after the 10% reserve); two hold them and meet
        # TPOT <= 50 ms and TTFT <= 2 s under TP 2.
        status, out, err = run_cli("serve", "--model", "llama-3.1-70b", "--input-len", "2048",
                                   "--output-len", "256", "--tpot-limit", "50ms", "--ttft-limit", "2s",
                                   "--format", "json")
        self.assertEqual(status, 0, err)
        rec = json.loads(out)
        a = rec["sizing"]["answer"]
        self.assertEqual((a["devices"], a["layout"]), (2, "tp2"))
        self.assertLessEqual(a["tpot_s"], 0.05)
        self.assertLessEqual(a["ttft_s"], 2.0)
        self.assertLessEqual(a["lower_bound"]["tpot_s"], a["tpot_s"])
        one = rec["sizing"]["counts"][0]
        self.assertFalse(one["meets"])
        self.assertIn("does not fit", one["why"])
        self.assertIn("64,138,684,006", one["why"])
        # 85,520,809,984 B - 8,552,080,998 B reserve - 141,107,412,992 B = -64,138,684,006
        self.assertEqual(85_520_809_984 - 85_520_809_984 // 10 - 141_107_412_992, -64_138_684_006)

    def test_bare_number_refused(self):
        status, _, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "16", "--output-len", "4",
                                 "--tpot-limit", "50")
        self.assertEqual(status, 2)
        self.assertIn("needs a unit", err)
        self.assertEqual(err.count("\n"), 1)

    def test_markdown_first_screen_gives_the_answer(self):
        status, out, _ = run_cli("serve", "--model", "llama-3.1-70b", "--input-len", "2048",
                                 "--output-len", "256", "--tpot-limit", "50ms", "--ttft-limit", "2s")
        self.assertEqual(status, 0)
        head = "\n".join(out.split("\n")[:16])
        self.assertIn("**2 devices**: layout tp2", head)
        self.assertIn("does not fit", head)


if __name__ == "__main__":
    unittest.main()

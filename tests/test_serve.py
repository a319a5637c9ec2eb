"""`serve`: the schedulers on a 2-layer toy model derived by hand, queueing by hand, the SLO
sizing, and the command's contract."""

import json
from fractions import Fraction
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

    def test_dense_weight_rows_affine_in_tokens(self):
        # a dense pass reads its weights once and one embedding row per token: the rows at n
        # tokens (taken from those at 1 and 2) equal the ledger's own at n
        from infracalc import ledger
        for n in (3, 7, 10):   # up to the toy's vocabulary of 10
            ops = ledger.operators(self.parts.arch, self.parts.one.replace(batch=n, history=P))
            self.assertEqual(self.parts.weights(n), {iteration._key(o): o.weight_read for o in ops})

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


class PrefixCache(unittest.TestCase):
    def test_saved_work_is_the_books_ledger_difference(self):
        # Qwen3-8B, 8,192-token prompts of which 6,144 are cached: the prefill of 8,192 tokens is
        # 133,594,323,353,600 matrix FLOPs and 2,048 after 6,144 cached 37,110,366,076,928 (the
        # book's qwen3-8b-prefill-8192 and qwen3-8b-prefix-6144-plus-2048); the KV not rewritten
        # is 6,144 x 147,456 B, which the prefix holds once
        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "256",
                                   "--cached-prefix", "6144", "--format", "json")
        self.assertEqual(status, 0, err)
        pc = json.loads(out)["prefix_cache"]
        self.assertEqual(pc["prefill_matrix_flops_saved_per_request"], 133_594_323_353_600 - 37_110_366_076_928)
        self.assertEqual(pc["kv_bytes_written_saved_per_request"], 6144 * 147_456)
        self.assertEqual(pc["prefix_cache_bytes"], 6144 * 147_456)
        for kind in ("lower_bound", "estimate"):
            self.assertGreater(pc["chunked_requests_per_s"][kind], pc["chunked_requests_per_s_without_prefix"][kind])


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


class Pools(unittest.TestCase):
    """The book's pd-pool group (bojieli/ai-infra-book:calculations/results/pd-pool-book.md and
    pd-pool-prefix.md): Qwen3-8B, 8,192-token prompts, 129 outputs, two declared worker types
    (4 x 16,384 prefill tok/s + 64 decode calls/s, 4 x 4,096 + 256), a 25 GB/s network."""

    WORKERS = ("--worker", "prefill-oriented:4:16384:64", "--worker", "decode-oriented:4:4096:256")

    def run_pd(self, *extra):
        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "129",
                                   *self.WORKERS, "--network-bw", "25GB/s", "--rate", "4", "--format", "json",
                                   *extra)
        self.assertEqual(status, 0, err)
        return json.loads(out)["workers"]

    def test_book_pd_pool(self):
        p = self.run_pd()
        # by hand: a prefill-oriented worker prefills 8,192 tokens in 1/2 s and decodes 128 calls
        # in 2 s; the other the reverse. All 4 + 0 prefilling and 0 + 4 decoding: P = 4 x 16,384
        # / 8,192 = 8, D = 4 x 256 / 128 = 8 requests/s; co-located each worker 1 / (1/2 + 2) =
        # 2/5, eight of them 16/5; network 25e9 / 1,207,959,552 = 48828125/2359296
        self.assertEqual(p["assignments"], 25)
        self.assertEqual(p["best_requests_per_s_exact"], "8")
        self.assertEqual(p["best"]["prefill_workers"], {"prefill-oriented": 4, "decode-oriented": 0})
        self.assertEqual(p["best"]["limited_by"], ["prefill", "decode"])
        self.assertEqual(p["colocated_requests_per_s_exact"], "16/5")
        self.assertEqual(p["pd_to_colocated_exact"], "5/2")
        self.assertEqual(p["network_requests_per_s_exact"], "48828125/2359296")
        self.assertEqual((p["arrival_below_best_pd"], p["arrival_below_colocated"]), (True, False))

    def test_pool_handoff_in_another_models_kv_layout(self):
        # the handoff is DeepSeek-V3's compact MLA cache of 8,192 tokens, 575,668,224 B: the network
        # carries 25e9 / 575,668,224 = 48828125/1124352 requests/s; the pools' rates do not move
        p = self.run_pd("--handoff-kv-model", "deepseek-v3")
        self.assertEqual(p["handoff_bytes_per_request"], 575_668_224)
        self.assertEqual(p["network_requests_per_s_exact"], "48828125/1124352")
        self.assertEqual(p["best_requests_per_s_exact"], "8")

    def test_book_pd_pool_prefix(self):
        # 6,144 cached tokens: 2,048 new; best P {2, 0}, D {2, 4}: P = 2 x 16,384 / 2,048 = 16,
        # D = (2 x 64 + 4 x 256) / 128 = 9; co-located 4 / (1/8 + 2) + 4 / (1/2 + 1/2) = 100/17
        p = self.run_pd("--cached-prefix", "6144")
        self.assertEqual(p["best_requests_per_s_exact"], "9")
        self.assertEqual(p["best"]["decode_workers"], {"prefill-oriented": 2, "decode-oriented": 4})
        self.assertEqual(p["colocated_requests_per_s_exact"], "100/17")
        self.assertEqual(p["pd_to_colocated_exact"], "153/100")
        # the handoff still carries the whole prompt's cache
        self.assertEqual(p["handoff_bytes_per_request"], 1_207_959_552)

    def test_stage_bound_rates_by_hand(self):
        """--decode-batch rates a device by the lower bound of one pass of each stage. Qwen3-8B,
        P = 8,192, G = 1,025, B = 32, on the A100 (312 TFLOP/s, 2,039 GB/s) at efficiency 1/2:
        - decode step at history 8,192 + 1,024 // 2 = 8,704 (new K/V kept on chip): weights read
          = every weight but the embedding table, 2 x (8,190,735,360 - 151,936 x 4,096) B, plus
          32 embedding rows of 4,096 x 2 B; KV = 32 x 8,705 keys x 147,456 B; memory-bound, so
          decode calls/s = 32 / (bytes / (2,039e9 / 2));
        - prefill: the 8,192-token pass is compute-bound at the book's 133,594,323,353,600
          matrix FLOPs (bojieli/ai-infra-book chapter-9 verification): tokens/s = 8,192 / (that /
          156e12)."""
        from fractions import Fraction

        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "1025",
                                   "--worker", "A100:1:a100-sxm-80gb", "--decode-batch", "32",
                                   "--new-kv", "on-chip", "--compute-efficiency", "0.5",
                                   "--memory-efficiency", "0.5", "--format", "json")
        self.assertEqual(status, 0, err)
        p = json.loads(out)["workers"]
        weights = 2 * (8_190_735_360 - 151_936 * 4096) + 32 * 4096 * 2
        kv = 32 * 8705 * 147_456
        step = p["stage_bounds"][0]["decode_step"]
        self.assertEqual((step["history"], step["unique_bytes"]), (8704, weights + kv))
        w = p["workers"][0]
        self.assertEqual(Fraction(w["decode_tokens_per_s_exact"]), 32 / (Fraction(weights + kv) / (2039 * 10**9 // 2)))
        self.assertEqual(Fraction(w["prefill_tokens_per_s_exact"]), 8192 / Fraction(133_594_323_353_600, 156 * 10**12))

    def test_book_pd_pool_derived_rates(self):
        """The index's pd-pool rows (bojieli/ai-infra-book:calculations/results/README.md): four
        A100 and four H20 (148 TFLOP/s, the book's 4,096 GB/s) rated at half their peaks, decode
        steps of 32 requests, 25 GB/s shared: best and co-located requests/s, exact."""
        import os

        h20 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "calculations", "results", "book",
                           "devices", "h20-4096gbs.json")
        cases = [  # (output tokens, extra, best, co-located, best prefill split)
            (1025, (), "125000000/27447469", "23814473165145361328125/7894003424232391199952",
             {"A100": 4, "H20": 0}),
            (1025, ("--cached-prefix", "6144"), "19982421875/3513276032",
             "256487948263131103515625/52380045623862003966864", {"A100": 2, "H20": 0}),
            (129, (), "4130859375/652316032", "107017375648195361328125/18336603070164270072616",
             {"A100": 4, "H20": 3}),
            (1, (), "1123046875/163079008", "1123046875/163079008", {"A100": 4, "H20": 4}),
        ]
        for g, extra, best, co, split in cases:
            with self.subTest(output=g, extra=extra):
                status, out, err = run_cli(
                    "serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", str(g),
                    "--worker", "A100:4:a100-sxm-80gb", "--worker", f"H20:4:{h20}", "--decode-batch", "32",
                    "--new-kv", "on-chip", "--compute-efficiency", "0.5", "--memory-efficiency", "0.5",
                    "--network-bw", "25GB/s", "--rate", "3.5", "--format", "json", *extra)
                self.assertEqual(status, 0, err)
                p = json.loads(out)["workers"]
                self.assertEqual((p["best_requests_per_s_exact"], p["colocated_requests_per_s_exact"]), (best, co))
                self.assertEqual(p["best"]["prefill_workers"], split)

    def test_handoff_bytes_equal_kv_per_request(self):
        status, out, _ = run_cli("kv", "--model", "qwen3-8b", "--context", "8192", "--format", "json")
        kv = json.loads(out)["sizing"]["bytes_per_request"]
        self.assertEqual(self.run_pd()["handoff_bytes_per_request"], kv)
        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "129",
                                   "--prefill-device", "a100-sxm-80gb", "--decode-device", "h20", "--rate", "3.5",
                                   "--format", "json")
        self.assertEqual(status, 0, err)
        pd = json.loads(out)["pd"]
        self.assertEqual(pd["handoff"]["bytes"], kv)
        # 36 layers x 2 x 8 KV heads x 128 x 2 B = 147,456 B per token, x 8,192
        self.assertEqual(kv, 147_456 * 8192)

    def test_af_messages_by_hand(self):
        # Qwen3-8B: 36 layers, hidden 4,096 in BF16: each layer sends 8,192 B to the FFN side and
        # back, 72 one-way messages, 589,824 B per decode token (the book's pd-af-handoff-qwen8
        # AF bytes and direction count); over A100's 25 GB/s NIC with H20's 2.7 us per message
        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "129",
                                   "--prefill-device", "a100-sxm-80gb", "--decode-device", "h20", "--rate", "3.5",
                                   "--format", "json")
        af = json.loads(out)["pd"]["af"]
        self.assertEqual((af["message_bytes"], af["directions_per_token"], af["bytes_per_token"]), (8192, 72, 589_824))
        self.assertAlmostEqual(af["time_per_token_s"], 72 * 2.7e-6 + 589_824 / 25e9, places=12)

    def test_pools_for_a_rate(self):
        # A100 prefill and H20 decode at 3.5 requests/s (the book's chapter-9 pairing): two
        # A100 prefill workers (each below 3.5 / 2 requests/s short of the rate alone) and one H20
        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "129",
                                   "--prefill-device", "a100-sxm-80gb", "--decode-device", "h20", "--rate", "3.5",
                                   "--format", "json")
        pd = json.loads(out)["pd"]
        for kind in ("lower_bound", "estimate"):
            pool = pd["pools"][kind]
            self.assertGreaterEqual(pool["prefill_workers"] * pool["prefill_requests_per_s_per_worker"], 3.5)
            self.assertLess((pool["prefill_workers"] - 1) * pool["prefill_requests_per_s_per_worker"], 3.5)
            self.assertGreaterEqual(pool["decode_workers"] * pool["decode_requests_per_s_per_worker"], 3.5)
        # the lower-bound rates are upper bounds: never fewer workers under the estimate
        self.assertLessEqual(pd["pools"]["lower_bound"]["devices"], pd["pools"]["estimate"]["devices"])


class Speculation(unittest.TestCase):
    @staticmethod
    def brute_force(alphas, k):
        """E(k) by enumerating every accept/reject outcome of the k drafted tokens: position i
        accepted with probability a_i (independently); the step keeps the leading accepted run
        plus the target's own token."""
        import itertools

        rates = [alphas[min(i, len(alphas) - 1)] for i in range(k)]
        total = 0.0
        for outcome in itertools.product((True, False), repeat=k):
            p = 1.0
            for a, ok in zip(rates, outcome):
                p *= a if ok else 1 - a
            run = next((i for i, ok in enumerate(outcome) if not ok), k)
            total += p * (run + 1)
        return total

    def test_closed_form_against_enumeration(self):
        from infracalc.analyses.serve import speculation
        for alphas in ((0.8,), (0.9, 0.8, 0.7), (0.5, 1.0, 0.0, 0.3), (1.0,), (0.0,)):
            for k in range(1, 9):
                self.assertAlmostEqual(speculation.expected_tokens(alphas, k), self.brute_force(alphas, k),
                                       places=12, msg=(alphas, k))

    def test_iid_equals_the_geometric_sum(self):
        # a = 0.8, k = 4: (1 - 0.8^5) / (1 - 0.8) = (1 - 0.32768) / 0.2 = 3.3616
        from infracalc.analyses import speculative
        from infracalc.analyses.serve import speculation
        self.assertAlmostEqual(speculation.expected_tokens((0.8,), 4), 3.3616, places=12)
        self.assertAlmostEqual(speculative.expected_tokens(0.8, 4), 3.3616, places=12)
        # per position, by hand: 0.9, 0.8, 0.7 -> 1 + 0.9 + 0.72 + 0.504 = 3.124
        self.assertAlmostEqual(speculation.expected_tokens((0.9, 0.8, 0.7), 3), 3.124, places=12)
        table = speculation.position_table((0.9, 0.8, 0.7), 3)
        self.assertAlmostEqual(sum(r["probability"] for r in table), 1.0, places=12)
        self.assertAlmostEqual(table[1]["probability"], 0.9 * 0.2, places=12)
        self.assertAlmostEqual(sum(r["probability"] * r["tokens"] for r in table), 3.124, places=12)

    def test_best_draft_length_minimises_tpot(self):
        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "1024", "--output-len", "256",
                                   "--draft-model", "qwen3-0.6b", "--acceptance", "0.8", "--format", "json")
        self.assertEqual(status, 0, err)
        sp = json.loads(out)["speculative"]
        self.assertEqual(sp["best"]["tpot_s"], min(r["tpot_s"] for r in sp["rows"]))
        for row in sp["rows"]:
            self.assertAlmostEqual(row["tpot_s"], (row["draft_s"] + row["verify_s"]) / row["expected_tokens_per_step"])
        # the verify pass over k + 1 tokens grows with k, and a longer draft costs more draft steps
        drafts = [r["draft_s"] for r in sp["rows"]]
        self.assertEqual(drafts, sorted(drafts))


class Replay(unittest.TestCase):
    """The book's iteration-batching group (bojieli/ai-infra-book:calculations/results/README.md,
    'fixed / continuous / chunked scheduling'; inputs from iteration-batching-*.md): Qwen3-8B,
    requests (arrival ns, P, G) = (0, 16, 8), (0, 16, 2), (20000, 128, 2), (30000, 16, 4); at most 2
    running, budget 32, chunks of 16; step = 10,000 + 1,000 x new tokens + 1 x causal pairs ns."""

    ARGS = ("serve", "--model", "qwen3-8b", "--request", "0:16:8", "--request", "0:16:2",
            "--request", "20000:128:2", "--request", "30000:16:4", "--max-seqs", "2",
            "--max-batched-tokens", "32", "--chunk-tokens", "16", "--step-base-ns", "10000",
            "--per-token-ns", "1000", "--per-pair-ns", "1", "--format", "json")

    def run_replay(self, *extra):
        status, out, err = run_cli(*self.ARGS, *extra)
        self.assertEqual(status, 0, err)
        return json.loads(out)["replay"]

    def test_book_table(self):
        # (iterations, finish ns, max ITL ns, peak KV bytes) as the index prints them
        book = {"fixed": (12, 317_004, 12_146, 21_528_576), "continuous": (8, 277_004, 147_274, 21_823_488),
                "chunked": (12, 317_004, 28_945, 21_676_032)}
        for policy, want in book.items():
            r = self.run_replay("--policy", policy)
            self.assertEqual((r["iterations"], r["finish_ns"], r["max_itl_ns"], r["peak_live_kv_bytes"]), want,
                             policy)
            self.assertEqual(r["total_matrix_flops"], 2_636_833_882_112)
        r = self.run_replay("--policy", "chunked", "--kv-capacity", "20971520")
        self.assertEqual((r["iterations"], r["finish_ns"], r["max_itl_ns"], r["peak_live_kv_bytes"]),
                         (21, 407_004, 12_034, 19_021_824))

    def test_first_steps_by_hand(self):
        r = self.run_replay("--policy", "continuous")
        # step 1: both 16-token prompts, 2 x 16 x 17 / 2 = 272 pairs: 10,000 + 32,000 + 272 ns;
        # the KV of 32 rows x 147,456 B
        s = r["steps"][0]
        self.assertEqual((s["end_ns"], s["causal_pairs"], s["kv_bytes"]), (42_272, 272, 32 * 147_456))
        # step 3: r1 has left; r2 (arrived at 20,000) is prefilled whole beside r0's decode at
        # history 17: 128 x 129 / 2 + 18 = 8,274 pairs, 129 tokens: 147,274 ns; r3 waits (2 running)
        s = r["steps"][2]
        self.assertEqual((s["end_ns"] - s["start_ns"], s["causal_pairs"]), (147_274, 8_274))
        self.assertEqual(s["parts"], ["r0:decode:1", "r2:prefill:128"])
        self.assertEqual(r["max_waiting_ns"], 213_728 - 30_000)

    def test_chunks_conserve_pairs_and_flops(self):
        # splitting r2's prompt into 8 chunks of 16 keeps its 8,256 causal pairs
        chunked, whole = self.run_replay("--policy", "chunked"), self.run_replay("--policy", "continuous")
        self.assertEqual(sum(s["causal_pairs"] for s in chunked["steps"]),
                         sum(s["causal_pairs"] for s in whole["steps"]))
        self.assertEqual(chunked["total_matrix_flops"], whole["total_matrix_flops"])


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
        head = "\n".join(out.split("\n")[:17])   # the verdict block's 5 lines include the prediction
        self.assertIn("**2 devices**: layout tp2", head)
        self.assertIn("does not fit", head)


if __name__ == "__main__":
    unittest.main()


class DeclaredRounds(unittest.TestCase):
    """Speculative rounds with declared costs (analyses/serve/rounds), derived by hand."""

    def test_round_ledger_by_hand(self):
        from fractions import Fraction
        from infracalc.analyses.serve import rounds

        # k = 4, rounds accepting 0..4 drafts: 2, 1, 1, 2, 4 -> R = 10, accepted 1 + 2 + 6 + 16 = 25
        # of 40 drafted = 5/8; delivered 2x1 + 2 + 3 + 2x4 + 4x5 = 35 -> 7/2 per round; round
        # 40,000 + 100,000 + 10,000 = 150,000 ns -> 1,500,000 / 35 = 300000/7 ns per token;
        # plain at 50,000 ns: 35 x 50,000 / 1,500,000 = 7/6
        r = rounds.round_ledger([2, 1, 1, 2, 4], 40_000, 100_000, 10_000, 50_000)
        self.assertEqual((r["acceptance"], r["mean_delivered"], r["ns_per_delivered_token"], r["speedup"]),
                         (Fraction(5, 8), Fraction(7, 2), Fraction(300_000, 7), Fraction(7, 6)))
        # at most one token still allowed: every round delivers 1 -> 150,000 ns per token, 1/3
        r = rounds.round_ledger([2, 1, 1, 2, 4], 40_000, 100_000, 10_000, 50_000, remaining=1)
        self.assertEqual((r["mean_delivered"], r["speedup"]), (1, Fraction(1, 3)))

    def test_budget_by_hand(self):
        from fractions import Fraction
        from infracalc.analyses.serve import rounds

        # one option of k = 1 costing 1,400 ns that accepts its draft half the time; plain 1,000 ns.
        # V(1) = 1,000 (the option delivers 1 token too, at 1,400); V(2, prepared) = min(plain
        # 1,000 + V(1) = 2,000, option 1,400 + 1/2 V(1) + 1/2 V(0) = 1,900) = 1,900
        b = rounds.budget(2, 1000, 0, [("d1", 1400, (1, 1))])
        self.assertEqual((b["expected_ns"], b["first_action"]), (1900, "d1"))
        self.assertEqual(b["prepared_actions"], [{"tokens_left": 1, "action": "baseline"},
                                                 {"tokens_left": 2, "action": "d1"}])
        # a 200 ns setup on the first draft: 2,100 > 2,000, plain decoding wins
        b = rounds.budget(2, 1000, 200, [("d1", 1400, (1, 1))])
        self.assertEqual((b["expected_ns"], b["first_action"]), (2000, "baseline"))
        # at 1,500 the two tie at 2,000: the earlier action (baseline) is kept
        self.assertEqual(rounds.budget(2, 1000, 0, [("d1", 1500, (1, 1))])["first_action"], "baseline")
        # the fixed policy 'always d1' at r = 3: 1,400 + 1/2 V(2) + 1/2 V(1), V(1) = 1,400,
        # V(2) = 1,400 + 1/2 1,400 = 2,100 -> 1,400 + 1,050 + 700 = 3,150
        fixed = {f["policy"]: f["expected_ns"] for f in rounds.budget(3, 1000, 0, [("d1", 1400, (1, 1))])["fixed"]}
        self.assertEqual((fixed["baseline"], fixed["d1"]), (3000, Fraction(3150)))

    def test_book_budget_rows(self):
        """The index's speculative-budget-book row: 16 outputs, plain 1 ms per token, setup 2 ms."""
        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--output-len", "16", "--baseline-token-ns",
                                   "1000000", "--setup-ns", "2000000", "--spec-option", "draft-1:100000:1000000:1,3",
                                   "--spec-option", "draft-2:100000:1150000:4,3,9",
                                   "--spec-option", "draft-4:100000:1400000:64,48,36,27,81", "--format", "json")
        self.assertEqual(status, 0, err)
        b = json.loads(out)["spec_budget"]
        self.assertEqual((b["first_action"], b["expected_ns_exact"], b["speedup_exact"]),
                         ("draft-4", "171167129471875/16777216", "85899345920/54773481431"))

    def test_errors(self):
        for extra in (("--accepted-counts", "0,0"), ("--accepted-counts", "1"),
                      ("--spec-option", "baseline:1:1:1,1"), ("--spec-option", "x:1:0:1,1")):
            with self.subTest(extra=extra):
                status, _, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "8", "--output-len", "4",
                                         "--baseline-token-ns", "10", "--draft-ns", "1", "--verify-ns", "1", *extra)
                self.assertEqual(status, 2)
                self.assertNotIn("Traceback", err)


class GroupedExperts(unittest.TestCase):
    """One Qwen3-235B-A22B MoE layer (128 experts, top-8, hidden 4,096, expert width 1,536) as
    grouped GEMMs on 8 EP ranks (analyses/serve/experts), derived by hand."""

    H, F = 4096, 1536

    def traffic(self, m):
        """Output-stationary tile traffic of one expert copy of m <= 64 rows, tile 64x32x128, BF16:
        gate and up read A once per column of tiles (1,536/128 = 12), B once, write C; down: 32."""
        h, f = self.H, self.F
        return 2 * (m * h * 2 * 12 + h * f * 2 + m * f * 2) + (m * f * 2 * 32 + f * h * 2 + m * h * 2)

    def test_gemm_by_hand(self):
        from infracalc.analyses.serve import experts

        v, p, t = experts.gemm(33, 4096, 1536, (64, 32, 128), 2)
        self.assertEqual((v, p), (2 * 33 * 4096 * 1536, 2 * 64 * 4096 * 1536))
        self.assertEqual(t, 33 * 4096 * 2 * 12 + 4096 * 1536 * 2 + 33 * 1536 * 2)

    def test_padding_and_busiest_rank(self):
        from infracalc.analyses.serve import experts

        per_row = 3 * 2 * self.H * self.F   # gate, up, down: 2 x 3 x h x f FLOPs per token row
        # balanced: 128 x 8 = 1,024 assignments, 8 per expert, each padded to a 64-row tile (8x);
        # contiguous: 16 experts per rank, so the busiest rank runs 16 x 64 padded rows
        s = experts.grouped(experts.histogram("balanced", 128, 8, 128), self.H, self.F, 8, "contiguous",
                            (64, 32, 128), 2)
        self.assertEqual((s["valid_flops"], s["padded_flops"]), (1024 * per_row, 8 * 1024 * per_row))
        self.assertEqual(s["busiest_rank_padded_flops"], 16 * 64 * per_row)
        # concentrated, 33 tokens: experts 0..7 take 33 each, all on rank 0; a copy of expert 0 on
        # rank 1 takes 33 // 2 = 16 (the original keeps 17): rank 0 still pads 8 x 64 rows,
        # the whole layer 9 x 64 (24/11 of the 264 valid rows)
        s = experts.grouped(experts.histogram("concentrated", 128, 8, 33), self.H, self.F, 8, "contiguous",
                            (64, 32, 128), 2, [(0, 1)])
        self.assertEqual([r["rows"] for r in s["ranks"][:2]], [7 * 33 + 17, 16])
        self.assertEqual((s["padding_ratio"], s["busiest_rank_padded_flops"]), (Fraction(24, 11), 512 * per_row))
        self.assertEqual(s["replica_bytes_per_rank"][1], 3 * self.H * self.F * 2)

    def test_payback_by_hand(self):
        from infracalc.analyses.serve import experts

        hist = experts.histogram("concentrated", 128, 8, 128)
        base = experts.grouped(hist, self.H, self.F, 8, "contiguous", (64, 32, 128), 2)
        repl = experts.grouped(hist, self.H, self.F, 8, "contiguous", (64, 32, 128), 2, [(i, i + 1) for i in range(7)])
        p = experts.payback(base, repl, 128, 100 * 10**12, 10**12, 25 * 10**9, 5000, 64 * 2**20)
        # rank 0 holds experts 0..7 at 128 rows: two row tiles, so B is read twice and A and C
        # are twice those of 64 rows: T(128) = 2 T(64). Replicated it keeps expert 7 whole and
        # 64 rows of each of 0..6. Interface-bound at 1 TB/s (8 x 64 x 6 h f x 2 FLOPs at
        # 100 TFLOP/s is 386,547 ns; 8 T(128) / 1,000 is 920,650 ns)
        t128 = 2 * self.traffic(64)
        old, new = Fraction(8 * t128, 1000), Fraction(t128 + 7 * self.traffic(64), 1000)
        self.assertEqual((p["baseline_batch_ns"], p["replicated_batch_ns"]), (old, new))
        setup = Fraction(7 * 3 * self.H * self.F * 2, 25) + 7 * 5000
        self.assertEqual(p["setup_ns"], setup)
        self.assertEqual(p["strict_payback_batches"], int(setup // (old - new)) + 1)
        self.assertEqual(p["strict_payback_batches"], 27)
        self.assertEqual(p["selected"], "replicated")
        tight = experts.payback(base, repl, 128, 100 * 10**12, 10**12, 25 * 10**9, 5000, 32 * 2**20)
        self.assertEqual((tight["feasible_payback_batches"], tight["selected"]), (None, "baseline"))

    def test_payback_compute_bound_padding(self):
        """The book's replica-payback-padding: 33 concentrated tokens, expert 0 copied to rank 4, the
        interface at 10^15 B/s so compute binds. Rank 0 keeps experts 1..7 and 17 rows of 0: still
        8 row tiles of 64, 8 x 2 x 64 x 3 h f = 19,327,352,832 FLOPs at 100 TFLOP/s = 603979776/3125
        ns either way, so the saving is 0 and the copy (37,748,736 B / 25 GB/s + 5,000 ns) never
        pays back."""
        from infracalc.analyses.serve import experts

        hist = experts.histogram("concentrated", 128, 8, 33)
        base = experts.grouped(hist, self.H, self.F, 8, "contiguous", (64, 32, 128), 2)
        repl = experts.grouped(hist, self.H, self.F, 8, "contiguous", (64, 32, 128), 2, [(0, 4)])
        p = experts.payback(base, repl, 128, 100 * 10**12, 10**15, 25 * 10**9, 5000, 64 * 2**20)
        t = Fraction(8 * 2 * 64 * 3 * self.H * self.F, 100_000)
        self.assertEqual((p["baseline_batch_ns"], p["replicated_batch_ns"]), (t, t))
        self.assertEqual(t, Fraction(603979776, 3125))
        self.assertEqual(p["setup_ns"], Fraction(3 * self.H * self.F * 2, 25) + 5000)
        self.assertEqual((p["strict_payback_batches"], p["selected"]), (None, "baseline"))
        # at the other rows' 1 TB/s the tile traffic binds and rank 0's shrinks: a positive saving
        slow = experts.payback(base, repl, 128, 100 * 10**12, 10**12, 25 * 10**9, 5000, 64 * 2**20)
        self.assertEqual(slow["baseline_batch_ns"] - slow["replicated_batch_ns"], Fraction(618496, 125))


class WeightOffload(unittest.TestCase):
    """FFN weights streamed from the host (analyses/serve/offload), derived by hand."""

    def test_schedule_by_hand(self):
        from infracalc.analyses.serve import offload

        # 4 layers of 10 ns, layers 1 and 3 offloaded, copies of 25 ns, one slot:
        # copy 0 [0, 25]; layer 0 [0, 10]; layer 1 waits for it: [25, 35]; copy 1 waits for
        # layer 1 to free the slot: [35, 60]; layer 2 [35, 45]; layer 3 [60, 70]
        finish, rows = offload.schedule(4, {1, 3}, 1, 1, 10, 25)
        self.assertEqual(finish, 70)
        self.assertEqual([r[3:] for r in rows], [(0, 25, 25, 35), (35, 60, 60, 70)])
        # two slots: copy 1 follows copy 0 on the link, [25, 50]; layer 3 [50, 60]
        self.assertEqual(offload.schedule(4, {1, 3}, 2, 1, 10, 25)[0], 60)

    def test_book_figures(self):
        """Qwen3-8B: every fourth layer's FFN (3, 7, ..., 35: 9 layers of 3 x 4,096 x 12,288 x 2 B)
        at 24 GiB/s, 1 ms per layer: each copy 301,989,888 / (24 x 2^30) s = 11,718,750 ns; one
        slot serialises copy k after layer 4k + 3 ends: the last layer ends at 9 x 11,718,750 +
        8 x 1e6 + 1e6 = 114,468,750 ns, 78,468,750 ns exposed."""
        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--offload-ffn-layers", "3:36:4",
                                   "--layer-ns", "1000000", "--host-link-bw", str(24 * 2**30), "--format", "json")
        self.assertEqual(status, 0, err)
        o = json.loads(out)["offload"]
        group = 3 * 4096 * 12288 * 2
        self.assertEqual((o["ffn_bytes_per_layer"], o["device_bytes_saved"]), (group, 8 * group))
        self.assertEqual(o["copy_ns_exact"], "11718750")
        self.assertEqual((o["finish_ns_exact"], o["exposed_wait_ns_exact"]), ("114468750", "78468750"))
        self.assertIsNone(o["slots_that_hide"])   # 9 copies take 105.5 ms > 36 ms of layers

    def test_needs_a_link(self):
        status, _, err = run_cli("serve", "--model", "qwen3-8b", "--device", "h800", "--offload-ffn-layers", "3", "--layer-ns", "5")
        self.assertEqual(status, 2)
        self.assertIn("--host-link-bw", err)


class Handoff(unittest.TestCase):
    def test_serial_ledger_by_hand(self):
        """Llama-3.1-8B geometry (32 layers, hidden 4,096, 8 KV heads of 128), 8,192 tokens, BF16:
        PD = 2 x 32 x 8 x 128 x 2 x 8,192 = 1,073,741,824 B in one message; AF = 2 x 32 one-way
        messages of 4,096 x 2 B. At 25 GB/s with 5,000 ns per message: PD = bytes / 25 + 5,000 ns,
        AF = 524,288 / 25 + 64 x 5,000 ns; staged through the host, every hop again (x 3)."""
        from fractions import Fraction

        def run(*extra):
            status, out, err = run_cli("serve", "--model", "llama-3.1-8b", "--input-len", "8192", "--handoff-bw",
                                       "25GB/s", "--handoff-startup-ns", "5000", "--format", "json", *extra)
            self.assertEqual(status, 0, err)
            return json.loads(out)["handoff"]

        h = run()
        self.assertEqual((h["pd_bytes"], h["af_messages"], h["af_bytes"]), (1_073_741_824, 64, 524_288))
        pd, af = Fraction(1_073_741_824, 25) + 5000, Fraction(524_288, 25) + 64 * 5000
        self.assertEqual((Fraction(h["pd_ns_exact"]), Fraction(h["af_ns_exact"])), (pd, af))
        h = run("--staging-bw", "25GB/s")
        self.assertEqual((Fraction(h["pd_ns_exact"]), Fraction(h["af_ns_exact"])), (3 * pd, 3 * af))

    def test_handoff_in_another_models_kv_layout(self):
        """The book's MLA rows (pd-af-handoff-qwen8-mla, pd-pool-mla): Qwen3-8B's AF messages and stage
        rates, the PD snapshot in DeepSeek-V3's compact MLA cache: 61 layers x (512 + 64) x 2 B = 70,272 B
        per token, x 8,192 = 575,668,224 B; AF stays Qwen3-8B's 2 x 36 messages of 4,096 x 2 B."""
        def run(*extra):
            status, out, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "8192", "--handoff-bw",
                                       "25GB/s", "--handoff-startup-ns", "5000", "--format", "json", *extra)
            self.assertEqual(status, 0, err)
            return json.loads(out)

        rec = run("--handoff-kv-model", "deepseek-v3")
        h = rec["handoff"]
        self.assertEqual(h["pd_bytes"], 61 * 576 * 2 * 8192)
        self.assertEqual((h["af_messages"], h["af_bytes"]), (72, 72 * 8192))
        self.assertEqual(Fraction(h["pd_ns_exact"]), Fraction(61 * 576 * 2 * 8192, 25) + 5000)
        self.assertEqual(rec["inputs"]["handoff_kv_model"], "deepseek-v3")
        self.assertIn("70,272 B per token", rec["notes"][0])
        plain = run()["handoff"]
        self.assertEqual(plain["pd_bytes"], 36 * 2 * 8 * 128 * 2 * 8192)   # the model's own GQA cache
        self.assertEqual(plain["af_ns_exact"], h["af_ns_exact"])
        status, _, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "5",
                                 "--handoff-kv-model", "deepseek-v3")
        self.assertEqual(status, 2)
        self.assertIn("--handoff-kv-model is read only with one of --handoff-bw, --worker", err)


class ExpertLocality(unittest.TestCase):
    def test_by_hand(self):
        """Qwen3-235B-A22B, 128 tokens balanced (8 rows per expert), experts 0..31 resident: 96 remote
        experts, 768 tasks, 96 x 3 x 4,096 x 1,536 x 2 B. CPU: 2 x 768 x 4,096 x 2 B over 25 GB/s +
        2 x 96 x 5,000 ns + max(768 x 6 x 4,096 x 1,536 FLOPs at 1.8 TFLOP/s, weights at 220 GB/s);
        copy: weights over 25 GB/s + 96 x 5,000 ns + max(FLOPs at 156 T, weights at 777.5 GB/s)."""
        from infracalc.analyses.serve import experts

        hist = experts.histogram("balanced", 128, 8, 128)
        lo = experts.locality(hist, 32, 4096, 1536, 2, 1_800 * 10**9, 220 * 10**9, 156 * 10**12,
                              7_775 * 10**8, 25 * 10**9, 5000)
        w, f, act = 96 * 3 * 4096 * 1536 * 2, 768 * 6 * 4096 * 1536, 2 * 768 * 4096 * 2
        ns = (lambda x, rate: Fraction(x * 10**9, rate))
        self.assertEqual((lo["remote_experts"], lo["remote_tasks"], lo["remote_weight_bytes"]), (96, 768, w))
        self.assertEqual(lo["cpu_ns"], ns(act, 25 * 10**9) + 960_000 + max(ns(f, 1_800 * 10**9), ns(w, 220 * 10**9)))
        self.assertEqual(lo["copy_to_device_ns"], ns(w, 25 * 10**9) + 480_000 + max(ns(f, 156 * 10**12),
                                                                                    ns(w, 7_775 * 10**8)))
        self.assertEqual(lo["cpu_ns"], Fraction(4932260352, 275))   # the book's index


class CacheRoute(unittest.TestCase):
    def test_by_hand(self):
        """A holds the prefix (queue 250 ms), B does not (20 ms); full 180 ms, warm 10 ms, lookup
        10 ms; the prefix's cache S = 1,207,959,552 B over 5 GB/s then 25 GB/s. A hit 260, miss 430;
        mean 9/10 x 260 + 1/10 x 430 = 277 ms; p99 430 (p < 99/100); B cold 200; B remote
        max(20, 10 + S/5e9 + S/25e9 s) + 10; the fastest is B recompute."""
        from infracalc.analyses.serve import route

        s = 1_207_959_552
        ms = 10**6
        r = route.route(s, 250 * ms, 20 * ms, 180 * ms, 10 * ms, 10 * ms, 5 * 10**9, 25 * 10**9, Fraction(9, 10),
                        220 * ms)
        self.assertEqual((r["a_expected_ns"], r["a_p99_ns"], r["a_slo_probability"]), (277 * ms, 430 * ms, 0))
        remote = 10 * ms + Fraction(s, 5) + Fraction(s, 25) + 10 * ms
        self.assertEqual(r["paths"][2]["finish_ns"], remote)
        self.assertEqual(r["fastest_valid_path"], "B recompute")
        # after the queue, B's fetch starts at 20 ms: 20 ms more than overlapping it
        late = route.route(s, 250 * ms, 20 * ms, 180 * ms, 10 * ms, 10 * ms, 5 * 10**9, 25 * 10**9,
                           Fraction(9, 10), 220 * ms, after_queue=True)
        self.assertEqual(late["paths"][2]["finish_ns"], remote + 20 * ms)
        # at p = 99/100 the p99 is the hit
        self.assertEqual(route.route(s, 80 * ms, 20 * ms, 180 * ms, 10 * ms, 10 * ms, 5 * 10**9, 25 * 10**9,
                                     Fraction(99, 100), 220 * ms)["a_p99_ns"], 90 * ms)


class PrefixValue(unittest.TestCase):
    def test_choices_by_hand(self):
        """Three candidates (held bytes, value): a (2, 5), b (3, 7), c (4, 11) in a budget of 5.
        Greedy by value per byte takes c (2.75 per byte) and nothing else fits: 11. The exact
        choice is a + b: 12 in exactly 5 bytes."""
        from infracalc.analyses.serve import prefix

        rows = [{"id": n, "resident_bytes": b, "expected_saved_flops": Fraction(v), "value_per_byte": Fraction(v, b)}
                for n, b, v in (("a", 2, 5), ("b", 3, 7), ("c", 4, 11))]
        out = prefix.choose(rows, 5)
        self.assertEqual((out["exact"], out["exact_bytes"], out["exact_saved_flops"]), (["a", "b"], 5, 12))
        self.assertEqual((out["greedy"], out["greedy_saved_flops"], out["exact_minus_greedy_flops"]), (["c"], 11, 1))
        self.assertEqual(prefix.choose(rows, 1)["exact"], [])

    def test_book_row(self):
        # 512 + 768 tokens x 147,456 B = 188,743,680 B = 180 MiB exactly: both fit, 1,024 alone is denser
        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--prefix-candidate", "512:512:1:1",
                                   "--prefix-candidate", "768:768:1:1", "--prefix-candidate", "1024:1024:1:1",
                                   "--prefix-budget", "180MiB", "--format", "json")
        self.assertEqual(status, 0, err)
        v = json.loads(out)["prefix_value"]
        self.assertEqual((v["exact"], v["greedy"], v["exact_bytes"]), (["512", "768"], ["1024"], 1280 * 147_456))
        self.assertEqual(v["exact_minus_greedy_flops"], 3_498_326_360_064)   # the book's index


class SizingByPrediction(unittest.TestCase):
    def run_size(self, limit, figure):
        status, out, err = run_cli("serve", "--model", "llama-3.1-70b", "--input-len", "2048", "--output-len", "256",
                                   "--tpot-limit", limit, "--ttft-limit", "2s", "--slo-figure", figure,
                                   "--format", "json")
        self.assertEqual(status, 0, err)
        return json.loads(out)["sizing"]["answer"]

    def test_predicted_answer_meets_its_limits(self):
        """At TPOT <= 38 ms the estimate's choice (tp2, batch 16) predicts about 42.5 ms: judged by
        the prediction the same two devices run a smaller batch whose predicted TPOT is within the
        limit, and its estimate and lower bound are too."""
        est, pred = self.run_size("38ms", "estimate"), self.run_size("38ms", "predicted")
        self.assertEqual((est["devices"], pred["devices"]), (2, 2))
        self.assertGreater(est["predicted_tpot_s"], 0.038)
        self.assertLess(pred["batch_per_replica"], est["batch_per_replica"])
        self.assertEqual(pred["judged_by"], "predicted")
        for value in (pred["predicted_tpot_s"], pred["tpot_s"], pred["lower_bound"]["tpot_s"]):
            self.assertLessEqual(value, 0.038)
        # the bound never exceeds the estimate, the estimate never the prediction here
        self.assertLessEqual(pred["lower_bound"]["tpot_s"], pred["tpot_s"])
        self.assertLessEqual(pred["tpot_s"], pred["predicted_tpot_s"])


class PrefixHitRate(unittest.TestCase):
    def test_expected_prefill_by_hand(self):
        """The 2-layer toy, P = 4 with C = 2 cached: a hit prefills 2 tokens after 2, 2 x 2,304 +
        160 + 64 x (2 x 2 + 2 x 3 / 2 = 7 pairs) = 5,216 matrix FLOPs; a miss the whole 10,016.
        At h = 1/2 the expected request costs (5,216 + 10,016) / 2 = 7,616 and prefills 3 tokens."""
        arch = toy(self)
        parts = iteration.Parts(arch, Workload(), P, G, None, 2, 0.5)
        mf = iteration.totals(parts.prefill)[iteration._MF]
        self.assertEqual(mf, (2 * 2304 + 160 + 64 * 7 + PREFILL) / 2)
        self.assertEqual(parts.new_tokens, 3)
        self.assertEqual(iteration.totals(iteration.Parts(arch, Workload(), P, G, None, 2, 0.0).prefill)[iteration._MF],
                         PREFILL)

    def test_no_hits_is_no_cache(self):
        def chunked(*extra):
            status, out, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "256",
                                       "--format", "json", *extra)
            self.assertEqual(status, 0, err)
            return [x for x in json.loads(out)["policies"] if x["policy"] == "chunked"][0]["requests_per_s"]

        self.assertEqual(chunked("--cached-prefix", "6144", "--prefix-hit-rate", "0"), chunked())


class KvOffload(unittest.TestCase):
    def test_by_hand(self):
        """Qwen3-8B, P = 32,768, G = 1,025: steps at history 32,768 + 512; batch 8 reads 8 x
        33,281 x 147,456 B of KV (its own new key included). Half of it over PCIe Gen5 x16
        (64 GB/s) takes 19,629,932,544 / 64e9 s, beyond the device's side: the link binds. The
        device then holds half of each request's cache, so twice as many fit (floor of the room
        over half a request)."""
        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "32768", "--output-len", "1025",
                                   "--offload-kv", "0.5", "--offload-batch", "8", "--host-link-bw", "pcie5",
                                   "--format", "json")
        self.assertEqual(status, 0, err)
        k = json.loads(out)["kv_offload"]
        kv = 8 * 33281 * 147_456
        self.assertEqual(k["kv_bytes_read"], kv)
        self.assertEqual(k["host_bytes_per_step"], kv / 2)
        self.assertAlmostEqual(k["step_lower_bound_s"], kv / 2 / 64e9, places=12)
        self.assertTrue(k["link_binds"])
        self.assertEqual(k["requests_fit_offloaded"], int(k["cache_room_bytes"] // (k["cache_bytes_per_request"] / 2)))
        self.assertEqual(k["requests_fit_resident"], k["cache_room_bytes"] // k["cache_bytes_per_request"])


class MtpDrafter(unittest.TestCase):
    def test_module_by_hand(self):
        """DeepSeek-V3's MTP module (hidden 7,168): enorm, hnorm and shared_head.norm (3 x 7,168),
        eh_proj [7,168, 14,336] and one decoder layer; the drafter shares the embedding and head,
        so its parameters less those two equal the module's Part. eh_proj costs 2 x 14,336 x 7,168
        matrix FLOPs per token."""
        from infracalc.analyses.serve.speculation import mtp_drafter
        from infracalc.blocks.mtp import MTPInput

        target = load_model("deepseek-v3")
        draft = mtp_drafter(target)
        part = next(p for p in target.parts if p.name == "MTP")
        self.assertEqual(draft.params - target.embedding.params - target.head.params, part.params)
        ops = MTPInput(hidden=7168).ops(Workload())
        self.assertEqual(sum(op.matrix_flops for op in ops), 2 * 14336 * 7168)
        self.assertEqual(sum(op.vector_flops for op in ops), 2 * 4 * 7168)

    def test_refused_without_module(self):
        status, _, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "64", "--output-len", "8", "--mtp",
                                 "--acceptance", "0.8")
        self.assertEqual(status, 2)
        self.assertIn("no multi-token-prediction module", err)


class AfPools(unittest.TestCase):
    def test_sides_partition_the_model(self):
        """The FFN side of Qwen3-8B at 4 decode tokens: 4 x 36 layers x 2 x 3 x 4,096 x 12,288
        matrix FLOPs; every ledger column of the two sides adds up to the whole model's, and all
        KV reads are on the attention side."""
        from infracalc import ledger
        from infracalc.analyses.serve.system import af_sides

        arch = load_model("qwen3-8b")
        attn, ffn = af_sides(arch)
        w = Workload().replace(batch=4, tokens=1, history=100)
        total = (lambda a, f: sum(getattr(op, f) for op in ledger.operators(a, w)))
        self.assertEqual(total(ffn, "matrix_flops"), 4 * 36 * 2 * 3 * 4096 * 12288)
        for f in ("matrix_flops", "vector_flops", "weight_read", "kv_read", "act_read", "act_write", "kv_write"):
            with self.subTest(field=f):
                self.assertEqual(total(attn, f) + total(ffn, f), total(arch, f))
        self.assertEqual(total(ffn, "kv_read"), 0)

    def test_pool_counts(self):
        # workers per side = ceil(rate x (G - 1) x t / batch)
        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "129",
                                   "--prefill-device", "a100-sxm-80gb", "--decode-device", "h20", "--rate", "3.5",
                                   "--format", "json")
        self.assertEqual(status, 0, err)
        ap = json.loads(out)["pd"]["af"]["pools"]
        import math
        for side in ("attention", "ffn"):
            self.assertEqual(ap[side]["workers"], math.ceil(3.5 * 128 * ap[side]["step_s"] / ap["batch"]))

    def test_offload_layer_time_from_the_ledger(self):
        status, out, err = run_cli("serve", "--model", "qwen3-8b", "--offload-ffn-layers", "3:36:4", "--host-link-bw",
                                   "pcie5", "--input-len", "8192", "--format", "json")
        self.assertEqual(status, 0, err)
        o = json.loads(out)["offload"]
        import math
        self.assertEqual(o["layer_ns"], math.ceil(o["decode_step_estimate_s"] * 1e9 / 36))

"""Serving-throughput bound (analyses/serving) and the validate command: exact values
derived by hand, explicit-loop cross-checks and invariants."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "calculations"))
sys.path.insert(0, os.path.dirname(__file__))

from support import run_cli  # noqa: E402
from infracalc.analyses import decode as D  # noqa: E402
from infracalc.analyses import serving as S  # noqa: E402
from infracalc.analyses.roofline import roof  # noqa: E402
from infracalc.load.hardware import load_device  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.workload import Workload  # noqa: E402

H100_ALLOCATABLE = 81_559 * 2**20          # nvidia-smi total, 85,520,809,984 B
QWEN3_8B_WEIGHTS = 16_381_470_720          # bf16
QWEN3_8B_KV_TOKEN = 147_456                # 36 x 2 x 8 x 128 x 2 B


class UnknownPeak(unittest.TestCase):
    def test_compute_side_unknown_on_apple(self):
        # The M3 Ultra publishes no FLOP/s: a request's FLOPs have no time, so the bound is
        # its memory time (weights shared over the concurrency + its own KV bytes at
        # 819 GB/s) and the compute time is unknown (null), not 0 s, with the bound saying so.
        rec = D.decode(load_model("qwen3-8b"), Workload(), load_device("apple-m3-ultra"), 128, 16)
        for key in ("steady_state", "guaranteed"):
            t = rec["serving"][key]
            self.assertIsNone(t["compute_s"], key)
            self.assertEqual(t["bound"], "memory; compute unknown", key)
            self.assertEqual(t["time_per_request_s"], t["memory_s"], key)
        # the phases and decode operators say so too: a decode step at P = 128 reads
        # 15,136,819,200 B of weights against 36 x 129 x 4,096 = 19,021,824 B of KV, so
        # "memory: weights", and its 15.1 GFLOP have no time: "; compute unknown"
        for phase in ("prefill", "decode_first_step", "decode"):
            self.assertEqual(rec[phase]["bound"], "memory: weights; compute unknown", phase)
        q = next(o for o in rec["operators"] if o["name"] == "q_proj")
        self.assertEqual(q["bound"], "memory; compute unknown")
        sweep = D.sweep(load_model("qwen3-8b"), Workload(), load_device("apple-m3-ultra"), 128, 16)
        self.assertEqual(sweep["rows"][0]["bound"], "memory: weights; compute unknown")


class Qwen3On100(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.arch, cls.dev = load_model("qwen3-8b"), load_device("h100-sxm")
        cls.rec = D.decode(cls.arch, Workload(), cls.dev, 1024, 1024)
        cls.s = cls.rec["serving"]

    def test_concurrency_by_hand(self):
        # room = 85,520,809,984 - 10% (8,552,080,998) - 16,381,470,720 = 60,587,258,266 B
        room = H100_ALLOCATABLE - H100_ALLOCATABLE // 10 - QWEN3_8B_WEIGHTS
        self.assertEqual(room, 60_587_258_266)
        self.assertEqual(self.s["cache_room_bytes"], room)
        # guaranteed: every request at P + G - 1 = 2047 tokens: room // 301,842,432 = 200
        self.assertEqual(self.s["final_cache_bytes"], QWEN3_8B_KV_TOKEN * 2047)
        self.assertEqual(self.s["guaranteed_concurrency"], 200)
        # steady state: decode step i holds P + i + 1 tokens, mean over i = 0..1022 is
        # P + G/2 = 1536 tokens = 226,492,416 B; room / that = 267.502...
        # JSON keeps the exact integer sum and its divisor (a float under a _bytes key was a
        # defect): sum_{i=0}^{1022} (1024 + i + 1) tokens = 1023 x 1536 = 1,571,328 tokens
        # x 147,456 B = 231,701,741,568 B over 1,023 steps.
        self.assertEqual(self.s["held_cache_summed_bytes"], 231_701_741_568)
        self.assertEqual(self.s["held_cache_summed_bytes"], QWEN3_8B_KV_TOKEN * 1023 * 1536)
        self.assertEqual(self.s["held_cache_steps"], 1023)
        self.assertNotIn("mean_held_cache_bytes", self.s)
        self.assertAlmostEqual(self.s["steady_state_concurrency"], room / (QWEN3_8B_KV_TOKEN * 1536), places=9)
        self.assertGreater(self.s["steady_state_concurrency"], 267.5)
        self.assertLess(self.s["steady_state_concurrency"], 267.51)

    def test_joint_bound_by_hand(self):
        s, r = self.s, roof(self.dev, Workload().compute_dtype)
        # the request's own KV traffic is the prefill's plus every decode step's (batch 1)
        kv = sum(self.rec[p]["kv_bytes_read"] + self.rec[p]["kv_bytes_written"] for p in ("prefill", "decode"))
        self.assertEqual(s["request_kv_bytes"], kv)
        # a step at batch 268 reads every weight once and 268 embedding rows:
        # 2 B x (8,190,735,360 - 151,936 x 4096 + 268 x 4096) = 15,139,006,464 B
        weights = 2 * (8_190_735_360 - 151_936 * 4096 + 268 * 4096)
        self.assertEqual(weights, 15_139_006_464)
        n = s["steady_state_concurrency"]
        memory = (weights * 1023 / n + kv) / 3.35e12
        compute = (s["request_matrix_flops"] / 989.5e12 + s["request_vector_flops"] / 67e12)
        t = s["steady_state"]
        self.assertAlmostEqual(t["memory_s"], memory, delta=memory * 1e-12)
        self.assertAlmostEqual(t["compute_s"], compute, delta=compute * 1e-12)
        self.assertEqual(t["bound"], "memory")
        self.assertAlmostEqual(t["output_tokens_per_s"], 1024 / memory, delta=1e-6)
        # about 11,827 output tokens/s: above the lockstep decode figure at the capacity batch
        self.assertAlmostEqual(t["output_tokens_per_s"], 11_826.9, delta=0.1)

    def test_steady_state_at_least_guaranteed_and_bound_grows_with_memory(self):
        w, r = Workload(), roof(self.dev, Workload().compute_dtype)
        last = 0.0
        for room in (10**9, 10**10, 3 * 10**10, 6 * 10**10, 10**11, 10**12):
            for p, g in ((128, 2048), (2048, 128), (1000, 1)):
                b = S.serving_bound(self.arch, w, r, p, g, room_bytes=room)
                self.assertGreaterEqual(b["steady_state_concurrency"], b["guaranteed_concurrency"])
                self.assertGreaterEqual(b["steady_state"]["output_tokens_per_s"],
                                        b["guaranteed"]["output_tokens_per_s"])
            b = S.serving_bound(self.arch, w, r, 1024, 1024, room_bytes=room)
            self.assertGreaterEqual(b["steady_state"]["output_tokens_per_s"], last)
            last = b["steady_state"]["output_tokens_per_s"]


class ParallelServing(unittest.TestCase):
    def test_layout_bound_reports_requests_and_both_concurrencies(self):
        # Llama-3.1-70B bf16 on 8 H100s, tp 4 pp 2, P = G = 1024. Stage 0 (layers 0-39 and the
        # embedding) holds per device (40 x 855,654,400 - 40 x 16,384 norm weights) / 4
        # + 40 x 16,384 + 128,256 x 8192 / 4 = 8,819,703,808 parameters = 17,639,407,616 B;
        # room = 85,520,809,984 - 8,552,080,998 (10%) - 17,639,407,616 = 59,329,321,370 B.
        # Cache per token per device: 40 layers x K,V x 2 heads x 128 x 2 B = 40,960 B.
        code, out, _ = run_cli("parallel", "--model", "llama-3.1-70b", "--devices", "8", "--tp", "4",
                               "--pp", "2", "--input-len", "1024", "--output-len", "1024", "--format", "json")
        self.assertEqual(code, 0)
        rec = json.loads(out)
        s0, s1 = rec["serving"]["stages"]
        room = H100_ALLOCATABLE - H100_ALLOCATABLE // 10 - 17_639_407_616
        self.assertEqual(room, 59_329_321_370)
        self.assertEqual(s0["guaranteed_concurrency"], room // (40_960 * 2047))        # 707
        self.assertEqual(s0["guaranteed_concurrency"], 707)
        self.assertAlmostEqual(s0["concurrency"], room / (40_960 * 1536), places=9)   # 943.01
        for st in (s0, s1):
            self.assertAlmostEqual(st["requests_per_s"] * 1024, st["output_tokens_per_s"], places=6)
            self.assertGreaterEqual(st["concurrency"], st["guaranteed_concurrency"])
        sv = rec["serving"]
        self.assertEqual(sv["output_tokens_per_s_replica"], min(s0["output_tokens_per_s"], s1["output_tokens_per_s"]))
        self.assertAlmostEqual(sv["requests_per_s_replica"] * 1024, sv["output_tokens_per_s_replica"], places=6)
        self.assertEqual(sv["requests_per_s_cluster"], sv["requests_per_s_replica"])    # dp 1
        self.assertTrue(any(c.startswith("Why it is an upper bound") for c in rec["conventions"]))
        # The reserve's rule and the engines' defaults beside it, as decode prints them, on a
        # device of the binding stage (stage 1: 17,639,424,000 B of weights with the head):
        # TensorRT-LLM keeps (85,520,809,984 - 17,639,424,000) // 10 = 6,788,138,598 B, leaving
        # 61,093,247,386 B: 728 requests; vLLM's 10% of memory leaves 707 (ours).
        mem = rec["memory"]
        self.assertIn("vLLM", mem["reserve_rule"])
        engines = {e["engine"]: e for e in mem["engine_defaults"]}
        self.assertEqual(engines["TensorRT-LLM"]["reserve_bytes"], 6_788_138_598)
        self.assertEqual(engines["TensorRT-LLM"]["max_requests"], 728)
        self.assertEqual(engines["vLLM"]["reserve_bytes"], H100_ALLOCATABLE // 10)
        self.assertEqual(engines["vLLM"]["max_requests"], mem["max_requests_per_replica"])
        self.assertIsNone(engines["SGLang"]["reserve_bytes"])


class ContextParallelServing(unittest.TestCase):
    """Under CP a stage's serving bound is its CP group's, pooled (parallel.records.cp_pool)."""

    def cluster(self, *layout):
        code, out, err = run_cli("parallel", "--model", "llama-3.1-70b", "--devices", "16", *layout,
                                 "--input-len", "32768", "--output-len", "256", "--format", "json")
        self.assertEqual(code, 0, err)
        return json.loads(out)["serving"]

    def test_cp_bounds_no_higher_than_dp(self):
        # A dense model's bound of a CP group of 4 equals 4 DP replicas': the pooled device has 4x
        # the room (4x the steady concurrency N), so its weights per request W (G - 1) / (4 N), and
        # 4x the peaks and bandwidth, so each request's time is a quarter of one replica's. CP adds
        # no capacity a DP replica of the same devices lacks.
        cp, dp = self.cluster("--tp", "4", "--cp", "4"), self.cluster("--tp", "4", "--dp", "4")
        self.assertAlmostEqual(cp["output_tokens_per_s_cluster"], dp["output_tokens_per_s_cluster"],
                               delta=dp["output_tokens_per_s_cluster"] * 1e-12)
        self.assertAlmostEqual(cp["stages"][0]["concurrency"], 4 * dp["stages"][0]["concurrency"], delta=1e-9)
        # the prediction sits below it, beside it in the record
        self.assertLess(cp["predicted"]["output_tokens_per_s_per_device"], cp["output_tokens_per_s_per_device"])

    def test_prediction_below_the_bound_on_cp_layouts(self):
        from infracalc.analyses.parallel import Plan, memory_record, serving_record
        from infracalc.analyses.efficiency.serving import predicted_layout
        from infracalc.layout import Layout
        from infracalc.load.hardware import load_device
        from infracalc.workload import from_formats

        for model, device, layouts in (("llama-3.1-70b", "h100-sxm", ((4, 2, 1, 1), (2, 4, 2, 1), (8, 8, 1, 1))),
                                       ("qwen3-30b-a3b", "h100-sxm", ((1, 4, 1, 1), (2, 2, 2, 2), (4, 2, 1, 4))),
                                       ("deepseek-v3", "h200", ((8, 2, 2, 8), (8, 4, 1, 8)))):
            arch, dev = load_model(model), load_device(device)
            w = from_formats(arch, batch=1, tokens=1)
            plan = Plan(arch, w, dev, 8192, 512)
            for tp, cp, pp, ep in layouts:
                lay = Layout(tp=tp, cp=cp, pp=pp, ep=ep, dp=max(1, ep // tp))
                bound = serving_record(plan, lay, memory_record(plan, lay, 1)["stages"])
                got = predicted_layout(arch, w, dev, lay, 8192, 512)
                self.assertLess(got["output_tokens_per_s_per_device"], bound["output_tokens_per_s_per_device"],
                                (model, lay))

    def test_record_prints_the_prediction_beside_it(self):
        code, md, _ = run_cli("parallel", "--model", "llama-3.1-70b", "--devices", "16", "--tp", "4", "--cp", "4",
                              "--input-len", "32768", "--output-len", "256")
        self.assertEqual(code, 0)
        self.assertIn("## Serving-throughput bound per stage shard", md)
        self.assertIn("- Predicted (a well-tuned engine, not a bound)", md)
        code, out, _ = run_cli("parallel", "--model", "llama-3.1-70b", "--devices", "16", "--tp", "4", "--cp", "4",
                               "--input-len", "32768", "--output-len", "256", "--format", "json")
        self.assertTrue(any("Under context parallelism a stage's bound is its CP group's" in c
                            for c in json.loads(out)["conventions"]))


class ReserveAndEngineDefaults(unittest.TestCase):
    def test_decode_reserve_and_engines(self):
        code, out, _ = run_cli("decode", "--model", "qwen3-8b", "--input-len", "1024", "--output-len", "1024",
                               "--reserve", "5%", "--format", "json")
        self.assertEqual(code, 0)
        cap = json.loads(out)["capacity"]
        # 5% of 85,520,809,984 = 4,276,040,499.2 -> 4,276,040,499 B; room 64,863,298,765 B
        # // 301,842,432 = 214 requests
        self.assertEqual(cap["reserve_bytes"], 4_276_040_499)
        self.assertEqual(cap["max_requests"], 214)
        engines = {e["engine"]: e for e in cap["engine_defaults"]}
        # vLLM: 10% of total memory (ours by default); TensorRT-LLM: 10% of the memory left
        # after the weights, (85,520,809,984 - 16,381,470,720) // 10 = 6,913,933,926 B -> 206
        self.assertEqual(engines["vLLM"]["reserve_bytes"], 8_552_080_998)
        self.assertEqual(engines["vLLM"]["max_requests"], 200)
        self.assertEqual(engines["TensorRT-LLM"]["reserve_bytes"], 6_913_933_926)
        self.assertEqual(engines["TensorRT-LLM"]["max_requests"], 206)
        self.assertIsNone(engines["SGLang"]["reserve_bytes"])
        code, _, err = run_cli("decode", "--model", "qwen3-8b", "--input-len", "8", "--output-len", "8",
                               "--memory-convention", "nominal")
        self.assertEqual(code, 2)
        self.assertEqual(err.count("\n"), 1)


class HeldSumClosedForm(unittest.TestCase):
    """sum_n c(n) in closed form equals the explicit sum where c is not linear."""

    def check(self, model, first, last, **w):
        arch, wl = load_model(model), Workload(**w)
        want = sum(arch.kv_bytes(wl.kv_dtype, n, wl.mla) for n in range(first, last + 1))
        self.assertEqual(S.held_sum(arch, wl, first, last), want)

    def test_window(self):
        self.check("mistral-7b-v0.1", 4000, 4300)     # window 4096 fills on the way

    def test_chunks(self):
        self.check("llama-4-scout", 8000, 8500)       # chunk 8192: the open chunk restarts

    def test_sliding_and_global_layers(self):
        self.check("gemma-3-27b", 1000, 1100)         # window 1024 layers and global layers

    def test_recurrent_state(self):
        self.check("qwen3-next-80b-a3b", 10, 200)     # fixed state plus 12 full layers

    def test_window_mean_is_below_p_plus_g_over_2(self):
        # mistral: window 4096 caps the held tokens, so the mean over P = 3584, G = 1024 is
        # below P + G/2 = 4096 tokens: the held tokens are 3585..4096 then 4096 flat
        arch, w = load_model("mistral-7b-v0.1"), Workload()
        per_token = arch.kv_bytes(w.kv_dtype, 1, w.mla)
        total = S.held_sum(arch, w, 3585, 3584 + 1023)
        self.assertEqual(total, per_token * (sum(range(3585, 4097)) + 4096 * (1023 - 512)))
        self.assertLess(total / 1023, per_token * (3584 + 512))


class ValidateCommand(unittest.TestCase):
    def test_cases_within_bound_and_exit_status(self):
        code, out, _ = run_cli("validate", "--format", "json")
        self.assertEqual(code, 0)
        rec = json.loads(out)
        self.assertGreaterEqual(len(rec["cases"]), 5)
        self.assertEqual(rec["failures"], [])
        for c in rec["cases"]:
            if c["ratio"] is not None:
                self.assertLessEqual(c["ratio"], 1.0, c["id"])
                # a time (a collective's time_us, a step time) is compared as bound / measured
                time = c["unit"] in ("time_us", "step_time_s")
                self.assertAlmostEqual(c["ratio"], c["bound"] / c["measured"] if time else c["measured"] / c["bound"],
                                       places=12)
        # The spread per kind (one- and multi-device serving apart), device and format family,
        # recomputed here from the cases with statistics.median; the two MI300X runs (0.276 and
        # 0.227) have median 0.252 as docs/validation.md's table prints.
        import statistics

        groups = {}
        for c in rec["cases"]:
            if c["ratio"] is not None:
                kind = c["kind"] + (" (multi-device)" if c["devices"] > 1 and c["kind"].startswith("serving") else "")
                groups.setdefault((kind, c["device"], c["formats"]), []).append(c["ratio"])
        self.assertEqual([(g["kind"], g["device"], g["formats"]) for g in rec["spread"]], sorted(groups))
        for g in rec["spread"]:
            ratios = groups[(g["kind"], g["device"], g["formats"])]
            self.assertEqual((g["cases"], g["min_ratio"], g["max_ratio"]), (len(ratios), min(ratios), max(ratios)))
            self.assertAlmostEqual(g["median_ratio"], statistics.median(ratios), places=15)
        mi300x = next(g for g in rec["spread"] if g["device"] == "mi300x")
        self.assertEqual(mi300x["cases"], 2)
        self.assertEqual(round(mi300x["median_ratio"], 3), 0.252)

    def test_one_case_and_unknown_case(self):
        code, out, _ = run_cli("validate", "--case", "trtllm-llama31-8b-fp8-h100-sxm-128-2048", "--format", "json")
        self.assertEqual(code, 0)
        rec = json.loads(out)
        self.assertEqual([c["id"] for c in rec["cases"]], ["trtllm-llama31-8b-fp8-h100-sxm-128-2048"])
        self.assertEqual(rec["cases"][0]["measured"], 22714)
        code, _, err = run_cli("validate", "--case", "no-such-case")
        self.assertEqual(code, 2)
        self.assertIn("unknown validation case", err)

    def test_closest_case_is_decodes_bound_with_no_reserve(self):
        # The closest case of docs/validation.md: Llama 3.1 8B FP8 on one H100 at 128/4,096 (TensorRT-LLM
        # v1.0: 14,325 output tokens/s). validate's bound is decode's serving bound with no
        # reserve. Weights: 8,030,261,248 parameters at 1 B, the embedding and head
        # (2 x 128,256 x 4096) and 65 norms of 4096 kept at 2 B: 9,081,200,640 B; room =
        # 85,520,809,984 - 9,081,200,640 = 76,439,609,344 B. Cache: 32 layers x K,V x 8 heads
        # x 128 x 1 B = 65,536 B per token; held on average P + G/2 = 2,176 tokens, so the
        # steady-state concurrency is 76,439,609,344 / 142,606,336 = 536.018.
        code, out, _ = run_cli("validate", "--case", "trtllm-llama31-8b-fp8-h100-sxm-128-4096", "--format", "json")
        self.assertEqual(code, 0)
        case = json.loads(out)["cases"][0]
        code, out, _ = run_cli("decode", "--model", "llama-3.1-8b", "--weight-dtype", "fp8", "--act-dtype", "fp8",
                               "--kv-dtype", "fp8", "--input-len", "128", "--output-len", "4096", "--reserve", "0",
                               "--format", "json")
        self.assertEqual(code, 0)
        s = json.loads(out)["serving"]
        weights = 8_030_261_248 + 2 * 128_256 * 4096 + 65 * 4096
        self.assertEqual(weights, 9_081_200_640)
        self.assertEqual(s["cache_room_bytes"], H100_ALLOCATABLE - weights)
        # held over the G - 1 = 4,095 decode steps: sum over n = 129..4,223 of 65,536 n
        # = 65,536 x 4,095 x 2,176 (mean P + G/2 = 2,176 tokens)
        self.assertEqual(s["held_cache_steps"], 4095)
        self.assertEqual(s["held_cache_summed_bytes"], 65_536 * 4095 * (128 + 2048))
        self.assertAlmostEqual(case["concurrency"], (H100_ALLOCATABLE - weights) / (65_536 * 2176), places=9)
        self.assertEqual(case["bound"], s["steady_state"]["output_tokens_per_s"])
        self.assertEqual(round(case["bound"], 1), 21_252.6)              # docs/validation.md: 21,253
        self.assertEqual(round(case["ratio"], 3), 0.674)                 # 14,325 / 21,252.6

    def test_malformed_case_is_a_clear_error(self):
        import tempfile

        from infracalc.analyses import validate as V
        from infracalc.errors import UserError

        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "bad.json"), "w", encoding="utf-8") as f:
                json.dump({"id": "bad", "kind": "serving-throughput"}, f)
            with self.assertRaisesRegex(UserError, "bad.json: missing required field 'source'"):
                V.validate(directory=d)

    def test_a_beaten_bound_fails_unless_exempt(self):
        import tempfile

        from infracalc.analyses import validate as V

        src = os.path.join(V.VALIDATION_DIR, "trtllm-llama31-8b-fp8-h100-sxm-128-2048.json")
        with open(src, encoding="utf-8") as f:
            case = json.load(f)
        with tempfile.TemporaryDirectory() as d:
            case.update(id="too-fast")
            case["measured"]["value"] = 10**6
            with open(os.path.join(d, "too-fast.json"), "w", encoding="utf-8") as f:
                json.dump(case, f)
            rec = V.validate(directory=d)
            self.assertEqual(rec["failures"], ["too-fast"])
            case["exemption"] = {"reason": "test: a stated reason"}
            with open(os.path.join(d, "too-fast.json"), "w", encoding="utf-8") as f:
                json.dump(case, f)
            rec = V.validate(directory=d)
            self.assertEqual(rec["failures"], [])
            self.assertEqual(rec["cases"][0]["status"], "exempt")

    def test_cli_exit_status_and_printed_exemption(self):
        # What CI runs: `validate` exits 3 when a measurement beats its bound and prints the
        # case as exceeding it; with a reasoned exemption it exits 0 and prints the reason.
        import functools
        import tempfile
        from unittest import mock

        from infracalc.analyses import validate as V

        src = os.path.join(V.VALIDATION_DIR, "trtllm-llama31-8b-fp8-h100-sxm-128-2048.json")
        with open(src, encoding="utf-8") as f:
            case = json.load(f)
        case.update(id="too-fast")
        case["measured"]["value"] = 10**6
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "too-fast.json")
            here = functools.partial(V.validate, directory=d)
            with mock.patch.object(V, "validate", here):
                for exemption, want in ((None, 3), ({"reason": "a stated reason"}, 0)):
                    case["exemption"] = exemption
                    with open(path, "w", encoding="utf-8") as f:
                        json.dump(case, f)
                    code, out, _ = run_cli("validate")
                    self.assertEqual(code, want)
                    if exemption:
                        self.assertIn("- `too-fast`: exempt: a stated reason", out)
                        self.assertIn("No measurement exceeds its bound.", out)
                    else:
                        self.assertIn("**1 case(s) exceed their bound:** `too-fast`", out)
                    code, out, _ = run_cli("validate", "--format", "csv")
                    self.assertEqual(code, want)
                    self.assertIn("exempt,a stated reason" if exemption else "EXCEEDS BOUND", out)


if __name__ == "__main__":
    unittest.main()

"""The predicted serving figure (analyses/efficiency/serving), its fit (efficiency/fit) and
validate's accuracy table (analyses/validate_predict)."""

import math
import os
import unittest

import support

from infracalc.analyses import validate as V
from infracalc.analyses import validate_predict as VP
from infracalc.analyses.efficiency import fit, serving, training
from infracalc.ops import Op


class EngineBatch(unittest.TestCase):
    """NVIDIA/TensorRT-LLM tensorrt_llm/bench/build/tuning.py, finetune_setting (pp = 1)."""

    def test_rounding_rule(self):
        per = 1000
        # raw < 256: 32 x ceil(raw / 32), at least 64
        self.assertEqual(serving.engine_batch(10 * per, per), 64)
        self.assertEqual(serving.engine_batch(100 * per, per), 128)      # 32 x 4
        # 256 <= raw < 1024: 128 x ceil(raw / 128)
        self.assertEqual(serving.engine_batch(300 * per, per), 384)
        # raw >= 1024: 256 x ceil(raw / 256); capped at 4096 requests before rounding
        self.assertEqual(serving.engine_batch(1500 * per, per), 1536)
        self.assertEqual(serving.engine_batch(10_000 * per, per), 4096)
        self.assertEqual(serving.engine_batch(5, 0), 4096)               # no cache: the cap


class Concurrency(unittest.TestCase):
    def test_llama_8b_fp8_on_h100(self):
        # Llama 3.1 8B, FP8 KV: 32 layers x 8 KV heads x 128 x (K and V) x 1 B = 65,536 B per token.
        # Room = 0.9 x (85,520,809,984 B - weights); a request reserves its final 1000 + 1000 - 1
        # tokens; the engine limit counts 1000 + 1000 (tuning.py's target ISL + OSL).
        from support import DTYPES, Workload, load_model
        from infracalc.load.hardware import load_device

        arch, d = load_model("llama-3.1-8b"), load_device("h100-sxm")
        fp8 = DTYPES["fp8"]
        w = Workload(weight_dtype=fp8, act_dtype=fp8, kv_dtype=fp8)
        room = 0.9 * (85_520_809_984 - arch.weight_bytes(w))
        n, got_room, limit = serving.concurrency(arch, w, d.memory_bytes, 1000, 1000)
        self.assertAlmostEqual(got_room, room, places=3)
        raw = room / (65_536 * 2000)
        self.assertTrue(256 <= raw < 1024, raw)                     # the 128-multiple band
        self.assertEqual(limit, 128 * math.ceil(raw / 128))
        self.assertEqual(n, min(int(room // (65_536 * 1999)), limit))


class FiniteRun(unittest.TestCase):
    """A finite run's published request count caps the concurrency (setup.requests)."""

    def setUp(self):
        from support import DTYPES, Workload, load_model
        from infracalc.load.hardware import load_device

        self.arch, self.d = load_model("llama-3.1-8b"), load_device("h100-sxm")
        fp8 = DTYPES["fp8"]
        self.w = Workload(weight_dtype=fp8, act_dtype=fp8, kv_dtype=fp8)

    def test_requests_below_the_engine_limit(self):
        # Llama 3.1 8B FP8 on H100, 1000/1000: the memory keeps floor(room / (65,536 x 1999 B)) in
        # flight, at most the engine's limit (Concurrency above: 525 of a limit of 640); a run of 500
        # requests keeps 500, a run of 5,000 the memory's figure; the limit itself is unchanged.
        room = 0.9 * (85_520_809_984 - self.arch.weight_bytes(self.w))
        free, _, limit = serving.concurrency(self.arch, self.w, self.d.memory_bytes, 1000, 1000)
        self.assertEqual(free, min(int(room // (65_536 * 1999)), limit))
        self.assertEqual((free, limit), (525, 640))
        self.assertEqual(serving.concurrency(self.arch, self.w, self.d.memory_bytes, 1000, 1000, requests=500),
                         (500, room, limit))
        self.assertEqual(serving.concurrency(self.arch, self.w, self.d.memory_bytes, 1000, 1000, requests=5000)[0],
                         free)

    def test_prediction_at_the_request_count(self):
        # At constants (0, 0, 1 us, 0, 0) a run of 500 requests is the iteration at N = 500: its per-
        # sequence work 1 us x 500 x 32 layers = 16 ms, and the same iteration predicted_at_batch sums
        # at batch 500 (a second path to the same figure); 500 x 1000 / 999 output tokens per iteration.
        from infracalc.layout import Layout

        c = (0.0, 0.0, 1e-6, 0.0, 0.0)
        rec = serving.predicted_serving(self.arch, self.w, self.d, 1000, 1000, c, requests=500)
        self.assertEqual((rec["concurrency"], rec["requests"]), (500, 500))
        self.assertAlmostEqual(rec["sequence_s"], 0.016, places=15)
        at = serving.predicted_at_batch(self.arch, self.w, self.d, Layout(), 1000, 1000, 500, c)
        self.assertAlmostEqual(rec["iteration_s"], at["tpot_s"], places=15)
        self.assertAlmostEqual(rec["output_tokens_per_s"], 500 * 1000 / 999 / rec["iteration_s"], places=6)
        self.assertNotIn("requests", serving.predicted_serving(self.arch, self.w, self.d, 1000, 1000, c))

    def test_replicas_share_the_requests(self):
        # dp 2 replicas of a 501-request run: each keeps ceil(501 / 2) = 251 in flight
        from infracalc.layout import Layout

        rec = serving.predicted_layout(self.arch, self.w, self.d, Layout(dp=2), 1000, 1000, requests=501)
        self.assertEqual((rec["concurrency"], rec["requests"]), (251, 251))

    def test_online_case_runs_at_its_500_requests(self):
        # TensorRT-LLM 0.14's online rows: "500 requests, offered load QPS INF"; the memory and the
        # engine would keep more (limit 1280 on H100 at 202 + 214 tokens)
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "trtllm014-serving-llama31-8b-bf16-h100-sxm-202-214-qps-inf.json"))
        self.assertEqual(case["setup"]["requests"], 500)
        _, rec = VP.serving_prediction(case)
        self.assertEqual(rec["concurrency"], 500)
        self.assertIn("at concurrency 500 (engine limit 1280, requests 500)", VP.cause(rec))

    def test_schema_field(self):
        from infracalc.analyses import case_schema
        check, _ = case_schema.SETUP_FIELDS["requests"]
        self.assertTrue(check(500))
        for bad in (0, -1, 2.5, "500", True):
            self.assertFalse(check(bad), bad)


class SequenceWork(unittest.TestCase):
    def test_per_sequence_per_layer(self):
        # Llama 3.1 8B (32 layers) FP8 on H100, 1000/1000: at constants (0, 0, 1 us) the iteration is
        # the operator sum plus 1 us x N x 32 on the GPU, no host time; at (0, 5 ms, 0) it is the
        # operator sum plus 5 ms of host time.
        from support import DTYPES, Workload, load_model
        from infracalc.load.hardware import load_device

        arch, d = load_model("llama-3.1-8b"), load_device("h100-sxm")
        fp8 = DTYPES["fp8"]
        w = Workload(weight_dtype=fp8, act_dtype=fp8, kv_dtype=fp8)
        base = serving.predicted_serving(arch, w, d, 1000, 1000, (0.0, 0.0, 0.0, 0.0, 0.0))
        seq = serving.predicted_serving(arch, w, d, 1000, 1000, (0.0, 0.0, 1e-6, 0.0, 0.0))
        host = serving.predicted_serving(arch, w, d, 1000, 1000, (0.0, 5e-3, 0.0, 0.0, 0.0))
        n = base["concurrency"]
        self.assertEqual(len(arch.layers), 32)
        self.assertAlmostEqual(seq["sequence_s"], 1e-6 * n * 32, places=15)
        self.assertAlmostEqual(seq["iteration_s"] - base["iteration_s"], 1e-6 * n * 32, places=12)
        self.assertAlmostEqual(seq["gpu_s"] - base["gpu_s"], 1e-6 * n * 32, places=12)
        self.assertEqual(seq["host_s"], 0.0)
        self.assertAlmostEqual(host["iteration_s"] - base["iteration_s"], 5e-3, places=12)
        self.assertEqual(host["host_s"], 5e-3)

    def test_per_prompt_token_per_layer(self):
        # The context phase's per-token work: at constants (0, 0, 0, 0.1 us) the iteration is the
        # operator sum plus 0.1 us x (N x 1000 / 999 prompt tokens) x 32 layers, on the GPU; the
        # record carries the prompt tokens per iteration, N P / (G - 1).
        from support import DTYPES, Workload, load_model
        from infracalc.load.hardware import load_device

        arch, d = load_model("llama-3.1-8b"), load_device("h100-sxm")
        fp8 = DTYPES["fp8"]
        w = Workload(weight_dtype=fp8, act_dtype=fp8, kv_dtype=fp8)
        base = serving.predicted_serving(arch, w, d, 1000, 1000, (0.0, 0.0, 0.0, 0.0, 0.0))
        pre = serving.predicted_serving(arch, w, d, 1000, 1000, (0.0, 0.0, 0.0, 1e-7, 0.0))
        n = base["concurrency"]
        self.assertAlmostEqual(pre["prefill_tokens"], n * 1000 / 999, places=9)
        self.assertAlmostEqual(pre["prefill_token_s"], 1e-7 * n * 1000 / 999 * 32, places=15)
        self.assertAlmostEqual(pre["iteration_s"] - base["iteration_s"], 1e-7 * n * 1000 / 999 * 32, places=12)
        self.assertAlmostEqual(pre["gpu_s"] - base["gpu_s"], 1e-7 * n * 1000 / 999 * 32, places=12)
        self.assertEqual(pre["sequence_s"], 0.0)


class LatencyLimit(unittest.TestCase):
    """MLPerf Server: the concurrency is the largest whose iteration (TPOT) meets the limit."""

    def test_bisection_by_hand(self):
        # step(m) = 10 ms + 1 ms x m: within 100 ms up to m = 90, exactly (by hand)
        step = lambda m: 0.010 + 0.001 * m   # noqa: E731
        self.assertEqual(serving.latency_limited(step, 500, 0.1000001), 90)
        self.assertEqual(serving.latency_limited(step, 50, 0.1), 50)      # memory binds first
        self.assertEqual(serving.latency_limited(step, 500, 0.005), 1)    # even one request misses

    def test_mlperf_limits(self):
        # llama3.1-8b Server: p99 TPOT 100 ms (inference_rules.adoc); llama2-70b: 200 ms (mlperf.conf)
        cases = {c["id"]: c for c in map(V.load_case, V.case_paths())}
        self.assertEqual(VP.tpot_limit(cases["mlperf51-redhat-llama31-8b-fp8-l40s-server"]), 0.100)
        self.assertEqual(VP.tpot_limit(cases["mlperf41-llama2-70b-fp8-mi300x-server"]), 0.200)
        self.assertIsNone(VP.tpot_limit(cases["mlperf41-llama2-70b-fp8-mi300x-offline"]))
        # trtllm-bench at unlimited request rate has no latency limit
        self.assertIsNone(VP.tpot_limit(cases["trtllm014-serving-llama31-8b-bf16-h100-sxm-467-256-qps-inf"]))

    def test_server_case_meets_its_limit(self):
        # The MI300X Server case: the predicted iteration is within 200 ms, one more request is not.
        case = V.load_case(next(p for p in V.case_paths() if "mi300x-server" in p))
        _, rec = VP.serving_prediction(case)
        self.assertLessEqual(rec["iteration_s"], 0.200)
        _, off = VP.serving_prediction(V.load_case(next(p for p in V.case_paths() if "mi300x-offline" in p)))
        self.assertLess(rec["concurrency"], off["concurrency"])
        self.assertEqual(rec["memory_concurrency"], off["concurrency"])   # the same memory rule
        self.assertIn("held by the 200 ms TPOT limit", VP.cause(rec))
        # B200's Server run is within 200 ms at its memory's concurrency: not held
        _, b200 = VP.serving_prediction(V.load_case(next(p for p in V.case_paths() if "b200-server" in p)))
        self.assertEqual(b200["concurrency"], b200["memory_concurrency"])
        self.assertNotIn("held", VP.cause(b200))
        from infracalc.analyses.validate import _device, _model, _serving_workload
        s = case["setup"]
        arch, device = _model(case), _device(s["device"])
        w = _serving_workload(s, arch)
        k, f, q, t, h = VP.constants_for(case)[0]
        rates = serving.predict.achievable(device, w.compute_dtype, k)


        def step(n):   # the iteration at n in flight, as predicted_serving sums it
            gpu, _ = serving.iteration(arch, w, rates, n, s["input_len"], s["output_len"])
            return gpu + f + h * n + (q * n + t * n * s["input_len"] / (s["output_len"] - 1)) * len(arch.layers)

        # the limit binds the 99th-percentile request's iteration, at tail_concurrency of the mean:
        # within 200 ms at the answer, over it one request more
        cap = rec["memory_concurrency"]
        self.assertLessEqual(step(serving.tail_concurrency(rec["concurrency"], cap)), 0.200)
        self.assertGreater(step(serving.tail_concurrency(rec["concurrency"] + 1, cap)), 0.200)

    def test_tail_concurrency_by_hand(self):
        # Z_TAIL is the standard normal's 99th percentile
        import statistics
        self.assertEqual(serving.Z_TAIL, statistics.NormalDist().inv_cdf(0.99))
        # m = 150 in flight on average: the window's variance 2 x 150 / 3 = 100, sd 10;
        # p99 = ceil(150 + 2.3263 x 10) = ceil(173.26) = 174
        self.assertEqual(serving.tail_concurrency(150, 10**6), 174)
        self.assertEqual(serving.tail_concurrency(150, 160), 160)   # the memory's N caps it
        # a Server case's p99 request sees more than the mean: its concurrency is below the mean rule's
        step = lambda m: 0.010 + 0.001 * m   # noqa: E731
        mean_rule = serving.latency_limited(step, 500, 0.1000001)
        tail_rule = serving.latency_limited(lambda m: step(serving.tail_concurrency(m, 500)), 500, 0.1000001)
        self.assertEqual(mean_rule, 90)
        # m + 2.3263 sqrt(2m/3) <= 90: m = 73 gives ceil(73 + 16.23) = 90, m = 74 gives 91
        self.assertEqual(tail_rule, 73)


class MixedIteration(unittest.TestCase):
    def test_weights_once_work_adds(self):
        dec = [Op("q", "linear", "[8,4]x[4,4]", matrix_flops=256, weight_read=32, act_read=64, act_write=64),
               Op("att", "attention", "x", matrix_flops=100, kv_read=1000, act_read=10)]
        pre = [Op("q", "linear", "[16,4]x[4,4]", matrix_flops=512, weight_read=32, act_read=128, act_write=128),
               Op("att", "attention", "x", matrix_flops=300, kv_read=0, kv_write=500, act_read=20)]
        q, att, att_pre = serving.mixed_ops(dec, pre, 0.5)
        self.assertEqual((q.matrix_flops, q.weight_read, q.act_read, q.act_write), (512, 32, 128, 128))
        # one GEMM over the iteration's tokens: 8 decode tokens + 0.5 x 16 prompt tokens = 16 rows
        self.assertEqual(q.shape, "[16,4]x[4,4]")
        # its wave quantisation reads them: 300 decode + 0.5 x 2,048 = 1,324 tokens x 4,096 on 132
        # SMs: 11 x 32 = 352 tiles, 3 waves of 132 -> 352 / 396 (the decode's 300 rows alone: 3 x 32
        # = 96 tiles, below one wave, 1.0)
        big = serving.mixed_ops([Op("q", "linear", "[300,4096]x[4096,4096]", matrix_flops=1)],
                                [Op("q", "linear", "[2048,4096]x[4096,4096]", matrix_flops=1)], 0.5)[0]
        self.assertEqual(big.shape, "[1324,4096]x[4096,4096]")
        self.assertAlmostEqual(serving.predict.wave(big, 132), 352 / 396, places=15)
        # attention: the decodes' row unchanged, the prefills' row at half its work (two kernels)
        self.assertEqual((att.matrix_flops, att.kv_read, att.kv_write, att.act_read), (100, 1000, 0, 10))
        self.assertEqual((att_pre.matrix_flops, att_pre.kv_read, att_pre.kv_write, att_pre.act_read),
                         (150, 0, 250, 10))

    def test_context_and_generation_attention_add(self):
        # One decode attention row bound by its KV read (1e9 B at 1e12 B/s = 1 ms) and a prefill
        # share bound by its FLOPs (1e12 at 1e15 FLOP/s = 1 ms): two kernels, 2 ms, not max = 1 ms.
        from infracalc.analyses.efficiency.predict import Rates, op_time
        p = Rates(matrix_flops_per_s=1e15, attention_flops_per_s=1e15, vector_flops_per_s=1e14,
                  bytes_per_s=1e12, kernel_s=0.0)
        dec = [Op("att", "attention", "x", matrix_flops=1, kv_read=10**9)]
        pre = [Op("att", "attention", "x", matrix_flops=2 * 10**12, kv_write=1)]
        rows = serving.mixed_ops(dec, pre, 0.5)
        self.assertAlmostEqual(sum(op_time(r, p) for r in rows), 2e-3, places=9)

    def test_different_operators_are_not_merged(self):
        # a recurrent decode against a chunked prefill: both lists, the prefill scaled, weights twice
        dec = [Op("delta_recurrent", "vector", "x", vector_flops=10, weight_read=8)]
        pre = [Op("delta_chunked", "linear", "x", matrix_flops=400, weight_read=8, act_read=40)]
        rows = serving.mixed_ops(dec, pre, 0.25)
        self.assertEqual([r.name for r in rows], ["delta_recurrent", "delta_chunked"])
        self.assertEqual((rows[1].matrix_flops, rows[1].act_read, rows[1].weight_read), (100, 10, 8))


def moe_block(model, lay):
    """The first MoE block of `model`'s first stage shard under `lay`."""
    from infracalc import layout as placement
    from infracalc.blocks.moe import MoE
    from infracalc.load.models import load_model

    arch = load_model(model)
    shard = placement.shard(arch, lay, placement.stages(arch, lay)[0])
    return next(b for layer in shard.layers for b in layer.blocks if isinstance(b, MoE))


def moe_stage(model, lay, tokens, act):
    """(arch, its first stage, the training workload of one `tokens`-token sequence with activations
    in `act`, B200's roof of the stored format) for a MoE pass test."""
    from infracalc import layout as placement
    from infracalc.analyses import train_flops
    from infracalc.analyses import train_time as TT
    from infracalc.analyses.validate import _device
    from infracalc.dtypes import dtype
    from infracalc.load.models import load_model
    from infracalc.workload import Workload

    arch = load_model(model)
    w = train_flops.training_workload(Workload(batch=1, tokens=tokens, logits="all", weight_dtype=dtype("bf16"),
                                               act_dtype=dtype(act), kv_dtype=dtype(act)))
    return arch, placement.stages(arch, lay)[0], w, TT.roofs_of(_device("b200"), w)[1]


corpus = support.corpus   # V.validate() over the whole corpus, once per test run (read only)


class CorpusPrediction(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rec = corpus()

    def test_never_above_the_bound(self):
        # a predicted rate is below the bound, a predicted time above it, on every case
        rows = [r for r in self.rec["cases"] if r["predicted"] is not None]
        self.assertGreaterEqual(len(rows), 200)
        for r in rows:
            if str(r["unit"]).startswith("time") or r["unit"] == "step_time_s":
                self.assertGreater(r["predicted"], r["bound"], r["id"])
            else:
                self.assertLess(r["predicted"], r["bound"], r["id"])

    def test_accuracy_rows_match_cases(self):
        acc = {a["family"]: a for a in self.rec["accuracy"]}
        self.assertEqual(list(acc), list(VP.FAMILIES))
        for fam, a in acc.items():
            errs = sorted(abs(r["predicted_error"]) for r in self.rec["cases"]
                          if r["family"] == fam and r["predicted_error"] is not None and not r["predicted_in_sample"])
            self.assertEqual(a["cases"], len(errs))
            if errs:
                self.assertEqual(a["p90_abs_error"], VP.percentile(errs, 0.9))
                self.assertEqual(max(errs), abs(a["worst_error"]))

    def test_in_sample_cases_are_printed_not_counted(self):
        # efficiency.collective.A2A_NVLINK_BUSBW_GBPS takes rapidsmpf #590's 4- and 8-rank busbw: those
        # two cases' predictions restate their own measurement (within the latency term), so the
        # collectives' accuracy leaves them out; its 2-rank row (topo.h's figure x residual) stays in
        rows = {r["id"]: r for r in self.rec["cases"]}
        self.assertEqual(sorted(i for i, r in rows.items() if r["predicted_in_sample"]),
                         ["rapidsmpf590-alltoall-b200-x4", "rapidsmpf590-alltoall-b200-x8"])
        for i in ("rapidsmpf590-alltoall-b200-x4", "rapidsmpf590-alltoall-b200-x8"):
            self.assertLess(abs(rows[i]["predicted_error"]), 0.01, i)
            self.assertIn("in-sample", rows[i]["predicted_fit"])
        counted = [r for r in rows.values() if r["family"] == "collectives" and r["predicted"] is not None]
        acc = {a["family"]: a for a in self.rec["accuracy"]}
        self.assertEqual(acc["collectives"]["cases"], len(counted) - 2)

    def test_every_case_uses_a_held_out_fit(self):
        for r in self.rec["cases"]:
            if r["predicted"] is not None and not r["predicted_in_sample"]:
                self.assertTrue(r["predicted_fit"].endswith(("without its publication", "without its publisher")),
                                r["id"])


class TrainingRecipe(unittest.TestCase):
    def test_interleaved_schedule_of_the_recipe(self):
        # NeMo 24.07's GPT-3 175B recipe: pp 8 with virtual pipeline size 6 (the case's layout.vp)
        # runs Megatron's interleaved schedule: the predicted step uses it, its bubble
        # (p - 1) / (v m) of the micro-batch time, not 1F1B's (p - 1) / m.
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "nemo2407-pretrain-gpt3-175b-fp8-h100-sxm-x128.json"))
        _, t = VP.training_prediction(case, 1.0)
        self.assertEqual((t.schedule, t.chunks), ("interleaved", 6))
        # m = global 256 / (dp 4 x micro-batch 1) = 64; every stage has the same micro-batch time
        # here up to its first/last layers, so the bubble is near 7 / (6 x 64) of the pipeline
        self.assertLess(t.bubble_s / t.pipeline_s, 0.03)
        # a case without vp keeps 1F1B
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "torchtitan-llama3-8b-bf16-a100-x64.json"))
        self.assertEqual(VP.training_prediction(case, 1.0)[1].schedule, "1f1b")

    def test_the_rows_own_checkpointing(self):
        # torchtitan's table prints the activation checkpointing per row: 70B 'full', 13B 'no'.
        # Full recompute runs every layer's forward again, so its step exceeds the same case's
        # step under the recipe's default (selective) by at least the layers' forward compute.
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "torchtitan-llama3-70b-bf16-a100-x64.json"))
        self.assertEqual(case["setup"]["recompute"], "full")
        _, full = VP.training_prediction(case, 1.0)
        del case["setup"]["recompute"]
        _, default = VP.training_prediction(case, 1.0)
        st = full.stages[0]
        self.assertGreater(st.compute.recompute, 0.9 * st.compute.forward)
        self.assertGreater(full.step_s, default.step_s)
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "torchtitan-llama2-13b-bf16-a100-x64.json"))
        self.assertEqual(VP.training_prediction(case, 1.0)[1].stages[0].compute.recompute, 0.0)


class TpOverlap(unittest.TestCase):
    def test_tp_exposed_beyond_the_phase_compute(self):
        from infracalc.analyses import train_time as TT
        from infracalc.collectives import Collective

        tp = Collective("tp", "all_reduce", 1, 4, "up", dim="tp")
        ep = Collective("ep", "all_to_all", 1, 4, "up", dim="ep")
        timed = [TT.Timed(tp, "forward", 3.0), TT.Timed(ep, "forward", 0.5), TT.Timed(tp, "backward", 1.0)]
        compute = TT.Pass(forward=2.0, backward=4.0)
        # forward: EP 0.5 exposed + TP max(0, 3 - 2) = 1.5; backward: TP 1 under 4 s of compute: 0
        got = TT._pass_of(timed, compute)
        self.assertEqual((got.forward, got.backward), (1.5, 0.0))
        # without overlap every collective is exposed
        plain = TT._pass_of(timed)
        self.assertEqual((plain.forward, plain.backward), (3.5, 1.0))

    def test_ep_hidden_with_tp_under_an_overlapping_schedule(self):
        from infracalc.analyses import train_time as TT
        from infracalc.collectives import Collective

        tp = Collective("tp", "all_reduce", 1, 4, "up", dim="tp")
        ep = Collective("ep", "all_to_all", 1, 4, "up", dim="ep")
        timed = [TT.Timed(tp, "forward", 1.5), TT.Timed(ep, "forward", 1.0), TT.Timed(ep, "backward", 5.0)]
        compute = TT.Pass(forward=2.0, backward=4.0)
        # TP and EP together under the phase's compute: forward max(0, 1.5 + 1 - 2) = 0.5,
        # backward max(0, 5 - 4) = 1
        got = TT._pass_of(timed, compute, TT.hidden_dims(True, True))
        self.assertEqual((got.forward, got.backward), (0.5, 1.0))
        # EP alone hidden: TP's 1.5 stays exposed in the forward
        got = TT._pass_of(timed, compute, TT.hidden_dims(False, True))
        self.assertEqual((got.forward, got.backward), (1.5, 1.0))

    def test_deepseek_recipe_hides_its_all_to_all_and_dispatches_fp8(self):
        # DeepSeek-V3 report 3.2.1 (DualPipe overlaps the all-to-all) and 3.3 (FP8 dispatch)
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "deepseek-v3-report-pretrain-h800-x2048.json"))
        _, t = VP.training_prediction(case, 1.0)
        st = t.stages[1]
        ep = [x for x in st.collectives if x.collective.dim == "ep"]
        dispatch = next(x.collective for x in ep if "dispatch" in x.collective.name)
        combine = next(x.collective for x in ep if "combine" in x.collective.name)
        # fp8 with a 4-byte scale per 128 values: 7168 + 4 x 56 = 7392 B per copy against bf16's 14,336
        self.assertEqual(dispatch.bytes * 14336, combine.bytes * 7392)
        self.assertLess(st.comm.forward, sum(x.seconds for x in st.collectives if x.phase == "forward"))

    def test_predicted_step_prices_collectives_with_nccls_model(self):
        from infracalc import comm
        from infracalc.analyses import train_time as TT
        from infracalc.analyses.efficiency import collective as EC
        from infracalc.analyses.validate import _device

        case = V.load_case(os.path.join(V.VALIDATION_DIR, "nemo2407-pretrain-llama2-70b-fp8-h100-sxm-x64.json"))
        _, t = VP.training_prediction(case, 1.0)
        device = _device("h100-sxm")
        links = comm.links(device)
        for x in t.stages[0].collectives:
            want = EC.predicted_s(x.collective, links, device.id)[0] * x.collective.count
            self.assertAlmostEqual(x.seconds, want, places=15)
            self.assertEqual(TT.run_s(x.collective, links, "ring"), comm.run_s(x.collective, links, "ring"))

    def test_floor_stays_below_the_predicted_recipes_step(self):
        from infracalc import layout as placement
        from infracalc.analyses import train_time as TT
        from infracalc.analyses.validate import _device
        from infracalc.dtypes import dtype
        from infracalc.load.models import load_model
        from infracalc.workload import Workload

        arch = load_model("qwen3-30b-a3b")
        w = Workload(batch=1, tokens=4096, logits="all", weight_dtype=dtype("bf16"), act_dtype=dtype("bf16"),
                     kv_dtype=dtype("bf16"))
        lay = placement.Layout(tp=1, pp=2, dp=8, cp=1, ep=8, micro_batches=8)
        opts = dict(overlap_tp=True, overlap_ep=True, collective_model="nccl")
        step = TT.step_time(arch, w, lay, _device("h100-sxm"), **opts).step_s
        self.assertLessEqual(TT.step_floor(arch, w, lay, _device("h100-sxm"), **opts), step)

    def test_expert_host_pass_by_hand(self):
        # Qwen3-30B-A3B at EP 8 on one stage: 48 MoE layers x 128 / 8 = 16 local experts = 768;
        # 240 us each per micro-batch: forward a third (61.44 ms), backward two thirds (122.88 ms),
        # a full recompute the forward's share again
        from infracalc import layout as placement
        from infracalc.analyses import train_time as TT
        from infracalc.load.models import load_model

        arch = load_model("qwen3-30b-a3b")
        lay = placement.Layout(tp=1, pp=1, dp=8, cp=1, ep=8, micro_batches=4)
        st = placement.stages(arch, lay)[0]
        self.assertEqual(TT.local_expert_layers(arch, lay, st), 768)
        got = TT.expert_host_pass(arch, lay, st, 240e-6, "full")
        self.assertAlmostEqual(got.forward, 0.06144, places=12)
        self.assertAlmostEqual(got.backward, 0.12288, places=12)
        self.assertAlmostEqual(got.recompute, 0.06144, places=12)
        self.assertEqual(TT.expert_host_pass(arch, lay, st, 240e-6, "none").recompute, 0.0)
        # a dense model has no local experts
        self.assertEqual(TT.local_expert_layers(load_model("llama-3.1-8b"), placement.Layout(dp=8),
                                                placement.stages(load_model("llama-3.1-8b"), placement.Layout(dp=8))[0]), 0)

    def test_exposed_host_pass_by_hand(self):
        # per phase max(0, host - GPU): forward 3 - 1 = 2, backward 6 - 8 < 0 -> 0, recompute 3 - 0 = 3
        from infracalc.analyses import train_time as TT

        got = TT.exposed_host_pass(TT.Pass(forward=3.0, backward=6.0, recompute=3.0), TT.Pass(forward=1.0, backward=8.0))
        self.assertEqual((got.forward, got.backward, got.weight_grad, got.recompute), (2.0, 0.0, 0.0, 3.0))

    def test_host_in_full_under_the_overlapped_schedule(self):
        # Qwen3-30B-A3B at EP 8, 768 local expert-layers, 100 us each: under overlap_ep the host time is
        # charged in full, 768 x 100 us = 76.8 ms per micro-batch; in the plain schedule at eight
        # sequences per micro-batch the MoE blocks' GPU time hides part of it
        from infracalc import layout as placement
        from infracalc.analyses import train_time as TT
        from infracalc.analyses.validate import _device
        from infracalc.dtypes import dtype
        from infracalc.load.models import load_model
        from infracalc.workload import Workload

        arch = load_model("qwen3-30b-a3b")
        lay = placement.Layout(tp=1, pp=1, dp=8, cp=1, ep=8, micro_batches=8)
        w = Workload(batch=8, tokens=4096, logits="all", weight_dtype=dtype("bf16"), act_dtype=dtype("fp8"),
                     kv_dtype=dtype("fp8"))
        opts = dict(overlap_tp=True, collective_model="nccl", expert_gemm_host_s=1e-4)
        full = TT.step_time(arch, w, lay, _device("b200"), overlap_ep=True, **opts).stages[0].host_s
        plain = TT.step_time(arch, w, lay, _device("b200"), overlap_ep=False, **opts).stages[0].host_s
        self.assertAlmostEqual(full, 768 * 1e-4, places=12)
        self.assertLess(plain, full)

    def test_moe_block_pass_is_the_layers_moe_share(self):
        # the MoE blocks' GPU time is the layer pass less its other blocks' (attention, norms), and it
        # grows with the tokens, so more sequences per micro-batch hide more of a fixed host cost
        from infracalc import layout as placement
        from infracalc.analyses import train_time as TT
        from infracalc.analyses.validate import _device
        from infracalc.blocks.moe import MoE
        from infracalc.dtypes import dtype
        from infracalc.load.models import load_model
        from infracalc.workload import Workload

        arch = load_model("qwen3-30b-a3b")
        lay = placement.Layout(tp=1, pp=1, dp=8, cp=1, ep=8, micro_batches=4)
        st = placement.stages(arch, lay)[0]
        dev = _device("b200")

        def passes(batch):
            w = TT.train_flops.training_workload(Workload(batch=batch, tokens=4096, logits="all", weight_dtype=dtype("bf16"),
                                                          act_dtype=dtype("fp8"), kv_dtype=dtype("fp8")))
            roofs = TT.roofs_of(dev, w)
            moe = TT.moe_block_pass(arch, lay, st, w, roofs, recompute="none", flash=False)
            whole = other = TT.Pass()
            for layer, count, _ in placement.device_layers(arch, lay, st):
                whole = whole + TT.layer_pass(layer, w, roofs, cp=1, recompute="none", flash=False).times(count)
                rest = layer.replace(blocks=tuple(b for b in layer.blocks if not isinstance(b, MoE)))
                other = other + TT.layer_pass(rest, w, roofs, cp=1, recompute="none", flash=False).times(count)
            return moe, whole, other

        moe, whole, other = passes(1)
        self.assertGreater(moe.forward, 0.0)
        self.assertAlmostEqual(moe.forward + other.forward, whole.forward, places=12)
        self.assertAlmostEqual(moe.backward + other.backward, whole.backward, places=12)
        self.assertGreater(passes(8)[0].forward, 4 * moe.forward)

    def test_permute_bytes_by_hand(self):
        # Megatron-Core's all-to-all dispatcher, one MoE layer's forward, BF16 (2 bytes):
        # GPT-OSS-120B at EP 64 (2 of 128 experts local), 8,192 tokens, top-4, hidden 2,880:
        # permute 8,192 + 32,768 rows, two local-expert sorts 2 x 2 x 32,768 rows:
        # 2 x 2,880 x (8,192 + 32,768 + 131,072) = 990,904,320 bytes
        from infracalc import layout as placement
        from infracalc.analyses import train_time as TT

        block = moe_block
        oss = block("gpt-oss-120b", placement.Layout(dp=64, ep=64))
        self.assertEqual(oss.local_experts, 2)
        self.assertEqual(TT.permute_bytes(oss, 8192), 990_904_320)
        # Qwen3-30B-A3B at EP 8 (16 local), 4,096 tokens, top-8, hidden 2,048:
        # 2 x 2,048 x (4,096 + 32,768 + 4 x 32,768) = 687,865,856
        self.assertEqual(TT.permute_bytes(block("qwen3-30b-a3b", placement.Layout(dp=8, ep=8)), 4096), 687_865_856)
        # one local expert (EP = experts): no sort, only the permute: 2 x 2,048 x (4,096 + 32,768)
        self.assertEqual(TT.permute_bytes(block("qwen3-30b-a3b", placement.Layout(dp=128, ep=128)), 4096),
                         150_994_944)

    def test_expert_bias_bytes_by_hand(self):
        # Megatron-Core's TEGroupedMLP._apply_bias, one MoE layer, BF16 (2 bytes): GPT-OSS-120B at
        # EP 64, 8,192 tokens, top-4: 32,768 routed copies of hidden 2,880, one plane 2 x 32,768 x
        # 2,880 = 188,743,680 bytes; forward b x p (1 write), t + b p (2 reads, 1 write), cat (1 read,
        # 1 write) = 6 planes = 1,132,462,080; backward split-cat (2), grad x p + sum (3), grad x b +
        # sum (3) = 8 planes = 1,509,949,440
        from infracalc import layout as placement
        from infracalc.analyses import train_time as TT

        block = moe_block
        self.assertEqual(TT.expert_bias_bytes(block("gpt-oss-120b", placement.Layout(dp=64, ep=64)), 8192),
                         (1_132_462_080, 1_509_949_440))
        # the copies do not depend on how many experts are local: EP 8 holds 16, the same 32,768 copies
        self.assertEqual(TT.expert_bias_bytes(block("gpt-oss-120b", placement.Layout(dp=8, ep=8)), 8192),
                         (1_132_462_080, 1_509_949_440))
        # Qwen3 has no expert biases: nothing is charged
        self.assertEqual(TT.expert_bias_bytes(block("qwen3-30b-a3b", placement.Layout(dp=8, ep=8)), 4096), (0, 0))

    def test_expert_bias_charged_per_recipe(self):
        # 36 MoE layers of GPT-OSS-120B on one B200 stage: each direction its bytes at the stored
        # format's roof; the forward again under full recompute; NVIDIA's recipe charges it
        from infracalc import layout as placement
        from infracalc.analyses import train_time as TT
        from infracalc.analyses.validate import _device

        lay = placement.Layout(dp=64, ep=64, micro_batches=2)
        arch, st, w, r = moe_stage("gpt-oss-120b", lay, 8192, "bf16")
        got = TT.expert_bias_pass(arch, lay, st, w, r, "none")
        self.assertAlmostEqual(got.forward, 36 * 1_132_462_080 / r.bytes_per_s, places=12)
        self.assertAlmostEqual(got.backward, 36 * 1_509_949_440 / r.bytes_per_s, places=12)
        self.assertEqual(got.recompute, 0.0)
        self.assertEqual(TT.expert_bias_pass(arch, lay, st, w, r, "full").recompute, got.forward)
        # under CP 2 a rank holds half the sequence: half the routed copies, half of each direction
        cp2 = placement.Layout(dp=32, cp=2, ep=64, micro_batches=2)
        half = TT.expert_bias_pass(arch, cp2, placement.stages(arch, cp2)[0], w, r, "full")
        self.assertAlmostEqual(half.forward, 36 * 1_132_462_080 / 2 / r.bytes_per_s, places=12)
        self.assertAlmostEqual(half.backward, 36 * 1_509_949_440 / 2 / r.bytes_per_s, places=12)
        self.assertEqual(half.recompute, half.forward)
        self.assertTrue(VP.TRAINING_RECIPES["NVIDIA"]["unfused_expert_bias"])
        self.assertFalse(VP.TRAINING_RECIPES["DeepSeek"].get("unfused_expert_bias", False))
        # the option adds m x the pass to the step (one stage, no bubble)
        b200 = _device("b200")
        plain = TT.step_time(arch, w, lay, b200, overlap_dp=True, zero=1)
        more = TT.step_time(arch, w, lay, b200, overlap_dp=True, zero=1, unfused_expert_bias=True)
        self.assertAlmostEqual(more.step_s - plain.step_s, 2 * 36 * 14 * 188_743_680 / r.bytes_per_s, places=9)

    def test_case_overlap_tp_is_the_rows_own(self):
        # setup.overlap_tp = false (Megatron Bridge's NVFP4 recipes turn tp_comm_overlap off)
        # replaces NVIDIA's recipe (TP overlapped): every TP collective of the step is then exposed,
        # the step is longer, and without the key the recipe's overlap hides part of it.
        import copy
        self.assertTrue(VP.TRAINING_RECIPES["NVIDIA"]["overlap_tp"])
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "mbridge2602-pretrain-llama3-70b-nvfp4-gb200-x64.json"))
        self.assertIs(case["setup"]["overlap_tp"], False)
        off, t_off = VP.training_prediction(case)
        on_case = copy.deepcopy(case)
        del on_case["setup"]["overlap_tp"]
        on, t_on = VP.training_prediction(on_case)
        self.assertLess(off, on)
        self.assertGreater(t_off.step_s, t_on.step_s)
        st_off, st_on = t_off.stages[0], t_on.stages[0]
        tp = [c for c in st_off.collectives if c.collective.dim == "tp"]
        self.assertTrue(tp)
        self.assertLess(st_on.comm.total, st_off.comm.total)

    def test_case_overlap_ep_is_the_rows_own(self):
        # setup.overlap_ep (a row's published moe_a2a_overlap) replaces the recipe's default: the
        # prediction equals the step run with overlap_ep on, and hides all-to-all time (never adds)
        import copy
        from infracalc.analyses.efficiency.training import predicted_step
        case = V.load_case(os.path.join(V.VALIDATION_DIR,
                                        "mbridge2602-pretrain-qwen3-235b-a22b-fp8-cs-h100-sxm-x256.json"))
        self.assertIs(case["setup"]["overlap_ep"], True)
        self.assertFalse(VP.TRAINING_RECIPES["NVIDIA"].get("overlap_ep", False))
        on, t_on = VP.training_prediction(case)
        off_case = copy.deepcopy(case)
        del off_case["setup"]["overlap_ep"]
        off, t_off = VP.training_prediction(off_case)
        self.assertGreater(on, off)
        self.assertLess(t_on.step_s, t_off.step_s)
        # the same step as predicted_step called with the option by hand
        from infracalc.analyses.validate import _device, _layout, _model
        from infracalc.dtypes import dtype
        from infracalc.workload import Workload
        s = case["setup"]
        arch = _model(case)
        w = Workload(batch=1, tokens=4096, logits="all", weight_dtype=dtype("bf16"), act_dtype=dtype("fp8"),
                     kv_dtype=dtype("fp8"))
        r = VP.TRAINING_RECIPES["NVIDIA"]
        step, _ = predicted_step(arch, w, _layout(case, arch, 1), _device("h100-sxm"),
                                 factor=VP.training_factor(case)[0], recompute="none", zero=r["zero"],
                                 overlap_dp=r["overlap_dp"], overlap_tp=r["overlap_tp"], overlap_ep=True,
                                 expert_gemm_host_s=VP.expert_host_for(case)[0], schedule="interleaved", chunks=4)
        self.assertAlmostEqual(on, s["global_batch"] * s["seq_len"] / step / s["devices"], places=6)
        # the schema refuses a non-boolean
        from infracalc.analyses import case_schema
        check, what = case_schema.SETUP_FIELDS["overlap_ep"]
        self.assertTrue(check(True) and check(False) is True)
        self.assertFalse(check("yes"))
        self.assertFalse(check(1))

    def test_token_permute_charged_per_recipe(self):
        # the pass is the bytes at the stored format's roof, forward = backward, once per MoE layer
        from infracalc import layout as placement
        from infracalc.analyses import train_time as TT
        from infracalc.load.models import load_model
        from infracalc.analyses.validate import _device

        lay = placement.Layout(dp=8, ep=8, micro_batches=4)
        arch, st, w, r = moe_stage("qwen3-30b-a3b", lay, 4096, "fp8")
        got = TT.token_permute_pass(arch, lay, st, w, r, "none")
        self.assertAlmostEqual(got.forward, 48 * 687_865_856 / r.bytes_per_s, places=12)
        self.assertEqual(got.forward, got.backward)
        self.assertEqual(got.recompute, 0.0)
        self.assertEqual(TT.token_permute_pass(arch, lay, st, w, r, "full").recompute, got.forward)
        self.assertEqual(TT.token_permute_pass(load_model("llama-3.1-8b"), placement.Layout(dp=8),
                                               placement.stages(load_model("llama-3.1-8b"), placement.Layout(dp=8))[0],
                                               w, r, "none"), TT.Pass())
        # NVIDIA's recipe charges it, DeepSeek's (DeepEP writes expert order in its dispatch) does not
        self.assertTrue(VP.TRAINING_RECIPES["NVIDIA"]["token_permute"])
        self.assertFalse(VP.TRAINING_RECIPES["DeepSeek"].get("token_permute", False))
        # the estimate charges none; the option adds m x the pass on one stage (no bubble, no DP
        # sync exposed at 4 micro-batches of this size either way)
        b200 = _device("b200")
        plain = TT.step_time(arch, w, lay, b200, overlap_dp=True, zero=1)
        more = TT.step_time(arch, w, lay, b200, overlap_dp=True, zero=1, token_permute=True)
        self.assertAlmostEqual(more.step_s - plain.step_s, 4 * 2 * 48 * 687_865_856 / r.bytes_per_s, places=9)

    def test_overlap_pp_hides_interleaved_sends_only(self):
        # Megatron Bridge sets overlap_p2p_comm only for pp > 1 with vp > 1: under the interleaved
        # schedule the boundary sends leave the exposed communication (they are far shorter than a
        # phase's compute here), under 1f1b they stay
        from infracalc import layout as placement
        from infracalc.analyses import train_time as TT
        from infracalc.analyses.validate import _device
        from infracalc.dtypes import dtype
        from infracalc.load.models import load_model
        from infracalc.workload import Workload

        arch = load_model("llama-3.1-70b")
        w = Workload(batch=1, tokens=8192, logits="all", weight_dtype=dtype("bf16"), act_dtype=dtype("bf16"),
                     kv_dtype=dtype("bf16"))
        lay = placement.Layout(tp=8, pp=4, dp=1, micro_batches=8)
        dev = _device("h100-sxm")
        for schedule, chunks in (("interleaved", 2), ("1f1b", 1)):
            plain = TT.step_time(arch, w, lay, dev, schedule=schedule, chunks=chunks)
            over = TT.step_time(arch, w, lay, dev, schedule=schedule, chunks=chunks, overlap_pp=True)
            for a, b in zip(plain.stages, over.stages):
                pp = sum(t.seconds for t in a.collectives if t.collective.dim == "pp")
                self.assertGreater(pp, 0.0)
                want = a.comm.total - pp if chunks > 1 else a.comm.total
                self.assertAlmostEqual(b.comm.total, want, places=12)
        self.assertTrue(VP.TRAINING_RECIPES["NVIDIA"]["overlap_pp"])

    def test_expert_host_charged_per_recipe_and_held_out_by_model(self):
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "mbridge2511-pretrain-qwen3-30b-a3b-fp8-mx-b200-x8.json"))
        _, t1 = VP.training_prediction(case, 1.0, expert_host_s=1e-3)
        _, t2 = VP.training_prediction(case, 1.0, expert_host_s=2e-3)
        # one stage, 64 micro-batches, no bubble: at 1 and 2 ms per local expert the host exceeds the
        # MoE blocks' GPU time in every phase (exposed_host_pass), so the step grows by the host time
        # itself, 64 x 768 x 1 ms (the DP sync's overlap unchanged)
        self.assertAlmostEqual(t2.step_s - t1.step_s, 64 * 768 * 1e-3, places=6)
        self.assertAlmostEqual(t2.stages[0].host_s - t1.stages[0].host_s, 768 * 1e-3, places=9)
        # held out by model within the case's stack (every Megatron Bridge release): the 25.11 and the
        # 26.02 Qwen3-30B rows take the same fit, on the other models' cases of both releases
        self.assertEqual(VP.stack(case), "NVIDIA: Megatron Bridge Performance Summary")
        self.assertEqual(VP.expert_host_for(case), (training.EXPERT_HOST_FITTED[VP.stack(case)]["qwen3-30b-a3b"],
                                                    "without its model, same stack"))
        later = V.load_case(os.path.join(V.VALIDATION_DIR, "mbridge2602-pretrain-qwen3-30b-a3b-fp8-mx-b200-x8.json"))
        self.assertEqual(VP.stack(later), VP.stack(case))
        self.assertEqual(VP.expert_host_for(later), VP.expert_host_for(case))
        # a case of a stack without a fit takes the fit on all
        other = dict(case, source=dict(case["source"], title="elsewhere"))
        self.assertEqual(VP.expert_host_for(other), (training.EXPERT_HOST_FITTED["all"],
                                                     "all MoE cases, none of its model's in its stack"))
        # DeepSeek's own stack is not charged (its recipe names no per-expert GEMM launches)
        ds = V.load_case(os.path.join(V.VALIDATION_DIR, "deepseek-v3-report-pretrain-h800-x2048.json"))
        self.assertEqual(VP.training_prediction(ds, 1.0, expert_host_s=0.0)[0],
                         VP.training_prediction(ds, 1.0, expert_host_s=1e-3)[0])

    def test_expert_dp_group_placement(self):
        # 64 ranks, tp 1, ep 8 carved out of dp 64: an EP group is 8 consecutive ranks, so the
        # ranks holding the same experts are 8 apart: the expert-DP group (64 / 8 = 8 members) spans
        # ranks 0..56. On 8-GPU NVLink domains (B200) it crosses domains with one member in each;
        # inside a 72-GPU NVL72 domain (GB200) it stays on NVLink.
        from infracalc import layout as placement
        from infracalc.analyses import train_time as TT
        from infracalc.load.hardware import load_device

        lay = placement.Layout(tp=1, pp=1, dp=64, cp=1, ep=8, micro_batches=2)
        self.assertEqual(TT.expert_dp_placement(lay, 8, 8, load_device("b200")), ("out", 1))
        self.assertEqual(TT.expert_dp_placement(lay, 8, 72, load_device("gb200")), ("up", 1))
        # EP inside TP (ep <= tp): the expert-DP group is the dense DP group, tp apart
        lay = placement.Layout(tp=8, pp=1, dp=2, cp=1, ep=4, micro_batches=2)
        self.assertEqual(TT.expert_dp_placement(lay, 4, 8, load_device("b200")), ("out", 1))

    def test_training_cause_shares_add_up(self):
        # the worst-case cause names the step's parts; they add up to the step (up to rounding)
        import re
        rows = {r["id"]: r for r in corpus()["cases"]}
        for cid in ("mbridge2511-pretrain-qwen3-30b-a3b-fp8-mx-b200-x8", "nemo2407-pretrain-llama2-70b-fp8-h100-sxm-x64"):
            cause = rows[cid]["predicted_cause"]
            shares = [int(x) for x in re.findall(r"(\d+)%", cause)]
            self.assertLessEqual(abs(sum(shares) - 100), len(shares), cause)
        self.assertIn("per-expert host cost", rows["mbridge2511-pretrain-qwen3-30b-a3b-fp8-mx-b200-x8"]["predicted_cause"])
        self.assertNotIn("per-expert", rows["nemo2407-pretrain-llama2-70b-fp8-h100-sxm-x64"]["predicted_cause"])

    def test_nemo_recipe_overlaps_tp(self):
        self.assertTrue(VP.TRAINING_RECIPES["NVIDIA"]["overlap_tp"])
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "nemo2407-pretrain-llama2-70b-fp8-h100-sxm-x64.json"))
        _, t = VP.training_prediction(case, 1.0)
        st = t.stages[0]
        self.assertLess(st.comm.total, sum(x.seconds for x in st.collectives))


class Percentile(unittest.TestCase):
    def test_linear_interpolation(self):
        # numpy.percentile([1, 2, 3, 4], 90) = 3.7: position 0.9 x 3 = 2.7 between 3 and 4
        self.assertAlmostEqual(VP.percentile([1, 2, 3, 4], 0.9), 3.7, places=12)
        self.assertEqual(VP.percentile([5], 0.9), 5)


class Fit(unittest.TestCase):
    def test_fitted_constants_are_the_fit(self):
        # Refit leave one publication out; the table in efficiency/serving must be the result.
        samples = [s for s in (fit.sample(V.load_case(p)) for p in V.case_paths()
                               if V.load_case(p)["kind"] == "serving-throughput") if s]
        got = fit.leave_one_out(samples)
        self.assertEqual(set(got), set(serving.FITTED))
        for key, constants in got.items():
            for a, b in zip(constants, serving.FITTED[key]):
                self.assertAlmostEqual(a, b, places=12, msg=key)

    def test_training_factor_is_the_fit(self):
        cases = [V.load_case(p) for p in V.case_paths()]
        got = VP.fit_training([c for c in cases if c["kind"] == "training-step"])
        self.assertEqual(set(got), set(training.FITTED))
        for key, value in got.items():
            self.assertAlmostEqual(value, training.FITTED[key], places=12, msg=key)

    def test_expert_host_is_the_fit(self):
        cases = [V.load_case(p) for p in V.case_paths()]
        got = VP.fit_expert_host([c for c in cases if c["kind"] == "training-step"])
        self.assertEqual(got, training.EXPERT_HOST_FITTED)

    def test_collective_efficiency_is_the_fit(self):
        cases = [c for c in (V.load_case(p) for p in V.case_paths()) if c["kind"] == "collective"]
        got = VP.fit_collectives(cases)
        self.assertEqual(set(got), set(VP.COLLECTIVE_FITTED))
        for key, value in got.items():
            self.assertAlmostEqual(value, VP.COLLECTIVE_FITTED[key], places=12, msg=key)
        # the product default (serving's TP all-reduces, `collective`) is the fit on all cases
        from infracalc.analyses.efficiency import collective
        self.assertEqual(collective.FITTED["all"], VP.COLLECTIVE_FITTED["all"])

    def test_errors_are_linear_in_the_constants(self):
        # one sample: N = 100 requests x 80 layers, GPU 10 ms, 1000 kernels, measured iteration 20 ms,
        # 250 prompt tokens x 80 layers
        s = [("p", 100 * 80, 0.010, 1000, 0.020, "f", "e", 250 * 80)]
        # (4 us x 1000) + 2 ms + 0.5 us x 100 x 80 = 10 ms more: predicted iteration 20 ms, error 0
        self.assertAlmostEqual(fit.errors(s, (4e-6, 2e-3, 0.5e-6, 0))[0], 0.0, places=12)
        self.assertAlmostEqual(fit.errors(s, (0, 0, 0, 0))[0], 1.0, places=12)   # 2x optimistic
        # 0.1 us x 250 x 80 = 2 ms of context-phase work: 4 us x 1000 + 2 ms + 0.25 us x 8000 + 2 ms
        self.assertAlmostEqual(fit.errors(s, (4e-6, 2e-3, 0.25e-6, 1e-7))[0], 0.0, places=12)

    def test_configuration_score_by_hand(self):
        # medians of four configurations 0.1, 0.2, 0.3, 0.4: median 0.25 + 0.3 x the 90th-percentile
        # rank below (index int(0.9 x 3) = 2: 0.3) = 0.34
        self.assertAlmostEqual(fit.score([0.4, 0.1, 0.3, 0.2]), 0.34, places=12)

    def test_a_configuration_counts_once(self):
        # GPU 10 ms, no kernels, sequences or prompt tokens. Configurations A (3 cases) and B (1 case)
        # measure 14 ms: a host time of 4 ms exactly; configuration C (5 cases) measures 30 ms. Case by
        # case, 5 of the 9 want 20 ms; configuration by configuration, 2 of the 3 want 4 ms.
        def case(conf, meas):
            return ("p", 0, 0.010, 0, meas, "f", "e", 0, conf)
        samples = [case("A", 0.014)] * 3 + [case("B", 0.014)] + [case("C", 0.030)] * 5
        # at 4 ms: A and B exact, C 30 / 14 - 1 = 8/7: medians [0, 0, 8/7] -> 0 + 0.3 x 0 = 0
        self.assertAlmostEqual(fit.family_score(samples, (0, 0.004, 0, 0)), 0.0, places=12)
        # at 20 ms: A and B 14 / 30 - 1 = -8/15, C exact: [0, 8/15, 8/15] -> 8/15 + 0.3 x 8/15
        self.assertAlmostEqual(fit.family_score(samples, (0, 0.020, 0, 0)), 1.3 * 8 / 15, places=12)
        self.assertEqual(fit.fit(samples), (0.0, 0.004, 0.0, 0.0, 0.0))   # the first grid point at 4 ms
        # without configurations every case is its own and the five C cases carry the median
        self.assertEqual(fit.fit([s[:8] for s in samples])[1], 0.020)

    def test_host_time_searched_in_half_milliseconds(self):
        # GPU 10 ms, no kernels, sequences or prompt tokens, measured 13.5 ms: a host time of 3.5 ms
        # exactly; a grid in 1-2 ms steps below 8 ms (0, 1, 2, 4, 6) would stop at 4 ms (error -3.6%)
        samples = [("p", 0, 0.010, 0, 0.0135, "f", "e", 0, "c")] * 3
        self.assertEqual(fit.fit(samples), (0.0, 0.0035, 0.0, 0.0, 0.0))
        self.assertAlmostEqual(fit.errors(samples[:1], (0.0, 0.0035, 0.0, 0.0))[0], 0.0, places=12)
        self.assertEqual(fit.HOSTS[:17], tuple(i / 2 for i in range(17)))   # 0-8 ms in 0.5 ms
        self.assertEqual(fit.HOSTS[17:], (10, 12, 16, 20, 24))

    def test_held_out_within_the_engine(self):
        # two engines, one publication each of A and B per engine: a publication's fit uses only the
        # other publication of its own engine; "all" only the default engine's samples
        gpu, meas = 0.010, 0.020
        t1 = [("T1", 8000, gpu, 0, meas, "f", "TensorRT-LLM", 0)]    # wants 10 ms more: q = 1.25 us (off grid)
        t2 = [("T2", 8000, gpu, 0, 0.014, "f", "TensorRT-LLM", 0)]   # wants 4 ms: host 4 ms exactly
        # N = 100 requests: 38.4 us each at most (3.84 ms), so 20 ms takes the host's fixed part
        v1 = [("V1", 8000, gpu, 0, 0.030, "f", "vLLM", 0, "V1", 100)]   # wants 20 ms: host 20 ms exactly
        v2 = [("V2", 8000, gpu, 0, 0.026, "f", "vLLM", 0, "V2", 100)]   # wants 16 ms
        got = fit.leave_one_out(t1 + t2 + v1 + v2)
        self.assertEqual(got["T1"], fit.fit(t2))
        # a vLLM publication is fitted on vLLM's grid (its per-sequence work per request on the host)
        self.assertEqual(got["V1"], fit.fit(v2, fit.GRIDS["vLLM"]))
        self.assertEqual(got["V2"], fit.fit(v1, fit.GRIDS["vLLM"]))
        self.assertAlmostEqual(fit.errors(v1, got["V2"])[0], 0.0, places=12)
        self.assertEqual(got["all"], fit.fit(t1 + t2))
        # on TensorRT-LLM's grid v1's 10 ms more would go to 12 ms of host and 1 us x 8000 per layer
        self.assertEqual(fit.fit(v1), (0.0, 0.012, 1e-06, 0.0, 0.0))

    def test_per_request_host_work(self):
        # N = 1000 requests (x 80 layers), GPU 10 ms, measured 20 ms: 10 us per request on the host
        # is 10 ms: error 0; at 5 us the iteration is 15 ms, 20 / 15 - 1 = 1/3 optimistic
        s = [("p", 1000 * 80, 0.010, 0, 0.020, "f", "vLLM", 0, "c", 1000)]
        self.assertAlmostEqual(fit.errors(s, (0, 0, 0, 0, 1e-5))[0], 0.0, places=12)
        self.assertAlmostEqual(fit.errors(s, (0, 0, 0, 0, 5e-6))[0], 1 / 3, places=12)
        # the same 10 ms per layer: 10 ms / 80,000 = 0.125 us per request per layer
        self.assertAlmostEqual(fit.errors(s, (0, 0, 1.25e-7, 0, 0))[0], 0.0, places=12)

    def test_each_engine_its_per_sequence_form(self):
        # TensorRT-LLM's grid charges per-sequence work per layer (never per request on the host),
        # vLLM's per request on the host (never per layer); the fitted table follows its engine's grid
        self.assertTrue(all(c[4] == 0.0 for c in fit.GRIDS["TensorRT-LLM"]))
        self.assertTrue(all(c[2] == 0.0 for c in fit.GRIDS["vLLM"]))
        self.assertEqual(max(c[4] for c in fit.GRIDS["vLLM"]), 24 * 1.6e-6)   # 0-38.4 us
        self.assertEqual(len(fit.GRIDS["vLLM"]), len(fit.GRID))
        for key, c in serving.FITTED.items():
            if "vLLM" in key:
                self.assertEqual(c[2], 0.0, key)
            else:
                self.assertEqual(c[4], 0.0, key)

    def test_per_request_host_in_the_iteration(self):
        # predicted_serving adds sequence_host_s x N to the iteration and reports it in host_s:
        # the iteration at (4 us, 1 ms, 0.3 us, 0.14 us, 20 us) less that at 0 us is 20 us x N
        from support import DTYPES, Workload, load_model
        from infracalc.load.hardware import load_device

        arch, device = load_model("llama-3.1-8b"), load_device("h100-sxm")
        fp8 = DTYPES["fp8"]
        w = Workload(weight_dtype=fp8, act_dtype=fp8, kv_dtype=fp8)
        base = serving.predicted_serving(arch, w, device, 1000, 1000, (4e-6, 1e-3, 3e-7, 1.4e-7, 0.0))
        more = serving.predicted_serving(arch, w, device, 1000, 1000, (4e-6, 1e-3, 3e-7, 1.4e-7, 2e-5))
        n = base["concurrency"]
        self.assertEqual(more["concurrency"], n)
        self.assertAlmostEqual(more["iteration_s"] - base["iteration_s"], 2e-5 * n, places=12)
        self.assertAlmostEqual(more["host_s"], 1e-3 + 2e-5 * n, places=15)
        self.assertEqual(base["host_s"], 1e-3)

    def test_every_serving_case_names_its_engine(self):
        engines = {}
        for p in V.case_paths():
            case = V.load_case(p)
            if case["kind"] == "serving-throughput":
                engines.setdefault(VP.engine(case), set()).add(VP.publication(case))
        self.assertEqual(set(engines), {"TensorRT-LLM", "vLLM"})
        self.assertEqual(len(engines["vLLM"]), 4)       # AMD v4.1, ASUSTeK v5.1, Red Hat x2
        with self.assertRaises(VP.UserError):
            VP.engine({"id": "x", "source": {"title": "an engine we do not know"}})


class HostStep(unittest.TestCase):
    """TensorRT-LLM's measured host step on a Grace host bounds the iteration from below."""

    def setUp(self):
        from support import load_model
        from infracalc.load.hardware import load_device
        from infracalc.workload import from_formats

        self.arch = load_model("qwen3-30b-a3b")
        self.gb200, self.b200 = load_device("gb200"), load_device("b200")
        self.w = from_formats(self.arch, weight_dtype="nvfp4", act_dtype="nvfp4", kv_dtype="fp8")

    def test_floor_by_hand(self):
        # PR #10273: 44.53 ms a step at 1,536 requests a rank -> 4,096 requests: 44.53 x 4096 / 1536
        # = 118.7467 ms; none on B200's x86 host, none for vLLM (no published step)
        self.assertAlmostEqual(serving.host_floor_s("TensorRT-LLM", self.gb200, 4096), 0.04453 * 8 / 3, places=15)
        self.assertAlmostEqual(serving.host_floor_s("TensorRT-LLM", self.gb200, 1536), 0.04453, places=15)
        self.assertEqual(serving.host_floor_s("TensorRT-LLM", self.b200, 4096), 0.0)
        self.assertEqual(serving.host_floor_s("vLLM", self.gb200, 4096), 0.0)
        self.assertEqual(serving.HOST_CPU, {"gb200": "Grace", "gb300": "Grace"})

    def test_iteration_is_the_longer(self):
        # Qwen3-30B-A3B NVFP4 at 128/128, 30,000 requests: 4,096 in flight (the engine's limit); the
        # GPU's sum is below the host's 118.75 ms step, so the iteration is the step and the output
        # 4096 x 128 / 127 / 0.11875 = 1536 x 128 / (127 x 0.04453) = 34,765.2 tokens/s
        rec = serving.predicted_serving(self.arch, self.w, self.gb200, 128, 128, requests=30000)
        self.assertEqual(rec["concurrency"], 4096)
        self.assertAlmostEqual(rec["iteration_s"], 0.04453 * 8 / 3, places=15)
        self.assertAlmostEqual(rec["output_tokens_per_s"], 1536 * 128 / (127 * 0.04453), places=6)
        self.assertLess(rec["gpu_s"] + rec["host_s"], rec["iteration_s"])
        # without a published step (another engine) the iteration is the sum, the key absent
        other = serving.predicted_serving(self.arch, self.w, self.gb200, 128, 128, requests=30000, engine="none")
        self.assertNotIn("host_step_s", other)
        self.assertAlmostEqual(other["iteration_s"], other["gpu_s"] + other["host_s"], places=12)
        self.assertNotIn("host_step_s", serving.predicted_serving(self.arch, self.w, self.b200, 128, 128))
        # a GPU-bound row keeps its sum: 20000/2000 (151 in flight, a step of 4.4 ms)
        long = serving.predicted_serving(self.arch, self.w, self.gb200, 20000, 2000, requests=1000)
        self.assertAlmostEqual(long["host_step_s"], long["concurrency"] * 0.04453 / 1536, places=15)
        self.assertAlmostEqual(long["iteration_s"], long["gpu_s"] + long["host_s"], places=12)

    def test_at_batch_is_the_steady_state(self):
        from infracalc.layout import Layout

        rec = serving.predicted_serving(self.arch, self.w, self.gb200, 128, 128, requests=30000)
        at = serving.predicted_at_batch(self.arch, self.w, self.gb200, Layout(), 128, 128, 4096)
        self.assertEqual(at["tpot_s"], rec["iteration_s"])
        lay = serving.predicted_layout(self.arch, self.w, self.gb200, Layout(), 128, 128, requests=30000)
        self.assertEqual(lay["iteration_s"], rec["iteration_s"])

    def test_pipeline_takes_the_floor(self):
        # PP 2: two stages of 24 layers, 4,096 requests in flight; the pipeline's 60 ms (2 x the
        # slowest stage + 1.5 ms of host) is below the step of 4,096 requests, 118.75 ms
        from infracalc.layout import Layout

        rec = serving.predicted_layout(self.arch, self.w, self.gb200, Layout(pp=2), 128, 128, requests=30000)
        self.assertEqual(rec["concurrency"], 4096)
        self.assertAlmostEqual(rec["iteration_s"], 0.04453 * 8 / 3, places=15)
        self.assertLess(rec["gpu_s"] + rec["host_s"], rec["iteration_s"])
        at = serving.predicted_at_batch(self.arch, self.w, self.gb200, Layout(pp=2), 128, 128, 4096)
        self.assertEqual(at["tpot_s"], rec["iteration_s"])

    def test_fit_errors_take_the_floor(self):
        # GPU 10 ms, measured 30 ms, a host step of 30 ms: at zero constants the step is the iteration
        # (error 0); a fixed host time of 25 ms makes the sum 35 ms, above it: 30 / 35 - 1
        s = [("p", 0, 0.010, 0, 0.030, "f", "e", 0, "c", 1000, 0.030)]
        self.assertAlmostEqual(fit.errors(s, (0, 0, 0, 0))[0], 0.0, places=12)
        self.assertAlmostEqual(fit.errors(s, (0, 0.025, 0, 0))[0], 30 / 35 - 1, places=12)
        self.assertAlmostEqual(fit.errors([s[0][:10]], (0, 0, 0, 0))[0], 2.0, places=12)   # no step: 3x

    def test_validate_names_the_host_step(self):
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "trtllm-qwen3-30b-a3b-fp4-gb200-128-128.json"))
        value, rec = VP.serving_prediction(case)
        self.assertAlmostEqual(value, 1536 * 128 / (127 * 0.04453), places=6)
        self.assertTrue(VP.cause(rec).startswith("host step"), VP.cause(rec))
        twin = V.load_case(os.path.join(V.VALIDATION_DIR, "trtllm-qwen3-30b-a3b-fp4-b200-128-128.json"))
        self.assertTrue(VP.cause(VP.serving_prediction(twin)[1]).startswith("GPU work"))


if __name__ == "__main__":
    unittest.main()

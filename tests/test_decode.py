"""`decode`: closed-form step sums, hand-derived step times, the batch sweep."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "calculations"))

from infracalc import ledger  # noqa: E402
from infracalc.analyses import decode as D  # noqa: E402
from infracalc.analyses import decode_sum as S  # noqa: E402
from infracalc.analyses.forward import forward  # noqa: E402
from infracalc.analyses.roofline import Roof, op_bound, roof  # noqa: E402
from infracalc.load.hardware import load_device  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.workload import Workload  # noqa: E402
from support import run_cli  # noqa: E402

H100 = json.loads((ROOT / "calculations" / "hardware" / "h100-sxm.json").read_text())
BW = H100["memory_bandwidth_bytes_per_s"]          # 3.35e12 B/s
VECTOR = H100["vector_flops_per_s"]["fp32"]        # 67e12 FLOP/s


def step_ops(arch, w, lo, hi):
    """[the operators of each step's own ledger], histories lo..hi."""
    return [ledger.build(arch, w.replace(tokens=1, history=h)).ops for h in range(lo, hi + 1)]


def loop_sum(arch, w, lo, hi, steps=None):
    """Per-operator FIELDS summed over explicit per-step ledgers, histories lo..hi
    (`steps`: step_ops of the same arguments, when the caller has built them)."""
    total = None
    for ops in steps or step_ops(arch, w, lo, hi):
        rows = [[getattr(op, f) for f in S.FIELDS] for op in ops]
        total = rows if total is None else [[a + b for a, b in zip(x, y)] for x, y in zip(total, rows)]
    return total


def loop_time(arch, w, lo, hi, r, steps=None):
    """Sum over steps and operators of max(compute, memory)."""
    return sum(op_bound(op, r)[2] for ops in steps or step_ops(arch, w, lo, hi) for op in ops)


def closed(arch, w, lo, hi):
    return [[getattr(op, f) for f in S.FIELDS] for op in S.summed_ops(S.decode_pieces(arch, w, lo, hi))]


def patched_model(model, **changes):
    """A bundled model loaded from a copy of its config with some fields changed
    (in text_config if there is one)."""
    cfg = json.loads((ROOT / "calculations" / "models" / f"{model}.json").read_text())
    (cfg.get("text_config") or cfg).update(changes)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "config.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return load_model(path)


def windowed_mistral(window):
    """Mistral 7B with a small sliding window."""
    return patched_model("mistral-7b-v0.1", sliding_window=window)


class ClosedFormEqualsLoop(unittest.TestCase):
    """The closed form equals the sum of per-step ledgers exactly (FLOPs, bytes)."""

    def check(self, arch, w, lo, hi, min_pieces=1):
        self.assertGreaterEqual(len(S.pieces(arch, lo, hi)), min_pieces)
        steps = step_ops(arch, w, lo, hi)
        self.assertEqual(closed(arch, w, lo, hi), loop_sum(arch, w, lo, hi, steps))
        r = roof(load_device("h100-sxm"), w.compute_dtype)
        self.assertAlmostEqual(D.account(S.decode_pieces(arch, w, lo, hi), r).time_s
                               / loop_time(arch, w, lo, hi, r, steps), 1.0, places=12)

    def test_dense(self):
        self.check(load_model("qwen3-8b"), Workload(batch=3), 5, 44)

    def test_windowed_crossing_the_window(self):
        arch = windowed_mistral(16)
        # histories 5..33 cross W = 16: keys min(H + 1, 16) is linear, then flat
        self.assertEqual(S.pieces(arch, 5, 33), [(5, 15), (16, 33)])
        self.check(arch, Workload(batch=2), 5, 33, min_pieces=2)

    def test_moe(self):
        self.check(load_model("qwen3-30b-a3b"), Workload(batch=4), 3, 22)

    def test_one_step_and_window_edges(self):
        arch = windowed_mistral(16)
        for lo, hi in ((7, 7), (15, 16), (16, 16), (14, 15), (0, 40)):
            self.assertEqual(closed(arch, Workload(), lo, hi), loop_sum(arch, Workload(), lo, hi), (lo, hi))

    def test_bound_switch_inside_a_piece(self):
        # A roof with a ridge of 3.3 FLOP/B. attn_qk of qwen3-8b at B = 1, per layer:
        # FLOPs 2*32*128*(H+1) = 8192 (H+1); bytes: Q 32*128*2 = 8192, K 8*128*2 = 2048 (H+1).
        # Compute-bound when 8192 (H+1) / 3.3 > 8192 + 2048 (H+1), i.e. H + 1 > 18.86:
        # from H = 18 on, so 13 of the 29 steps H = 2..30.
        arch, w = load_model("qwen3-8b"), Workload()
        r = Roof(3.3e12, 1e12, 1e12)
        pcs = S.decode_pieces(arch, w, 2, 30)
        self.assertEqual({len(runs) for runs in pcs.runs}, {1})
        steps = {row["name"]: row["bound"] for row in D.operator_rows(pcs, r)}
        self.assertEqual(steps["attn_qk"], "compute on 13 of 29 steps")
        looped = [h for h in range(2, 31) for op in ledger.build(arch, w.replace(history=h)).ops
                  if op.name == "attn_qk" and op_bound(op, r)[3] == "compute"]
        self.assertEqual(looped, list(range(18, 31)))
        self.assertAlmostEqual(D.account(pcs, r).time_s / loop_time(arch, w, 2, 30, r), 1.0, places=12)

    def test_ideal_time_matches_loop(self):
        arch, w = load_model("qwen3-8b"), Workload(batch=512)
        r = roof(load_device("h100-sxm"), w.compute_dtype)
        want = 0.0
        for h in range(100, 140):
            t = ledger.build(arch, w.replace(tokens=1, history=h)).totals
            want += max(r.compute_s(t.matrix_flops, t.vector_flops), t.unique_bytes / r.bytes_per_s)
        self.assertAlmostEqual(D.ideal_time(S.decode_pieces(arch, w, 100, 139), r) / want, 1.0, places=12)


class EveryAttentionKind(unittest.TestCase):
    """Closed form vs per-step loop across each kind of mixer, over its breakpoints."""

    CASES = (
        ("deepseek-v3", "absorbed", 20, 27, 1),        # MLA, latent cache
        ("deepseek-v3", "naive", 20, 27, 1),           # MLA, expanded K/V
        ("llama-4-scout", "absorbed", 8186, 8197, 3),  # chunks of 8192: new chunk at 8192, 8193
        ("gemma-3-27b", "absorbed", 1020, 1029, 2),    # window 1024 on 5 of 6 layers
        ("gpt-oss-20b", "absorbed", 124, 133, 2),      # window 128 with sinks, MXFP4 experts
        ("qwen3-next-80b-a3b", "absorbed", 0, 9, 2),   # Gated DeltaNet: fixed state from H = 1
        ("deepseek-v2-lite", "naive", 30, 41, 1),      # MLA without q_lora, dense first layer, MoE
        ("phi-3-mini", "absorbed", 2040, 2055, 2),     # fused qkv / gate_up, window 2047
        ("mixtral-8x7b", "absorbed", 10, 21, 1),       # top-2 of 8 experts
    )

    def test_closed_form_equals_loop(self):
        dev = load_device("h100-sxm")
        for model, mla, lo, hi, n_pieces in self.CASES:
            with self.subTest(model=model, mla=mla):
                arch, w = load_model(model), Workload(batch=2, mla=mla)
                self.assertEqual(len(S.pieces(arch, lo, hi)), n_pieces)
                steps = step_ops(arch, w, lo, hi)
                self.assertEqual(closed(arch, w, lo, hi), loop_sum(arch, w, lo, hi, steps))
                r = roof(dev, w.compute_dtype)
                got = D.account(S.decode_pieces(arch, w, lo, hi), r).time_s
                self.assertAlmostEqual(got / loop_time(arch, w, lo, hi, r, steps), 1.0, places=12)


class RepeatedChunks(unittest.TestCase):
    """Chunked attention: pieces recur every chunk and are summed as repeats, not one by one."""

    @classmethod
    def setUpClass(cls):
        cls.arch = patched_model("llama-4-scout", attention_chunk_size=32)

    def test_closed_form_equals_loop_over_many_chunks(self):
        # Roof with a ridge of 3.3 FLOP/B: a chunked layer's attn_qk (40 query heads,
        # 8 KV heads x 128) reads Q (10,240 B) and 2,048 B per key for 10,240 FLOPs per
        # key, so it turns compute-bound once a chunk holds about 10 keys, and back to
        # memory-bound in the next chunk: the bound flips inside every repeat.
        for batch, lo, hi, r in ((1, 2, 300, Roof(3.3e12, 1e12, 1e12)),
                                 (64, 5, 250, roof(load_device("h100-sxm"), Workload().compute_dtype))):
            with self.subTest(batch=batch):
                w = Workload(batch=batch)
                pcs = S.decode_pieces(self.arch, w, lo, hi)
                self.assertTrue(any(run.repeats >= 6 for runs in pcs.runs for run in runs))
                self.assertEqual({sum(run.total_steps for run in runs) for runs in pcs.runs}, {hi - lo + 1})
                steps = step_ops(self.arch, w, lo, hi)
                self.assertEqual(closed(self.arch, w, lo, hi), loop_sum(self.arch, w, lo, hi, steps))
                self.assertAlmostEqual(D.account(pcs, r).time_s / loop_time(self.arch, w, lo, hi, r, steps), 1.0,
                                       places=12)
                looped = {}
                for ops in steps:
                    for op in ops:
                        key = (op.name, op.layers)
                        looped[key] = looped.get(key, 0) + (op_bound(op, r)[3] == "compute")
                n = hi - lo + 1
                flips = 0
                for row in D.operator_rows(pcs, r):
                    c = looped[(row["name"], row["layers"])]
                    flips += 0 < c < n
                    want = "compute" if c == n else "memory" if c == 0 else f"compute on {c} of {n} steps"
                    self.assertEqual(row["bound"], want, row["name"])
                if batch == 1:
                    self.assertGreater(flips, 0)
                last = ledger.build(self.arch, w.replace(tokens=1, history=hi)).ops
                self.assertEqual(pcs.last_step().starts(), tuple(tuple(getattr(op, f) for f in S.FIELDS)
                                                                  for op in last))

    def test_ledgers_built_do_not_grow_with_output_length(self):
        calls = []
        real = S.ledger.operators

        def counting(*args, **kwargs):
            calls.append(1)
            return real(*args, **kwargs)

        counts = []
        S.ledger.operators = counting
        try:
            for g in (1_000_000, 10_000_000):   # 122 and 1,221 chunks
                calls.clear()
                D.decode(load_model("llama-4-scout"), Workload(), load_device("h100-sxm"), 1000, g)
                counts.append(len(calls))
        finally:
            S.ledger.operators = real
        self.assertEqual(counts[0], counts[1])
        self.assertLess(counts[1], 40)


    def test_breakpoints_are_never_listed_over_the_output_length(self):
        # Issue 12 point 1: at G = 10^15 (1.2e11 chunks of 8192) the sum used to list every chunk
        # boundary first. Now no block is asked for breakpoints over more than a few periods
        # (a head of at most two periods, then one period twice, the last period, a tail).
        from infracalc.blocks.attention import Attention

        spans = []
        real = Attention.history_breakpoints

        def recording(block, lo, hi):
            if block.chunk is not None:
                spans.append(hi - lo)
            return real(block, lo, hi)

        Attention.history_breakpoints = recording
        try:
            arch = load_model("llama-4-scout")
            pcs = S.decode_pieces(arch, Workload(), 1024, 1024 + 10**15 - 2)
        finally:
            Attention.history_breakpoints = real
        self.assertLessEqual(max(spans), 2 * 8192)
        self.assertEqual({sum(run.total_steps for run in runs) for runs in pcs.runs}, {10**15 - 1})
        self.assertLessEqual(max(len(runs) for runs in pcs.runs), 8)

    def test_linear_sum_of_held_cache_equals_loop(self):
        # The serving bound's sum of the cache a request holds, c(H + 1) over H = lo..hi, in
        # closed form (decode_sum.linear_sum) against the explicit loop, across 40 chunks.
        from infracalc.analyses import serving

        w = Workload(batch=3)
        lo, hi = 7, 7 + 32 * 40 + 5
        want = sum(serving.held(self.arch, w, h + 1) for h in range(lo, hi + 1))
        self.assertEqual(S.linear_sum(self.arch, lo, hi, lambda h: serving.held(self.arch, w, h + 1)), want)
        self.assertEqual(serving.held_sum(self.arch, w, lo + 1, hi + 1), want)

    def test_whole_decode_record_is_flat_in_the_output_length(self):
        # Issue 12 point 1 for every part of `decode` (the serving bound's cache sum listed every
        # chunk boundary after it landed): the cache sizes evaluated do not grow with G.
        from infracalc.analyses import serving

        calls = []
        real = serving.held

        def counting(*args):
            calls.append(1)
            return real(*args)

        counts = []
        serving.held = counting
        try:
            for g in (10**6, 10**15):
                calls.clear()
                D.decode(load_model("llama-4-scout"), Workload(), load_device("h100-sxm"), 1024, g)
                counts.append(len(calls))
        finally:
            serving.held = real
        self.assertEqual(counts[0], counts[1])
        self.assertLess(counts[1], 40)

    def test_sum_splits_at_any_step(self):
        # Invariant: the closed form over lo..hi equals the sums over lo..m and m+1..hi
        # (each with its own head, repeats and tail) for splits inside and across periods.
        arch, w = self.arch, Workload(batch=3)
        lo, hi = 7, 7 + 32 * 40 + 5
        whole = closed(arch, w, lo, hi)
        for m in (lo + 3, 64, 65, 300, 1000, hi - 1):
            parts = [[a + b for a, b in zip(x, y)] for x, y in zip(closed(arch, w, lo, m), closed(arch, w, m + 1, hi))]
            self.assertEqual(parts, whole, m)


class HandDerivedStep(unittest.TestCase):
    """Qwen3-8B, B = 1, P = 1024 on the H100 SXM: the first decode step by hand."""

    @classmethod
    def setUpClass(cls):
        cls.rec = D.decode(load_model("qwen3-8b"), Workload(), load_device("h100-sxm"), 1024, 1024)

    # Qwen3-8B: 36 layers, hidden 4096, 32 heads / 8 KV heads x 128, MLP 12288,
    # vocab 151936, untied; 8,190,735,360 params (notes/param-derivations.md).
    # Weights read per step: every tensor once, except the embedding table of which one
    # row is gathered: 2 B x (8,190,735,360 - 151,936*4096 + 4096) = 15,136,819,200 B.
    WEIGHTS = 2 * (8_190_735_360 - 151_936 * 4096 + 4096)
    # KV per token: 36 layers x 2 (K, V) x 8 x 128 x 2 B = 147,456 B. At history H the
    # query reads H + 1 keys (the new one included): 147,456 x 1025 = 151,142,400 B.
    KV_READ = 147_456 * 1025
    KV_WRITE = 147_456
    # Activation traffic per layer at T = 1, in elements (read + write):
    # norm 4096+4096; q 4096+4096; k 4096+1024; v 4096+1024; q_norm 4096+4096;
    # k_norm 1024+1024; rope 5120+5120; kv_store 2048; attn_qk Q 4096; attn_pv out 4096;
    # o 4096+4096; residual 8192+4096; norm 8192; gate 4096+12288; up 4096+12288;
    # swiglu 24576+12288; down 12288+4096; residual 12288 = 184,320 per layer.
    # Model: 36 x 184,320 + embedding out 4096 + final norm 8192 + lm_head 4096+151,936
    # = 6,803,840 elements x 2 B = 13,607,680 B.
    ACT = 2 * (36 * 184_320 + 4096 + 8192 + 4096 + 151_936)
    # The only compute-bound operator at B = 1 is the softmax (5 vector FLOPs per score,
    # no bytes): 5 x 32 heads x 1025 keys x 36 layers.
    SOFTMAX = 5 * 32 * 1025 * 36

    def test_exact_work(self):
        p = self.rec["decode_first_step"]
        self.assertEqual(p["weight_bytes_read"], self.WEIGHTS)
        self.assertEqual(p["weight_bytes_read"], 15_136_819_200)
        self.assertEqual(p["kv_bytes_read"], self.KV_READ)
        self.assertEqual(p["kv_bytes_written"], self.KV_WRITE)
        self.assertEqual(p["act_bytes_read"] + p["act_bytes_written"], self.ACT)

    def test_ideal_step_is_weights_plus_kv_over_bandwidth(self):
        want = (self.WEIGHTS + self.KV_READ + self.KV_WRITE) / BW      # about 4.5636 ms
        self.assertAlmostEqual(self.rec["decode_first_step"]["ideal_time_s"] / want, 1.0, places=12)

    def test_roofline_step(self):
        want = (self.WEIGHTS + self.KV_READ + self.KV_WRITE + self.ACT) / BW + self.SOFTMAX / VECTOR
        p = self.rec["decode_first_step"]
        self.assertAlmostEqual(p["time_s"] / want, 1.0, places=12)
        self.assertAlmostEqual(self.rec["latency"]["tpot_first_s"] / want, 1.0, places=12)
        self.assertEqual(p["bound"], "memory: weights")
        self.assertAlmostEqual(p["weights_s"] / (self.WEIGHTS / BW), 1.0, places=12)

    def test_last_step_charges_its_own_history(self):
        # last step: history P + G - 2 = 2046, 2047 keys read
        last = self.rec["decode_last_step"]
        self.assertEqual(last["kv_bytes_read"], 147_456 * 2047)
        want = (self.WEIGHTS + 147_456 * 2047 + self.KV_WRITE + self.ACT) / BW + 5 * 32 * 2047 * 36 / VECTOR
        self.assertAlmostEqual(last["time_s"] / want, 1.0, places=12)

    def test_decode_sum(self):
        # 1023 steps, histories 1024..2046: KV read = 147,456 x sum_{H} (H + 1)
        # = 147,456 x (1025 + 2047) x 1023 / 2.
        d = self.rec["decode"]
        self.assertEqual(d["steps"], 1023)
        self.assertEqual(d["kv_bytes_read"], 147_456 * (1025 + 2047) * 1023 // 2)
        self.assertEqual(d["weight_bytes_read"], 1023 * self.WEIGHTS)
        # every step is memory-bound except the softmax: time is linear in H, so the
        # mean step time is the average of the first and last
        lat = self.rec["latency"]
        self.assertAlmostEqual(lat["tpot_mean_s"] / ((lat["tpot_first_s"] + lat["tpot_last_s"]) / 2), 1.0, places=12)
        self.assertAlmostEqual(lat["total_s"], lat["ttft_s"] + lat["decode_s"], places=15)
        self.assertAlmostEqual(lat["decode_tokens_per_s_per_request"], 1 / lat["tpot_mean_s"], places=9)

    def test_ttft_is_the_forward_prefill_bound(self):
        fwd = forward(load_model("qwen3-8b"), Workload(tokens=1024), load_device("h100-sxm"))
        self.assertAlmostEqual(self.rec["prefill"]["time_s"] / fwd["totals"]["roofline_time_s"], 1.0, places=12)
        self.assertEqual(self.rec["prefill"]["linear_flops"], fwd["totals"]["linear_flops"])
        self.assertEqual(self.rec["prefill"]["kv_bytes_written"], fwd["totals"]["kv_bytes_written"])

    def test_capacity(self):
        # a request caches P + G - 1 = 2047 tokens (the last generated one is never fed back):
        # H100 SXM allocatable 81,559 MiB = 85,520,809,984 B; reserve 10% = 8,552,080,998;
        # (85,520,809,984 - 8,552,080,998 - 16,381,470,720) // (147,456 x 2047) = 200
        c = self.rec["capacity"]
        self.assertEqual(c["cache_bytes_per_request"], 147_456 * 2047)
        self.assertEqual(c["max_requests"], (85_520_809_984 - 8_552_080_998 - 16_381_470_720) // (147_456 * 2047))
        self.assertEqual(c["max_requests"], 200)
        # the book's convention (label 80e9 B): (80e9 - 8e9 - 16,381,470,720) // 301,842,432 = 184
        label = D.decode(load_model("qwen3-8b"), Workload(), load_device("h100-sxm", "label"), 1024, 1024)
        self.assertEqual(label["capacity"]["max_requests"], 184)


class HandDerivedLlamaA100(unittest.TestCase):
    """Llama 3.1 8B, B = 1, P = 2048, G = 256 on the A100 SXM 80GB (312 TFLOP/s bf16, 2.039 TB/s)."""

    @classmethod
    def setUpClass(cls):
        cls.rec = D.decode(load_model("llama-3.1-8b"), Workload(), load_device("a100-sxm-80gb"), 2048, 256)

    # 32 layers, hidden 4096, 32 heads / 8 KV heads x 128, MLP 14336, vocab 128256, untied.
    # Layer matrices: 4096 x (4096 + 1024 + 1024 + 4096) + 3 x 4096 x 14336 = 218,103,808
    # params, x 32 = 6,979,321,856; embedding = lm_head = 128,256 x 4096 = 525,336,576.
    LAYERS = 32 * (4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336)
    HEAD = 128_256 * 4096

    def test_ttft_work(self):
        p = self.rec["prefill"]
        # linear: 2 FLOPs x layer matrices x 2048 tokens + the head on the last position
        self.assertEqual(p["linear_flops"], 2 * self.LAYERS * 2048 + 2 * self.HEAD)
        self.assertEqual(p["linear_flops"], 28_588_352_995_328)
        # causal pairs 2048 x 2049 / 2 = 2,098,176; QK and PV each 2 x 32 heads x 128 per pair
        self.assertEqual(p["attention_flops_causal"], 32 * 2 * (2 * 32 * 128) * 2_098_176)
        # the prefill is compute-bound: matrix FLOPs alone take 29.69e12 / 312e12 = 95.2 ms
        self.assertEqual(p["bound"], "compute")
        matrix_s = (p["linear_flops"] + p["attention_flops_causal"]) / 312e12
        self.assertGreater(self.rec["latency"]["ttft_s"], matrix_s)
        self.assertLess(self.rec["latency"]["ttft_s"], 1.1 * matrix_s)

    def test_tpot_is_weights_plus_kv_over_bandwidth(self):
        # Step 0 (history 2048) reads every weight but the embedding, of which one row:
        # 2 B x (6,979,321,856 + 525,336,576 + norms 32 x 2 x 4096 + 4096 + 4096) = 15,009,857,536 B;
        # KV: 32 x 2 x 8 x 128 x 2 B = 131,072 B per token, 2049 tokens read, 1 written.
        weights = 2 * (self.LAYERS + self.HEAD + 32 * 2 * 4096 + 4096 + 4096)
        self.assertEqual(weights, 15_009_857_536)
        first = self.rec["decode_first_step"]
        self.assertEqual(first["weight_bytes_read"], weights)
        self.assertEqual(first["kv_bytes_read"], 131_072 * 2049)
        ideal = (weights + 131_072 * 2050) / 2.039e12          # 7.4932 ms
        self.assertAlmostEqual(first["ideal_time_s"] / ideal, 1.0, places=12)
        self.assertEqual(first["bound"], "memory: weights")
        # activations and the softmax add under 0.1%
        self.assertLess(abs(self.rec["latency"]["tpot_first_s"] / ideal - 1), 1e-3)
        # last step: history 2048 + 254 = 2302, 2303 tokens read
        last = self.rec["decode_last_step"]
        self.assertAlmostEqual(last["ideal_time_s"] / ((weights + 131_072 * 2304) / 2.039e12), 1.0, places=12)


class Behaviour(unittest.TestCase):
    def test_efficiency_scales_every_time(self):
        arch, dev = load_model("qwen3-8b"), load_device("h100-sxm")
        full = D.decode(arch, Workload(batch=8), dev, 64, 32)
        half = D.decode(arch, Workload(batch=8), dev, 64, 32, 0.5, 0.5)
        for key in ("ttft_s", "tpot_first_s", "tpot_mean_s", "tpot_last_s", "total_s"):
            self.assertAlmostEqual(half["latency"][key] / full["latency"][key], 2.0, places=12)

    def test_one_output_token_has_no_decode_step(self):
        rec = D.decode(load_model("qwen3-0.6b"), Workload(batch=2), load_device("h100-sxm"), 100, 1)
        self.assertIsNone(rec["decode"])
        self.assertIsNone(rec["latency"]["tpot_mean_s"])
        self.assertEqual(rec["latency"]["total_s"], rec["latency"]["ttft_s"])
        self.assertEqual(rec["operators"], [])

    def test_windowed_reads_are_capped(self):
        rec = D.decode(windowed_mistral(16), Workload(), load_device("h100-sxm"), 40, 10)
        # Mistral 7B: 32 layers x 2 x 8 KV heads x 128 x 2 B = 131,072 B per token;
        # past the window each step reads 16 keys
        self.assertEqual(rec["decode_first_step"]["kv_bytes_read"], 131_072 * 16)
        self.assertEqual(rec["decode_last_step"]["kv_bytes_read"], 131_072 * 16)
        self.assertEqual(rec["decode"]["kv_bytes_read"], 9 * 131_072 * 16)

    def test_moe_charges_the_experts_the_batch_touches(self):
        # Qwen3-30B-A3B: 48 layers, 128 experts of 3 x [768, 2048], top-8. At B = 1 each
        # layer reads 8 experts: 48 x 8 x 3 x 2048 x 768 x 2 B = 3,623,878,656 B.
        arch, dev = load_model("qwen3-30b-a3b"), load_device("h100-sxm")
        pcs = S.decode_pieces(arch, Workload(), 100, 100)
        experts = sum(op.weight_read for op in pcs.ops if op.name.startswith("experts."))
        self.assertEqual(experts, 48 * 8 * 3 * 2048 * 768 * 2)
        # B = 16 under uniform routing: 128 x (1 - (1 - 8/128)^16) = 128 x (1 - 0.356074)
        # = 82.42 experts expected, rounded up to 83 per layer
        pcs = S.decode_pieces(arch, Workload(batch=16), 100, 100)
        experts = sum(op.weight_read for op in pcs.ops if op.name.startswith("experts."))
        self.assertEqual(experts, 48 * 83 * 3 * 2048 * 768 * 2)
        # so the cost per token falls with the batch
        per_token = [D.decode(arch, Workload(batch=b), dev, 256, 64)["latency"]["tpot_mean_s"] / b
                     for b in (1, 2, 4, 8, 16, 64)]
        self.assertEqual(per_token, sorted(per_token, reverse=True))

    def test_oversized_batch_is_reported_not_fatal(self):
        rec = D.decode(load_model("qwen3-8b"), Workload(batch=1000), load_device("h100-sxm"), 1024, 1024)
        self.assertFalse(rec["capacity"]["fits"])
        self.assertTrue(any("does not fit" in n for n in rec["notes"]))


class Sweep(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.arch, cls.dev = load_model("qwen3-8b"), load_device("h100-sxm")
        cls.rec = D.sweep(cls.arch, Workload(), cls.dev, 128, 128)

    def test_batches_and_capacity(self):
        # cache per request 147,456 x 255 (P + G - 1);
        # (85,520,809,984 - 8,552,080,998 - 16,381,470,720) // 37,601,280 = 1611
        cap = (85_520_809_984 - 8_552_080_998 - 16_381_470_720) // (147_456 * 255)
        self.assertEqual(cap, 1611)
        self.assertEqual(self.rec["capacity_batch"], cap)
        self.assertEqual([r["batch"] for r in self.rec["rows"]],
                         [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1611])

    def test_aggregate_throughput_never_falls(self):
        for rec in (self.rec, D.sweep(load_model("qwen3-30b-a3b"), Workload(), self.dev, 512, 256)):
            agg = [r["decode_tokens_per_s_aggregate"] for r in rec["rows"]]
            self.assertGreater(len(agg), 3)
            self.assertTrue(all(b >= a for a, b in zip(agg, agg[1:])), agg)
            per = [r["decode_tokens_per_s_per_request"] for r in rec["rows"]]
            self.assertTrue(all(b <= a for a, b in zip(per, per[1:])), per)

    def test_compute_bound_batch_is_the_switch(self):
        b = self.rec["compute_bound_batch"]
        self.assertIsNotNone(b)
        r = roof(self.dev, Workload().compute_dtype)

        def bound(batch):
            return D.account(S.decode_pieces(self.arch, Workload(batch=batch), 128, 254), r).bound

        self.assertEqual(bound(b), "compute")
        self.assertNotEqual(bound(b - 1), "compute")
        # Linear layers turn compute-bound once B exceeds the ridge 989.5e12 / 3.35e12
        # = 295 FLOP/B (2B FLOPs per 2 weight bytes); the whole step needs more than that.
        self.assertGreater(b, 295)

    def test_compute_bound_batch_by_hand(self):
        # Qwen3-8B on the H100 SXM with P = 1, G = 2 (KV traffic negligible). A bf16 GEMM
        # of K x N weights at batch B is compute-bound when 2BKN / peak > 2(KN + BK + BN) / BW,
        # i.e. B > KN / (KN x BW / peak - (K + N)). MLP gate/up/down (K + N = 4096 + 12288,
        # KN = 50,331,648, 78% of a layer's weights): B > 50,331,648 / (170,400.2 - 16,384)
        # = 326.8; lm_head (151,936 x 4096): B > 319.0; q_proj/o_proj: 345.5. At B = 326
        # only lm_head (about 8% of the weights) is compute-bound: memory-bound step; at
        # B = 327 the MLP GEMMs are, which is over half the time: compute-bound from 327,
        # about 11% above the ridge 989.5e12 / 3.35e12 = 295.4.
        rec = D.sweep(self.arch, Workload(), self.dev, 1, 2)
        self.assertEqual(rec["compute_bound_batch"], 327)

    def test_rows_match_single_decode(self):
        single = D.decode(self.arch, Workload(batch=64), self.dev, 128, 128)["latency"]
        row = next(r for r in self.rec["rows"] if r["batch"] == 64)
        self.assertEqual(row["tpot_mean_s"], single["tpot_mean_s"])
        self.assertEqual(row["tpot_first_s"], single["tpot_first_s"])
        self.assertAlmostEqual(row["tpot_last_s"] / single["tpot_last_s"], 1.0, places=12)




class Cli(unittest.TestCase):
    def test_markdown_and_json(self):
        status, out, _ = run_cli("decode", "--model", "qwen3-0.6b", "--input-len", "64", "--output-len", "16",
                                 "--batch", "4")
        self.assertEqual(status, 0)
        for text in ("# decode: qwen3-0.6b on h100-sxm", "TTFT", "What the bound leaves out", "queueing"):
            self.assertIn(text, out)
        status, out, _ = run_cli("decode", "--model", "qwen3-0.6b", "--input-len", "64", "--output-len", "16",
                                 "--format", "json")
        rec = json.loads(out)
        self.assertEqual(rec["command"], "decode")
        self.assertEqual(rec["inputs"]["decode_steps"], 15)

    def test_sweep_plot_is_deterministic(self):
        with tempfile.TemporaryDirectory() as d:
            paths = [os.path.join(d, f"{k}.svg") for k in "ab"]
            for p in paths:
                status, out, _ = run_cli("decode", "--model", "qwen3-0.6b", "--input-len", "512",
                                         "--output-len", "512", "--batch-sweep", "--plot", p, "--full")
                self.assertEqual(status, 0)
            a, b = (Path(p).read_text() for p in paths)
            self.assertEqual(a, b)
            self.assertTrue(a.startswith("<svg") and a.rstrip().endswith("</svg>"))
            sweep = out.split("## Sweep", 1)[1].split("\n## ", 1)[0]
            rows = sweep.count("\n| ") - 2   # table lines minus header and rule
            self.assertEqual(a.count("<circle"), rows)
            self.assertIn(">B=1<", a)
            self.assertIn("tokens/s per request", a)

    def test_plot_is_valid_svg_with_log_axes(self):
        from xml.dom import minidom
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.svg")
            status, _, _ = run_cli("decode", "--model", "gpt-oss-20b", "--input-len", "256", "--output-len",
                                   "256", "--batch-sweep", "--plot", path)
            self.assertEqual(status, 0)
            doc = minidom.parse(path)
            texts = [t.firstChild.data for t in doc.getElementsByTagName("text")]
            self.assertIn("decode tokens/s per request (1 / mean TPOT), log scale", texts)
            self.assertIn("aggregate decode tokens/s (B / mean TPOT), log scale", texts)
            # the checkpoint's native MXFP4 experts are named beside the weight format
            self.assertTrue(any("expert mxfp4" in t for t in texts), texts)
            # tick labels are short (1k, 20k, ...) so they stay clear of the axis title
            ticks = [t for t in texts if t[:1].isdigit()]
            self.assertTrue(ticks, texts)   # not vacuous: the axes have numbered ticks
            self.assertTrue(all(len(t) <= 5 for t in ticks), texts)

    def test_nothing_fits_is_an_empty_plot_and_a_header_only_csv(self):
        # Kimi K2 (about 958 GiB of weights) on one 80 GB H100: a result, not a crash.
        from xml.dom import minidom
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.svg")
            status, out, _ = run_cli("decode", "--model", "kimi-k2", "--input-len", "1024", "--output-len",
                                     "1024", "--batch-sweep", "--plot", path, "--format", "csv")
            self.assertEqual(status, 0)
            self.assertEqual(out, ",".join(D.SWEEP_COLUMNS) + "\n")
            svg = minidom.parse(path)
            self.assertEqual(svg.getElementsByTagName("circle"), [])
            self.assertIn("Not even one request fits", Path(path).read_text())
        status, out, _ = run_cli("decode", "--model", "qwen3-0.6b", "--input-len", "8", "--output-len", "1",
                                 "--format", "csv")
        self.assertEqual(out, ",".join(D.OPERATOR_COLUMNS) + "\n")

    def test_row_keys_are_the_csv_columns(self):
        rec = D.sweep(load_model("qwen3-0.6b"), Workload(), load_device("h100-sxm"), 8, 4)
        self.assertEqual(tuple(rec["rows"][0]), D.SWEEP_COLUMNS)
        rec = D.decode(load_model("qwen3-0.6b"), Workload(), load_device("h100-sxm"), 8, 4)
        self.assertEqual(tuple(rec["operators"][0]), D.OPERATOR_COLUMNS)

    def test_errors(self):
        for argv in (("--batch", "2", "--batch-sweep"), ("--plot", "x.svg"), ("--input-len", "0"),
                     ("--batch-sweep", "--output-len", "1")):
            base = {"--input-len": "16", "--output-len": "8"}
            args = ["decode", "--model", "qwen3-0.6b"]
            for k, v in base.items():
                if k not in argv:
                    args += [k, v]
            status, out, err = run_cli(*args, *argv)
            self.assertEqual(status, 2, argv)
            self.assertEqual(err.count("\n"), 1, err)
            self.assertIn("error", err)

    def test_command_line(self):
        proc = subprocess.run([sys.executable, str(ROOT / "calculations" / "calc.py"), "decode", "--model",
                               "llama-3.2-1b", "--input-len", "32", "--output-len", "8", "--format", "csv"],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(proc.stdout.startswith("name,layers,"))


if __name__ == "__main__":
    unittest.main()

"""efficiency.serving.predicted_ceiling: an upper bound on a layout's predicted output tokens/s
per device from closed forms per stage shard, and the predicted search it prunes.

The ceiling is a promise (`parallel --search --objective predicted` rules a layout out by it):
it must never be below the figure. Checked three ways: each term against the rows of the
ledger it stands for (every bundled model, sharded several ways), the iteration floor against
the iteration, and the ceiling against predicted_layout over every admitted layout of dense, MoE
and MLA models with and without CP; then the pruned search against the unpruned one."""

import glob
import importlib
import os
import unittest

from support import CALC, Workload, load_model

from infracalc import layout as placement
from infracalc import ledger
from infracalc.analyses.efficiency import predict, serving
from infracalc.blocks.mla import MLA
from infracalc.errors import UserError
from infracalc.load.hardware import load_device
from infracalc.workload import from_formats

from test_search_prune import plan_of, reference

S = importlib.import_module("infracalc.analyses.parallel.search")
H100, H200 = load_device("h100-sxm"), load_device("h200")
MODELS = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(CALC, "models", "*.json")))


def admitted(plan, devices):
    """The layouts of `devices` the search admits (before any predicted figure)."""
    out = []
    for lay in placement.candidate_layouts(plan.arch, devices):
        try:
            S.admitted_batches(plan, lay, None)
        except Exception:   # refused: not scored by either path
            continue
        out.append(lay)
    return out


class ShardCountsByHand(unittest.TestCase):
    def test_llama_8b(self):
        # Llama-3.1-8B: per layer q and o 4096 x 4096 = 16,777,216 each, k and v 1024 x 4096 =
        # 4,194,304 each, gate/up/down 14336 x 4096 = 58,720,256 each: 218,103,808 params, x 32
        # layers = 6,979,321,856; the head 128,256 x 4096 = 525,336,576. In BF16 the weights the
        # pass reads once (not the embedding's gather, not the norms) are 2 x (6,979,321,856 +
        # 525,336,576) = 15,009,316,864 B; 2 FLOPs a parameter a position: 13,958,643,712 per
        # position, 1,050,673,152 per last position (the head).
        arch = load_model("llama-3.1-8b")
        w = from_formats(arch, batch=1, tokens=1)
        self.assertEqual(serving.shard_counts(arch, w), (15_009_316_864, 13_958_643_712, 1_050_673_152, ()))
        # a decode at history 1,000 reads the 1,000 cached keys and values of its 32 full-attention
        # layers: 32 x 2 (K, V) x 8 KV heads x 128 x 2 B x 1,000 = 131,072,000 B; its attention
        # rows compute 2 x 32 heads x 128 x 2 (QK^T and PV) = 16,384 FLOPs a pair a layer, and a
        # prompt of 100 tokens after 50 has 100 x 50 + 100 x 101 / 2 = 10,050 causal pairs:
        # 32 x 16,384 x 10,050 = 5,269,094,400 FLOPs
        self.assertEqual(serving.history_read_bytes(arch, w, 1000), 131_072_000)
        self.assertEqual(serving.attention_pair_flops(arch, w, 50, 100), 5_269_094_400)

    def test_llama_8b_iteration_floor(self):
        # Llama-3.1-8B on an H100, 64 requests of P = 1,000 and G = 101 (100 steps): a decode
        # history of h = 1,000 + 50 = 1,050, 0.64 prefills of 1,000 tokens an iteration.
        #   outside attention: F = 13,958,643,712 x (64 + 640) + 1,050,673,152 x 64.64 FLOPs
        #                      W = 15,009,316,864 B
        #   decodes' attention: 64 x 32 x 16,384 x 1,051 pairs FLOPs, 64 x 131,072 x 1,050 B read
        #   prefills' attention: 0.64 x 32 x 16,384 x 500,500 pairs FLOPs
        # each group's max(compute, memory), summed (rates: the device's achievable ones)
        arch = load_model("llama-3.1-8b")
        w = from_formats(arch, batch=1, tokens=1)
        r = predict.achievable(H100, w.compute_dtype)
        flops = 13_958_643_712 * (64 + 640) + 1_050_673_152 * 64.64
        want = (max(flops / max(r.matrix_flops_per_s, r.vector_flops_per_s), 15_009_316_864 / r.bytes_per_s)
                + max(64 * 32 * 16_384 * 1_051 / r.attention_flops_per_s, 64 * 131_072 * 1_050 / r.bytes_per_s)
                + 0.64 * 32 * 16_384 * 500_500 / r.attention_flops_per_s)
        self.assertAlmostEqual(serving.iteration_floor(arch, w, r, 64, 1000, 101), want, delta=want * 1e-12)
        # under CP 4 a rank decodes at ceil(1,050 / 4) = 263 and runs 250 prompt tokens after 375
        # (zig-zag), 250 x 375 + 250 x 251 / 2 = 125,125 pairs
        flops = 13_958_643_712 * (64 + 0.64 * 250) + 1_050_673_152 * 64.64
        want = (max(flops / max(r.matrix_flops_per_s, r.vector_flops_per_s), 15_009_316_864 / r.bytes_per_s)
                + max(64 * 32 * 16_384 * 264 / r.attention_flops_per_s, 64 * 131_072 * 263 / r.bytes_per_s)
                + 0.64 * 32 * 16_384 * 125_125 / r.attention_flops_per_s)
        self.assertAlmostEqual(serving.iteration_floor(arch, w, r, 64, 1000, 101, cp=4), want, delta=want * 1e-12)

    def test_windows_and_chunks_cap_the_keys_read(self):
        # GPT-OSS-20B: 24 layers alternating a 128-token window and full attention (KV heads 8 x 64,
        # BF16: 2,048 B a key); at history 1,000 a window layer's token sees 127 cached keys, a full
        # layer's 1,000: 12 x 2,048 x (127 + 1,000) = 27,697,152 B. Llama-4-Scout's chunked layers
        # (chunk 8,192, 3 of every 4 of 48; 8 KV heads x 128 x 2 x 2 B = 4,096 B a key): at history
        # 8,192 the new token opens a chunk and reads no cached key there, the 12 full layers 8,192.
        oss = load_model("gpt-oss-20b")
        self.assertEqual(serving.history_read_bytes(oss, from_formats(oss, batch=1, tokens=1), 1000),
                         12 * 2048 * (127 + 1000))
        scout = load_model("llama-4-scout")
        w = from_formats(scout, batch=1, tokens=1)
        self.assertEqual(serving.history_read_bytes(scout, w, 8192), 12 * 4096 * 8192)
        self.assertEqual(serving.history_read_bytes(scout, w, 8191), 48 * 4096 * 8191)

    def test_qwen3_30b_routed_experts(self):
        # Qwen3-30B-A3B: 48 MoE layers of 128 experts 2048 -> 768 (3 x 2048 x 768 = 4,718,592
        # params each), top-8. Per position the routed copies add 2 x 48 x 8 x 4,718,592 =
        # 3,623,878,656 FLOPs; under EP 4 inside TP 4 the copies split 4 ways, a quarter of that.
        # One token touches 8 experts: 48 x 8 x 9,437,184 B (BF16) = 3,623,878,656 B.
        arch = load_model("qwen3-30b-a3b")
        w = from_formats(arch, batch=1, tokens=1)
        _, flops, _, experts = serving.shard_counts(arch, w)
        lay = placement.Layout(tp=4, ep=4)
        shard = placement.shard(arch, lay, placement.stages(arch, lay)[0])
        _, sharded, _, _ = serving.shard_counts(shard, w)
        self.assertEqual(len(experts), 1)
        self.assertEqual(experts[0][1:], (48, 9_437_184))
        self.assertEqual(serving.expert_read_bytes(experts, w, 1), 3_623_878_656)
        routed = 2 * 48 * 8 * 4_718_592
        self.assertEqual(routed, 3_623_878_656)
        self.assertGreater(flops, routed)
        # sharding divides every matrix 4 ways except the router (replicated: 48 x 128 x 2048 x 2)
        router = 2 * 48 * 128 * 2048
        self.assertAlmostEqual(sharded, (flops - router) / 4 + router, delta=1e-3)


class TermsNeverAboveTheLedger(unittest.TestCase):
    """Each term of iteration_floor counts no more than the ledger rows it stands for, on every
    bundled model: the FLOPs and weight reads of the rows outside attention, the cache reads of the
    attention rows, for decode steps and prompt passes, on shards of several layouts."""

    WORKLOADS = ((7, 1, 300), (1, 200, 0), (33, 1, 0), (1, 64, 900), (3, 1, 8192))   # (batch, tokens, history)
    LAYOUTS = (placement.Layout(), placement.Layout(tp=2, pp=2), placement.Layout(tp=4, ep=8, dp=2, pp=2))

    def test_every_model(self):
        checked = 0
        for model in MODELS:
            arch = load_model(model)
            w0 = from_formats(arch, batch=1, tokens=1)
            for lay in self.LAYOUTS:
                if placement.refusal(arch, lay):
                    continue
                try:
                    placement.validate(arch, lay)
                except UserError:
                    continue
                for st in placement.stages(arch, lay):
                    shard = placement.shard(arch, lay, st)
                    weights, token_flops, head_flops, experts = serving.shard_counts(shard, w0)
                    for mla in ("absorbed", "expanded", "naive") if arch.has_block(MLA) else (w0.mla,):
                        for b, t, h in self.WORKLOADS:
                            w = w0.replace(batch=b, tokens=t, history=h, logits="last", mla=mla)
                            try:
                                rows = ledger.operators(shard, w)
                            except UserError:   # e.g. past a learned position table
                                continue
                            outside = [r for r in rows if r.category != "attention"]
                            key = (model, lay.label(), st.index, b, t, h, mla)
                            self.assertGreaterEqual(sum(r.matrix_flops + r.vector_flops for r in outside),
                                                    token_flops * b * t + head_flops * b, key)
                            self.assertGreaterEqual(sum(r.weight_read for r in outside),
                                                    weights + serving.expert_read_bytes(experts, w, b * t), key)
                            attention = [r for r in rows if r.category == "attention"]
                            if t == 1:
                                self.assertGreaterEqual(sum(r.kv_read for r in attention),
                                                        b * serving.history_read_bytes(shard, w, h), key)
                            self.assertGreaterEqual(sum(r.matrix_flops for r in attention),
                                                    b * serving.attention_pair_flops(shard, w, h, t), key)
                            checked += 1
        self.assertGreater(checked, 400)


class CeilingNeverBelowThePrediction(unittest.TestCase):
    def check(self, model, device, n, P_, G):
        # 0 violations over every admitted layout; the ceiling says something (within 2x of the
        # figure on the best layout, where pruning needs it) and is None exactly where the figure is
        plan = plan_of(model, device, P_, G, {})
        rows, cps = [], set()
        for lay in admitted(plan, n):
            exact = S.predicted(plan, lay)
            loose = S.predicted_ceiling(plan, lay)
            tight = S.predicted_ceiling(plan, lay, with_comm=True)
            self.assertEqual(exact is None, loose is None, (model, lay))
            self.assertEqual(exact is None, tight is None, (model, lay))
            if exact is None:
                continue
            figure = exact["output_tokens_per_s_per_device"]
            self.assertGreaterEqual(tight, figure * (1 - 1e-12), (model, lay))
            self.assertGreaterEqual(loose, tight * (1 - 1e-12), (model, lay))
            rows.append((figure, loose, tight))
            cps.add(lay.cp)
        self.assertGreater(len(rows), 8, model)
        self.assertGreater(len(cps), 1, model)   # CP layouts among them
        best = max(rows)
        self.assertLess(best[1], 2 * best[0], model)

    def test_dense(self):
        self.check("llama-3.1-70b", H100, 32, 2048, 256)
        self.check("llama-3.1-8b", H100, 16, 32768, 64)   # long prompts: CP's share of the pairs

    def test_moe(self):
        self.check("qwen3-30b-a3b", H100, 32, 2048, 1024)
        self.check("gpt-oss-20b", H100, 16, 1024, 512)   # sliding windows, sinks

    def test_mla(self):
        self.check("deepseek-v3", H200, 64, 2048, 1024)

    def test_hybrid_and_chunked(self):
        self.check("qwen3-next-80b-a3b", H200, 16, 4096, 256)   # linear attention's recurrent state
        self.check("llama-4-scout", H200, 16, 8192, 128)   # chunked attention past a chunk boundary

    def test_iteration_floor_never_above_the_iteration(self):
        # the GPU time without communication, at several concurrencies and CP degrees
        arch = load_model("deepseek-v3")
        w = Workload()
        rates = predict.achievable(H200, w.compute_dtype)
        for lay in (placement.Layout(tp=8), placement.Layout(tp=8, ep=8, pp=2)):
            for st in placement.stages(arch, lay):
                shard = placement.shard(arch, lay, st)
                for n in (1, 17, 256):
                    for cp in (1, 2, 8):
                        floor = serving.iteration_floor(shard, w, rates, n, 4096, 512, cp)
                        gpu, _ = serving.iteration(shard, w, rates, n, 4096, 512, None, cp)
                        self.assertLessEqual(floor, gpu, (lay, st.index, n, cp))
                        self.assertGreater(floor, 0.5 * gpu, (lay, st.index, n, cp))   # tight enough to prune

    def test_a_doubled_floor_is_caught(self):
        # mutation: an iteration floor twice as large is no longer below the figure on some layout,
        # and the pruned search then loses a layout of the unpruned top list
        plan = plan_of("llama-3.1-70b", H100, 2048, 256, {})
        floor = serving.iteration_floor

        def doubled(*args, **kwargs):
            return 2 * floor(*args, **kwargs)
        serving.iteration_floor = doubled
        try:
            below = [lay for lay in admitted(plan, 32) if S.predicted_ceiling(plan, lay)
                     < S.predicted(plan, lay)["output_tokens_per_s_per_device"]]
            pruned = S.search_top(plan_of("llama-3.1-70b", H100, 2048, 256, {}), 32, objective="predicted", top=10)
        finally:
            serving.iteration_floor = floor
        self.assertTrue(below)
        ranked, rejected, total = reference(plan_of("llama-3.1-70b", H100, 2048, 256, {}), 32, "predicted", None,
                                            None)
        self.assertNotEqual(pruned[0], ranked[:10])


class PrunedPredictedSearchEqualsUnpruned(unittest.TestCase):
    CASES = [("llama-3.1-70b", H100, 32, 2048, 256), ("qwen3-30b-a3b", H100, 32, 2048, 1024),
             ("deepseek-v3", H200, 64, 2048, 1024)]

    def test_top_list_rejections_and_counts_equal(self):
        for model, device, n, P_, G in self.CASES:
            ranked, rejected, total = reference(plan_of(model, device, P_, G, {}), n, "predicted", None, None)
            self.assertTrue(any(r[2].cp > 1 for r in ranked[:10]) or model != "llama-3.1-70b", model)
            for top in (1, 10):
                with self.subTest(model=model, n=n, top=top):
                    self.assertGreater(len(ranked), top)
                    got = S.search_top(plan_of(model, device, P_, G, {}), n, objective="predicted", top=top)
                    self.assertEqual(got, (ranked[:top], rejected, total, len(ranked)))

    def test_few_layouts_are_scored_exactly(self):
        calls = []
        exact = S.predicted

        def counting(plan, lay):
            calls.append(lay)
            return exact(plan, lay)
        S.predicted = counting
        try:
            _, _, _, count = S.search_top(plan_of("deepseek-v3", H200, 2048, 1024, {}), 64, objective="predicted",
                                          top=3)
        finally:
            S.predicted = exact
        self.assertGreater(count, 40)
        self.assertLess(len(calls), count // 3)


if __name__ == "__main__":
    unittest.main()

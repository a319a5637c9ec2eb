"""Tests of the layout module: exact per-device figures, conservation of work
and weights under sharding for every bundled model, stage placement, refused
layouts, per-device memory, and the cost of placing very deep models.
Expected values are derived by hand (in the comments) or from the unsharded
model and independent replication rules, never from the code under test."""

import glob
import json
import os
import time
import unittest
from fractions import Fraction

from support import CALC, Workload, load_model, write_config  # noqa: F401  (sets the path)

from infracalc import layout as L  # noqa: E402
from infracalc.analyses import kv as K  # noqa: E402
from infracalc.errors import UserError  # noqa: E402
from infracalc.ledger import build  # noqa: E402

BF16 = Workload()
MODELS = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(CALC, "models", "*.json")))


def ceil_div(a, b):
    return -(-a // b)


class ExactFigures(unittest.TestCase):
    def test_llama_3_1_70b_tp8(self):
        # hidden 8192, 80 layers, 64 heads / 8 KV heads of 128, MLP 28,672, vocab 128,256.
        # Per device at TP 8, per layer: q 8192 x 1024 = 8,388,608; k and v 8192 x 128 =
        # 1,048,576 each; o 8,388,608; MLP 3 x 8192 x 3584 = 88,080,384; two norms 16,384
        # (replicated) -> 106,971,136; x 80 = 8,557,690,880. Embedding and head
        # 16,032 x 8192 = 131,334,144 each; final norm 8,192.
        # 8,557,690,880 + 262,668,288 + 8,192 = 8,820,367,360 params = 17,640,734,720 B bf16.
        arch, lay = load_model("llama-3.1-70b"), L.Layout(tp=8)
        L.validate(arch, lay)
        s = L.shard(arch, lay, L.stages(arch, lay)[0])
        self.assertEqual(s.params, 8_820_367_360)
        self.assertEqual(s.weight_bytes(BF16), 17_640_734_720)
        self.assertEqual(L.stage_weight_bytes(arch, BF16, lay, L.stages(arch, lay)[0]), 17_640_734_720)

    def test_qwen3_8b_tp8(self):
        # hidden 4096, 36 layers, 32 heads / 8 KV of 128, MLP 12,288, vocab 151,936 untied.
        # Per layer: q 4096 x 512 = 2,097,152; k, v 524,288 each; o 2,097,152; q/k norms
        # 256; MLP 3 x 4096 x 1536 = 18,874,368; norms 8,192 -> 24,125,696; x 36 =
        # 868,525,056. Embedding + head 2 x 18,992 x 4096 = 155,582,464; final norm 4,096.
        # Total 1,024,111,616.
        arch, lay = load_model("qwen3-8b"), L.Layout(tp=8)
        self.assertEqual(L.shard(arch, lay, L.stages(arch, lay)[0]).params, 1_024_111_616)

    def test_moe_shard_by_hand(self):
        # Qwen3-30B-A3B (hidden 2048, 128 experts of 768, top-8) at TP 4, EP 4: expert TP
        # 4/4 = 1, so each device holds 32 whole experts: 32 x 3 x 2048 x 768 =
        # 150,994,944 expert params; the router [128, 2048] is replicated.
        # 64 positions route 512 copies; per device 512 / min(4, 4) = 128, so
        # experts.gate_proj costs 2 x 128 x 2048 x 768 = 402,653,184 FLOPs.
        arch, lay = load_model("qwen3-30b-a3b"), L.Layout(tp=4, ep=4)
        L.validate(arch, lay)
        moe = L.shard(arch, lay, L.stages(arch, lay)[0]).layers[0].blocks[-2]
        shapes = {t.name: t.shape for t in moe.tensors()}
        self.assertEqual(shapes["mlp.experts.gate_proj.weight"], (32, 768, 2048))
        self.assertEqual(shapes["mlp.gate.weight"], (128, 2048))
        self.assertEqual(sum(t.params for t in moe.tensors() if t.role == "expert"), 150_994_944)
        ops = {op.name: op for op in moe.ops(Workload(tokens=64))}
        self.assertEqual(ops["experts.gate_proj"].matrix_flops, 402_653_184)

    def test_mla_latent_and_down_projections_replicated(self):
        # DeepSeek-V3 at TP 8: q_a_proj [1536, 7168] and kv_a_proj [576, 7168] whole on
        # every device; q_b_proj [128 x 192, 1536] -> [16 x 192, 1536]; the absorbed
        # cache (512 + 64) x 2 B = 1,152 B per token per layer on every device.
        arch, lay = load_model("deepseek-v3"), L.Layout(tp=8)
        mla = L.shard(arch, lay, L.stages(arch, lay)[0]).layers[0].blocks[1]
        shapes = {t.name: t.shape for t in mla.tensors()}
        self.assertEqual(shapes["self_attn.q_a_proj.weight"], (1536, 7168))
        self.assertEqual(shapes["self_attn.kv_a_proj_with_mqa.weight"], (576, 7168))
        self.assertEqual(shapes["self_attn.q_b_proj.weight"], (3072, 1536))
        self.assertEqual(mla.kv_bytes_per_token(BF16.kv_dtype), 1_152)


# -- conservation ---------------------------------------------------------------

HC = tuple(f"hc_{s}_{t}" for s in ("attn", "ffn", "head") for t in ("fn", "base", "scale"))
REPLICATED = ("norm.weight", "o_proj.bias", ".gate.bias", "e_score_correction_bias",
              "shared_expert_gate.weight", "q_a_proj.weight", "kv_a_proj_with_mqa.weight",
              # GPT blocks: LayerNorm weights and biases, the MLP's c_proj bias, the position table
              "norm.bias", "ln_1.weight", "ln_1.bias", "ln_2.weight", "ln_2.bias", "ln_f.weight",
              "ln_f.bias", "c_proj.bias", "wpe.weight",
              # DeepSeek-V4 (inference/model.py): mHC weights, the plain-Linear wq_a and wkv,
              # the compressors (not parallel); the sinks, wq_b, wo_a/wo_b and indexer split
              *HC, "gate.tid2eid", "attn.wq_a.weight", "attn.wkv.weight", "compressor.ape",
              "compressor.wkv.weight", "compressor.wgate.weight",
              # Kimi K3 (blocks.kimi): KDA's f_a_proj, the latent MoE's down/up projections and
              # the AttnRes projections (norms end in norm.weight)
              "f_a_proj.weight", "routed_expert_down_proj.weight", "routed_expert_up_proj.weight",
              "res_proj.weight",
              # DeepSeek-V4.1 (blocks.csa2): the source layers' index-key projection, the second
              # router bias, Engram's wkv and gate weights (its table rows split: `copies`)
              "indexer.wk.weight", "gate.bias_vl", "engram.wkv.weight", "engram.q_weight", "engram.k_weight")
REPLICATED_GEMMS = ("shared_expert_gate.weight", "q_a_proj.weight", "kv_a_proj_with_mqa.weight",
                    "hc_attn_fn", "hc_ffn_fn", "hc_head_fn", "attn.wq_a.weight", "attn.wkv.weight",
                    "compressor.wkv.weight", "compressor.wgate.weight",
                    "f_a_proj.weight", "routed_expert_down_proj.weight", "routed_expert_up_proj.weight",
                    "engram.wkv.weight")


def config(model):
    with open(os.path.join(CALC, "models", model + ".json")) as f:
        cfg = json.load(f)
    text = cfg.get("text_config", cfg)
    if text.get("model_type") == "llama" and "num_attention_heads" not in text:
        text = {**text, "num_attention_heads": 32}   # LLaVA's sparse text_config: LlamaConfig default
    return text


def copies(t, lay, kv_heads):
    """Copies of tensor t held over all devices of one stage (all dp replicas), by the
    stated placement: norms, biases added after a reduction, routers and MLA
    down-projections on every TP device; K/V heads replicated tp / kv_heads times when
    tp > kv_heads; routed experts spread over EP and split over expert TP tp/ep (ep <= tp)
    or held whole (ep > tp), their down bias on every expert-TP rank; all else split."""
    tp, dp, ep = lay.tp, lay.dp, lay.ep
    etp = tp // ep if ep <= tp else 1
    name = t.name
    if ".experts." in name and "shared" not in name:
        group = Fraction(tp * dp, ep * etp)
        return group * etp if name.endswith("down_proj.bias") else group
    if name.endswith("engram.embed.weight"):   # rows split over TP, ceil(rows / tp) on every rank
        rows = t.shape[0]
        return Fraction(tp * -(-rows // tp), rows) * dp
    if name.endswith("self_attn.norm.weight"):
        return dp   # lightning attention's norm over all its heads: split with them (vLLM's TP RMSNorm)
    if name.endswith(REPLICATED) or t.role == "router":
        return tp * dp
    if name.split(".")[-2] in ("k_proj", "v_proj") and tp > kv_heads:
        return Fraction(tp, kv_heads) * dp
    return dp


def index_key_rows(cfg, w):
    """DeepSeek-V4.1's replicated indexer.wk runs on each KV source's new entries, not on every
    position: B (floor((H+T)/r) - floor(H/r)) rows per source layer of ratio r."""
    ratios = cfg.get("compress_ratios", [])
    return sum(w.batch * ((w.history + w.tokens) // ratios[i] - w.history // ratios[i])
               for i in cfg.get("kv_source_layer_ids", ()))


def attn_res_candidates(cfg):
    """Kimi K3 AttnRes: candidates summed over its mixes (blocks.kimi), from the config:
    before layer i, ceil(i/S) saved blocks; the attention mix (none at layer 0) sees
    saved + 1, the FFN mix saved + 1 (+ 1 at a block start), the head all + 1."""
    s, n = cfg.get("attn_res_block_size"), cfg.get("num_hidden_layers", 0)
    if not s:
        return 0
    total = 0
    for i in range(n):
        saved = -(-i // s)
        total += (saved + 1 if saved else 0) + saved + (i % s == 0) + 1
    return total + -(-n // s) + 1


class Conservation(unittest.TestCase):
    """Summed over the devices of a layout, weight bytes and matrix FLOPs equal dp
    copies of the unsharded model plus the stated replication (computed here from the
    unsharded tensors and the config, independently of the shard hooks)."""

    W = Workload(batch=2, tokens=32, history=100)   # 64 positions, head on 2 rows

    def layouts(self, arch):
        tps = [t for t in (L.valid_tps(arch) or [1, 2, 4, 8]) if t <= 8]
        for tp in reversed(tps):
            try:
                L.validate(arch, L.Layout(tp=tp))
            except UserError:
                continue
            break
        pp = min(3, len(arch.layers))
        experts = L.moe_experts(arch)
        out = [L.Layout(tp=tp, pp=pp)]
        for ep in {max(1, tp // 2), 2 * tp}:
            if experts and ep > 1 and all(e % ep == 0 for e in experts):
                out.append(L.Layout(tp=tp, pp=pp, ep=ep, dp=max(1, ep // tp)))
        return out

    _whole = {}

    def whole_flops(self, arch):
        if arch.id not in self._whole:
            self._whole[arch.id] = build(arch, self.W).totals.matrix_flops
        return self._whole[arch.id]

    def expected(self, arch, lay, model):
        cfg = config(model)
        kv_heads = (cfg.get("num_key_value_heads") or cfg.get("num_attention_heads")
                    or cfg.get("n_head") or 1)
        w, n, rows = self.W, self.W.positions, self.W.head_rows
        tp, dp, h, v = lay.tp, lay.dp, arch.hidden_size, arch.vocab_size
        bytes_, flops = 0, dp * self.whole_flops(arch)
        pad_rows = tp * ceil_div(v, tp)
        tensors = [(t, 1) for b in arch.top_blocks() for t in b.tensors()]
        tensors += [(t, count) for layer, count, _ in arch.layer_groups() for t in layer.tensors()]
        for t, count in tensors:
            short = t.name
            if short in ("embed_tokens.weight", "lm_head.weight", "wte.weight"):
                bytes_ += dp * BF16.weight_bytes(t.replace(shape=(pad_rows, h)))
                continue
            c = copies(t, lay, kv_heads)
            bytes_ += count * c * BF16.weight_bytes(t)
            if short.endswith(REPLICATED_GEMMS) or t.role == "router" or (
                    (["", *short.split(".")])[-2] in ("k_proj", "v_proj") and short.endswith("weight")):
                flops += count * (c - dp) * 2 * n * t.params
        if arch.tied_embeddings and lay.pp > 1:   # the last stage's copy for the head
            bytes_ += dp * BF16.weight_bytes(arch.embedding.tensors()[0].replace(shape=(pad_rows, h)))
        flops += dp * 2 * rows * h * (pad_rows - v)   # head rows of the last vocab shard
        flops += (tp - 1) * dp * 2 * n * h * attn_res_candidates(cfg)   # AttnRes sums, on every TP rank
        flops += (tp - 1) * dp * 2 * index_key_rows(cfg, w) * cfg.get("index_head_dim", 0) * cfg.get("head_dim", 0)
        return bytes_, flops

    def test_every_bundled_model(self):
        w = self.W
        for model in MODELS:
            arch = load_model(model)
            for lay in self.layouts(arch):
                with self.subTest(model=model, layout=lay.label()):
                    L.validate(arch, lay)
                    devices = lay.tp * lay.dp   # per stage
                    got_bytes = got_flops = 0
                    for st in L.stages(arch, lay):
                        s = L.shard(arch, lay, st)
                        got_bytes += devices * s.weight_bytes(BF16)
                        got_flops += devices * build(s, w).totals.matrix_flops
                    self.assertEqual((got_bytes, got_flops), self.expected(arch, lay, model))

    def test_device_ledger_is_the_shard_ledger(self):
        # the memoized per-device rows equal the ledger of the shard architecture
        # (layer labels aside: the device rows name global layer indices)
        w = Workload(batch=4, tokens=1, history=500)
        for model, lay in (("deepseek-v3", L.Layout(tp=8, pp=3, ep=16, dp=2)),
                           ("qwen3-next-80b-a3b", L.Layout(tp=4, pp=5, ep=2)),
                           ("llama-3.2-1b", L.Layout(tp=2, pp=2))):
            arch = load_model(model)
            for st in L.stages(arch, lay):
                got, want = L.device_ledger(arch, lay, st, w), build(L.shard(arch, lay, st), w)
                self.assertEqual(got.totals, want.totals, (model, st))
                self.assertEqual([o.replace(layers="") for o in got.ops],
                                 [o.replace(layers="") for o in want.ops], (model, st))
        self.assertEqual(got.ops[1].layers, "8-15")   # llama-3.2-1b stage 1: layers 8-15

    def test_moe_layouts_are_exercised(self):
        seen = {m for m in MODELS if any(l.ep > 1 for l in self.layouts(load_model(m)))}
        self.assertGreaterEqual(len(seen), 8, seen)


# -- stages and checks -------------------------------------------------------------

class Stages(unittest.TestCase):
    def test_even_split_first_stages_longer(self):
        # 80 layers over 3 stages: 27 + 27 + 26
        arch = load_model("llama-3.1-70b")
        st = L.stages(arch, L.Layout(pp=3))
        self.assertEqual([(s.lo, s.hi) for s in st], [(0, 27), (27, 54), (54, 80)])
        self.assertEqual([(s.has_embedding, s.has_head) for s in st],
                         [(True, False), (False, False), (False, True)])

    def test_uneven_pp_layers(self):
        arch = load_model("llama-3.1-70b")
        lay = L.Layout(pp=4, pp_layers=(18, 21, 21, 20))
        L.validate(arch, lay)
        self.assertEqual([(s.lo, s.hi) for s in L.stages(arch, lay)],
                         [(0, 18), (18, 39), (39, 60), (60, 80)])
        # conservation over stages, untied: the whole model once
        total = sum(L.shard(arch, lay, s).weight_bytes(BF16) for s in L.stages(arch, lay))
        self.assertEqual(total, arch.weight_bytes(BF16))

    def test_tied_head_copy_on_last_stage(self):
        # Llama-3.2-1B ties its embedding [128,256, 2048]: with PP 2 the last stage holds
        # a copy, 128,256 x 2048 x 2 B = 525,336,576 B more than the whole model in total.
        arch = load_model("llama-3.2-1b")
        lay = L.Layout(pp=2)
        total = sum(L.shard(arch, lay, s).weight_bytes(BF16) for s in L.stages(arch, lay))
        self.assertEqual(total - arch.weight_bytes(BF16), 525_336_576)

    def test_rank_order_strides(self):
        # tp-cp-ep-dp-pp with tp 8, cp 2, dp 4, pp 2: strides 1, 8, 16, 64; the dp group
        # spans 16 x 3 + 1 = 49 ranks; EP 4 inside TP 8: expert TP 2, EP neighbours 2 apart.
        lay = L.Layout(tp=8, cp=2, dp=4, pp=2, ep=4)
        self.assertEqual(lay.devices, 128)
        self.assertEqual([lay.group_stride(d) for d in ("tp", "cp", "dp", "pp", "ep")], [1, 8, 16, 64, 2])
        self.assertEqual(lay.group_span("dp"), 49)
        self.assertEqual(lay.group_span("tp"), 8)
        self.assertEqual(lay.group_span("ep"), 7)   # ranks 0, 2, 4, 6
        # EP 16 over TP 8 x 2 DP replicas: TP ranks 0-7 and 16-23, a span of 24
        self.assertEqual(L.Layout(tp=8, cp=2, dp=4, ep=16).group_span("ep"), 24)
        self.assertEqual(L.Layout(pp=2, pp_layers=[3, 4]).pp_layers, (3, 4))


class Refused(unittest.TestCase):
    def refuses(self, model, pattern, **layout):
        arch = load_model(model) if isinstance(model, str) else model
        with self.assertRaisesRegex(UserError, pattern):
            L.validate(arch, L.Layout(**layout))

    def test_reasons(self):
        self.refuses("llama-3.1-70b", r"--tp 3 does not split .* valid TP values: 1, 2, 4, 8, 16, 32, 64$", tp=3)
        self.refuses("qwen3-30b-a3b", "EP 3 does not divide the 128 routed experts", ep=3, dp=3)
        self.refuses("qwen3-30b-a3b", r"--ep 8 does not divide tp x dp = 4", tp=4, ep=8)
        self.refuses("qwen3-8b", "has no routed experts", ep=2, dp=2)
        self.refuses("qwen3-8b", "--pp 37 exceeds the 36 layers", pp=37)
        self.refuses("qwen3-8b", "--pp-layers sums to 35; qwen3-8b has 36 layers", pp=2, pp_layers=(20, 15))
        self.refuses("qwen3-8b", "--pp-layers lists 3 stages; --pp is 2", pp=2, pp_layers=(12, 12, 12))
        self.refuses("qwen3-8b", "sequence parallelism .* needs --tp > 1", sp=True)

    def test_mlp_width_must_split(self):
        path = write_config(self, {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                                   "num_key_value_heads": 4, "head_dim": 16, "intermediate_size": 130,
                                   "num_hidden_layers": 2, "vocab_size": 1000,
                                   "max_position_embeddings": 4096, "hidden_act": "silu"})
        self.refuses(load_model(path), "TP 4 does not divide the MLP intermediate size 130", tp=4)

    def test_bad_records(self):
        with self.assertRaisesRegex(UserError, "tp must be a positive integer"):
            L.Layout(tp=0)
        with self.assertRaisesRegex(UserError, "rank order 'tp-dp' must list"):
            L.Layout(order="tp-dp")


# -- memory per device -------------------------------------------------------------

class DeviceMemory(unittest.TestCase):
    def test_llama_70b_tp8_pp2_binding_stage(self):
        # TP 8, PP 2: stage 0 = 40 layers + embedding, stage 1 = 40 layers + final norm
        # + head, 8,192 x 2 B = 16,384 B heavier. KV per request per device at 8,192 tokens:
        # 40 layers x 2 x 1 KV head x 128 x 2 B x 8,192 = 167,772,160 B on both stages.
        # Weights of stage 1: 40 x 106,971,136 + 131,334,144 + 8,192 = 4,410,187,776 params
        # = 8,820,375,552 B. Memory 80e9, reserve 8e9: (80e9 - 8e9 - 8,820,375,552) /
        # 167,772,160 = 376.6 -> 376 requests; stage 1 binds.
        arch = load_model("llama-3.1-70b")
        per_stage, bind = L.device_memory(arch, BF16, L.Layout(tp=8, pp=2), 8192, 80 * 10**9)
        self.assertEqual(bind, 1)
        s = per_stage[1]
        self.assertEqual((s.weight_bytes, s.kv_bytes_per_request, s.reserve_bytes, s.max_requests),
                         (8_820_375_552, 167_772_160, 8 * 10**9, 376))
        self.assertEqual(per_stage[0].weight_bytes, 8_820_375_552 - 16_384)
        # CP 2: each rank holds 4,096 of the 8,192 tokens, half the cache
        per_stage, _ = L.device_memory(arch, BF16, L.Layout(tp=8, pp=2, cp=2), 8192, 80 * 10**9)
        self.assertEqual(per_stage[1].kv_bytes_per_request, 83_886_080)
        self.assertEqual(per_stage[1].shortfall_bytes(10**4), 10**4 * 83_886_080 + 8 * 10**9
                         + 8_820_375_552 - 80 * 10**9)
        # a context CP does not split evenly: the last rank may hold ceil(8,191 / 2) = 4,096 tokens,
        # 40 x 2 x 1 x 128 x 2 B x 4,096 = 83,886,080 B (not 4,095 tokens' 83,865,600 B)
        per_stage, _ = L.device_memory(arch, BF16, L.Layout(tp=8, pp=2, cp=2), 8191, 80 * 10**9)
        self.assertEqual(per_stage[1].kv_bytes_per_request, 83_886_080)

    def test_kv_uses_the_same_weights(self):
        arch = load_model("qwen3-30b-a3b")
        rec = K.kv(arch, BF16, K.Request(4096), 80 * 10**9, L.Layout(tp=4, pp=2))
        per_stage, _ = L.device_memory(arch, BF16, L.Layout(tp=4, pp=2), 4096, 80 * 10**9)
        self.assertEqual([s["weight_bytes"] for s in rec["capacity"]["stages"]],
                         [s.weight_bytes for s in per_stage])
        self.assertEqual([s["max_requests"] for s in rec["capacity"]["stages"]],
                         [s.max_requests for s in per_stage])


class Speed(unittest.TestCase):
    def test_deep_model_many_stages(self):
        # 65,536 layers over 4,096 stages took 16 s when each stage scanned every layer;
        # stage sums now cost O(distinct layer groups x stages). Pipelines are capped at
        # layout.PP_MAX = 1,024 stages (a record each in the output).
        path = write_config(self, {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                                   "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128,
                                   "num_hidden_layers": 65536, "vocab_size": 1000,
                                   "max_position_embeddings": 4096, "hidden_act": "silu"})
        arch = load_model(path)
        start = time.process_time()
        rec = K.kv(arch, BF16, K.Request(1024), 80 * 10**9, L.Layout(pp=L.PP_MAX))
        self.assertLess(time.process_time() - start, 1.0)
        self.assertEqual(len(rec["capacity"]["stages"]), 1024)
        # 65,536 / 1,024 = 64 layers per stage; stage 1,023 also holds norm and head
        self.assertEqual(rec["capacity"]["binding_stage"], 1023)


if __name__ == "__main__":
    unittest.main()

"""Popular families (issue 15): exact counts of the bundled configs against the
published totals, tiny configs worked by hand for every new counting rule, the
RoPE-scaled maximum context, the generated model_type table, and every command
on every bundled model.

Tiny configs share h = 8, 2 query heads of head_dim 4, 1 KV head (k, v: 4 x 8),
intermediate 16, vocabulary 10, 2 layers. Their attention weighs
q 64 + k 32 + v 32 + o 64 = 192 and their SwiGLU MLP 3 x 8 x 16 = 384.
"""

import csv
import json
import os
import re
import unittest

from support import DTYPES, ROOT, Workload, build, load_model, run_cli, totals, write_config

from infracalc.load.adapters import FAMILIES
from infracalc.load.models import MODELS_DIR, bundled_ids, bundled_types

BASE = {"hidden_size": 8, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
        "intermediate_size": 16, "num_hidden_layers": 2, "vocab_size": 10,
        "max_position_embeddings": 64}


def tiny(test, model_type, **keys):
    return load_model(write_config(test, {**BASE, "model_type": model_type, **keys}))


class PublishedCounts(unittest.TestCase):
    def test_every_recorded_total(self):
        # calculations/models/published-counts.csv: id, published total, relation, source.
        with open(os.path.join(MODELS_DIR, "published-counts.csv"), encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        self.assertGreaterEqual(len(rows), 30)
        for row in rows:
            with self.subTest(model=row["id"], source=row["source"]):
                arch = load_model(row["id"])
                parts = sum(p.params or 0 for p in arch.parts)   # None: not derivable
                if row["relation"] == "total":
                    self.assertEqual(arch.params, int(row["published_params"]))
                elif row["relation"] == "with_parts":   # vision tower / MTP reported apart
                    self.assertEqual(arch.params + parts, int(row["published_params"]))
                else:
                    self.assertEqual(row["relation"], "differs")
                    self.assertLess(arch.params, int(row["published_params"]))

    def test_new_families_by_value(self):
        # The published totals restated (sources in published-counts.csv and SOURCES.md).
        official = {
            "gemma-2b": 2_506_172_416, "gemma-2-2b": 2_614_341_888, "olmo-2-13b": 13_716_198_400,
            "granite-3.3-8b": 8_170_864_640, "granite-3.1-1b-a400m": 1_334_628_352,
            "aya-23-8b": 8_028_033_024, "internlm2.5-7b": 7_737_708_544,
            "qwen1.5-moe-a2.7b": 14_315_784_192, "starcoder2-7b": 7_173_923_840,
            "falcon-7b": 6_921_720_704, "phi-4-mini": 3_836_021_760,
            "mistral-nemo-12b": 12_247_782_400, "glm-4-9b-0414": 9_400_279_040,
        }
        for model, params in official.items():
            with self.subTest(model=model):
                self.assertEqual(load_model(model).params, params)

    def test_olmo2_13b_from_its_index(self):
        # OLMo-2-1124-13B ships float32: index total_size 54,864,793,600 bytes = 4 x params.
        # By hand: per layer q,k,v,o 4 x 5120^2 = 104,857,600; MLP 3 x 5120 x 13824 =
        # 212,336,640; q_norm, k_norm (5120 each: 40 heads x 128) and two norms 20,480
        # -> 317,214,720 x 40 = 12,688,588,800; embed + head 2 x 100352 x 5120 =
        # 1,027,604,480; final norm 5120 -> 13,716,198,400.
        self.assertEqual(4 * load_model("olmo-2-13b").params, 54_864_793_600)


    def test_glm_4_5_air_with_mtp(self):
        """GLM-4.5-Air, by hand: layer 0 (dense): attention q 4096 x 12288 + 12288 bias, k, v
        4096 x 1024 + 1024 each, o 12288 x 4096 = 109,066,240; MLP 3 x 4096 x 10944 =
        134,479,872; norms 8,192 -> 243,554,304. MoE layers (45): attention 109,066,240,
        router 128 x 4096 + 128 bias, experts 128 x 3 x 4096 x 1408, shared 3 x 4096 x 1408,
        norms 8,192 -> 2,341,492,864 each. Embedding + head 2 x 151552 x 4096, final norm:
        main 106,852,251,264. MTP: one MoE layer + eh_proj 2 x 4096^2 + 3 norms =
        2,375,059,584; the checkpoint also stores embedding and head copies 1,241,513,984.
        Sum: 110,468,824,832, the published total."""
        arch = load_model("glm-4.5-air")
        self.assertEqual(arch.params, 106_852_251_264)
        self.assertEqual([p.params for p in arch.parts], [2_375_059_584])
        self.assertEqual(arch.params + arch.parts[0].params + 2 * 151552 * 4096, 110_468_824_832)


class HandWorked(unittest.TestCase):
    def test_gemma2_softcap_and_windows(self):
        """Gemma 2 tiny, window 3: layer 0 windowed, layer 1 full (even layers slide).
        params per layer: 192 + 384 + 4 norms x 8 = 608; x 2 + tied embedding 80 +
        final norm 8 = 1304. Prefill T = 4: pairs per head, layer 0: 1+2+3+3 = 9,
        layer 1: 1+2+3+4 = 10. Soft-capping adds 3 vector FLOPs per pair per head,
        3 x 2 x (9 + 10) = 114, and 3 per logit of the last position, 3 x 10 = 30:
        144 more than the same model without caps."""
        keys = dict(sliding_window=3, hidden_activation="gelu_pytorch_tanh")
        capped = tiny(self, "gemma2", attn_logit_softcapping=50.0, final_logit_softcapping=30.0, **keys)
        plain = tiny(self, "gemma2", **keys)
        self.assertEqual(capped.params, 1304)
        self.assertEqual([b.window for layer in capped.layers for b in layer.blocks if hasattr(b, "window")],
                         [3, None])
        w = Workload(tokens=4)
        self.assertEqual(build(capped, w).totals.vector_flops - build(plain, w).totals.vector_flops, 144)
        self.assertEqual(build(capped, w).totals.matrix_flops, build(plain, w).totals.matrix_flops)

    def test_gemma_params(self):
        # per layer 192 + 384 + 2 norms 16 = 592; x 2 + tied embedding 80 + norm 8 = 1272
        self.assertEqual(tiny(self, "gemma").params, 1272)

    def test_olmo2_full_width_qk_norms(self):
        """q_norm over heads x head_dim = 8, k_norm over 1 x 4 = 4 (not per head: 4 and 4).
        per layer 192 + 8 + 4 + 384 + 2 norms 16 = 604; x 2 + embed 80 + head 80 +
        norm 8 = 1376. q/k norm FLOPs: 4 per element of every token's q (8) and k (4),
        in both layers: q_norm at T = 3 is 2 x 4 x 3 x 8 = 192."""
        arch = tiny(self, "olmo2")
        self.assertEqual(arch.params, 1376)
        ops = build(arch, Workload(tokens=3)).ops
        q_norm = [o for o in ops if o.name == "q_norm"][0]
        self.assertEqual(q_norm.vector_flops, 2 * 4 * 3 * 8)
        self.assertEqual(q_norm.shape, "[3,8]")

    def test_granite_multipliers(self):
        """Same tensors as the llama tiny; T = 4: embedding x multiplier 4 x 8 = 32,
        residual multiplier 1 extra FLOP on each of 2 x 2 residual adds of 4 x 8
        values = 128, logits / logits_scaling on 10 logits = 10: 170 more vector
        FLOPs than llama."""
        keys = dict(embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.25,
                    logits_scaling=8.0)
        g, l = tiny(self, "granite", **keys), tiny(self, "llama")
        self.assertEqual(g.params, l.params)
        w = Workload(tokens=4)
        self.assertEqual(build(g, w).totals.vector_flops - build(l, w).totals.vector_flops, 170)

    def test_granitemoe_params(self):
        """E = 4 experts, top 2, I = 16: router 4 x 8 = 32, experts 4 x 3 x 8 x 16 =
        1536 (input_linear [4, 32, 8] + output_linear [4, 8, 16]); per layer
        192 + 32 + 1536 + 16 = 1776; x 2 + tied embedding 80 + norm 8 = 3640; active
        uses 2 experts: per layer 192 + 32 + 768 + 16 = 1008, x 2 + 88 = 2104."""
        arch = tiny(self, "granitemoe", num_local_experts=4, num_experts_per_tok=2, tie_word_embeddings=True)
        self.assertEqual((arch.params, arch.active_params), (3640, 2104))

    def test_cohere_parallel_layer(self):
        """One weight-only LayerNorm (8) per layer: 192 + 384 + 8 = 584; x 2 + tied
        embedding 80 + final norm 8 = 1256. The attention and the MLP read the same
        normed input: one norm op per layer, two residual adds."""
        arch = tiny(self, "cohere", logit_scale=0.0625)
        self.assertEqual(arch.params, 1256)
        names = [o.name for o in build(arch, Workload(tokens=2)).ops]
        self.assertEqual(names.count("input_layernorm"), 1)
        self.assertIn("logits_scale", names)

    def test_parallel_layer_keeps_the_normed_input_once(self):
        """Cohere: q_proj and gate_proj read the same normed input; training keeps it once
        (q_proj's copy): gate_proj keeps nothing, unlike a sequential llama layer, whose
        gate keeps its own input of T x h = 4 x 8 values, 64 bytes in bf16 per layer (2 layers)."""
        ops = build(tiny(self, "cohere"), Workload(tokens=4)).ops
        self.assertEqual([o.saved_bytes for o in ops if o.name == "gate_proj"], [0])
        ops = build(tiny(self, "llama"), Workload(tokens=4)).ops
        self.assertEqual([o.saved_bytes for o in ops if o.name == "gate_proj"], [2 * 2 * 4 * 8])

    def test_cohere_qk_norm_refused(self):
        path = write_config(self, {**BASE, "model_type": "cohere", "use_qk_norm": True})
        status, _, err = run_cli("models", "--model", path)
        self.assertEqual(status, 2)
        self.assertIn("use_qk_norm", err)

    def test_falcon_parallel_mqa(self):
        """Falcon tiny, h = 8, 2 heads of 4, multi_query (1 KV head), no biases,
        ffn 4h = 32: query_key_value 8 x (8 + 2 x 4) = 128, dense 64, MLP 2 x 8 x 32 =
        512, one LayerNorm 16 -> 720 per layer; x 2 + tied embedding 80 + ln_f 16 = 1536."""
        path = write_config(self, {"model_type": "falcon", "hidden_size": 8, "num_attention_heads": 2,
                                   "num_hidden_layers": 2, "vocab_size": 10, "multi_query": True,
                                   "parallel_attn": True, "bias": False})
        arch = load_model(path)
        self.assertEqual(arch.params, 1536)
        self.assertEqual(arch.max_context, 2048)   # FalconConfig default, stated in the notes
        self.assertTrue(any("max_position_embeddings absent" in n for n in arch.notes))

    def test_falcon_alibi_refused(self):
        path = write_config(self, {"model_type": "falcon", "hidden_size": 8, "num_attention_heads": 2,
                                   "num_hidden_layers": 2, "vocab_size": 10, "alibi": True})
        status, _, err = run_cli("models", "--model", path)
        self.assertEqual((status, "alibi" in err), (2, True))

    def test_starcoder2_biases(self):
        """q 64 + 8, k 32 + 4, v 32 + 4, o 64 + 8 = 216; c_fc 8 x 16 + 16, c_proj
        16 x 8 + 8 = 280; two LayerNorms 32 -> 528 per layer; x 2 + tied embedding 80
        + final LayerNorm 16 = 1152."""
        self.assertEqual(tiny(self, "starcoder2", hidden_act="gelu_pytorch_tanh").params, 1152)

    def test_qwen2_moe_shared_expert(self):
        """q 64 + 8, k 32 + 4, v 32 + 4, o 64 = 208 (no o bias); router 4 x 8 = 32,
        4 experts of I = 4: 4 x 96 = 384, shared expert I = 8: 192, its gate 8 ->
        616; norms 16: 840 per layer; x 2 + embed 80 + head 80 + norm 8 = 1848.
        Active (2 of 4 experts): 840 - 192 = 648 per layer -> 1296 + 168 = 1464."""
        arch = tiny(self, "qwen2_moe", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=4,
                    shared_expert_intermediate_size=8)
        self.assertEqual((arch.params, arch.active_params), (1848, 1464))

    def test_glm4_four_norms(self):
        """q, k, v biases 8 + 4 + 4, no o bias: attention 208; MLP 384; four norms 32 ->
        624 per layer; x 2 + embed 80 + head 80 + norm 8 = 1416. Partial rotary 0.5:
        RoPE on 2 of 4 dims."""
        arch = tiny(self, "glm4", attention_bias=True, partial_rotary_factor=0.5)
        self.assertEqual(arch.params, 1416)
        self.assertEqual(arch.layers[0].blocks[1].rope_dim, 2)

    def test_glm4_moe_layers(self):
        """first_k_dense_replace 1: layer 0 dense (208 + 384 + 16 = 608), layer 1 MoE: router
        4 x 8 + bias 4, 4 experts of I = 4 (384), shared 1 x 96 -> 516, + 208 + 16 = 740;
        embed 80 + head 80 + norm 8: 1516."""
        arch = tiny(self, "glm4_moe", attention_bias=True, n_routed_experts=4, num_experts_per_tok=2,
                    moe_intermediate_size=4, n_shared_experts=1, first_k_dense_replace=1)
        self.assertEqual(arch.params, 1516)

    def test_internlm2_bias(self):
        # bias true: wqkv biases 8 + 4 + 4 and wo bias 8 = 24 more per layer than llama
        self.assertEqual(tiny(self, "internlm2", bias=True).params - tiny(self, "llama").params, 48)


class VisionWrappers(unittest.TestCase):
    def test_llava_sparse_text_config_and_clip(self):
        """LLaVA-1.5-7B: text = Llama-2-7B shapes (LlamaConfig defaults) with vocab 32064:
        32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 2 x 32064 x 4096 + 4096 =
        6,738,939,904. CLIP ViT-L/14-336: class 1024 + patch 3 x 14^2 x 1024 = 602,112 +
        positions 577 x 1024 = 590,848 + pre/post LayerNorms 4,096 + 24 x (4 x (1024^2 +
        1024) + 4,096 + (4096 x 1024 + 4096) + (1024 x 4096 + 1024)) = 24 x 12,596,224 ->
        303,507,456; projector 4096 x 1024 + 4096 + 4096^2 + 4096 = 20,979,712. Sum
        7,063,427,072: the published total."""
        arch = load_model("llava-1.5-7b")
        self.assertEqual(arch.params, 6_738_939_904)
        self.assertEqual([p.params for p in arch.parts], [303_507_456 + 20_979_712])
        self.assertEqual(arch.model_type, "llava")
        self.assertTrue(any("LlamaConfig defaults" in n for n in arch.notes))

    def test_qwen2_5_vl_vision(self):
        """Vision: patch 3 x 2 x 14^2 x 1280 = 1,505,280; per block 2 x 1280 + (3 x 1280^2 +
        3840) + (1280^2 + 1280) + (3 x 1280 x 3420 + 2 x 3420 + 1280) = 19,702,200, x 32 =
        630,470,400; merger 1280 + (5120^2 + 5120) + (3584 x 5120 + 3584) = 44,574,464:
        676,550,144 (the published visual count); text = Qwen2.5-7B's 7,615,616,512."""
        arch = load_model("qwen2.5-vl-7b")
        self.assertEqual((arch.params, arch.parts[0].params), (7_615_616_512, 676_550_144))
        self.assertEqual(arch.max_context, 128000)   # mrope is not a length factor

    def test_mistral3_pixtral(self):
        """Ministral 3 3B: Pixtral tower patch 3 x 14^2 x 1024 = 602,112 + ln_pre 1024 + 24 x
        (2 x 1024 + 4 x 1024^2 + 3 x 1024 x 4096) = 402,702,336 -> 403,305,472; projector
        norm 1024 + merger 1024 x 4096 + [3072, 1024] + [3072, 3072] = 16,778,240.
        Text: 26 x (3072 x 4096 x 2 + 3072 x 1024 x 2 + 3 x 3072 x 9216 + 2 x 3072) +
        tied 131072 x 3072 + 3072 = 3,429,006,336."""
        arch = load_model("ministral-3-3b")
        self.assertEqual((arch.params, arch.parts[0].params), (3_429_006_336, 403_305_472 + 16_778_240))
        self.assertEqual(arch.max_context, 262144)   # yarn 16 x 16384 = 262,144 = P

    def test_mllama_text_only(self):
        """text_config: 3 layers, cross_attention_layers [1]. Self-attention layers 0 and 2:
        2 x (192 + 384 + 16) = 1184; embedding (10 + 8) x 8 = 144; head 80; norm 8: 1416.
        Cross-attention layer (apart): 192 + q_norm, k_norm 2 x 4 + 2 gates + 384 + 16 = 602.
        The vision tower is unknown (None)."""
        path = write_config(self, {"model_type": "mllama", "text_config": {
            **BASE, "model_type": "mllama", "num_hidden_layers": 3, "cross_attention_layers": [1]},
            "vision_config": {"hidden_size": 16}})
        arch = load_model(path)
        self.assertEqual((arch.params, len(arch.layers)), (1416, 2))
        self.assertEqual([p.params for p in arch.parts], [602, None])
        status, out, err = run_cli("forward", "--model", path, "--tokens", "4", "--format", "json")
        self.assertEqual((status, err), (0, ""))

    def test_vision_part_not_in_weights(self):
        arch = load_model("llava-1.5-7b")
        self.assertEqual(totals("llava-1.5-7b").weight_bytes, 2 * arch.params)


class Lightning(unittest.TestCase):
    """MiniMax tiny: h = 8, 2 heads of d = 4 (1 KV head on the softmax layer), block 2,
    2 experts of 4, top 1, layers [lightning, softmax], vocab 10.
    Params: lightning 5 x 8 x 8 + 8 = 328; softmax 192; MoE router 16 + experts
    2 x 3 x 8 x 4 = 192 -> 208; norms 16. Layer 0: 552, layer 1: 416; embed 80 + head
    80 + norm 8: 1136. Prefill T = 3 (blocks of 2 and 1), per head:
    block(2): p = 3, causal 4 x 4 x 3 + 4 x 2 x 16 = 176, vector 3 + 24 + 16 = 43;
    block(1): p = 1, causal 16 + 64 = 80, vector 1 + 12 + 16 = 29;
    2 heads: matrix 2 x 256 = 512, vector 2 x 72 = 144. Decode (T = 1): 2 x 4 x 16 = 128
    matrix, 2 x 16 = 32 vector. State 2 x 4 x 4 fp32 = 128 B per request."""

    CFG = {**BASE, "model_type": "minimax", "layer_types": ["linear_attention", "full_attention"],
           "num_local_experts": 2, "num_experts_per_tok": 1, "intermediate_size": 4, "block_size": 2,
           "rotary_dim": 2}

    def setUp(self):
        self.arch = load_model(write_config(self, self.CFG))

    def core(self, **w):
        return [o for o in build(self.arch, Workload(**w)).ops if o.name == "lightning"][0]

    def test_params(self):
        self.assertEqual(self.arch.params, 1136)

    def test_blockwise_prefill(self):
        op = self.core(tokens=3)
        self.assertEqual((op.matrix_flops, op.vector_flops, op.kv_read, op.kv_write), (512, 144, 0, 128))

    def test_recurrent_decode(self):
        op = self.core(tokens=1, history=9)
        self.assertEqual((op.matrix_flops, op.vector_flops, op.kv_read, op.kv_write), (128, 32, 128, 128))

    def test_alpha_beta_residuals(self):
        # alpha * x + beta * f(x): 3 FLOPs per element; T = 3, h = 8, 2 per layer, 2 layers
        ops = build(self.arch, Workload(tokens=3)).ops
        self.assertEqual(sum(o.vector_flops for o in ops if o.name == "alpha_beta_residual_add"),
                         3 * 3 * 8 * 2 * 2)

    def test_state_not_cache(self):
        self.assertEqual(self.arch.kv_bytes(DTYPES["bf16"], 0), 128)
        # the softmax layer keeps K and V: 2 x 1 x 4 x 2 B per token
        self.assertEqual(self.arch.kv_bytes_per_token(DTYPES["bf16"]), 16)

    def test_minimax_m1_published_rounding(self):
        # Model card: 456B total, 45.9B activated (without the embedding and head).
        arch = load_model("minimax-m1")
        embed_head = 2 * 200064 * 6144
        self.assertEqual(round(arch.params / 1e9), 456)
        self.assertEqual(round((arch.active_params - embed_head) / 1e8), 459)


class RopeScaling(unittest.TestCase):
    def context(self, rope, max_positions=4096):
        return tiny(self, "llama", max_position_embeddings=max_positions, rope_scaling=rope).max_context

    def test_rules(self):
        self.assertEqual(self.context({"type": "linear", "factor": 4.0}), 16384)
        self.assertEqual(self.context({"type": "dynamic", "factor": 2.0}), 8192)
        self.assertEqual(self.context({"rope_type": "yarn", "factor": 4.0,
                                       "original_max_position_embeddings": 32768}, 32768), 131072)
        self.assertEqual(self.context({"rope_type": "yarn", "factor": 4.0}), 16384)
        self.assertEqual(self.context({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 8192}, 131072), 131072)
        self.assertEqual(self.context({"type": "longrope", "long_factor": [1.0], "short_factor": [1.0]},
                                      131072), 131072)
        self.assertEqual(self.context(None), 4096)
        # never below max_position_embeddings (DeepSeek-V3: yarn 40 x 4096 = 163,840 = P)
        self.assertEqual(load_model("deepseek-v3").max_context, 163840)

    def test_bundled_dynamic(self):
        # InternLM2.5-7B: dynamic NTK factor 2 on 32,768 positions
        arch = load_model("internlm2.5-7b")
        self.assertEqual(arch.max_context, 65536)
        self.assertTrue(any("dynamic factor 2" in n for n in arch.notes))

    def test_unknown_type_refused(self):
        path = write_config(self, {**BASE, "model_type": "llama", "rope_scaling": {"type": "warp", "factor": 2}})
        status, _, err = run_cli("models", "--model", path)
        self.assertEqual(status, 2)
        self.assertIn("'warp'", err)

    def test_longer_context_is_stated(self):
        path = write_config(self, {**BASE, "model_type": "llama", "max_position_embeddings": 16,
                                   "rope_scaling": {"type": "linear", "factor": 2.0}})
        status, out, _ = run_cli("forward", "--model", path, "--tokens", "40", "--format", "json")
        self.assertEqual(status, 0)
        self.assertIn("exceeds the model's maximum context (RoPE-scaled maximum 32)", out)
        status, out, _ = run_cli("forward", "--model", path, "--tokens", "30", "--format", "json")
        self.assertNotIn("exceeds the model's maximum context", out)


class ModelTypeTable(unittest.TestCase):
    def test_docs_table_is_the_generated_one(self):
        status, out, err = run_cli("models", "--types", "--full")   # docs are read rendered: one table
        self.assertEqual((status, err), (0, ""))
        generated = [line for line in out.split("\n") if line.startswith("|")]
        with open(os.path.join(ROOT, "docs", "models.md"), encoding="utf-8") as f:
            text = f.read()
        kept = re.search(r"<!-- model-types:begin[^>]*-->\n(.*?)<!-- model-types:end -->", text, re.S).group(1)
        self.assertEqual(kept.rstrip("\n").split("\n"), generated,
                         "docs/models.md: regenerate the table with `models --types --full`")

    def test_every_type_listed_and_thirty(self):
        status, out, _ = run_cli("models", "--types", "--format", "json")
        rows = json.loads(out)["model_types"]
        self.assertEqual(sorted(r["model_type"] for r in rows), sorted(FAMILIES))
        self.assertGreaterEqual(len(FAMILIES), 30)
        for model_id, model_type in bundled_types():
            self.assertIn(model_type, FAMILIES, model_id)

    def test_unsupported_names_nearest(self):
        path = write_config(self, {**BASE, "model_type": "gemma4"})
        status, _, err = run_cli("models", "--model", path)
        self.assertEqual(status, 2)
        self.assertIn("unsupported model_type 'gemma4'; nearest supported: gemma", err)
        self.assertEqual(len(err.strip().split("\n")), 1)


class EveryCommandOnEveryModel(unittest.TestCase):
    """forward, kv, decode, parallel and train run on every bundled model, or refuse
    with one line naming what is missing (never a traceback: run_cli fails on one)."""

    COMMANDS = (("forward", "--tokens", "16"), ("kv", "--context", "4096"),
                ("decode", "--input-len", "256", "--output-len", "16"),
                ("parallel", "--devices", "8", "--input-len", "256", "--output-len", "16"),
                ("train", "--seq", "1024"))

    def test_walk(self):
        for model in bundled_ids():
            for command in self.COMMANDS:
                with self.subTest(model=model, command=command[0]):
                    status, out, err = run_cli(command[0], "--model", model, *command[1:], "--format", "json")
                    if status:
                        self.assertEqual(status, 2)
                        self.assertEqual(len(err.strip().split("\n")), 1, err)
                        self.assertRegex(err, r"not modelled|does not|cannot|missing")
                    else:
                        self.assertEqual(json.loads(out)["schema_version"], 1)


if __name__ == "__main__":
    unittest.main()

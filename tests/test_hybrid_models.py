"""Gemma 3, GPT-OSS and Llama 4: exact parameter counts (hand-derived on tiny
configs, and the bundled models against published figures), layer splits,
cache per layer, format bytes, and errors for unmodelled features.

Independent derivations of the bundled counts: notes/param-derivations.md
(tensor tables from the transformers modeling code), reproduced here in short.
"""

import json
import os
import unittest

from helpers import tiny_model, write_config
from support import build, load_model, run_cli, Workload

from infracalc.blocks.attention import Attention
from infracalc.dtypes import DTYPES
from infracalc.errors import UserError

BF16 = DTYPES["bf16"]
MXFP4 = (("expert", DTYPES["mxfp4"]),)


def attn_blocks(arch):
    return [next(b for b in layer.blocks if isinstance(b, Attention)) for layer in arch.layers]


def op(ledger, name):
    return [o for o in ledger.ops if o.name == name]


class Gemma3(unittest.TestCase):

    def test_tiny_params(self):
        # per layer: q 8x8 + k 4x8 + v 4x8 + o 8x8 = 192; q_norm, k_norm 4 + 4 = 8;
        # GeGLU MLP 3 * 16 * 8 = 384; four norms 4 * 8 = 32 -> 616; x 6 = 3,696;
        # embedding 10 x 8 = 80 (tied: no head), final norm 8 -> 3,784
        arch = tiny_model("gemma3_text")
        self.assertEqual(arch.params, 3784)
        self.assertTrue(arch.tied_embeddings)
        self.assertEqual(arch.layers[0].params, 616)

    def test_tiny_layer_split(self):
        # sliding_window_pattern default 6: layer i global when (i + 1) % 6 == 0 -> only layer 5
        arch = tiny_model("gemma3_text")
        self.assertEqual([a.window for a in attn_blocks(arch)], [4, 4, 4, 4, 4, None])
        # layer_types wins over the pattern
        kinds = ["full_attention", "sliding_attention"] * 3
        arch = tiny_model("gemma3_text", layer_types=kinds)
        self.assertEqual([a.window for a in attn_blocks(arch)], [None, 4, None, 4, None, 4])
        arch = tiny_model("gemma3_text", sliding_window_pattern=2)
        self.assertEqual([a.window for a in attn_blocks(arch)], [4, None, 4, None, 4, None])

    def test_tiny_vector_ops(self):
        # B 2, T 3: 6 positions. Embedding scaled: 6 * 8 = 48 FLOPs. GeGLU: 6 * 16 * 10 = 960
        # per layer. Four norms per layer over 6 x 8: 4 * (6 * 8 * 4) = 768 per layer.
        ledger = build(tiny_model("gemma3_text"), Workload(batch=2, tokens=3))
        self.assertEqual(op(ledger, "embedding_scale")[0].vector_flops, 48)
        self.assertEqual(sum(o.vector_flops for o in op(ledger, "geglu_tanh")), 6 * 960)
        norms = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                 "post_feedforward_layernorm")
        self.assertEqual(sum(o.vector_flops for n in norms for o in op(ledger, n)), 6 * 768)

    def test_bundled_27b(self):
        arch = load_model("gemma-3-27b")
        # per layer: attention (4096 + 2048 + 2048 + 4096) * 5376 = 66,060,288; q/k norms 256;
        # MLP 3 * 5376 * 21504 = 346,816,512; norms 4 * 5376 = 21,504 -> 412,898,560; x 62
        # = 25,599,710,720; embedding 262208 (Gemma3TextConfig default) * 5376 = 1,409,630,208;
        # final norm 5,376; tied -> 27,009,346,304
        self.assertEqual(arch.params, 27009346304)
        self.assertEqual(arch.vocab_size, 262208)
        self.assertEqual(arch.max_context, 131072)
        # SigLIP: patch conv 1152*3*14*14 + 1152 = 678,528; positions (896/14)^2 = 4096 -> 4,718,592;
        # per layer 4*1152 + 4*(1152^2 + 1152) + (4304*1152 + 4304) + (1152*4304 + 1152)
        # = 15,239,504; x 27 = 411,466,608; post norm 2,304 -> 416,866,032; projector
        # 1152 * 5376 + 1152 = 6,194,304 -> 423,060,336
        (part,) = arch.parts
        self.assertEqual(part.params, 423060336)
        # text + vision = 27,432,406,640 = the published bf16 index total_size 54,864,813,280 / 2
        self.assertEqual(arch.params + part.params, 54864813280 // 2)

    def test_bundled_27b_layers_and_cache(self):
        arch = load_model("gemma-3-27b")
        windows = [a.window for a in attn_blocks(arch)]
        self.assertEqual([i for i, w in enumerate(windows) if w is None], list(range(5, 62, 6)))
        self.assertEqual(windows.count(1024), 52)
        # per layer per token: K and V, 16 heads x 128 x 2 bytes = 8,192 B; at context 100,000:
        # 52 sliding layers hold 1024 tokens, 10 global layers 100,000
        self.assertEqual(arch.kv_bytes(BF16, 100000), 52 * 1024 * 8192 + 10 * 100000 * 8192)

    def test_softcapping_unmodelled(self):
        with self.assertRaises(UserError):
            tiny_model("gemma3_text", attn_logit_softcapping=50.0)


class GptOss(unittest.TestCase):

    def test_tiny_params(self):
        # attention 192 + biases (8 + 4 + 4 + 8) + sinks 2 = 218; router 4*8 + 4 = 36;
        # one expert 3 * 6 * 8 + biases (6 + 6 + 8) = 164, x 4 = 656; norms 16
        # -> 926 per layer, x 4 = 3,704; embedding 80 + head 80 + final norm 8 -> 3,872
        # active per layer: 218 + 36 + 2 * 164 + 16 = 598, x 4 + 168 = 2,560
        arch = tiny_model("gpt_oss")
        self.assertEqual(arch.params, 3872)
        self.assertEqual(arch.active_params, 2560)
        self.assertEqual(arch.native_formats, (("expert", "mxfp4"),))
        self.assertEqual([a.window for a in attn_blocks(arch)], [4, None, 4, None])
        self.assertTrue(all(a.sinks for a in attn_blocks(arch)))

    def test_tiny_clamped_swiglu(self):
        # B 1, T 3, top-2: 6 routed rows x 6 wide x 10 FLOPs = 360 per layer, 4 layers
        ledger = build(tiny_model("gpt_oss"), Workload(tokens=3))
        self.assertEqual(sum(o.vector_flops for o in op(ledger, "experts.swiglu_clamp")), 4 * 360)

    def test_bundled_20b(self):
        arch = load_model("gpt-oss-20b")
        # per layer: attention 9216 * 2880 + biases 8000 + sinks 64 = 26,550,144; router
        # 32 * 2880 + 32 = 92,192; expert 3 * 2880^2 + 5760 + 2880 = 24,891,840, x 32;
        # norms 5,760 -> 823,186,976; x 24 + embedding and head 2 * 201088 * 2880 + 2,880
        self.assertEqual(arch.params, 20914757184)
        self.assertEqual(arch.active_params, 4187440704)
        # without the input embedding (the model card's convention): 3.61B
        self.assertEqual(arch.active_params - 201088 * 2880, 3608307264)
        self.assertEqual(arch.attention_summary, "12x GQA window 128 + 12x GQA full")
        # MXFP4 experts: 24 * 32 * 24,883,200 = 19,110,297,600 values at 1/2 byte + one scale
        # byte per 32 = 10,152,345,600 B; the other 1,804,459,584 params at bf16 = 3,608,919,168 B
        # -> 13,761,264,768 = model.safetensors.index.json total_size of openai/gpt-oss-20b
        t = build(arch, Workload(formats=MXFP4)).totals
        self.assertEqual(t.weight_bytes, 13761264768)

    def test_bundled_120b(self):
        arch = load_model("gpt-oss-120b")
        # per layer 26,550,144 + 128 * 2880 + 128 + 128 * 24,891,840 + 5,760 = 3,213,080,192... x 36
        # + 1,158,266,880 + 2,880 = 116,829,156,672 (HF total; card 116.83B)
        self.assertEqual(arch.params, 116829156672)
        self.assertEqual(arch.active_params - 201088 * 2880, 5132849472)   # card 5.13B
        # experts 36 * 128 * 24,883,200 = 114,661,785,600 values -> 57,330,892,800 + 3,583,180,800 B;
        # other 2,167,371,072 params at bf16 = 4,334,742,144 B -> 65,248,815,744
        self.assertEqual(build(arch, Workload(formats=MXFP4)).totals.weight_bytes, 65248815744)

    def test_kv_cache_sliding_and_full(self):
        arch = load_model("gpt-oss-20b")
        # per layer per token: 2 * 8 heads * 64 * 2 bytes = 2,048 B; 12 layers hold min(ctx, 128)
        self.assertEqual(arch.kv_bytes(BF16, 50000), 12 * 128 * 2048 + 12 * 50000 * 2048)
        self.assertEqual(arch.kv_bytes(BF16, 100), 24 * 100 * 2048)

    def test_bad_configs(self):
        with self.assertRaises(UserError):
            tiny_model("gpt_oss", layer_types=None)
        with self.assertRaises(UserError):
            tiny_model("gpt_oss", experts_per_token=3)
        with self.assertRaises(UserError):
            tiny_model("gpt_oss", quantization_config={"quant_method": "fp8"})


class Llama4(unittest.TestCase):

    def test_tiny_params(self):
        # attention 192 (L2 qk norm has no weights); router 4*8 = 32; experts 4 * 3*6*8 = 576;
        # shared expert 144; norms 16 -> 960 per layer, x 4 = 3,840; + 80 + 80 + 8 = 4,008.
        # active per layer 192 + 32 + 144 + 144 + 16 = 528, x 4 + 168 = 2,280
        arch = tiny_model("llama4_text")
        self.assertEqual(arch.params, 4008)
        self.assertEqual(arch.active_params, 2280)
        self.assertFalse(arch.tied_embeddings)

    def test_tiny_layer_kinds(self):
        # default: layer 3 NoPE (global, no rope, no qk norm); 0-2 RoPE + chunked + L2 norm
        attn = attn_blocks(tiny_model("llama4_text"))
        self.assertEqual([a.chunk for a in attn], [4, 4, 4, None])
        self.assertEqual([a.rope_dim for a in attn], [4, 4, 4, 0])
        self.assertEqual([a.qk_l2norm for a in attn], [True, True, True, False])
        attn = attn_blocks(tiny_model("llama4_text", no_rope_layers=[1, 0, 1, 0], use_qk_norm=False))
        self.assertEqual([a.chunk for a in attn], [4, None, 4, None])
        self.assertEqual([a.qk_l2norm for a in attn], [False] * 4)

    def test_tiny_interleaved_dense(self):
        # step 2: MoE on layers 1, 3; dense MLP (3 * 12 * 8 = 288) on 0, 2:
        # 2 * (192 + 288 + 16) + 2 * 960 + 168 = 3,080
        self.assertEqual(tiny_model("llama4_text", interleave_moe_layer_step=2).params, 3080)
        self.assertEqual(tiny_model("llama4_text", moe_layers=[0, 1, 2, 3],
                                    interleave_moe_layer_step=2).params, 4008)

    def test_bundled_scout(self):
        arch = load_model("llama-4-scout")
        # per layer: attention 12288 * 5120 = 62,914,560; router 81,920; 16 experts
        # 16 * 125,829,120; shared 125,829,120; norms 10,240 -> 2,202,101,760; x 48
        # + embedding and head 2 * 202048 * 5120 + 5,120 = 107,769,861,120 (text; the published
        # 108,641,793,536 adds the vision tower and projector, 871,932,416)
        self.assertEqual(arch.params, 107769861120)
        # active: 62,914,560 + 81,920 + 2 * 125,829,120 + 10,240 = 314,664,960 per layer -> 17.17B
        self.assertEqual(arch.active_params, 17172894720)
        self.assertEqual(arch.attention_summary, "36x GQA chunked 8192 + 12x GQA full")
        self.assertEqual([i for i, a in enumerate(attn_blocks(arch)) if a.chunk is None],
                         list(range(3, 48, 4)))
        (part,) = arch.parts
        self.assertIsNone(part.params)   # the trimmed config has no vision_config
        # per layer per token 2 * 8 * 128 * 2 = 4,096 B; context 100,000: chunked layers hold
        # (99,999 mod 8192) + 1 = 1,696 tokens, global layers all 100,000
        self.assertEqual(arch.kv_bytes(BF16, 100000), 36 * 1696 * 4096 + 12 * 100000 * 4096)

    def test_bad_configs(self):
        with self.assertRaises(UserError):
            tiny_model("llama4_text", no_rope_layers=[1, 0])
        with self.assertRaises(UserError):
            tiny_model("llama4_text", layer_types=["chunked_attention"] * 3 + ["sliding_attention"])


class Cli(unittest.TestCase):

    def test_models_lists_the_four(self):
        status, out, err = run_cli("models", "--format", "json")
        self.assertEqual(status, 0, err)
        rows = {r["id"]: r for r in json.loads(out)["models"]}
        expect = {"gemma-3-27b": 27009346304, "gpt-oss-20b": 20914757184,
                  "gpt-oss-120b": 116829156672, "llama-4-scout": 107769861120}
        self.assertEqual({k: rows[k].get("params") for k in expect}, expect)

    def test_unmodelled_feature_is_one_line(self):
        path = write_config({"model_type": "gemma3_text", "hidden_size": 8, "intermediate_size": 16,
                             "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
                             "num_hidden_layers": 6, "final_logit_softcapping": 30.0})
        try:
            status, _, err = run_cli("forward", "--model", path)
        finally:
            os.unlink(path)
        self.assertEqual(status, 2)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("final_logit_softcapping", err)

    def test_forward_uses_native_mxfp4(self):
        # the checkpoint's native MXFP4 experts give the published 13,761,264,768 bytes
        status, out, err = run_cli("forward", "--model", "gpt-oss-20b", "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["totals"]["weight_bytes"], 13761264768)
        for model_id in ("gemma-3-27b", "gpt-oss-120b", "llama-4-scout"):
            status, _, err = run_cli("forward", "--model", model_id, "--tokens", "8192")
            self.assertEqual(status, 0, err)


if __name__ == "__main__":
    unittest.main()

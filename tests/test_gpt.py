"""GPT-style models (model_type gpt2): exact parameters and FLOPs by hand.

Parameters of a GPT block model with L layers, hidden h, MLP 4h, vocabulary V,
positions s and a tied head: P = L (12 h^2 + 13 h) + (V + s) h + 2 h
(per layer q, k, v, o 4h^2 + 4h; c_fc 4h^2 + 4h; c_proj 4h^2 + h; two
LayerNorms 4h; then wte + wpe and ln_f).
GPT-2 small (L 12, h 768, V 50,257, s 1,024): 12 x 7,087,872 + 51,281 x 768
+ 1,536 = 85,054,464 + 39,383,808 + 1,536 = 124,439,808, the published 124M
(nanoGPT's 123.65M leaves out wpe's 786,432).
"""

import unittest

from support import Workload, build, load_model, write_config

from infracalc.errors import UserError


def gpt_params(L, h, V, s):
    return L * (12 * h * h + 13 * h) + (V + s) * h + 2 * h


class Params(unittest.TestCase):
    def test_counts(self):
        cases = {"gpt2": (12, 768, 50257, 1024, 124_439_808),
                 "megatron-22b": (48, 6144, 51200, 2048, 22_074_273_792),
                 "gpt3-175b": (96, 12288, 51200, 2048, 174_615_846_912),
                 "megatron-530b": (105, 20480, 51200, 2048, 529_600_819_200),
                 "megatron-1t": (128, 25600, 51200, 2048, 1_008_038_758_400)}
        for model, (L, h, V, s, published) in cases.items():
            arch = load_model(model)
            self.assertEqual(gpt_params(L, h, V, s), published, model)
            self.assertEqual(arch.params, published, model)
            self.assertEqual(arch.active_params, published, model)


class Opt(unittest.TestCase):
    """OPT-125m (h 768, 12 layers, ffn 3,072 = 4h, V 50,272, 2,048 + 2 position rows, tied):
    12 x 7,087,872 + (50,272 + 2,050) x 768 + 1,536 = 85,054,464 + 40,183,296 + 1,536
    = 125,239,296, the published count of facebook/opt-125m."""

    def test_params(self):
        self.assertEqual(load_model("opt-125m").params, gpt_params(12, 768, 50272, 2050))
        self.assertEqual(load_model("opt-125m").params, 125_239_296)

    def test_relu_and_positions(self):
        arch = load_model("opt-125m")
        ops = {op.name: op for b in arch.layers[0].blocks for op in b.ops(Workload(tokens=4))}
        self.assertEqual(ops["relu"].vector_flops, 4 * 3072)     # one FLOP per element
        build(arch, Workload(tokens=2048))                         # the whole usable table
        with self.assertRaises(UserError):
            build(arch, Workload(tokens=2049))

    def test_unsupported(self):
        base = {"model_type": "opt", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1,
                "ffn_dim": 32, "max_position_embeddings": 16, "vocab_size": 10}
        for changes, needle in (({"do_layer_norm_before": False}, "do_layer_norm_before"),
                                ({"word_embed_proj_dim": 4}, "word_embed_proj_dim"),
                                ({"activation_function": "gelu"}, "activation_function")):
            with self.assertRaises(UserError) as e:
                load_model(write_config(self, dict(base, **changes)))
            self.assertIn(needle, str(e.exception))


class GptNeoX(unittest.TestCase):
    """GPT-NeoX-20B (h 6,144, 44 layers, ffn 24,576 = 4h, V 50,432, RoPE, untied): per layer
    12 h^2 + 13 h = 453,064,704; embed_in + embed_out 2 x 50,432 x 6,144 = 619,708,416; final
    LayerNorm 12,288: 44 x 453,064,704 + 619,708,416 + 12,288 = 20,554,567,680 (model card)."""

    def test_params_and_rope(self):
        arch = load_model("gpt-neox-20b")
        self.assertEqual(arch.params, 20_554_567_680)
        attn = arch.layers[0].blocks[1]
        self.assertEqual((attn.rope_dim, attn.dropout), (24, False))   # 0.25 x 96; legacy *_prob keys unread

    def test_parallel_residual_keeps_the_input_once(self):
        # ln1 and ln2 normalize the same x: one copy of it plus both norms' statistics
        layer = load_model("gpt-neox-20b").layers[0]
        ops = {op.name: op for b in layer.blocks for op in b.ops(Workload(tokens=4))}
        self.assertEqual(ops["input_layernorm"].saved_bytes, 4 * 6144 * 2 + 4 * 8)
        self.assertEqual(ops["post_attention_layernorm"].saved_bytes, 4 * 8)

    def test_sequential_and_dropout(self):
        base = {"model_type": "gpt_neox", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1,
                "intermediate_size": 32, "max_position_embeddings": 16, "vocab_size": 10}
        arch = load_model(write_config(self, dict(base, use_parallel_residual=False, hidden_dropout=0.1)))
        names = [type(b).__name__ for b in arch.layers[0].blocks]
        self.assertEqual(names, ["LayerNorm", "Attention", "Residual", "LayerNorm", "GPTMLP", "Residual"])
        emb = arch.embedding.ops(Workload(tokens=4))[0]
        self.assertEqual(emb.saved_bytes, 4 * 8)      # the embedding's 1-byte dropout mask
        with self.assertRaises(UserError):
            load_model(write_config(self, dict(base, hidden_act="relu")))


class Forward(unittest.TestCase):
    def test_gpt2_forward_by_hand(self):
        # T = 1024 tokens, head on the last position:
        # linear per token per layer 2 x 12 h^2 = 14,155,776 -> x 12 layers x 1024 tokens
        # = 173,946,175,488; head 2 x 768 x 50,257 = 77,194,752;
        # attention 4 h x T(T+1)/2 x 12 = 4 x 768 x 524,800 x 12 = 19,346,227,200.
        t = build(load_model("gpt2"), Workload(tokens=1024)).totals
        self.assertEqual(t.linear_flops, 173_946_175_488 + 77_194_752)
        self.assertEqual(t.attention_flops_causal, 19_346_227_200)
        # vector per token and layer: two LayerNorms 7 per element (14h); biases 1 per output
        # element on q, k, v, o (4h), c_fc (4h), c_proj (h) = 9h; GELU (gelu_new, tanh form) 9 per
        # element of 4h; two residual adds 2h; plus softmax 5 per pair and head.
        # Outside the layers: ln_f 7h and the position add h per token.
        n, h, L, pairs = 1024, 768, 12, 524_800
        per_layer = n * (2 * 7 * h + 9 * h + 9 * 4 * h + 2 * h) + 5 * 12 * pairs
        self.assertEqual(t.vector_flops, L * per_layer + n * 7 * h + n * h)

    def test_dropout_masks_saved(self):
        layer = load_model("gpt2").layers[0]
        ops = {op.name: op for b in layer.blocks for op in b.ops(Workload(tokens=4))}
        # o_proj keeps its input (4 x 768 x 2 B) and a 1-byte mask of its output
        self.assertEqual(ops["o_proj"].saved_bytes, 4 * 768 * 2 + 4 * 768)
        self.assertEqual(ops["c_proj"].saved_bytes, 4 * 3072 * 2 + 4 * 768)


class Adapter(unittest.TestCase):
    BASE = {"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 2, "n_positions": 16,
            "vocab_size": 10}

    def load(self, **changes):
        return load_model(write_config(self, dict(self.BASE, **changes)))

    def test_defaults_and_untied(self):
        arch = self.load()
        self.assertEqual(arch.params, gpt_params(2, 8, 10, 16))
        self.assertEqual(self.load(tie_word_embeddings=False).params, gpt_params(2, 8, 10, 16) + 10 * 8)
        # n_inner replaces 4h: the MLP has 2 h f + f + h
        self.assertEqual(self.load(n_inner=16).params, gpt_params(2, 8, 10, 16) - 2 * (2 * 8 * 16 + 16))

    def test_positions_beyond_the_table(self):
        arch = self.load()
        build(arch, Workload(tokens=16))
        with self.assertRaises(UserError) as e:
            build(arch, Workload(tokens=8, history=9))
        self.assertIn("16 positions", str(e.exception))

    def test_unsupported(self):
        for changes, needle in (({"activation_function": "relu"}, "activation_function"),
                                ({"add_cross_attention": True}, "add_cross_attention"),
                                ({"n_head": 3}, "n_head")):
            with self.assertRaises(UserError) as e:
                self.load(**changes)
            self.assertIn(needle, str(e.exception))


if __name__ == "__main__":
    unittest.main()

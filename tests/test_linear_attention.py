"""Gated DeltaNet, gated attention and the Qwen3-Next adapter, derived by hand.

Tiny hybrid config used below (TINY): hidden 32, vocab 64, 4 layers,
full_attention_interval 2 (layers 1 and 3 full attention, 0 and 2 Gated
DeltaNet), attention 4 heads / 2 KV heads / head_dim 16, partial rotary 0.25
(rope_dim 4); DeltaNet 2 key heads, 4 value heads, head dims 8, conv kernel 4;
MoE 4 experts top-2 of 8, one shared expert of 8 with a gate.

Parameters by hand:
  DeltaNet: key_dim 2*8 = 16, value_dim 4*8 = 32, conv channels 2*16+32 = 64
    in_proj_qkvz (2*16 + 2*32) x 32 = 3072; in_proj_ba 2*4 x 32 = 256;
    conv1d 64 x 1 x 4 = 256; dt_bias 4; A_log 4; norm 8; out_proj 32 x 32 = 1024
    = 4624
  gated attention: q_proj 2*4*16 x 32 = 4096; k, v 32 x 32 = 1024 each;
    o_proj 32 x 64 = 2048; q_norm, k_norm 16 each  = 8224
  MoE: router 4 x 32 = 128; experts 4 * 3 * 8 * 32 = 3072; shared 3 * 8 * 32 = 768;
    shared gate 32  = 4000; active = 128 + 2*768 + 768 + 32 = 2464
  layer norms 2 * 32 = 64 -> DeltaNet layer 8688, attention layer 12288
  total = embed 2048 + 2*8688 + 2*12288 + final norm 32 + head 2048 = 46080
  active = 46080 - 4 layers * (3072 - 2*768) = 39936
  MTP part = fc 2*32*32 + 3 norms 3*32 + one attention layer 12288 = 14432

State per DeltaNet layer and request: recurrent 4*8*8 = 256 values * 4 B (fp32)
= 1024 B; conv (4-1)*64 = 192 values * 2 B (bf16) = 384 B; 1408 B per layer,
2816 B for the two layers.

Recurrent form, one token of one head (dk = dv = 8): matrix 6*8*8 = 384
(S^T k, k d^T, S^T q), vector dk*dv + 2 dv + dk + 1 = 64 + 16 + 8 + 1 = 89.

Chunked form, one chunk of c = 4 (p = 10 pairs on/below the diagonal,
s = 6 below it, dk = dv = 8), by the formulas in blocks.linear_attention:
  causal = 2*8*(6 + 20) + 4*8*10 + 4*3*2/3 + 6*4*64 = 416 + 320 + 8 + 1536 = 2280
  dense  = 6*16*8 + 4*16*8 + 3*4*7/3 + 1536 = 768 + 512 + 28 + 1536 = 2844
  vector = 16 + 30 + 12 + 160 + 96 + 128 + 1 = 443
and c = 2 (p = 3, s = 1): causal = 2*8*7 + 4*8*3 + 0 + 6*2*64 = 976.
"""

import json
import os
import sys
import tempfile
import unittest

CALC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "calculations")
if CALC not in sys.path:
    sys.path.insert(0, CALC)

from infracalc.blocks.gated_attention import GatedAttention  # noqa: E402
from infracalc.blocks.linear_attention import (  # noqa: E402
    GatedDeltaNet, chunk_cost, chunked_cost, recurrent_cost, recurrent_step)
from infracalc.dtypes import DTYPES  # noqa: E402
from infracalc.errors import UserError  # noqa: E402
from infracalc.ledger import build  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.workload import Workload  # noqa: E402

BF16 = DTYPES["bf16"]

TINY = {
    "model_type": "qwen3_next", "hidden_size": 32, "vocab_size": 64, "num_hidden_layers": 4,
    "max_position_embeddings": 4096, "tie_word_embeddings": False, "hidden_act": "silu",
    "full_attention_interval": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "partial_rotary_factor": 0.25, "linear_num_key_heads": 2,
    "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
    "linear_conv_kernel_dim": 4, "num_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 8, "shared_expert_intermediate_size": 8,
    "intermediate_size": 64, "decoder_sparse_step": 1, "mlp_only_layers": [],
    "torch_dtype": "bfloat16",
}

TINY_GDN = GatedDeltaNet(hidden=32, k_heads=2, v_heads=4, k_dim=8, v_dim=8, conv_kernel=4)


def load(test, data):
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    test.addCleanup(os.remove, path)
    return load_model(path)


def op(ledger_or_ops, name):
    ops = ledger_or_ops.ops if hasattr(ledger_or_ops, "ops") else ledger_or_ops
    found = [o for o in ops if o.name == name]
    assert len(found) == 1, (name, len(found))
    return found[0]


def flops(t):
    return t.linear_flops + t.attention_flops_causal + t.vector_flops


def brute_chunk(c, dk, dv):
    """Count the chunked form by enumerating matrix entries (independent of the closed form)."""
    strict = sum(1 for i in range(c) for j in range(i))
    lower = sum(1 for i in range(c) for j in range(i + 1))
    subst = sum(1 for i in range(c) for j in range(i) for m in range(j + 1, i))
    causal = 2 * (dk * strict + subst + dk * lower + dv * lower + dk * lower + dv * lower) + 3 * 2 * c * dk * dv
    dense_subst = sum(i * i for i in range(c))
    dense = 2 * (dk * c * c + dense_subst + dk * c * c + dv * c * c + dk * c * c + dv * c * c) + 3 * 2 * c * dk * dv
    return causal, dense


class DeltaRuleFormulas(unittest.TestCase):
    def test_recurrent_step_by_hand(self):
        self.assertEqual(recurrent_step(8, 8), (384, 89))
        self.assertEqual(recurrent_cost(5, 8, 8), (5 * 384, 5 * 89))

    def test_chunk_by_hand(self):
        self.assertEqual(chunk_cost(4, 8, 8), (2280, 2844, 443))
        self.assertEqual(chunk_cost(2, 8, 8)[0], 976)
        self.assertEqual(chunk_cost(0, 8, 8), (0, 0, 0))
        # T = 10, C = 4: chunks 4, 4, 2
        self.assertEqual(chunked_cost(10, 8, 8, chunk=4)[0], 2 * 2280 + 976)

    def test_chunk_matches_enumeration(self):
        for c in (1, 2, 3, 7, 16, 64):
            for dk, dv in ((8, 8), (128, 128), (64, 32)):
                causal, dense, _ = chunk_cost(c, dk, dv)
                self.assertEqual((causal, dense), brute_chunk(c, dk, dv), (c, dk, dv))

    def test_qwen3_next_chunk_of_64(self):
        # dk = dv = 128, c = 64: s = 2016, p = 2080
        # causal = 256*(2016 + 4160) + 512*2080 + 64*63*62/3 + 6*64*16384
        #        = 1,581,056 + 1,064,960 + 83,328 + 6,291,456 = 9,020,800
        self.assertEqual(chunk_cost(64, 128, 128)[0], 9_020_800)
        # recurrent form for the same 64 tokens: 64 * 6 * 16384 = 6,291,456
        self.assertEqual(recurrent_cost(64, 128, 128)[0], 6_291_456)

    def test_causal_never_exceeds_dense(self):
        for c in range(0, 70):
            causal, dense, _ = chunk_cost(c, 16, 8)
            self.assertLessEqual(causal, dense)


class TinyModel(unittest.TestCase):
    def setUp(self):
        self.arch = load(self, TINY)

    def test_params_by_hand(self):
        a = self.arch
        self.assertEqual(a.params, 46080)
        self.assertEqual(a.active_params, 39936)
        self.assertEqual([p.params for p in a.parts], [14432])
        self.assertEqual([type(l.blocks[1]).__name__ for l in a.layers],
                         ["GatedDeltaNet", "GatedAttention", "GatedDeltaNet", "GatedAttention"])
        self.assertEqual(a.layers[0].blocks[1].params, 4624)
        self.assertEqual(a.layers[1].blocks[1].params, 8224)
        self.assertEqual(a.layers[0].blocks[4].params, 4000)

    def test_tensor_shapes(self):
        names = {t.name: t.shape for t in self.arch.tensors()}
        self.assertEqual(names["layers.0.linear_attn.in_proj_qkvz.weight"], (96, 32))
        self.assertEqual(names["layers.0.linear_attn.in_proj_ba.weight"], (8, 32))
        self.assertEqual(names["layers.0.linear_attn.conv1d.weight"], (64, 1, 4))
        self.assertEqual(names["layers.0.linear_attn.out_proj.weight"], (32, 32))
        self.assertEqual(names["layers.1.self_attn.q_proj.weight"], (128, 32))
        self.assertEqual(names["layers.1.mlp.shared_expert.gate_proj.weight"], (8, 32))
        self.assertEqual(names["layers.1.mlp.shared_expert_gate.weight"], (1, 32))
        self.assertNotIn("layers.0.linear_attn.conv1d.bias", names)

    def test_state_bytes(self):
        gdn = self.arch.layers[0].blocks[1]
        self.assertEqual(gdn.state_bytes(BF16), 1408)
        self.assertEqual(gdn.state_bytes(DTYPES["fp8"]), 1408)   # KV format does not apply
        self.assertEqual(gdn.kv_bytes_per_token(BF16), 0)
        for context in (1, 7, 1000, 10 ** 6):
            self.assertEqual(self.arch.layers[0].kv_bytes(BF16, context), 1408)

    def test_resident_after_is_state_plus_attention_cache(self):
        # attention layers: 2 layers * 2 (K, V) * 2 heads * 16 * 2 B = 256 B per token
        for history, tokens in ((0, 1), (0, 300), (5000, 1), (100, 64)):
            w = Workload(batch=3, tokens=tokens, history=history, logits="none")
            t = build(self.arch, w).totals
            self.assertEqual(t.kv_bytes_per_token, 256)
            self.assertEqual(t.kv_bytes_resident_after, 3 * (256 * (history + tokens) + 2816))

    def test_decode_step_by_hand(self):
        # T = 1, history 9, batch 2: recurrent form, 2 requests * 4 heads * 384 * 2 layers
        led = build(self.arch, Workload(batch=2, tokens=1, history=9, logits="none"))
        d = op(led, "delta_rule")
        self.assertEqual(d.matrix_flops, 2 * 4 * 384 * 2)
        self.assertEqual(d.rect_flops, d.matrix_flops)
        self.assertEqual(d.vector_flops, 2 * 4 * 89 * 2)
        # state read and written once per request and layer: 1024 B recurrent
        self.assertEqual(d.kv_read, 2 * 1024 * 2)
        self.assertEqual(d.kv_write, 2 * 1024 * 2)
        conv = op(led, "conv1d_silu")
        self.assertEqual((conv.kv_read, conv.kv_write), (2 * 384 * 2, 2 * 384 * 2))
        # conv: 2 tokens * 64 channels * (2*4 + 4) FLOPs * 2 layers
        self.assertEqual(conv.vector_flops, 2 * 64 * 12 * 2)
        # the first token (no history) reads no state
        first = op(build(self.arch, Workload(tokens=1, history=0, logits="none")), "delta_rule")
        self.assertEqual(first.kv_read, 0)
        self.assertEqual(first.kv_write, 1024 * 2)

    def test_prefill_chunked_by_hand(self):
        # T = 100 with C = 64: chunks of 64 and 36; one request, 4 heads, 2 layers
        led = build(self.arch, Workload(tokens=100, logits="none"))
        d = op(led, "delta_rule")
        per_head = chunk_cost(64, 8, 8)[0] + chunk_cost(36, 8, 8)[0]
        self.assertEqual(d.matrix_flops, 4 * 2 * per_head)
        self.assertIn("chunked C=64", d.shape)
        self.assertIn(f"recurrent form: {4 * 100 * 384} matrix FLOPs per layer", d.shape)

    def test_recurrent_steps_sum_to_t_steps(self):
        t_tokens = 37
        many = op(build(self.arch, Workload(tokens=t_tokens, history=3, delta_form="recurrent",
                                            logits="none")), "delta_rule")
        for history in (1, 50, 4000):   # cost of a step does not depend on its position
            one = op(build(self.arch, Workload(tokens=1, history=history, logits="none")), "delta_rule")
            self.assertEqual(many.matrix_flops, t_tokens * one.matrix_flops)
            self.assertEqual(many.vector_flops, t_tokens * one.vector_flops)
            self.assertEqual(many.kv_read, one.kv_read)       # one state read per pass

    def test_no_history_breakpoints_after_first_token(self):
        gdn = self.arch.layers[0].blocks[1]
        self.assertEqual(gdn.history_breakpoints(0, 100), (1,))
        self.assertEqual(gdn.history_breakpoints(1, 10 ** 6), ())

    def test_prefill_split_aligned_to_chunk_conserves_flops(self):
        whole = build(self.arch, Workload(tokens=192, logits="none")).totals
        a = build(self.arch, Workload(tokens=64, logits="none")).totals
        b = build(self.arch, Workload(tokens=128, history=64, logits="none")).totals
        self.assertEqual(flops(a) + flops(b), flops(whole))
        self.assertEqual(a.attention_flops_causal + b.attention_flops_causal, whole.attention_flops_causal)

    def test_prefill_split_misaligned(self):
        # Split 100 = 70 + 30 (70 is not a multiple of 64): chunks 64+6 and 30 instead
        # of 64+36, so only the delta-rule core differs, by exactly
        # 4 heads * 2 layers * (f(6) + f(30) - f(36)) in each count.
        whole = build(self.arch, Workload(tokens=100, logits="none"))
        a = build(self.arch, Workload(tokens=70, logits="none"))
        b = build(self.arch, Workload(tokens=30, history=70, logits="none"))
        diff = [x + y - z for x, y, z in zip(chunk_cost(6, 8, 8), chunk_cost(30, 8, 8), chunk_cost(36, 8, 8))]
        self.assertNotEqual(diff[0], 0)
        core = [op(led, "delta_rule") for led in (a, b, whole)]
        self.assertEqual(core[0].matrix_flops + core[1].matrix_flops - core[2].matrix_flops, 8 * diff[0])
        self.assertEqual(core[0].rect_flops + core[1].rect_flops - core[2].rect_flops, 8 * diff[1])
        self.assertEqual(core[0].vector_flops + core[1].vector_flops - core[2].vector_flops, 8 * diff[2])
        for name in ("in_proj_qkvz", "conv1d_silu", "gates", "gated_rmsnorm", "out_proj"):
            self.assertEqual(op(a, name).flops + op(b, name).flops, op(whole, name).flops, name)
        # with the recurrent form forced the split conserves the core as well
        r = [build(self.arch, Workload(tokens=t, history=h, logits="none", delta_form="recurrent")).totals
             for t, h in ((100, 0), (70, 0), (30, 70))]
        self.assertEqual(flops(r[1]) + flops(r[2]), flops(r[0]))

    def test_gated_attention_ops(self):
        # q_proj 2 * 5 tokens * 32 * 128; output gate 4 FLOPs * 5 * 64, before o_proj
        ops = self.arch.layers[1].blocks[1].ops(Workload(tokens=5, logits="none"))
        names = [o.name for o in ops]
        self.assertEqual(names.index("output_gate") + 1, names.index("o_proj"))
        self.assertEqual(op(ops, "q_proj").matrix_flops, 2 * 5 * 32 * 128)
        self.assertEqual(op(ops, "output_gate").vector_flops, 4 * 5 * 64)
        self.assertEqual(op(ops, "rope").vector_flops, 3 * 5 * (4 + 2) * 4)
        self.assertEqual(self.arch.layers[1].blocks[1].kind, "gated GQA full")

    def test_layer_types_key_and_errors(self):
        types = ["full_attention", "linear_attention", "linear_attention", "full_attention"]
        arch = load(self, dict(TINY, layer_types=types))
        self.assertEqual([type(l.blocks[1]).__name__ for l in arch.layers],
                         ["GatedAttention", "GatedDeltaNet", "GatedDeltaNet", "GatedAttention"])
        with self.assertRaisesRegex(UserError, "layer_types"):
            load(self, dict(TINY, layer_types=["linear_attention"] * 3))
        with self.assertRaisesRegex(UserError, "linear_num_value_heads"):
            load(self, dict(TINY, linear_num_value_heads=3))
        with self.assertRaisesRegex(UserError, "attention_bias"):
            load(self, dict(TINY, attention_bias=True))
        with self.assertRaisesRegex(UserError, "delta_form"):
            Workload(delta_form="parallel")


class Qwen3Next(unittest.TestCase):
    """Figures from /work notes' independent derivation and the HF checkpoint total.

    Main model 79,674,391,296 + MTP 1,650,471,424 = 81,324,862,720, the
    safetensors total Hugging Face reports for Qwen3-Next-80B-A3B-Instruct and
    -Thinking (quoted by third-party copies of the HF API).
    State per request: 36 DeltaNet layers * (32*128*128*4 B + 3*8192*2 B)
    = 36 * (2,097,152 + 49,152) = 36 * 2,146,304 = 77,266,944 B.
    KV per token (12 full-attention layers): 12 * 2 * 2 * 256 * 2 B = 24,576.
    """

    def setUp(self):
        self.arch = load_model("qwen3-next-80b-a3b")

    def test_params(self):
        self.assertEqual(self.arch.params, 79_674_391_296)
        self.assertEqual(self.arch.params + sum(p.params for p in self.arch.parts), 81_324_862_720)
        # routed experts 77,309,411,328 * 10/512 + everything else 2,364,979,968
        self.assertEqual(self.arch.active_params, 3_874_929_408)

    def test_layout(self):
        full = [i for i, l in enumerate(self.arch.layers) if type(l.blocks[1]).__name__ == "GatedAttention"]
        self.assertEqual(full, list(range(3, 48, 4)))
        attn = self.arch.layers[3].blocks[1]
        self.assertEqual((attn.rope_dim, attn.head_dim), (64, 256))

    def test_state_and_kv_bytes(self):
        gdn = self.arch.layers[0].blocks[1]
        self.assertEqual(gdn.recurrent_state_bytes(), 2_097_152)
        self.assertEqual(gdn.conv_state_bytes(), 49_152)
        self.assertEqual(self.arch.kv_bytes_per_token(BF16), 24_576)
        self.assertEqual(self.arch.kv_bytes(BF16, 1), 77_266_944 + 24_576)
        self.assertEqual(self.arch.kv_bytes(BF16, 100_000), 77_266_944 + 24_576 * 100_000)

    def test_decode_core_by_hand(self):
        # batch 1, T = 1: 32 heads * 6 * 128 * 128 = 3,145,728 per layer, 36 layers
        d = op(build(self.arch, Workload(tokens=1, history=4096)), "delta_rule")
        self.assertEqual(d.matrix_flops, 36 * 3_145_728)
        self.assertEqual(d.kv_read, 36 * 2_097_152)


if __name__ == "__main__":
    unittest.main()

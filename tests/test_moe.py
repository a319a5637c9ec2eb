"""Mixture of experts: exact counts, top-k FLOPs, expert bytes under routing models.

Qwen3-30B-A3B (hidden 2048, 48 layers, 32 heads x 128, 4 KV heads, 128 experts
of 768, top-8, vocab 151936, untied):
  per layer: attention 2048*4096*2 + 2048*512*2 + q/k norms 256 = 18,874,624
             router 128*2048 = 262,144; experts 128*3*2048*768 = 603,979,776
             norms 2*2048 = 4,096                         -> 623,120,640
  48 layers = 29,909,790,720; embed + head 2*151936*2048 = 622,329,856;
  final norm 2048 -> 30,532,122,624.
  matrix FLOPs per token per layer: 2*(18,874,368 + 262,144 + 8*3*2048*768)
  = 2*56,885,248 = 113,770,496; x 48 = 5,460,983,808 per token.
"""

import unittest

from support import Workload, build, load_model, totals, write_config

from infracalc.blocks.moe import experts_touched


class BookNumbers(unittest.TestCase):
    def test_qwen3_30b_a3b(self):
        self.assertEqual(load_model("qwen3-30b-a3b").params, 30_532_122_624)
        per_token = 48 * 2 * (2048 * 4096 * 2 + 2048 * 512 * 2 + 2048 * 128 + 8 * 3 * 2048 * 768)
        self.assertEqual(per_token, 5_460_983_808)
        head = 2 * 2048 * 151936
        attention = 4 * 128 * 32 * 48 * (8192 * 8193 // 2)
        self.assertEqual(per_token * 8192 + head + attention, 71_128_501_977_088)
        self.assertEqual(totals("qwen3-30b-a3b", tokens=8192).matrix_flops, 71_128_501_977_088)
        decode = 64 * (per_token + head + 4 * 128 * 32 * 48 * 8193)
        self.assertEqual(decode, 801_699_266_560)
        self.assertEqual(totals("qwen3-30b-a3b", batch=64, history=8192).matrix_flops, decode)

    def test_qwen3_235b_a22b(self):
        # hidden 4096, 94 layers, 64 heads x 128, 4 KV heads, 128 experts of 1536, top-8
        arch = load_model("qwen3-235b-a22b")
        layer = (4096 * 8192 * 2 + 4096 * 512 * 2 + 256 + 128 * 4096
                 + 128 * 3 * 4096 * 1536 + 2 * 4096)
        self.assertEqual(arch.params, 94 * layer + 2 * 151936 * 4096 + 4096)
        self.assertEqual(arch.params, 235_093_634_560)
        per_token = 94 * 2 * (4096 * 8192 * 2 + 4096 * 512 * 2 + 4096 * 128 + 8 * 3 * 4096 * 1536)
        attention = 4 * 128 * 64 * 94 * (8192 * 8193 // 2)
        expected = per_token * 8192 + 2 * 4096 * 151936 + attention
        self.assertEqual(expected, 446_535_841_087_488)
        self.assertEqual(totals("qwen3-235b-a22b", tokens=8192).matrix_flops, expected)

    def test_active_parameters(self):
        # Mixtral 8x7B: 46,702,792,704 total, top-2 of 8 experts of 3*4096*14336:
        # active = total - 6 * 176,160,768 * 32 layers = 12,879,925,248 (card: 12.9B)
        arch = load_model("mixtral-8x7b")
        self.assertEqual(arch.params, 46_702_792_704)
        self.assertEqual(arch.active_params, 46_702_792_704 - 6 * 3 * 4096 * 14336 * 32)


class Routing(unittest.TestCase):
    def test_expected_experts_touched(self):
        # uniform: E*(1-(1-k/E)^N) rounded up: E=128, k=8:
        #   N=1 -> 8; N=2 -> 128*(1-(15/16)^2) = 15.5 -> 16; N=8 -> 128*(1-0.59674) = 51.6 -> 52
        self.assertEqual([experts_touched("uniform", 128, 8, n) for n in (1, 2, 8)], [8, 16, 52])
        # exact expectation stays exact: E=8, k=4, N=2 -> 8*(1-1/4) = 6
        self.assertEqual(experts_touched("uniform", 8, 4, 2), 6)
        self.assertEqual(experts_touched("balanced", 128, 8, 5), 40)
        self.assertEqual(experts_touched("balanced", 128, 8, 100), 128)
        self.assertEqual(experts_touched("concentrated", 128, 8, 1000), 8)
        # histogram: loads [1,1,0,0], k=1, N=2: p = 0.5, 0.5 -> 2*(1-0.25) = 1.5 -> 2
        self.assertEqual(experts_touched("histogram", 4, 1, 2, (1, 1, 0, 0)), 2)
        # histogram equal loads reproduces uniform
        self.assertEqual(experts_touched("histogram", 128, 8, 8, (1,) * 128), 52)
        self.assertEqual(experts_touched("uniform", 384, 8, 1), 8)   # no float ceil noise

    def test_experts_read_per_device(self):
        # one decode token per replica on Qwen3-30B-A3B's MoE block (128 experts, top-8, uniform):
        # EP 8 over TP 1 routes the tokens of 8 replicas: 52 experts touched (above), ceil(52 / 8) = 7
        # of the 16 local; EP 8 over TP 2: 4 replicas' tokens, 128 (1 - (15/16)^4) = 29.1 -> 30,
        # ceil(30 / 8) = 4; EP = TP = 8: one token's 8 experts, ceil(8 / 8) = 1; at most the local
        # experts (1,000 tokens touch all 128: 16 local)
        from infracalc.blocks.moe import MoE
        moe = next(b for layer in load_model("qwen3-30b-a3b").layers for b in layer.blocks if isinstance(b, MoE))
        w = Workload(batch=1, tokens=1)
        self.assertEqual([moe.shard(tp, 8).experts_read(w, 1) for tp in (1, 2, 8)], [7, 4, 1])
        self.assertEqual(moe.shard(1, 8).experts_read(w, 1000), 16)

    def test_touched_never_exceeds_experts_and_grows_with_tokens(self):
        for routing in ("uniform", "balanced"):
            seen = [experts_touched(routing, 64, 6, n) for n in range(1, 200)]
            self.assertEqual(seen, sorted(seen))
            self.assertLessEqual(max(seen), 64)

    def test_expert_bytes_follow_routing(self):
        # Mixtral decode, B=16: one expert is 3*4096*14336*2 bytes = 352,321,536;
        # concentrated reads 2 experts per layer, balanced min(8, 32) = 8.
        arch = load_model("mixtral-8x7b")
        one = 3 * 4096 * 14336 * 2
        conc = build(arch, Workload(batch=16, routing="concentrated")).totals
        bal = build(arch, Workload(batch=16, routing="balanced")).totals
        self.assertEqual(bal.weight_bytes_read - conc.weight_bytes_read, 32 * (8 - 2) * one)
        self.assertEqual(bal.matrix_flops, conc.matrix_flops)    # FLOPs follow top-k only

    def test_expert_cost_per_token_falls_with_batch(self):
        arch = load_model("qwen3-30b-a3b")
        per_token = [build(arch, Workload(batch=b)).totals.weight_bytes_read / b for b in (1, 4, 16, 64)]
        self.assertEqual(per_token, sorted(per_token, reverse=True))


class TinyMoE(unittest.TestCase):
    CFG = {"model_type": "qwen3_moe", "hidden_size": 8, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 12,
           "moe_intermediate_size": 4, "num_experts": 4, "num_experts_per_tok": 2,
           "num_hidden_layers": 2, "decoder_sparse_step": 1, "mlp_only_layers": [0],
           "vocab_size": 10, "max_position_embeddings": 64}

    def test_dense_and_sparse_layers_by_hand(self):
        # attention: q 8*8 + k 8*4 + v 8*4 + o 8*8 + q/k norms 8 = 200; norms 16
        # layer 0 dense MLP 3*8*12 = 288 -> 504; layer 1 MoE: router 4*8 = 32,
        # experts 4*3*8*4 = 384 -> 632; embed + head 160; final norm 8 -> 1304
        arch = load_model(write_config(self, self.CFG))
        self.assertEqual(arch.params, 1304)
        # active: layer 1 uses 2 of 4 experts: 632 - 192 = 440
        self.assertEqual(arch.active_params, 1304 - 192)
        # one token, no history, head on it: linear FLOPs = 2 * (active matrices)
        # = 2 * (2*192 + 288 + 32 + 2*96 + 80) = 2 * 976 = 1952
        t = build(arch, Workload(logits="last")).totals
        self.assertEqual(t.linear_flops, 2 * (2 * 192 + 288 + 32 + 2 * 96 + 80))

    def test_combine_by_hand(self):
        # 3 tokens x top-2 = 6 routed rows of hidden 8: the combine reads 6*8 expert
        # outputs and the 6 routing weights (bf16: 2 B each), writes 3*8, and costs
        # 2 FLOPs (scale and add) per routed value: 96.
        arch = load_model(write_config(self, self.CFG))
        combine = [op for op in build(arch, Workload(tokens=3)).ops if op.name == "experts.combine"]
        self.assertEqual(len(combine), 1)
        op = combine[0]
        self.assertEqual((op.act_read, op.act_write, op.vector_flops), ((48 + 6) * 2, 24 * 2, 96))


if __name__ == "__main__":
    unittest.main()

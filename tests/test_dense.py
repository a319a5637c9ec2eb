"""Dense families: exact parameters, FLOPs, bytes and KV, derived by hand.

Qwen3-8B (config: hidden h=4096, L=36 layers, 32 heads, 8 KV heads, head_dim
128, intermediate 12288, vocab 151936, untied):
  per layer: q 4096*4096 + k 4096*1024 + v 4096*1024 + o 4096*4096
             + q_norm 128 + k_norm 128 + MLP 3*4096*12288 + 2 norms 2*4096
           = 16,777,216*2 + 4,194,304*2 + 150,994,944 + 256 + 8,192 = 192,946,432
  total = 36*192,946,432 + 2*151936*4096 (embed + head) + 4096 (final norm)
        = 6,946,071,552 + 1,244,659,712 + 4,096 = 8,190,735,360
  linear FLOPs per token = 2 * 36 * (33,554,432 + 8,388,608 + 150,994,944)
                         = 13,891,534,848; x 8192 tokens = 113,799,453,474,816;
  plus the head on the last position 2*4096*151936 = 1,244,659,712
  -> 113,800,698,134,528.
  causal attention at T=8192, H=0: pairs = 8192*8193/2 = 33,558,528 per head;
  QK^T + PV = 2 * 2*128 FLOPs per pair per head, 32 heads, 36 layers:
  4*128*32*36 * 33,558,528 = 19,793,625,219,072; rectangular with 8192^2 pairs:
  4*128*32*36 * 67,108,864 = 39,582,418,599,936.
  KV per token = 36 layers * 2 (K,V) * 8 heads * 128 * 2 bytes = 147,456.
"""

import json
import unittest

from support import DTYPES, Workload, build, load_model, totals, write_config


class ExactCounts(unittest.TestCase):
    def test_qwen3_8b_prefill(self):
        t = totals("qwen3-8b", tokens=8192)
        self.assertEqual(t.params, 8_190_735_360)
        self.assertEqual(t.linear_flops, 113_800_698_134_528)
        self.assertEqual(t.attention_flops_causal, 19_793_625_219_072)
        self.assertEqual(t.attention_flops_rectangular, 39_582_418_599_936)
        self.assertEqual(t.matrix_flops, 133_594_323_353_600)
        self.assertEqual(t.weight_bytes, 16_381_470_720)   # 2 bytes * params
        self.assertEqual(t.kv_bytes_per_token, 147_456)

    def test_qwen3_8b_decode_batch64(self):
        # per request: 13,891,534,848 linear + head 1,244,659,712
        # + attention 4*128*32*36 * (8192 + 1) pairs = 4,831,838,208 * ... :
        # 589,824 * 8193 = 4,832,428,032; sum = 19,968,622,592; x 64 = 1,277,991,845,888
        t = totals("qwen3-8b", batch=64, history=8192, tokens=1)
        self.assertEqual(t.matrix_flops, 1_277_991_845_888)
        self.assertEqual(t.kv_bytes_resident_before, 64 * 8192 * 147_456)  # 77,309,411,328
        self.assertEqual(t.kv_bytes_resident_before, 77_309_411_328)
        self.assertEqual(t.kv_bytes_written, 9_437_184)                    # 64 * 147,456
        # every request reads its 8193 cached keys and values
        self.assertEqual(t.kv_bytes_read, 64 * 8193 * 147_456)

    def test_qwen3_32b_prefill(self):
        # h=5120, L=64, 64 heads x 128, 8 KV heads, I=25600:
        # linear/token = 2*64*(2*5120*8192 + 2*5120*1024 + 3*5120*25600) = 62,075,699,200
        # x 8192 = 508,524,167,987,200; head 2*5120*151936 = 1,555,824,640;
        # attention 4*128*64*64 * 33,558,528 = 70,369,766,817,792... summed:
        t = totals("qwen3-32b", tokens=8192)
        linear = 2 * 64 * (2 * 5120 * 8192 + 2 * 5120 * 1024 + 3 * 5120 * 25600) * 8192 + 2 * 5120 * 151936
        attention = 4 * 128 * 64 * 64 * (8192 * 8193 // 2)
        self.assertEqual(linear + attention, 581_651_796_852_736)
        self.assertEqual(t.matrix_flops, 581_651_796_852_736)
        self.assertEqual(t.params, 32_762_123_264)

    def test_official_parameter_counts(self):
        # Official checkpoint totals (safetensors metadata; notes/param-derivations.md).
        official = {
            "llama-3.1-8b": 8_030_261_248, "llama-3.1-70b": 70_553_706_496,
            "llama-3.1-405b": 405_853_388_800, "llama-3.2-1b": 1_235_814_400,
            "qwen3-8b": 8_190_735_360, "qwen3-32b": 32_762_123_264,
            "qwen2.5-7b": 7_615_616_512, "mistral-7b-v0.1": 7_241_732_096,
            "phi-3-mini": 3_821_079_552,
            # Qwen3-0.6B: 596,049,920 unique parameters; the checkpoint also stores
            # a duplicate lm_head of 151936*1024 (HF total 751,632,384).
            "qwen3-0.6b": 751_632_384 - 151_936 * 1024,
        }
        for model, params in official.items():
            with self.subTest(model=model):
                self.assertEqual(load_model(model).params, params)

    def test_llama_checkpoint_bytes(self):
        # model.safetensors.index.json total_size values (SOURCES.md)
        self.assertEqual(totals("llama-3.1-8b").weight_bytes, 16_060_522_496)
        self.assertEqual(totals("llama-3.1-70b").weight_bytes, 141_107_412_992)

    def test_tied_embeddings_counted_once(self):
        # Llama-3.2-1B: 16 layers * (2*2048*2048 + 2*2048*512 + 3*2048*8192 + 2*2048)
        # + 128256*2048 (one shared matrix) + 2048 = 1,235,814,400
        arch = load_model("llama-3.2-1b")
        self.assertTrue(arch.tied_embeddings)
        per_layer = 2 * 2048 * 2048 + 2 * 2048 * 512 + 3 * 2048 * 8192 + 2 * 2048
        self.assertEqual(arch.params, 16 * per_layer + 128256 * 2048 + 2048)
        # the tied head is still read and computed
        t = totals("llama-3.2-1b", tokens=1)
        self.assertEqual(t.linear_flops, 2 * 16 * (per_layer - 2 * 2048) + 2 * 2048 * 128256)

    def test_qwen2_qkv_bias(self):
        # Qwen2.5-7B: q/k/v biases 3584 + 512 + 512 per layer, no o bias.
        arch = load_model("qwen2.5-7b")
        names = [t.name for t in arch.layers[0].tensors()]
        self.assertIn("self_attn.q_proj.bias", names)
        self.assertNotIn("self_attn.o_proj.bias", names)
        biases = sum(t.params for t in arch.layers[0].tensors() if t.name.endswith("bias"))
        self.assertEqual(biases, 3584 + 512 + 512)


class TinyModel(unittest.TestCase):
    """A hand-sized llama: h=8, 2 heads x 4, 1 KV head, I=16, vocab 10, 2 layers."""

    CFG = {"model_type": "llama", "hidden_size": 8, "num_attention_heads": 2,
           "num_key_value_heads": 1, "intermediate_size": 16, "num_hidden_layers": 2,
           "vocab_size": 10, "max_position_embeddings": 64, "tie_word_embeddings": False}

    def setUp(self):
        self.arch = load_model(write_config(self, self.CFG))

    def test_params_by_hand(self):
        # layer: q 8*8 + k 8*4 + v 8*4 + o 8*8 = 192; MLP 3*8*16 = 384; norms 16 -> 592
        # total: 2*592 + embed 80 + head 80 + final norm 8 = 1352
        self.assertEqual(self.arch.params, 1352)

    def test_flops_and_bytes_by_hand(self):
        # B=1, H=3, T=2: per token linear 2*(192+384) = 1152 per layer -> 2*2*1152 = 4608;
        # head on last position 2*8*10 = 160 -> 4768.
        # pairs: queries at positions 3, 4 see 4 + 5 = 9 keys; QK^T + PV per pair
        # 2*2*4 per head, 2 heads, 2 layers: 9*16*2*2 = 576 (rectangular 2*5 = 10 pairs: 640)
        t = build(self.arch, Workload(tokens=2, history=3)).totals
        self.assertEqual(t.linear_flops, 4768)
        self.assertEqual(t.attention_flops_causal, 576)
        self.assertEqual(t.attention_flops_rectangular, 640)
        # KV: 2 layers * 2 * 1 head * 4 dims * 2 bytes = 32 bytes per token;
        # written 2 tokens = 64; read keys+values of 5 positions = 160; before 3 tokens = 96
        self.assertEqual(t.kv_bytes_per_token, 32)
        self.assertEqual(t.kv_bytes_written, 64)
        self.assertEqual(t.kv_bytes_read, 160)
        self.assertEqual(t.kv_bytes_resident_before, 96)
        self.assertEqual(t.kv_bytes_resident_after, 160)
        # weights read: all matrices and norms (2 bytes each) except the embedding,
        # of which only the 2 gathered rows: (1352 - 80) * 2 + 2 rows * 8 * 2 = 2576
        self.assertEqual(t.weight_bytes_read, 2576)

    def test_vector_flops_by_hand(self):
        # T=1, H=0, B=1 (one position). Per layer: 2 RMSNorms 4*8 each = 64; RoPE
        # 3*(2+1)*4 = 36; softmax 5 per pair per head: 1 pair * 2 heads = 10;
        # SwiGLU 5*16 = 80; 2 residual adds 8 each = 16 -> 206; 2 layers = 412;
        # final norm 32 -> 444.
        t = build(self.arch, Workload()).totals
        self.assertEqual(t.vector_flops, 444)

    def test_logits_modes(self):
        last = build(self.arch, Workload(batch=3, tokens=4)).totals.linear_flops
        every = build(self.arch, Workload(batch=3, tokens=4, logits="all")).totals.linear_flops
        none = build(self.arch, Workload(batch=3, tokens=4, logits="none")).totals.linear_flops
        self.assertEqual(last - none, 3 * 160)       # one position per request
        self.assertEqual(every - none, 12 * 160)     # every position


class Invariants(unittest.TestCase):
    MODELS = ("qwen3-8b", "llama-3.2-1b", "qwen2.5-7b", "mistral-7b-v0.1", "phi-3-mini",
              "qwen3-30b-a3b", "mixtral-8x7b")

    def test_prefill_split_conserves_matrix_flops(self):
        # forward(T = P + C) == forward(T = P) + forward(H = P, T = C), logits none;
        # P = 5000 crosses Mistral's 4096 window and Phi-3's 2047 window.
        for model in self.MODELS:
            for p, c in ((5000, 3000), (1, 1), (4095, 2)):
                with self.subTest(model=model, p=p, c=c):
                    arch = load_model(model)
                    # MoE weight reads depend on routing; FLOPs do not.
                    whole = build(arch, Workload(tokens=p + c, logits="none")).totals
                    a = build(arch, Workload(tokens=p, logits="none")).totals
                    b = build(arch, Workload(tokens=c, history=p, logits="none")).totals
                    self.assertEqual(whole.matrix_flops, a.matrix_flops + b.matrix_flops)
                    self.assertEqual(whole.vector_flops, a.vector_flops + b.vector_flops)
                    self.assertEqual(whole.kv_bytes_written, a.kv_bytes_written + b.kv_bytes_written)

    def test_batch_scales_linearly_except_weights(self):
        arch = load_model("qwen3-8b")
        one = build(arch, Workload(tokens=7, history=100)).totals
        many = build(arch, Workload(batch=5, tokens=7, history=100)).totals
        self.assertEqual(many.matrix_flops, 5 * one.matrix_flops)
        self.assertEqual(many.kv_bytes_read, 5 * one.kv_bytes_read)
        self.assertEqual(many.weight_bytes_read - 5 * 7 * 4096 * 2,
                         one.weight_bytes_read - 7 * 4096 * 2)  # only embedding rows grow

    def test_format_bytes(self):
        t16 = build(load_model("qwen3-8b"), Workload()).totals
        t8 = build(load_model("qwen3-8b"), Workload(kv_dtype=DTYPES["fp8"])).totals
        self.assertEqual(t8.kv_bytes_per_token * 2, t16.kv_bytes_per_token)


class ShapeLabels(unittest.TestCase):
    def test_one_gathered_row_is_singular(self):
        # A decode step gathers one embedding row per request: "1 row of [V,H]", not "1 rows".
        # Qwen3-8B: V = 151,936, H = 4,096; GPT-3 175B adds its 2,048 learned positions.
        def shape(model, tokens):
            ops = build(load_model(model), Workload(tokens=tokens)).ops
            return next(op.shape for op in ops if op.name == "embedding")
        self.assertEqual(shape("qwen3-8b", 1), "1 row of [151936,4096]")
        self.assertEqual(shape("qwen3-8b", 3), "3 rows of [151936,4096]")
        self.assertEqual(shape("gpt3-175b", 1), "1 row of [51200,12288] + 1 row of [2048,12288]")


class Determinism(unittest.TestCase):
    def test_json_is_byte_identical(self):
        from support import cli
        a = cli("forward", "--model", "qwen3-8b", "--tokens", "128", "--format", "json")
        b = cli("forward", "--model", "qwen3-8b", "--tokens", "128", "--format", "json")
        self.assertEqual(a, b)
        rec = json.loads(a[1])
        for key in ("schema_version", "model", "device", "inputs", "operators", "totals"):
            self.assertIn(key, rec)
        for key in ("params", "weight_bytes", "linear_flops", "attention_flops_causal",
                    "attention_flops_rectangular", "matrix_flops", "vector_flops",
                    "kv_bytes_per_token", "roofline_time_s"):
            self.assertIn(key, rec["totals"])
        self.assertEqual(rec["totals"]["params"], 8_190_735_360)


if __name__ == "__main__":
    unittest.main()

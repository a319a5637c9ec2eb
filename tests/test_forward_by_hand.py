"""`forward` figures derived by hand from the bundled configs and device files,
one per feature: a window at decode, MoE routing on an FP8 block-scaled
checkpoint, the head under --logits all, and operator roofline times."""

import unittest

import support  # noqa: F401  (import path)
from infracalc.analyses.forward import forward
from infracalc.dtypes import DTYPES
from infracalc.load.hardware import load_device
from infracalc.load.models import load_model
from infracalc.workload import Workload

FP8_BLOCK = (("matrix", DTYPES["fp8-block128"]), ("expert", DTYPES["fp8-block128"]))
MXFP4 = (("expert", DTYPES["mxfp4"]),)


def run(model, device="h100-sxm", **workload):
    return forward(load_model(model), Workload(**workload), load_device(device))


def op(rec, name):
    (row,) = [o for o in rec["operators"] if o["name"] == name]
    return row


def summed(rec, name, key):
    """One quantity of an operator summed over its rows (one row per distinct layer group)."""
    return sum(o[key] for o in rec["operators"] if o["name"] == name)


def fp8_block(rows, cols):
    """FP8 values plus one FP32 scale per 128x128 block (DeepSeek-V3 weight_scale_inv)."""
    return rows * cols + -(-rows // 128) * -(-cols // 128) * 4


class WindowsAtDecode(unittest.TestCase):
    def test_mistral_history_beyond_the_window(self):
        # Mistral-7B: 32 layers, window 4096, 8 KV heads x 128; one K or V of one token is
        # 8 * 128 * 2 B = 2,048 B. B = 4, H = 10,000, T = 1: the new query sees
        # min(10,001, 4,096) = 4,096 keys (4,095 cached + its own), so each request reads
        # 4,096 K and 4,096 V rows per layer: 4 * 32 * 2 * 4,096 * 2,048 = 2,147,483,648 B;
        # it writes one K and one V: 4 * 32 * 2 * 2,048 = 524,288 B; the cache held before
        # is min(10,000, 4,096) tokens of 4,096 B: 4 * 32 * 4,096 * 4,096 = 2,147,483,648 B.
        t = run("mistral-7b-v0.1", batch=4, history=10_000)["totals"]
        self.assertEqual(t["kv_bytes_read"], 2_147_483_648)
        self.assertEqual(t["kv_bytes_written"], 524_288)
        self.assertEqual(t["kv_bytes_resident_before"], 2_147_483_648)
        # QK^T and PV: 2 * 32 heads * 128 FLOPs per pair each, 4,096 pairs, 4 requests, 32 layers
        self.assertEqual(t["attention_flops_causal"], 2 * 2 * 32 * 128 * 4096 * 4 * 32)

    def test_gpt_oss_mixed_windows(self):
        # GPT-OSS-20B: 12 layers with window 128 and 12 full, 8 KV heads x 64: K + V of one
        # token 2 * 8 * 64 * 2 B = 2,048 B. B = 2, H = 1,000: window layers read 128 tokens,
        # full layers 1,001: 2 * 2,048 * (12 * 128 + 12 * 1,001) = 55,492,608 B.
        t = run("gpt-oss-20b", batch=2, history=1000, formats=MXFP4)["totals"]
        self.assertEqual(t["kv_bytes_read"], 55_492_608)


class DeepSeekV3Fp8(unittest.TestCase):
    # Shapes from the config: hidden 7,168, 128 heads, q_lora 1,536, kv_lora 512,
    # qk_nope 128, qk_rope 64, v_head 128, 256 experts of 2,048 (top 8) + 1 shared,
    # dense MLP 18,432 on layers 0-2, vocab 129,280.
    EXPERT = 2 * fp8_block(2048, 7168) + fp8_block(7168, 2048)   # 44,050,944 B

    def test_weight_bytes_in_native_formats(self):
        # Per layer, FP8 with block scales for every projection, BF16 for norms:
        # q_a [1536, 7168], q_b [128*192, 1536], kv_a [512+64, 7168], kv_b [128*256, 512],
        # o [7168, 128*128]; norms q_a 1,536, kv_a 512, input and post-attention 2 * 7,168.
        attn = (fp8_block(1536, 7168) + fp8_block(24576, 1536) + fp8_block(576, 7168)
                + fp8_block(32768, 512) + fp8_block(7168, 16384) + 2 * (1536 + 512 + 2 * 7168))
        dense = 2 * fp8_block(18432, 7168) + fp8_block(7168, 18432)
        # MoE layer: BF16 router [256, 7168], FP32 e_score_correction_bias [256] (as the
        # checkpoint stores it), 256 routed experts and one shared.
        moe = 2 * 256 * 7168 + 4 * 256 + 257 * self.EXPERT
        whole = 3 * (attn + dense) + 58 * (attn + moe) + 2 * 2 * 129280 * 7168 + 2 * 7168
        self.assertEqual(whole, 673_150_582_112 + 58 * 256 * 2)
        t = run("deepseek-v3", formats=FP8_BLOCK)["totals"]
        self.assertEqual(t["weight_bytes"], whole)

    def test_experts_read_under_each_routing(self):
        # B = 4 decode tokens, top 8 of 256, 58 MoE layers. Experts read per layer:
        # concentrated 8; balanced min(256, 4 * 8) = 32; uniform
        # 256 * (1 - (1 - 8/256)^4) = 256 * (1 - 0.8807) = 30.5 -> 31.
        reads = {r: run("deepseek-v3", batch=4, routing=r, formats=FP8_BLOCK)["totals"]["weight_bytes_read"]
                 for r in ("concentrated", "balanced", "uniform")}
        self.assertEqual(reads["balanced"] - reads["concentrated"], 58 * (32 - 8) * self.EXPERT)
        self.assertEqual(reads["uniform"] - reads["concentrated"], 58 * (31 - 8) * self.EXPERT)


class SharedExperts(unittest.TestCase):
    def test_shared_output_added_to_the_routed_sum(self):
        # DeepSeek-V3, T = 3: y = routed + shared(x) on [3, 7168] in each of 58 MoE layers:
        # 1 FLOP per element, reads both (2 * 3 * 7168 * 2 B), writes the sum (3 * 7168 * 2 B).
        add = op(run("deepseek-v3", tokens=3, formats=FP8_BLOCK), "shared.add")
        self.assertEqual(add["layers"], "3-60")
        self.assertEqual(add["vector_flops"], 58 * 3 * 7168)
        self.assertEqual(add["act_bytes_read"], 58 * 2 * 3 * 7168 * 2)
        self.assertEqual(add["act_bytes_written"], 58 * 3 * 7168 * 2)
        # the routed sum: 8 expert outputs weighted and added, 2 FLOPs per value
        self.assertEqual(op(run("deepseek-v3", tokens=3, formats=FP8_BLOCK), "experts.combine")["vector_flops"],
                         58 * 2 * 3 * 8 * 7168)

    def test_gated_shared_expert(self):
        # Qwen3-Next, one token, 48 MoE layers (hidden 2048): sigmoid of one gate logit per
        # token (3 FLOPs), then routed + g * shared: 2 FLOPs per element; the add also reads
        # the gate value (2 B).
        rec = run("qwen3-next-80b-a3b")
        self.assertEqual(summed(rec, "shared.sigmoid", "vector_flops"), 48 * 3)
        self.assertEqual(summed(rec, "shared.add", "vector_flops"), 48 * 2 * 2048)
        self.assertEqual(summed(rec, "shared.add", "act_bytes_read"), 48 * (2 * 2048 * 2 + 2))


class HeadAndRoofline(unittest.TestCase):
    # h100-sxm.json: bf16 dense 989.5e12 FLOP/s, fp32 vector 67e12, 3.35e12 B/s.
    # tpu-v5e.json: bf16 197e12 FLOP/s, no vector peak, 819e9 B/s.

    def test_head_on_every_position(self):
        # Qwen3-8B, B = 3, T = 17, --logits all: 51 rows x [4096] x [4096, 151936]:
        # 2 * 51 * 4,096 * 151,936 = 63,477,645,312 FLOPs; the head matrix is read once.
        head = op(run("qwen3-8b", batch=3, tokens=17, logits="all"), "lm_head")
        self.assertEqual(head["matrix_flops"], 63_477_645_312)
        self.assertEqual(head["weight_bytes_read"], 2 * 151_936 * 4096)

    def test_memory_bound_projection(self):
        # Qwen3-8B decode, one token: q_proj reads [4096, 4096] bf16 (33,554,432 B) and
        # 4,096 input values (8,192 B), writes 8,192 B: 33,570,816 B per layer at 3.35e12 B/s
        # = 10.0211 us; compute 2 * 4096^2 / 989.5e12 = 0.0339 us. Row sums 36 layers.
        q = op(run("qwen3-8b"), "q_proj")
        self.assertEqual(q["bound"], "memory")
        self.assertAlmostEqual(q["time_s"] / (36 * 33_570_816 / 3.35e12), 1, places=12)
        self.assertAlmostEqual(q["compute_time_s"] / (36 * 2 * 4096 * 4096 / 989.5e12), 1, places=12)

    def test_compute_bound_projection(self):
        # Prefill T = 8192: q_proj 2 * 8192 * 4096^2 = 274,877,906,944 FLOPs per layer,
        # 277.8 us at 989.5e12, versus (33,554,432 + 2 * 8192 * 4096 * 2) B = 167,772,160 B,
        # 50.1 us at 3.35e12: compute-bound, 36 layers -> 10.0006 ms.
        q = op(run("qwen3-8b", tokens=8192), "q_proj")
        self.assertEqual(q["bound"], "compute")
        self.assertAlmostEqual(q["time_s"] / (36 * 274_877_906_944 / 989.5e12), 1, places=12)

    def test_tpu_vector_work_has_unknown_compute_time(self):
        # Qwen3-8B prefill T = 1024 on TPU v5e: softmax 5 FLOPs per pair per head,
        # 1024 * 1025 / 2 = 524,800 pairs, 32 heads, 36 layers = 3,022,848,000 vector FLOPs,
        # no bytes. Google publishes no vector peak: no stand-in peak is used, the compute
        # side is unknown, the bound is the memory time (0 here: softmax moves no bytes).
        rec = run("qwen3-8b", "tpu-v5e", tokens=1024)
        softmax = op(rec, "softmax")
        self.assertEqual(softmax["vector_flops"], 3_022_848_000)
        self.assertEqual(softmax["time_s"], 0)
        self.assertEqual(softmax["bound"], "memory; compute unknown")
        self.assertIsNone(rec["device"]["vector_flops_per_s"])
        # q_proj: matrix work at the published bf16 peak, as before:
        # 2 * 1024 * 4096^2 * 36 / 197e12 = 6.279 ms, compute-bound.
        q = op(rec, "q_proj")
        self.assertEqual(q["bound"], "compute")
        self.assertAlmostEqual(q["time_s"] / (36 * 2 * 1024 * 4096 * 4096 / 197e12), 1, places=12)

if __name__ == "__main__":
    unittest.main()

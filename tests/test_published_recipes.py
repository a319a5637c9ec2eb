"""Published training layouts fit under their published recipes, and `train --search` admits them.

Each case names its source; the memory terms are derived by hand in the comments. The
recipe options (--recompute-modules, --activation-func-fp8-input-store, the FP8 linear-only
convention) are tested term by term first.
"""

import json
import unittest

from support import Workload, load_model, run_cli  # noqa: F401  (sets the path)

from infracalc.analyses import train_flops, train_memory, train_time
from infracalc.dtypes import DTYPES
from infracalc.load.hardware import load_device

GIB = 2 ** 30
FP8, BF16 = DTYPES["fp8"], DTYPES["bf16"]


def _train_json(*argv):
    status, out, err = run_cli("train", *argv, "--format", "json")
    if status:
        raise AssertionError(err)
    return json.loads(out)


def _admitted(argv, pick):
    """The ranked rows of `train --search` (every admitted layout) that `pick` accepts."""
    rec = _train_json(*argv, "--search", "--top", "100000")
    return [row for row in rec["top"] if pick(row)], rec


def _moe_layer(model="deepseek-v3"):
    arch = load_model(model)
    return arch, [layer for layer, _, _ in arch.layer_groups() if any(hasattr(b, "experts") for b in layer.blocks)][0]


def _kept_per_token(layer, w, modules=(), fp8_input=False):
    rows = train_memory.kept_rows(layer, w, frozenset(modules), fp8_input)
    total = sum(s for _, s, _ in rows)
    assert total % w.positions == 0
    return total // w.positions, {op.name: s // w.positions for op, s, _ in rows}


TOKENS = 4096
W_FP8 = train_flops.training_workload(Workload(batch=1, tokens=TOKENS, logits="all", act_dtype=FP8, kv_dtype=FP8))


class RecomputeModules(unittest.TestCase):
    """DeepSeek-V3's MoE layer (hidden h = 7168, q_lora 1536, kv_lora 512, 128 heads of
    qk 128 + 64 RoPE and v 128, 8 of 256 experts of width 2048, one shared expert) per token,
    FP8 linear-only: a linear input 1 B per value, every other activation 2 B, a norm's rstd 4 B."""

    def test_fp8_convention_keeps_linear_inputs_in_fp8_and_the_rest_in_bf16(self):
        _, layer = _moe_layer()
        total, by = _kept_per_token(layer, W_FP8)
        self.assertEqual(by["input_layernorm"], 2 * 7168 + 4)           # its input, BF16, and rstd
        self.assertEqual(by["q_a_proj"], 7168)                           # the norm's output, FP8
        self.assertEqual(by["router"], 2 * 7168)                         # the gating keeps BF16
        self.assertEqual(by["attn_qk"], 2 * 128 * 192 * 2)               # Q and K, BF16 (attention's format)
        self.assertEqual(by["attn_pv"], 2 * 128 * 128)                   # V, BF16
        self.assertEqual(by["o_proj"], 128 * 128)                        # attention output, FP8
        self.assertEqual(by["experts.gate_proj"], 8 * 7168)              # 8 routed copies, FP8
        self.assertEqual(by["experts.swiglu"], 2 * 8 * 2048 * 2 + 8 * 2)  # gate and up, BF16, + 8 weights
        self.assertEqual(by["experts.down_proj"], 8 * 2048)              # the activation's output, FP8
        self.assertEqual(by["experts.combine"], 0)                       # weights applied in the activation

    def test_each_module_drops_what_it_recomputes(self):
        _, layer = _moe_layer()
        none, _ = _kept_per_token(layer, W_FP8)
        # layernorm: q_a_proj's input (FP8) and the router's (BF16: the gating stays in BF16), the two
        # residual-stream norms' outputs
        self.assertEqual(none - _kept_per_token(layer, W_FP8, ["layernorm"])[0], 7168 + 2 * 7168)
        # mla_up_proj: q_b_proj's and kv_b_proj's inputs (FP8) and Q, K, V (BF16); k_pe kept (64, BF16)
        self.assertEqual(none - _kept_per_token(layer, W_FP8, ["mla_up_proj"])[0],
                         1536 + 512 + 2 * 128 * 192 * 2 + 2 * 128 * 128 - 2 * 64)
        # moe_act: the routed experts' down_proj input (8 x 2048, FP8)
        self.assertEqual(none - _kept_per_token(layer, W_FP8, ["moe_act"])[0], 8 * 2048)
        # FP8 activation inputs: SwiGLU's gate and up (and the weights) at 1 B instead of 2, routed and shared
        self.assertEqual(none - _kept_per_token(layer, W_FP8, (), True)[0],
                         (2 * 8 * 2048 + 8) + 2 * 2048)

    def test_deepseek_recipe_per_token(self):
        # DeepSeek-V3 report (arXiv:2412.19437) sections 3.2.3 and 3.3.3: RMSNorm and the MLA
        # up-projections recomputed, SwiGLU inputs cached in FP8 and its output recomputed,
        # linear inputs in FP8. Per token:
        expected = ((2 * 7168 + 4)         # input_layernorm: the layer input, BF16, + rstd
                    + (2 * 1536 + 4)       # q_a_layernorm: c_q, BF16, + rstd
                    + (2 * 512 + 4)        # kv_a_layernorm: c_kv, BF16, + rstd
                    + 2 * 64               # k_pe, BF16
                    + 4 * 128              # the fused attention's log-sum-exp, fp32 per head
                    + 128 * 128            # o_proj input, FP8
                    + (2 * 7168 + 4)       # post_attention_layernorm
                    + 2 * 256              # routing scores, BF16
                    + 8 * 7168             # routed copies' gate/up input (FP8, as dispatched)
                    + (2 * 8 * 2048 + 8)   # routed SwiGLU inputs and weights, FP8
                    + 2 * 2048             # shared SwiGLU inputs, FP8
                    + 2048)                # shared down_proj input, FP8
        self.assertEqual(expected, 146_584)
        _, layer = _moe_layer()
        got, _ = _kept_per_token(layer, W_FP8, ["layernorm", "mla_up_proj", "moe_act"], True)
        self.assertEqual(got, expected)

    def test_recompute_flops_of_the_modules(self):
        arch = load_model("deepseek-v3")
        w = Workload(batch=1, tokens=TOKENS, logits="all", act_dtype=FP8, kv_dtype=FP8)
        st = train_flops.step(arch, w, "none+mla_up_proj")
        # q_b_proj and kv_b_proj forward again in each of the 61 layers: 2 x T x (1536 x 128 x 192 + 512 x 128 x 256)
        self.assertEqual(st.recompute_matrix_flops, 61 * 2 * TOKENS * (1536 * 128 * 192 + 512 * 128 * 256))
        self.assertEqual(train_flops.step(arch, w, "none+layernorm+moe_act").recompute_matrix_flops, 0)

    def test_modules_refused_where_they_mean_nothing(self):
        for model, module in (("llama-3.1-8b", "mla_up_proj"), ("llama-3.1-8b", "moe_act")):
            status, _, err = run_cli("train", "--model", model, "--device", "h100-sxm", "--seq", "1024",
                                     "--recompute-modules", module)
            self.assertEqual(status, 2, err)
            self.assertIn(module, err)
        status, _, err = run_cli("train", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--seq", "1024",
                                 "--recompute", "full", "--recompute-modules", "layernorm")
        self.assertEqual(status, 2)
        status, _, err = run_cli("train", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--seq", "1024",
                                 "--recompute-modules", "norms")
        self.assertEqual(status, 2)
        self.assertIn("layernorm", err)


class Fp8LinearOnly(unittest.TestCase):
    """FP8 training converts only the linear layers: attention runs at the BF16 peak."""

    def test_attention_at_the_bf16_peak_linear_at_fp8(self):
        arch = load_model("llama-3.1-8b")
        dev = load_device("h100-sxm")
        layer = arch.layer_groups()[0][0]
        w = train_flops.training_workload(Workload(batch=1, tokens=8192, logits="all", act_dtype=FP8, kv_dtype=FP8))
        ops = [op for b in layer.blocks for op in train_flops.recipe_block_ops(b, w)]
        qk = next(op for op in ops if op.name == "attn_qk")
        q = next(op for op in ops if op.name == "q_proj")
        self.assertEqual((qk.compute, q.compute), ("bf16", "fp8"))
        # the step's operator table reports the same rows: q_proj keeps its FP8 input (T x h x 1 B),
        # the input norm its BF16 input (T x h x 2 B) and rstd, in all 32 layers
        rows = {r.name: r for r in train_flops.step(arch, w).ops}
        self.assertEqual(rows["q_proj"].saved_bytes, 32 * 8192 * 4096)
        self.assertEqual(rows["input_layernorm"].saved_bytes, 32 * 8192 * (2 * 4096 + 4))
        from infracalc.analyses.roofline import roof
        roofs = (roof(dev, FP8), roof(dev, BF16))
        # attn_qk: 2 x 32 heads x 128 x T(T+1)/2 causal pairs, compute-bound at 8192 tokens
        flops = 2 * 32 * 128 * 8192 * 8193 // 2
        self.assertEqual(qk.matrix_flops, flops)
        got = train_time.ops_pass([qk], w, 0, roofs, cp=1, recompute="none", flash=False).forward
        self.assertAlmostEqual(got, flops / dev.peak(BF16), delta=1e-12)
        # q_proj [8192, 4096] x [4096, 4096] at the FP8 peak
        got = train_time.ops_pass([q], w, 0, roofs, cp=1, recompute="none", flash=False).forward
        self.assertAlmostEqual(got, max(2 * 8192 * 4096 * 4096 / dev.peak(FP8),
                                        q.bytes_moved / dev.memory_bandwidth_bytes_per_s), delta=1e-12)


class FsdpAndOffload(unittest.TestCase):

    def test_zero3_holds_two_gathered_units_and_one_gradient(self):
        # Llama-3.1-70B on 64 devices, ZeRO 3: the largest unit is the embedding (128,256 x 8,192 =
        # 1,050,673,152 parameters; the head is as large), 2 B weights and 2 B gradients:
        rec = _train_json("--model", "llama-3.1-70b", "--device", "gb200", "--seq", "8192", "--devices", "64",
                          "--zero", "3", "--global-batch", "64")
        st = rec["memory"]["stages"][0]
        self.assertEqual(st["fsdp_gather_bytes"], 128256 * 8192 * (2 * 2 + 2))
        self.assertEqual(st["total_bytes"], st["weights_bytes"] + st["grads_bytes"] + st["optimizer_bytes"]
                         + st["activations_bytes"] + st["fsdp_gather_bytes"])
        for zero in ("0", "1", "2"):
            rec = _train_json("--model", "llama-3.1-70b", "--device", "gb200", "--seq", "8192", "--devices", "64",
                              "--zero", zero, "--global-batch", "64")
            self.assertEqual(rec["memory"]["stages"][0]["fsdp_gather_bytes"], 0)

    def test_offload_keeps_the_rest_and_one_layer_in_transit(self):
        argv = ("--model", "llama-3.1-8b", "--device", "h100-sxm", "--seq", "4096", "--devices", "2", "--pp", "2")
        base = _train_json(*argv)["memory"]["stages"]
        off = _train_json(*argv, "--cpu-offloading-num-layers", "10")["memory"]["stages"]
        for a, b in zip(base, off):
            per_layer = a["layer_activations_bytes"] // 16          # 32 identical layers, 16 per stage
            self.assertEqual(b["layer_activations_bytes"], 6 * per_layer)
            self.assertEqual(b["offload_buffer_bytes"], per_layer)
            in_flight = a["micro_batches_in_flight"]
            self.assertEqual(a["total_bytes"] - b["total_bytes"], 10 * per_layer * in_flight - per_layer)
        status, _, err = run_cli("train", *argv, "--cpu-offloading-num-layers", "16")
        self.assertEqual(status, 2)
        self.assertIn("at least one", err)


class PublishedLayouts(unittest.TestCase):

    def test_torchtitan_llama3_8b_on_8_h100(self):
        """torchtitan, torchtitan/models/llama3/train_configs/llama3_8b.toml: FSDP over every device
        (data_parallel_shard_degree -1, no TP/PP/CP), batch_size 1 per device, seq_len 8192,
        activation_checkpoint mode 'selective' with selective_ac_option 'op' (it saves less than
        --recompute selective, which keeps every activation but the attention core's statistics:
        an upper bound), AdamW, BF16 compute with FP32 gradient reduction; on 8 H100 as torchtitan's
        docs/performance.md reports it."""
        argv = ("--model", "llama-3.1-8b", "--device", "h100-sxm", "--seq", "8192", "--micro-batch", "1",
                "--global-batch", "8", "--devices", "8", "--zero", "3", "--recompute", "selective",
                "--grad-dtype", "fp32")
        rec = _train_json(*argv)
        self.assertTrue(rec["memory"]["fits"], rec["memory"]["stages"][0]["total_bytes"] / GIB)
        rows, search = _admitted(argv, lambda r: (r["tp"], r["pp"], r["dp"], r["cp"]) == (1, 1, 8, 1))
        self.assertEqual(len(rows), 1, search["rejected"])

    def test_llama31_70b_fsdp_on_64_gb200(self):
        """Megatron-Bridge scripts/performance/configs/llama3/workload_base_configs.py,
        LLAMA3_70B_GB200_FP8_CS_BASE_CONFIG: 64 GPUs, global batch 128, micro batch 2,
        use_megatron_fsdp (parameters, gradients and optimizer sharded: ZeRO 3), TP = PP = CP = 1,
        cpu_offloading_num_layers 40, FP8 (current scaling); sequence 8,192 (docs/performance-summary.md,
        25.09 and 25.11 tables: FSDP 1, TP 1, PP 1, GA 1)."""
        argv = ("--model", "llama-3.1-70b", "--device", "gb200", "--seq", "8192", "--micro-batch", "2",
                "--global-batch", "128", "--devices", "64", "--zero", "3", "--act-dtype", "fp8",
                "--cpu-offloading-num-layers", "40")
        rec = _train_json(*argv)
        self.assertTrue(rec["memory"]["fits"], rec["memory"]["stages"][0]["total_bytes"] / GIB)
        # without the offload it does not fit: the published run needs it
        self.assertFalse(_train_json(*argv[:-2])["memory"]["fits"])
        rows, search = _admitted(argv, lambda r: (r["tp"], r["pp"], r["dp"], r["cp"]) == (1, 1, 64, 1))
        self.assertEqual(len(rows), 1, search["rejected"])

    def test_gpt_oss_120b_on_64_b200(self):
        """Megatron-Bridge scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py,
        GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_V1: 64 GPUs, global batch 512, micro batch 4, EP 64,
        expert TP 1, recompute_modules ['layernorm', 'moe_act'], BF16; TP = PP = CP = 1 and sequence
        4,096 (docs/performance-summary.md, 25.11 table); Megatron's distributed optimizer (ZeRO 1)."""
        argv = ("--model", "gpt-oss-120b", "--device", "b200", "--seq", "4096", "--micro-batch", "4",
                "--global-batch", "512", "--devices", "64", "--zero", "1",
                "--recompute-modules", "layernorm,moe_act")
        rec = _train_json(*argv, "--ep", "64")
        self.assertTrue(rec["memory"]["fits"], rec["memory"]["stages"][0]["total_bytes"] / GIB)
        rows, search = _admitted(argv, lambda r: (r["tp"], r["pp"], r["dp"], r["ep"]) == (1, 1, 64, 64))
        self.assertEqual(len(rows), 1, search["rejected"])

    def test_deepseek_v3_on_2048_h800(self):
        """DeepSeek-V3 technical report (arXiv:2412.19437): 2,048 H800 (section 3.1), PP 16 with
        DualPipe, EP 64 over 8 nodes, ZeRO-1 data parallelism, no TP (section 3.2); sequence 4,096
        and batch 15,360 (section 4.2); the memory recipe of section 3.2.3 (RMSNorm and MLA
        up-projections recomputed; EMA in host memory, not modelled; the embedding and head share
        a rank, as DualPipe places them) and section 3.3.3 (BF16 AdamW moments, FP32 master weights
        and gradients, FP8 linear inputs, SwiGLU inputs in FP8 with its output recomputed, FP8
        dispatch and BF16 combine). The MTP module is not modelled."""
        argv = ("--model", "deepseek-v3", "--device", "h800", "--seq", "4096", "--micro-batch", "1",
                "--global-batch", "15360", "--devices", "2048", "--zero", "1", "--schedule", "dualpipe",
                "--act-dtype", "fp8", "--optimizer", "adamw-bf16", "--grad-dtype", "fp32",
                "--recompute-modules", "layernorm,mla_up_proj,moe_act", "--activation-func-fp8-input-store",
                "--dispatch-dtype", "fp8", "--combine-dtype", "bf16")
        rec = _train_json(*argv, "--pp", "16", "--ep", "64")
        self.assertTrue(rec["memory"]["fits"])
        st1 = rec["memory"]["stages"][3]
        # Rank 3 runs stage 3 (layers 12-15) forward and stage 12 (layers 48-51) in reverse (61 layers:
        # 13 stages of 4, then 3 of 3): eight MoE layers; per layer dense MLA 187,107,328 + norms 14,336 +
        # router 1,835,008 + bias 256 + shared 44,040,192 = 232,997,120 and 4 of the 256 experts 176,160,768.
        dense, expert = 2 * 4 * 232_997_120, 2 * 4 * 176_160_768
        weights, grads = 2 * (dense + expert), 4 * (dense + expert)
        optimizer = 2 * (-(-4 * 232_997_120 * 8 // 128) + 4 * 176_160_768 * 8 // 2)   # 8 B over DP 128 / EDP 2
        # 1F1B counts per direction: 16 - 3 = 13 micro-batches of stage 3, 3 + 1 = 4 of stage 12
        acts = (13 + 4) * 4 * 146_584 * 4096   # micro-batches x 4 layers x per token x tokens
        self.assertEqual(st1["weights_bytes"] + st1["grads_bytes"] + st1["optimizer_bytes"],
                         weights + grads + optimizer)
        self.assertEqual(st1["total_bytes"], weights + grads + optimizer + acts)
        self.assertEqual(st1["total_bytes"], 66_220_970_112)
        rows, search = _admitted(argv, lambda r: (r["tp"], r["pp"], r["dp"], r["ep"]) == (1, 16, 128, 64))
        self.assertEqual(len(rows), 1, search["rejected"])


if __name__ == "__main__":
    unittest.main()

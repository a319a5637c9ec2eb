"""Training memory per device: ZeRO model states and activations, against the papers.

ZeRO (Rajbhandari et al. 2019, arXiv:1910.02054) Table 1: per-device model
states of mixed-precision Adam (2 + 2 + K bytes per parameter, K = 12) at
DP degree Nd: stage 1 (P_os) 4P + 12P/Nd, stage 2 (P_os+g) 2P + 14P/Nd,
stage 3 (P_os+g+p) 16P/Nd, printed in GB (1e9 bytes) to three significant
digits: 7.5B at Nd = 64 -> 31.4 / 16.6 / 1.88 (the row quoted in issue 9).
The other rows below are that formula evaluated by hand at the table's Nd
(1, 4, 16, 64, 256, 1024) and compared at three significant digits; e.g. 1T at
Nd = 1024 -> 4,011.7 / 2,013.7 / 15.6 (4,000 + 11.7; 2,000 + 13.7; 16,000/1,024).

Korthikanti et al. 2022 (arXiv:2205.05198) eq. 1-5, per layer with s = 2048,
b = 1, h = 12288, a = 96 (GPT-3 175B), t = 8, 16-bit activations, 1-byte
dropout masks: no parallelism sbh(34 + 5as/h); TP sbh(10 + 24/t + 5as/(ht));
TP + SP sbh(34 + 5as/h)/t; TP + selective sbh(10 + 24/t); TP + SP + selective
34sbh/t; full recompute 2sbh (the layer input). The paper's count leaves out
two things this tool keeps: the LayerNorms' fp32 statistics (mean and rstd,
8 bytes per row, two norms: 2 x 8 x sb, in the sequence region) and a fused
kernel's fp32 log-sum-exp per (query, head) row (4 x a s b, split by TP; the
paper's unfused kernel keeps the probabilities instead, and selective
recompute drops both).
"""

import math
import unittest

from support import Workload, load_model

from infracalc import layout
from infracalc.analyses import train_memory as tm
from infracalc.errors import UserError

P75, P1T = 7_500_000_000, 1_000_000_000_000


def gb(x):
    return x / 1e9


class ZeroTable1(unittest.TestCase):
    # (params, Nd, stage 1, stage 2, stage 3) as printed in Table 1 (GB)
    ROWS = [(P75, 1, 120, 120, 120), (P75, 4, 52.5, 41.3, 30), (P75, 16, 35.6, 21.6, 7.5),
            (P75, 64, 31.4, 16.6, 1.88), (P75, 256, 30.4, 15.4, 0.469), (P75, 1024, 30.1, 15.1, 0.117),
            (P1T, 1, 16000, 16000, 16000), (P1T, 4, 7000, 5500, 4000), (P1T, 16, 4750, 2875, 1000),
            (P1T, 64, 4187.5, 2218.75, 250), (P1T, 256, 4046.9, 2054.7, 62.5),
            (P1T, 1024, 4011.7, 2013.7, 15.6)]

    def test_table(self):
        for params, nd, *stages in self.ROWS:
            for zero, printed in zip((1, 2, 3), stages):
                got = gb(tm.model_states(params, nd, zero).total)
                half_unit = 10 ** (math.floor(math.log10(printed)) - 2) / 2   # 3 significant digits
                self.assertLessEqual(abs(got - printed), half_unit * (1 + 1e-9), msg=(params, nd, zero))

    def test_stage0_is_16_bytes_per_param_and_stages_conserve(self):
        self.assertEqual(tm.model_states(P75, 64, 0).total, 16 * P75)
        # summed over the 64 ranks, stage 3 holds exactly one copy of everything
        self.assertEqual(64 * tm.model_states(P75, 64, 3).total, 16 * P75)

    def test_optimizers(self):
        self.assertEqual(tm.optimizer_bytes("adamw"), 12)
        self.assertEqual(tm.optimizer_bytes("adamw-bf16"), 8)
        self.assertEqual(tm.optimizer_bytes("sgd"), 8)
        # Megatron distributed optimizer, bf16 params / fp32 grads: 6 + 12/d bytes per param
        self.assertEqual(tm.model_states(1000, 4, 1, weight_bytes=2, grad_bytes=4, optimizer_bytes=12).total,
                         1000 * 6 + 12 * 1000 // 4)
        with self.assertRaises(UserError):
            tm.optimizer_bytes("lion")
        with self.assertRaises(UserError):
            tm.model_states(10, 2, 4)


class Korthikanti(unittest.TestCase):
    s, b, h, a, t = 2048, 1, 12288, 96, 8

    def setUp(self):
        arch = load_model("gpt3-175b")
        self.layer, self.w = arch.layers[0], Workload(tokens=self.s)
        self.sbh = self.s * self.b * self.h
        self.stats = 2 * 8 * self.s * self.b          # two LayerNorms' mean + rstd, fp32
        self.lse = 4 * self.a * self.s * self.b       # fused kernel's log-sum-exp rows

    def acts(self, tp=1, sp=False, attention="unfused"):
        return tm.layer_activations(layout.shard_layer(self.layer, tp), self.w, self.h, tp=tp, sp=sp, cp=1,
                                    attention=attention)

    def test_no_parallelism(self):
        got = self.acts()
        s2 = 5 * self.a * self.s * self.s * self.b     # sbh * 5as/h
        self.assertEqual(got.none - self.stats - self.lse, 34 * self.sbh + s2)
        self.assertEqual(got.selective - self.stats, 34 * self.sbh)
        self.assertEqual(got.full, 2 * self.sbh)
        fused = self.acts(attention="fused")           # no T^2 term
        self.assertEqual(fused.none - self.stats - self.lse, 34 * self.sbh)

    def test_tensor_parallel(self):
        t = self.t
        got = self.acts(tp=t)
        s2t = 5 * self.a * self.s * self.s * self.b // t
        self.assertEqual(got.none - self.stats - self.lse // t, self.sbh * 10 + self.sbh * 24 // t + s2t)
        self.assertEqual(got.selective - self.stats, self.sbh * 10 + self.sbh * 24 // t)

    def test_tensor_and_sequence_parallel(self):
        t = self.t
        got = self.acts(tp=t, sp=True)
        s2 = 5 * self.a * self.s * self.s * self.b
        self.assertEqual(got.none - (self.stats + self.lse) // t, (34 * self.sbh + s2) // t)
        self.assertEqual(got.selective - self.stats // t, 34 * self.sbh // t)
        self.assertEqual(got.full, 2 * self.sbh // t)


class Pipeline(unittest.TestCase):
    def test_in_flight(self):
        # 1F1B: stage i holds min(p - i, m)
        self.assertEqual([tm.in_flight(i, 4, 8) for i in range(4)], [(4, 1), (3, 1), (2, 1), (1, 1)])
        self.assertEqual(tm.in_flight(0, 4, 2), (2, 1))
        # interleaved, p = 4, v = 2: stage 0 holds p + (p - 1)/v = 5.5 micro-batches' worth
        num, den = tm.in_flight(0, 4, 8, chunks=2)
        self.assertEqual(num / den, 4 + 3 / 2)

    def test_gpt3_megatron_layout_stage_activations(self):
        # GPT-3 175B, TP 8 + SP, PP 8 (12 layers per stage), 64 micro-batches of one 2,048-token
        # sequence, selective recompute, fused attention. Per layer: (34 sbh + LayerNorm stats
        # 2 x 8 x s) / 8 = 106,954,752 + 4,096. Stage 0 holds p = 8 micro-batches and the
        # embedding's dropout mask (sbh x 1 B / 8); stage 7 holds one, plus ln_f (input and
        # stats) and the head's input split by 8, and the loss buffer.
        arch = load_model("gpt3-175b")
        s, h, v = 2048, 12288, 51200
        stages = tm.memory(arch, Workload(tokens=s), tp=8, pp=8, sp=True, recompute="selective",
                           micro_batches=64)
        layer = 34 * s * h // 8 + 2 * 8 * s // 8
        self.assertEqual(stages[0].activation_bytes, 8 * (12 * layer + s * h // 8))
        # each TP rank keeps its vocabulary slice of fp32 logits and the whole row's log-sum-exp
        last = 12 * layer + (2 * s * h + 8 * s) // 8 + 2 * s * h // 8 + 4 * s * v // 8 + 4 * s
        self.assertEqual(stages[7].activation_bytes, last)
        self.assertEqual(stages[7].logits_bytes, 4 * s * v // 8 + 4 * s)
        # Megatron-LM's first-stage estimate (SP + selective, 1F1B): 34 sbh/t x L layers' worth
        self.assertEqual(stages[0].layer_activation_bytes * 8 - 8 * 12 * 2 * 8 * s // 8,
                         34 * s * h // 8 * 96)

    def test_stage_params_conserve(self):
        arch = load_model("gpt3-175b")
        stages = tm.memory(arch, Workload(tokens=8), pp=8)
        # the tied head adds one embedding copy on the last stage when pp > 1
        self.assertEqual(sum(st.dense_params for st in stages), arch.params + 51200 * 12288)
        self.assertEqual([st.layers for st in stages[:2]], [(0, 12), (12, 24)])
        (whole,) = tm.memory(arch, Workload(tokens=8))
        self.assertEqual(whole.dense_params, arch.params)
        # TP 8: matrices, q/k/v/c_fc biases and the vocabulary split; o/c_proj biases and
        # LayerNorms (4h + 2h per layer) and the position table replicated
        (tp8,) = tm.memory(arch, Workload(tokens=8), tp=8)
        h, L = 12288, 96
        per_layer = 12 * h * h // 8 + 3 * h // 8 + h + 4 * h // 8 + h + 4 * h
        self.assertEqual(tp8.dense_params, L * per_layer + 51200 * h // 8 + 2048 * h + 2 * h)

    def test_moe_experts_shard_over_ep(self):
        arch = load_model("qwen3-30b-a3b")   # 48 layers of 128 experts [768 x 2048] x 3
        (one,) = tm.memory(arch, Workload(tokens=8))
        self.assertEqual(one.expert_params, 48 * 128 * 3 * 768 * 2048)
        (ep8,) = tm.memory(arch, Workload(tokens=8), dp=8, ep=8)
        self.assertEqual((ep8.dense_params, ep8.expert_params * 8), (one.dense_params, one.expert_params))
        self.assertEqual(tm.expert_dp(layout.Layout(dp=8, ep=8)), 1)
        self.assertEqual(tm.expert_dp(layout.Layout(tp=2, dp=8, ep=4)), 4)   # expert TP 1: 16 / 4

    def test_zero_over_dp_and_expert_dp(self):
        arch = load_model("qwen3-8b")
        (st,) = tm.memory(arch, Workload(tokens=8), dp=8, zero=1)
        self.assertEqual(st.states, tm.model_states(arch.params, 8, 1))
        moe = load_model("qwen3-30b-a3b")
        (one,) = tm.memory(moe, Workload(tokens=8))
        # EP 8 over DP 8: each expert lives on one rank of its group (EDP = 1), so ZeRO-1
        # cannot shard expert optimizer states; dense states shard over the 8 DP ranks
        (st,) = tm.memory(moe, Workload(tokens=8), dp=8, ep=8, zero=1)
        self.assertEqual(st.states, tm.model_states(one.dense_params, 8, 1)
                         + tm.model_states(one.expert_params // 8, 1, 1))

    def test_context_parallel_splits_every_activation(self):
        arch = load_model("qwen3-8b")
        (one,) = tm.memory(arch, Workload(tokens=4096))
        (cp2,) = tm.memory(arch, Workload(tokens=4096), cp=2, dp=1)
        self.assertEqual(2 * cp2.layer_activation_bytes, one.layer_activation_bytes)
        self.assertEqual(2 * cp2.extra_activation_bytes, one.extra_activation_bytes)
        # dense optimizer states shard over DP x CP under ZeRO-1
        (z1,) = tm.memory(arch, Workload(tokens=4096), cp=2, zero=1)
        self.assertEqual(z1.states, tm.model_states(arch.params, 2, 1))

    def test_logits_buffer_and_errors(self):
        arch = load_model("qwen3-8b")
        (st,) = tm.memory(arch, Workload(tokens=4096))
        self.assertEqual(st.logits_bytes, 4096 * 151936 * 4 + 4096 * 4)   # fp32 logits + lse
        self.assertEqual(st.states.total, 16 * arch.params)
        with self.assertRaises(UserError):
            tm.memory(arch, Workload(tokens=8), pp=37)
        with self.assertRaises(UserError):
            tm.memory(arch, Workload(tokens=8), tp=3)       # 32 heads
        with self.assertRaises(UserError):
            tm.memory(arch, Workload(tokens=8), recompute="half")


if __name__ == "__main__":
    unittest.main()

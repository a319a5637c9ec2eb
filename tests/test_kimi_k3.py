"""Kimi K3: the bundled config's exact text parameters, the book's figures, and each new
block's counting rule on a tiny configuration worked by hand (blocks.kimi)."""

import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "calculations"))

from infracalc import ledger  # noqa: E402
from infracalc.analyses.forward import attn_res_record  # noqa: E402
from infracalc.blocks.kimi import KDA, AttnRes, AttnResHeadNorm, GatedMLA, LatentMoE  # noqa: E402
from infracalc.dtypes import dtype  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.workload import Workload, from_formats  # noqa: E402


def rows(block, w):
    return {op.name: op for op in block.ops(w)}


def flops(ops, names, field="matrix_flops"):
    return sum(getattr(op, field) for op in ops if op.name in names)


class Checkpoint(unittest.TestCase):
    """moonshotai/Kimi-K3 config.json (sha256 9710e121..., the book's lock file): the text
    model's 2,779,484,476,000 parameters are the book's logical text parameters
    (bojieli/ai-infra-book:calculations/results/README.md, forward-kimi-k3-*)."""

    def test_parameters(self):
        arch = load_model("kimi-k3")
        self.assertEqual(arch.params, 2_779_484_476_000)
        self.assertEqual([(p.name, p.params) for p in arch.parts], [("vision", None)])

    def test_checkpoint_tensor_shapes(self):
        """The official checkpoint stores each of the 69 KDA layers' A_log with 128 FP32 values for
        the config's 96 heads (bojieli/ai-infra-book:calculations/src/infra_calc/topics/
        k3_checkpoint.py): --tensor-shapes checkpoint adds 69 x 32 x 4 = 8,832 resident bytes to
        1,559,965,598,080 (the book's payload 1,559,965,606,912); parameters and the ledger's reads
        stay the config's. A KDA shard under TP counts the config's shapes (the fact is the whole
        checkpoint's)."""
        arch = load_model("kimi-k3")
        config = from_formats(arch)
        stored = config.replace(tensor_shapes="checkpoint")
        self.assertEqual(arch.weight_bytes(config), 1_559_965_598_080)
        self.assertEqual(arch.weight_bytes(stored) - arch.weight_bytes(config), 69 * (128 - 96) * 4)
        a_log = next(t for t in KDA(16, 2, 4, 4, a_log_stored=8).tensors() if t.name.endswith("A_log"))
        self.assertEqual((a_log.params, a_log.stored_as("checkpoint").shape, a_log.stored_as("config").shape),
                         (2, (8,), (2,)))
        self.assertEqual(KDA(16, 2, 4, 4, a_log_stored=8).shard(2).a_log_stored, 0)
        sums = [ledger.build(arch, w.replace(tokens=4)).ops for w in (config, stored)]
        self.assertEqual([sum(op.weight_read for op in ops) for ops in sums][0],
                         [sum(op.weight_read for op in ops) for ops in sums][1])

    def test_every_command_runs(self):
        from support import run_cli
        for cmd in (["forward", "--tokens", "512"], ["decode", "--input-len", "600", "--output-len", "700"],
                    ["kv", "--context", "100000"],
                    ["parallel", "--devices", "8", "--tp", "8", "--input-len", "300", "--output-len", "20"],
                    ["train", "--seq", "2048", "--tp", "8", "--ep", "8", "--dp", "8", "--pp", "3"]):
            code, out, err = run_cli(cmd[0], "--model", "kimi-k3", "--device", "h200", *cmd[1:], "--format", "json")
            self.assertEqual(code, 0, (cmd, err))


class BookFigures(unittest.TestCase):
    """bojieli/ai-infra-book:calculations/results/README.md, the Kimi K3 tables (TFLOPs,
    MiB): KDA projections 501.465886 (b1 T 8192) / 0.061214 (T 1), MLA projections
    91.302415 and effective attention 49.484063 expanded / 168.245814 compact (b1 T
    8192), FFN b64 8.552957608 = routed 6.223407612 + shared 1.555851903 + latent
    0.605053518 + dense 0.093012886 (+ router), AttnRes weighted sums 117.675393 GFLOPs,
    decode totals 0.220444 expanded / 0.249438 compact (the book counts the KDA
    recurrence as scalar arithmetic: our matrix FLOPs minus the delta rule), persistent
    state 649.406250 compact / 11953.406250 expanded MiB at 8192 tokens."""

    arch = load_model("kimi-k3")

    def block(self, kind):
        return next(b for layer, _, _ in self.arch.layer_groups() for b in layer.blocks if isinstance(b, kind))

    def test_kda_projections(self):
        kda = self.block(KDA)
        names = {"q_proj", "k_proj", "v_proj", "g_proj", "f_a_proj", "f_b_proj", "b_proj", "o_proj"}
        # per token and layer 2 x 7168 x (4 x 12288 + 128) + 2 x 128 x 12288 + 2 x 7168 x 96
        # + 2 x 12288 x 7168 = 887,160,832; x 69 layers x 8192 tokens
        self.assertEqual(69 * flops(kda.ops(Workload(tokens=8192)), names), 887_160_832 * 69 * 8192)
        self.assertEqual(887_160_832 * 69 * 8192, 501_465_885_966_336)
        self.assertEqual(69 * flops(kda.ops(Workload(tokens=1, history=8192)), names), 61_214_097_408)

    def test_mla(self):
        mla = self.block(GatedMLA)
        w = Workload(tokens=8192, mla="naive")
        proj = {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "g_proj", "o_proj"}
        # per token and layer: q_a 2x1536x7168 + q_b 2x18432x1536 + kv_a 2x576x7168 + kv_b
        # 2x24576x512 + g and o 2 x 2x12288x7168 = 464,388,096; x 24 layers x 8192
        self.assertEqual(24 * flops(mla.ops(w), proj), 464_388_096 * 24 * 8192)
        pairs = 8192 * 8193 // 2   # causal pairs of one 8192-token prefill
        # expanded: 2 x 96 x (128 + 64) + 2 x 96 x 128 = 61,440 per pair; compact (latent):
        # 2 x 96 x (512 + 64) + 2 x 96 x 512 = 208,896 per pair
        self.assertEqual(24 * flops(mla.ops(w), {"attn_qk", "attn_pv"}), 61_440 * pairs * 24)
        absorbed = mla.ops(w.replace(mla="absorbed"))
        self.assertEqual(24 * flops(absorbed, {"attn_qk", "attn_pv"}), 208_896 * pairs * 24)
        self.assertEqual((61_440 * pairs * 24, 208_896 * pairs * 24), (49_484_063_047_680, 168_245_814_362_112))

    def test_experts_b64(self):
        ops = ledger.build(self.arch, Workload(batch=64, tokens=1, history=8192)).ops
        routed = flops(ops, {"experts.gate_proj", "experts.up_proj", "experts.down_proj"})
        shared = flops(ops, {"shared.gate_proj", "shared.up_proj", "shared.down_proj"})
        latent = flops(ops, {"latent_down", "latent_up"})
        dense = flops(ops, {"gate_proj", "up_proj", "down_proj"})
        router = flops(ops, {"router"})
        self.assertEqual((routed, shared, latent, dense), (6_223_407_611_904, 1_555_851_902_976,
                                                           605_053_517_824, 93_012_885_504))
        self.assertEqual(routed + shared + latent + dense + router, 8_552_957_607_936)

    def test_attn_res_block_stack(self):
        """The book's last block stack, 896 MiB (b1 T 8192) / 7 MiB (b64 T 1): 93 layers, block
        size 12 -> blocks saved at layers 0, 12, ..., 84: ceil(93 / 12) = 8, each [T, 7168] BF16:
        8 x 8192 x 7168 x 2 = 939,524,096 B = 896 MiB; 8 x 64 x 7168 x 2 = 7,340,032 B = 7 MiB."""
        for w, want in ((Workload(tokens=8192), 939_524_096), (Workload(batch=64, tokens=1), 7_340_032)):
            rec = attn_res_record(self.arch, w)
            self.assertEqual((rec["saved_blocks"], rec["block_stack_bytes"]), (8, want))
        self.assertEqual(want, 7 * 2**20)
        self.assertIsNone(attn_res_record(load_model("qwen3-8b"), Workload(tokens=8)))

    def test_attn_res_and_decode(self):
        ops = ledger.build(self.arch, Workload(tokens=8192)).ops
        self.assertEqual(sum(op.matrix_flops for op in ops if op.name.endswith("res.sum")), 117_675_393_024)
        for mla, want in (("naive", 220_443_619_328), ("absorbed", 249_438_187_520)):
            ops = ledger.build(self.arch, Workload(tokens=1, history=8192, mla=mla)).ops
            total = sum(op.matrix_flops for op in ops)
            self.assertEqual(total - flops(ops, {"delta_rule"}), want, mla)

    def test_block_kda_math_convention(self):
        """The book's prefill totals 1744.701011 (expanded) / 1863.462762 (compact) TFLOPs add
        7.550049 TFLOPs of block-wise KDA math to our matrix FLOPs without the delta rule. Per
        chunk of C = 64 tokens and head (d_k = d_v = 128) our chunked form counts 9,020,800
        (blocks.linear_attention.chunk_cost); the book's is 116,096 fewer: it does not count the
        forward substitution (I + A)^-1 as matrix work (C(C-1)(C-2)/3 = 83,328) and applies the
        unit diagonal of T in W = T(beta K) and U = T(beta V) without multiplying
        (2 C (d_k + d_v) = 32,768). 128 chunks x 96 heads x 69 layers x 8,904,704 =
        7,550,049,189,888. The same two terms close the four-model request (128-token prefill,
        2 chunks): 27.129451655168 - 2 x 96 x 69 x 116,096 / 1e12 = 27.127914 (the book's)."""
        from infracalc.blocks.linear_attention import chunk_cost
        c, d = 64, 128
        ours = chunk_cost(c, d, d)[0]
        book = ours - c * (c - 1) * (c - 2) // 3 - 2 * c * (d + d)
        self.assertEqual((ours, ours - book), (9_020_800, 116_096))
        block_math = 128 * 96 * 69 * book
        self.assertEqual(block_math, 7_550_049_189_888)
        for mla, want in (("naive", 1744.701011), ("absorbed", 1863.462762)):
            ops = ledger.build(self.arch, Workload(tokens=8192, mla=mla)).ops
            total = sum(op.matrix_flops for op in ops) - flops(ops, {"delta_rule"}) + block_math
            self.assertEqual(round(total / 1e12, 6), want, mla)
        self.assertEqual(round((27_129_451_655_168 - 2 * 96 * 69 * 116_096) / 1e12, 6), 27.127914)

    def test_state(self):
        bf16 = dtype("bf16")
        self.assertEqual(self.arch.kv_bytes(bf16, 8192, "absorbed"), int(649.40625 * 2**20))
        self.assertEqual(self.arch.kv_bytes(bf16, 8192, "naive"), int(11953.40625 * 2**20))

    def test_selected_history(self):
        """The state-kimi-k3-* rows: selected history 216 (compact) / 11520 (expanded) MiB at n
        8192 and 1,769,472 MiB for 64 requests at n 1,048,576 = a decode step's KV read minus
        the KDA state it reads: per request 69 layers x (96 heads x 128 x 128 x 4 B fp32 +
        3 x 12288 x 4 x 2 B conv slots) = 69 x 6,586,368 = 454,459,392 B (the book keeps the
        recurrent read and write out of the history payload). 216 MiB = 8192 tokens x 24 MLA
        layers x 576 x 2 B; 11520 MiB = 8192 x 24 x 96 heads x (192 + 128) x 2 B."""
        state = 69 * (96 * 128 * 128 * 4 + 3 * 12288 * 4 * 2)
        self.assertEqual(state, 454_459_392)
        for batch, history, mla, want in ((1, 8191, "absorbed", 216), (1, 8191, "naive", 11520),
                                          (64, 1048575, "absorbed", 1_769_472)):
            ops = ledger.build(self.arch, Workload(batch=batch, tokens=1, history=history, mla=mla)).ops
            kda = flops(ops, {"delta_rule"}, "kv_read")
            self.assertEqual(kda, batch * state)
            self.assertEqual(flops(ops, {op.name for op in ops}, "kv_read") - kda, want * 2**20, (batch, mla))
        self.assertEqual(8192 * 24 * 576 * 2, 216 * 2**20)
        self.assertEqual(8192 * 24 * 96 * (192 + 128) * 2, 11520 * 2**20)


class KDAByHand(unittest.TestCase):
    """D = 8, H = 2 heads of d = 4 (j = 8), K = 4 taps. Tensors q, k, v, g 4 x 8x8 = 256,
    f_a 4x8 = 32, f_b 8x4 = 32, b 2x8 = 16, o 8x8 = 64, A_log 2, dt_bias 8, o_norm 4,
    convs 3 x 8x4 = 96: 510. State 2x4x4 fp32 = 128 B + conv slots 4 x 3 x 8 bf16 = 192 B.
    One token: 6 x 4 x 4 = 96 matrix FLOPs per head (192), 16 + 8 + 4 + 1 = 29 vector per
    head (58). Three tokens: q_proj 2x3x8x8 = 384, f_a 2x3x8x4 = 192, b 2x3x8x2 = 96;
    gates 3 x (8 x 6 + 2 x 3) = 162; convs 3 x 24 x (2x4 + 4) = 864."""

    B = KDA(hidden=8, heads=2, head_dim=4, conv_kernel=4)

    def test_tensors_and_state(self):
        self.assertEqual(self.B.params, 510)
        self.assertEqual((self.B.recurrent_state_bytes(), self.B.conv_state_bytes()), (128, 192))

    def test_ops(self):
        one = rows(self.B, Workload(tokens=1, history=5))["delta_rule"]
        self.assertEqual((one.matrix_flops, one.vector_flops, one.kv_read), (192, 58, 320))
        r = rows(self.B, Workload(tokens=3))
        self.assertEqual((r["q_proj"].matrix_flops, r["f_a_proj"].matrix_flops, r["b_proj"].matrix_flops),
                         (384, 192, 96))
        self.assertEqual((r["gates"].vector_flops, r["qkv_conv_silu"].vector_flops), (162, 864))


class AttnResByHand(unittest.TestCase):
    """D = 8, c = 3 candidates, 2 tokens (6 candidate rows): scalar 6 x (3x8 + 1) + 8 +
    6 x (2x8 - 1) + 2 x (3x3 - 1) = 150 + 8 + 90 + 16 = 264, specials 2 x 6 + 2 x 2 = 16:
    280 vector FLOPs; the weighted sum 2 x 2 x 3 x 8 = 96 matrix FLOPs."""

    def test_mix(self):
        r = rows(AttnRes("mlp_res", 8, 3), Workload(tokens=2))
        self.assertEqual((r["mlp_res.mix"].vector_flops, r["mlp_res.sum"].matrix_flops), (280, 96))
        self.assertEqual(AttnRes("mlp_res", 8, 0).ops(Workload(tokens=2)), [])

    def test_block_stack(self):
        """The head mixes c = 3 candidates: 2 saved blocks + the running sum. Batch 2 x 3 tokens
        = 6 positions, D = 8: 2 x 6 x 8 = 96 values, x 2 B (BF16) = 192 B, x 4 B (FP32) = 384 B."""
        head = AttnResHeadNorm(8, 3)
        self.assertEqual(head.block_stack_bytes(Workload(batch=2, tokens=3)), 192)
        self.assertEqual(head.block_stack_bytes(Workload(batch=2, tokens=3, act_dtype=dtype("fp32"))), 384)


class LatentMoEByHand(unittest.TestCase):
    """D = 8, 4 experts of I = 4 at latent r = 6, top 2, one shared of 4: gate 4x8 + bias 4
    + experts 4 x (2 x 4x6 + 6x4) + shared 3 x 4x8 + down 6x8 + up 8x6 + norm 6 = 32 + 4 +
    288 + 96 + 48 + 48 + 6 = 522. Three tokens (6 routed copies): experts.gate_proj
    2 x 6 x 6 x 4 = 288, latent_down 2 x 3 x 8 x 6 = 288, router 2 x 3 x 8 x 4 = 192."""

    B = LatentMoE(8, 4, 2, 4, shared_inter=4, score_bias=True, latent=6)

    def test_counts(self):
        self.assertEqual(self.B.params, 522)
        r = rows(self.B, Workload(tokens=3))
        self.assertEqual((r["experts.gate_proj"].matrix_flops, r["latent_down"].matrix_flops,
                          r["latent_up"].matrix_flops, r["router"].matrix_flops), (288, 288, 288, 192))


class GatedMLAByHand(unittest.TestCase):
    """MLA D = 8, 2 heads, q_lora 4, kv_lora 4, qk 2+2, v 2: q_a 32 + 4 + q_b 8x4 + kv_a 6x8 +
    4 + kv_b 8x4 + o 8x4 = 184, plus g_proj 4x8 = 32: 216. No RoPE row (NoPE); three
    tokens: g_proj 2x3x8x4 = 192, the gate 4 x 3 x 4 = 48."""

    B = GatedMLA(hidden=8, heads=2, q_lora_rank=4, kv_lora_rank=4, qk_nope=2, qk_rope=2, v_head_dim=2)

    def test_counts(self):
        self.assertEqual(self.B.params, 216)
        r = rows(self.B, Workload(tokens=3, mla="naive"))
        self.assertNotIn("rope", r)
        self.assertEqual((r["g_proj"].matrix_flops, r["output_gate"].vector_flops), (192, 48))



class RecurrentBaseline(unittest.TestCase):
    """`forward --kda-count recurrent-baseline`: the book's logical recurrent count of the KDA layers
    (bojieli/ai-infra-book:calculations/results/k3-kda-b1-t1-s8192.md). Per token and layer, H 96,
    d 128, j 12,288, K 4: convs 3 x 12,288 x (2 x 4 - 1) = 258,048; L2 norms 2 x 96 x 3 x 128 = 73,728;
    decay gate 3 x 12,288 = 36,864; recurrence 96 x (7 x 128^2 + 128) = 11,022,336; output gate
    96 x (5 x 128 + 1) = 61,536: 11,452,512, x 69 layers = 790,223,328."""

    def test_tiny_counts(self):
        from infracalc.blocks.kimi import baseline_flops
        # H 1, d 2, K 2: convs 3 x 2 x 3, L2 2 x 6, gate 3 x 2, recurrence 7 x 4 + 2, output 5 x 2 + 1
        self.assertEqual(baseline_flops(1, 2, 2), {"qkv_conv_silu": 18, "qk_l2norm": 12, "gates": 6,
                                                   "delta_rule": 30, "gated_o_norm": 11})

    def test_book_figures(self):
        import json
        from support import run_cli
        for b, t, h, scalar, proj, state in ((1, 1, 8192, 69 * 11_452_512, 61_214_097_408, 434_110_464),
                                             (64, 1, 8192, 64 * 69 * 11_452_512, 3_917_702_234_112, 64 * 434_110_464),
                                             (1, 8192, 0, 8192 * 69 * 11_452_512, 501_465_885_966_336, 434_110_464)):
            status, out, err = run_cli("forward", "--model", "kimi-k3", "--batch", str(b), "--tokens", str(t),
                                       "--history", str(h), "--kda-count", "recurrent-baseline", "--format", "json")
            self.assertEqual(status, 0, err)
            k = json.loads(out)["kda"]
            self.assertEqual((k["recurrent_and_other_scalar_flops"], k["projection_matrix_flops"],
                              k["recurrent_state_fp32_bytes"]), (scalar, proj, state))
        self.assertEqual(k["scalar_flops_by_operator"]["delta_rule"], 8192 * 69 * 96 * (7 * 128 ** 2 + 128))

    def test_refused_without_kda(self):
        from support import run_cli
        status, _, err = run_cli("forward", "--model", "qwen3-8b", "--kda-count", "recurrent-baseline")
        self.assertEqual(status, 2)
        self.assertIn("no KDA", err)


if __name__ == "__main__":
    unittest.main()

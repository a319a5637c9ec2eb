"""DeepSeek-V4: the bundled V4-Flash checkpoint's exact size, and each new block's
counting rule on a tiny configuration worked by hand (blocks.compressed_attention,
blocks.hyper_connections, hash routing in blocks.moe)."""

import json
import os
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "calculations"))

from infracalc import ledger  # noqa: E402
from infracalc.analyses import decode as D  # noqa: E402
from infracalc.analyses import decode_sum as S  # noqa: E402
from infracalc.analyses import train_flops as TF  # noqa: E402
from infracalc.analyses.roofline import roof  # noqa: E402
from infracalc.arch import Tensor  # noqa: E402
from infracalc.blocks import compressed_attention as CA  # noqa: E402
from infracalc.blocks.hyper_connections import HCHeadNorm, HCPost, HCPre, split_flops  # noqa: E402
from infracalc.blocks.moe import MoE  # noqa: E402
from infracalc.dtypes import dtype  # noqa: E402
from infracalc.errors import UserError  # noqa: E402
from infracalc.load.config import Config  # noqa: E402
from infracalc.load.deepseek_v4 import V4Shapes  # noqa: E402
from infracalc.load.hardware import load_device  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.workload import Workload  # noqa: E402
from test_decode import closed, loop_sum, loop_time, step_ops  # noqa: E402

CONFIG = ROOT / "calculations" / "models" / "deepseek-v4-flash.json"


def native(arch):
    return Workload(formats=tuple((r, dtype(n)) for r, n in arch.native_formats))


def rows(block, w):
    return {op.name: op for op in block.ops(w)}


class Checkpoint(unittest.TestCase):
    """deepseek-ai/DeepSeek-V4-Flash (revision 60d8d707, the config's sha256 b628e633...
    as pinned in bojieli/ai-infra-book:calculations/configs/sources.lock.json):
    model.safetensors.index.json metadata.total_size = 159,609,485,896 bytes over
    69,187 tensors (notes/param-derivations.md derives it tensor by tensor from
    inference/model.py and the layer-0 shard header)."""

    def test_parameters(self):
        arch = load_model("deepseek-v4-flash")
        # the book's "base logical parameters" (bojieli/ai-infra-book:calculations/results/README.md,
        # forward-deepseek-v4-flash-*): no MTP, no quantization scales, no int64 hash table
        self.assertEqual(arch.params, 284_332_240_471)
        self.assertEqual([(p.name, p.params) for p in arch.parts], [("MTP", 6_610_048_891)])

    def test_checkpoint_bytes_equal_the_index_total_size(self):
        arch = load_model("deepseek-v4-flash")
        w = native(arch)
        s = V4Shapes(Config(json.loads(CONFIG.read_text()), "v4"))
        d, m = s.d, s.streams
        mtp = s.layer(0, False, "mtp.0.").tensors() + (
            Tensor("e_proj.weight", (d, d)), Tensor("h_proj.weight", (d, d)),
            *(Tensor(n, (d,), "vector") for n in ("enorm", "hnorm", "norm")),
            Tensor("hc_head_fn", (m, m * d), "vector", stored="fp32"),
            Tensor("hc_head_base", (m,), "vector", stored="fp32"),
            Tensor("hc_head_scale", (1,), "vector", stored="fp32"))
        self.assertEqual(arch.weight_bytes(w) + sum(w.weight_bytes(t) for t in mtp), 159_609_485_896)

    def test_every_command_runs(self):
        from support import run_cli
        for cmd in (["forward", "--tokens", "512"], ["decode", "--input-len", "600", "--output-len", "700"],
                    ["kv", "--context", "100000"],
                    ["parallel", "--devices", "8", "--tp", "8", "--input-len", "300", "--output-len", "20"],
                    ["train", "--seq", "2048", "--tp", "8", "--ep", "8", "--dp", "8", "--pp", "4"]):
            code, out, err = run_cli(cmd[0], "--model", "deepseek-v4-flash", "--device", "h200",
                                     *cmd[1:], "--format", "json")
            self.assertEqual(code, 0, (cmd, err))


class BookFigures(unittest.TestCase):
    """bojieli/ai-infra-book:calculations/results/README.md, the V4-Flash rows (TFLOPs to 6
    or 9 decimals): base forward 231.125253 (b1, T 8192) and 1.890532 (b64, T 1, H 8192);
    attention projections 83.309481 / 0.650855, effective QK/PV 16.641044 / 0.147103,
    reference (rectangular) index 5.772436 / 0.045097; FFN 0.975360229, routed
    0.831076172, shared 0.138512695 (b64). The book's forward total runs the index
    rectangularly (its reference einsum): our linear + rectangular attention FLOPs."""

    @staticmethod
    def sums(w):
        ops = ledger.build(load_model("deepseek-v4-flash"), w).ops
        by = lambda pred, f="matrix_flops": sum(getattr(op, f) for op in ops if pred(op.name))
        return ops, by

    def test_prefill(self):
        ops, by = self.sums(Workload(tokens=8192))
        t = ledger.totals(load_model("deepseek-v4-flash"), Workload(tokens=8192), ops)
        self.assertEqual(t.linear_flops + t.attention_flops_rectangular, 231_125_253_357_568)
        proj = by(lambda n: n in ("wq_a", "wq_b", "wkv", "wo_a", "wo_b", "indexer.wq_b", "indexer.weights_proj")
                  or n.endswith((".wkv", ".wgate")))
        self.assertEqual(proj, 83_309_480_640_512)
        self.assertEqual(by(lambda n: n.startswith(("attn_qk", "attn_pv"))), 16_641_043_726_336)
        # 21 ratio-4 layers x 2 x 64 heads x 128 x 8192 queries x 2048 entries
        self.assertEqual(by(lambda n: n == "indexer.scores", "rect_flops"), 21 * 2 * 64 * 128 * 8192 * 2048)
        self.assertEqual(21 * 2 * 64 * 128 * 8192 * 2048, 5_772_436_045_824)

    def test_decode_batch_64(self):
        ops, by = self.sums(Workload(batch=64, tokens=1, history=8192))
        self.assertEqual(sum(op.matrix_flops for op in ops), 1_890_532_196_352)
        routed, shared = by(lambda n: n.startswith("experts.")), by(lambda n: n.startswith("shared."))
        self.assertEqual((routed, shared), (831_076_171_776, 138_512_695_296))
        self.assertEqual(routed + shared + by(lambda n: n == "router"), 975_360_229_376)
        self.assertEqual(by(lambda n: n in ("wq_a", "wq_b", "wkv", "wo_a", "wo_b", "indexer.wq_b",
                                             "indexer.weights_proj") or n.endswith((".wkv", ".wgate"))),
                         650_855_317_504)
        self.assertEqual(by(lambda n: n == "indexer.scores"), 45_097_156_608)


class ProBookFigures(unittest.TestCase):
    """deepseek-ai/DeepSeek-V4-Pro (revision b5968e91; config.json 1,828 bytes, sha256
    5fe4568d... as pinned in bojieli/ai-infra-book:calculations/configs/sources.lock.json).
    The book's V4-Pro rows (bojieli/ai-infra-book:calculations/results/README.md): base
    logical parameters 1,572,997,201,763; base forward 861.614907 (b1, T 8192) and 6.996793
    TFLOPs (b64, T 1, H 8192); attention projections 318.877699 / 2.491232, QK/PV 68.205087 /
    0.679679, index 8.246337 / 0.064425; FFN 3.632082715, routed 3.094792372, shared
    0.515798729 (b64); mHC mixing 1377.342325 / 10.760487 GFLOPs, plain arithmetic 368.094306 /
    2.875737 GFLOPs, FP32 mHC parameters 320.700085 MiB; results/v4-prefix-pro-boundary.md:
    5 steps after a 125-token prefix, 500,022,149,120 matrix FLOPs."""

    PROJ = staticmethod(lambda n: n in ("wq_a", "wq_b", "wkv", "wo_a", "wo_b", "indexer.wq_b",
                                        "indexer.weights_proj") or n.endswith((".wkv", ".wgate")))

    def test_config_is_the_pinned_file(self):
        import hashlib
        digest = hashlib.sha256((ROOT / "calculations" / "models" / "deepseek-v4-pro.json").read_bytes()).hexdigest()
        self.assertEqual(digest, "5fe4568daee51c208cb8a79538eaeda090ae011ade1dee2c386aa95f569c810e")

    def test_parameters(self):
        arch = load_model("deepseek-v4-pro")
        self.assertEqual(arch.params, 1_572_997_201_763)
        hc = sum(t.params for t in arch.tensors() if ".hc_" in t.name or t.name.startswith("hc_"))
        self.assertEqual(4 * hc, 336_278_412)   # 320.700085 MiB of FP32

    def test_prefill(self):
        arch, w = load_model("deepseek-v4-pro"), Workload(tokens=8192)
        ops = ledger.build(arch, w).ops
        by = lambda pred, f="matrix_flops": sum(getattr(op, f) for op in ops if pred(op.name))
        t = ledger.totals(arch, w, ops)
        self.assertEqual(t.linear_flops + t.attention_flops_rectangular, 861_614_907_064_320)
        self.assertEqual(by(self.PROJ), 318_877_699_407_872)
        self.assertEqual(by(lambda n: n.startswith(("attn_qk", "attn_pv"))), 68_205_087_293_440)
        # 30 ratio-4 layers x 2 x 64 heads x 128 x 8192 queries x 2048 entries
        self.assertEqual(by(lambda n: n == "indexer.scores", "rect_flops"), 30 * 2 * 64 * 128 * 8192 * 2048)
        self.assertEqual(30 * 2 * 64 * 128 * 8192 * 2048, 8_246_337_208_320)
        hc = [op for op in ops if op.name.startswith("hc_")]
        self.assertEqual(sum(op.matrix_flops for op in hc), 1_377_342_324_736)
        # plain arithmetic 368.094306 GFLOPs + 37 specials per sublayer x 122 + 5 in hc_head
        self.assertEqual(sum(op.vector_flops for op in hc) - 8192 * (37 * 122 + 5), 368_094_306_304)

    def test_decode_batch_64(self):
        arch = load_model("deepseek-v4-pro")
        ops = ledger.build(arch, Workload(batch=64, tokens=1, history=8192)).ops
        by = lambda pred: sum(op.matrix_flops for op in ops if pred(op.name))
        self.assertEqual(sum(op.matrix_flops for op in ops), 6_996_793_229_312)
        routed, shared = by(lambda n: n.startswith("experts.")), by(lambda n: n.startswith("shared."))
        self.assertEqual((routed, shared), (3_094_792_372_224, 515_798_728_704))
        self.assertEqual(routed + shared + by(lambda n: n == "router"), 3_632_082_714_624)
        self.assertEqual(by(self.PROJ), 2_491_232_026_624)
        self.assertEqual(by(lambda n: n.startswith(("attn_qk", "attn_pv"))), 679_678_574_592)
        self.assertEqual(by(lambda n: n == "indexer.scores"), 64_424_509_440)

    def test_state_at_one_million(self):
        """state-deepseek-v4-pro-n1048576: per request, 30 CSA layers read the window (128 x
        1024 B), the top 1024 compressed entries (x 1024 B) and every index entry
        (262,144 x 256 B); 31 HCA layers the window and 8,192 entries (x 1024 B):
        30 x 68,288,512 + 31 x 8,519,680 = 2,312,765,440 B = the book's selected payload
        (141160 MiB for 64 requests) once the compressor state (18,710,528 B) is set apart."""
        t = ledger.build(load_model("deepseek-v4-pro"), Workload(tokens=1, history=1_048_575)).totals
        self.assertEqual(t.kv_bytes_read - 18_710_528, 30 * 68_288_512 + 31 * 8_519_680)
        self.assertEqual(64 * t.kv_bytes_resident_after, 631_902 * 2**20)


class PrefixBoundaries(unittest.TestCase):
    """bojieli/ai-infra-book:calculations/results/v4-prefix-pro-boundary.md (125-token prefix,
    5 sequential full forwards: matrix_flops_effective_attention 500,022,149,120, state
    27,708,928 -> 27,966,464 B) and v4-prefix-flash-batch-boundary.md (3 requests, prefix
    127, 2 forwards: 164,157,456,384; 55,894,272 -> 56,168,448 B): our decode phase."""

    def test_boundaries(self):
        from support import run_cli
        for model, args, flops, before, after in (
                ("deepseek-v4-pro", ("--input-len", "125", "--output-len", "6"), 500_022_149_120, 27_708_928, 27_966_464),
                ("deepseek-v4-flash", ("--input-len", "127", "--output-len", "3", "--batch", "3"),
                 164_157_456_384, 55_894_272, 56_168_448)):
            status, out, err = run_cli("decode", "--model", model, *args, "--format", "json")
            self.assertEqual(status, 0, err)
            r = json.loads(out)
            batch = r["inputs"]["batch"]
            self.assertEqual(r["decode"]["linear_flops"] + r["decode"]["attention_flops_causal"], flops)
            self.assertEqual(r["prefill"]["kv_bytes_written"], before)
            self.assertEqual(batch * r["serving"]["final_cache_bytes"], after)


class MTPCall(unittest.TestCase):
    """One call of V4-Flash's MTP block (`forward --mtp`: blocks.mtp.HCMTPInput, the layer of
    compress_ratios[43] = 0, biased routing, hc_head, norm, the shared head). The book's
    results/v4-mtp-first-call.md (batch 1, one token, start_pos 0, balanced routing):
    1,796,997,120 matrix FLOPs = e_proj 2 x 4096^2 (33,554,432) + h_proj on the 4 streams
    2 x 4 x 4096^2 (134,217,728) + the head 2 x 4096 x 129,280 (1,059,061,760) + attention
    projections 213,909,504 (wq_a 8,388,608, wq_b and wo_a and wo_b 67,108,864 each, wkv
    4,194,304) + QK and PV over one key 2 x 2 x 64 x 512 = 131,072 + router 2,097,152 + 6 routed
    experts 3 x 100,663,296 + shared 3 x 16,777,216 + mHC mixes 2 x 786,432 + hc_head 131,072;
    the MTP's own checkpoint payload 3,593,787,756 B; one 1,024 B window entry written.
    -b2-prefill16 (2 x 16 tokens): 25,763,512,320, KV after 32,768 B; -history128 (1 token at
    start_pos 128): 1,813,643,264, KV 131,072 B before and after (the 128-entry ring)."""

    def call(self, **kw):
        from infracalc.analyses.serve.speculation import mtp_drafter
        arch = mtp_drafter(load_model("deepseek-v4-flash"))
        w = native(load_model("deepseek-v4-flash")).replace(routing="balanced", **kw)
        return arch, w, ledger.build(arch, w)

    def test_first_call(self):
        arch, w, L = self.call(tokens=1)
        m = {op.name: op.matrix_flops for op in L.ops}
        self.assertEqual((m["e_proj"], m["h_proj"], m["lm_head"]), (2 * 4096 ** 2, 2 * 4 * 4096 ** 2, 2 * 4096 * 129_280))
        self.assertEqual(m["attn_qk"] + m["attn_pv"], 2 * 2 * 64 * 512)
        self.assertEqual(sum(m.values()), 1_796_997_120)
        self.assertEqual(L.totals.kv_bytes_written, 1024)
        own = arch.layers[0].tensors() + tuple(arch.final_norm.tensors())
        self.assertEqual(sum(w.weight_bytes(t) for t in own), 3_593_787_756)
        part = next(p for p in load_model("deepseek-v4-flash").parts if p.name == "MTP")
        self.assertEqual(sum(t.params for t in own), part.params)

    def test_batch_and_history(self):
        _, _, L = self.call(batch=2, tokens=16)
        self.assertEqual((sum(op.matrix_flops for op in L.ops), L.totals.kv_bytes_resident_after),
                         (25_763_512_320, 32_768))
        _, _, L = self.call(tokens=1, history=128)
        self.assertEqual(sum(op.matrix_flops for op in L.ops), 1_813_643_264)
        self.assertEqual((L.totals.kv_bytes_resident_before, L.totals.kv_bytes_resident_after), (131_072, 131_072))


class V41Refused(unittest.TestCase):
    """DeepSeek-V4.1 adds layers this adapter does not model (the book's V4.1-Flash config:
    kv_source_layer_ids [2, 8, 14, 20], index_source_layer_ids, CSA2 candidate blocks,
    Engram; text_config nesting): one line naming them, never a V4 count."""

    def test_named(self):
        from support import run_cli, write_config
        cfg = json.loads(CONFIG.read_text())
        for extra, needle in (({"kv_source_layer_ids": [2, 8, 14, 20]}, "kv_source_layer_ids (CED"),
                              ({"index_source_layer_ids": [2, 8]}, "index_source_layer_ids"),
                              ({"engram_vocab_size": 8}, "engram_vocab_size (Engram"),
                              ({"text_config": {}}, "text_config nesting")):
            status, _, err = run_cli("models", "--model", write_config(self, {**cfg, **extra}))
            self.assertEqual(status, 2, extra)
            self.assertIn("DeepSeek-V4.1 architecture", err)
            self.assertIn(needle, err)
            self.assertEqual(len(err.strip().split("\n")), 1)


class Formulas(unittest.TestCase):
    def test_floor_sums_equal_brute_force(self):
        for r in (1, 4, 8, 128):
            for n in range(0, 300):
                self.assertEqual(CA.floor_sum(n, r), sum(x // r for x in range(1, n + 1)))
                for cap in (1, 3, 512):
                    self.assertEqual(CA.capped_floor_sum(n, r, cap),
                                     sum(min(cap, x // r) for x in range(1, n + 1)))


class WindowAttentionByHand(unittest.TestCase):
    """D = 8, H = 2 heads of d = 4, rd = 2, q_lora 4, G = 2 groups of o_lora 3, W = 4.
    Tensors: sink 2 + wq_a 4x8 + q_norm 4 + wq_b 8x4 + wkv 4x8 + kv_norm 4 + wo_a
    (2*3)x(8/2) + wo_b 8x6 = 2+32+4+32+32+4+24+48 = 178.
    One request, H = 5 cached, T = 3 new: window pairs sum_{x=6}^{8} min(x, 4) = 12;
    QK^T = PV = 2 x 2 heads x 4 x 12 = 192; softmax 5 x 2 x 12 + sink 4 x 2 x 3 = 144;
    keys read min(8, 4-1+3) = 6 rows x 4 values x 2 B = 48 B; wq_a 2x3x8x4 = 192,
    wo_a 2 x 3 x (2 x 4) x 3 = 144 (each group maps 4 values to 3), wo_b 2x3x6x8 = 288."""

    B = CA.WindowAttention(hidden=8, heads=2, head_dim=4, rope_dim=2, q_lora=4, o_groups=2, o_lora=3, window=4)
    W = Workload(tokens=3, history=5)

    def test_tensors(self):
        self.assertEqual(self.B.params, 178)

    def test_core_and_projections(self):
        r = rows(self.B, self.W)
        self.assertEqual((r["attn_qk"].matrix_flops, r["attn_pv"].matrix_flops), (192, 192))
        self.assertEqual(r["softmax"].vector_flops, 144)
        self.assertEqual(r["attn_qk"].kv_read, 48)
        self.assertEqual(r["attn_pv"].kv_read, 0)   # K and V are the same row, read once
        self.assertEqual((r["wq_a"].matrix_flops, r["wo_a"].matrix_flops, r["wo_b"].matrix_flops), (192, 144, 288))
        self.assertEqual(r["wo_a"].act_read, 3 * 8 * 2)
        self.assertEqual(r["kv_store"].kv_write, 3 * 4 * 2)

    def test_cache(self):
        self.assertEqual(self.B.kv_bytes_per_token(dtype("bf16")) * self.B.kv_tokens(100), 4 * 2 * 4)


class CompressorByHand(unittest.TestCase):
    """D = 8, d = 4, rd = 2. r = 4 overlaps (c = 2): ape 4x8 + wkv 8x8 + wgate 8x8 +
    norm 4 = 164; state 2 x (2x4) x (2x4) x 4 B = 512 B. H = 5, T = 7: entries made
    floor(12/4) - floor(5/4) = 2; pool 2 x (7 x 8 x 4 + 4 x 4 + 3 x 2) = 492 FLOPs;
    writes 2 entries x 4 x 2 B + the state 512 = 528 B, reads the state 512 B.
    r = 8 (c = 1) attended by 2 heads: ape 8x4 + wkv 4x8 + wgate 4x8 + norm 4 = 100;
    queries x = 6..12 see floor(x/8) = 0,0,1,1,1,1,1: 5 pairs, QK^T 2 x 2 x 4 x 5 = 80;
    rows read floor(12/8) = 1 (8 B)."""

    W = Workload(tokens=7, history=5)

    def test_overlapping_r4(self):
        c = CA.Compressor(hidden=8, ratio=4, dim=4, rope_dim=2)
        self.assertEqual(c.params, 164)
        self.assertEqual(c.state_bytes(dtype("bf16")), 512)
        pool = rows(c, self.W)["attn.compressor.pool"]
        self.assertEqual((pool.vector_flops, pool.kv_write, pool.kv_read), (492, 528, 512))
        self.assertEqual(rows(c, self.W)["attn.compressor.wkv"].matrix_flops, 2 * 7 * 8 * 8)
        self.assertEqual(c.kv_tokens(103), 25)

    def test_attended_r8(self):
        c = CA.Compressor(hidden=8, ratio=8, dim=4, rope_dim=2, heads=2)
        self.assertEqual(c.params, 100)
        r = rows(c, self.W)
        self.assertEqual((r["attn_qk.compressed"].matrix_flops, r["attn_qk.compressed"].kv_read), (80, 8))
        self.assertEqual(r["softmax.compressed"].vector_flops, 5 * 2 * 5)


class IndexerByHand(unittest.TestCase):
    """D = 8, q_lora 4, H_I = 2 heads of d_I = 4, rd = 2, top-k 2, attention 2 heads
    of d = 4. Tensors wq_b 8x4 + weights_proj 2x8 = 48. H = 5, T = 7: visible
    floor(12/4) = 3; scored pairs sum_{x=6}^{12} floor(x/4) = 1+1+2+2+2+2+3 = 13,
    scores 2 x 2 x 4 x 13 = 208 matrix, 13 x (3 x 2 + 1) = 91 vector; selected
    sum min(2, floor(x/4)) = 1+1+2+2+2+2+2 = 12, QK^T 2 x 2 x 4 x 12 = 192; entries
    read min(3, 7 x 2) = 3 rows x 4 x 2 B = 24 B, index keys 3 x 4 x 2 B = 24 B."""

    B = CA.Indexer(hidden=8, q_lora=4, heads=2, dim=4, rope_dim=2, topk=2, attn_heads=2, attn_dim=4)
    W = Workload(tokens=7, history=5)

    def test_counts(self):
        self.assertEqual(self.B.params, 48)
        r = rows(self.B, self.W)
        self.assertEqual((r["indexer.scores"].matrix_flops, r["indexer.scores"].vector_flops,
                          r["indexer.scores"].kv_read), (208, 91, 24))
        self.assertEqual((r["attn_qk.selected"].matrix_flops, r["attn_qk.selected"].kv_read), (192, 24))

    def test_saturation_is_a_segment_point(self):
        self.assertEqual(self.B.history_segments(0, 100), (7,))


class HyperConnectionsByHand(unittest.TestCase):
    """D = 8, m = 2 streams, I = 20 Sinkhorn iterations: M = (2+2) x 2 = 8 mixes.
    HCPre tensors fn 8 x 16 + base 8 + scale 3 = 139; per token GEMM 2 x 16 x 8 = 256;
    Sinkhorn arithmetic 6x2 + 2x4 + (4x4 - 2) + (2x20 - 1)(2x1 + 2x4) = 12+8+14+390 = 424,
    specials 2x2 sigmoid + 4 exp + 2 max = 10; vector 2x16 + 1 + 1 (rsqrt) + 8 + 434 +
    (2x2-1) x 8 = 500. HCPost (2x4 + 2) x 8 = 80 per token. HCHeadNorm fn 2x16 + base 2
    + scale 1 + norm 8 = 43; GEMM 2 x 16 x 2 = 64, vector 32 + 2 + 5x2 + 24 = 68,
    norm 4 x 8 = 32."""

    W = Workload(tokens=3)

    def test_pre(self):
        b = HCPre("hc_attn", 8, 2, 20)
        self.assertEqual(b.params, 139)
        self.assertEqual(split_flops(2, 20), 434)
        r = rows(b, self.W)
        self.assertEqual((r["hc_attn.mix"].matrix_flops, r["hc_attn.pre"].vector_flops), (3 * 256, 3 * 500))
        self.assertEqual(r["hc_attn.mix"].weight_read, 128 * 4)   # fp32 weights

    def test_post_and_head(self):
        self.assertEqual(rows(HCPost("hc_ffn", 8, 2), self.W)["hc_ffn.post"].vector_flops, 3 * 80)
        h = HCHeadNorm(8, 2)
        self.assertEqual(h.params, 43)
        r = rows(h, self.W)
        self.assertEqual((r["hc_head.mix"].matrix_flops, r["hc_head"].vector_flops, r["norm"].vector_flops),
                         (3 * 64, 3 * 68, 3 * 32))

    def test_contractions_as_matrix(self):
        """--hc-contractions matrix, D = 8, m = 2, 3 tokens: the pre weighted sum becomes a
        [1,2]x[2,8] product, 2x2x8 = 32 matrix FLOPs per token (backward dpre 32), its vector
        500 - (2x2-1) x 8 = 476; the post stream mix [2,2]x[2,8] = 2x4x8 = 64 matrix, vector
        2x2x8 = 32 (post products and final adds), backward dcomb + dx_residual 4x4x8 = 128 and
        dz + dpost 4x2x8 = 64: 192. The training backward takes them as matrix FLOPs."""
        w = Workload(tokens=3, hc_contractions="matrix")
        pre = rows(HCPre("hc_attn", 8, 2, 20), w)["hc_attn.pre"]
        post = rows(HCPost("hc_ffn", 8, 2), w)["hc_ffn.post"]
        self.assertEqual((pre.matrix_flops, pre.vjp_matrix_flops, pre.vector_flops), (3 * 32, 3 * 32, 3 * 476))
        self.assertEqual((post.matrix_flops, post.vjp_matrix_flops, post.vector_flops), (3 * 64, 3 * 192, 3 * 32))
        self.assertEqual(TF.backward(post, w, 1).matrix_flops, 3 * 192)
        self.assertEqual(rows(HCPost("hc_ffn", 8, 2), self.W)["hc_ffn.post"].vjp_matrix_flops, 0)
        with self.assertRaises(UserError):
            Workload(hc_contractions="scalar")

    def test_the_books_scalar_count(self):
        """bojieli/ai-infra-book:calculations/results/README.md, hc-deepseek-v4-flash-b1-t8192:
        mixing projections 555.124523 GFLOPs, plain arithmetic 148.981473 GFLOPs = 18,186,215
        per token x 8192 (its count without special functions); ours adds 37 specials per
        sublayer (36 in the split, 1 rsqrt) x 86 and 5 in hc_head: 3,187 per token."""
        arch = load_model("deepseek-v4-flash")
        ops = ledger.build(arch, Workload(tokens=8192)).ops
        hc = [op for op in ops if op.name.startswith("hc_")]
        self.assertEqual(sum(op.matrix_flops for op in hc), 555_124_523_008)
        self.assertEqual(sum(op.vector_flops for op in hc), (18_186_215 + 3_187) * 8192)


class HashRouting(unittest.TestCase):
    """A hash layer's tid2eid [V = 16, k = 2] int64 replaces the score bias [4]: 256 B of
    table (no parameters), 4 parameters fewer; a pass over 3 tokens reads their 3 rows
    (3 x 2 x 8 = 48 B)."""

    def test_table(self):
        hashed = MoE(8, 4, 2, 4, hash_vocab=16)
        biased = MoE(8, 4, 2, 4, score_bias=True)
        self.assertEqual(hashed.params - biased.params, -4)
        table = hashed.tensors()[1]
        self.assertEqual((table.name, Workload().weight_bytes(table)), ("mlp.gate.tid2eid", 256))
        self.assertEqual(rows(hashed, Workload(tokens=3))["routing"].weight_read, 48)


class DecodeSums(unittest.TestCase):
    """Closed-form decode sums equal the per-step ledgers across the window (6), the
    ratio-8 and ratio-4 periods and the top-k saturation (history 4 x 3 - 1 = 11)."""

    def arch(self):
        cfg = json.loads(CONFIG.read_text())
        cfg.update(num_hidden_layers=4, compress_ratios=[0, 4, 8, 4, 0], sliding_window=6, index_topk=3,
                   num_hash_layers=1)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "config.json")
            Path(path).write_text(json.dumps(cfg))
            return load_model(path)

    def test_closed_form_equals_loop(self):
        arch, w = self.arch(), Workload(batch=2)
        for lo, hi in ((0, 90), (5, 140), (11, 60)):
            self.assertEqual(closed(arch, w, lo, hi), loop_sum(arch, w, lo, hi), (lo, hi))

    def test_long_outputs_and_huge_histories_equal_loop(self):
        """Whole periods summed as repeats (the plan's K > 1 entries): a long output
        from history 0 (crossing the window, both periods and the saturation), and
        outputs at histories 10^10 and 10^15 (far past every breakpoint without a
        period). FLOPs and bytes exactly; summed roofline time to 12 places."""
        arch, w = self.arch(), Workload(batch=2)
        r = roof(load_device("h100-sxm"), w.compute_dtype)
        for lo, hi in ((0, 700), (10**10, 10**10 + 300), (10**15 + 3, 10**15 + 260)):
            self.assertTrue(any(k > 1 for _, k, _ in S.plan(arch, lo, hi)), (lo, hi))
            steps = step_ops(arch, w, lo, hi)
            self.assertEqual(closed(arch, w, lo, hi), loop_sum(arch, w, lo, hi, steps), (lo, hi))
            self.assertAlmostEqual(D.account(S.decode_pieces(arch, w, lo, hi), r).time_s
                                   / loop_time(arch, w, lo, hi, r, steps), 1.0, places=12)

    def test_ledgers_built_do_not_grow_with_steps_or_history(self):
        """The number of per-step block evaluations a decode sum makes is the same for 10^3 and
        10^9 steps, and at history 10^4 and 10^12: a closed form per period."""
        arch, w = self.arch(), Workload(batch=2)
        built = []
        step_ops = S._values

        def counting(*args):
            built[-1] += 1
            return step_ops(*args)

        S._values = counting
        try:
            for lo, n in ((10**4, 10**3), (10**4, 10**9), (10**12, 10**3), (10**12, 10**9)):
                built.append(0)
                S.decode_pieces(arch, w.replace(batch=3 + len(built)), lo, lo + n - 1)
        finally:
            S._values = step_ops
        self.assertEqual(len(set(built)), 1, built)

    def test_prefill_split_conserves_attention(self):
        arch = self.arch()
        whole = ledger.build(arch, Workload(tokens=48)).totals
        a = ledger.build(arch, Workload(tokens=20)).totals
        b = ledger.build(arch, Workload(tokens=28, history=20)).totals
        self.assertEqual(whole.attention_flops_causal, a.attention_flops_causal + b.attention_flops_causal)


if __name__ == "__main__":
    unittest.main()

"""DeepSeek-V4.1: the bundled V4.1-Flash checkpoint's exact size, each new block's counting
rule on a tiny configuration worked by hand (blocks.csa2; the weightless hc_head of
blocks.hyper_connections), the adapter's checks, and the book's v41-forward figures."""

import hashlib
import json
import os
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "calculations"))

from infracalc import ledger  # noqa: E402
from infracalc.blocks import csa2 as C  # noqa: E402
from infracalc.blocks.hyper_connections import HCHeadNorm  # noqa: E402
from infracalc.dtypes import dtype  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.workload import Workload  # noqa: E402
from test_decode import closed, loop_sum  # noqa: E402

CONFIG = ROOT / "calculations" / "models" / "deepseek-v4.1-flash.json"
BF16 = dtype("bf16")


def rows(block, w):
    return {op.name: op for op in block.ops(w)}


def native(arch):
    return Workload(formats=tuple((r, dtype(n)) for r, n in arch.native_formats))


def model_with(**changes):
    cfg = json.loads(CONFIG.read_text())
    cfg["text_config"].update(changes)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "config.json")
        Path(path).write_text(json.dumps(cfg))
        return load_model(path)


class Checkpoint(unittest.TestCase):
    """deepseek-ai/DeepSeek-V4.1-Flash, revision df42c109: the config's 3,311 bytes hash to the
    sha256 the book pins (bojieli/ai-infra-book:calculations/configs/sources.lock.json); the book's
    audit of all 48 shard headers (its research note calculations/research/deepseek-v41-flash/
    README.md and results/v41-flash-n8192-b1.md, read in the public copy 899ms/ai-infra-book):
    backbone 551,566,180,464 and Engram 196,928,504,320 logical parameters (scales excluded, FP4
    values two per byte), DSpark 14,225,362,530, vision 485,268,480; checkpoint bytes with scales
    298,309,535,168 (backbone) and 203,073,076,240 (Engram)."""

    def test_config_is_the_pinned_file(self):
        data = CONFIG.read_bytes()
        self.assertEqual((len(data), hashlib.sha256(data).hexdigest()),
                         (3311, "8be45ce0476004a3f529fd896115a4a2e800a129ad2d3ec05b16050f52e21879"))

    def test_parameters(self):
        arch = load_model("deepseek-v4.1-flash")
        engram = sum(t.params for t in arch.tensors() if ".engram." in t.name)
        self.assertEqual((arch.params - engram, engram), (551_566_180_464, 196_928_504_320))
        tables = sum(t.params for t in arch.tensors() if t.name.endswith("engram.embed.weight"))
        self.assertEqual(tables, 196_613_849_600)
        self.assertEqual([(p.name, p.params) for p in arch.parts], [("DSpark", 14_225_362_530),
                                                                     ("vision", 485_268_480)])

    def test_checkpoint_bytes(self):
        """... and DSpark 7,932,874,632 B, vision 970,536,960 B (BF16: 2 bytes per parameter); the four
        sum to the audit's tensor payload 510,286,023,000 B."""
        arch = load_model("deepseek-v4.1-flash")
        w = native(arch)
        engram = sum(w.weight_bytes(t) for t in arch.tensors() if ".engram." in t.name)
        self.assertEqual((arch.weight_bytes(w) - engram, engram), (298_309_535_168, 203_073_076_240))
        self.assertEqual([p.checkpoint_bytes for p in arch.parts], [7_932_874_632, 970_536_960])
        self.assertEqual(arch.weight_bytes(w) + sum(p.checkpoint_bytes for p in arch.parts), 510_286_023_000)

    def test_layer_kinds(self):
        arch = load_model("deepseek-v4.1-flash")
        kinds = {}
        for i, layer in enumerate(arch.layers):
            names = tuple(type(b).__name__ for b in layer.blocks)
            kinds.setdefault(("SourceCompressor" in names, "CandidateIndexer" in names,
                              "SharedSparseAttention" in names, "Engram" in names), []).append(i)
        self.assertEqual(kinds[(True, True, True, False)], [2, 8, 20])
        self.assertEqual(kinds[(True, True, True, True)], [14])
        self.assertEqual(kinds[(False, True, True, False)], [24, 28, 32, 36])
        self.assertEqual(kinds[(False, False, False, False)], [0])
        self.assertEqual(kinds[(False, False, False, True)], [1])
        self.assertEqual(len(kinds[(False, False, True, False)]), 30)
        reader = {type(b).__name__: b for b in arch.layers[39].blocks}
        self.assertEqual((reader["SharedSparseAttention"].source, reader["SharedSparseAttention"].ratio), (20, 1))
        self.assertEqual({type(b).__name__: b for b in arch.layers[24].blocks}["CandidateIndexer"].cap, 16384)
        self.assertTrue({type(b).__name__: b for b in arch.layers[20].blocks}["CandidateIndexer"].selects_pool)


class SourceCompressorByHand(unittest.TestCase):
    """D = 8, d = 4, d_I = 2, rd = 2. r = 2: wkv 4x8 + wgate 4x8 + norm 4 + wk 2x4 + k_norm 2 = 78;
    state 2 x 2 x 4 x 4 B = 64. H = 5, T = 7: entries floor(12/2) - floor(5/2) = 4; pool
    4 x (7 x 2 x 4 + 4 x 4 + 3 x 2) = 312 FLOPs; writes 4 x 4 x 2 B + 64 = 96 B, reads 64 B;
    wkv 2 x 7 x 8 x 4 = 448 (wgate the same); the index key 2 x 4 x 4 x 2 = 64, its norm
    4 x 4 x 2 = 32 FLOPs and 4 x 2 x 2 = 16 B written. r = 1: no wgate (46 params), 7 entries,
    pool 7 x (16 + 6) = 154, no state, 56 B written, index key 2 x 7 x 4 x 2 = 112."""

    W = Workload(tokens=7, history=5)

    def test_ratio_2(self):
        c = C.SourceCompressor(hidden=8, ratio=2, dim=4, index_dim=2, rope_dim=2)
        self.assertEqual((c.params, c.state_bytes(BF16)), (78, 64))
        r = rows(c, self.W)
        pool = r["attn.compressor.pool"]
        self.assertEqual((pool.vector_flops, pool.kv_write, pool.kv_read), (312, 96, 64))
        self.assertEqual((r["attn.compressor.wkv"].matrix_flops, r["attn.compressor.wgate"].matrix_flops), (448, 448))
        self.assertEqual(r["attn.indexer.wk"].matrix_flops, 64)
        self.assertEqual((r["attn.indexer.k_norm"].vector_flops, r["attn.indexer.k_norm"].kv_write), (32, 16))
        self.assertEqual((c.kv_bytes_per_token(BF16), c.kv_tokens(13)), (12, 6))

    def test_ratio_1(self):
        c = C.SourceCompressor(hidden=8, ratio=1, dim=4, index_dim=2, rope_dim=2)
        self.assertEqual((c.params, c.state_bytes(BF16)), (46, 0))
        r = rows(c, self.W)
        self.assertNotIn("attn.compressor.wgate", r)
        pool = r["attn.compressor.pool"]
        self.assertEqual((pool.vector_flops, pool.kv_write, pool.kv_read), (154, 56, 0))
        self.assertEqual(r["attn.indexer.wk"].matrix_flops, 112)


class CandidateIndexerByHand(unittest.TestCase):
    """D = 8, q_lora 4, H_I = 2 heads of d_I = 4, rd = 2; H = 2, T = 3 (keys seen floor(x/r),
    x = 3, 4, 5). r = 1, pool 4: pairs min(4,3) + 4 + 4 = 11, scores 2 x 2 x 4 x 11 = 176,
    rectangle 2 x 2 x 4 x 3 x 5 = 240, vector 11 x (3 x 2 + 1) = 77, keys read min(5, 3 x 4) = 5
    (5 x 4 x 2 B = 40). No pool: 12 pairs (192), the pool selection 12 comparisons. r = 2: keys
    1, 2, 2 = 5 pairs (80), rectangle 3 x floor(5/2) = 6 (96). Projections: wq_b 2x3x4x8 = 192,
    weights_proj 2x3x8x2 = 96, RoPE + Hadamard 3 x 2 x (3 x 2 + 4 x 2) = 84; params 32 + 16."""

    W = Workload(tokens=3, history=2)

    def block(self, **kw):
        return C.CandidateIndexer(**{"hidden": 8, "q_lora": 4, "heads": 2, "dim": 4, "rope_dim": 2, "ratio": 1, **kw})

    def test_within_the_pool(self):
        r = rows(self.block(cap=4), self.W)["attn.indexer.scores"]
        self.assertEqual((r.matrix_flops, r.rect_flops, r.vector_flops, r.kv_read), (176, 240, 77, 40))

    def test_whole_history_and_pool_selection(self):
        b = self.block(selects_pool=True)
        r = rows(b, self.W)
        self.assertEqual((r["attn.indexer.scores"].matrix_flops, r["attn.indexer.scores"].kv_read), (192, 40))
        self.assertEqual(r["attn.indexer.candidate_pool"].vector_flops, 12)
        self.assertEqual((r["attn.indexer.wq_b"].matrix_flops, r["attn.indexer.weights_proj"].matrix_flops,
                          r["attn.indexer.rope_hadamard"].vector_flops), (192, 96, 84))
        self.assertEqual(b.params, 48)

    def test_ratio_2(self):
        r = rows(self.block(ratio=2), self.W)["attn.indexer.scores"]
        self.assertEqual((r.matrix_flops, r.rect_flops), (80, 96))


class SharedSparseAttentionByHand(unittest.TestCase):
    """2 heads of d = 4. r = 2, top-2, H = 3, T = 2: queries see floor(4/2) = floor(5/2) = 2
    entries, min(2, .) = 2 each: 4 pairs; QK^T = PV = 2 x 2 x 4 x 4 = 64; softmax 5 x 2 x 4 = 40;
    rows read min(floor(5/2), 2 x 2) = 2 (2 x 4 x 2 B = 16). r = 1, top-2, H = 0, T = 3: 1 + 2 + 2
    = 5 pairs (80), rows read min(3, 6) = 3 (24 B); at H = 10, T = 1 the query attends min(2, 11) = 2
    entries and reads those 2 rows of the 11 (16 B). No weights: it reads its source's cache."""

    def test_ratio_2(self):
        b = C.SharedSparseAttention(heads=2, dim=4, ratio=2, topk=2, source=0)
        r = rows(b, Workload(tokens=2, history=3))
        self.assertEqual((r["attn_qk.shared"].matrix_flops, r["attn_pv.shared"].matrix_flops), (64, 64))
        self.assertEqual((r["softmax.shared"].vector_flops, r["attn_qk.shared"].kv_read), (40, 16))
        self.assertEqual(b.params, 0)

    def test_ratio_1(self):
        r = rows(C.SharedSparseAttention(heads=2, dim=4, ratio=1, topk=2, source=0), Workload(tokens=3))
        self.assertEqual((r["attn_qk.shared"].matrix_flops, r["attn_qk.shared"].kv_read), (80, 24))
        r = rows(C.SharedSparseAttention(heads=2, dim=4, ratio=1, topk=2, source=0), Workload(tokens=1, history=10))
        self.assertEqual((r["attn_qk.shared"].matrix_flops, r["attn_qk.shared"].kv_read), (32, 16))


class EngramByHand(unittest.TestCase):
    """D = 4, m = 2 streams, a table of 10 rows x 2, n-grams of 2..4 (3 orders) x 2 heads: 6 rows
    gathered per token (12 values). Tensors: table 10 x 2 + wkv (3 x 4) x 12 + q, k weights 2 x 4
    each = 20 + 144 + 16 = 180; a token uses 6 x 2 + 144 + 16 = 172. H = 2, T = 3 (table BF16):
    wkv 2 x 3 x 12 x 12 = 864; the gate 3 x 2 x (12 x 4 + 5) = 318; 3 x 6 rows x 4 B = 72 B
    gathered; the token ids: min(2, 3) x 8 = 16 B read, 3 x 8 = 24 B written (8 B per token of
    cache). TP 4: ceil(10/4) = 3 rows per rank, ceil(18/4) = 5 rows gathered (20 B)."""

    B = C.Engram(hidden=4, streams=2, rows=10, orders=3, heads=2, head_dim=2, table_format="bf16", token_ids=True)
    W = Workload(tokens=3, history=2)

    def test_tensors(self):
        self.assertEqual((self.B.params, self.B.active_params()), (180, 172))

    def test_ops(self):
        r = rows(self.B, self.W)
        self.assertEqual(r["engram.wkv"].matrix_flops, 864)
        self.assertEqual(r["engram.gate"].vector_flops, 318)
        self.assertEqual((r["engram.lookup"].weight_read, r["engram.lookup"].kv_read,
                          r["engram.lookup"].kv_write), (72, 16, 24))
        self.assertEqual(self.B.kv_bytes_per_token(BF16), 8)
        self.assertEqual(self.B.replace(token_ids=False).kv_bytes_per_token(BF16), 0)

    def test_shard(self):
        s = self.B.shard(4)
        self.assertEqual(s.tensors()[0].shape, (3, 2))
        self.assertEqual(rows(s, self.W)["engram.lookup"].weight_read, 20)


class HeadWithoutWeights(unittest.TestCase):
    """Single-pass mHC's end: D = 4, m = 2, 3 positions: the weighted sum (2 x 2 - 1) x 4 x 3 = 36
    vector FLOPs, no mixing GEMM, only the final norm's 4 parameters."""

    def test_rows(self):
        b = HCHeadNorm(4, 2, mixed=False)
        self.assertEqual(b.params, 4)
        r = rows(b, Workload(tokens=3))
        self.assertEqual((r["hc_head"].vector_flops, r["hc_head"].matrix_flops, r["norm"].vector_flops), (36, 0, 48))
        self.assertNotIn("hc_head.mix", r)


class Refused(unittest.TestCase):
    """A reader whose source has another ratio, a source without an indexer and Engram lists that
    disagree are one-line errors, never a count."""

    def test_named(self):
        from support import run_cli, write_config
        cfg = json.loads(CONFIG.read_text())
        ratios = cfg["text_config"]["compress_ratios"]
        for change, needle in (({"compress_ratios": ratios[:19] + [1] + ratios[20:]}, "layer 19 (compress ratio 1)"),
                               ({"index_source_layer_ids": [2, 14, 20, 24]}, "without its own indexer"),
                               ({"engram_num_embeddings": [5]}, "engram_num_embeddings"),
                               ({"kv_source_layer_ids": [8, 2, 14, 20]}, "kv_source_layer_ids")):
            bad = json.loads(json.dumps(cfg))
            bad["text_config"].update(change)
            status, _, err = run_cli("models", "--model", write_config(self, bad))
            self.assertEqual(status, 2, change)
            self.assertIn(needle, err)
            self.assertEqual(len(err.strip().split("\n")), 1)


class BookForward(unittest.TestCase):
    """The book's v41-forward files (899ms/ai-infra-book:calculations/results/v41-forward-*.md):
    matrix FLOPs (FMA = 2, effective sparse pairs), context-interaction FLOPs and the BF16 state
    after the call. The reference prefill scores the index rectangle (our rect count); the
    decodes and the 128-token prefill count the candidate-limited causal pairs (our matrix_flops)."""

    def test_reference_prefill_8192(self):
        t = ledger.build(load_model("deepseek-v4.1-flash"), Workload(tokens=8192)).totals
        self.assertEqual(t.linear_flops + t.attention_flops_rectangular, 282_386_229_624_832)
        self.assertEqual(t.attention_flops_rectangular, 28_957_676_142_592)
        self.assertEqual(t.kv_bytes_resident_after, 31_547_392)

    def test_candidate_passes(self):
        arch = load_model("deepseek-v4.1-flash")
        for (tokens, history), (matrix, context, before, after) in (
                ((128, 0), (4_036_154_621_952, 75_030_331_392, 0, 5_678_080)),
                ((1, 8192), (35_917_045_760, 3_657_474_048, 31_547_392, 31_548_680)),
                ((1, 204800), (40_211_980_288, 7_952_408_576, 662_265_856, 662_267_144)),
                ((1, 1048575), (57_492_897_792, 25_232_932_864, 3_369_094_136, 3_369_099_264))):
            t = ledger.build(arch, Workload(tokens=tokens, history=history)).totals
            self.assertEqual((t.matrix_flops, t.attention_flops_causal, t.kv_bytes_resident_before,
                              t.kv_bytes_resident_after), (matrix, context, before, after), (tokens, history))

    def test_bf16_global_cache(self):
        """v41-flash-n8192-b1: the reference BF16 global KV 26,214,400 B = (3 x 4096 + 8192) entries
        x (512 + 128) x 2 B, once for all 40 layers."""
        arch = load_model("deepseek-v4.1-flash")
        blocks = [b for layer in arch.layers for b in layer.blocks if isinstance(b, C.SourceCompressor)]
        self.assertEqual(sum(b.kv_bytes_per_token(BF16) * b.kv_tokens(8192) for b in blocks), 26_214_400)


PRODUCTION = "bf16,window=fp8-g32-e8m0,entry=fp4-g16-e4m3,index=mxfp4"


class CacheFormats(unittest.TestCase):
    """A KV format BASE,KIND=FORMAT,... keeps each kind of cache row in its own format: the
    paper's production V4.1 cache (the book's chapter 2 and its kv-comparison files): window rows
    FP8 + one E8M0 scale per 32 = 512 + 16 = 528 B, entries FP4 + one E4M3 scale per 16 =
    256 + 32 = 288 B, index keys MXFP4 = 64 + 4 = 68 B."""

    def test_row_bytes(self):
        k = dtype(PRODUCTION)
        self.assertEqual((k.for_cache("window").nbytes_flat(512), k.for_cache("entry").nbytes_flat(512),
                          k.for_cache("index").nbytes_flat(128), k.nbytes_flat(512)), (528, 288, 68, 1024))
        self.assertEqual(dtype("bf16").for_cache("window").name, "bf16")

    def test_refused(self):
        from infracalc.errors import UserError
        for bad in ("bf16,windows=fp8", "bf16,window=fp8,window=fp8", "bf16,window"):
            with self.assertRaises(UserError):
                dtype(bad)
        from support import run_cli
        status, _, err = run_cli("kv", "--model", "qwen3-8b", "--context", "8", "--kv-dtype", "bf16,window=fp8")
        self.assertEqual(status, 2)
        self.assertIn("keeps no window cache rows", err)

    def test_book_kv_comparison_n8192(self):
        """kv-comparison-n8192-b1, the V4.1 row: global history (3 x 4096 + 8192) x 356 = 7,290,880 B,
        window 40 x 128 x 528 = 2,703,360 B; one decode query at N = 8192 reads 40 x 128 x 528 +
        38 x 512 x 288 = 8,306,688 B of window and selected entries and (3 x 4096 + 8192 + 4 x 8192)
        x 68 = 3,620,864 B of index keys."""
        from infracalc.dtypes import dtype as d
        arch = load_model("deepseek-v4.1-flash")
        k = d(PRODUCTION)
        blocks = [b for layer in arch.layers for b in layer.blocks]
        self.assertEqual(sum(b.kv_bytes_per_token(k) * b.kv_tokens(8192) for b in blocks
                             if isinstance(b, C.SourceCompressor)), 7_290_880)
        w = Workload(tokens=1, history=8191, kv_dtype=k)
        ops = ledger.build(arch, w).ops
        self.assertEqual(sum(o.kv_read for o in ops if o.name in ("attn_qk", "attn_qk.shared")), 8_306_688)
        self.assertEqual(sum(o.kv_read for o in ops if o.name.endswith("indexer.scores")), 3_620_864)
        # the book's own test (calculations/tests/test_v41_kv_comparison.py) at N = 131072
        ops = ledger.build(arch, w.replace(history=131071)).ops
        n = 131072
        self.assertEqual(sum(o.kv_read for o in ops if o.name.endswith("indexer.scores")),
                         (3 * (n // 2) + n + 4 * 16384) * 68)


class CED(unittest.TestCase):
    """forward --schedule ced. The book's v41-forward-prefill-8192-ced (899ms/ai-infra-book:calculations/
    results/): 143,946,626,891,776 matrix FLOPs, 12,652,976,275,456 of context interaction, 31,547,392 B
    after; its experts 70,665,633,792,000 + 11,777,605,632,000 = v41-flash's CED figure 82,443,239,424,000.
    By hand on the 8-layer model of DecodeSums (split 4 = the decoder's KV source, r = 1, window R = 5,
    top-3): a fresh prompt of T = 7 runs layers 4-7 on its last 5 positions: their window restarts,
    sum_{x=1}^{5} min(x, 5) = 15 pairs, QK^T 2 x 64 heads x 512 x 15 = 983,040 per layer; their shared
    attention keeps positions 3..7 (history 2), min(3, x) = 3 entries each: 15 pairs; layer 4's source
    compresses all 7 positions (wkv 2 x 7 x 5120 x 512 = 36,700,160); wq_a runs on 5 rows there
    (2 x 5 x 5120 x 1280 = 65,536,000 per layer) and on 7 in layers 0-3."""

    def test_book_prefill_8192(self):
        arch = load_model("deepseek-v4.1-flash")
        t = ledger.build(arch, Workload(tokens=8192, schedule="ced")).totals
        self.assertEqual((t.matrix_flops, t.attention_flops_causal, t.kv_bytes_resident_after),
                         (143_946_626_891_776, 12_652_976_275_456, 31_547_392))
        ops = ledger.build(arch, Workload(tokens=8192, schedule="ced")).ops
        self.assertEqual(sum(o.matrix_flops for o in ops if o.name.startswith(("experts.", "shared."))),
                         82_443_239_424_000)
        self.assertEqual(ledger.field_sums(arch, Workload(tokens=8192, schedule="ced"), ("matrix_flops",)),
                         (143_946_626_891_776,))

    def test_by_hand(self):
        arch = DecodeSums().arch()
        self.assertEqual((arch.ced_split, arch.ced_window), (4, 5))
        ops = ledger.operators(arch, Workload(tokens=7, schedule="ced"), per_layer=True)
        rows = {(o.name, o.layers): o for o in ops}
        self.assertEqual(rows[("attn_qk", "4-7")].matrix_flops, 983_040)
        self.assertEqual(rows[("attn_qk.shared", "4-7")].matrix_flops, 2 * 64 * 512 * 15)
        self.assertEqual(rows[("attn.compressor.wkv", "4")].matrix_flops, 36_700_160)
        self.assertEqual(rows[("wq_a", "4-7")].matrix_flops, 65_536_000)
        self.assertEqual(rows[("wq_a", "0-3")].matrix_flops, 2 * 7 * 5120 * 1280)

    def test_same_as_full_when_nothing_is_replayed(self):
        arch = load_model("deepseek-v4.1-flash")
        for tokens, history in ((128, 0), (1, 8192), (4, 300)):
            full = ledger.build(arch, Workload(tokens=tokens, history=history)).totals
            ced = ledger.build(arch, Workload(tokens=tokens, history=history, schedule="ced")).totals
            self.assertEqual(full, ced, (tokens, history))

    def test_decode_prefill(self):
        """decode --schedule ced: the CED prefill (the book's 143,946,626,891,776 matrix FLOPs), steps unchanged."""
        from support import run_cli
        out = {}
        for schedule in ("ced", "full"):
            status, text, _ = run_cli("decode", "--model", "deepseek-v4.1-flash", "--input-len", "8192",
                                      "--output-len", "4", "--schedule", schedule, "--format", "json")
            self.assertEqual(status, 0)
            out[schedule] = json.loads(text)
        p = out["ced"]["prefill"]
        self.assertEqual(p["linear_flops"] + p["attention_flops_causal"], 143_946_626_891_776)
        self.assertEqual(out["ced"]["latency"]["tpot_mean_s"], out["full"]["latency"]["tpot_mean_s"])
        self.assertLess(out["ced"]["latency"]["ttft_s"], out["full"]["latency"]["ttft_s"])

    def test_refused_without_a_split(self):
        from support import run_cli
        status, _, err = run_cli("forward", "--model", "qwen3-8b", "--tokens", "8", "--schedule", "ced")
        self.assertEqual(status, 2)
        self.assertIn("no CED encoder/decoder split", err)


class FlashMLARow(unittest.TestCase):
    """flashmla-v4: FlashMLA's DeepSeek-V4 cache row, 448 FP8 NoPE + 64 BF16 RoPE values + 8 B of scales
    and padding = 584 B per 512 values (the book's V4.1 research note). The book's kv-comparison-n8192-b1
    V4-Flash production row: global history 21 x 2,048 x (584 + 68) + 20 x 64 x 584 = 28,788,736 B
    (3,514.25 B per token), window 43 x 128 x 584 = 3,214,336 B; one query at N = 8192 reads 10,241,024 B
    of window, HCA and selected rows and 21 x 2,048 x 68 = 2,924,544 B of index keys."""

    K = "bf16,window=flashmla-v4,entry=flashmla-v4,index=mxfp4"

    def test_row(self):
        from infracalc.errors import UserError
        d = dtype("flashmla-v4")
        self.assertEqual((d.nbytes_flat(512), d.nbytes_flat(1024)), (584, 1168))
        for bad in (lambda: d.nbytes_flat(128), lambda: d.nbytes((4, 512))):
            with self.assertRaises(UserError):
                bad()

    def test_book_v4_flash_production(self):
        arch = load_model("deepseek-v4-flash")
        k = dtype(self.K)
        from infracalc.blocks.compressed_attention import Compressor, WindowAttention
        blocks = [b for layer in arch.layers for b in layer.blocks]
        self.assertEqual(sum(b.kv_bytes_per_token(k) * b.kv_tokens(8192) for b in blocks
                             if isinstance(b, Compressor)), 28_788_736)
        self.assertEqual(sum(b.kv_bytes_per_token(k) * b.kv_tokens(8192) for b in blocks
                             if isinstance(b, WindowAttention)), 3_214_336)
        ops = ledger.build(arch, Workload(tokens=1, history=8191, kv_dtype=k)).ops
        self.assertEqual(sum(o.kv_read for o in ops if o.name.startswith("attn_qk")), 10_241_024)
        self.assertEqual(sum(o.kv_read for o in ops if o.name.endswith("indexer.scores")), 2_924_544)


class DecodeSums(unittest.TestCase):
    """Closed-form decode sums equal the per-step ledgers across the window (5), the ratio-2
    period, the top-k saturation (2 x 3 - 1 = 5 at r = 2, 3 at r = 1) and the candidate pool
    (6 entries: history 6 at r = 1), and the token-id read (3 ids)."""

    def arch(self):
        return model_with(num_hidden_layers=8, compress_ratios=[0, 0, 2, 2, 1, 1, 1, 1, 0, 0, 0],
                          kv_source_layer_ids=[2, 4], index_source_layer_ids=[2, 4, 6], candidate_source_layer_id=4,
                          candidate_topk_blocks=2, candidate_block_size=3, sliding_window=5, index_topk=3,
                          engram_layer_ids=[1, 5], engram_num_embeddings=[100, 200])

    def test_closed_form_equals_loop(self):
        arch, w = self.arch(), Workload(batch=2)
        for lo, hi in ((0, 40), (3, 25)):
            self.assertEqual(closed(arch, w, lo, hi), loop_sum(arch, w, lo, hi), (lo, hi))


if __name__ == "__main__":
    unittest.main()

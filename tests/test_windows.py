"""Sliding-window and chunked attention: closed forms against hand enumeration
and brute-force loops; KV cache per layer; sinks; qk L2 norm; the prefill-split
and decode-sum invariants; the bundled Mistral 7B and Phi-3 windows.

Convention under test (blocks/attention.py): positions count from 0; with a
window W the query at p sees keys (p - W, p] (W keys including its own); with a
chunk C it sees keys [floor(p/C)*C, p].
"""

import unittest

from helpers import tiny_model
from support import build, load_model, Workload

from infracalc.arch import Layer
from infracalc.blocks.attention import Attention, causal_pairs, chunk_prefix_pairs, keys_touched
from infracalc.dtypes import DTYPES
from infracalc.errors import UserError

BF16 = DTYPES["bf16"]


def seen(p, window=None, chunk=None):
    """Key positions the query at position p attends (explicit definition)."""
    if chunk is not None:
        return range(p // chunk * chunk, p + 1)
    if window is not None:
        return range(max(0, p - window + 1), p + 1)
    return range(p + 1)


def small(**kw):
    """hidden 8, 2 query heads sharing 1 KV head of width 4."""
    return Attention(hidden=8, heads=2, kv_heads=1, head_dim=4, rope_dim=4, **kw)


def op(ops, name):
    return next(o for o in ops if o.name == name)


class HandEnumerated(unittest.TestCase):
    # H = 2 cached tokens, T = 5 new: queries at positions 2, 3, 4, 5, 6.

    def test_full_pairs(self):
        # keys seen: 3 + 4 + 5 + 6 + 7 = 25
        self.assertEqual(causal_pairs(2, 5), 25)
        self.assertEqual(keys_touched(2, 5), 7)

    def test_window_4_pairs(self):
        # W = 4: p=2 sees {0,1,2} = 3; p=3 {0..3} = 4; p=4 {1..4} = 4; p=5 {2..5} = 4; p=6 {3..6} = 4
        # total 3 + 4 + 4 + 4 + 4 = 19; keys read: positions 0..6 = 7
        self.assertEqual(causal_pairs(2, 5, window=4), 19)
        self.assertEqual(keys_touched(2, 5, window=4), 7)
        # H = 10, T = 2, W = 4: p=10 sees 7..10, p=11 sees 8..11 -> 8 pairs, keys 7..11 = 5
        self.assertEqual(causal_pairs(10, 2, window=4), 8)
        self.assertEqual(keys_touched(10, 2, window=4), 5)

    def test_chunk_4_pairs(self):
        # C = 4: chunks [0..3], [4..7]. p=2 sees {0,1,2} = 3; p=3 {0..3} = 4;
        # p=4 {4} = 1; p=5 {4,5} = 2; p=6 {4,5,6} = 3 -> 13 pairs; keys 0..6 = 7
        self.assertEqual(causal_pairs(2, 5, chunk=4), 13)
        self.assertEqual(keys_touched(2, 5, chunk=4), 7)
        # H = 9, T = 2 (p = 9, 10, both in chunk [8..11]): 2 + 3 = 5 pairs, keys 8..10 = 3
        self.assertEqual(causal_pairs(9, 2, chunk=4), 5)
        self.assertEqual(keys_touched(9, 2, chunk=4), 3)

    def test_chunk_prefix_closed_form(self):
        # S(10), C = 4: (1+2+3+4) + (1+2+3+4) + (1+2) = 23 = 2 * 4*5/2 + 2*3/2
        self.assertEqual(chunk_prefix_pairs(10, 4), 23)
        self.assertEqual(chunk_prefix_pairs(0, 4), 0)
        self.assertEqual(chunk_prefix_pairs(8, 4), 20)

    def test_attention_ops_window(self):
        # W = 4, B = 1, H = 2, T = 5: pairs 19 (above). QK^T: 2 * heads(2) * head_dim(4) * 19 = 304,
        # PV the same; rectangular 2*2*4 * T(5)*(H+T)(7) = 560.
        w = Workload(tokens=5, history=2)
        ops = small(window=4).ops(w)
        self.assertEqual(op(ops, "attn_qk").matrix_flops, 304)
        self.assertEqual(op(ops, "attn_pv").matrix_flops, 304)
        self.assertEqual(op(ops, "attn_qk").rect_flops, 560)
        # 7 keys read, one key row = 1 head * 4 values * 2 bytes = 8 bytes
        self.assertEqual(op(ops, "attn_qk").kv_read, 56)
        # softmax: 5 FLOPs per score * 2 heads * 19 = 190
        self.assertEqual(op(ops, "softmax").vector_flops, 190)

    def test_attention_ops_chunk(self):
        # C = 4, B = 3, H = 2, T = 5: 13 pairs per request (above)
        w = Workload(batch=3, tokens=5, history=2)
        ops = small(chunk=4).ops(w)
        self.assertEqual(op(ops, "attn_qk").matrix_flops, 3 * 2 * 2 * 4 * 13)   # 624
        self.assertEqual(op(ops, "attn_qk").kv_read, 3 * 7 * 8)                 # 168

    def test_sinks(self):
        # one sink logit per head: 2 params; softmax with sinks adds 4 FLOPs per (query, head) row:
        # 5 * 2 heads * 19 pairs + 4 * 2 heads * 5 queries = 190 + 40 = 230
        a = small(window=4, sinks=True)
        self.assertEqual([t.shape for t in a.tensors() if t.name.endswith("sinks")], [(2,)])
        self.assertEqual(a.params, 64 + 64 + 32 + 32 + 2)  # q 8x8, o 8x8, k 4x8, v 4x8, sinks 2
        self.assertEqual(op(a.ops(Workload(tokens=5, history=2)), "softmax").vector_flops, 230)
        self.assertEqual(op(a.ops(Workload(tokens=5, history=2)), "softmax").weight_read, 4)  # 2 bf16

    def test_qk_l2norm(self):
        # weightless: no tensors; 3 FLOPs per element of q (2 heads x 4) and k (1 x 4) per token:
        # 5 tokens * 12 * 3 = 180
        a = small(chunk=4, qk_l2norm=True)
        self.assertEqual(a.params, small().params)
        self.assertEqual(op(a.ops(Workload(tokens=5, history=2)), "qk_l2norm").vector_flops, 180)

    def test_kv_per_layer(self):
        # one token: K and V, 1 head x 4 values x 2 bytes each = 16 bytes
        full, win, chk = Layer((small(),)), Layer((small(window=4),)), Layer((small(chunk=4),))
        self.assertEqual(full.kv_bytes(BF16, 10), 160)
        self.assertEqual(win.kv_bytes(BF16, 10), 64)    # min(10, 4) tokens
        self.assertEqual(win.kv_bytes(BF16, 3), 48)
        self.assertEqual(chk.kv_bytes(BF16, 10), 32)    # chunk [8..11] holds tokens 8, 9
        self.assertEqual(chk.kv_bytes(BF16, 8), 64)     # chunk [4..7] complete
        self.assertEqual(chk.kv_bytes(BF16, 9), 16)
        self.assertEqual(chk.kv_bytes(BF16, 0), 0)

    def test_window_and_chunk_exclusive(self):
        with self.assertRaises(UserError):
            small(window=4, chunk=4)
        with self.assertRaises(UserError):
            small(chunk=0)


class BruteForce(unittest.TestCase):
    """Closed forms against explicit loops over positions for many small cases."""

    def test_pairs_keys_cache(self):
        for cap in range(1, 10):
            for h in range(0, 22):
                for t in range(1, 22):
                    qs = range(h, h + t)
                    for kw in ({"window": cap}, {"chunk": cap}):
                        pairs = sum(len(seen(p, **kw)) for p in qs)
                        keys = len(set().union(*(seen(p, **kw) for p in qs)))
                        self.assertEqual(causal_pairs(h, t, **kw), pairs, (h, t, kw))
                        self.assertEqual(keys_touched(h, t, **kw), keys, (h, t, kw))
                    self.assertEqual(causal_pairs(h, t), sum(p + 1 for p in qs))
                # cache after h tokens: window keeps the last min(h, W); a chunk keeps
                # the tokens of the chunk that holds the latest token
                self.assertEqual(small(window=cap).kv_tokens(h), min(h, cap))
                latest = [q for q in range(h) if q // cap == (h - 1) // cap]
                self.assertEqual(small(chunk=cap).kv_tokens(h), len(latest), (h, cap))

    def test_prefix_pairs(self):
        for c in range(1, 12):
            for n in range(0, 60):
                self.assertEqual(chunk_prefix_pairs(n, c), sum(p % c + 1 for p in range(n)))


class DecodeSum(unittest.TestCase):
    """A decode of G tokens (T = 1 per step) sums to the prefill closed form, and
    between history breakpoints every per-step quantity is linear, so a piece's
    sum is count * (first + last) / 2."""

    def check(self, attn, h0, g):
        layer = Layer((attn,))

        def step(h):
            ops = attn.ops(Workload(tokens=1, history=h))
            return (op(ops, "attn_qk").matrix_flops, op(ops, "attn_qk").kv_read,
                    layer.kv_bytes(BF16, h))

        steps = [step(h) for h in range(h0, h0 + g)]
        brute = [sum(s[i] for s in steps) for i in range(3)]
        cuts = [h0] + [b for b in attn.history_breakpoints(h0, h0 + g - 1)] + [h0 + g]
        piecewise = [0, 0, 0]
        for a, b in zip(cuts, cuts[1:]):
            if b <= a:
                continue
            first, last = (steps[h - h0] if h0 <= h < h0 + g else step(h) for h in (a, b - 1))
            for i in range(3):
                twice = (b - a) * (first[i] + last[i])
                self.assertEqual(twice % 2, 0)
                piecewise[i] += twice // 2
        self.assertEqual(piecewise, brute, (attn, h0, g))
        per_pair = 2 * attn.heads * attn.head_dim
        self.assertEqual(brute[0], per_pair * causal_pairs(h0, g, attn.window, attn.chunk))

    def test_chunk_and_window(self):
        for cap in (1, 2, 3, 4, 7):
            for h0 in (0, 1, 3, 4, 5, 9):
                for g in (1, 2, 5, 8, 17, 30):
                    self.check(small(chunk=cap), h0, g)
                    self.check(small(window=cap), h0, g)

    def test_breakpoints_grow_with_chunks_not_tokens(self):
        a = small(chunk=8192)
        self.assertEqual(a.history_breakpoints(0, 10 ** 9)[:4], (8192, 8193, 16384, 16385))
        # (0, 81920]: chunk starts 8192, 16384, ..., 81920 (10) and the cache restarts one
        # later (9 of them inside the range): 19
        self.assertEqual(len(a.history_breakpoints(0, 81920)), 19)
        self.assertEqual(a.history_breakpoints(8192, 8193), (8193,))
        self.assertEqual(small(window=4).history_breakpoints(0, 10), (4,))
        self.assertEqual(small().history_breakpoints(0, 10), ())


class PrefillSplit(unittest.TestCase):
    """forward(T = P + C) == forward(T = P) + forward(H = P, T = C) for matrix and vector
    FLOPs (logits none), for windowed and chunked layers, splits inside a window or
    chunk and across a boundary."""

    def totals(self, arch, tokens, history=0):
        t = build(arch, Workload(tokens=tokens, history=history, logits="none")).totals
        return t.matrix_flops, t.vector_flops

    def check(self, arch, cases):
        for p, c in cases:
            whole = self.totals(arch, p + c)
            a, b = self.totals(arch, p), self.totals(arch, c, history=p)
            self.assertEqual(whole, (a[0] + b[0], a[1] + b[1]), (arch.id, p, c))

    def test_tiny_models(self):
        # window / chunk 4 in every tiny model: (1, 2) stays inside the first window / chunk,
        # (3, 6) and (6, 7) cross boundaries, (4, 4) splits exactly on one
        cases = [(1, 2), (2, 1), (3, 6), (4, 4), (6, 7), (9, 3), (13, 20)]
        for kind in ("gemma3_text", "gpt_oss", "llama4_text"):
            self.check(tiny_model(kind), cases)

    def test_bundled(self):
        cases = [(1000, 24), (1000, 3096), (4000, 200), (5000, 12000), (8192, 8192)]
        for model_id in ("mistral-7b-v0.1", "phi-3-mini", "gemma-3-27b", "gpt-oss-20b", "llama-4-scout"):
            self.check(load_model(model_id), cases)


class BundledWindows(unittest.TestCase):

    def test_mistral_7b(self):
        arch = load_model("mistral-7b-v0.1")
        self.assertEqual(arch.attention_summary, "GQA window 4096")
        # cache per token per layer: K and V, 8 heads x 128 x 2 bytes = 4096 B; 32 layers keep
        # min(10000, 4096) tokens: 32 * 4096 * 4096 = 536,870,912
        self.assertEqual(arch.kv_bytes(BF16, 10000), 536870912)
        # prefill 8192: sum_{x=1}^{8192} min(x, 4096) = 4096*4097/2 + 4096*4096 = 25,167,872 pairs;
        # QK^T and PV each 2 * 32 heads * 128 FLOPs per pair, 32 layers
        t = build(arch, Workload(tokens=8192, logits="none")).totals
        self.assertEqual(t.attention_flops_causal, 2 * 2 * 32 * 128 * 25167872 * 32)
        # rectangular: 8192 * 8192 pairs
        self.assertEqual(t.attention_flops_rectangular, 2 * 2 * 32 * 128 * 8192 * 8192 * 32)

    def test_phi3_mini(self):
        arch = load_model("phi-3-mini")
        self.assertEqual(arch.attention_summary, "MHA window 2047")
        # per layer per token: 2 * 32 heads * 96 * 2 bytes = 12,288 B; 32 layers x 2047 tokens
        self.assertEqual(arch.kv_bytes(BF16, 4096), 32 * 2047 * 12288)   # 804,913,152
        self.assertEqual(arch.kv_bytes(BF16, 2000), 32 * 2000 * 12288)
        # one decode step at history 3000: min(3001, 2047) = 2047 keys per query;
        # keys read min(3001, 2046 + 1) = 2047 rows of 32 * 96 * 2 bytes, K and V
        t = build(arch, Workload(tokens=1, history=3000, logits="none")).totals
        self.assertEqual(t.attention_flops_causal, 2 * 2 * 32 * 96 * 2047 * 32)
        self.assertEqual(t.kv_bytes_read, 2 * 2047 * 32 * 96 * 2 * 32)


if __name__ == "__main__":
    unittest.main()

"""DeepSeek-V4.1 CSA2 attention (cross-layer KV sharing) and Engram.

Sources: the configuration of deepseek-ai/DeepSeek-V4.1-Flash (revision
df42c109f1defefcbfcedbe7d905718a12266e40, pinned by sha256 in
bojieli/ai-infra-book:calculations/configs/sources.lock.json) and the book's own
counting of it (calculations/src/infra_calc/topics/v41_forward.py and
calculations/tests/test_v41_kv_comparison.py of the book's repository, read in its
public copy 899ms/ai-infra-book), whose shapes it checks against all 48 checkpoint
headers. Every layer keeps its own sliding window and query (blocks.compressed_attention
WindowAttention); the compressed global cache is shared:

- `SourceCompressor` (the `kv_source_layer_ids`, e.g. 2, 8, 14, 20): the only layers
  that build compressed entries. compressor.wkv [d, D] on every token (and compressor.wgate
  [d, D] when r > 1), the softmax pool over r consecutive tokens (r > 1; r = 1 is the
  plain projection), compressor.norm, RoPE; then the entry's index key
  indexer.wk [d_I, d] + indexer.k_norm, computed from the entry (one row per new entry).
  Cache per request after C tokens: floor(C/r) entries of d values + floor(C/r) index keys
  of d_I values; state 2 x r x d fp32 (the open window's kv and score rows) when r > 1.
- `CandidateIndexer` (the `index_source_layer_ids`: the sources and the "reindex"
  layers): its own query indexer.wq_b [H_I d_I, q_lora] from the query latent and
  indexer.weights_proj [H_I, D]; scores every index key of its source a query may see,
  n(p) = floor((p+1)/r); after the candidate source layer (`candidate_source_layer_id`)
  only within the candidate pool of cap = candidate_topk_blocks x candidate_block_size
  entries that layer selected: min(cap, n(p)) keys per query. The candidate source layer
  itself adds the pool selection (block maxima and top blocks).
- `SharedSparseAttention` (every layer of ratio r > 0, sources, reindex and reuse layers
  alike): the query attends k = index_topk entries of its source's cache (the selection of
  the latest indexer): min(k, n(p)) entries per query.
- `Engram` (`engram_layer_ids`): per token, (max_ngram - 1) x engram_n_heads hashed rows of
  engram_head_dim values are gathered from the layer's table engram.embed.weight
  [rows, d_E]; engram.wkv [(m+1) D, (max_ngram-1) H_E d_E] turns them into one key per
  residual stream and a shared value; per stream a gate, the normalised dot product of
  the stream against its key (engram.q_weight, engram.k_weight [m, D]), through a sigmoid,
  scales the value added to the stream. The n-gram hash needs the request's token ids: the
  first Engram layer keeps them (int64, 8 B per token), the reference's token cache.

Counting rules (one request, H cached and T new tokens, queries p = H .. H+T-1; a
multiply-add is 2 FLOPs; P(r, cap) = sum_{x=H+1}^{H+T} min(cap, floor(x/r)), the
closed form of compressed_attention.compressed_pairs):
- SourceCompressor: wkv (+ wgate) 2 T D d each; per new entry (E = floor((H+T)/r) -
  floor(H/r)) pooling 7 r d vector FLOPs when r > 1 (softmax 5 and weighted sum 2 per
  pooled value), RMSNorm 4 d, RoPE 3 rd; the index key 2 E d d_I matrix FLOPs + its
  RMSNorm 4 d_I. Writes E entries and E index keys in the cache format.
- CandidateIndexer: wq_b 2 T q_lora H_I d_I, weights_proj 2 T D H_I, the query's RoPE and
  Hadamard rotation H_I (3 rd + d_I log2 d_I) per token (as V4's indexer); scores
  2 H_I d_I FLOPs per (query, key) pair over P(r, cap) pairs (cap none before the pool
  exists) - the rectangular count T x floor((H+T)/r) is what the reference einsum scores
  before its masks; 3 H_I + 1 vector FLOPs per pair (relu, weight, head sum; the top-k
  comparison); the pool selection 1 comparison per pair (block maxima). Reads
  min(floor((H+T)/r), T cap) index keys (all of them when uncapped).
- SharedSparseAttention: QK^T and PV 2 H_q d FLOPs each per pair over P(r, k) pairs, the
  softmax 5 per score; reads min(floor((H+T)/r), T k) entries of d values.
- Engram: wkv 2 T (max_ngram-1) H_E d_E (m+1) D matrix FLOPs; per (token, stream) the gate
  12 D + 5 vector FLOPs (RMS of the stream and of the key with their weights 4 D each, the
  dot product 2 D, scale, sign, square root and sigmoid 5 with the sigmoid counted 3, the
  gated add 2 D); the gather reads (max_ngram-1) H_E rows of the table per token, the
  token-id cache min(H, max_ngram-1) ids per request and writes T ids. The hash itself is
  integer arithmetic (multiplies, xors, modulo on token ids), not counted as FLOPs.
Cache formats: window rows, entries and index keys take `kv_dtype.for_cache("window" | "entry" |
"index")` (a composite --kv-dtype may set them apart: the paper's production cache is 528 / 288 /
68 B rows). CED (`forward --schedule ced`, ledger.ced_replay): in the decoder's replay pass
(Workload.replay) the KV source at the split compresses every prompt position.
"""

import math

from ..arch import Block, Tensor, history_free_rows
from ..errors import UserError
from ..ops import VECTOR_FLOPS, Op, elementwise, gemm, rmsnorm
from .compressed_attention import (INDEX_FLOPS, POOL_FLOPS, TOPK_FLOPS, compressed_pairs, core_ops,
                                   entries_made)

TOKEN_ID_BYTES = 8                  # the reference keeps the request's token ids as int64
ENGRAM_GATE_FLOPS = (12, 5)         # per (token, stream): 12 D + 5 (see the module docstring)


def _sparse_breakpoints(ratio, cap, lo, hi):
    """Histories h in (lo, hi] where min(cap, floor((h+1)/r)) starts a new linear piece:
    r = 1: one piece to h = cap - 1, flat after; r > 1: h = r j - 1 (a step every r)."""
    if ratio == 1:
        return (cap,) if lo < cap <= hi else ()
    return tuple(h for h in range(lo // ratio * ratio + ratio - 1, hi + 1, ratio) if lo < h <= hi)


class SourceCompressor(Block):
    """The compressed entries and index keys of one KV source layer (CSA2)."""
    hidden: int
    ratio: int
    dim: int            # d: one entry (head_dim)
    index_dim: int      # d_I: one index key (index_head_dim)
    rope_dim: int
    prefix: str = "attn"
    cache_kinds = ("entry", "index")

    def _check(self):
        if self.ratio < 1:
            raise UserError(f"compress ratio must be positive, got {self.ratio}")

    @property
    def label(self):
        return f"CSA2 KV source r={self.ratio} d={self.dim} + index keys d={self.index_dim}"

    def tensors(self):
        p, d, h = self.prefix, self.dim, self.hidden
        out = [Tensor(f"{p}.compressor.wkv.weight", (d, h), stored="bf16")]
        if self.ratio > 1:
            out.append(Tensor(f"{p}.compressor.wgate.weight", (d, h), stored="bf16"))
        return tuple(out + [Tensor(f"{p}.compressor.norm.weight", (d,), "vector"),
                            Tensor(f"{p}.indexer.wk.weight", (self.index_dim, d), stored="bf16"),
                            Tensor(f"{p}.indexer.k_norm.weight", (self.index_dim,), "vector")])

    def entry_values(self):
        return self.dim + self.index_dim

    def kv_bytes_per_token(self, kv_dtype, mla="absorbed"):
        """Bytes of one entry and its index key (one per r tokens: see kv_tokens)."""
        return kv_dtype.for_cache("entry").nbytes_flat(self.dim) + kv_dtype.for_cache("index").nbytes_flat(self.index_dim)

    def kv_tokens(self, context):
        return context // self.ratio

    def state_bytes(self, kv_dtype):
        """r > 1: the open window's kv and score rows, 2 x r x d fp32; r = 1 pools nothing."""
        return 2 * self.ratio * self.dim * 4 if self.ratio > 1 else 0

    def kv_formula(self, kv_dtype, mla="absorbed"):
        state = (f" + state 2 x {self.ratio} x {self.dim} fp32 = {self.state_bytes(kv_dtype):,} B per request"
                 if self.ratio > 1 else "")
        entry, key = kv_dtype.for_cache("entry"), kv_dtype.for_cache("index")
        return (f"CSA2 source: one entry of {self.dim} values ({entry.name}) + one index key of {self.index_dim} "
                f"({key.name}) = {self.kv_bytes_per_token(kv_dtype):,} B per {self.ratio} token"
                f"{'s' if self.ratio > 1 else ''} (floor(context/{self.ratio}) entries), read by every "
                f"layer sharing it{state}")

    def history_breakpoints(self, lo, hi):
        """An entry is made when (h + 1) mod r = 0; the state is read from history 1 on."""
        r = self.ratio
        points = {1} if lo < 1 <= hi and r > 1 else set()
        if r > 1:
            points.update(h for k in range(lo // r * r, hi + r + 1, r) for h in (k - 1, k) if lo < h <= hi and h > 0)
        return tuple(sorted(points))

    def history_period(self):
        return self.ratio if self.ratio > 1 else None

    def shard(self, tp, ep=1):
        """Replicated (plain Linear layers in the reference, like V4's compressor)."""
        return self

    def projection_ops(self, w):
        t = self.tensors()
        n = w.positions
        out = [gemm(w, f"{self.prefix}.compressor.wkv", n, t[0], saves_input=False)]
        if self.ratio > 1:
            out.append(gemm(w, f"{self.prefix}.compressor.wgate", n, t[1], saves_input=False))
        return tuple(out)

    def ops(self, w):
        if w.replay:   # CED: the decoder's source compresses the encoder's output at every prompt position
            w = w.replace(tokens=w.history + w.tokens, history=0, replay=False)
        out = list(history_free_rows(self, w, "projections", lambda: self.projection_ops(w)))
        b, hist, t, r, d = w.batch, w.history, w.tokens, self.ratio, self.dim
        made = b * entries_made(hist, t, r)
        norm, wk, k_norm = self.tensors()[-3:]
        state = b * self.state_bytes(w.kv_dtype)
        pool = POOL_FLOPS * r * d if r > 1 else 0
        out.append(Op(f"{self.prefix}.compressor.pool", "vector",
                      f"{made} entries x [{r},{d}]" + (" softmax-pool" if r > 1 else "") + ", norm, rope",
                      vector_flops=made * (pool + VECTOR_FLOPS["rmsnorm"] * d + VECTOR_FLOPS["rope"] * self.rope_dim),
                      weight_read=w.weight_bytes(norm),
                      act_read=(2 if r > 1 else 1) * 4 * w.positions * d,
                      kv_read=state if hist else 0, kv_write=made * w.kv_dtype.for_cache("entry").nbytes_flat(d) + state,
                      kind="elementwise", weight=norm.name, saved_bytes=(2 if r > 1 else 1) * 4 * w.positions * d))
        out.append(gemm(w, f"{self.prefix}.indexer.wk", made, wk, shape=f"{made} entries x [{d},{self.index_dim}]"))
        out.append(rmsnorm(w, f"{self.prefix}.indexer.k_norm", made, k_norm, replicated=False).replace(
            kv_write=made * w.kv_dtype.for_cache("index").nbytes_flat(self.index_dim)))
        return out


class CandidateIndexer(Block):
    """The indexer of an index source layer: scores its source's index keys, keeps top-k."""
    hidden: int
    q_lora: int
    heads: int          # index_n_heads
    dim: int            # index_head_dim
    rope_dim: int
    ratio: int          # the source's compress ratio
    cap: int = 0        # candidate pool size (candidate_topk_blocks x block size); 0: every key
    selects_pool: bool = False   # the candidate source layer: selects the pool for the later layers
    prefix: str = "attn.indexer"
    cache_kinds = ("index",)

    @property
    def label(self):
        scope = f", within {self.cap:,} candidates" if self.cap else ""
        return f"CSA2 indexer {self.heads}x{self.dim}" + scope + (" (selects the pool)" if self.selects_pool else "")

    def tensors(self):
        p = self.prefix
        return (Tensor(f"{p}.wq_b.weight", (self.heads * self.dim, self.q_lora)),
                Tensor(f"{p}.weights_proj.weight", (self.heads, self.hidden), stored="bf16"))

    def history_breakpoints(self, lo, hi):
        """Keys seen min(cap, floor((h+1)/r)) (no cap: floor((h+1)/r), linear when r = 1)."""
        if not self.cap and self.ratio == 1:
            return ()
        return _sparse_breakpoints(self.ratio, self.cap, lo, hi)

    def history_period(self):
        return self.ratio if self.ratio > 1 else None

    def history_segments(self, lo, hi):
        """Once every query's keys exceed the pool (h = r cap - 1) the pairs stop growing."""
        if not self.cap or self.ratio == 1:
            return ()
        s = self.ratio * self.cap - 1
        return (s,) if lo < s <= hi else ()

    def shard(self, tp, ep=1):
        """wq_b and weights_proj column-parallel over the indexer heads (scores all-reduced)."""
        if self.heads % tp:
            raise UserError(f"TP {tp} does not divide the {self.heads} heads of {self.label}")
        return self.replace(heads=self.heads // tp)

    def projection_ops(self, w):
        wq_b, weights = self.tensors()
        n, hd = w.positions, self.heads * self.dim
        return (gemm(w, f"{self.prefix}.wq_b", n, wq_b),
                elementwise(w, f"{self.prefix}.rope_hadamard", n * hd, 0, shape=f"[{n},{self.heads},{self.dim}]",
                            kind="rope").replace(
                    vector_flops=n * self.heads * (VECTOR_FLOPS["rope"] * self.rope_dim
                                                   + self.dim * int(math.log2(self.dim)))),
                gemm(w, f"{self.prefix}.weights_proj", n, weights, saves_input=False))

    def ops(self, w):
        out = list(history_free_rows(self, w, "projections", lambda: self.projection_ops(w)))
        b, hist, t, r = w.batch, w.history, w.tokens, self.ratio
        visible = (hist + t) // r
        cap = self.cap or None
        pairs = compressed_pairs(hist, t, r, cap)
        read = min(visible, t * self.cap) if self.cap else visible
        key = w.kv_dtype.for_cache("index").nbytes_flat(self.dim)
        act = w.act_dtype
        out.append(Op(f"{self.prefix}.scores", "attention",
                      f"{b}x{self.heads}x[{t},{self.dim}] . {read} keys" + (f" (pool {self.cap})" if self.cap else ""),
                      matrix_flops=2 * b * self.heads * self.dim * pairs,
                      rect_flops=2 * b * self.heads * self.dim * t * visible,
                      vector_flops=b * pairs * (INDEX_FLOPS * self.heads + TOPK_FLOPS),
                      act_read=act.nbytes_flat(w.positions * self.heads * (self.dim + 1)),
                      kv_read=b * read * key, act_write=4 * w.positions,
                      compute=w.compute_dtype.name, kind="attention",
                      saved_bytes=act.nbytes_flat(w.positions * self.heads * self.dim) + b * read * key))
        if self.selects_pool:
            out.append(Op(f"{self.prefix}.candidate_pool", "vector", f"{b}x{pairs} scores -> block maxima, top blocks",
                          vector_flops=b * pairs * TOPK_FLOPS, act_write=4 * w.positions, kind="routing"))
        return out


class SharedSparseAttention(Block):
    """A layer's attention over k entries selected from its source's shared cache."""
    heads: int
    dim: int
    ratio: int
    topk: int
    source: int          # the KV source layer (for the label)
    cache_kinds = ("entry",)

    @property
    def label(self):
        return f"top-{self.topk} of layer {self.source}'s r={self.ratio} cache"

    def history_breakpoints(self, lo, hi):
        return _sparse_breakpoints(self.ratio, self.topk, lo, hi)

    def history_period(self):
        return self.ratio if self.ratio > 1 else None

    def history_segments(self, lo, hi):
        if self.ratio == 1:
            return ()
        s = self.ratio * self.topk - 1
        return (s,) if lo < s <= hi else ()

    def shard(self, tp, ep=1):
        if self.heads % tp:
            raise UserError(f"TP {tp} does not divide the {self.heads} heads attending {self.label}")
        return self.replace(heads=self.heads // tp)

    def ops(self, w):
        hist, t, r = w.history, w.tokens, self.ratio
        pairs = compressed_pairs(hist, t, r, self.topk)
        read = min((hist + t) // r, t * self.topk)
        return core_ops(w, ".shared", self.heads, self.dim, pairs, read,
                        w.kv_dtype.for_cache("entry").nbytes_flat(self.dim), saved_q=False)


class Engram(Block):
    """Engram conditional memory of one layer: hashed n-gram rows into the m streams."""
    hidden: int
    streams: int
    rows: int            # engram_num_embeddings of this layer
    orders: int          # max_ngram - 1 (n-grams of 2 .. max_ngram)
    heads: int           # engram_n_heads
    head_dim: int        # engram_head_dim
    table_format: str    # the table's checkpoint format
    token_ids: bool = False   # this layer keeps the request's token ids (the first Engram layer)
    prefix: str = "engram"
    tp: int = 1          # placement (set by `shard`): the table's rows are split over tp ranks

    @property
    def label(self):
        return f"Engram {self.rows:,} x {self.head_dim} table, {self.orders * self.heads} rows per token"

    @property
    def lookups(self):
        return self.orders * self.heads

    def tensors(self):
        p, m, d = self.prefix, self.streams, self.hidden
        return (Tensor(f"{p}.embed.weight", (self.rows, self.head_dim), "embedding", stored=self.table_format),
                Tensor(f"{p}.wkv.weight", ((m + 1) * d, self.lookups * self.head_dim)),
                Tensor(f"{p}.q_weight", (m, d), "vector"),
                Tensor(f"{p}.k_weight", (m, d), "vector"))

    def active_params(self):
        """A token uses its looked-up rows of the table, not all of it."""
        table, *rest = self.tensors()
        return self.lookups * self.head_dim + sum(x.params for x in rest)

    def kv_bytes_per_token(self, kv_dtype, mla="absorbed"):
        return TOKEN_ID_BYTES if self.token_ids else 0

    def kv_formula(self, kv_dtype, mla="absorbed"):
        if not self.token_ids:
            return ""
        return f"Engram n-gram hashing: the request's token ids, int64 = {TOKEN_ID_BYTES} B per token"

    def history_breakpoints(self, lo, hi):
        """The ids read for the hash: min(h, orders), linear to h = orders."""
        return (self.orders,) if self.token_ids and lo < self.orders <= hi else ()

    def shard(self, tp, ep=1):
        """The table's rows split over TP (ceil(rows / tp) per rank: the last one padded, as
        vLLM's row-parallel Engram table); wkv and the gate weights replicated. Each rank
        gathers the looked-up rows it holds: ceil(T x lookups / tp) rows (uniform hashes)."""
        if self.tp != 1:
            raise UserError(f"{self.label} is already a shard")
        return self.replace(rows=-(-self.rows // tp), tp=tp) if tp > 1 else self

    def ops(self, w):
        table, wkv, q_w, k_w = self.tensors()
        n, m, d = w.positions, self.streams, self.hidden
        act = w.act_dtype
        width = self.lookups * self.head_dim
        row = w.weight_bytes(table.replace(shape=(1, self.head_dim)))
        ids_read = w.batch * min(w.history, self.orders) * TOKEN_ID_BYTES if self.token_ids else 0
        gate_per, gate_const = ENGRAM_GATE_FLOPS
        gathered = -(-n * self.lookups // self.tp)
        return [Op(f"{self.prefix}.lookup", "memory", f"{gathered} rows of [{self.rows},{self.head_dim}]",
                   weight_read=gathered * row, act_write=act.nbytes_flat(n * width),
                   kv_read=ids_read, kv_write=n * TOKEN_ID_BYTES if self.token_ids else 0,
                   weight=table.name, kind="memory"),
                gemm(w, f"{self.prefix}.wkv", n, wkv),
                Op(f"{self.prefix}.gate", "vector", f"[{n},{m},{d}] keys . streams -> sigmoid x value",
                   vector_flops=n * m * (gate_per * d + gate_const),
                   weight_read=w.weight_bytes(q_w) + w.weight_bytes(k_w),
                   act_read=act.nbytes_flat(n * (m + 1) * d) + act.nbytes_flat(n * m * d),
                   act_write=act.nbytes_flat(n * m * d), kind="elementwise",
                   saved_bytes=act.nbytes_flat(n * (m + 1) * d) + act.nbytes_flat(n * m * d))]

"""DeepSeek-V4 attention: sliding window + compressed KV (+ top-k sparse selection).

Source: deepseek-ai/DeepSeek-V4-Flash:inference/model.py (Attention, Compressor,
Indexer), pinned with its sha256 in bojieli/ai-infra-book:calculations/configs/sources.lock.json.

One layer of compress ratio r (config `compress_ratios[i]`) is three or four blocks:

- `WindowAttention`: q = wq_b(q_norm(wq_a(x))) [H heads x d], a weightless RMS
  norm per head, RoPE on the last rd dims; one shared K=V latent row
  kv = kv_norm(wkv(x)) [d] per token (MQA, K and V the same row), cached for the
  last W = sliding_window tokens; attention with one learned sink logit per head;
  inverse RoPE on the output, then the grouped low-rank output
  wo_b(wo_a_g(o_g)) over G = o_groups groups of H*d/G values each.
- `Compressor` (r > 0): every r consecutive tokens pooled into one cached entry
  of d values: wkv and wgate [c*d, D] on every token (c = 2 when r = 4: an
  overlapping window, else 1), score + ape [r, c*d], a softmax over the window's
  c*r rows per channel, the weighted sum, RMSNorm and RoPE. State per request:
  the open window's kv and score rows, 2 x (c*r) x (c*d) fp32 values.
- `Indexer` (r = 4 only; its own `Compressor` of width d_I = index_head_dim
  builds its key cache): q_I = wq_b(qr) [H_I x d_I] (qr = the query latent),
  RoPE, a Hadamard rotation; per query p and visible entry s:
  score = sum_h relu(q_I,h . k_s) * w_h(x), w = weights_proj(x) [H_I]; the top k =
  index_topk entries are selected.

Counting rules for one request with H cached and T new tokens (queries
p = H .. H+T-1; a multiply-add is 2 FLOPs):
- window pairs P_w = sum_{x=H+1}^{H+T} min(x, W); compressed entries a query
  sees n(p) = floor((p + 1) / r); with the indexer it attends min(k, n(p)) of
  them. P_c = sum_{x=H+1}^{H+T} floor(x / r) = F(H+T) - F(H) with
  F(n) = sum_{x=1}^{n} floor(x/r) = r q (q - 1)/2 + q (n - q r + 1), q = floor(n/r);
  P_k = sum_{x=H+1}^{H+T} min(k, floor(x/4)) = F_k(H+T) - F_k(H),
  F_k(n) = F(min(n, 4k - 1)) + k * max(0, n - 4k + 1).
- attention core: 2*H_q*d FLOPs per pair for QK^T and 2*H_q*d for PV (V is the
  same latent row), 5 vector FLOPs per score (softmax) and 4 per (query, head)
  row for the sink; r = 128 layers attend all n(p) compressed entries (pairs
  P_c), r = 4 layers the k selected (pairs P_k); the kernel gathers the selected
  rows, so the rectangular count equals the causal one.
- indexer scores: 2*H_I*d_I FLOPs per (query, visible entry) pair, P_c pairs at
  r = 4 (rectangular: T x floor((H+T)/4), what the reference's einsum computes before
  its causal mask), plus 3*H_I vector FLOPs per pair (relu, weight, head sum) and 1 per pair
  for the top-k selection; the Hadamard rotation d_I*log2(d_I) per head and token.
- pooling: per new entry (E = floor((H+T)/r) - floor(H/r) per request)
  7*c*r*d vector FLOPs (softmax 5 and weighted sum 2 per pooled value), RMSNorm
  4*d and RoPE 3*rd; score + ape 1 FLOP per projected value and token.
Bytes: the window keys read per request are min(H+T, W-1+T) rows of d (the new
ones excepted with --new-kv on-chip); an r = 128 layer reads its floor((H+T)/r)
entries, an r = 4 layer min(floor((H+T)/4), T*k) (every entry some query
selects, at most all of them); the indexer reads its floor((H+T)/4) key rows of
d_I. Entries and states are written in the cache format (state fp32).
Cache per request after C tokens: W-window min(C, W) rows of d, floor(C/r)
compressed rows of d, floor(C/4) indexer rows of d_I (r = 4 layers), and the
compressor states (fixed). `kv` reports a compressed block's bytes per cached
entry (one per r tokens) as its 'bytes per token'.
FP8 and FP4 simulation (act_quant, fp4_act_quant) on cached rows is a
numerics step and is not counted; the cache format is --kv-dtype.
"""

import math

from ..arch import Block, Tensor, history_free_rows
from ..errors import UserError
from ..ops import FP32, STAT_BYTES, VECTOR_FLOPS, Op, elementwise, gemm, rmsnorm, train_adds, train_count, train_rule
from .attention import keys_touched, sum_min

POOL_FLOPS = 7      # per pooled value: softmax (5) and the weighted sum (multiply, add)
INDEX_FLOPS = 3     # per (query, entry, indexer head): relu, * weight, + into the head sum
TOPK_FLOPS = 1      # per (query, candidate entry): one comparison of the top-k selection


def floor_sum(n, r):
    """F(n) = sum_{x=1}^{n} floor(x / r) = r q (q-1)/2 + q (n - q r + 1), q = floor(n / r)."""
    if n <= 0:
        return 0
    q = n // r
    return r * q * (q - 1) // 2 + q * (n - q * r + 1)


def capped_floor_sum(n, r, cap):
    """sum_{x=1}^{n} min(cap, floor(x / r)) = F(min(n, r cap - 1)) + cap * max(0, n - r cap + 1)."""
    if cap is None:
        return floor_sum(n, r)
    return floor_sum(min(n, r * cap - 1), r) + cap * max(0, n - r * cap + 1)


def compressed_pairs(history, tokens, ratio, cap=None):
    """sum over the T queries p = H..H+T-1 of min(cap, floor((p + 1) / r))."""
    return capped_floor_sum(history + tokens, ratio, cap) - capped_floor_sum(history, ratio, cap)


def entries_made(history, tokens, ratio):
    """Compressed entries one request's pass adds: floor((H+T)/r) - floor(H/r)."""
    return (history + tokens) // ratio - history // ratio


INDEX_BYTES = 4   # the book's int32 slot indices of the attention core


def train_sink_softmax(slots, rows, heads, positions):
    """The book's training count of the sliding-window core's softmax with one sink logit per
    head (bojieli/ai-infra-book:calculations/results/v4-attention-training-window128.md,
    -window129-batch2.md): P valid (query, key) slots over Q = heads x positions rows; forward per
    row of K slots the scale K, then over the K + 1 logits with the sink the max (K compares), the
    subtraction K + 1, K + 1 exps, the sum K and the division K + 1: 4P + 2Q, P + Q exps, P max
    compares; backward the softmax and scale 5K per row (5P) and the sink gradient summed over
    the positions, heads x (positions - 1); keeps the FP32 probabilities and sink probabilities."""
    return train_count(4 * slots + 2 * rows, 5 * slots + heads * (positions - 1),
                       saved=FP32 * (slots + rows), exp=slots + rows, max_compare=slots)


def train_shared_kv_join(slots, dim, saved):
    """The book's training count at PV of the core over a shared K = V row: each slot's local key
    and value gradients joined, then scattered into dKV, 2 d adds per slot (P slots); keeps `saved`
    bytes (the int32 slot indices)."""
    return train_count(0, 2 * slots * dim, saved=saved)


def train_unweighted_rms(rows, width):
    """The book's training count of a weightless RMS norm (V4's per-head q_rms; results/
    v4-attention-projections-*.md): forward per row of D squares, D - 1 adds, the mean and the
    epsilon, D multiplies: 3D + 1 with one rsqrt; backward dx = r (g - z sum(g z) / D): 5D (no
    weight gradient); keeps z and r in FP32."""
    return train_count(rows * (3 * width + 1), 5 * rows * width, saved=FP32 * (rows * width + rows), rsqrt=rows)


def train_ape(rows, width, ratio):
    """The book's training count of a compressor's score + APE (results/v4-compressor128-*.md,
    v4-overlap-*.md): R W adds forward; backward the APE gradient, each of its `ratio` rows the sum
    of the R token rows that share it, W (R - min(R, ratio)) adds; keeps the projected rows in FP32."""
    return train_count(rows * width, width * (rows - min(rows, ratio)), saved=FP32 * rows * width)


def train_pool(batch, tokens, ratio, overlap, dim, rope_dim):
    """The book's training count of a compressor's pooling from position 0 (fresh state), E entries
    of S = c r slots (c = 2 overlapping) over d channels: forward per entry and channel the softmax
    over S slots and the weighted sum 5S - 2 (S exps, S - 1 max compares), the entry's RMSNorm
    4d + 1 (one rsqrt) and RoPE 3 r_d; backward per entry and channel 6S - 1, the RMSNorm
    6Ed + (2E - 1) d, RoPE 3 E r_d. Overlapping (c = 2): the slots' gradients scattered into the
    projected rows, 2d per slot but the first block's padded half (2d (E S - B r)), and the
    returned state's kv and score gradients (the last complete block and the tail, 2 c d per
    channel row). Keeps the probabilities and the norm's z and r in FP32. (No rule for an
    unoverlapped compressor with a tail: the book's files have none; see Compressor.ops.)"""
    per, tail = divmod(tokens, ratio)
    e, slots, d = batch * per, overlap * ratio, dim
    fwd = e * d * (5 * slots - 2) + e * (4 * d + 1) + 3 * e * rope_dim
    bwd = e * d * (6 * slots - 1) + (6 * e * d + (2 * e - 1) * d if e else 0) + 3 * e * rope_dim
    if overlap == 2:
        bwd += 2 * d * (e * slots - batch * ratio) if per else 0
        bwd += 2 * overlap * d * batch * ((ratio if per else 0) + tail)
    return train_count(fwd, bwd, saved=FP32 * (e * d * slots + e * d + e),
                       exp=e * d * slots, max_compare=e * d * (slots - 1), rsqrt=e)


def train_core_inputs(saved):
    """The book's training count at QK^T of the core: no scalar work; keeps Q and the shared KV
    rows in FP32 (`saved` bytes)."""
    return train_count(0, 0, saved=saved)


def core_ops(w, tag, heads, dim, pairs, rows_read, entry_bytes, sink_rows=0, sink=None, saved_q=True,
             window_slots=0):
    """QK^T, softmax and PV of `pairs` (query, key) pairs per request over shared
    K=V rows of `dim` values, `rows_read` rows read per request (the kernel loads
    each row once for both products). `window_slots`: the sliding window's index slots per query,
    for the book's training count of the window core with its sink (train --scalar-count book)."""
    n, b, t = w.positions, w.batch, w.tokens
    act = w.act_dtype
    q = act.nbytes_flat(n * heads * dim)
    book = window_slots and sink_rows
    slots = b * heads * pairs
    out = [Op(f"attn_qk{tag}", "attention", f"{b}x{heads}x[{t},{dim}] . {rows_read} rows",
              matrix_flops=2 * b * heads * dim * pairs, rect_flops=2 * b * heads * dim * pairs,
              act_read=q, kv_read=b * rows_read * entry_bytes, compute=w.compute_dtype.name,
              kind="attention", saved_bytes=(q if saved_q else 0) + b * rows_read * entry_bytes,
              book_train=train_rule(train_core_inputs, FP32 * (n * heads * dim + b * rows_read * dim))
              if book else None),
           Op(f"softmax{tag}", "vector", f"{b}x{heads}x{pairs} pairs" + (f" + {t} sink logits" if sink_rows else ""),
              vector_flops=VECTOR_FLOPS["softmax"] * b * heads * pairs + VECTOR_FLOPS["sink"] * sink_rows,
              weight_read=w.weight_bytes(sink) if sink is not None else 0,
              weight=sink.name if sink is not None else "", kind="softmax",
              saved_bytes=b * heads * t * STAT_BYTES,
              book_train=train_rule(train_sink_softmax, slots, sink_rows, heads, n) if book else None),
           Op(f"attn_pv{tag}", "attention", f"{b}x{heads}x[{t},{rows_read}]x[{dim}]",
              matrix_flops=2 * b * heads * dim * pairs, rect_flops=2 * b * heads * dim * pairs,
              act_write=q, compute=w.compute_dtype.name, kind="attention",
              book_train=train_rule(train_shared_kv_join, slots, dim, INDEX_BYTES * n * window_slots)
              if book else None)]
    return out


class WindowAttention(Block):
    hidden: int
    heads: int
    head_dim: int            # d: the shared K=V latent row and each query head
    rope_dim: int
    q_lora: int
    o_groups: int
    o_lora: int
    window: int
    prefix: str = "attn"
    kind = "V4 sliding-window MQA + compressed KV"
    cache_kinds = ("window",)

    def _check(self):
        if self.heads % self.o_groups:
            raise UserError(f"o_groups {self.o_groups} does not divide the {self.heads} attention heads")

    @property
    def label(self):
        return f"V4 attention {self.heads}x{self.head_dim} MQA, window {self.window}, sinks"

    def tensors(self):
        p, h, d, hq = self.prefix, self.hidden, self.head_dim, self.heads * self.head_dim
        return (Tensor(f"{p}.attn_sink", (self.heads,), "vector", stored="fp32"),
                Tensor(f"{p}.wq_a.weight", (self.q_lora, h)),
                Tensor(f"{p}.q_norm.weight", (self.q_lora,), "vector"),
                Tensor(f"{p}.wq_b.weight", (hq, self.q_lora)),
                Tensor(f"{p}.wkv.weight", (d, h)),
                Tensor(f"{p}.kv_norm.weight", (d,), "vector"),
                Tensor(f"{p}.wo_a.weight", (self.o_groups * self.o_lora, hq // self.o_groups)),
                Tensor(f"{p}.wo_b.weight", (h, self.o_groups * self.o_lora)))

    def kv_bytes_per_token(self, kv_dtype, mla="absorbed"):
        return kv_dtype.for_cache("window").nbytes_flat(self.head_dim)

    def kv_tokens(self, context):
        return min(context, self.window)

    def kv_formula(self, kv_dtype, mla="absorbed"):
        return (f"window: one shared K=V row of {self.head_dim} values ({kv_dtype.for_cache('window').name}) = "
                f"{self.kv_bytes_per_token(kv_dtype):,} B per token, for at most W = {self.window} tokens")

    def history_breakpoints(self, lo, hi):
        """A decode query sees min(H + 1, W) window keys: linear to W - 1, flat after."""
        return (self.window,) if lo < self.window <= hi else ()

    def shard(self, tp, ep=1):
        """As the reference's TP: wq_b, wo_a (column-parallel) and the sinks split by
        head and output group; wq_a, wkv, their norms and the window cache replicated
        (one KV row); wo_b row-parallel. TP must divide the heads and o_groups."""
        if self.heads % tp or self.o_groups % tp:
            raise UserError(f"TP {tp} must divide the {self.heads} heads and the {self.o_groups} "
                            f"output groups of {self.label}")
        return self.replace(heads=self.heads // tp, o_groups=self.o_groups // tp)

    def projection_ops(self, w):
        t = {x.name.split(".", 1)[1]: x for x in self.tensors()}
        n, hq, d = w.positions, self.heads * self.head_dim, self.head_dim
        act = w.act_dtype
        # the book's training count of the rotations: 3 per rotated value (6 per pair) each way
        rotated_in, rotated_out = 3 * n * (self.heads + 1) * self.rope_dim, 3 * n * self.heads * self.rope_dim
        pre = (gemm(w, "wq_a", n, t["wq_a.weight"], replicated=True),
               rmsnorm(w, "q_norm", n, t["q_norm.weight"], replicated=False),
               gemm(w, "wq_b", n, t["wq_b.weight"]),
               elementwise(w, "q_rms", n * hq, VECTOR_FLOPS["l2norm"], shape=f"[{n},{self.heads},{d}]",
                           kind="norm", saved=act.nbytes_flat(n * hq) + n * self.heads * STAT_BYTES,
                           counted={"book_train": train_rule(train_unweighted_rms, n * self.heads, d)}),
               gemm(w, "wkv", n, t["wkv.weight"], saves_input=False),
               rmsnorm(w, "kv_norm", n, t["kv_norm.weight"], replicated=False),
               elementwise(w, "rope", n * (self.heads + 1) * self.rope_dim, VECTOR_FLOPS["rope"],
                           shape=f"[{n},{self.heads}+1,{self.rope_dim}]", kind="rope",
                           counted={"book_train": train_rule(train_adds, rotated_in, rotated_in)}),
               Op("kv_store", "memory", f"[{n},{d}]", act_read=act.nbytes_flat(n * d),
                  kv_write=n * w.kv_dtype.for_cache("window").nbytes_flat(d), kind="memory"))
        wo_a = gemm(w, "wo_a", n, t["wo_a.weight"],
                    shape=f"{self.o_groups} groups x [{n},{hq // self.o_groups}]x[{hq // self.o_groups},{self.o_lora}]")
        post = (elementwise(w, "rope_inverse", n * self.heads * self.rope_dim, VECTOR_FLOPS["rope"],
                            shape=f"[{n},{self.heads},{self.rope_dim}]", kind="rope",
                            counted={"book_train": train_rule(train_adds, rotated_out, rotated_out)}),
                wo_a.replace(act_read=act.nbytes_flat(n * hq), saved_bytes=act.nbytes_flat(n * hq)),
                gemm(w, "wo_b", n, t["wo_b.weight"]))
        return pre, post

    def ops(self, w):
        pre, post = history_free_rows(self, w, "projections", lambda: self.projection_ops(w))
        hist, t = (0 if w.replay else w.history), w.tokens   # CED's replay: the window restarts at the pass
        pairs = sum_min(hist + 1, hist + t, self.window)
        read = keys_touched(hist, t, self.window) - w.new_keys_on_chip
        sink = self.tensors()[0]
        core = core_ops(w, "", self.heads, self.head_dim, pairs, read,
                        w.kv_dtype.for_cache("window").nbytes_flat(self.head_dim),
                        sink_rows=w.batch * self.heads * t, sink=sink, window_slots=self.window)
        return [*pre, *core, *post]


class Compressor(Block):
    hidden: int
    ratio: int
    dim: int                 # d of one compressed entry (head_dim, or index_head_dim)
    rope_dim: int
    heads: int = 0           # query heads attending to every visible entry (r = 128); 0: none here
    prefix: str = "attn.compressor"

    def _check(self):
        if self.ratio < 1:
            raise UserError(f"compress ratio must be positive, got {self.ratio}")

    @property
    def overlap(self):
        return 2 if self.ratio == 4 else 1

    @property
    def cache_kind(self):
        """An indexer's compressor keeps index keys; the attention's, compressed entries."""
        return "index" if self.prefix.endswith("indexer.compressor") else "entry"

    @property
    def cache_kinds(self):
        return (self.cache_kind,)

    @property
    def label(self):
        return f"compressor r={self.ratio} d={self.dim}" + (" (overlapping)" if self.overlap == 2 else "")

    def tensors(self):
        p, c = self.prefix, self.overlap * self.dim
        return (Tensor(f"{p}.ape", (self.ratio, c), "vector", stored="fp32"),
                Tensor(f"{p}.wkv.weight", (c, self.hidden), stored="bf16"),
                Tensor(f"{p}.wgate.weight", (c, self.hidden), stored="bf16"),
                Tensor(f"{p}.norm.weight", (self.dim,), "vector"))

    def kv_bytes_per_token(self, kv_dtype, mla="absorbed"):
        """Bytes of one compressed entry (one per r tokens: see kv_tokens)."""
        return kv_dtype.for_cache(self.cache_kind).nbytes_flat(self.dim)

    def kv_tokens(self, context):
        """Entries held after `context` tokens: floor(context / r)."""
        return context // self.ratio

    def state_bytes(self, kv_dtype):
        """The open window's kv and score rows: 2 x (c*r) x (c*d) fp32."""
        c = self.overlap
        return 2 * (c * self.ratio) * (c * self.dim) * 4

    def kv_formula(self, kv_dtype, mla="absorbed"):
        return (f"compressed: one entry of {self.dim} values ({kv_dtype.for_cache(self.cache_kind).name}) = "
                f"{self.kv_bytes_per_token(kv_dtype):,} B per {self.ratio} tokens (floor(context/{self.ratio}) "
                f"entries) + state 2 x {self.overlap * self.ratio} x {self.overlap * self.dim} fp32 = "
                f"{self.state_bytes(kv_dtype):,} B per request")

    def history_breakpoints(self, lo, hi):
        """A decode step at history h pools an entry when (h + 1) mod r = 0 and sees
        floor((h + 1) / r) entries: new pieces at h = r k - 1 and r k; the state is
        read from history 1 on."""
        r = self.ratio
        points = {1} if lo < 1 <= hi else set()
        points.update(h for k in range(lo // r * r, hi + r + 1, r) for h in (k - 1, k) if lo < h <= hi and h > 0)
        return tuple(sorted(points))

    def history_period(self):
        return self.ratio

    def shard(self, tp, ep=1):
        """Replicated (plain Linear in the reference); the query heads that attend
        its entries split with the attention's."""
        if self.heads % tp:
            raise UserError(f"TP {tp} does not divide the {self.heads} heads attending {self.label}")
        return self.replace(heads=self.heads // tp)

    def book_rules(self, w):
        """Whether the book's training rule train_pool covers this compressor's pass: the
        attention's compressor from position 0, overlapping, or unoverlapped without a tail (its
        score_ape rule, history-free like the row, holds for the attention's compressor)."""
        return (self.cache_kind == "entry" and not w.history
                and (self.overlap == 2 or not w.tokens % self.ratio))

    def projection_ops(self, w):
        t = {x.name.rsplit(".", 2)[-2] if x.name.endswith(".weight") else "ape": x for x in self.tensors()}
        n, c = w.positions, self.overlap * self.dim
        return (gemm(w, f"{self.prefix}.wkv", n, t["wkv"], saves_input=False),
                gemm(w, f"{self.prefix}.wgate", n, t["wgate"], saves_input=False),
                elementwise(w, f"{self.prefix}.score_ape", n * c, 1, weight=t["ape"],
                            shape=f"[{n},{c}] + ape [{self.ratio},{c}]",
                            counted={"book_train": train_rule(train_ape, n, c, self.ratio)}
                            if self.cache_kind == "entry" else None))

    def ops(self, w):
        out = list(history_free_rows(self, w, "projections", lambda: self.projection_ops(w)))
        b, hist, t, r, d = w.batch, w.history, w.tokens, self.ratio, self.dim
        rows = self.overlap * r
        made = b * entries_made(hist, t, r)
        entry = w.kv_dtype.for_cache(self.cache_kind).nbytes_flat(d)
        state = b * self.state_bytes(w.kv_dtype)
        norm = self.tensors()[3]
        fp32 = 4
        out.append(Op(f"{self.prefix}.pool", "vector", f"{made} entries x [{rows},{d}] softmax-pool, norm, rope",
                      vector_flops=made * (POOL_FLOPS * rows * d + VECTOR_FLOPS["rmsnorm"] * d
                                           + VECTOR_FLOPS["rope"] * self.rope_dim),
                      weight_read=w.weight_bytes(norm),
                      act_read=2 * fp32 * w.positions * self.overlap * d,
                      kv_read=state if hist else 0, kv_write=made * entry + state,
                      kind="elementwise", weight=norm.name,
                      saved_bytes=2 * fp32 * w.positions * self.overlap * d,
                      book_train=train_rule(train_pool, b, t, r, self.overlap, d, self.rope_dim)
                      if self.book_rules(w) else None))
        if self.heads:
            pairs = compressed_pairs(hist, t, r)
            read = (hist + t) // r - (entries_made(hist, t, r) if w.new_kv == "on-chip" else 0)
            out += core_ops(w, ".compressed", self.heads, d, pairs, read, entry, saved_q=False)
        return out


class Indexer(Block):
    hidden: int
    q_lora: int
    heads: int               # index_n_heads
    dim: int                 # index_head_dim
    rope_dim: int
    topk: int                # index_topk
    attn_heads: int          # the attention's query heads (they attend the selected entries)
    attn_dim: int            # the attention's head_dim (width of a selected entry)
    ratio: int = 4
    prefix: str = "attn.indexer"
    cache_kinds = ("index", "entry")

    @property
    def label(self):
        return f"indexer {self.heads}x{self.dim} top-{self.topk}"

    def tensors(self):
        p = self.prefix
        return (Tensor(f"{p}.wq_b.weight", (self.heads * self.dim, self.q_lora)),
                Tensor(f"{p}.weights_proj.weight", (self.heads, self.hidden), stored="bf16"))

    def history_breakpoints(self, lo, hi):
        """Scores over floor((h + 1) / 4) entries: a new piece at every h = 4k - 1."""
        r = self.ratio
        return tuple(h for h in range(lo // r * r + r - 1, hi + 1, r) if lo < h <= hi)

    def history_period(self):
        return self.ratio

    def history_segments(self, lo, hi):
        """From h = 4k - 1 on (k = index_topk) a query attends k entries whatever the
        history: the per-period drift of the sparse core changes there."""
        s = self.ratio * self.topk - 1
        return (s,) if lo < s <= hi else ()

    def shard(self, tp, ep=1):
        """wq_b and weights_proj column-parallel over the indexer heads (scores
        all-reduced), the attending query heads split with the attention's."""
        if self.heads % tp or self.attn_heads % tp:
            raise UserError(f"TP {tp} must divide the {self.heads} indexer heads and the "
                            f"{self.attn_heads} attention heads of {self.label}")
        return self.replace(heads=self.heads // tp, attn_heads=self.attn_heads // tp)

    def projection_ops(self, w):
        wq_b, weights = self.tensors()
        n, hd = w.positions, self.heads * self.dim
        return (gemm(w, "indexer.wq_b", n, wq_b),
                elementwise(w, "indexer.rope_hadamard", n * hd,
                            0, shape=f"[{n},{self.heads},{self.dim}]", kind="rope").replace(
                    vector_flops=n * self.heads * (VECTOR_FLOPS["rope"] * self.rope_dim
                                                   + self.dim * int(math.log2(self.dim)))),
                gemm(w, "indexer.weights_proj", n, weights, saves_input=False))

    def ops(self, w):
        out = list(history_free_rows(self, w, "projections", lambda: self.projection_ops(w)))
        b, hist, t, r = w.batch, w.history, w.tokens, self.ratio
        visible = (hist + t) // r
        pairs = compressed_pairs(hist, t, r)
        key = w.kv_dtype.for_cache("index").nbytes_flat(self.dim)
        act = w.act_dtype
        out.append(Op("indexer.scores", "attention", f"{b}x{self.heads}x[{t},{self.dim}] . {visible} keys",
                      matrix_flops=2 * b * self.heads * self.dim * pairs,
                      rect_flops=2 * b * self.heads * self.dim * t * visible,
                      vector_flops=b * pairs * (INDEX_FLOPS * self.heads + TOPK_FLOPS),
                      act_read=act.nbytes_flat(w.positions * self.heads * (self.dim + 1)),
                      kv_read=b * visible * key, act_write=4 * w.positions * min(self.topk, max(visible, 1)),
                      compute=w.compute_dtype.name, kind="attention",
                      saved_bytes=act.nbytes_flat(w.positions * self.heads * self.dim) + b * visible * key))
        selected = compressed_pairs(hist, t, r, self.topk)
        read = min(visible, t * self.topk)
        out += core_ops(w, ".selected", self.attn_heads, self.attn_dim, selected, read,
                        w.kv_dtype.for_cache("entry").nbytes_flat(self.attn_dim), saved_q=False)
        return out

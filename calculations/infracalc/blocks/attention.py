"""Softmax attention with grouped KV heads (MHA, GQA, MQA): full, sliding-window
or chunked.

Positions count from 0. Work counted per request with H cached tokens and T
new ones (queries at positions p = H .. H+T-1):
- full: query p sees p + 1 keys (itself and all before it);
- sliding window W (Mistral, Phi-3, Gemma 3 local, GPT-OSS sliding): query p
  sees keys (p - W, p], min(p + 1, W) of them (W counts the query's own key,
  the Hugging Face `sliding_window` convention); pairs
  sum_{x=H+1}^{H+T} min(x, W);
- chunked, chunk C (Llama 4 RoPE layers): query p sees keys
  [floor(p/C)*C, p], (p mod C) + 1 of them; pairs
  S(H+T) - S(H) with S(n) = sum_{p<n} (p mod C + 1)
                        = floor(n/C) * C(C+1)/2 + r(r+1)/2, r = n mod C;
- rectangular pairs (an unmasked dense matmul): T * (H + T);
- QK^T is 2 * heads * head_dim FLOPs per pair, PV 2 * heads * head_dim.
Keys read per request: every key some query sees: H+T (full),
min(H+T, W-1+T) (window), (H mod C) + T (chunked).
The cache keeps 2 * kv_heads * head_dim values per token, for min(context, W)
tokens in a windowed layer and, in a chunked layer, for the tokens of the chunk
holding the latest token: ((context-1) mod C) + 1 (C when context is a
multiple of C; the next token opens a new chunk and needs none of them).
Attention sinks (GPT-OSS): one learned logit per head joins every softmax row.
Logit soft-capping (Gemma 2): every score s becomes c * tanh(s / c) before the
softmax, VECTOR_FLOPS["softcap"] = 3 per pair (divide, tanh, multiply), added
to the softmax row. q/k norms are RMSNorms over head_dim per head, or, with
`qk_norm_full` (OLMo 2), over each token's whole query (heads x head_dim) and
key (kv_heads x head_dim) vectors: the same 4 FLOPs per element, weights of
that width.
Kept for the backward (training, fused kernel): q_proj's input (shared by k and
v), q/k norm inputs and statistics, Q and K (attn_qk), V (attn_pv), one fp32
log-sum-exp per (query, head) row (softmax; no T^2 scores), o_proj's input
(the attention output O) and, with dropout, a 1-byte mask of the output; the
fused kernel regenerates the probability-dropout mask from its RNG seed.
"""


from ..arch import Block, Tensor, history_free_rows
from ..errors import UserError
from ..ops import (STAT_BYTES, VECTOR_FLOPS, Op, book, elementwise, gemm, rmsnorm, saved_inputs,
                   NO_TRAIN_WORK, train_adds, train_rule, train_softmax, with_dropout_mask)


def sum_min(a, b, cap):
    """sum_{x=a}^{b} min(x, cap), in closed form (cap None = no cap)."""
    if b < a:
        return 0
    if cap is None or b <= cap:
        return (a + b) * (b - a + 1) // 2
    if a > cap:
        return cap * (b - a + 1)
    return (a + cap) * (cap - a + 1) // 2 + cap * (b - cap)


def causal_pairs(history, tokens, window=None, chunk=None):
    """Query-key pairs a causal (windowed or chunked) kernel computes for one request."""
    if chunk is not None:
        return chunked_pairs(history, tokens, chunk)
    return sum_min(history + 1, history + tokens, window)


def rectangular_pairs(history, tokens):
    """Pairs an unmasked [T, H+T] score matrix holds for one request."""
    return tokens * (history + tokens)


def keys_touched(history, tokens, window=None, chunk=None):
    """Distinct keys (cached and new) the T new queries read, per request."""
    if chunk is not None:
        return history % chunk + tokens
    if window is None:
        return history + tokens
    return min(history + tokens, window - 1 + tokens)


def chunk_prefix_pairs(n, chunk):
    """S(n) = sum_{p=0}^{n-1} (p mod C + 1): pairs of the first n queries of a
    chunked layer. Each complete chunk adds 1 + 2 + ... + C = C(C+1)/2, the
    r = n mod C positions of the open chunk add 1 + ... + r."""
    full, r = divmod(n, chunk)
    return full * chunk * (chunk + 1) // 2 + r * (r + 1) // 2


def chunked_pairs(history, tokens, chunk):
    """sum_{p=H}^{H+T-1} (p mod C + 1) = S(H+T) - S(H)."""
    return chunk_prefix_pairs(history + tokens, chunk) - chunk_prefix_pairs(history, chunk)


class Attention(Block):
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    rope_dim: int            # rotated dims per head (0 = NoPE)
    window: int = None       # sliding window W (None = full causal)
    chunk: int = None        # chunked attention C (Llama 4); exclusive with window
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    qk_norm_full: bool = False  # q/k norms over all heads of a token, not per head (OLMo 2)
    norm_widths: tuple = ()  # (q, k) widths of full-width norms on a TP shard: the whole model's
    softcap: bool = False    # scores soft-capped c * tanh(s / c) before the softmax (Gemma 2)
    sinks: bool = False      # one learned sink logit per head (GPT-OSS)
    prefix: str = "self_attn"
    qk_l2norm: bool = False  # weightless L2 norm of q and k per head (Llama 4 use_qk_norm)
    dropout: bool = False    # training dropout on the attention output (GPT resid_pdrop)
    prob_dropout: bool = False  # training dropout on the attention probabilities (GPT attn_pdrop)

    def _check(self):
        for name in ("window", "chunk"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise UserError(f"attention {name} must be a positive integer or None, got {value!r}")
        if self.window is not None and self.chunk is not None:
            raise UserError("attention takes a sliding window or a chunk, not both")

    @property
    def kind(self):
        base = "MHA" if self.heads == self.kv_heads else ("MQA" if self.kv_heads == 1 else "GQA")
        if self.chunk:
            return f"{base} chunked {self.chunk}"
        return f"{base} window {self.window}" if self.window else f"{base} full"

    @property
    def label(self):
        sinks = " + sinks" if self.sinks else ""
        return f"{self.kind} {self.heads}/{self.kv_heads}x{self.head_dim}{sinks}"

    def tensors(self):
        p, h, hd = self.prefix, self.hidden, self.head_dim
        q, kv = self.heads * hd, self.kv_heads * hd
        out = [Tensor(f"{p}.q_proj.weight", (q, h)), Tensor(f"{p}.k_proj.weight", (kv, h)),
               Tensor(f"{p}.v_proj.weight", (kv, h)), Tensor(f"{p}.o_proj.weight", (h, q))]
        if self.qkv_bias:
            out += [Tensor(f"{p}.q_proj.bias", (q,), "vector"),
                    Tensor(f"{p}.k_proj.bias", (kv,), "vector"),
                    Tensor(f"{p}.v_proj.bias", (kv,), "vector")]
        if self.o_bias:
            out.append(Tensor(f"{p}.o_proj.bias", (h,), "vector"))
        if self.qk_norm:
            qw, kw = (self.norm_widths or (q, kv)) if self.qk_norm_full else (hd, hd)
            out += [Tensor(f"{p}.q_norm.weight", (qw,), "vector"),
                    Tensor(f"{p}.k_norm.weight", (kw,), "vector")]
        if self.sinks:
            out.append(Tensor(f"{p}.sinks", (self.heads,), "vector"))
        return tuple(out)

    def kv_bytes_per_token(self, kv_dtype, mla="absorbed"):
        return 2 * kv_dtype.nbytes_flat(self.kv_heads * self.head_dim)

    def kv_formula(self, kv_dtype, mla="absorbed"):
        """'2 (K,V) x kv_heads x head_dim x bytes per value = B per token', plus the window cap."""
        n = self.kv_heads * self.head_dim
        if kv_dtype.bits % 8 == 0 and not kv_dtype.is_quantized:
            per = f"2 (K,V) x {self.kv_heads} KV heads x {self.head_dim} head dim x {kv_dtype.bits // 8} B ({kv_dtype.name})"
        else:
            per = f"2 (K,V) x {kv_dtype.name} bytes of {self.kv_heads} KV heads x {self.head_dim} head dim ({n:,} values)"
        text = f"{per} = {self.kv_bytes_per_token(kv_dtype):,} B per token"
        if self.window:
            text += f", for at most W = {self.window:,} tokens (sliding window)"
        elif self.chunk:
            text += f", for at most C = {self.chunk:,} tokens (the open chunk)"
        else:
            text += ", for every token"
        if self.sinks:
            text += "; attention sinks are per-head weights and add no cache"
        return text

    def shard(self, tp, ep=1):
        """One TP device's attention (Megatron): heads / tp query heads (q, o and
        sinks split by head), kv_heads / tp KV heads, or one KV head when tp >
        kv_heads (tp must then be a multiple of kv_heads: each KV head and its
        cache replicated tp / kv_heads times); q/k norms and the o bias replicated.
        Full-width q/k norms (OLMo 2) stay whole on every device, which normalizes
        the whole gathered q and k (as vLLM's Olmo2Attention; the all-gather itself
        is not charged)."""
        if self.heads % tp:
            raise UserError(f"TP {tp} does not divide the {self.heads} query heads of {self.label}")
        if self.kv_heads % tp and tp % self.kv_heads:
            raise UserError(f"TP {tp} neither divides nor is a multiple of the {self.kv_heads} "
                            f"KV heads of {self.label}")
        widths = (self.heads * self.head_dim, self.kv_heads * self.head_dim) if self.qk_norm_full else ()
        return self.replace(heads=self.heads // tp, kv_heads=max(1, self.kv_heads // tp),
                            norm_widths=self.norm_widths or widths)

    def kv_tokens_peak(self, context):
        """A chunked layer holds up to C tokens (a full chunk) before a new chunk frees them."""
        if self.chunk is not None:
            return min(context, self.chunk)
        return self.kv_tokens(context)

    def kv_tokens(self, context):
        if self.chunk is not None:
            return (context - 1) % self.chunk + 1 if context else 0
        return context if self.window is None else min(context, self.window)

    def history_breakpoints(self, lo, hi):
        """Window: with T = 1 a query sees min(H + 1, W) keys: linear up to
        H = W - 1, flat after. Chunk: the query at H sees (H mod C) + 1 keys,
        restarting at every H = kC; the cache held before the step,
        ((H-1) mod C) + 1 tokens, restarts at H = kC + 1. Both are returned, so
        every quantity is linear between consecutive breakpoints; there are
        about 2 (hi - lo) / C of them, so decode asks for them over a few
        periods only and sums the recurring ones as repeats (history_period)."""
        if self.chunk is not None:
            c = self.chunk
            return tuple(h for k in range(lo // c * c, hi + 1, c) for h in (k, k + 1)
                         if lo < h <= hi and h > 1)   # kv_tokens(0) = 0 lies on the first piece
        return (self.window,) if self.window is not None and lo < self.window <= hi else ()

    def history_period(self):
        """Chunk C: keys seen and cache held depend on H mod C only."""
        return self.chunk

    def ops(self, w):
        hist, t = w.history, w.tokens
        pre, post = history_free_rows(self, w, "projections", lambda: self.projection_ops(w))
        pairs = causal_pairs(hist, t, self.window, self.chunk)
        rect = rectangular_pairs(hist, t)
        keys = keys_touched(hist, t, self.window, self.chunk)
        return [*pre, *self.core_ops(w, pairs, rect, keys), *post]

    def projection_ops(self, w):
        """(rows before the core, rows after it): the q/k/v projections, q/k norms,
        RoPE and the cache write; o_proj. None reads the history."""
        named = {t.name.split(".", 1)[1]: t for t in self.tensors()}
        n = w.positions
        hd, heads, kvh = self.head_dim, self.heads, self.kv_heads
        act = w.act_dtype
        k_token = w.kv_dtype.nbytes_flat(kvh * hd)
        out = [gemm(w, "q_proj", n, named["q_proj.weight"], named.get("q_proj.bias"), replicated=True),
               gemm(w, "k_proj", n, named["k_proj.weight"], named.get("k_proj.bias"), saves_input=False),
               gemm(w, "v_proj", n, named["v_proj.weight"], named.get("v_proj.bias"), saves_input=False)]
        if self.qk_norm:
            q_rows, k_rows = (n, n) if self.qk_norm_full else (n * heads, n * kvh)
            out += [rmsnorm(w, "q_norm", q_rows, named["q_norm.weight"], replicated=False),
                    rmsnorm(w, "k_norm", k_rows, named["k_norm.weight"], replicated=False)]
        if self.rope_dim:
            rotated = n * (heads + kvh) * self.rope_dim   # the book: x*cos + rotate_half(x)*sin, its negations apart
            tables = 2 * w.act_dtype.nbytes_flat(w.tokens * self.rope_dim)   # and it reads the cos and sin tables
            out.append(elementwise(w, "rope", rotated,
                                   VECTOR_FLOPS["rope"],
                                   shape=f"[{n},{heads}+{kvh},{self.rope_dim}]", kind="rope",
                                   counted={**book(3 * rotated, tables, negate=rotated // 2),
                                            # training: the rotation, and its transpose in the backward
                                            "book_train": train_rule(train_adds, 3 * rotated, 3 * rotated)}))
        if self.qk_l2norm:
            rows = n * (heads + kvh)
            out.append(elementwise(w, "qk_l2norm", rows * hd, VECTOR_FLOPS["l2norm"],
                                   shape=f"[{n},{heads}+{kvh},{hd}]", kind="norm",
                                   saved=saved_inputs(w, rows * hd) + rows * STAT_BYTES))
        out.append(Op("kv_store", "memory", f"[{n},2,{kvh},{hd}]",
                      act_read=act.nbytes_flat(n * 2 * kvh * hd),
                      kv_write=n * 2 * k_token, kind="memory", book_train=NO_TRAIN_WORK))
        o_proj = with_dropout_mask(gemm(w, "o_proj", n, named["o_proj.weight"], named.get("o_proj.bias")),
                                   n * self.hidden if self.dropout else 0)
        return tuple(out), (o_proj,)

    def core_ops(self, w, pairs, rect, keys):
        """The fused attention core of the batch: QK^T over `pairs` query-key pairs
        per (request, head) (`rect` for an unmasked matmul), softmax on chip, PV;
        reads Q, `keys` cached K and V rows per request (the new ones excepted
        with --new-kv on-chip), writes the output.
        Training: QK^T keeps Q and the K rows, softmax its row statistics, PV
        the V rows (fused attention keeps no scores)."""
        n, b, t = w.positions, w.batch, w.tokens
        hd, heads = self.head_dim, self.heads
        act = w.act_dtype
        k_token = w.kv_dtype.nbytes_flat(self.kv_heads * hd)
        read = keys - w.new_keys_on_chip   # keys read from the cache (--new-kv)
        # the book's training count: each query head's dK (at QK^T) and dV (at PV) summed into its
        # KV head, (heads / kv_heads - 1) adds per key value of a KV head
        reduce = train_rule(train_adds, 0, b * keys * self.kv_heads * (heads // self.kv_heads - 1) * hd)
        if getattr(w, "reference_path", False):   # the eager rectangle (blocks.reference_path)
            pairs = rect
        out = [Op("attn_qk", "attention", f"{b}x{heads}x[{t},{hd}]x[{hd},{keys}]",
                  matrix_flops=2 * b * heads * hd * pairs,
                  rect_flops=2 * b * heads * hd * rect,
                  act_read=act.nbytes_flat(n * heads * hd),
                  kv_read=b * read * k_token, compute=w.compute_dtype.name,
                  kind="attention", saved_bytes=act.nbytes_flat(n * heads * hd) + b * keys * k_token,
                  book_extra_bytes=act.nbytes_flat(b * heads * rect), book_train=reduce, head_dim=hd)]
        sink_rows = b * heads * t if self.sinks else 0   # one sink logit per (query, head) row
        named = {tn.name.split(".", 1)[1]: tn for tn in self.tensors()} if self.sinks else {}
        rows, valid = b * heads * t, b * heads * pairs
        # the book's count (scale, subtract the max, sum, divide per valid pair; the max compares,
        # exp and the mask's decisions over the rectangle apart); no rule with sinks or a soft cap.
        # Its interface materializes the scores and probabilities (the rectangle, activation format):
        # QK^T writes them, the softmax reads and writes them, PV reads them.
        scores = act.nbytes_flat(b * heads * rect)
        counted = {} if self.sinks or self.softcap else {**book(
            4 * valid - rows, 2 * scores, exp=valid, compare_max=valid - rows, mask_decisions=b * heads * rect),
            "book_train": train_rule(train_softmax, rows, valid)}
        out.append(Op("softmax", "vector", f"{b}x{heads}x{pairs} pairs"
                      + (f" + {t} sink logits" if self.sinks else "") + (" + softcap" if self.softcap else ""),
                      **counted,
                      vector_flops=(VECTOR_FLOPS["softmax"] + (VECTOR_FLOPS["softcap"] if self.softcap else 0))
                      * b * heads * pairs
                      + VECTOR_FLOPS["sink"] * sink_rows,
                      weight_read=w.weight_bytes(named["sinks"]) if self.sinks else 0,
                      kind="softmax", weight=named["sinks"].name if self.sinks else "",
                      saved_bytes=b * heads * t * STAT_BYTES))
        out.append(Op("attn_pv", "attention", f"{b}x{heads}x[{t},{keys}]x[{keys},{hd}]",
                      matrix_flops=2 * b * heads * hd * pairs,
                      rect_flops=2 * b * heads * hd * rect,
                      kv_read=b * read * k_token,
                      act_write=act.nbytes_flat(n * heads * hd), compute=w.compute_dtype.name,
                      kind="attention", saved_bytes=b * keys * k_token,
                      book_extra_bytes=act.nbytes_flat(b * heads * rect), book_train=reduce, head_dim=hd))
        return out

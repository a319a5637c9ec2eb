"""Softmax attention with grouped KV heads (MHA, GQA, MQA), full or windowed.

Work counted per request with H cached tokens and T new ones:
- causal pairs: query at position p (H <= p < H+T) sees min(p+1, W) keys,
  W = window (unbounded for full attention): sum_{x=H+1}^{H+T} min(x, W);
- rectangular pairs (an unmasked dense matmul): T * (H + T);
- QK^T is 2 * heads * head_dim FLOPs per pair, PV 2 * heads * v_head_dim.
Keys read per request: every cached key some query sees, min(H+T, W-1+T).
The cache keeps 2 * kv_heads * head_dim values per token, min(context, W)
tokens in a windowed layer.
"""


from ..arch import Block, Tensor
from ..ops import VECTOR_FLOPS, Op, elementwise, gemm, rmsnorm


def sum_min(a, b, cap):
    """sum_{x=a}^{b} min(x, cap), in closed form (cap None = no cap)."""
    if b < a:
        return 0
    if cap is None or b <= cap:
        return (a + b) * (b - a + 1) // 2
    if a > cap:
        return cap * (b - a + 1)
    return (a + cap) * (cap - a + 1) // 2 + cap * (b - cap)


def causal_pairs(history, tokens, window=None):
    """Query-key pairs a causal (windowed) kernel computes for one request."""
    return sum_min(history + 1, history + tokens, window)


def rectangular_pairs(history, tokens):
    """Pairs an unmasked [T, H+T] score matrix holds for one request."""
    return tokens * (history + tokens)


def keys_touched(history, tokens, window=None):
    """Distinct cached keys the T new queries read, per request."""
    if window is None:
        return history + tokens
    return min(history + tokens, window - 1 + tokens)


class Attention(Block):
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    rope_dim: int            # rotated dims per head (0 = NoPE)
    window: int = None       # sliding window W (None = full causal)
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    sinks: bool = False      # one learned sink logit per head (GPT-OSS)
    prefix: str = "self_attn"

    @property
    def kind(self):
        base = "MHA" if self.heads == self.kv_heads else ("MQA" if self.kv_heads == 1 else "GQA")
        return f"{base} window {self.window}" if self.window else f"{base} full"

    @property
    def label(self):
        return f"{self.kind} {self.heads}/{self.kv_heads}x{self.head_dim}"

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
            out += [Tensor(f"{p}.q_norm.weight", (hd,), "vector"),
                    Tensor(f"{p}.k_norm.weight", (hd,), "vector")]
        if self.sinks:
            out.append(Tensor(f"{p}.sinks", (self.heads,), "vector"))
        return tuple(out)

    def kv_bytes_per_token(self, kv_dtype):
        return 2 * kv_dtype.nbytes_flat(self.kv_heads * self.head_dim)

    def kv_tokens(self, context):
        return context if self.window is None else min(context, self.window)

    def history_breakpoints(self, lo, hi):
        """With T = 1 a query sees min(H + 1, W) keys: linear up to H = W - 1, flat after."""
        return (self.window,) if self.window is not None and lo < self.window <= hi else ()

    def ops(self, w):
        named = {t.name.split(".", 1)[1]: t for t in self.tensors()}
        n, b, t, hist = w.positions, w.batch, w.tokens, w.history
        hd, heads, kvh = self.head_dim, self.heads, self.kv_heads
        pairs = causal_pairs(hist, t, self.window)
        rect = rectangular_pairs(hist, t)
        keys = keys_touched(hist, t, self.window)
        act, kv = w.act_dtype, w.kv_dtype
        k_token = kv.nbytes_flat(kvh * hd)
        out = [gemm(w, "q_proj", n, named["q_proj.weight"], named.get("q_proj.bias")),
               gemm(w, "k_proj", n, named["k_proj.weight"], named.get("k_proj.bias")),
               gemm(w, "v_proj", n, named["v_proj.weight"], named.get("v_proj.bias"))]
        if self.qk_norm:
            out += [rmsnorm(w, "q_norm", n * heads, named["q_norm.weight"]),
                    rmsnorm(w, "k_norm", n * kvh, named["k_norm.weight"])]
        if self.rope_dim:
            out.append(elementwise(w, "rope", n * (heads + kvh) * self.rope_dim,
                                   VECTOR_FLOPS["rope"],
                                   shape=f"[{n},{heads}+{kvh},{self.rope_dim}]"))
        out.append(Op("kv_store", "memory", f"[{n},2,{kvh},{hd}]",
                      act_read=act.nbytes_flat(n * 2 * kvh * hd),
                      kv_write=n * 2 * k_token))
        span = f"{b}x{heads}x[{t},{hd}]x[{hd},{keys}]"
        out.append(Op("attn_qk", "attention", span,
                      matrix_flops=2 * b * heads * hd * pairs,
                      rect_flops=2 * b * heads * hd * rect,
                      act_read=act.nbytes_flat(n * heads * hd),
                      kv_read=b * keys * k_token, compute=w.compute_dtype.name))
        out.append(Op("softmax", "vector", f"{b}x{heads}x{pairs} pairs",
                      vector_flops=VECTOR_FLOPS["softmax"] * b * heads * pairs,
                      weight_read=w.weight_bytes(named["sinks"]) if self.sinks else 0))
        out.append(Op("attn_pv", "attention", f"{b}x{heads}x[{t},{keys}]x[{keys},{hd}]",
                      matrix_flops=2 * b * heads * hd * pairs,
                      rect_flops=2 * b * heads * hd * rect,
                      kv_read=b * keys * k_token,
                      act_write=act.nbytes_flat(n * heads * hd), compute=w.compute_dtype.name))
        out.append(gemm(w, "o_proj", n, named["o_proj.weight"], named.get("o_proj.bias")))
        return out

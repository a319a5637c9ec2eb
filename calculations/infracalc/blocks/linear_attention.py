"""Gated DeltaNet: linear attention with a fixed-size matrix state (Qwen3-Next).

Source of the formulas: Yang, Kautz, Hatamizadeh, "Gated Delta Networks:
Improving Mamba2 with Delta Rule" (ICLR 2025, arXiv 2412.06464), and the
Hugging Face reference `modeling_qwen3_next.py` (Qwen3NextGatedDeltaNet,
torch_recurrent_gated_delta_rule, torch_chunk_gated_delta_rule), whose fast
path is flash-linear-attention's `chunk_gated_delta_rule` (chunk size 64) and
`fused_recurrent_gated_delta_rule`.

Per v-head (dk = head_k_dim, dv = head_v_dim; q and k heads are shared by
num_v_heads / num_k_heads value heads, like GQA) the state S is dk x dv and
one token does, exactly as the reference recurrence is written:

    S <- exp(g) * S                      decay: dk*dv multiplies (vector)
    m  = S^T k                           2*dk*dv (matrix-vector)
    d  = beta * (v - m)                  2*dv (vector)
    S <- S + k d^T                       2*dk*dv (rank-1 update, multiply-adds)
    o  = S^T (q / sqrt(dk))              2*dk*dv, plus dk for the scale

so the recurrent form costs 6*dk*dv matrix FLOPs per token per head, and
dk*dv + 2*dv + dk + 1 vector FLOPs (the 1 is exp(g)), whatever the position:
the cost does not depend on the history.

The chunked (parallel, WY/UT) form splits the T new tokens of a request into
chunks of C = 64 (counted from the first new token; the last chunk holds
T mod C). For one chunk of c tokens, with p = c(c+1)/2 pairs on and below the
diagonal and s = c(c-1)/2 strictly below it, the matrix work is

    A  = strict-lower(beta K K^T (.) decay)     2*dk*s
    T  = (I + A)^-1 by forward substitution      2*C(c,3) = c(c-1)(c-2)/3
    W  = T (beta K (.) exp(g))                   2*dk*p   (T is unit lower-triangular)
    U  = T (beta V)                              2*dv*p
    P  = lower(Q K^T (.) decay)                  2*dk*p
    V' = U - W S0                                2*c*dk*dv
    O  = (Q (.) exp(g)) S0 + P V'                2*c*dk*dv + 2*dv*p
    S1 = exp(g_c) S0 + (K (.) exp(g_c - g))^T V' 2*c*dk*dv

    causal(c) = 2*dk*(s + 2p) + 4*dv*p + c(c-1)(c-2)/3 + 6*c*dk*dv

counting only the entries of the triangular matrices (the ledger's matrix
FLOPs), and, as dense c x c tiles (what the reference and FLA tiles compute,
reported as the rectangular count, the forward substitution as HF's loop
writes it with an i x i block per row: sum i^2 = (c-1)c(2c-1)/6 multiply-adds),

    dense(c) = 6*c^2*dk + 4*c^2*dv + (c-1)c(2c-1)/3 + 6*c*dk*dv.

Vector work of one chunk: cumulative sum of g (c), decay factors
exp(g_i - g_j) (2p), the decay masks on A and P (s + p), the substitution's
row adds (s), beta on K and V (c*dk + c*dv), the q scale (c*dk), exp(g),
exp(g_c - g) (3c) and their products with K, K and Q (3*c*dk), V' and the
output add (2*c*dv), and the state decay and add (2*dk*dv + 1):

    vec(c) = 4c + 3p + 2s + 5*c*dk + 3*c*dv + 2*dk*dv + 1.

A request of T tokens costs floor(T/C) * f(C) + f(T mod C): closed forms.
Splitting a prefill conserves the chunked FLOPs only when the split point is a
multiple of C (the chunks are then the same); the recurrent form conserves
them for any split.

The recurrent form's matrix-vector products are counted as matrix FLOPs, like
softmax attention at decode (they run on vector units in practice; a decode
step is memory-bound either way).

Which form the ledger uses: chunked for a pass with T > 1 new tokens per
request, recurrent for T = 1 (as HF, vLLM and SGLang do for prefill and
decode; HF runs the chunked kernel for a one-token prompt with no cache,
a difference of f(1) against one recurrent step); `Workload.delta_form` can
force either, and the other form's FLOPs are shown in the operator's shape.

State (replaces the KV cache; does not grow with context), per request and
layer: the recurrent state num_v_heads * dk * dv values, float32 by default
(the HF reference and FLA keep it in float32, SGLang's --mamba-ssm-dtype
defaults to float32; vLLM's default 'auto' keeps it in the model dtype), and
the conv state (K - 1) * conv channels values in the model dtype (HF, vLLM,
SGLang). Neither follows the KV-cache format. A pass with history reads both
states once per request and every pass writes them back; with no history the
state starts at zero and is not read.

Fusion model: the delta-rule kernel keeps the state on chip between chunks
(FLA's chunked kernel actually stores one state per chunk and re-reads it;
not counted). Other operators read inputs from and write outputs to memory.
"""

from ..arch import Block, Tensor
from ..dtypes import DTYPES
from ..errors import UserError
from ..splits import ceil_div
from ..ops import STAT_BYTES, Op, elementwise, gemm, saved_inputs

CHUNK = 64   # flash-linear-attention chunk_gated_delta_rule (BT = 64); HF fallback chunk_size=64

# Per-element vector FLOPs of the layer's small operators (transcendentals count 1).
GDN_VECTOR_FLOPS = {
    "conv_silu_extra": 4,  # SiLU after the depthwise conv: exp, add, div, mul (the conv is 2*K)
    "l2norm": 3,           # x^2, sum, * rsqrt(sum) (per-row rsqrt not counted, as for RMSNorm)
    "gates": 9,            # beta = sigmoid(b): 3; g = -exp(A_log) * softplus(a + dt_bias):
                           # exp 1, add 1, softplus (exp, add, log) 3, mul 1
    "gated_rmsnorm": 9,    # RMSNorm over head_v_dim 4, silu(z) 4, multiply 1
}


def recurrent_step(dk, dv):
    """(matrix, vector) FLOPs of one token of one head in the recurrent form."""
    return 6 * dk * dv, dk * dv + 2 * dv + dk + 1


def chunk_cost(c, dk, dv):
    """(causal matrix, dense matrix, vector) FLOPs of one chunk of c tokens of one head."""
    if c <= 0:
        return 0, 0, 0
    p, s = c * (c + 1) // 2, c * (c - 1) // 2
    state = 6 * c * dk * dv
    causal = 2 * dk * (s + 2 * p) + 4 * dv * p + c * (c - 1) * (c - 2) // 3 + state
    dense = 6 * c * c * dk + 4 * c * c * dv + (c - 1) * c * (2 * c - 1) // 3 + state
    vector = 4 * c + 3 * p + 2 * s + 5 * c * dk + 3 * c * dv + 2 * dk * dv + 1
    return causal, dense, vector


def chunked_cost(tokens, dk, dv, chunk=CHUNK):
    """(causal, dense, vector) FLOPs of T tokens of one head: floor(T/C) f(C) + f(T mod C)."""
    full, rest = divmod(tokens, chunk)
    one, last = chunk_cost(chunk, dk, dv), chunk_cost(rest, dk, dv)
    return tuple(full * a + b for a, b in zip(one, last))


def recurrent_cost(tokens, dk, dv):
    """(matrix, vector) FLOPs of T tokens of one head, one recurrent step each."""
    m, v = recurrent_step(dk, dv)
    return tokens * m, tokens * v


class GatedDeltaNet(Block):
    hidden: int
    k_heads: int             # linear_num_key_heads (q and k heads)
    v_heads: int             # linear_num_value_heads
    k_dim: int               # linear_key_head_dim
    v_dim: int               # linear_value_head_dim
    conv_kernel: int         # linear_conv_kernel_dim
    chunk: int = CHUNK
    state_dtype: str = "fp32"   # recurrent state format (see module docstring)
    conv_dtype: str = "bf16"    # conv state format (the model dtype)
    prefix: str = "linear_attn"

    def _check(self):
        if self.v_heads % self.k_heads:
            raise UserError(f"linear_num_value_heads {self.v_heads} is not a multiple of "
                            f"linear_num_key_heads {self.k_heads}")

    kind = "Gated DeltaNet"

    @property
    def label(self):
        return (f"Gated DeltaNet {self.k_heads}/{self.v_heads} heads "
                f"k{self.k_dim} v{self.v_dim} conv{self.conv_kernel}")

    @property
    def key_dim(self):
        return self.k_heads * self.k_dim

    @property
    def value_dim(self):
        return self.v_heads * self.v_dim

    @property
    def conv_dim(self):
        """Channels of the depthwise conv: q, k and v (not z)."""
        return 2 * self.key_dim + self.value_dim

    def tensors(self):
        p, h = self.prefix, self.hidden
        return (
            Tensor(f"{p}.in_proj_qkvz.weight", (2 * self.key_dim + 2 * self.value_dim, h)),
            Tensor(f"{p}.in_proj_ba.weight", (2 * self.v_heads, h)),
            Tensor(f"{p}.conv1d.weight", (self.conv_dim, 1, self.conv_kernel), "vector"),
            Tensor(f"{p}.dt_bias", (self.v_heads,), "vector"),
            Tensor(f"{p}.A_log", (self.v_heads,), "vector"),
            Tensor(f"{p}.norm.weight", (self.v_dim,), "vector"),
            Tensor(f"{p}.out_proj.weight", (h, self.value_dim)),
        )

    def recurrent_state_bytes(self):
        return DTYPES[self.state_dtype].nbytes_flat(self.v_heads * self.k_dim * self.v_dim)

    def conv_state_bytes(self):
        return DTYPES[self.conv_dtype].nbytes_flat((self.conv_kernel - 1) * self.conv_dim)

    def conv_slot_bytes(self):
        """One more cached position per conv channel: what keeping all `conv_kernel` positions
        (the book's reference path, `kv --conv-state kernel`) adds to the kernel - 1 kept here."""
        return DTYPES[self.conv_dtype].nbytes_flat(self.conv_dim)

    def state_bytes(self, kv_dtype):
        """Per request: recurrent + conv state. The KV format does not apply (see docstring)."""
        return self.recurrent_state_bytes() + self.conv_state_bytes()

    def kv_formula(self, kv_dtype, mla="absorbed"):
        """The fixed state per request as a formula of the shapes, for `kv`."""
        rec, conv = DTYPES[self.state_dtype], DTYPES[self.conv_dtype]
        return (f"recurrent state {self.v_heads} v-heads x {self.k_dim} x {self.v_dim} in "
                f"{rec.name} = {self.recurrent_state_bytes():,} B + conv state "
                f"({self.conv_kernel} - 1) x {self.conv_dim:,} channels in {conv.name} = "
                f"{self.conv_state_bytes():,} B: {self.state_bytes(kv_dtype):,} B per request, "
                "whatever the context; no KV cache")

    def shard(self, tp, ep=1):
        """One TP device's Gated DeltaNet (as vLLM shards Qwen3-Next): k_heads / tp
        q/k heads with their v_heads / tp value heads; in_proj_qkvz, in_proj_ba,
        conv1d, dt_bias, A_log, out_proj and both states split by heads; the
        gated norm (width head_v_dim) replicated. TP must divide the q/k heads."""
        if self.k_heads % tp:
            raise UserError(f"TP {tp} does not divide the {self.k_heads} key heads of {self.label}")
        return self.replace(k_heads=self.k_heads // tp, v_heads=self.v_heads // tp)

    def history_breakpoints(self, lo, hi):
        """Cost is flat in the history, except that history 0 reads no state."""
        return (1,) if lo < 1 <= hi else ()

    def form(self, w):
        chosen = getattr(w, "delta_form", "auto")
        if chosen == "auto":
            return "recurrent" if w.tokens == 1 else "chunked"
        return chosen

    def core_cost(self, w):
        """(form, causal matrix, rectangular matrix, vector, other form's matrix) for the pass."""
        heads = w.batch * self.v_heads
        rec_m, rec_v = recurrent_cost(w.tokens, self.k_dim, self.v_dim)
        ch_c, ch_d, ch_v = chunked_cost(w.tokens, self.k_dim, self.v_dim, self.chunk)
        if self.form(w) == "recurrent":
            return "recurrent", heads * rec_m, heads * rec_m, heads * rec_v, heads * ch_c
        return "chunked", heads * ch_c, heads * ch_d, heads * ch_v, heads * rec_m

    def ops(self, w):
        t = {x.name.split(".", 1)[1]: x for x in self.tensors()}
        n, b = w.positions, w.batch
        act, fp32 = w.act_dtype, DTYPES["fp32"]
        kd, vd, nv = self.key_dim, self.value_dim, self.v_heads
        reads_state = w.history > 0
        conv_state = b * self.conv_state_bytes()
        rec_state = b * self.recurrent_state_bytes()
        conv_flops = 2 * self.conv_kernel + GDN_VECTOR_FLOPS["conv_silu_extra"]
        form, causal, rect, vector, other = self.core_cost(w)
        other_name = "recurrent" if form == "chunked" else f"chunked C={self.chunk}"
        out = [
            gemm(w, "in_proj_qkvz", n, t["in_proj_qkvz.weight"], replicated=True),
            gemm(w, "in_proj_ba", n, t["in_proj_ba.weight"], saves_input=False),
            elementwise(w, "conv1d_silu", n * self.conv_dim, conv_flops, weight=t["conv1d.weight"],
                        kind="activation", saved=saved_inputs(w, n * self.conv_dim),
                        shape=f"[{n},{self.conv_dim}] k={self.conv_kernel}")
            .replace(kv_read=conv_state if reads_state else 0, kv_write=conv_state),
            elementwise(w, "qk_l2norm", n * 2 * kd, GDN_VECTOR_FLOPS["l2norm"], kind="norm",
                        saved=saved_inputs(w, n * 2 * kd) + n * 2 * self.k_heads * STAT_BYTES,
                        shape=f"[{n},2,{self.k_heads},{self.k_dim}]"),
            Op("gates", "vector", f"[{n},{nv}] beta, g",
               vector_flops=n * nv * GDN_VECTOR_FLOPS["gates"],
               weight_read=w.weight_bytes(t["dt_bias"]) + w.weight_bytes(t["A_log"]),
               act_read=act.nbytes_flat(2 * n * nv),
               act_write=act.nbytes_flat(n * nv) + fp32.nbytes_flat(n * nv),
               kind="elementwise", saved_bytes=act.nbytes_flat(2 * n * nv)),
            Op("delta_rule", "attention",
               f"{b}x{nv}x[{w.tokens},{self.k_dim}x{self.v_dim}] {form}"
               + (f" C={self.chunk}" if form == "chunked" else "")
               + f"; {other_name} form: {other} matrix FLOPs per layer",
               matrix_flops=causal, rect_flops=rect, vector_flops=vector,
               act_read=act.nbytes_flat(n * (2 * kd + vd) + n * nv) + fp32.nbytes_flat(n * nv),
               kv_read=rec_state if reads_state else 0, kv_write=rec_state,
               act_write=act.nbytes_flat(n * vd), compute=w.compute_dtype.name,
               kind="attention",
               saved_bytes=act.nbytes_flat(n * (2 * kd + vd) + n * nv) + fp32.nbytes_flat(n * nv)),
            elementwise(w, "gated_rmsnorm", n * vd, GDN_VECTOR_FLOPS["gated_rmsnorm"], inputs=2, kind="norm",
                        saved=saved_inputs(w, n * vd, 2) + n * nv * STAT_BYTES,
                        weight=t["norm.weight"], shape=f"[{n},{nv},{self.v_dim}]"),
            gemm(w, "out_proj", n, t["out_proj.weight"]),
        ]
        return self.reference_rows(w, out) if getattr(w, "reference_path", False) else out

    def reference_rows(self, w, out):
        """The rows under the book's reference path (blocks.reference_path): the conv taps the
        fallback computes as matrix work (SiLU left as vector work) and the core in padded chunks,
        unless the pass is one token after a history."""
        from . import reference_path as ref

        b, n = w.batch, w.positions
        taps = b * 2 * self.conv_dim * ref.conv_taps(w.tokens, w.history, self.conv_kernel, w.reference_path)
        core = b * self.v_heads * ceil_div(w.tokens, self.chunk) * ref.chunk_flops(self.chunk, self.k_dim, self.v_dim)
        rows = []
        for op in out:
            if op.name == "conv1d_silu":
                op = op.replace(category="linear", matrix_flops=taps,
                                vector_flops=n * self.conv_dim * GDN_VECTOR_FLOPS["conv_silu_extra"],
                                shape=op.shape + " (reference taps)")
            elif op.name == "delta_rule" and not ref.recurrent_step(w):
                op = op.replace(matrix_flops=core, rect_flops=core, shape=op.shape + f"; reference: padded C={self.chunk}")
            rows.append(op)
        return rows

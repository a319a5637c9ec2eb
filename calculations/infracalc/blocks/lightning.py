"""Lightning attention: MiniMax-01's linear attention with a per-head decay.

Sources: MiniMax, "MiniMax-01: Scaling Foundation Models with Lightning
Attention" (arXiv 2501.08313, section 2.2), and the reference
`modeling_minimax_text_01.py` / `modeling_minimax_m1.py`
(MiniMaxText01LightningAttention: qkv_proj, silu, the blockwise
`lightning_attention` prefill and the one-token recurrent decode).

Layer: qkv = silu(qkv_proj(x)) with qkv_proj [3 H d, h] (no bias); per head
(d = head_dim, decay s > 0 a fixed slope, not a weight) the state is a d x d
matrix; out = out_proj(sigmoid(output_gate(x)) * norm(o)) with output_gate
[H d, h], norm an RMSNorm over H d and out_proj [h, H d]. Parameters:
5 h H d + H d.

Recurrent form, one token of one head (decode):

    S <- exp(-s) S + k^T v      decay d^2 (vector), rank-1 update 2 d^2 (multiply-adds)
    o  = q S                    2 d^2

    matrix 4 d^2, vector d^2 per token per head.

Blockwise form (prefill), the T new tokens of a request in blocks of B
(`block_size`, default 256) counted from the first new token. For one block of
c tokens, p = c(c+1)/2 pairs on and below the diagonal:

    P      = (Q K^T) (.) decay mask        2 d p (matrix) + p (vector)
    O_in   = P V                           2 d p
    O_out  = (Q (.) q_decay) S             c d (vector) + 2 c d^2
    O      = O_in + O_out                  c d (vector)
    S     <- exp(-s c) S + (K (.) k_decay)^T V     d^2 + c d (vector) + 2 c d^2

    causal(c) = 4 d p + 4 c d^2,  dense(c) = 4 d c^2 + 4 c d^2 (the c x c tiles),
    vec(c)    = p + 3 c d + d^2.

A request of T tokens costs floor(T/B) f(B) + f(T mod B). The decay factors
themselves depend only on the head and the block position (computed once; not
counted). State per request and layer: H d^2 values in float32 (the reference
keeps `kv` in float32, as vLLM's MiniMax linear-attention cache), whatever the
context; no KV cache. A pass with history reads it once per request and every
pass writes it back.
"""

from ..arch import Block, Tensor
from ..dtypes import DTYPES
from ..errors import UserError
from ..ops import STAT_BYTES, Op, elementwise, gemm, saved_inputs

BLOCK = 256   # reference lightning_attention BLOCK / config block_size

LIGHTNING_VECTOR_FLOPS = {
    "silu": 4,          # x * sigmoid(x): exp, add, div, mul
    "gated_norm": 8,    # RMSNorm 4, sigmoid(gate) 3, multiply 1
}


def recurrent_step(d):
    """(matrix, vector) FLOPs of one token of one head in the recurrent form."""
    return 4 * d * d, d * d


def block_cost(c, d):
    """(causal matrix, dense matrix, vector) FLOPs of one block of c tokens of one head."""
    if c <= 0:
        return 0, 0, 0
    p = c * (c + 1) // 2
    state = 4 * c * d * d
    return 4 * d * p + state, 4 * d * c * c + state, p + 3 * c * d + d * d


def blockwise_cost(tokens, d, block=BLOCK):
    """(causal, dense, vector) FLOPs of T tokens of one head: floor(T/B) f(B) + f(T mod B)."""
    full, rest = divmod(tokens, block)
    one, last = block_cost(block, d), block_cost(rest, d)
    return tuple(full * a + b for a, b in zip(one, last))


class LightningAttention(Block):
    hidden: int
    heads: int
    head_dim: int
    block: int = BLOCK
    state_dtype: str = "fp32"
    prefix: str = "self_attn"

    kind = "lightning"

    @property
    def label(self):
        return f"lightning attention {self.heads}x{self.head_dim} B={self.block}"

    @property
    def width(self):
        return self.heads * self.head_dim

    def tensors(self):
        p, h, hd = self.prefix, self.hidden, self.width
        return (Tensor(f"{p}.qkv_proj.weight", (3 * hd, h)),
                Tensor(f"{p}.output_gate.weight", (hd, h)),
                Tensor(f"{p}.norm.weight", (hd,), "vector"),
                Tensor(f"{p}.out_proj.weight", (h, hd)))

    def state_bytes(self, kv_dtype):
        """Per request: H x d x d in float32. The KV format does not apply."""
        return DTYPES[self.state_dtype].nbytes_flat(self.heads * self.head_dim * self.head_dim)

    def kv_formula(self, kv_dtype, mla="absorbed"):
        return (f"state {self.heads} heads x {self.head_dim} x {self.head_dim} in {self.state_dtype} = "
                f"{self.state_bytes(kv_dtype):,} B per request, whatever the context; no KV cache")

    def shard(self, tp, ep=1):
        """One TP device: heads / tp heads; qkv_proj, output_gate and out_proj split by
        heads, the norm over H d split with them (its statistic then needs the whole
        width: vLLM reduces it across TP; that reduction is not charged), the state
        split by heads. TP must divide the heads."""
        if self.heads % tp:
            raise UserError(f"TP {tp} does not divide the {self.heads} heads of {self.label}")
        return self.replace(heads=self.heads // tp)

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
        heads = w.batch * self.heads
        rm, rv = recurrent_step(self.head_dim)
        rec_m, rec_v = w.tokens * rm, w.tokens * rv
        bc, bd, bv = blockwise_cost(w.tokens, self.head_dim, self.block)
        if self.form(w) == "recurrent":
            return "recurrent", heads * rec_m, heads * rec_m, heads * rec_v, heads * bc
        return "chunked", heads * bc, heads * bd, heads * bv, heads * rec_m

    def ops(self, w):
        t = {x.name.split(".", 1)[1]: x for x in self.tensors()}
        n, b, hd = w.positions, w.batch, self.width
        act = w.act_dtype
        state = b * self.state_bytes(w.kv_dtype)
        form, causal, rect, vector, other = self.core_cost(w)
        other_name = "recurrent" if form == "chunked" else f"blockwise B={self.block}"
        return [
            gemm(w, "qkv_proj", n, t["qkv_proj.weight"], replicated=True),
            elementwise(w, "qkv_silu", n * 3 * hd, LIGHTNING_VECTOR_FLOPS["silu"], kind="activation",
                        saved=saved_inputs(w, n * 3 * hd), shape=f"[{n},3,{self.heads},{self.head_dim}]"),
            Op("lightning", "attention",
               f"{b}x{self.heads}x[{w.tokens},{self.head_dim}x{self.head_dim}] "
               + ("recurrent" if form == "recurrent" else f"blockwise B={self.block}")
               + f"; {other_name} form: {other} matrix FLOPs per layer",
               matrix_flops=causal, rect_flops=rect, vector_flops=vector,
               act_read=act.nbytes_flat(n * 3 * hd), kv_read=state if w.history > 0 else 0,
               kv_write=state, act_write=act.nbytes_flat(n * hd), compute=w.compute_dtype.name,
               kind="attention", saved_bytes=act.nbytes_flat(n * 3 * hd)),
            gemm(w, "output_gate", n, t["output_gate.weight"], saves_input=False),
            elementwise(w, "gated_norm", n * hd, LIGHTNING_VECTOR_FLOPS["gated_norm"], inputs=2,
                        weight=t["norm.weight"], kind="norm",
                        saved=saved_inputs(w, n * hd, 2) + n * STAT_BYTES, shape=f"[{n},{hd}]"),
            gemm(w, "out_proj", n, t["out_proj.weight"]),
        ]

"""The book's Qwen3.5 / Qwen3.6 reference path (`forward --reference-path`): the matrix work of the
Hugging Face reference fallback (torch code, no fused kernels) as the book counts it
(bojieli/ai-infra-book:calculations/results/qwen35-*.md and qwen36-*.md, "matrix work"), against the
ledger's count of the same pass. Four differences, each a rule of the fallback:

- depthwise conv (Gated DeltaNet, K taps over C channels): 2 C K x the positions the fallback
  computes per request: max(T, K) + K - 1 with no history (the input padded to K, then K - 1
  zeros), T + 2K - 1 after a history (K cached slots + T, padded), 2 for one token after a
  history (the update path), counted as matrix work; the SiLU stays vector work. With the
  fallback's record_past (`--reference-path record-past`): max(T, K) positions with no history,
  and after a history the valid taps alone, sum_i min(K, H + i + 1) per channel;
- the DeltaNet core, chunked whenever the pass is not one token after a history: every chunk
  padded to C = 64 tokens, 2 C (2 C d_k + C d_v + 3 d_k d_v) per chunk and value head (beta K K^T
  and Q K^T C x d_k x C, K S and Q S C x d_k x d_v, the intra-chunk C x C x d_v and K^T V
  d_k x C x d_v); 9,437,184 at d_k = d_v = 128; one token after a history is the recurrence,
  the ledger's `delta_rule`;
- softmax attention as the eager rectangle: every query-key pair of T x (H + T), the masked ones
  included (the `attn_qk` / `attn_pv` rows' rectangular FLOPs);
- the M-RoPE frequencies: 3 position axes x F frequencies x T positions per request, 2 FLOPs each,
  once per pass (F = the rotated dims / 2; 192 per position at 64 rotated dims).

Worked case (Qwen3.6-35B-A3B, one token after 8,192): ledger 7,331,184,832 - ... the terms are in
`tests/test_qwen3_5.py`."""

from ..ops import Op
from ..splits import ceil_div

MROPE_AXES = 3   # temporal, height, width (Qwen3-VL's M-RoPE, mrope_section sums to F)


def conv_taps(tokens, history, kernel, path="default"):
    """Taps per request and channel of the fallback's depthwise conv (module docstring): K x its
    output positions; with record_past ("record-past") K x max(T, K) with no history, and after a
    history the valid taps only, sum over the new tokens of min(K, H + i + 1) (the book: the
    source's retained length is unknown there)."""
    if path == "record-past":
        if history == 0:
            return kernel * max(tokens, kernel)
        return sum(min(kernel, history + i + 1) for i in range(min(tokens, kernel))) + max(0, tokens - kernel) * kernel
    if history == 0:
        return kernel * (max(tokens, kernel) + kernel - 1)
    return kernel * (2 if tokens == 1 else tokens + 2 * kernel - 1)


def recurrent_step(w):
    """True when the fallback runs the recurrence (one token after a history), else the padded chunks."""
    return w.tokens == 1 and w.history > 0


def chunk_flops(chunk, dk, dv):
    """Matrix FLOPs of one padded chunk and value head: 2 C (2 C d_k + C d_v + 3 d_k d_v)."""
    return 2 * chunk * (2 * chunk * dk + chunk * dv + 3 * dk * dv)


def mrope_op(arch, w):
    """The pass's M-RoPE frequency products (one row, before the layers)."""
    rope = next(b.rope_dim for layer, _, _ in arch.layer_groups() for b in layer.blocks
                if getattr(b, "rope_dim", 0))
    f = rope // 2
    return Op("mrope_frequencies", "linear", f"{w.batch}x[{MROPE_AXES},{f},1]x[1,{w.tokens}]",
              matrix_flops=2 * MROPE_AXES * f * w.positions, compute=w.compute_dtype.name, kind="rope")

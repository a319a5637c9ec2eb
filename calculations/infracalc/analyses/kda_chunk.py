"""Kimi Delta Attention in chunks: the block algorithm's work and the chunk kernel's buffers (the
book's chapter-2 KDA chunk live subset).

Work of the mathematical block algorithm per head, for a chunk of c valid tokens (L = c (c - 1) / 2
strictly lower pairs, K = c (c + 1) / 2 causal pairs, key and value widths d_k, d_v; a multiply-add
2 FLOPs, triangular zeros skipped):

    matrix: K K^T lower 2 L d_k; forward substitution for W and U 2 L (d_k + d_v); state prediction,
            state query and state update 2 c d_k d_v each; causal Q K^T 2 K d_k; causal P V 2 K d_v;
    scalar: gate prefix scan (c - 1) d_k; query scale c d_k; W/U right-hand sides 2 c d_k + c d_v;
            lower decay and beta 2 L d_k + L; causal query decay 2 K d_k; query prefix decay c d_k;
            delta subtract c d_v; output add c d_v; state decay and add 2 d_k d_v; state update keys 2 c d_k;
    exponentials (2 c + L + K + 1) d_k.

A sequence of T tokens has floor(T / C) full chunks and a tail of T mod C; totals are x heads x
KDA layers x batch. This is the algorithm's arithmetic, not a fused kernel's padded tiles.

Buffers: the tensors flash-linear-attention's chunked KDA forward (fla/ops/kda, safe gate, BF16
q/k/v, FP32 gate cumsum, final state kept) allocates for one layer, with B batch, T tokens, H heads,
d = head width, N = ceil(T / C) chunks:

    g_cumsum [B, T, H, d] FP32; Aqk, Akk [B, T, H, C] BF16; Akkd [B, T, H, 16] FP32; w, u, kg
    [B, T, H, d] BF16; h_chunks [B, N, H, d, d] BF16; final_state [B, H, d, d] FP32; v_new,
    output [B, T, H, d] BF16;

and two sets known to be live together: after the intra-chunk and WY step (g_cumsum, Aqk, Akk, Akkd,
w, u, kg) and before cleanup (g_cumsum, Aqk, Akk, w, u, kg, h_chunks, final_state, v_new, output).
Their larger sum is a known live subset of one layer's workspace, not its peak (projections,
inputs, allocator and compiler scratch are not in it); the final states persist per layer.
"""

from math import prod

FP32, BF16 = 4, 2


def block_work(c, d_k, d_v):
    """(matrix stages, scalar stages, exponentials) of one chunk of c valid tokens, one head."""
    lower, causal = c * (c - 1) // 2, c * (c + 1) // 2
    matrix = {"lower_kk": 2 * lower * d_k, "solve_w_u": 2 * lower * (d_k + d_v), "state_prediction": 2 * c * d_k * d_v,
              "state_query": 2 * c * d_k * d_v, "causal_qk": 2 * causal * d_k, "causal_pv": 2 * causal * d_v,
              "state_update": 2 * c * d_k * d_v}
    scalar = {"gate_prefix_scan": (c - 1) * d_k, "query_scale": c * d_k, "prepare_w_u_rhs": 2 * c * d_k + c * d_v,
              "lower_decay_and_beta": 2 * lower * d_k + lower, "causal_query_decay": 2 * causal * d_k,
              "query_prefix_decay": c * d_k, "delta_subtract": c * d_v, "output_add": c * d_v,
              "state_decay_and_add": 2 * d_k * d_v, "state_update_keys": 2 * c * d_k}
    return matrix, scalar, (2 * c + lower + causal + 1) * d_k


def chunk_sizes(tokens, chunk):
    """[(valid tokens, chunks of that size)]: the full chunks and a tail."""
    full, tail = divmod(tokens, chunk)
    return [(c, n) for c, n in ((chunk, full), (tail, 1)) if c and n]


def buffers(batch, tokens, chunk, heads, d):
    """[(name, shape, bytes per element)] of one layer's chunked forward."""
    n = -(-tokens // chunk)
    rows = [("g_cumsum", (batch, tokens, heads, d), FP32), ("Aqk", (batch, tokens, heads, chunk), BF16),
            ("Akk", (batch, tokens, heads, chunk), BF16), ("Akkd", (batch, tokens, heads, 16), FP32)]
    rows += [(name, (batch, tokens, heads, d), BF16) for name in ("w", "u", "kg")]
    rows += [("h_chunks", (batch, n, heads, d, d), BF16), ("final_state", (batch, heads, d, d), FP32)]
    rows += [(name, (batch, tokens, heads, d), BF16) for name in ("v_new", "output")]
    return rows


LIVE_SETS = (("intra_with_wy_outputs", ("g_cumsum", "Aqk", "Akk", "Akkd", "w", "u", "kg")),
             ("state_and_output_before_cleanup", ("g_cumsum", "Aqk", "Akk", "w", "u", "kg", "h_chunks", "final_state",
                                                  "v_new", "output")))


def kda_chunk(*, batch, tokens, chunk, heads, d, layers):
    blocks, matrix, scalar, exps = [], 0, 0, 0
    for c, n in chunk_sizes(tokens, chunk):
        m, s, e = block_work(c, d, d)
        blocks.append({"valid_tokens": c, "chunks": n, **m, "scalar_flops": sum(s.values())})
        matrix, scalar, exps = matrix + n * sum(m.values()), scalar + n * sum(s.values()), exps + n * e
    tensors = [{"tensor": name, "shape": "x".join(map(str, shape)), "dtype": "fp32" if size == FP32 else "bf16",
                "bytes": prod(shape) * size} for name, shape, size in buffers(batch, tokens, chunk, heads, d)]
    size = {t["tensor"]: t["bytes"] for t in tensors}
    live = [{"phase": name, "tensors": ", ".join(names), "bytes": sum(size[x] for x in names)} for name, names in LIVE_SETS]
    scale = batch * heads * layers
    return {
        "kda_layers": layers, "heads": heads, "head_dim": d,
        "chunks_per_sequence": -(-tokens // chunk), "last_chunk_tokens": tokens - (-(-tokens // chunk) - 1) * chunk,
        "block_matrix_flops": scale * matrix, "block_scalar_flops": scale * scalar, "block_exp_ops": scale * exps,
        "per_layer_chunk_state_bytes": size["h_chunks"], "per_layer_final_state_bytes": size["final_state"],
        "all_final_states_bytes": layers * size["final_state"],
        "known_live_subset_max_bytes": max(x["bytes"] for x in live),
        "blocks": blocks, "tensors": tensors, "live_sets": live,
    }


KDA_CHUNK_CONVENTIONS = [
    "Block algorithm per head and chunk of c valid tokens (L = c(c-1)/2 lower, K = c(c+1)/2 causal pairs): matrix "
    "2 L d_k (K K^T) + 2 L (d_k + d_v) (W, U substitution) + 3 x 2 c d_k d_v (state prediction, query, update) + "
    "2 K (d_k + d_v) (causal QK^T, PV); scalar and exponential counts as listed; full chunks and a tail, x heads x "
    "KDA layers x batch. The algorithm's arithmetic, not a fused kernel's padded tiles.",
    "Buffers of one layer's chunked forward (flash-linear-attention fla/ops/kda: safe gate, BF16 q/k/v, FP32 gate "
    "cumsum and final state; Aqk/Akk T x C columns, h_chunks ceil(T/C) states) and two sets known to be live "
    "together; the larger is a known live subset, not the workspace peak. Final states persist per layer; the "
    "temporaries belong to the executing layer only.",
]

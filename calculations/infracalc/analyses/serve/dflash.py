"""One drafting round of a DFlash drafter (a block-diffusion drafter, load/dflash.py) and
the target's verification of its block.

Geometry: hidden H, L draft layers with n_q query and n_kv KV heads of d, MLP width I, the
target's vocabulary V, F target layers tapped. A round at C cached context rows, N new
context rows (the target features of the tokens committed since the last round) and a block
of B positions (the first is the known token, the other B - 1 are the drafts) runs these
matrix products, each m x k by k x n, `count` times, 2 m k n FLOPs each:

    target_feature_fusion   N      x F H   x H          1
    draft_q                 B      x H     x n_q d      L
    context_and_noise_kv    (N+B)  x H     x n_kv d     2 L   (K and V)
    draft_o                 B      x n_q d x H          L
    draft_gate_up           B      x H     x I          2 L
    draft_down              B      x I     x H          L
    noncausal_qk            B      x d     x (C+N+B)    L n_q (every block row sees every
    noncausal_pv            B      x (C+N+B) x d        L n_q  context row and the whole block)
    shared_target_head      (B-1)  x H     x V          1     (the target's own head)

An operator's logical operand bytes are 2 (m k + k n + m n) per instance (BF16 operands at
the product's boundary: no GQA reuse, fusion or workspace). The drafter's own parameters:
F H^2 (the fusion) + 2 H (its two norms) + L (2 H n_q d + 2 H n_kv d + 3 H I + 2 d + 2 H),
in 3 + 11 L tensors (fc, hidden_norm, norm; per layer q, k, v, o, q_norm, k_norm, two
layer norms, gate, up, down). Its KV cache holds 2 L n_kv d x 2 B per context row: C + N + B
rows at the peak, the B noise rows are dropped after the round (C + N kept). The target
verifies the block as one pass of B tokens after C + N cached ones, the head on all B rows
(the ledger's `forward --tokens B --history C+N --logits all`); its KV peak is the target's
cache of C + N + B tokens.

Non-matrix work (norms, RoPE, SiLU, softmax, sampling) is not in the matrix FLOPs.
"""

from ...summation import plain_sum

BYTES = 2   # BF16 operands and weights


def matrices(d, cached, new, block):
    """[(operator, m, k, n, count)] of one round (formulas in the module docstring)."""
    q, kv, context = d.heads * d.head_dim, d.kv_heads * d.head_dim, cached + new + block
    features = len(d.target_layer_ids) * d.hidden
    return [("target_feature_fusion", new, features, d.hidden, 1),
            ("draft_q", block, d.hidden, q, d.layers),
            ("context_and_noise_kv", new + block, d.hidden, kv, 2 * d.layers),
            ("draft_o", block, q, d.hidden, d.layers),
            ("draft_gate_up", block, d.hidden, d.intermediate, 2 * d.layers),
            ("draft_down", block, d.intermediate, d.hidden, d.layers),
            ("noncausal_qk", block, d.head_dim, context, d.layers * d.heads),
            ("noncausal_pv", block, context, d.head_dim, d.layers * d.heads),
            ("shared_target_head", block - 1, d.hidden, d.vocab, 1)]


def operand_bytes(m, k, n):
    """2 (m k + k n + m n): one product's BF16 operands and result."""
    return BYTES * (m * k + k * n + m * n)


def params(d):
    """The drafter's own parameters (the shared embedding and head excluded)."""
    q, kv = d.heads * d.head_dim, d.kv_heads * d.head_dim
    layer = 2 * d.hidden * q + 2 * d.hidden * kv + 3 * d.hidden * d.intermediate + 2 * d.head_dim + 2 * d.hidden
    return len(d.target_layer_ids) * d.hidden * d.hidden + 2 * d.hidden + d.layers * layer


def tensors(d):
    return 3 + 11 * d.layers


def kv_bytes_per_row(d):
    """2 L n_kv d x 2 B: K and V of one context row in every draft layer."""
    return 2 * d.layers * d.kv_heads * d.head_dim * BYTES


def rows(d, cached, new, block):
    """The round's operator rows with their matrix FLOPs and operand bytes."""
    return [{"operator": name, "m": m, "k": k, "n": n, "count": count,
             "matrix_flops": 2 * m * k * n * count,
             "logical_operand_bytes_per_instance": operand_bytes(m, k, n)}
            for name, m, k, n, count in matrices(d, cached, new, block)]


def round_time_s(d, cached, new, block, r):
    """Estimate of one round: the operator-sum roofline of its products, each
    max(FLOPs / matrix peak, count x operand bytes / bandwidth) (logical operands: an
    estimate, not a bound)."""
    return plain_sum(max(r.compute_s(2 * m * k * n * count, 0), r.memory_s(count * operand_bytes(m, k, n)))
               for _, m, k, n, count in matrices(d, cached, new, block))


def check(d, target, cached, new, block):
    """Refuse a round the drafter cannot run on this target."""
    from ...errors import UserError

    if d.vocab != target.vocab_size:
        raise UserError(f"DFlash drafter {d.id} has vocabulary {d.vocab:,}, the target {target.id} "
                        f"{target.vocab_size:,}: it shares the target's head")
    if d.hidden != target.hidden_size:
        raise UserError(f"DFlash drafter {d.id} has hidden size {d.hidden:,}, the target {target.id} "
                        f"{target.hidden_size:,}: it reads the target's hidden states")
    if max(d.target_layer_ids) >= len(target.layers):
        raise UserError(f"DFlash drafter {d.id} taps target layer {max(d.target_layer_ids)}; "
                        f"{target.id} has {len(target.layers)}")
    if not 2 <= block <= d.block_size:
        raise UserError(f"block of {block} positions: from 2 to the drafter's block_size {d.block_size}")
    if new < 1 and cached < 1:
        raise UserError("a round needs context: give cached or new context rows")

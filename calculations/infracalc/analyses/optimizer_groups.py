"""Optimizer groups of a checkpoint (`budget optimizer`): which tensors Muon updates and which AdamW,
and the arithmetic of one update step (the book's chapter-10 DeepSeek-V4 optimizer reference).

Families (DeepSeek-V4 report, arXiv:2606.19348, sec. 2.4 and 4.2.2: AdamW for the embedding, the
output head, RMSNorm weights and the mHC static biases and gating factors, Muon for every other
module): the embedding and the head, and every 1-D tensor (norm weights, mHC base and scale) are
AdamW; every other tensor of two or more dimensions is Muon, one independent matrix per stored
matrix except a stack of experts (one per expert) and the grouped output projection wo_a (one per
output group, rows / o_groups). Three tensors the report does not place are declared: the
attention sinks (`--sink`: unresolved, row-muon = one 1 x n matrix, or adamw), the mHC head mixer
hc_head_fn (`--head-mixer`: unresolved, adamw or muon) and the routing score-correction bias, which
the load-balancing rule moves, not the optimizer (external: no count). Integer lookup tables
(tid2eid) hold no parameters and are left out.

Muon on an m x n matrix oriented so that m <= n (the smaller Gram matrix), k Newton-Schulz
iterations (default 10) of the hybrid step A = X X^T, B = A A, X <- a X + (b A + c B) X:

    matrix FLOPs = k (2 m^2 n + 2 m^3 + 2 m^2 n) = k (4 m^2 n + 2 m^3)
    scalar ops   = 4 mn (momentum, Nesterov) + 3 mn (Frobenius square-sum, epsilon, divide)
                   + k (3 m^2 + 2 mn) (the two polynomial combines) + 4 mn (rescale, decay, update),
                   one sqrt per matrix;

AdamW: 14 scalar operations and one sqrt per parameter (moments, bias corrections, decay,
update). Counts are exact integers of the checkpoint's shapes; no time is implied.
"""

from ..errors import UserError

ADAMW_SCALARS = 14


def muon_matrix(rows, cols, iterations):
    """(matrix FLOPs, scalar operations) of one Muon update of a rows x cols matrix (module docstring)."""
    m, n = min(rows, cols), max(rows, cols)
    return (iterations * (4 * m * m * n + 2 * m ** 3),
            11 * m * n + iterations * (3 * m * m + 2 * m * n))


def family(name, shape, role, sink, head_mixer):
    """The optimizer of one tensor: adamw, muon, unresolved, external, or None (no parameters)."""
    if role == "table":
        return None
    if name.endswith("attn_sink"):
        return {"row-muon": "muon"}.get(sink, sink)
    if name == "hc_head_fn":
        return head_mixer
    if name.endswith("e_score_correction_bias"):
        return "external"
    if role in ("embedding", "head") or len(shape) == 1:
        return "adamw"
    return "muon"


def independent_matrices(name, shape, o_groups):
    """(count, (rows, cols)) of the independent matrices Muon updates in one tensor."""
    if len(shape) == 1:
        return 1, (1, shape[0])
    if len(shape) == 3:
        return shape[0], shape[1:]
    if name.endswith("wo_a.weight") and o_groups:
        return o_groups, (shape[0] // o_groups, shape[1])
    if len(shape) != 2:
        raise UserError(f"{name}: a {len(shape)}-D tensor has no Muon matrix rule")
    return 1, tuple(shape)


def _tensors(arch):
    """(name pattern, shape, role, o_groups of its layer's grouped output projection, copies) of every
    tensor; a distinct layer is visited once with its count."""
    for block in arch.top_blocks():
        for t in block.tensors():
            yield t.name, t.shape, t.role, 0, 1
    for layer, count, _ in arch.layer_groups():
        groups = next((getattr(b, "o_groups", 0) for b in layer.blocks if getattr(b, "o_groups", 0)), 0)
        for t in layer.tensors():
            yield "layers.{i}." + t.name, t.shape, t.role, groups, count


def optimizer_groups(arch, *, sink="unresolved", head_mixer="unresolved", iterations=10):
    """One row per (name pattern, shape) in checkpoint order, and totals per family."""
    rows = {}
    for pattern, shape, role, o_groups, copies in _tensors(arch):
        fam = family(pattern, shape, role, sink, head_mixer)
        if fam is None:
            continue
        size = 1
        for d in shape:
            size *= d
        row = rows.get((pattern, shape))
        if row is None:
            per, matrix = independent_matrices(pattern, shape, o_groups) if fam == "muon" else (1, shape)
            row = rows[(pattern, shape)] = {
                "pattern": pattern, "family": fam, "tensor_shape": list(shape), "tensors": 0,
                "matrix_shape": list(matrix), "matrices_per_tensor": per, "parameters": 0,
                "matrix_flops": 0, "scalar_ops": 0 if fam in ("muon", "adamw") else None,
                "sqrt_ops": 0 if fam in ("muon", "adamw") else None}
        row["tensors"] += copies
        row["parameters"] += copies * size
        if fam == "muon":
            flops, scalars = muon_matrix(*row["matrix_shape"], iterations)
            n = copies * row["matrices_per_tensor"]
            row["matrix_flops"] += n * flops
            row["scalar_ops"] += n * scalars
            row["sqrt_ops"] += n
        elif fam == "adamw":
            row["scalar_ops"] += ADAMW_SCALARS * copies * size
            row["sqrt_ops"] += copies * size
    out = list(rows.values())
    totals = []
    for fam in ("muon", "adamw", "unresolved", "external"):
        mine = [r for r in out if r["family"] == fam]
        totals.append({"family": fam, "groups": len(mine), "parameters": sum(r["parameters"] for r in mine),
                       "matrices": sum(r["tensors"] * r["matrices_per_tensor"] for r in mine) if fam == "muon" else 0,
                       "matrix_flops": sum(r["matrix_flops"] for r in mine),
                       "scalar_ops": sum(r["scalar_ops"] for r in mine) if fam in ("muon", "adamw") else None})
    return {"model": arch.id, "iterations": iterations, "sink": sink, "head_mixer": head_mixer,
            "parameters": sum(r["parameters"] for r in out), "families": totals, "groups": out}


OPTIMIZER_CONVENTIONS = [
    "Families after the DeepSeek-V4 report (arXiv:2606.19348, sec. 2.4, 4.2.2): AdamW for the embedding, the "
    "head and every 1-D tensor (RMSNorm weights, mHC base and scale), Muon for every other tensor; experts one "
    "matrix each, wo_a one per output group. Declared: attention sinks (--sink), the mHC head mixer "
    "(--head-mixer); the routing score-correction bias is moved by load balancing (external, not counted).",
    "Muon on m x n, m <= n (smaller Gram), k Newton-Schulz steps: k (4 m^2 n + 2 m^3) matrix FLOPs; "
    "11 mn + k (3 m^2 + 2 mn) scalar operations and one sqrt per matrix. AdamW: 14 scalar operations and one "
    "sqrt per parameter. Exact counts of the checkpoint's shapes; no time, state or bytes implied.",
]

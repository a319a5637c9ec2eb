"""Every matrix product of a dense pass padded to one declared kernel tile (`forward --tile`):
the valid work, the rectangle a dense kernel computes, and the work of whole tiles.

Tile tm x tk x tn (rows of the output, inner dimension, columns of the output), as `gemm --tile`.
For a product [M, K] x [K, N] run `calls` times:

    valid       = 2 M K N                      (linears; attention: causal pairs only)
    rectangular = 2 M K N                      (attention: every query-key pair of the rectangle)
    padded      = 2 ceil(M/tm) tm ceil(K/tk) tk ceil(N/tn) tn   (analyses/tiles.padded_flops)

Linears: each 2-D checkpoint matrix of the layers (weight [N, K]) on M = batch x tokens rows, once
per layer holding it; the output head on the rows `--logits` selects (batch, or batch x tokens).
Attention, per request and query head of a full causal layer (T new tokens after H cached, head
dim d, keys H + T, pairs T H + T (T + 1) / 2): QK^T is [T, d] x [d, H + T], PV [T, H + T] x
[H + T, d], valid 2 d pairs each, rectangular 2 T (H + T) d. The padded rectangle counts every
tile of it, masked ones included (no causal tile skipping). Dense decoders only: routed experts
(`serve --expert-tokens` pads them), sliding windows and other attention kinds are not covered.
"""

from ..errors import UserError
from .tiles import padded_flops

TILE_PADDING_CONVENTION = (
    "tile padding: each matrix product of the pass at a declared tile tm x tk x tn; valid = the pass's "
    "matrix work (causal pairs for attention), rectangular = the full query-key rectangle, padded = every "
    "tile holding a valid element at its full size (2 ceil(M/tm)tm ceil(K/tk)tk ceil(N/tn)tn; masked "
    "attention tiles are not skipped); linears on batch x tokens rows, the head on the rows --logits "
    "selects, QK^T and PV per request and query head")


def products(arch, w, head_rows):
    """{(name, M, K, N): [calls, valid, rectangular]} of every matrix product of the pass."""
    from ..blocks.attention import Attention
    from ..blocks.basic import Residual, RMSNorm
    from ..blocks.gpt import GPTMLP, LayerNorm
    from ..blocks.mlp import GatedMLP

    out = {}

    def add(name, m, k, n, calls, valid=None, rect=None):
        entry = out.setdefault((name, m, k, n), [0, 0, 0])
        one = 2 * m * k * n
        entry[0] += calls
        entry[1] += calls * (one if valid is None else valid)
        entry[2] += calls * (one if rect is None else rect)

    for layer, count, _ in arch.layer_groups():
        for block in layer.blocks:
            if isinstance(block, Attention):
                if block.window or block.chunk:
                    raise UserError(f"--tile covers full causal attention; {arch.id} has a windowed or "
                                    f"chunked attention layer")
                t, keys, d = w.tokens, w.history + w.tokens, block.head_dim
                pairs = t * w.history + t * (t + 1) // 2
                for name, m, k, n in (("qk", t, d, keys), ("pv", t, keys, d)):
                    add(name, m, k, n, count * block.heads * w.batch, 2 * d * pairs, 2 * t * keys * d)
            elif not isinstance(block, (RMSNorm, LayerNorm, Residual, GatedMLP, GPTMLP)):
                raise UserError(f"--tile covers dense decoders (attention and MLP linears); {arch.id} has a "
                                f"{type(block).__name__} block (routed experts: serve --expert-tokens pads them)")
        for t in layer.tensors():
            if t.role == "matrix" and len(t.shape) == 2:
                n, k = t.shape
                add(t.name.removesuffix(".weight").rsplit(".", 1)[-1], w.batch * w.tokens, k, n, count)
    if head_rows:
        n, k = (arch.head.tensors() or arch.embedding.tensors())[0].shape
        add("lm_head", head_rows, k, n, 1)
    return out


def tile_padding(arch, w, tile, head_rows):
    """One row per distinct product (name, M, K, N) and the pass's totals."""
    table = []
    for (name, m, k, n), (calls, valid, rect) in products(arch, w, head_rows).items():
        table.append({"name": name, "m": m, "k": k, "n": n, "calls": calls, "valid_matrix_flops": valid,
                      "rectangular_matrix_flops": rect, "padded_matrix_flops": calls * padded_flops(m, k, n, tile)})
    totals = {key: sum(r[key] for r in table)
              for key in ("valid_matrix_flops", "rectangular_matrix_flops", "padded_matrix_flops")}
    return {"tile": list(tile), "convention": TILE_PADDING_CONVENTION, "products": table, "totals": totals}

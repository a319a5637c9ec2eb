"""The block-scaled FP8 linears of one pass: valid work, work at the kernel's tile,
and the scale arithmetic (`forward --fp8-tiles ROWS`).

Which linears: every checkpoint matrix (role `matrix`, not routed experts, not a
tensor kept in a fixed format such as a BF16 compressor) whose weight format carries
square block scales (fp8-b128, fp8-b128-e8m0: one scale per b x b block, b = 128),
except the grouped projections the reference runs as an einsum over the weight
rather than as a Linear (DeepSeek-V4's `wo_a`: `torch.einsum("bsgd,grd->bsgr", o, wo_a)`
in deepseek-ai/DeepSeek-V4-Flash inference/model.py). Multi-token-prediction
modules are not part of the pass. Each linear runs once per layer on all
M = batch x tokens rows of the pass.

A linear [M, K] x [K, N] with block b and kernel tile R x b x b (R rows, N and K
in blocks of b, FP8 inputs, FP32 accumulation), kb = ceil(K / b), nb = ceil(N / b):

    valid matrix FLOPs = 2 M N K
    tile matrix FLOPs  = 2 ceil(M / R) R * nb b * kb b
    scale products     = M nb kb        (Scale_A x Scale_B: one multiply per row,
                                         output block and K block)
    scale accumulation = 2 M N kb       (C += partial x scale: a multiply and an add
                                         per output cell and K block)
    scale FLOPs        = scale products + scale accumulation; padded: with M -> ceil(M / R) R
    weight bytes       = N K (one byte per FP8 value), scale bytes = nb kb x scale bytes

This is the accounting of bojieli/ai-infra-book's `v4-fp8-*` results (tile 32 x 128
x 128). The valid FLOPs are already in the pass's `matrix_flops`: the tile figure
replaces them for a tile comparison, it is never added to them.
"""

from ..errors import UserError
from ..splits import ceil_div

GROUPED = ("wo_a",)   # run as a grouped einsum over the weight, not as a Linear


def _selected(arch, w):
    fmt = w.dtype_for("matrix")
    if not fmt.block:
        raise UserError(f"--fp8-tiles needs linears stored with square block scales (fp8-b128, "
                        f"fp8-b128-e8m0); {arch.id}'s linears are {fmt.name} here")
    out = {}
    for layer, count, _ in arch.layer_groups():
        for t in layer.tensors():
            if t.role != "matrix" or t.stored or len(t.shape) != 2:
                continue
            name = t.name[:-len(".weight")] if t.name.endswith(".weight") else t.name
            if name.rsplit(".", 1)[-1] in GROUPED:
                continue
            entry = out.setdefault((name, t.shape), [0])
            entry[0] += count
    return fmt, [(name, shape, calls) for (name, shape), (calls,) in out.items()]


def fp8_linears(arch, w, rows):
    """The record: one entry per distinct linear (name, weight shape [N, K], calls per
    pass = the layers holding it) and the totals (formulas in the module docstring)."""
    fmt, linears = _selected(arch, w)
    b = fmt.block
    m = w.batch * w.tokens
    m_tile = ceil_div(m, rows) * rows
    scale_bytes = fmt.scale_bits // 8
    out, totals = [], dict.fromkeys((
        "calls", "valid_matrix_flops", "tile_matrix_flops", "scale_product_flops",
        "scale_accumulation_flops", "scale_flops", "padded_scale_flops",
        "weight_bytes", "weight_scale_bytes"), 0)
    for name, (n, k), calls in linears:
        kb, nb = ceil_div(k, b), ceil_div(n, b)
        per_row = nb * kb + 2 * n * kb
        row = {
            "name": name, "calls": calls, "weight_shape": [n, k],
            "valid_matrix_flops": calls * 2 * m * n * k,
            "tile_matrix_flops": calls * 2 * m_tile * nb * b * kb * b,
            "scale_product_flops": calls * m * nb * kb,
            "scale_accumulation_flops": calls * 2 * m * n * kb,
            "scale_flops": calls * m * per_row,
            "padded_scale_flops": calls * m_tile * per_row,
            "weight_bytes": calls * ceil_div(n * k * fmt.bits, 8),
            "weight_scale_bytes": calls * nb * kb * scale_bytes,
        }
        out.append(row)
        for key in totals:
            totals[key] += row[key]
    return {
        "format": fmt.name, "block": b, "tile": [rows, b, b], "rows": m, "tile_rows": m_tile,
        "convention": (f"block-scaled FP8 linears (format {fmt.name}, one scale per {b}x{b} block), "
                       f"kernel tile {rows}x{b}x{b}: tile FLOPs pad M to {rows} rows and N, K to {b}; "
                       f"scale FLOPs = M*nb*kb scale products + 2*M*N*kb scale-corrected accumulation "
                       f"(nb, kb = output and K blocks); grouped projections run as einsums "
                       f"({', '.join(GROUPED)}), routed experts and fixed-format matrices excluded; "
                       "the valid FLOPs are part of the pass's matrix FLOPs (the tile figure replaces "
                       "them, never adds to them)"),
        "linears": out,
        "totals": totals,
    }

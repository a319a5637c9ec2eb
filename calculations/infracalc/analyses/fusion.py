"""Fused vs unfused interface bytes and tensor lifetimes of a pointwise chain.

The chain is a dense gated MLP's: from the gate and up projections' outputs
(M x F each, M tokens, F the intermediate size) through the activation, the
product, an optional standalone layout permute, to a cast into the storage
format of the next GEMM's input:

    act(gate) -> act;  act * up -> product;  [permute(product) -> reordered];
    cast(product or reordered) -> stored

Every contiguous grouping of the chain's n operators is a candidate
(2^(n-1) of them). A boundary between two groups materializes its tensor in
full at the next memory level; inside a group the elements stream (the
rounding of each step is kept; no scratch is counted). For each grouping:

    interface bytes = sum over groups of (the group's external inputs read +
                      its output written)
    tensor peak     = the largest sum of live tensor sizes while a group runs:
                      each group allocates its output before it frees the
                      inputs no later group reads (no in-place aliasing); the
                      gate and up outputs are live at the start.

With X = the bytes of one M x F intermediate in the activation format and
Y = the stored output's bytes: all apart, 6X + Y (plus 2X for the permute);
all fused, 2X + Y; each intermediate that stops crossing a boundary saves 2X.
Weights, scales, the projections and the down GEMM are outside the chain.
"""

from ..errors import UserError

FUSION_CONVENTIONS = [
    "Pointwise chain of one dense gated MLP layer, from the gate and up outputs (M x F each) to the "
    "cast into the stored format of the down GEMM's input; the projections, weights, scales and the "
    "down GEMM are outside it. Each contiguous grouping of the chain is a candidate: a boundary "
    "materializes its tensor in full at the next memory level, a group streams its elements.",
    "Interface bytes = the external inputs each group reads + the output it writes. Tensor peak = the "
    "largest sum of live tensors while a group runs: the group allocates its output before freeing "
    "the inputs no later group reads (no in-place aliasing, no allocator pool, no on-chip scratch); "
    "gate and up are live at the start. Not a measured device peak.",
]


def chain(tokens, inter, *, act_bytes, stored_bytes, act="swiglu", layout_copy=False):
    """(sizes, operators) of the chain: operators are (name, inputs, output)."""
    x = act_bytes * tokens * inter
    sizes = {"gate": x, "up": x, "act": x, "product": x, "stored": stored_bytes}
    ops = [(act, ("gate",), "act"), ("multiply", ("act", "up"), "product")]
    last = "product"
    if layout_copy:
        sizes["reordered"] = x
        ops.append(("layout_permute", ("product",), "reordered"))
        last = "reordered"
    ops.append(("cast", (last,), "stored"))
    return sizes, ops


def grouping(sizes, ops, cuts):
    """One grouping: `cuts` are the indices of operators a boundary follows."""
    ends = sorted(cuts) + [len(ops) - 1]
    groups, start = [], 0
    for end in ends:
        part = ops[start:end + 1]
        made = {out for _, _, out in part}
        inputs = sorted({t for _, ins, _ in part for t in ins if t not in made})
        groups.append((tuple(name for name, _, _ in part), inputs, part[-1][2]))
        start = end + 1
    produced = {out for _, _, out in ops}
    live = {t for _, ins, _ in ops for t in ins if t not in produced}
    peak = sum(sizes[t] for t in live)
    interface = 0
    for i, (_, inputs, out) in enumerate(groups):
        live.add(out)
        peak = max(peak, sum(sizes[t] for t in live))
        interface += sum(sizes[t] for t in inputs) + sizes[out]
        later = {t for _, ins, _ in groups[i + 1:] for t in ins}
        live = {t for t in live if t in later}
    return {"groups": " | ".join("+".join(names) for names, _, _ in groups),
            "boundaries": len(cuts), "interface_bytes": interface, "tensor_peak_bytes": peak}


def pointwise_fusion(tokens, inter, *, act_bytes, stored_bytes, act="swiglu", layout_copy=False):
    """Every grouping of the chain, all apart and all fused named."""
    sizes, ops = chain(tokens, inter, act_bytes=act_bytes, stored_bytes=stored_bytes, act=act,
                       layout_copy=layout_copy)
    n = len(ops)
    rows = [grouping(sizes, ops, [i for i in range(n - 1) if mask >> i & 1]) for mask in range(1 << (n - 1))]
    fused, apart = rows[0], rows[-1]
    for r in rows:
        r["saved_interface_bytes"] = apart["interface_bytes"] - r["interface_bytes"]
    return {
        "tokens": tokens, "intermediate_size": inter, "intermediate_bytes": sizes["act"],
        "stored_bytes": stored_bytes, "operators": [name for name, _, _ in ops],
        "separate_interface_bytes": apart["interface_bytes"], "fused_interface_bytes": fused["interface_bytes"],
        "saved_interface_bytes": apart["interface_bytes"] - fused["interface_bytes"],
        "separate_tensor_peak_bytes": apart["tensor_peak_bytes"],
        "fused_tensor_peak_bytes": fused["tensor_peak_bytes"],
        "groupings": rows,
    }


def first_gated_mlp(arch):
    """The first dense gated MLP block of the model (its intermediate size and activation)."""
    from ..blocks.mlp import GatedMLP

    for layer in arch.layers:
        for block in layer.blocks:
            if isinstance(block, GatedMLP):
                return block
    raise UserError(f"{arch.id} has no dense gated MLP layer (the chain is gate/up -> activation -> "
                    f"multiply -> cast of a SwiGLU/GeGLU MLP)")

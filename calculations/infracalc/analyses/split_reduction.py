"""RMSNorm of M rows of width D: one group per row against a three-pass split-row reduction
(the book's chapter-5 split-reduction example).

One group per row (a single kernel) keeps the row's FP32 values, computes
s = sum(x^2) / D + eps, r = rsqrt(s), y = x r gamma, and reads the input, reads gamma (once per
row, no cross-row cache) and writes the output, each D elements of b bytes:

    fused interface = 3 b D M

The split path cuts each row into S uniform integer parts (ceil / floor sizes, no empty part) and
runs three kernels: M S groups each read their part and write one FP32 partial sum; M groups
read the S partials and write one FP32 inverse; M S groups re-read their part, read the inverse
once each, read gamma and write the output:

    partial buffer = 4 M S,  inverse buffer = 4 M
    split interface = b D M (pass 1) + 4 M S + 4 M S + 4 M (pass 2) + 4 M S + 3 b D M (pass 3)
                    = fused + b D M + 12 M S + 4 M

Reduction adds M (D - 1) split as M (D - S) local and M (S - 1) merge; scalar FLOPs per row
D squares + (D - 1) adds + a divide and the eps add + D normalizing and D gamma products =
4D + 1, rsqrt apart (one per row). Buffers are the auxiliary ones only (partials and inverse, live
together in pass 2), not the kernels' full peaks; no launch, synchronisation or time is modelled.
"""

SPLIT_REDUCTION_CONVENTIONS = [
    "RMSNorm of M rows of width D, input, gamma and output of b bytes per element: one group per row reads x "
    "and gamma and writes y (gamma read per row): 3 b D M interface bytes. Split: S uniform parts per row in "
    "three kernels: M S groups write FP32 partial sums, M groups merge them into an FP32 inverse, M S groups "
    "re-read x, read the inverse once each, read gamma and write y: extra = b D M + 12 M S + 4 M bytes.",
    "Reduction adds M (D - S) local + M (S - 1) merge = M (D - 1) (a different floating-point order); "
    "scalar FLOPs 4D + 1 per row, one rsqrt per row apart. Buffers are the partials and inverse only; "
    "launch, synchronisation, register allocation and time are not modelled. Interfaces are logical reads "
    "at the next level (L2 or HBM, not said which).",
]


def split_rmsnorm(*, rows, width, splits, elem_bytes=2):
    m, d, s, b = rows, width, splits, elem_bytes
    fused = 3 * b * d * m
    partials, inverse = 4 * m * s, 4 * m
    split = b * d * m + partials + (partials + inverse) + (inverse * s + 3 * b * d * m)
    return {
        "rows": m, "width": d, "splits": s, "element_bytes": b,
        "scalar_flops": m * (4 * d + 1), "rsqrt_calls": m,
        "first_pass_groups": m * s, "second_pass_groups": m, "apply_groups": m * s, "launches": 3,
        "local_reduction_adds": m * (d - s), "merge_reduction_adds": m * (s - 1),
        "partial_buffer_bytes": partials, "inverse_buffer_bytes": inverse,
        "fused_interface_bytes": fused, "split_interface_bytes": split,
        "additional_interface_bytes": split - fused,
        "fused_retained_fp32_row_bytes": 4 * d,
        "split_largest_part_fp32_bytes": 4 * -(-d // s),
    }

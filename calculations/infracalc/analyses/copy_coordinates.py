"""Source-level copy coordinates and payloads of one shared expert's three FP8 GEMMs (the book's chapter-4
V4 shared-expert example): DeepSeek-V4's `fp8_gemm_kernel` tiles C = A B^T with blocks of 32 rows x 128
columns and K steps of 128, one E8M0 scale per 128 values (per row of A, per 128 x 128 block of B).
Offsets are in bytes from each tensor's base (FP8 A [M, K], B [N, K], BF16 C [M, N]). Exact integers.

For block (by, bx) of the (M/32) x (N/128) grid and K step ki of K/128:
    A copy: origin (32 by, 128 ki), offset 32 by K + 128 ki, 32 rows of 128 B, row stride K
    B copy: origin (128 bx, 128 ki), offset 128 bx K + 128 ki, 128 rows of 128 B, row stride K
    scale B: offset bx (K/128) + ki (1 B);  scale A: 32 reads from 32 by (K/128) + ki, stride K/128
    C write per block: offset 2 (32 by N + 128 bx), 32 rows of 256 B, row stride 2 N
Per GEMM, with I = (M/32)(N/128)(K/128) block-steps: A and B copy calls I each, A payload I x 32 x 128,
B payload I x 128 x 128, scale reads I x 32 + I bytes, output 2 M N; A is read again by every N block
and B by every M block (the payload counts the repeats; the row gaps of a stride are not transferred).

Worked case (by hand): M = 32, K = 4096, N = 2048: 16 blocks x 32 steps = 512 copies each; A 512 x 4,096
= 2,097,152 B, B 512 x 16,384 = 8,388,608 B, scales 512 x 33 = 16,896 B, C 2 x 32 x 2048 = 131,072 B.
Source-level T.copy calls, not PTX/SASS instructions, TMA descriptors or HBM bytes (unknown here). The
rule: `bojieli/ai-infra-book:calculations/research/v4-copy-coordinates/calculate.py` (the pinned kernel's
block_M 32, block_N 128, block_K 128, group 128).
"""

BLOCK_M, BLOCK_N, BLOCK_K = 32, 128, 128


def gemm_copies(name, m, k, n):
    """Summary of one aligned GEMM (M % 32 == 0, K and N % 128 == 0)."""
    mb, nb, kb = m // BLOCK_M, n // BLOCK_N, k // BLOCK_K
    steps = mb * nb * kb
    return {"call": name, "M": m, "N": n, "K": k, "grid_blocks": mb * nb, "k_iterations_all_blocks": steps,
            "A_copy_calls": steps, "B_copy_calls": steps, "A_payload_bytes": steps * BLOCK_M * BLOCK_K,
            "B_payload_bytes": steps * BLOCK_N * BLOCK_K, "scale_A_read_bytes": steps * BLOCK_M,
            "scale_B_read_bytes": steps, "scale_read_bytes": steps * (BLOCK_M + 1),
            "output_write_bytes": 2 * m * n, "unique_A_bytes": m * k, "unique_B_bytes": n * k,
            "unique_scale_A_bytes": m * kb, "unique_scale_B_bytes": nb * kb, "matrix_flops": 2 * m * n * k}


def tile_copies(m, k, n, by, bx, ki):
    """The coordinates of block (by, bx)'s K step ki."""
    kb = k // BLOCK_K
    return {"block": [by, bx], "k_iteration": ki,
            "A_origin": [by * BLOCK_M, ki * BLOCK_K], "A_offset_bytes": by * BLOCK_M * k + ki * BLOCK_K,
            "A_row_stride_bytes": k,
            "B_origin": [bx * BLOCK_N, ki * BLOCK_K], "B_offset_bytes": bx * BLOCK_N * k + ki * BLOCK_K,
            "B_row_stride_bytes": k,
            "scale_B_offset_bytes": bx * kb + ki, "scale_A_first_offset_bytes": by * BLOCK_M * kb + ki,
            "scale_A_row_stride_bytes": kb,
            "C_offset_bytes": 2 * (by * BLOCK_M * n + bx * BLOCK_N), "C_row_stride_bytes": 2 * n}


def shared_expert(*, rows, hidden, inter, tiles=False):
    """w1 and w3 (M = rows, K = hidden, N = inter) and w2 (K = inter, N = hidden)."""
    calls = [("shared.w1", rows, hidden, inter), ("shared.w3", rows, hidden, inter), ("shared.w2", rows, inter, hidden)]
    out = {"calls": [gemm_copies(*c) for c in calls]}
    keys = [k for k, v in out["calls"][0].items() if isinstance(v, int) and k not in ("M", "N", "K")]
    out["totals"] = {k: sum(c[k] for c in out["calls"]) for k in keys}
    corners = []
    for name, m, k, n in calls:   # the first and the last copy of each call
        last = (m // BLOCK_M - 1, n // BLOCK_N - 1, k // BLOCK_K - 1)
        corners += [dict({"call": name}, **tile_copies(m, k, n, *t)) for t in ((0, 0, 0), last)]
    out["first_and_last_copies"] = corners
    if tiles:
        out["copies"] = [dict({"call": name}, **tile_copies(m, k, n, by, bx, ki))
                         for name, m, k, n in calls for by in range(m // BLOCK_M) for bx in range(n // BLOCK_N)
                         for ki in range(k // BLOCK_K)]
    return out


COPY_COORDINATES_CONVENTIONS = [
    "The pinned DeepSeek-V4 fp8_gemm_kernel's tiling (32 x 128 blocks, K steps of 128, E8M0 scales per 128 "
    "values): FP8 A and B copies, BF16 C writes, offsets in bytes from each tensor's base, aligned shapes "
    "only. Payloads count every copied tile (A again for each N block, B for each M block), never the row "
    "gaps of a stride. Source-level copy calls: not PTX/SASS instructions, TMA descriptors or HBM bytes.",
]

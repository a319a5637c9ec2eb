"""Quantize-then-GEMM of one expert projection: three designs' interface bytes (the book's
chapter-5 quantization-inside-the-expert-GEMM example), built on the tile view's GEMM traffic
(analyses/tiles.py: no input kept from one output tile to the next, the accumulator kept over K).

The GEMM [M,K] x [K,N] runs on FP8 weights (1 B) into an FP16 output (2 B); its activations arrive
in FP16 (2 B). With bm = ceil(M/tm), bn = ceil(N/tn) and A16 = 2 M K, A8 = M K, W = K N,
C = 2 M N bytes:

    separate quantization: read A16 once (each row kept until its final scale is known), write A8,
                           then the GEMM on A8:    A16 + A8 + bn A8 + bm W + C
    full-row-scale fusion: a scan of A16 for the row scales, then each output tile reads A16 and
                           casts it:               A16 + bn A16 + bm W + C
    prefix-scale fusion:   the scale is updated along K inside the tile (no pre-scan, a different
                           cast rounding):         bn A16 + bm W + C

The two full-row designs also write one FP32 scale per row (4 M) and read it once per row and
column block (4 M bn); those are reported apart from the main tensors. Weight scales and
scratch are not counted; masked tails are neither read nor written, the padded work is apart.
"""

from .tiles import gemm_tile

QUANT_GEMM_CONVENTIONS = [
    "One expert projection [M,K] x [K,N]: FP16 activations in, FP8 weights and quantized activations, FP16 "
    "out, FP32 accumulation (declared formats, not the checkpoint's). GEMM traffic of the tile view: each "
    "output column block re-reads A, each row block re-reads W, the accumulator stays over K; masked tails "
    "are not read, the fully padded work is reported apart.",
    "Separate quantization reads the FP16 rows once and writes FP8 (each row held until its scale is final: "
    "2K bytes per active row), then the GEMM reads FP8. Full-row-scale fusion scans A for the row scales, then "
    "every output tile re-reads FP16 A and casts; both store one FP32 scale per row, read once per row and "
    "column block (apart from the main bytes). Prefix-scale fusion updates the scale along K: no scan, no "
    "scale array, a different rounding, not an equivalent replacement. Logical next-level bytes, no time.",
]


def quant_gemm(*, m, k, n, tile, a16=2, a8=1, w8=1, c16=2):
    wide = gemm_tile(m, k, n, tile, a_bytes=a16, b_bytes=w8, c_bytes=c16)
    narrow = gemm_tile(m, k, n, tile, a_bytes=a8, b_bytes=w8, c_bytes=c16)
    act16, act8 = a16 * m * k, a8 * m * k
    scale_write, scale_read = 4 * m, 4 * m * wide["n_blocks"]
    designs = [
        {"design": "separate full-row quantization", "main_bytes": act16 + act8 + narrow["next_level_bytes"],
         "scale_write_bytes": scale_write, "scale_read_bytes": scale_read, "final_row_scale": True},
        {"design": "full-row-scale fused cast", "main_bytes": act16 + wide["next_level_bytes"],
         "scale_write_bytes": scale_write, "scale_read_bytes": scale_read, "final_row_scale": True},
        {"design": "prefix-scale fused cast", "main_bytes": wide["next_level_bytes"],
         "scale_write_bytes": 0, "scale_read_bytes": 0, "final_row_scale": False},
    ]
    return {
        "m": m, "k": k, "n": n, "tile": list(tile),
        **{key: wide[key] for key in ("m_blocks", "k_blocks", "n_blocks", "output_tiles",
                                      "valid_matrix_flops", "padded_matrix_flops")},
        "fp16_activation_bytes": act16, "fp8_activation_bytes": act8, "fp8_weight_bytes": w8 * k * n,
        "fp16_output_bytes": c16 * m * n, "retained_fp16_row_bytes": a16 * k, "row_scale_bytes": scale_write,
        "separate_main_bytes": designs[0]["main_bytes"],
        "full_scale_fused_main_bytes": designs[1]["main_bytes"],
        "prefix_scale_fused_main_bytes": designs[2]["main_bytes"],
        "full_scale_fusion_extra_main_bytes": designs[1]["main_bytes"] - designs[0]["main_bytes"],
        "designs": designs,
    }

"""Achievable matrix throughput: the measured maximum, and wave quantisation.

1. Maximum achievable matmul FLOP/s (MAMF). Source: stas00/ml-engineering,
   compute/accelerator/README.md, section "Maximum Achievable Matmul FLOPS
   comparison table" (mean of 100 iterations after 50 warm-up, best shape of a
   brute-force search, cache reset between iterations: the "v2" tables):

       BF16: A100 SXM 271.2 of 312 (86.9%), H100 SXM 794.5 of 989 (80.3%),
             MI325X 784.9 of 1300 (60.4%), MI300X 668.4 of 1300 (51.4%)
       FP8 (float8_e4m3fn): H100 SXM 1402.6 of 1979 (70.9%)
       older "v1" table: Gaudi 3 BF16 1288.8 of 1677 (76.8%)

   FP8 on AMD: the vendor's own MAF table (ROCm/rocm-blogs, blogs/software-tools-optimization/
   measuring-max-achievable-flops-part2/README.md, "AMD MAF Results", Table 1: hipBLASLt at
   M=4096, N=3648, K=32896, the median clock of the run): MI300X 1273, MI325X 1519 TFLOP/s
   (48.7% and 58.1% of the 2614.9 dense FP8 peak).

   NVIDIA L40S (its own die, AD102 at 350 W; nothing else measured is Ada):
       BF16 269.15, FP16 264.02 TFLOP/s of 362.05 (zzc0721/torch-performance-test-data,
       database.md, the L40S row: the best of square torch.matmul sizes 1024 to 10240; the
       same table's H100 80GB HBM3 rows, 789.24 and 783.66, are within 0.7% of the MAMF
       table's 794.5, so the method finds the same maximum);
       FP8 377.6 TFLOP/s of 733: vllm-project/vllm pull request #6677 (L40S x 1, the
       table "float8_e4m3fn meta-llama/Llama-2-7b-hf-TP1"): torch._scaled_mm's best time
       45.50 us at M, K, N = 512, 4096, 4096, 2 x 512 x 4096 x 4096 FLOPs, the fastest rate
       of the table (512 x 4096 x 12288: 139.60 us, 369.2 TFLOP/s; the PR's CUTLASS
       kernels within 1%). FP8 reaches 1.40x the BF16 rate on this part, not the 2x of
       its datasheet: a sustained FP8 figure, taken as measured.

   A measured device's fraction is its MAMF over our device file's dense peak
   for the format (Gaudi 3: 1288.8 of 1835, the whitepaper peak; the table's
   1677 is its lower running clock, which the MAMF already reflects). A device or format with no published
   measurement borrows one by a stated analogy (ANALOGY: the same die or the
   nearest generation of the same vendor; FP4 and INT8 take the FP8 figure of
   that device), and the record says "assumed" so no reader mistakes it for a
   measurement.

2. Wave quantisation. A GEMM's [M, N] output is cut into tiles (128 x 128 here,
   the CUTLASS/cuBLAS default tile on Hopper and Ampere) that run one per SM per
   wave; the last wave is partly idle:

       tiles = ceil(M / 128) * ceil(N / 128),  waves = ceil(tiles / SMs),
       efficiency = tiles / (waves * SMs)

   (stas00/ml-engineering, training/performance/README.md, "Tile and wave
   quantization"; NVIDIA Deep Learning Performance guide, "Matrix Multiplication
   Background", wave quantisation). Below one full wave (tiles < SMs) kernels
   split K across SMs (split-K / stream-K) and the loss is not charged
   (efficiency 1): a stated convention, not a measurement.
"""

import math

# (device id, format) -> (achieved TFLOP/s, the table's theoretical TFLOP/s, locator)
_TABLE = "stas00/ml-engineering:compute/accelerator/README.md, Maximum Achievable Matmul FLOPS comparison table"
_AMD = ("ROCm/rocm-blogs:blogs/software-tools-optimization/measuring-max-achievable-flops-part2/README.md, "
        "AMD MAF Results, Table 1")
_TORCH = "zzc0721/torch-performance-test-data:database.md"
_ADA_FP8 = ("vllm-project/vllm pull request #6677 (NVIDIA L40S, torch._scaled_mm best time 45.50 us at "
            "M, K, N = 512, 4096, 4096)")
MEASURED = {
    ("a100-sxm-80gb", "bf16"): (271.2, 312.0, _TABLE + " (BF16, NVIDIA A100 SXM)"),
    ("h100-sxm", "bf16"): (794.5, 989.0, _TABLE + " (BF16, NVIDIA H100 SXM)"),
    ("h100-sxm", "fp8"): (1402.6, 1979.0, _TABLE + " (FP8, NVIDIA H100 SXM)"),
    ("mi325x", "bf16"): (784.9, 1300.0, _TABLE + " (BF16, AMD MI325X)"),
    ("mi300x", "bf16"): (668.4, 1300.0, _TABLE + " (BF16, AMD MI300X)"),
    ("gaudi3", "bf16"): (1288.8, 1677.0, _TABLE + " (v1 table, Intel Gaudi 3)"),
    ("mi300x", "fp8"): (1273.0, 2614.9, _AMD + " (FP8, AMD Instinct MI300X)"),
    ("mi325x", "fp8"): (1519.0, 2614.9, _AMD + " (FP8, AMD Instinct MI325X)"),
    ("l40s", "bf16"): (269.15, 362.05, _TORCH + " (BF16, NVIDIA L40S)"),
    ("l40s", "fp16"): (264.02, 362.05, _TORCH + " (FP16, NVIDIA L40S)"),
    ("l40s", "fp8"): (2 * 512 * 4096 * 4096 / 45.50e-6 / 1e12, 733.0, _ADA_FP8),
}

# A device without its own measurement -> the device whose measurement it borrows.
ANALOGY = {
    "h200": "h100-sxm",      # the same GH100 die at the same 700 W
    "h800": "h100-sxm",      # GH100, export variant (same SMs and clocks)
    "h100-nvl": "h100-sxm",
    "h100-pcie": "h100-sxm",
    "h20": "h100-sxm",
    "b200": "h100-sxm",      # no published Blackwell MAMF: the previous NVIDIA generation
    "b300": "h100-sxm",
    "gb200": "h100-sxm",
    "gb300": "h100-sxm",
    "rtx-pro-6000": "h100-sxm",
    "rtx-4090": "h100-sxm",
    "rtx-5090": "h100-sxm",
    "rtx-3090": "a100-sxm-80gb",
    "v100-sxm2": "a100-sxm-80gb",
    "mi355x": "mi325x",
}
# Format -> the measured format it borrows when the device has no measurement of its own.
FORMAT_ANALOGY = {"fp16": "bf16", "fp4": "fp8", "mxfp4": "fp8", "nvfp4": "fp8", "int8": "fp8",
                  "int4": "fp8", "fp6": "fp8", "tf32": "bf16", "fp32": "bf16"}
DEFAULT = "h100-sxm"   # anything else: the most measured device (stated as assumed)

# Streaming multiprocessors (NVIDIA) or compute units (AMD) per device, from the
# vendors' architecture whitepapers / datasheets.
SMS = {
    "a100-sxm-80gb": 108, "h100-sxm": 132, "h100-nvl": 132, "h100-pcie": 114, "h200": 132,
    "h800": 132, "h20": 78, "b200": 148, "b300": 160, "gb200": 148, "gb300": 160, "l40s": 142,
    "rtx-4090": 128, "rtx-5090": 170, "rtx-3090": 82, "rtx-pro-6000": 188, "v100-sxm2": 80,
    "mi300x": 304, "mi325x": 304, "mi355x": 256,
}
TILE = 128


class Fraction(tuple):
    """(fraction of the dense peak, basis, source): basis 'measured' or 'assumed (...)'."""
    __slots__ = ()

    @property
    def value(self):
        return self[0]


def _measured(device_id, fmt):
    """(achieved, table theory, locator, format used) of a device, its own format
    first, then the format's analogy; None when neither is measured."""
    for f in (fmt, FORMAT_ANALOGY.get(fmt), "bf16"):
        if f and (device_id, f) in MEASURED:
            return MEASURED[(device_id, f)] + (f,)
    return None


def matmul_fraction(device_id, fmt, peak):
    """Fraction (<= 1) of the device's dense matrix peak `peak` (FLOP/s) for `fmt` that
    a tuned GEMM achieves at its best shape: Fraction((value, basis, source)); basis
    'measured' (MAMF / peak), or 'assumed (...)' naming the measurement it borrows
    (whose MAMF / the table's theoretical figure is applied to `peak`)."""
    own = _measured(device_id, fmt)
    if own is not None and own[3] == fmt:
        return Fraction((min(1.0, own[0] * 1e12 / peak), "measured", own[2]))
    if own is not None:
        return Fraction((min(1.0, own[0] / own[1]), f"assumed ({own[3]} of the same device)", own[2]))
    twin = ANALOGY.get(device_id, DEFAULT)
    got = _measured(twin, fmt)
    value = got[0] / got[1]
    return Fraction((min(1.0, value), f"assumed ({twin} {got[3]}: no published measurement for "
                     f"{device_id} {fmt})", got[2]))


def wave_efficiency(m, n, sms, tile=TILE):
    """tiles / (waves x SMs) of an [m, n] GEMM output on `sms` SMs; 1.0 below one
    full wave (split-K fills the SMs) or when the SM count is unknown (None)."""
    if not sms or m <= 0 or n <= 0:
        return 1.0
    tiles = math.ceil(m / tile) * math.ceil(n / tile)
    if tiles < sms:
        return 1.0
    return tiles / (math.ceil(tiles / sms) * sms)

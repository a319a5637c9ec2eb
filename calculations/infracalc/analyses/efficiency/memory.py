"""Achievable HBM bandwidth, and fused-attention throughput.

1. HBM. Source: deepseek-ai/FlashMLA, README.md ("Performance"): the dense MLA
   decoding kernel "achieves up to 3000 GB/s in memory-bound configuration" on
   H800 SXM5, whose datasheet bandwidth is 3.35 TB/s: 3000 / 3350 = 0.8955 of the
   datasheet figure, by a kernel that streams a paged cache (the access a decode
   step makes). Devices without a published measurement take that fraction
   (basis "assumed"): no vendor publishes a sustained HBM figure, and the
   stream-style measurements we know of for other HBM devices are not in a
   citable public table.

2. Fused attention (prefill, compute-bound), fraction of the dense matrix peak:
   - A100 bf16: FlashAttention-2 (Dao 2023, arXiv:2307.08691), abstract: forward
     and backward "reaching 50-73% of the theoretical maximum FLOPs/s on A100";
     the top, 0.73, is a tuned kernel at long sequences.
   - H100 bf16: FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608), abstract:
     "FP16 reaching up to 740 TFLOPs/s (75% utilization)": 740 / 989 = 0.748.
   - H100 fp8: the same paper: "with FP8 reaching close to 1.2 PFLOPs/s":
     1200 / 1979 = 0.606.
   - B200 bf16: deepseek-ai/FlashMLA, README.md: the SM100 dense MHA prefill
     kernel "achieves up to 1460 TFlops in forward": 1460 / 2250 = 0.649.
   Other devices and formats borrow the nearest of these (basis "assumed"); with
   no attention figure at all, the device's GEMM fraction (efficiency.matmul).
   No FP8 attention kernel on Ada (NO_FP8_ATTENTION): TensorRT-LLM's FP8 context FMHA
   (`--use_fp8_context_fmha`) supports "only NVIDIA Hopper architecture" (NVIDIA/TensorRT-LLM
   docs/source/performance/perf-best-practices.md), and FlashAttention's FP8 kernel is
   FlashAttention-3's, for Hopper; FlashAttention-2, which runs in FP16/BF16 on "Ampere, Ada, or
   Hopper GPUs" (Dao-AILab/flash-attention README.md), is the prefill kernel there: attention
   runs at the 16-bit peak with FlashAttention-2's A100 fraction, whatever the GEMM format.

4. Inline ECC (GDDR). An HBM device keeps its check bits in a side band (NVIDIA Tesla V100
   whitepaper, "ECC Memory Resiliency": HBM2's sideband ECC runs "without a bandwidth or
   capacity penalty", against the inline ECC of GDDR5, where "6.25% of the overall GDDR5 is
   reserved for ECC bits"). A GDDR device with ECC on (the default on data-centre parts) stores
   them in the same DRAM, 1/16 of it (the L40S's 48 GiB shows 46,080 MiB, item 3), so the check
   bytes travel with the data: at most 15/16 of the bytes a stream moves are data. ECC_DATA_SHARE
   applies it to the sustained fraction of such a device (the least the check bits can cost:
   their own share of the traffic, no extra accesses charged).

3. The memory an engine allocates from: the driver's total in the device's default
   configuration. A device file's memory_bytes is the largest capacity any configuration
   allows (the bound's figure); a GDDR device with ECC enabled, the default on data-centre
   parts, gives up part of it: the L40S's nvidia-smi total is 46,068 MiB with ECC on
   (modal-labs/modal-client pull request #2797, nvidia-smi totals per GPU type) of its
   48 GiB (ECC keeps 1/16: 46,080 MiB, and the driver 12 MiB more). HBM devices keep ECC
   inline at no capacity cost, so their driver total is memory_bytes already.
"""

HBM_MEASURED = {
    "h800": (3000e9, "deepseek-ai/FlashMLA:README.md (dense MLA decode, 3000 GB/s memory-bound on H800 SXM5)"),
}
HBM_DEFAULT = "h800"


# GDDR devices whose ECC is inline and on by default -> the data share of the DRAM's traffic.
_V100 = "NVIDIA Tesla V100 GPU Architecture whitepaper, 'ECC Memory Resiliency' (inline ECC: 6.25% of GDDR reserved)"
ECC_DATA_SHARE = {"l40s": (15 / 16, _V100)}


def hbm_fraction(device_id, bandwidth):
    """(fraction of `bandwidth` a streaming kernel sustains, basis, source); a device with inline
    ECC (ECC_DATA_SHARE) keeps its data share of it."""
    if device_id in HBM_MEASURED:
        got, src = HBM_MEASURED[device_id]
        return min(1.0, got / bandwidth), "measured", src
    got, src = HBM_MEASURED[HBM_DEFAULT]
    basis = f"assumed (the {HBM_DEFAULT} fraction: no published measurement for {device_id})"
    if device_id in ECC_DATA_SHARE:
        share, ecc_src = ECC_DATA_SHARE[device_id]
        return (got / 3350e9 * share, basis[:-1] + f", times {share} for inline ECC)", src + "; " + ecc_src)
    return got / 3350e9, basis, src


_FA2 = "FlashAttention-2 (Dao 2023, arXiv:2307.08691), abstract: up to 73% of peak on A100"
_FA3 = "FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608), abstract"
_FMLA = "deepseek-ai/FlashMLA:README.md (SM100 MHA prefill, 1460 TFLOPS forward on B200)"
ATTENTION_MEASURED = {   # (device, format) -> (fraction of the dense peak, source)
    ("a100-sxm-80gb", "bf16"): (0.73, _FA2),
    ("h100-sxm", "bf16"): (740 / 989, _FA3 + ": FP16 up to 740 TFLOPs/s"),
    ("h100-sxm", "fp8"): (1200 / 1979, _FA3 + ": FP8 close to 1.2 PFLOPs/s"),
    ("b200", "bf16"): (1460 / 2250, _FMLA),
}
ATTENTION_ANALOGY = {"h200": "h100-sxm", "h800": "h100-sxm", "h100-nvl": "h100-sxm",
                     "h100-pcie": "h100-sxm", "h20": "h100-sxm", "gb200": "b200", "b300": "b200", "gb300": "b200",
                     "rtx-3090": "a100-sxm-80gb", "v100-sxm2": "a100-sxm-80gb", "l40s": "a100-sxm-80gb"}
_FORMATS = {"fp16": "bf16", "fp4": "fp8", "int8": "fp8"}
# Devices with FP8 GEMMs and no FP8 fused attention (Ada): attention runs in 16 bits (item 2).
NO_FP8_ATTENTION = {"l40s": "NVIDIA/TensorRT-LLM docs/source/performance/perf-best-practices.md (FP8 context "
                            "FMHA: only Hopper); Dao-AILab/flash-attention README.md (FlashAttention-2 on Ada)"}


def attention_fraction(device_id, fmt):
    """(fraction of the dense peak a fused attention kernel achieves in prefill, basis,
    source), or None when nothing is published for the device or its analogy."""
    for dev in (device_id, ATTENTION_ANALOGY.get(device_id)):
        for f in (fmt, _FORMATS.get(fmt), "fp8" if fmt == "fp4" else None, "bf16"):
            if dev and f and (dev, f) in ATTENTION_MEASURED:
                value, src = ATTENTION_MEASURED[(dev, f)]
                basis = "measured" if (dev, f) == (device_id, fmt) else f"assumed ({dev} {f})"
                return value, basis, src
    return None


ENGINE_MEMORY = {   # device -> (bytes an engine allocates from by default, source)
    "l40s": (46068 * 2**20, "modal-labs/modal-client pull request #2797 (nvidia-smi: NVIDIA L40S "
                            "46,068 MiB total, ECC enabled)"),
}


def engine_memory_bytes(device):
    """The capacity a serving engine allocates from on `device` in its default configuration:
    the ECC-enabled driver total where it is published and below the device's memory_bytes,
    else memory_bytes."""
    got = ENGINE_MEMORY.get(device.id)
    return min(got[0], device.memory_bytes) if got else device.memory_bytes

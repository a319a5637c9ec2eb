"""Number formats and the exact bytes a tensor takes in each.

A tensor of n values in a format of b bits takes ceil(n * b / 8) bytes, plus
its scales:
- a group scale of s bits per g consecutive values along the last axis
  (MXFP4: g = 32, s = 8 (E8M0), OCP Microscaling spec v1.0; NVFP4: g = 16,
  s = 8 (E4M3) plus one FP32 per-tensor scale; int4: g = 128, s = 16, a BF16
  scale per group as in GPTQ/AWQ-style checkpoints, zero points not counted);
- or one scale of s bits per 128 x 128 block of a matrix (FP8 with block
  scales, as DeepSeek-V3's quantization_config weight_block_size [128, 128]).
"""

from .record import Record

from .errors import unknown


class Dtype(Record):
    name: str
    bits: int                  # bits per stored value
    group: int = 0             # values per group scale along the last axis
    scale_bits: int = 0        # bits of one group or block scale
    block: int = 0             # side of a square block scale (2-D tensors)
    tensor_scale_bytes: int = 0  # one extra scale per tensor
    peak: str = ""             # key of the device's matrix peak this format computes at
    description: str = ""

    def nbytes(self, shape):
        """Exact bytes of a tensor of this shape, scales included."""
        n = 1
        for d in shape:
            n *= d
        total = -(-n * self.bits // 8)
        if self.group:
            last = shape[-1]
            groups = (n // last) * -(-last // self.group)
            total += groups * self.scale_bits // 8
        if self.block and len(shape) >= 2:
            lead = n // (shape[-1] * shape[-2])
            blocks = lead * -(-shape[-2] // self.block) * -(-shape[-1] // self.block)
            total += blocks * self.scale_bits // 8
        return total + self.tensor_scale_bytes

    def nbytes_flat(self, n):
        """Bytes of n values that are one row of a larger tensor (a token's
        activations or KV-cache entry): group scales counted; a per-tensor
        scale is not, being one per layer's whole cache, not one per row."""
        return self.nbytes((n,)) - self.tensor_scale_bytes if n else 0

    @property
    def is_quantized(self):
        return self.bits < 8 or bool(self.group or self.block)


DTYPES = {d.name: d for d in (
    Dtype("fp32", 32, peak="fp32", description="IEEE float32"),
    Dtype("bf16", 16, peak="bf16", description="bfloat16"),
    Dtype("fp16", 16, peak="fp16", description="IEEE float16"),
    Dtype("fp8", 8, peak="fp8", description="FP8 (E4M3/E5M2), per-tensor scale not counted"),
    Dtype("fp8-block128", 8, scale_bits=32, block=128, peak="fp8",
          description="FP8 E4M3 with one FP32 scale per 128x128 block (DeepSeek-V3)"),
    Dtype("int8", 8, peak="int8", description="int8, per-channel scales not counted"),
    Dtype("int4", 4, group=128, scale_bits=16, peak="",
          description="int4 weights, one BF16 scale per 128 values (weight-only)"),
    Dtype("fp4", 4, peak="fp4", description="FP4 E2M1, no scales"),
    Dtype("mxfp4", 4, group=32, scale_bits=8, peak="fp4",
          description="MXFP4: E2M1 + one E8M0 scale per 32 values (OCP MX v1.0)"),
    Dtype("nvfp4", 4, group=16, scale_bits=8, tensor_scale_bytes=4, peak="fp4",
          description="NVFP4: E2M1 + one E4M3 scale per 16 values + one FP32 per tensor"),
)}


def dtype(name):
    """Look a format up by name; an unknown name is a UserError."""
    try:
        return DTYPES[name]
    except KeyError:
        raise unknown("dtype", name, DTYPES) from None

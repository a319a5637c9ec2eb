"""Number formats and the exact bytes a tensor takes in each.

A tensor of n values in a format of b bits takes ceil(n * b / 8) bytes, plus
its scales:
- a group scale of s bits per g consecutive values along the last axis (the
  input dimension K of a weight stored [N, K], so each output row has
  ceil(K / g) groups);
- or one scale of s bits per B x B block of a matrix (FP8 with block scales,
  as DeepSeek-V3's quantization_config weight_block_size [128, 128]);
- plus, for NVFP4, one FP32 scale per tensor.

Names say the scales: BASE[-gG[-SCALE]] for a group scale per G values,
BASE[-bB[-SCALE]] for a B x B block scale, e.g. int8-g128 = int8 with one
BF16 scale per 128 values (GPTQ/AWQ-style symmetric weights, zero points not
counted), int4-g32-fp16, fp8-b128 (= fp8-block128). A plain base name
(int8, int4, fp8, fp4) carries no scales. The named microscaling formats
follow their specifications: MXFP8 and MXFP4 = E4M3 / E2M1 with one E8M0
scale per 32 values (OCP Microscaling Formats (MX) v1.0); NVFP4 = E2M1 with
one E4M3 scale per 16 values and one FP32 per tensor (NVIDIA Blackwell).
"""

from .record import Record

from .errors import UserError
from .memo import remember
from .splits import ceil_div


class Dtype(Record):
    name: str
    bits: int                  # bits per stored value
    group: int = 0             # values per group scale along the last axis
    scale_bits: int = 0        # bits of one group or block scale
    block: int = 0             # side of a square block scale (2-D tensors)
    tensor_scale_bytes: int = 0  # one extra scale per tensor
    peak: str = ""             # key of the device's matrix peak this format computes at
    description: str = ""
    caches: tuple = ()         # a KV-cache format only: ((kind, Dtype), ...) for caches of those kinds
    row_values: int = 0        # a fixed cache-row layout (ROW_FORMATS): rows of exactly this many values ...
    row_bytes: int = 0         # ... of this many bytes each

    def for_cache(self, kind):
        """The format of the cache rows of `kind` (CACHE_KINDS): an override of a composite
        KV format (`BASE,KIND=FORMAT,...`), else this format itself."""
        for k, d in self.caches:
            if k == kind:
                return d
        return self

    def nbytes(self, shape):
        """Exact bytes of a tensor of this shape, scales included."""
        if self.row_values:
            raise UserError(f"{self.name} is a cache-row layout ({self.description}), not a tensor format")
        n = 1
        for d in shape:
            n *= d
        total = ceil_div(n * self.bits, 8)
        if self.group:
            last = shape[-1]
            groups = (n // last) * ceil_div(last, self.group)
            total += groups * self.scale_bits // 8
        if self.block and len(shape) >= 2:
            lead = n // (shape[-1] * shape[-2])
            blocks = lead * ceil_div(shape[-2], self.block) * ceil_div(shape[-1], self.block)
            total += blocks * self.scale_bits // 8
        return total + self.tensor_scale_bytes

    def elements(self, shape):
        """The elements a safetensors file holds for a tensor of this shape (what a checkpoint's
        parameter count sums, huggingface_hub's SafetensorsRepoMetadata.parameter_count): its
        values, packed into bytes (uint8 elements, ceil(n x bits / 8)) when narrower than 8 bits
        as ModelOpt exports NVFP4, plus one element per group or block scale. A per-tensor scale
        is a scalar tensor of its own and is not counted."""
        n = 1
        for d in shape:
            n *= d
        total = ceil_div(n * self.bits, 8) if self.bits < 8 else n
        if self.group:
            total += (n // shape[-1]) * ceil_div(shape[-1], self.group)
        if self.block and len(shape) >= 2:
            total += n // (shape[-1] * shape[-2]) * ceil_div(shape[-2], self.block) * ceil_div(shape[-1], self.block)
        return total

    def nbytes_flat(self, n):
        """Bytes of n values that are one row of a larger tensor (a token's
        activations or KV-cache entry): group scales counted; a per-tensor
        scale is not, being one per layer's whole cache, not one per row."""
        if self.row_values:
            if n % self.row_values:
                raise UserError(f"{self.name} keeps rows of {self.row_values} values, not {n} ({self.description})")
            return n // self.row_values * self.row_bytes
        if not self.group:   # no group scales (a block scale needs two dimensions): ceil(n * bits / 8)
            return ceil_div(n * self.bits, 8)
        return self.nbytes((n,)) - self.tensor_scale_bytes if n else 0

    @property
    def is_quantized(self):
        return self.bits < 8 or bool(self.group or self.block)


# Base formats: (bits, matrix peak key, description). int4 has no matrix peak on
# the bundled devices: it is a storage (weight-only) format.
BASES = {
    "fp32": (32, "fp32", "IEEE float32"),
    "bf16": (16, "bf16", "bfloat16"),
    "fp16": (16, "fp16", "IEEE float16"),
    "fp8": (8, "fp8", "FP8 (E4M3/E5M2)"),
    "int8": (8, "int8", "int8"),
    "int4": (4, "", "int4 (weight-only: computes at the activation format)"),
    "fp4": (4, "fp4", "FP4 E2M1"),
}
# Scale formats a name may end in, with their bits.
SCALES = {"bf16": 16, "fp16": 16, "fp32": 32, "e8m0": 8, "e4m3": 8}
DEFAULT_GROUP_SCALE = "bf16"   # GPTQ/AWQ-style checkpoints; the book's 8- and 4-bit weights
DEFAULT_BLOCK_SCALE = "fp32"   # DeepSeek-V3's weight_scale_inv


def scaled(base, group=0, block=0, scale=None, name=None, description=None, tensor_scale_bytes=0):
    """A base format with a group (or block) scale of format `scale`."""
    bits, peak, text = BASES[base]
    scale = scale or (DEFAULT_BLOCK_SCALE if block else DEFAULT_GROUP_SCALE)
    if not name:
        name = f"{base}-{'b' if block else 'g'}{block or group}"
        default = DEFAULT_BLOCK_SCALE if block else DEFAULT_GROUP_SCALE
        name += "" if scale == default else f"-{scale}"
    if description is None:
        per = f"{block}x{block} block" if block else f"{group} values"
        description = f"{text} + one {scale.upper()} scale per {per}"
    return Dtype(name, bits, group=group, scale_bits=SCALES[scale], block=block,
                 tensor_scale_bytes=tensor_scale_bytes, peak=peak, description=description)


def _plain(base):
    bits, peak, text = BASES[base]
    scales = " (per-channel / per-tensor scales not counted)" if bits <= 8 else ""
    return Dtype(base, bits, peak=peak, description=text + scales)


DTYPES = {d.name: d for d in (
    *(_plain(b) for b in BASES),
    scaled("int8", group=128),
    scaled("int4", group=128),
    scaled("fp8", block=128, name="fp8-block128",
           description="FP8 E4M3 with one FP32 scale per 128x128 block (DeepSeek-V3); = fp8-b128"),
    scaled("fp8", group=32, scale="e8m0", name="mxfp8",
           description="MXFP8: E4M3 + one E8M0 scale per 32 values (OCP MX v1.0)"),
    scaled("fp4", group=32, scale="e8m0", name="mxfp4",
           description="MXFP4: E2M1 + one E8M0 scale per 32 values (OCP MX v1.0)"),
    scaled("fp4", group=16, scale="e4m3", name="nvfp4", tensor_scale_bytes=4,
           description="NVFP4: E2M1 + one E4M3 scale per 16 values + one FP32 per tensor"),
)}

# Fixed cache-row layouts (a KV format only, e.g. a composite's `entry=`): bits is the
# layout's mean bits per value, for messages; the bytes are the row's.
ROW_FORMATS = {d.name: d for d in (
    Dtype("flashmla-v4", 9, peak="fp8", row_values=512, row_bytes=584,
          description="FlashMLA's DeepSeek-V4 KV row: 448 FP8 E4M3 NoPE values + 64 BF16 RoPE values + 8 B of "
                      "scales and padding = 584 B per 512 values (deepseek-ai/FlashMLA README at 07a10898, "
                      "as bojieli/ai-infra-book's V4.1 research note quotes it)"),
)}

# Formats a checkpoint keeps a non-weight tensor in (Tensor.stored), never a --weight-dtype:
# integer lookup tables (DeepSeek-V4's hash-routing tid2eid, I64 in the checkpoint).
STORED_ONLY = {"int64": Dtype("int64", 64, description="int64 (integer lookup tables)")}

# The formats the book's tables use (bojieli/ai-infra-book, calculations/results).
BOOK_FORMATS = (
    "bf16 (weights, activations and KV cache of the baseline)",
    "int8-g128 (the book's '8-bit' weights: one BF16 scale per 128 values of each row)",
    "int4-g128 (the book's '4-bit' weights, same scales)",
    "int8-g1000 and int4-g1000 (its 'group1000 tail group': one BF16 scale per 1000 values, "
    "the last group of a row short)",
    "int8-g32-fp16 and int4-g32-fp16 (GGML's Q8_0 and Q4_0 KV blocks)",
)

_CACHE = {}
_CACHE_KEPT = 1 << 10   # parsed names kept (memo.remember)

# Kinds of cache row a KV format may set apart (`--kv-dtype BASE,KIND=FORMAT,...`): the
# sliding-window rows of DeepSeek-V4/V4.1 attention, compressed entries, and indexer keys.
CACHE_KINDS = {"window": "sliding-window K=V rows", "entry": "compressed cache entries",
               "index": "indexer key rows"}


def cache_formats(name):
    """BASE,KIND=FORMAT[,KIND=FORMAT...] -> a Dtype of BASE whose cache rows of each KIND are in
    FORMAT (Dtype.for_cache): one KV cache that keeps different rows in different formats
    (DeepSeek-V4.1's FP8 window rows, FP4 entries and MXFP4 index keys)."""
    base, *pairs = [p.strip() for p in name.split(",")]
    caches = []
    for pair in pairs:
        kind, eq, fmt = pair.partition("=")
        if not eq or kind not in CACHE_KINDS or not fmt or "," in fmt:
            raise UserError(f"KV format '{name}': '{pair}' is not KIND=FORMAT with KIND one of "
                            f"{', '.join(CACHE_KINDS)}")
        if kind in dict(caches):
            raise UserError(f"KV format '{name}': cache kind '{kind}' given twice")
        caches.append((kind, dtype(fmt)))
    d = dtype(base)
    label = ",".join([d.name] + [f"{k}={f.name}" for k, f in caches])
    text = "; ".join([d.description] + [f"{CACHE_KINDS[k]}: {f.description}" for k, f in caches])
    return d.replace(name=label, caches=tuple(caches), description=text)


def parse(name):
    """BASE-gG[-SCALE] or BASE-bB[-SCALE] -> Dtype, or None if the name does not parse."""
    parts = name.split("-")
    if len(parts) not in (2, 3) or parts[0] not in BASES or BASES[parts[0]][0] > 8:
        return None
    kind, size = parts[1][:1], parts[1][1:]
    if kind not in ("g", "b") or not size.isdigit() or int(size) < 1 or size != str(int(size)):
        return None
    scale = parts[2] if len(parts) == 3 else None
    if scale is not None and scale not in SCALES:
        return None
    n = int(size)
    return scaled(parts[0], group=n if kind == "g" else 0, block=n if kind == "b" else 0, scale=scale)


# Other tools' spellings of our formats: Hugging Face's torch_dtype names and vLLM's
# --dtype / --kv-cache-dtype values (an FP8 cache of either encoding is 1 byte per value).
SPELLINGS = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32",
             "float": "fp32", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "float8_e4m3fn": "fp8",
             "float8_e5m2": "fp8", "fp8_e4m3fn": "fp8"}


def dtype(name):
    """Look a format up by name (a named one, or BASE-gG[-SCALE] / BASE-bB[-SCALE], in
    either case, or another tool's spelling in SPELLINGS); an unknown name is a UserError."""
    if name in DTYPES:
        return DTYPES[name]
    if name in ROW_FORMATS:
        return ROW_FORMATS[name]
    if "," in name:
        if name not in _CACHE:
            remember(_CACHE, _CACHE_KEPT, name, cache_formats(name))
        return _CACHE[name]
    lower = name.lower()
    name = SPELLINGS.get(lower, lower if lower in DTYPES or "-" in lower else name)
    if name in DTYPES:
        return DTYPES[name]
    if name not in _CACHE:
        d = parse(name)
        if d is None:
            from .errors import suggest
            hint = suggest(name, DTYPES) or f"; choose from {', '.join(DTYPES)}"
            raise UserError(f"unknown dtype '{name}'{hint} (or BASE-gG[-SCALE] / BASE-bB[-SCALE] with "
                            f"BASE one of {', '.join(b for b in BASES if BASES[b][0] <= 8)} and SCALE "
                            f"one of {', '.join(SCALES)})") from None
        return remember(_CACHE, _CACHE_KEPT, name, d)
    return _CACHE[name]


def format_help():
    """The formats paragraph shown in --help (argparse epilog)."""
    return ("formats: " + ", ".join(DTYPES) + "; any BASE-gG[-SCALE] (one SCALE per G values "
            f"along a row, SCALE default {DEFAULT_GROUP_SCALE}) or BASE-bB[-SCALE] (one per BxB "
            f"block, default {DEFAULT_BLOCK_SCALE}), SCALE one of {', '.join(SCALES)}; a KV format may be "
            f"BASE,KIND=FORMAT,... (KIND one of {', '.join(CACHE_KINDS)}: DeepSeek-V4/V4.1 cache rows; FORMAT "
            f"also a row layout: {', '.join(ROW_FORMATS)}). "
            "The book's tables use: " + "; ".join(BOOK_FORMATS) + ".")

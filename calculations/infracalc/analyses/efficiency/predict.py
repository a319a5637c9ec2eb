"""The predicted time of an operator and of a pass: the ledger at achievable rates.

For one ledger row (an operator over `repeats` identical layers):

    matrix_s  = matrix FLOPs / (peak x MAMF fraction x wave efficiency)     (GEMMs)
              = matrix FLOPs / (attention rate)                             (fused attention)
    vector_s  = vector FLOPs / vector peak
    memory_s  = bytes moved / (bandwidth x HBM fraction)
    predicted = max(matrix_s + vector_s, memory_s) + kernels x KERNEL_S

with the fractions of efficiency.matmul and efficiency.memory (each <= 1, so a
predicted time is never below the operator's bound) and `kernels` = repeats for a
row that moves bytes (one launch per layer; rows that move nothing, softmax inside
a fused attention kernel, add none). KERNEL_S is the fixed cost of a short kernel
(launch gap and tail under CUDA graphs): a constant fitted on the validation
corpus (analyses/validate, leave one publisher out; docs/prediction.md), not a
measurement. A pass's prediction is the sum over its rows (no overlap between
operators, the order in which a stream runs them).

Attention rate: the fused-attention fraction of efficiency.memory times the dense
peak of the format attention runs in: the compute format, except FP4 (no FP4
attention kernel is published: attention runs in FP8, else BF16), and 16 bits on a
device with no FP8 attention kernel (efficiency.memory.NO_FP8_ATTENTION: Ada).
"""

from operator import add

from ...record import Record
from . import matmul, memory
from ...summation import plain_sum

PREDICTION_CONVENTION = (
    "Predicted (a third figure, not a bound): each operator at the rates a well-tuned stack "
    "achieves (the device's measured maximum achievable matmul FLOP/s times the wave "
    "efficiency of its output tiles, fused-attention throughput, sustained HBM bandwidth, "
    "a fixed cost per kernel), operators summed; every rate and its source is in the "
    "record's `prediction` and in docs/prediction.md; 'assumed' marks a borrowed figure.")
KERNEL_S = 4e-6   # fitted: efficiency.serving.FITTED["all"][0] (see docs/prediction.md)


def _gemm_m_n(shape):
    """(m, n) of a shape that reads [m,k]x[k,n] (decimal digits), else None: a plain
    parse, as a regular expression's compile alone cost 0.7 M instructions per command."""
    if not (shape.startswith("[") and shape.endswith("]")):
        return None
    left, sep, right = shape[1:-1].partition("]x[")
    dims = left.split(",") + right.split(",") if sep else ()
    if len(dims) != 4 or not all(d.isdecimal() for d in dims):
        return None
    return int(dims[0]), int(dims[3])


class Rates(Record):
    """Achievable rates of a device computing in one format, with their bases."""
    matrix_flops_per_s: float
    attention_flops_per_s: float
    vector_flops_per_s: float
    bytes_per_s: float
    sms: int = 0
    kernel_s: float = KERNEL_S
    matrix_fraction: float = 1.0
    memory_fraction: float = 1.0
    bases: tuple = ()   # ((what, fraction, basis, source), ...)


def _attention_format(device, fmt):
    """(format, dense peak) fused attention runs in: the compute format, except FP4 (FP8, else
    16 bits) and on a device with no FP8 attention kernel (memory.NO_FP8_ATTENTION: 16 bits)."""
    peaks = dict(device.matrix_flops_per_s)
    order = ((fmt,) if fmt != "fp4" else ()) + ("fp8", "bf16", "fp16")
    if device.id in memory.NO_FP8_ATTENTION:
        order = tuple(f for f in order if f in ("bf16", "fp16"))
    for f in order:
        if peaks.get(f):
            return f, peaks[f]
    return fmt, None


def achievable(device, compute_dtype, kernel_s=KERNEL_S):
    """The Rates of `device` computing in `compute_dtype` (None when the device
    publishes no matrix peak for it: no prediction without a peak to scale)."""
    fmt = compute_dtype.peak or compute_dtype.name
    peak = device.peak(compute_dtype)
    if not peak or not device.vector_flops_per_s:
        return None
    mm = matmul.matmul_fraction(device.id, fmt, peak)
    hbm = memory.hbm_fraction(device.id, device.memory_bandwidth_bytes_per_s)
    afmt, apeak = _attention_format(device, fmt)
    att = memory.attention_fraction(device.id, afmt)
    if att is None or not apeak:
        att, apeak = (mm[0], mm[1], mm[2]), peak
    bases = (("matrix", mm[0], mm[1], mm[2]), ("hbm", hbm[0], hbm[1], hbm[2]),
             (f"attention ({afmt})", att[0], att[1], att[2]))
    return Rates(matrix_flops_per_s=peak * mm[0], attention_flops_per_s=apeak * att[0],
                 vector_flops_per_s=device.vector_flops_per_s,
                 bytes_per_s=device.memory_bandwidth_bytes_per_s * hbm[0],
                 sms=matmul.SMS.get(device.id, 0), kernel_s=kernel_s,
                 matrix_fraction=mm[0], memory_fraction=hbm[0], bases=bases)


def wave(op, sms):
    """Wave efficiency of a GEMM row whose shape reads [m,k]x[k,n] (1.0 otherwise)."""
    g = _gemm_m_n(op.shape) if op.category == "linear" else None
    return matmul.wave_efficiency(g[0], g[1], sms) if g else 1.0


def op_time(op, p):
    """Predicted seconds of one ledger row on Rates `p`."""
    matrix_s = op.matrix_flops / _matrix_rate(op, p) if op.matrix_flops else 0.0
    compute_s = matrix_s + op.vector_flops / p.vector_flops_per_s
    moved = op.bytes_moved
    kernels = op.repeats if moved else 0
    return max(compute_s, moved / p.bytes_per_s) + kernels * p.kernel_s


def kernel_count(ops):
    """Kernel launches of rows: one per layer of every row that moves bytes (op_time's count)."""
    return plain_sum(op.repeats for op in ops if op.bytes_moved)


def pass_time(ops, p):
    """Predicted seconds of a pass: its rows' predicted times summed."""
    return plain_sum(op_time(op, p) for op in ops)


def rates_record(p):
    """The prediction's rates and their sources, for a result record."""
    return {
        "matrix_flops_per_s": p.matrix_flops_per_s,
        "attention_flops_per_s": p.attention_flops_per_s,
        "bytes_per_s": p.bytes_per_s,
        "kernel_s": p.kernel_s,
        "fractions": [{"rate": what, "fraction": f, "basis": basis, "source": src}
                      for what, f, basis, src in p.bases],
    }


def _matrix_rate(op, p):
    if op.category == "attention":
        return p.attention_flops_per_s
    return p.matrix_flops_per_s * wave(op, p.sms)


def piece_times(steps, p):
    """Per operator of decode steps (analyses/decode_sum.Steps): predicted seconds summed
    over every step, each step's max(compute, memory) at the achievable rates (the
    runs' exact split where an operator turns compute-bound) plus its kernels: the
    compute time of its compute-side steps' summed FLOPs, the memory time of its
    memory-side steps' summed bytes (exact integer sums, each turned into seconds
    once), and repeats x kernel_s per step that moves bytes."""
    from ..decode_sum import FIELDS

    mf, vf = FIELDS.index("matrix_flops"), FIELDS.index("vector_flops")
    moved = [FIELDS.index(f) for f in ("weight_read", "act_read", "kv_read", "act_write", "kv_write")]

    def moved_bytes(v):
        return plain_sum([v[j] for j in moved])

    from ..decode_sum import constant

    out = []
    vector_rate, bw, kernel_s = p.vector_flops_per_s, p.bytes_per_s, p.kernel_s
    for op, runs in zip(steps.ops, steps.runs):
        rate = _matrix_rate(op, p)
        steady = constant(runs)
        if steady is not None:   # one bound on every step (the split below, without it)
            v0, n = steady
            c0, m0 = v0[mf] / rate + v0[vf] / vector_rate, moved_bytes(v0)
            v = v0 if n == 1 else tuple([n * x for x in v0])
            total = v[mf] / rate + v[vf] / vector_rate if c0 - m0 / bw > 0 else moved_bytes(v) / bw
            out.append(total + n * op.repeats * kernel_s if m0 else total)
            continue

        def compute_s(v):
            return v[mf] / rate + v[vf] / p.vector_flops_per_s

        def memory_s(v):
            return moved_bytes(v) / p.bytes_per_s

        on_compute = on_memory = None
        kernels = 0
        for run in runs:
            for is_compute, count, v in run.split(compute_s, memory_s):
                if is_compute:
                    on_compute = v if on_compute is None else tuple(map(add, on_compute, v))
                else:
                    on_memory = v if on_memory is None else tuple(map(add, on_memory, v))
                if moved_bytes(v):
                    kernels += count
        total = compute_s(on_compute) if on_compute else 0.0
        if on_memory:
            total += memory_s(on_memory)
        out.append(total + kernels * op.repeats * p.kernel_s if kernels else total)
    return out

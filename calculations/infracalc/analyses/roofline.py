"""Roofline bounds: time >= max(compute time, memory time).

An operator's compute time is matrix FLOPs / (matrix peak of its compute
format x efficiency) + vector FLOPs / (vector FP32 peak x efficiency); its
memory time is bytes moved / (bandwidth x efficiency). A pass's bound is the
sum of its operators' bounds; the ideal bound overlaps everything:
max(all FLOPs at peak, unique bytes / bandwidth).

A device without a published peak for the work (Apple GPUs publish no matrix
peak, TPUs no vector peak) has that rate stored as UNKNOWN (infinite): those
FLOPs add no compute time (the bound stays a lower bound, set by memory) and
the operator's bound says the compute side is unknown. No stand-in peak is used.
"""

from ..record import Record


UNKNOWN_COMPUTE = "memory; compute unknown"
UNKNOWN = float("inf")   # the rate of work without a published peak: it then takes 0 s


class Roof(Record):
    """A device's ceilings for one compute format, with efficiency applied;
    a rate of UNKNOWN (infinite) has no published peak: its FLOPs take no time."""
    matrix_flops_per_s: float
    vector_flops_per_s: float
    bytes_per_s: float

    def compute_s(self, matrix_flops, vector_flops):
        """Known compute time: FLOPs over their peak (0 s where the peak is UNKNOWN)."""
        return matrix_flops / self.matrix_flops_per_s + vector_flops / self.vector_flops_per_s

    def memory_s(self, nbytes):
        return nbytes / self.bytes_per_s

    def compute_unknown(self, matrix_flops, vector_flops):
        """True when some of these FLOPs have no published peak on the device."""
        return bool((matrix_flops and self.matrix_flops_per_s == UNKNOWN)
                    or (vector_flops and self.vector_flops_per_s == UNKNOWN))


def unknown_peaks(r, matrix_flops=1, vector_flops=1):
    """The sides ('matrix', 'vector') whose FLOPs (any, by default) have no published
    peak on the device: their time is left out of every compute time."""
    return [side for side, flops, rate in (("matrix", matrix_flops, r.matrix_flops_per_s),
                                           ("vector", vector_flops, r.vector_flops_per_s))
            if flops and rate == UNKNOWN]


def compute_noted(r, matrix_flops, vector_flops):
    """'compute', plus '; vector compute unknown' (or matrix) for each side of these FLOPs
    with no published peak: a compute-bound time that leaves those FLOPs out (a TPU's
    biases and norms: matrix peak published, vector not), said as the totals say it."""
    return "compute" + "".join(f"; {side} compute unknown" for side in unknown_peaks(r, matrix_flops, vector_flops))


def roof(device, compute_dtype, compute_efficiency=1.0, memory_efficiency=1.0):
    """The ceilings of `device` computing in `compute_dtype`: its matrix peak for
    that format and its FP32 (else BF16) non-tensor peak, UNKNOWN where the
    device file gives none."""
    peak = device.peak(compute_dtype)
    return Roof(peak * compute_efficiency if peak else UNKNOWN,
                device.vector_flops_per_s * compute_efficiency if device.vector_flops_per_s else UNKNOWN,
                device.memory_bandwidth_bytes_per_s * memory_efficiency)


def bound_name(r, compute_s, memory_s, matrix_flops, vector_flops):
    """'compute' (with compute_noted's '; vector compute unknown' where due), 'memory',
    or 'memory; compute unknown' when the known compute time does not exceed the
    memory time and some FLOPs have no published peak."""
    if compute_s > memory_s:
        return compute_noted(r, matrix_flops, vector_flops)
    return UNKNOWN_COMPUTE if r.compute_unknown(matrix_flops, vector_flops) else "memory"


def op_bound(op, r):
    """(compute_s, memory_s, time_s, bound) of one operator row."""
    c = r.compute_s(op.matrix_flops, op.vector_flops)
    m = r.memory_s(op.bytes_moved)
    return c, m, max(c, m), bound_name(r, c, m, op.matrix_flops, op.vector_flops)


def ideal_bound(totals, r):
    """(compute_s, memory_s, time_s) of the whole pass with perfect overlap."""
    compute = r.compute_s(totals.matrix_flops, totals.vector_flops)
    memory = r.memory_s(totals.unique_bytes)
    return compute, memory, max(compute, memory)

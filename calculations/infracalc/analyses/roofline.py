"""Roofline bounds: time >= max(compute time, memory time).

An operator's compute time is matrix FLOPs / (matrix peak of its compute
format x efficiency) + vector FLOPs / (vector FP32 peak x efficiency); its
memory time is bytes moved / (bandwidth x efficiency). A pass's bound is the
sum of its operators' bounds; the ideal bound overlaps everything:
max(all FLOPs at peak, unique bytes / bandwidth).
"""

from ..record import Record


class Roof(Record):
    """A device's ceilings for one compute format, with efficiency applied."""
    matrix_flops_per_s: float
    vector_flops_per_s: float
    bytes_per_s: float

    def compute_s(self, matrix_flops, vector_flops):
        return matrix_flops / self.matrix_flops_per_s + vector_flops / self.vector_flops_per_s

    def memory_s(self, nbytes):
        return nbytes / self.bytes_per_s


def vector_peak(device, compute_dtype):
    """The vector peak: the device's published FP32 (else BF16) non-tensor
    figure; where none is published (TPUs), the matrix peak, which keeps the
    bound a lower bound but is optimistic for vector work (stated in output)."""
    return device.vector_flops_per_s or device.peak(compute_dtype)


def roof(device, compute_dtype, compute_efficiency=1.0, memory_efficiency=1.0):
    return Roof(device.peak(compute_dtype) * compute_efficiency,
                vector_peak(device, compute_dtype) * compute_efficiency,
                device.memory_bandwidth_bytes_per_s * memory_efficiency)


def op_bound(op, r):
    """(compute_s, memory_s, time_s, bound) of one operator row."""
    c = r.compute_s(op.matrix_flops, op.vector_flops)
    m = r.memory_s(op.bytes_moved)
    return c, m, max(c, m), "compute" if c > m else "memory"


def ideal_bound(totals, r):
    """(compute_s, memory_s, time_s) of the whole pass with perfect overlap."""
    compute = r.compute_s(totals.matrix_flops, totals.vector_flops)
    memory = r.memory_s(totals.unique_bytes)
    return compute, memory, max(compute, memory)

"""`gemm` and `attention`: one kernel's work and its roofline on one or more devices.

A kernel is a short list of ledger operators (ops.py factories, blocks.attention)
run as one fused kernel: its FLOPs are the operators' sum, its bytes the
operands it reads and writes once. On a device computing in format f:

    arithmetic intensity I = FLOPs / bytes              (FLOP per byte)
    ridge point          R = peak(f) / bandwidth        (FLOP per byte)
    time bound           t = max(matrix FLOPs / peak(f) + vector FLOPs / vector peak,
                                 bytes / bandwidth)       (analyses/roofline.py)

The kernel is compute-bound when its compute time exceeds its memory time
(for pure matrix work: when I > R). A device with no published peak for f
has an unknown compute side: its time is the memory time, a lower bound.
"""

from ..arch import Tensor
from ..ledger import sum_field
from ..ops import gemm
from ..record import Record
from ..workload import Workload
from .records import SCHEMA_VERSION
from .efficiency import predict
from .roofline import bound_name, roof

KERNEL_CONVENTIONS = (
    "A multiply-add is 2 FLOPs: [M,K]x[K,N] is 2*M*K*N matrix FLOPs.",
    "Bytes: every operand crosses memory exactly once (inputs and weights read, outputs "
    "written), in its stated format with its scales; nothing is re-read (ideal tiling) and "
    "nothing stays in cache between kernels.",
    "Roofline: time = max(matrix FLOPs / dense matrix peak of the compute format + vector "
    "FLOPs / FP32 vector peak, bytes / memory bandwidth); ridge point = peak / bandwidth "
    "(FLOP per byte); compute-bound when the compute time exceeds the memory time. Peaks "
    "are dense, never 2:4 sparse; a peak the vendor does not publish is unknown, and the "
    "bound is then the memory time (stated as 'memory; compute unknown').",
)


ATTENTION_CONVENTIONS = (
    "Attention core, fused (FlashAttention-style): QK^T is 2 * head_dim FLOPs per query-key pair "
    "per head and PV the same; softmax 5 vector FLOPs per pair stays on chip (scores are never "
    "written); Q is read and the output written once; each request's K and V rows are read once "
    "(KV heads shared by a GQA group are read once). Causal: the T queries are the last T of the "
    "K positions and query p sees keys 0..p, T*(K-T) + T*(T+1)/2 pairs; not causal: T*K pairs "
    "(the rectangular count, reported beside the causal one).",
)


class Kernel(Record):
    """One fused kernel: its operator rows and the format it computes in."""
    ops: tuple
    compute_dtype: object

    def total(self, attr):
        return sum_field(self.ops, attr)


def gemm_kernel(m, k, n, input_dtype, weight_dtype, output_dtype, compute_dtype=None):
    """[M,K] activations x a [K,N] weight (stored [N,K]) -> [M,N] outputs (ops.gemm),
    computing at `compute_dtype`'s peak (default: the input format)."""
    w = Workload(tokens=m, weight_dtype=weight_dtype, act_dtype=input_dtype)
    op = gemm(w, "gemm", m, Tensor("weight", (n, k)), out_dtype=output_dtype)
    compute = compute_dtype or input_dtype
    return Kernel((op.replace(compute=compute.name),), compute)


def attention_kernel(queries, keys, heads, head_dim, kv_heads, causal, batch, act_dtype, kv_dtype):
    """The attention core (QK^T, softmax, PV; blocks.attention) of `batch` requests,
    each with `queries` new queries over `keys` keys. Causal: the queries are the
    last `queries` of the `keys` positions, query p sees keys 0..p; otherwise every
    query sees all `keys` keys."""
    from ..blocks.attention import Attention, causal_pairs
    from ..errors import UserError

    if causal and keys < queries:
        raise UserError(f"a causal attention core needs keys >= queries (the queries are the last "
                        f"{queries} of the key positions), got keys {keys}")
    if heads % kv_heads:
        raise UserError(f"--heads {heads} must be a multiple of --kv-heads {kv_heads}")
    history = keys - queries if causal else 0
    rect = queries * keys
    pairs = causal_pairs(history, queries) if causal else rect
    block = Attention(hidden=heads * head_dim, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                      rope_dim=0)
    w = Workload(batch=batch, tokens=queries, history=history, act_dtype=act_dtype, kv_dtype=kv_dtype)
    return Kernel(tuple(block.core_ops(w, pairs, rect, keys)), act_dtype)


def kernel_record(kern):
    """FLOPs and bytes by operand of a kernel (device-independent)."""
    t = kern.total
    moved = t("bytes_moved")
    flops = t("matrix_flops") + t("vector_flops")
    return {
        "matrix_flops": t("matrix_flops"),
        "matrix_flops_rectangular": t("rect_flops") or t("matrix_flops"),
        "vector_flops": t("vector_flops"),
        "weight_bytes_read": t("weight_read"),
        "act_bytes_read": t("act_read"),
        "kv_bytes_read": t("kv_read"),
        "act_bytes_written": t("act_write"),
        "bytes_moved": moved,
        "arithmetic_intensity_flops_per_byte": flops / moved,
        "compute_dtype": kern.compute_dtype.name,
        "operators": [{"name": op.name, "shape": op.shape, "matrix_flops": op.matrix_flops,
                       "vector_flops": op.vector_flops, "weight_bytes_read": op.weight_read,
                       "act_bytes_read": op.act_read, "kv_bytes_read": op.kv_read,
                       "act_bytes_written": op.act_write} for op in kern.ops],
    }


def device_row(kern, device, compute_efficiency=1.0, memory_efficiency=1.0):
    """The kernel's roofline on one device."""
    mf, vf, moved = kern.total("matrix_flops"), kern.total("vector_flops"), kern.total("bytes_moved")
    fmt = kern.compute_dtype
    if fmt.peak not in dict(device.matrix_flops_per_s):   # a result, not an error: `--device all`
        return {"id": device.id, "name": device.name, "matrix_flops_per_s": None,
                "vector_flops_per_s": device.vector_flops_per_s or None,
                "memory_bandwidth_bytes_per_s": device.memory_bandwidth_bytes_per_s,
                "ridge_point_flops_per_byte": None, "compute_time_s": None, "memory_time_s": None,
                "time_s": None, "bound": f"cannot run: no {fmt.name} matrix unit"}
    r = roof(device, fmt, compute_efficiency, memory_efficiency)
    peak = device.peak(fmt)
    compute = r.compute_s(mf, vf)
    memory = r.memory_s(moved)
    unknown = r.compute_unknown(mf, vf)
    rates = predict.achievable(device, fmt)
    predicted = predict.pass_time(kern.ops, rates) if rates else None
    return {
        "id": device.id,
        "name": device.name,
        "matrix_flops_per_s": peak,
        "vector_flops_per_s": device.vector_flops_per_s or None,
        "memory_bandwidth_bytes_per_s": device.memory_bandwidth_bytes_per_s,
        "ridge_point_flops_per_byte": None if peak is None else peak / device.memory_bandwidth_bytes_per_s,
        "compute_time_s": None if unknown else compute,
        "memory_time_s": memory,
        "time_s": max(compute, memory),
        "bound": bound_name(r, compute, memory, mf, vf),
        "predicted_time_s": predicted,
        "predicted_efficiency": max(compute, memory) / predicted if predicted else None,
        "prediction": predict.rates_record(rates) if rates else None,
    }


def kernel_result(command, inputs, kern, devices, compute_efficiency=1.0, memory_efficiency=1.0,
                  conventions=(), *, compute_option="--compute-dtype", tiles=None):
    """The full `gemm` / `attention` record: inputs, work, one row per device
    (a device without a matrix unit for the compute format gets a row saying so).
    `compute_option`: the command's option that sets the compute format (for messages);
    `tiles`: the tile view (analyses/tiles.py), when asked for."""
    from ..errors import UserError

    if not kern.compute_dtype.peak:
        raise UserError(f"{kern.compute_dtype.name} is a storage-only format: no device has a matrix peak "
                        f"for it; set {compute_option} (e.g. bf16, fp8)")
    rec = {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "inputs": dict(inputs, compute_efficiency=compute_efficiency, memory_efficiency=memory_efficiency),
        "work": kernel_record(kern),
        "devices": [device_row(kern, d, compute_efficiency, memory_efficiency) for d in devices],
        "conventions": list(KERNEL_CONVENTIONS) + list(conventions) + [predict.PREDICTION_CONVENTION],
    }
    if tiles is not None:
        from .tiles import TILE_CONVENTIONS
        rec["tiles"] = tiles
        rec["conventions"] += TILE_CONVENTIONS
    return rec

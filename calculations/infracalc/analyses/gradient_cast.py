"""Where to cast one gradient from BF16 to FP32 (`budget cast`): on the CPU after a BF16 copy, or on
the GPU before an FP32 copy (the book's chapter-10 gradient-cast budget).

One gate projection's gradient of N = I x h elements (a dense model's intermediate size, or one
routed expert's) is on the GPU in BF16 (2N bytes) and must reach the host in FP32 (4N bytes). A cast
reads 2 and writes 4 bytes per element, 6N bytes at a declared throughput; the link moves bytes at a
declared rate L; each step may have a startup. Steps run in order on the whole tensor:

    cpu path: copy 2N (c_2 = 2N / L + s_copy), then cast (x_cpu = 6N / r_cpu + s_cpu): ready c_2 + x_cpu
    gpu path: cast (x_gpu = 6N / r_gpu + s_gpu), then copy 4N (c_4 = 4N / L + s_copy): ready x_gpu + c_4

The paths take equal time at L* = (4N - 2N) / (x_cpu - x_gpu) when the CPU cast is the slower one;
above L* the GPU path is strictly faster. Buffers live on half-open intervals: the source BF16 on
the GPU until its last read (common to both paths, outside the GPU's extra budget); cpu path: host
BF16 staging [0, ready), host FP32 output [c_2, ready); gpu path: GPU FP32 staging [0, ready), host
FP32 output [x_gpu, ready). A path fits when its extra GPU peak and its host peak are within the
declared budgets. Exact rational seconds; teaching throughputs, not a device's.
"""

from fractions import Fraction

from .training_pipeline import peak


def gate_shape(arch):
    """(I, h) of one gate projection: a routed expert's when the model has experts, else the MLP's."""
    from ..blocks.mlp import GatedMLP
    from ..blocks.moe import MoE
    from ..errors import UserError

    blocks = [b for layer in arch.layers for b in layer.blocks]
    moe = next((b for b in blocks if isinstance(b, MoE)), None)
    if moe is not None:
        return moe.expert_inter, moe.hidden
    mlp = next((b for b in blocks if isinstance(b, GatedMLP)), None)
    if mlp is None:
        raise UserError(f"{arch.id} has no gated MLP or MoE block whose gate gradient to cast")
    return mlp.inter, mlp.hidden


def _path(name, operations, buffers, gpu_budget, host_budget):
    ready = operations[-1][2]
    gpu = [(a, b, n) for tier, _, a, b, n, _ in buffers if tier == "gpu"]
    extra = [(a, b, n) for tier, _, a, b, n, common in buffers if tier == "gpu" and not common]
    host = [(a, b, n) for tier, _, a, b, n, _ in buffers if tier == "host"]
    extra_peak, host_peak = peak(extra)[0], peak(host)[0]
    return {"cast_on": name, "ready_s": float(ready), "ready_s_exact": str(ready),
            "link_bytes": operations[0 if name == "cpu" else 1][3],
            "gpu_extra_peak_bytes": extra_peak, "gpu_peak_with_source_bytes": peak(gpu)[0],
            "host_peak_bytes": host_peak, "fits": extra_peak <= gpu_budget and host_peak <= host_budget,
            "operations": [{"path": name, "operation": op, "start_s_exact": str(a), "end_s_exact": str(b), "bytes": n}
                           for op, a, b, n in operations],
            "buffers": [{"path": name, "tier": tier, "buffer": buf, "start_s_exact": str(a), "end_s_exact": str(b),
                         "bytes": n, "common_source": common} for tier, buf, a, b, n, common in buffers]}


def gradient_cast(arch, *, link, cpu_rate, gpu_rate, copy_startup=0, cpu_startup=0, gpu_startup=0,
                  gpu_budget, host_budget):
    """Both paths, the equal-time link rate and the fastest (fitting) choice (module docstring).
    Rates in bytes/s (integers), startups in exact seconds."""
    inter, hidden = gate_shape(arch)
    n = inter * hidden
    bf16, fp32, cast = 2 * n, 4 * n, 6 * n
    x_cpu = Fraction(cast, cpu_rate) + Fraction(cpu_startup)
    x_gpu = Fraction(cast, gpu_rate) + Fraction(gpu_startup)
    c2 = Fraction(bf16, link) + Fraction(copy_startup)
    c4 = Fraction(fp32, link) + Fraction(copy_startup)
    z = Fraction(0)
    cpu = _path("cpu", [("d2h_bf16", z, c2, bf16), ("cast_on_cpu", c2, c2 + x_cpu, cast)],
                [("gpu", "source_bf16_gradient", z, c2, bf16, True), ("host", "bf16_staging", z, c2 + x_cpu, bf16, False),
                 ("host", "fp32_output", c2, c2 + x_cpu, fp32, False)], gpu_budget, host_budget)
    gpu = _path("gpu", [("cast_on_gpu", z, x_gpu, cast), ("d2h_fp32", x_gpu, x_gpu + c4, fp32)],
                [("gpu", "source_bf16_gradient", z, x_gpu, bf16, True), ("gpu", "fp32_staging", z, x_gpu + c4, fp32, False),
                 ("host", "fp32_output", x_gpu, x_gpu + c4, fp32, False)], gpu_budget, host_budget)
    paths = [cpu, gpu]
    equal = Fraction(fp32 - bf16) / (x_cpu - x_gpu) if x_cpu > x_gpu else None

    def fastest(candidates):
        best = min((Fraction(p["ready_s_exact"]) for p in candidates), default=None)
        return [p["cast_on"] for p in candidates if Fraction(p["ready_s_exact"]) == best]

    return {"model": arch.id, "gate_shape": [inter, hidden], "gradient_elements": n, "bf16_bytes": bf16,
            "fp32_bytes": fp32, "cast_read_write_bytes": cast, "cpu_cast_s_exact": str(x_cpu),
            "gpu_cast_s_exact": str(x_gpu),
            "equal_time_link_bytes_per_s_exact": None if equal is None else str(equal),
            "fastest": fastest(paths), "fastest_fitting": fastest([p for p in paths if p["fits"]]),
            "paths": [{k: v for k, v in p.items() if k not in ("operations", "buffers")} for p in paths],
            "operations": cpu["operations"] + gpu["operations"], "buffers": cpu["buffers"] + gpu["buffers"]}


CAST_CONVENTIONS = [
    "One gate projection's gradient (I x h: a routed expert's, or the dense MLP's) from GPU BF16 to host FP32: "
    "cpu path = copy 2N bytes, then cast; gpu path = cast, then copy 4N bytes. A cast reads 2 and writes 4 B per "
    "element (6N at the declared rate); copies at the declared link rate; declared startups; whole-tensor steps in "
    "order, no chunking or overlap. Equal-time link rate 2N / (cpu cast - gpu cast) when the CPU cast is slower.",
    "Buffers on half-open intervals: the source BF16 until its last read (common, not in the GPU's extra peak); "
    "host BF16 staging and FP32 output (cpu path), GPU FP32 staging and host FP32 output (gpu path). Fits = extra "
    "GPU peak and host peak within the declared budgets. Exact rational seconds; teaching rates, not measurements.",
]

"""`forward`: the per-operator ledger of one pass with roofline times on a device."""

import math

from .. import ledger
from .records import SCHEMA_VERSION, conventions, device_record, model_record, workload_record
from .efficiency.predict import PREDICTION_CONVENTION, achievable, op_time, pass_time, rates_record
from .roofline import UNKNOWN_COMPUTE, compute_noted, ideal_bound, op_bound, roof
from ..summation import plain_sum


def operator_record(op, bound_tuple, rates=None):
    """One ledger row with its bound and, with achievable `rates`, its predicted time
    (efficiency.predict) and the efficiency bound / predicted that explains the gap;
    compute_time_s is None (unknown) when some of its FLOPs have no published peak on
    the device, as `gemm` reports it."""
    c, m, t, bound = bound_tuple
    predicted = op_time(op, rates) if rates is not None else None
    moved = op.bytes_moved
    return {
        "name": op.name,
        "layers": op.layers,
        "repeats": op.repeats,
        "category": op.category,
        "shape": op.shape,
        "matrix_flops": op.matrix_flops,
        "attention_flops_rectangular": op.rect_flops,
        "vector_flops": op.vector_flops,
        "weight_bytes_read": op.weight_read,
        "act_bytes_read": op.act_read,
        "kv_bytes_read": op.kv_read,
        "act_bytes_written": op.act_write,
        "kv_bytes_written": op.kv_write,
        "arithmetic_intensity_flops_per_byte": op.flops / moved if moved else None,
        "compute_dtype": op.compute or None,
        "compute_time_s": None if bound == UNKNOWN_COMPUTE else c,
        "memory_time_s": m,
        "time_s": t,
        "bound": bound,
        "predicted_time_s": predicted,
        "predicted_efficiency": t / predicted if predicted else None,
    }


def book_record(op):
    """One row's book count (--scalar-count book)."""
    return {"book_scalar_flops": op.book_scalar, "book_special_ops": dict(op.book_specials),
            "book_interface_bytes": op.bytes_moved + op.book_extra_bytes}


def book_count_record(arch, ops):
    """--scalar-count book: the pass's book count summed over `ops` (every row), special
    functions by name; an error naming the rows with vector FLOPs but no book rule."""
    from ..errors import UserError

    missing = sorted({op.name for op in ops if op.vector_flops and not op.book_scalar})
    if missing:
        raise UserError(f"--scalar-count book: no book rule for {arch.id}'s {', '.join(missing)} "
                        "(rules: RMSNorm, RoPE and its table, causal softmax, SiLU gate, residual add)")
    specials = {}
    for op in ops:
        for name, n in op.book_specials:
            specials[name] = specials.get(name, 0) + n
    return {"scalar_flops": plain_sum((op.book_scalar for op in ops), 0),
            "special_ops": dict(sorted(specials.items())),
            "interface_bytes": plain_sum((op.bytes_moved + op.book_extra_bytes for op in ops), 0)}


def book_stages(arch, w, r):
    """--scalar-count book: the book's serial-stage resource view of the pass (its
    stage-resource files' compute_only_bounds): stages = the input (rows before the layers),
    each decoder layer in order, the head; each stage's matrix work at the compute format's peak
    and its book scalar count at the vector peak, the stage's time the larger (resources
    overlapped inside a stage; special functions have no rate and are left out, as the book's
    known-resource figures do, and a resource without a published rate too, named in
    `unknown_rates`: a stage with none known counts 0 s, as the book prints it); the serial sum of
    the stages (correctly rounded, math.fsum) beside the pooled maximum."""
    from .roofline import UNKNOWN
    from ..arch import layer_range_label

    rows = ledger.operators(arch, w, per_layer=True)
    labels = {layer_range_label(idx): idx for _, _, idx in arch.block_groups()}
    n = len(arch.layers)
    work = [[0, 0] for _ in range(n + 2)]   # [matrix, scalar]: input, layers 0..n-1, head
    seen_layer = False
    for op in rows:
        if op.layers == "-":
            stage = [n + 1] if seen_layer else [0]
        else:
            seen_layer = True
            stage = [i + 1 for i in labels[op.layers]]
        for s in stage:
            work[s][0] += op.matrix_flops
            work[s][1] += op.book_scalar

    def seconds(flops, rate):
        return None if flops and rate == UNKNOWN else (flops / rate if flops else 0.0)

    # each maximum over the resources whose rate is known (0 s when none is: the book's figure)
    stage_s = [max((x for x in (seconds(m, r.matrix_flops_per_s), seconds(v, r.vector_flops_per_s))
                    if x is not None), default=0.0) for m, v in work]
    serial = math.fsum(stage_s)   # correctly rounded, whatever the Python version
    total_m, total_v = plain_sum((m for m, _ in work), 0), plain_sum((v for _, v in work), 0)
    matrix, vector = seconds(total_m, r.matrix_flops_per_s), seconds(total_v, r.vector_flops_per_s)
    return {"input_stage_s": stage_s[0], "layer_stage_s": stage_s[1:n + 1], "head_stage_s": stage_s[n + 1],
            "matrix_s": matrix, "vector_s": vector,
            "known_global_max_s": max((x for x in (matrix, vector) if x is not None), default=0.0),
            "known_serial_stage_max_sum_s": serial,
            "unknown_rates": [name for name, x in (("matrix", matrix), ("vector", vector)) if x is None]}


def totals_record(t, bounds, r, predicted=None):
    """Totals plus the pass bounds; `bounds` are the operators' op_bound tuples;
    `predicted`: the pass's predicted seconds (None: no prediction on this device)."""
    compute, memory, ideal = ideal_bound(t, r)
    unknown = r.compute_unknown(t.matrix_flops, t.vector_flops) and compute <= memory
    return {
        "params": t.params,
        "active_params": t.active_params,
        "weight_bytes": t.weight_bytes,
        "linear_flops": t.linear_flops,
        "attention_flops_causal": t.attention_flops_causal,
        "attention_flops_rectangular": t.attention_flops_rectangular,
        "matrix_flops": t.matrix_flops,
        "vector_flops": t.vector_flops,
        "weight_bytes_read": t.weight_bytes_read,
        "act_bytes_read": t.act_bytes_read,
        "kv_bytes_read": t.kv_bytes_read,
        "bytes_read": t.bytes_read,
        "act_bytes_written": t.act_bytes_written,
        "kv_bytes_written": t.kv_bytes_written,
        "bytes_written": t.bytes_written,
        "unique_bytes": t.unique_bytes,
        "kv_bytes_per_token": t.kv_bytes_per_token,
        "kv_bytes_resident_before": t.kv_bytes_resident_before,
        "kv_bytes_resident_after": t.kv_bytes_resident_after,
        "roofline_time_s": plain_sum((b[2] for b in bounds), 0.0),
        "compute_bound_time_s": plain_sum((b[2] for b in bounds if b[3].startswith("compute")), 0.0),
        "ideal_compute_time_s": None if unknown else compute,
        "ideal_memory_time_s": memory,
        "ideal_time_s": ideal,
        "predicted_time_s": predicted,
        "ideal_bound": UNKNOWN_COMPUTE if unknown else "memory" if compute <= memory else
        compute_noted(r, t.matrix_flops, t.vector_flops),
    }


def workload_notes(arch, w):
    """Warnings about the workload itself (empty when there are none)."""
    if w.context > arch.max_context:
        return [f"history + tokens = {w.context:,} per request exceeds the model's maximum context "
                f"({arch.max_context_source} {arch.max_context:,}); the figures extend the architecture "
                "past what it was trained for."]
    return []


PER_LAYER = ("Operators are per layer: one instance of each distinct block (the rows of the "
             "layers listed under 'layers'), not multiplied by the number of layers that share it "
             "(x); the totals are the whole pass.")


def memory_record(totals, device):
    """Whether the pass fits one device: its weights and the KV cache resident after the pass
    (activations and workspace not counted) against the device's memory."""
    need = totals.weight_bytes + totals.kv_bytes_resident_after
    return {"needs_bytes": need, "device_memory_bytes": device.memory_bytes,
            "fits": need <= device.memory_bytes, "counted": "weights + KV cache after the pass"}


def kda_record(arch, w):
    """With --kda-count recurrent-baseline, the KDA layers' figures as the book prints them: their
    projection matrix FLOPs, the FP32 recurrent state of the batch and its scalar FLOPs (the
    baseline rows' vector FLOPs, blocks/kimi.py)."""
    from ..blocks.kimi import KDA

    layers = proj = state = conv = 0
    by_op = {}
    for layer, count, _ in arch.layer_groups():
        for b in layer.blocks:
            if not isinstance(b, KDA):
                continue
            ops = b.ops(w)
            layers += count
            proj += count * sum(op.matrix_flops for op in ops if op.category == "linear")
            for op in ops:
                if op.vector_flops:
                    by_op[op.name] = by_op.get(op.name, 0) + count * op.vector_flops
            state += count * w.batch * b.recurrent_state_bytes()
            conv += count * w.batch * b.conv_state_bytes()
    return {"layers": layers, "projection_matrix_flops": proj,
            "recurrent_and_other_scalar_flops": sum(by_op.values()), "scalar_flops_by_operator": by_op,
            "recurrent_state_fp32_bytes": state, "conv_cache_bytes": conv}


def attn_res_record(arch, w):
    """AttnRes models: the block stack the head mixes, held across the layers of the pass
    (a transient of one pass, not in memory.needs_bytes); None for other models."""
    from ..blocks.kimi import AttnResHeadNorm

    head = arch.final_norm
    if not isinstance(head, AttnResHeadNorm):
        return None
    return {"saved_blocks": head.candidates - 1, "block_shape": [w.positions, arch.hidden_size],
            "dtype": w.act_dtype.name, "block_stack_bytes": head.block_stack_bytes(w),
            "counted": "saved blocks x positions x hidden in the activation format, after the last layer; "
                       "one pass's transient, not in memory.needs_bytes"}


def forward(arch, w, device, compute_efficiency=1.0, memory_efficiency=1.0, per_layer=False):
    """The full `forward` result record (`notes` only when there is a warning or a choice).
    per_layer: the operator rows are one instance of each distinct layer; the
    totals stay those of the whole pass."""
    from .mla_path import for_pass, note

    r = roof(device, w.compute_dtype, compute_efficiency, memory_efficiency)
    w, choice = for_pass(arch, w, r)
    L = ledger.build(arch, w)
    bounds = [op_bound(op, r) for op in L.ops]
    notes = workload_notes(arch, w) + ([note(choice)] if choice else [])
    rows = ledger.operators(arch, w, per_layer=True) if per_layer else L.ops
    row_bounds = [op_bound(op, r) for op in rows] if per_layer else bounds
    rates = achievable(device, w.compute_dtype)
    stack = attn_res_record(arch, w)
    book = w.scalar_count == "book"
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "forward",
        "model": model_record(arch),
        "device": device_record(device, w.compute_dtype, compute_efficiency, memory_efficiency),
        "inputs": workload_record(w, arch),
        "conventions": conventions(w) + [PREDICTION_CONVENTION] + ([PER_LAYER] if per_layer else []),
        **({"per_layer": True} if per_layer else {}),
        "operators": [{**operator_record(op, b, rates), **(book_record(op) if book else {})}
                      for op, b in zip(rows, row_bounds)],
        "totals": totals_record(L.totals, bounds, r, pass_time(L.ops, rates) if rates else None),
        **({"book_count": {**book_count_record(arch, L.ops), "stages": book_stages(arch, w, r)}} if book else {}),
        "memory": memory_record(L.totals, device),
        "prediction": rates_record(rates) if rates else None,
        **({"attn_res": stack} if stack else {}),
        **({"kda": kda_record(arch, w)} if w.kda_count != "ledger" else {}),
        **({"notes": notes} if notes else {}),
    }

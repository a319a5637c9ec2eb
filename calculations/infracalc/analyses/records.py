"""Record pieces every analysis echoes: model, device, inputs, conventions."""

SCHEMA_VERSION = 1

CONVENTIONS = (
    "A multiply-add is 2 FLOPs; matrix FLOPs (GEMMs, attention matmuls) run at the "
    "compute format's dense tensor peak, vector FLOPs (norms, activations, softmax, "
    "RoPE, residuals, biases, routing) at the FP32 vector peak.",
    "Attention counts only the query-key pairs a causal kernel computes: with H cached "
    "and T new tokens a full-attention head sees T*H + T*(T+1)/2 pairs, a window W caps "
    "each query at W keys (its own included), a chunk C lets the query at position p see "
    "keys floor(p/C)*C..p; the rectangular count T*(H+T) is reported beside it. A windowed "
    "layer caches min(context, W) tokens, a chunked layer the tokens of the latest chunk.",
    "Weights are read once per pass (shared by the batch); KV history is read per "
    "request; new KV is written; attention is fused (scores never leave the chip); "
    "every other operator reads its inputs from and writes its outputs to memory.",
    "Roofline: an operator's bound is max(FLOPs / peak, bytes / bandwidth); the pass "
    "bound is the sum over operators; the ideal bound is max(total compute time, "
    "(weights read + KV read + KV written) / bandwidth). Peaks are dense, never 2:4 sparse.",
)

NEW_KV_ON_CHIP = ("New K/V on chip (--new-kv on-chip): attention takes the pass's new K and V from "
                  "the projections; its KV read is the prior history only (the new K/V are still "
                  "written to the cache).")


def conventions(w):
    """The conventions every ledger output prints, with the new-K/V one when selected."""
    return (list(CONVENTIONS) + ([NEW_KV_ON_CHIP] if w.new_kv == "on-chip" else [])
            + ([KDA_BASELINE] if w.kda_count != "ledger" else []) + ([REFERENCE_PATH] if w.reference_path else [])
            + ([CHECKPOINT_SHAPES] if w.tensor_shapes == "checkpoint" else [])
            + ([BOOK_SCALAR] if w.scalar_count == "book" else []))


BOOK_SCALAR = (
    "Book count, --scalar-count book (the book's stage-resource and request-bridge files): beside our vector "
    "FLOPs, each operator's plain scalar FLOPs with the special functions apart: RMSNorm R (4D + 1) and R "
    "rsqrt; RoPE 3 per rotated value and a negation per half; the RoPE table once per pass T R / 2 and T R "
    "sin and cos; causal softmax 4V - Q (scale, subtract, sum, divide per valid pair V, Q query rows), V exp, "
    "V - Q max compares, a mask decision per rectangle pair; SiLU gate 4 per value, exp and negation apart; "
    "residual add 1 per value; GEMMs, attention matmuls, embedding and cache writes 0. An operator with "
    "vector FLOPs and no rule is an error. Interface bytes: ours plus the materialized scores and "
    "probabilities (QK^T writes, softmax reads and writes, PV reads the rectangle), the RoPE tables each "
    "RoPE reads, the int64 token ids and the table's own operands.")


CHECKPOINT_SHAPES = (
    "Tensor shapes, --tensor-shapes checkpoint: resident weight bytes count the official checkpoint's "
    "tensors where their shape differs from the config's (Kimi K3: each KDA layer's A_log stored with 128 "
    "FP32 values for the config's 96 heads, load/kimi_k3.py); parameters and every operator's work and "
    "reads stay the config's.")


REFERENCE_PATH = (
    "Reference path, --reference-path (the book's Qwen3.5/3.6 reference fallback, blocks/reference_path.py): "
    "matrix work also counts the depthwise conv taps the fallback computes (2 C K x max(T, K) + K - 1 positions "
    "cold, T + 2K - 1 after a history, 2 for one token after a history), the DeltaNet core in chunks padded to "
    "64 (2 C (2 C d_k + C d_v + 3 d_k d_v) per chunk and value head; one token after a history is the "
    "recurrence), every query-key pair of the eager T x (H + T) rectangle, and the M-RoPE frequencies "
    "(2 x 3 axes x rotated dims / 2 per position, once per pass). record-past: the fallback's record_past conv, "
    "K max(T, K) taps cold, the valid taps sum_i min(K, H + i + 1) after a history.")


KDA_BASELINE = (
    "KDA, --kda-count recurrent-baseline (the book's logical recurrent baseline): the KDA layers' convs, L2 "
    "norms, gates, output gate and the delta-rule recurrence counted as plain scalar FLOPs on the vector "
    "units, the recurrence in recurrent form for every token (7 d^2 + d per token and head), dot products of "
    "d terms as d multiplies and d - 1 adds, special functions (SiLU, sqrt, rsqrt, exp, sigmoid) not counted "
    "(blocks/kimi.py); the recurrence has no matrix FLOPs.")


def model_record(arch):
    rec = {
        "id": arch.id,
        "model_type": arch.model_type,
        "params": arch.params,
        "active_params": arch.active_params,
        "layers": len(arch.layers),
        "hidden_size": arch.hidden_size,
        "vocab_size": arch.vocab_size,
        "attention": arch.attention_summary,
        "tied_embeddings": arch.tied_embeddings,
        "max_context": arch.max_context,
    }
    if arch.parts:
        rec["parts_not_counted"] = [{"name": p.name, "params": p.params, "note": p.note,
                                     **({"checkpoint_bytes": p.checkpoint_bytes} if p.checkpoint_bytes else {})}
                                    for p in arch.parts]
    if arch.notes:
        rec["notes"] = list(arch.notes)
    return rec


def device_record(device, compute_dtype, compute_efficiency, memory_efficiency):
    """The one device record every command prints: the part, its peak at the compute format,
    its memory and bandwidth, and the efficiency factors in force."""
    return {
        "id": device.id,
        "name": device.name,
        "compute_dtype": compute_dtype.name,
        "matrix_flops_per_s": device.peak(compute_dtype),
        "vector_flops_per_s": device.vector_flops_per_s or None,
        "vector_peak": (f"{device.vector_peak_kind} non-tensor peak" if device.vector_peak_kind else
                        "none published: vector compute time unknown, not counted"),
        "memory_bytes": device.memory_bytes,
        "memory_convention": device.memory_convention,
        "memory_bandwidth_bytes_per_s": device.memory_bandwidth_bytes_per_s,
        "compute_efficiency": compute_efficiency,
        "memory_efficiency": memory_efficiency,
    }


def links_record(links):
    """{tier: the Link's figures, or None} of a {"up": Link, "out": Link} mapping (comm.links):
    the one link record every command prints (parallel, train, collective)."""
    out = {}
    for name, link in links.items():
        out[name] = None if link is None else {
            "name": link.name, "bytes_per_s": link.bytes_per_s, "alpha_s": link.alpha_s,
            "efficiency": link.efficiency, "topology": link.topology, "domain_size": link.domain_size,
            "in_network_reduce": link.in_network_reduce, "assumptions": list(link.assumptions)}
    return out


def workload_record(w, arch=None):
    """The workload echoed; delta_form only for models with recurrent layers."""
    rec = {
        "batch": w.batch,
        "tokens": w.tokens,
        "history": w.history,
        "logits": w.logits,
        "weight_dtype": w.weight_dtype.name,
        "act_dtype": w.act_dtype.name,
        "kv_dtype": w.kv_dtype.name,
    }
    rec["routing"] = w.routing if not w.routing_loads else f"histogram of {len(w.routing_loads)} experts"
    rec["mla"] = w.mla
    if w.new_kv != "reread":   # echoed when not the default, so existing results keep their shape
        rec["new_kv"] = w.new_kv
    if w.kda_count != "ledger":   # likewise
        rec["kda_count"] = w.kda_count
    if w.reference_path:   # likewise
        rec["reference_path"] = w.reference_path
    if w.scalar_count != "ledger":   # likewise
        rec["scalar_count"] = w.scalar_count
    if w.tensor_shapes != "config":   # likewise
        rec["tensor_shapes"] = w.tensor_shapes
    if w.schedule != "full":   # likewise
        rec["schedule"] = w.schedule
    if arch is not None and arch.kv_bytes(w.kv_dtype, 0):
        rec["delta_form"] = w.delta_form
    if w.formats:
        rec["native_formats"] = {role: d.name for role, d in w.formats}
    return rec

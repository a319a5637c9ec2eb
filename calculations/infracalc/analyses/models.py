"""`models`: the bundled models' summaries, and one model's tensors."""

from ..arch import layer_range_label
from ..dtypes import DTYPES
from ..errors import UserError
from .records import SCHEMA_VERSION, model_record

_BF16 = DTYPES["bf16"]

# The weight formats `models` sizes every model in: bf16, plain fp8, and the book's 8-bit and
# 4-bit weights (one BF16 scale per 128 values); the embedding, head and 1-D tensors stay bf16
# under the quantized ones, as the `Formats` convention states (docs/counting.md).
WEIGHT_FORMATS = ("bf16", "fp8", "int8-g128", "int4-g128")


def weight_bytes(arch):
    """{format: exact bytes of the model's weights stored in it} for WEIGHT_FORMATS."""
    from ..workload import Workload

    return {name: arch.weight_bytes(Workload(weight_dtype=DTYPES[name])) for name in WEIGHT_FORMATS}


def _geometry(arch):
    for layer in arch.layers:
        for b in layer.blocks:
            if hasattr(b, "heads"):
                return b.heads, getattr(b, "kv_heads", None), getattr(b, "head_dim", None)
    return None, None, None


def summary(arch):
    heads, kv_heads, hd = _geometry(arch)
    return {
        "id": arch.id,
        "model_type": arch.model_type,
        "layers": len(arch.layers),
        "hidden_size": arch.hidden_size,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": hd,
        "attention": arch.attention_summary,
        "params": arch.params,
        "active_params": arch.active_params,
        "kv_bytes_per_token_bf16": arch.kv_bytes_per_token(_BF16),
        "state_bytes_per_request": arch.kv_bytes(_BF16, 0),   # recurrent layers' fixed state
        "max_context": arch.max_context,
        "weight_bytes": weight_bytes(arch),
    }


def _row(model_id, load):
    """One bundled model's listing row: its summary, or why it cannot be modelled."""
    try:
        return summary(load(model_id))
    except UserError as e:
        return {"id": model_id, "error": str(e)}


def listing(ids, load, digest, stored=None):
    """Summaries of every bundled model; one that cannot be modelled says why.

    `stored` is the summaries record (`summaries`) kept as the stored result
    results/model-summaries.json: a model whose config file still has the CRC-32
    recorded there takes its row from it, any other is loaded and summarized. Loading
    all 52 configs and building their architectures is most of the listing's cost;
    `reproduce --check` recomputes the stored summaries and fails on any drift, so a
    row read there is the row the computation gives."""
    kept = stored.get("summaries", {}) if isinstance(stored, dict) else {}
    rows = []
    for model_id in ids:
        entry = kept.get(model_id)
        if isinstance(entry, dict) and entry.get("config_crc32") == digest(model_id):
            rows.append(entry["row"])
        else:
            rows.append(_row(model_id, load))
    return {"schema_version": SCHEMA_VERSION, "command": "models", "models": rows}


def summaries(ids, load, digest):
    """{id: {config_crc32, row}} of every bundled model, always computed: the store the
    listing reads (results/model-summaries.json, written by `reproduce`)."""
    return {"schema_version": SCHEMA_VERSION, "command": "models",
            "summaries": {model_id: {"config_crc32": digest(model_id), "row": _row(model_id, load)}
                          for model_id in ids}}


def tensor_rows(arch):
    """Per-tensor breakdown: name, shape, role, params each, copies, params total."""
    rows = []

    def add(prefix, tensors, copies):
        for t in tensors:
            rows.append({"tensor": prefix + t.name, "shape": list(t.shape), "role": t.role,
                         "params_each": t.params, "copies": copies,
                         "params": t.params * copies})

    add("", arch.embedding.tensors(), 1)
    for layer, count, indices in arch.layer_groups():
        add(f"layers.{layer_range_label(indices)}.", layer.tensors(), count)
    add("", arch.final_norm.tensors(), 1)
    add("", arch.head.tensors(), 1)
    return rows


def detail(arch):
    """One model: its normalized layers and every tensor."""
    groups = [{
        "layers": layer_range_label(indices),
        "count": count,
        "blocks": [type(b).__name__ + (f" ({b.label})" if b.label else "") for b in layer.blocks],
        "params_per_layer": layer.params,
        "active_params_per_layer": layer.active_params(),
        "kv_bytes_per_token_bf16": layer.kv_bytes_per_token(_BF16),
    } for layer, count, indices in arch.layer_groups()]
    tensors = tensor_rows(arch)
    total = sum(r["params"] for r in tensors)
    assert total == arch.params, "tensor breakdown must add up to the parameter count"
    return {"schema_version": SCHEMA_VERSION, "command": "models", "model": model_record(arch),
            "summary": summary(arch), "layer_groups": groups, "tensors": tensors}

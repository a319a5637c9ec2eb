"""Markdown and CSV for a `train` record."""

from . import units as u
from .table import markdown_table, records_to_csv


def _row(label, n, human):
    return [label, u.integer(n), human(n)]


def header_lines(rec):
    m, d, i = rec["model"], rec["device"], rec["inputs"]
    states = ", ".join(f"{s['state']} {s['bytes_per_param']} B" for s in i["optimizer_states"])
    lines = [
        f"- Model: `{m['id']}` ({m['model_type']}), {m['layers']} layers, hidden {m['hidden_size']}, "
        f"attention {m['attention']}; params {u.integer(m['params'])}"
        + (f", active {u.integer(m['active_params'])}" if m["active_params"] != m["params"] else ""),
        f"- Step: {u.integer(i['global_batch'])} sequence{'s' if i['global_batch'] > 1 else ''} x "
        f"{u.integer(i['seq'])} tokens = "
        f"{u.integer(i['global_batch'] * i['seq'])} tokens, as {i['micro_batches_per_step']} micro-batch"
        f"{'es' if i['micro_batches_per_step'] > 1 else ''} of {i['micro_batch']}",
        f"- Layout: one device (TP = PP = DP = 1); recompute `{i['recompute']}`; attention kernel "
        f"`{i['attention']}`{'; fused backward recomputes QK^T' if i['flash_recompute'] else ''}",
        f"- Formats: weights {i['weight_dtype']}, gradients {i['grad_bytes_per_param']} B/param, "
        f"activations {i['act_dtype']}; optimizer `{i['optimizer']}` ({states}); ZeRO stage {i['zero']}",
        f"- Device: {d['name']} (`{d['id']}`), memory {u.integer(d['memory_bytes'])} B "
        f"({u.nbytes(d['memory_bytes'])}, {d['memory_convention']} capacity, --memory-convention)",
    ]
    lines += [f"- Model note: {n}" for n in m.get("notes", [])]
    return lines


def flops_rows(f):
    def fl(n):
        return u.flops(n)
    return [
        _row("Forward matrix FLOPs", f["forward_matrix_flops"], fl),
        _row("Backward matrix FLOPs (2x forward)", f["backward_matrix_flops"], fl),
        _row("Recomputed matrix FLOPs", f["recompute_matrix_flops"], fl),
        _row("  of which a fused backward's QK^T", f["flash_recompute_flops"], fl),
        _row("Model FLOPs (3x forward matrix)", f["model_flops"], fl),
        _row("Hardware FLOPs (model + recomputed)", f["hardware_flops"], fl),
        _row("Vector FLOPs: forward", f["forward_vector_flops"], fl),
        _row("Vector FLOPs: backward", f["backward_vector_flops"], fl),
        _row("Vector FLOPs: recomputed", f["recompute_vector_flops"], fl),
    ]


def closed_form_rows(rec):
    return [[c["name"], f"`{c['formula']}`", u.integer(c["flops"]), c["compared_with"],
             u.ratio(c["ratio_to_exact"], 4), c["reason"]] for c in rec["closed_forms"]]


def operator_rows(ops):
    def f(n):
        return u.flops(n) if n else "-"
    return [[o["name"], o["layers"], o["repeats"], o["kind"], f(o["forward_matrix_flops"]),
             f(o["backward_matrix_flops"]), f(o["recompute_matrix_flops"]), f(o["forward_vector_flops"]),
             f(o["backward_vector_flops"]), u.nbytes(o["saved_bytes"]) if o["saved_bytes"] else "-"]
            for o in ops]


def memory_rows(mem):
    b = u.nbytes
    rows = [
        _row("Weights", mem["weights_bytes"], b),
        _row("Gradients", mem["grads_bytes"], b),
        _row("Optimizer states", mem["optimizer_bytes"], b),
        _row("Activations: decoder layers (one micro-batch)", mem["layer_activations_bytes"], b),
        _row("Activations: embedding, final norm, head input, loss", mem["embedding_head_loss_activations_bytes"], b),
        _row("  of which fp32 logits for the loss", mem["logits_fp32_bytes"], b),
        _row("Recompute working set (full: one layer's activations)", mem["recompute_working_bytes"], b),
        _row("Activations total", mem["activations_bytes"], b),
        _row("Total per device", mem["total_bytes"], b),
        _row("Device memory", mem["device_memory_bytes"], b),
    ]
    verdict = "fits" if mem["fits"] else "does not fit"
    rows.append([f"Headroom ({verdict})", u.integer(mem["headroom_bytes"]),
                 ("-" if mem["headroom_bytes"] < 0 else "") + b(abs(mem["headroom_bytes"]))])
    return rows


def markdown(rec):
    m, d = rec["model"], rec["device"]
    parts = [
        f"# train: {m['id']} on {d['id']}", "", *header_lines(rec), "",
        "## FLOPs per step", "",
        markdown_table(["quantity", "exact", "human"], flops_rows(rec["flops_per_step"]), "lrr"), "",
        "## Closed forms beside the exact count", "",
        markdown_table(["convention", "formula", "FLOPs", "compared with", "ratio", "why it differs"],
                       closed_form_rows(rec), "llrlrl"), "",
        "## Memory per device", "",
        markdown_table(["quantity", "bytes", "human"], memory_rows(rec["memory"]), "lrr"), "",
        "## Operators (one micro-batch)", "",
        "Summed over the listed layers (x = number of layers); saved = kept for the backward "
        "without recompute.", "",
        markdown_table(["operator", "layers", "x", "kind", "fwd matrix", "bwd matrix", "recomputed",
                        "fwd vector", "bwd vector", "saved"],
                       operator_rows(rec["operators_per_micro_batch"]), "llrlrrrrrr"), "",
        "## Conventions", "", *[f"- {c}" for c in rec["conventions"]], "",
    ]
    return "\n".join(parts)


def csv(rec):
    return records_to_csv(rec["operators_per_micro_batch"])

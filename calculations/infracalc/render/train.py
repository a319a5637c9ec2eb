"""Markdown and CSV for a `train` record."""

from . import units as u
from .table import conventions, inline, markdown_table, no_layout_line, records_to_csv, shown



def supervised_text(i):
    """', the head and loss on N supervised tokens per sequence' (--supervised-tokens), or ''."""
    n = i.get("supervised_tokens")
    if n and i.get("loss_mask") == "dense":
        return f"; output head on every position, loss on {u.integer(n)} supervised tokens per sequence (dense mask)"
    return f"; output head and loss on {u.integer(n)} supervised tokens per sequence" if n else ""


def recipe_text(i):
    """The recipe options that change what is kept: modules recomputed, FP8 activation inputs,
    layers whose activations are offloaded (Megatron-LM's flags), or ''."""
    parts = []
    if i.get("recompute_modules"):
        parts.append(f" + modules {','.join(i['recompute_modules'])}")
    if i.get("fp8_activation_input"):
        parts.append("; activation inputs kept in FP8")
    if i.get("cpu_offloading_num_layers"):
        parts.append(f"; each stage's first {i['cpu_offloading_num_layers']} layers' activations in host memory")
    return "".join(parts)

def _row(label, n, human):
    return [label, u.integer(n), human(n)]


def header_lines(rec):
    m, d, i = shown(rec["model"]), shown(rec["device"]), rec["inputs"]
    states = ", ".join(f"{s['state']} {s['bytes_per_param']} B" for s in i["optimizer_states"])
    lines = [
        f"- Model: `{m['id']}` ({m['model_type']}), {m['layers']} layers, hidden {m['hidden_size']}, "
        f"attention {m['attention']}; params {u.integer(m['params'])}"
        + (f", active {u.integer(m['active_params'])}" if m["active_params"] != m["params"] else ""),
        f"- Step: {u.count(i['global_batch'], 'sequence')} x "
        f"{u.integer(i['seq'])} tokens = "
        f"{u.integer(i['global_batch'] * i['seq'])} tokens, as {u.count(i['micro_batches_per_step'], 'micro-batch', 'micro-batches')} of {i['micro_batch']}"
        + supervised_text(i),
        f"- Layout: {layout_line(i)}; recompute `{i['recompute']}`{recipe_text(i)}; attention kernel "
        f"`{i['attention']}`{'; fused backward recomputes QK^T' if i['flash_recompute'] else ''}",
        f"- Formats: weights {i['weight_dtype']}, gradients {i['grad_bytes_per_param']} B/param, "
        f"activations {i['act_dtype']}; optimizer `{i['optimizer']}` ({states}); ZeRO stage {i['zero']}",
        f"- Device: {d['name']} (`{d['id']}`), memory {u.integer(d['memory_bytes'])} B "
        f"({u.nbytes(d['memory_bytes'])}, {d['memory_convention']} capacity, --memory-convention)",
    ]
    lines += [f"- Model note: {n}" for n in m.get("notes", [])]
    return lines


def layout_line(i):
    if i["devices"] == 1:
        return "one device (TP = PP = DP = 1)"
    dims = ", ".join(f"{d.upper()} {i[d]}" for d in ("tp", "pp", "dp", "cp", "ep"))
    sched = i["schedule"] + (f" (v = {i['virtual_stages']})" if i["schedule"] == "interleaved" else "")
    return (f"{u.count(i['devices'], 'device')}: {dims}{', SP' if i['sp'] else ''}; schedule {sched}"
            f"{'; DP sync overlapped with the backward' if i['overlap_dp'] else ''}")


def links_line(i):
    parts = []
    for tier, k in i["links"].items():
        if k is None:
            parts.append(f"scale-{tier}: none")
            continue
        note = f" ({'; '.join(k['assumptions'])})" if k["assumptions"] else ""
        parts.append(f"scale-{tier}: {inline(k['name'])}, {u.rate_bytes(k['bytes_per_s'])} per direction, "
                     f"alpha {k['alpha_s'] * 1e6:g} us{note}")
    return ("- Links: " + "; ".join(parts) + f"; compute efficiency {i['compute_efficiency']:g}, "
            f"memory efficiency {i['memory_efficiency']:g}")


def flops_rows(f, hc_matrix=False):
    """hc_matrix: mHC contractions as matrix work (`--hc-contractions matrix`), whose backward
    is not twice their forward."""
    fl = u.flops
    return [
        _row("Forward matrix FLOPs", f["forward_matrix_flops"], fl),
        _row("Backward matrix FLOPs" + ("" if hc_matrix else " (2x forward)"), f["backward_matrix_flops"], fl),
        _row("Recomputed matrix FLOPs", f["recompute_matrix_flops"], fl),
        _row("  of which a fused backward's QK^T", f["flash_recompute_flops"], fl),
        _row("Model FLOPs (forward + backward matrix)" if hc_matrix else "Model FLOPs (3x forward matrix)",
             f["model_flops"], fl),
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


PARTS = ("compute_s", "exposed_comm_s", "bubble_s", "dp_sync_exposed_s", "optimizer_s")


def _against(estimate, predicted):
    """The 'predicted' and 'estimate / predicted' cells of one part ('-' where either is missing or zero)."""
    if predicted is None:
        return ["-", "-"]
    return [u.seconds(predicted), f"{estimate / predicted:.2f}" if predicted and estimate else "-"]


def time_rows(t, pred=None):
    """The step's parts (estimate, share); with `pred` (the record's `predicted` with its
    breakdown) each part's predicted time and estimate / predicted beside it."""
    sec = u.seconds
    b = t["breakdown"]
    step = t["step_s"]
    pb = (pred or {}).get("breakdown")

    def share(x):
        return f"{100 * x / step:.1f}%" if step else "-"

    names = ["Compute (m x slowest stage's forward + backward + recompute)",
             "Exposed communication (m x slowest stage's TP/EP/CP/PP)", f"Pipeline bubble: {t['bubble_formula']}",
             "Data-parallel sync, exposed", "Optimizer update (memory-bound)"]
    rows = [[name, sec(b[key]), share(b[key]), *([] if pb is None else _against(b[key], pb[key]))]
            for name, key in zip(names, PARTS)]
    rows.append(["**Step**", f"**{sec(step)}**", "100%",
                 *([] if pb is None else [f"**{sec(pred['step_s'])}**", f"{step / pred['step_s']:.2f}"])])
    if t.get("unknown_peaks"):   # those FLOPs took 0 s: the row is (mostly) memory time
        rows[0][0] += f"; {' and '.join(t['unknown_peaks'])} peak unknown: memory time of those operators"
        rows[-1][0] = "**Step (understated: compute partly unknown)**"
    return rows


def stage_time_rows(stages, pred=None):
    """One row per stage; with `pred` (the record's `predicted` with its stages) the predicted
    micro-batch and estimate / predicted beside the estimate's."""
    sec = u.seconds
    ps = {p["stage"]: p["micro_batch_s"] for p in (pred or {}).get("stages", ())}
    return [[s["stage"], sec(s["forward_compute_s"]), sec(s["backward_compute_s"]), sec(s["recompute_compute_s"]),
             sec(s["forward_comm_s"]), sec(s["backward_comm_s"]), sec(s["recompute_comm_s"]),
             sec(s["micro_batch_s"]), *([] if not ps else _against(s["micro_batch_s"], ps.get(s["stage"]))),
             sec(s["dp_exposed_s"]), sec(s["optimizer_s"])] for s in stages]


def predicted_parts_line(pred):
    """What the predicted columns are, once, under the step's table."""
    if not (pred or {}).get("breakdown"):
        return []
    return [f"- predicted: each part of the step at the achievable rates, NCCL's collectives and the tuned "
            f"recipe (Conventions), times the fitted step factor {pred['fitted_factor']:.3f}; estimate / "
            "predicted is the share of the predicted time the estimate explains (docs/prediction.md)", ""]


def collective_rows(cs):
    return [[c["stage"], c["phase"], c["name"], c["dim"], c["kind"], u.nbytes(c["bytes"]), c["group"], c["tier"],
             c["count"], u.seconds(c["time_s"])] for c in cs]


def throughput_lines(th, i, unknown=(), hc_matrix=False):
    pct = lambda x: "unknown (no published peak)" if x is None else f"{100 * x:.1f}%"
    model = "forward + backward" if hc_matrix else "3x forward"
    lines = [
        f"- Tokens per step: {u.integer(th['tokens_per_step'])}; tokens/s: cluster "
        f"{th['tokens_per_s_cluster']:,.0f}, per device {th['tokens_per_s_per_device']:,.1f}",
        f"- MFU {pct(th['mfu'])} = model FLOPs per step ({u.flops(th['model_flops_per_step'])}, {model} "
        f"matrix FLOPs, causal attention halved) / (step time x {u.count(i['devices'], 'device')} x dense peak "
        f"{u.rate_flops(th['peak_matrix_flops_per_s'])})",
        f"- HFU {pct(th['hfu'])} = hardware FLOPs per step ({u.flops(th['hardware_flops_per_step'])}, "
        f"with what is recomputed) / the same",
        f"- Model FLOP/s per device: {u.rate_flops(th['model_flops_per_s_per_device'])}"
        + (" (overstated: the step time leaves out the FLOPs with no published peak)" if unknown else ""),
    ]
    if th["megatron_eq3_flops_per_step"]:
        lines.append(f"- Megatron-LM's convention (Narayanan et al. 2021 eq. 3, full recompute, s x s "
                     f"attention): {u.flops(th['megatron_eq3_flops_per_step'])} per step = "
                     f"{u.rate_flops(th['megatron_eq3_flops_per_s_per_device'])} per device = "
                     f"{pct(th['megatron_eq3_fraction_of_peak'])} of peak (the figure their papers publish)")
    tr = th.get("train")
    if tr:
        lines.append(f"- Training on {u.integer(tr['tokens'])} tokens: {u.integer(tr['steps'])} steps, "
                     f"{tr['days']:,.2f} days, {tr['device_hours']:,.0f} device-hours")
    return lines


def _peak(p):
    return "an unpublished peak (no time charged)" if p is None else u.rate_flops(p)


def lower_bound_lines(b, step):
    """The lower bound beside the estimate (definition printed)."""
    return [
        f"**Lower bound on the step: {u.seconds(b['step_s'])}** ({b['bound']}-bound; the estimate above "
        f"is {step / b['step_s']:.3f}x it), at most {b['tokens_per_s_per_device']:,.1f} tokens/s per device. "
        f"Compute {u.seconds(b['compute_s'])} = {u.flops(b['model_flops_per_device'])} model FLOPs per device "
        f"at {_peak(b['peak_matrix_flops_per_s'])}; memory {u.seconds(b['memory_s'])} = weights read "
        f"{u.nbytes(b['weight_read_bytes_per_device'])} + optimizer update "
        f"{u.nbytes(b['optimizer_update_bytes_per_device'])} per device.",
        "", f"- {b['definition']}"]


def stage_memory_rows(stages):
    b = u.nbytes
    return [[s["stage"], s["layers"], u.integer(s["params"]), b(s["weights_bytes"]), b(s["grads_bytes"]),
             b(s["optimizer_bytes"]), b(s["layer_activations_bytes"] + s["embedding_head_loss_activations_bytes"]),
             f"{s['micro_batches_in_flight']:g}", b(s["activations_bytes"]), b(s["total_bytes"]),
             ("" if s["fits"] else "-") + b(abs(s["headroom_bytes"]))] for s in stages]


def memory_lines(mem):
    s = mem["stages"][mem["binding_stage"]]
    verdict = ("fits on every device" if mem["fits"] else
               f"does not fit: stage {mem['binding_stage']} is short by {u.nbytes(mem['shortfall_bytes'])} "
               f"({u.integer(mem['shortfall_bytes'])} B)")
    return [f"Device memory {u.nbytes(mem['device_memory_bytes'])}; binding stage {mem['binding_stage']} "
            f"(layers {s['layers']}) needs {u.nbytes(s['total_bytes'])}: {verdict}."]


def summary(rec):
    """The verdict block: fits or not (and what would), the step time, MFU, time to the budget."""
    from . import verdict as v

    mem, t, th, i = rec["memory"], rec["time"], rec["throughput"], rec["inputs"]
    bind = mem["stages"][mem["binding_stage"]]
    fits = mem["fits"]
    lines = [f"Step: {v.times(t['step_s'], rec['lower_bound']['step_s'], t.get('predicted_step_s'), fits)}",
             f"Throughput: {u.decimal(th['tokens_per_s_per_device'], 1)} tokens/s per device "
             f"(estimate{'' if fits else '; ' + v.DOES_NOT_FIT}), MFU {u.percent(th['mfu'])}" if th.get("mfu") is not None else
             f"Throughput: {u.decimal(th['tokens_per_s_per_device'], 1)} tokens/s per device (estimate)"]
    pred = rec.get("predicted")
    if pred:
        lines.append(f"Predicted (a well-tuned stack, not a bound: the step at achievable rates x the fitted factor "
                     f"{pred['fitted_factor']:.3f}): {u.decimal(pred['tokens_per_s_per_device'], 1)} "
                     f"tokens/s per device" + (f", {pred['train_days']:.2f} days to the token budget"
                                               if pred.get("train_days") is not None else "")
                     + ("" if fits else f" ({v.DOES_NOT_FIT})"))
    train = th.get("train")
    if train:
        lines.append(f"{u.tokens_short(train['tokens'])} tokens: {u.integer(train['steps'])} steps, "
                     f"{train['days']:.2f} days, {u.integer(round(train['device_hours']))} device-hours on "
                     f"{u.count(i['devices'], 'device')} (estimate" + ("" if fits else f"; {v.DOES_NOT_FIT}") + ")")
    if not fits:
        options = mem.get("would_fit", [])
        lines.append("Would fit: " + "; ".join(f"`{o['options']}` ({u.nbytes(o['needs_bytes'])})" for o in options)
                     if options else "No --zero or --recompute setting fits this layout: more devices, "
                     "or `--search` over a device count")
    head = v.memory_headline(fits, mem["binding_stage"], bind["total_bytes"], mem["device_memory_bytes"],
                             mem["shortfall_bytes"])
    return v.block(head, lines)


def search_summary(rec):
    """The verdict block of a search: the best layout that fits, or why none does."""
    from . import verdict as v

    i, ranked = rec["inputs"], rec["top"]
    if not ranked:
        return v.block(f"No layout of {u.count(i['devices'], 'device')} fits", [
            "Why: the rejected layouts below; more devices, --zero or --recompute"])
    best = ranked[0]
    mfu = "" if best["mfu"] is None else f", MFU {u.percent(best['mfu'])}"
    return v.block(f"Best of {u.count(i['devices'], 'device')}: {best['layout']}, step "
                   f"{u.seconds(best['step_s'])} (estimate){mfu}", [
        f"{u.decimal(best['tokens_per_s_per_device'], 1)} tokens/s per device; peak memory "
        f"{u.nbytes(best['peak_memory_bytes'])} per device ({u.nbytes(best['headroom_bytes'])} left)",
        *([f"Predicted step (ranked; a well-tuned stack, not a bound): {u.seconds(best['predicted_step_s'])}"]
          if best.get("predicted_step_s") is not None else []),
        f"{u.integer(rec['layouts_admitted'])} of {u.integer(rec['layouts_considered'])} layouts fit and run"])


def markdown(rec):
    m, d = shown(rec["model"]), shown(rec["device"])
    t = rec["time"]
    pred = rec.get("predicted")
    has_pred = bool((pred or {}).get("breakdown"))
    parts = [
        f"# train: {m['id']} on {d['id']}", "", *summary(rec), *header_lines(rec), links_line(rec["inputs"]), "",
        "## Step time (estimate: exposed communication, ring collectives)"
        + ("; predicted beside it" if has_pred else ""), "",
        f"{u.count(t['micro_batches'], 'micro-batch', 'micro-batches')} per step; one micro-batch "
        f"on the slowest stage ({t['bottleneck_stage']}) takes {u.seconds(t['micro_batch_s'])}"
        + (f"; bubble fraction {t['bubble_fraction']:.4f}" if t["bubble_fraction"] is not None else "") + ".", "",
        markdown_table(["part", "time", "share"] + (["predicted", "estimate / predicted"] if has_pred else []),
                       time_rows(t, pred), "lrrrr" if has_pred else "lrr"), "",
        *predicted_parts_line(pred),
        *throughput_lines(rec["throughput"], rec["inputs"], t.get("unknown_peaks"),
                          rec.get("hc_contractions") == "matrix"), "",
        *lower_bound_lines(rec["lower_bound"], t["step_s"]), "",
        "### Per stage, one micro-batch", "",
        markdown_table(["stage", "fwd compute", "bwd compute", "recompute", "fwd comm", "bwd comm",
                        "recompute comm", "micro-batch"] + (["predicted", "estimate / predicted"] if has_pred else [])
                       + ["DP exposed (step)", "optimizer (step)"],
                       stage_time_rows(t["stages"], pred), "rrrrrrrrrrrr" if has_pred else "rrrrrrrrrr"), "",
        "### Collectives (slowest stage per micro-batch; data-parallel per step)", "",
        markdown_table(["stage", "phase", "collective", "dim", "kind", "S", "group", "tier", "runs", "time"],
                       collective_rows(t["collectives"]), "rllllrrlrr") if t["collectives"] else "None (one device).", "",
        "## Memory per device, per pipeline stage", "",
        *memory_lines(rec["memory"]), "",
        markdown_table(["stage", "layers", "params", "weights", "grads", "optimizer", "acts / micro-batch",
                        "in flight", "activations", "total", "headroom"],
                       stage_memory_rows(rec["memory"]["stages"]), "rlrrrrrrrrr"), "",
        "## FLOPs per step", "",
        markdown_table(["quantity", "exact", "human"], flops_rows(rec["flops_per_step"], rec.get("hc_contractions") == "matrix"), "lrr"), "",
        "## Closed forms beside the exact count", "",
        markdown_table(["convention", "formula", "FLOPs", "compared with", "ratio", "why it differs"],
                       closed_form_rows(rec), "llrlrl"), "",
        "## Operators (one micro-batch)", "",
        ("One instance of each distinct layer (x = number of layers that share it, not multiplied); "
         if rec.get("per_layer") else "Summed over the listed layers (x = number of layers); ")
        + "saved = kept for the backward without recompute.", "",
        markdown_table(["operator", "layers", "x", "kind", "fwd matrix", "bwd matrix", "recomputed",
                        "fwd vector", "bwd vector", "saved"],
                       operator_rows(rec["operators_per_micro_batch"]), "llrlrrrrrr"), "",
        *book_lines(rec.get("book_count")),
        *conventions(rec["conventions"]),
    ]
    return "\n".join(parts)


def _specials(d):
    return ", ".join(f"{k} {v:,}" for k, v in d.items()) or "-"


def _known(n):
    return "unknown" if n is None else f"{n:,}"


def _book_row(o):
    if o.get("rule", True) is None:
        return [inline(o["name"]), o["layers"], str(o["repeats"]), "no rule", "no rule", "-", "-", "-"]
    return [inline(o["name"]), o["layers"], str(o["repeats"]), f"{o['forward_scalar_flops']:,}",
            f"{o['backward_scalar_flops']:,}", _specials(o["forward_special_ops"]),
            _specials(o["backward_special_ops"]), f"{o['saved_bytes']:,}"]


def _counted(o):
    return o.get("rule", True) is None or any(
        o[k] for k in ("forward_scalar_flops", "backward_scalar_flops", "forward_special_ops",
                       "backward_special_ops", "saved_bytes"))


def book_lines(b):
    """--scalar-count book: the book's training tally of one micro-batch."""
    if not b:
        return []
    rows = [_book_row(o) for o in b["operators"] if _counted(o)]
    a, d = b["adamw"], b["data_operations"] or {}
    totals = [["forward scalar FLOPs", _known(b["forward_scalar_flops"])],
              ["backward scalar FLOPs", _known(b["backward_scalar_flops"])],
              ["AdamW scalar FLOPs (14 per parameter + 6)", f"{b['optimizer_scalar_flops']:,}"],
              ["special functions", "unknown" if b["special_ops"] is None else _specials(b["special_ops"])],
              ["training matrix FLOPs (model FLOPs)", f"{b['training_matrix_flops']:,}"],
              ["matrix + scalar FLOPs", _known(b["matrix_plus_scalar_flops"])],
              ["saved objects at the end of the forward (B)", _known(b["saved_at_forward_end_bytes"])],
              ["saved objects, peak with recompute (B)", _known(b["saved_peak_bytes"])],
              ["AdamW reads / writes / weights written (B)",
               f"{a['read_bytes']:,} / {a['write_bytes']:,} / {a['weight_write_bytes']:,}"],
              ["AdamW master-to-weight casts, step increments", f"{a['master_to_weight_casts']:,}, {a['step_index_increments']}"],
              *[[k.replace("_", " "), f"{v:,}"] for k, v in d.items()]]
    missing = b["missing_rules"]
    parts = [f"{inline(o['name'])} ({o['layers']}) {p['name']}: forward {p['forward_scalar_flops']:,}, backward "
             f"{p['backward_scalar_flops']:,}, saved {p['saved_bytes']:,} B"
             for o in b["operators"] for p in o.get("parts", ())]
    return ["## The book's training tally (--scalar-count book)", "",
            f"One micro-batch, the whole model; activation policy `{b['activation_policy']}`."
            + (" Operator rows: one instance of each distinct layer (x layers share it); totals: the whole model."
               if b.get("per_layer") else "")
            + (f" No book rule for {', '.join(missing)}: the totals they enter are unknown." if missing else ""), "",
            markdown_table(["operator", "layers", "x", "fwd scalar", "bwd scalar", "fwd special", "bwd special",
                            "saved (B)"], rows, "llrrrllr"), "",
            *([f"Parts inside these rows, as the book prints them apart: {'; '.join(parts)}.", ""] if parts else []),
            markdown_table(["quantity", "value"], totals, "lr"), ""]


def csv(rec):
    """One row per pipeline stage: its memory per device (the `memory.stages` keys) and one
    micro-batch's times (`time.stages`), then the step's figures, the same on every row."""
    times = {t["stage"]: t for t in rec["time"]["stages"]}
    pred = rec.get("predicted") or {}
    predicted = {p["stage"]: p["micro_batch_s"] for p in pred.get("stages", ())}
    step = {"step_s": rec["time"]["step_s"], "tokens_per_s_per_device": rec["throughput"]["tokens_per_s_per_device"],
            "mfu": rec["throughput"]["mfu"], "hfu": rec["throughput"]["hfu"],
            "lower_bound_step_s": rec["lower_bound"]["step_s"], "predicted_step_s": pred.get("step_s"),
            "predicted_tokens_per_s_per_device": pred.get("tokens_per_s_per_device")}
    rows = [{**m, **{k: v for k, v in times[m["stage"]].items() if k != "stage"},
             "predicted_micro_batch_s": predicted.get(m["stage"]), **step}
            for m in rec["memory"]["stages"]]
    return records_to_csv(rows)


def search_markdown(rec):
    m, d, i = shown(rec["model"]), shown(rec["device"]), rec["inputs"]
    rows = [[k + 1, r["layout"], r["micro_batches"], u.seconds(r["step_s"]), u.seconds(r["compute_s"]),
             u.seconds(r["exposed_comm_s"]), u.seconds(r["bubble_s"]), u.seconds(r["dp_sync_and_optimizer_s"]),
             "-" if r["mfu"] is None else f"{100 * r['mfu']:.1f}%", f"{r['tokens_per_s_per_device']:,.1f}",
             u.nbytes(r["peak_memory_bytes"])] for k, r in enumerate(rec["top"])]
    predicted = i["objective"] == "predicted"
    if predicted:
        for row, r in zip(rows, rec["top"]):
            row.append("-" if r["predicted_step_s"] is None else u.seconds(r["predicted_step_s"]))
    rejected = [[x["layouts"], x["reason"], x["example"] or "-",
                 "-" if x["least_shortfall_bytes"] is None else u.integer(x["least_shortfall_bytes"])]
                for x in rec["rejected"]]
    parts = [
        f"# train --search: {m['id']} on {i['devices']} x {d['id']}", "", *search_summary(rec),
        f"- Step: {u.count(i['global_batch'], 'sequence')} x {u.integer(i['seq'])} tokens{supervised_text(i)}, "
        f"micro-batch {i['micro_batch']}; recompute `{i['recompute']}`{recipe_text(i)}; ZeRO {i['zero']}; "
        f"schedule {i['schedule']}; "
        f"objective {i['objective']}",
        f"- Device memory {u.nbytes(d['memory_bytes'])} ({d['memory_convention']} capacity)",
        links_line(i),
        f"- Layouts considered: {rec['layouts_considered']}; admitted: {rec['layouts_admitted']}", "",
        *(["## Best layouts", "",
           markdown_table(["#", "layout", "m", "step", "compute", "exposed comm", "bubble", "DP sync + optimizer",
                           "MFU", "tokens/s/device", "peak memory"] + (["predicted step"] if predicted else []),
                          rows, "rlrrrrrrrrr" + ("r" if predicted else ""))] if rows else
          [no_layout_line(i["devices"], rec["rejected"])]), "",
        "## Rejected layouts, by reason", "",
        markdown_table(["layouts", "reason", "example", "least shortfall (B)"], rejected, "rllr")
        if rejected else "None.", "",
        *conventions(rec["conventions"]),
    ]
    return "\n".join(parts)



def search_csv(rec):
    return records_to_csv(rec["top"], ("layout",))

"""Markdown and CSV for a `kv` record."""

from . import units as u
from .table import inline, markdown_table, records_to_csv, conventions


def _both(n):
    return [u.integer(n), u.nbytes(n)]


def _requests(m):
    return "unbounded (no per-request cache)" if m is None else u.integer(m)


def header_lines(rec):
    m, i = rec["model"], rec["inputs"]
    where = (f"`{inline(i['device'])}` ({i.get('memory_convention', 'physical')} capacity, --memory-convention)"
             if i["device"] else "`--memory-bytes`")
    reserve = ("default: 10% of memory" if i["reserve_is_default"] else "set with --reserve")
    lines = [
        f"- Model: `{inline(m['id'])}` ({m['model_type']}), {m['layers']} layers, attention {m['attention']}, "
        f"maximum context {u.integer(m['max_context'])}",
        f"- Requests: context {u.integer(i['context'])} tokens, batch {i['batch']}"
        + (f", shared prefix {u.integer(i['shared_prefix'])} tokens" if i["shared_prefix"] else "")
        + (f", pages of {i['page_size']} tokens" if i["page_size"] else ", no paging"),
        f"- Formats: KV cache {i['kv_dtype']}, weights {i['weight_dtype']}"
        + "".join(f"; {role} stored natively as {fmt}" for role, fmt in i.get("native_formats", {}).items())
        + f"; MLA path `{i['mla']}` "
        "(used by MLA layers only)",
        f"- Layout: TP {i['tp']} x PP {i['pp']} = {u.count(i['tp'] * i['pp'], 'device')}; memory per device "
        f"{u.integer(i['memory_bytes'])} B ({u.nbytes(i['memory_bytes'])}) from {where}; workspace "
        f"reserve {u.integer(i['reserve_bytes'])} B ({u.nbytes(i['reserve_bytes'])}, {reserve})",
    ]
    for note in m.get("notes", []):
        lines.append(f"- Model note: {note}")
    return lines


def sizing_section(rec):
    s, i = rec["sizing"], rec["inputs"]
    rows = [[t["layer_type"], t["layers"], t["formula"], u.integer(t["bytes_per_token_per_layer"]),
             u.integer(t["tokens_held_per_layer"]), u.integer(t["state_bytes_per_layer"]),
             u.integer(t["bytes_per_token"]), u.integer(t["bytes_per_request"])]
            for t in s["layer_types"]]
    out = [
        "## Cache per layer type", "",
        f"Whole model (no TP split, no paging), one request at {u.integer(i['context'])} tokens.", "",
        markdown_table(["layer type", "layers", "formula (per layer)", "B/token/layer", "tokens held",
                        "state B/layer", "B/token (all layers)", "B/request (all layers)"],
                       rows, "lrlrrrrr"),
        "",
        markdown_table(["quantity", "bytes", "human"], [
            ["Cache per token, all layers", *_both(s["bytes_per_token"])],
            ["Fixed state per request", *_both(s["state_bytes_per_request"])],
            *[[f"  of which {name} state", *_both(b)] for name, b in s.get("state_parts_per_request", {}).items()],
            [f"Cache per request at {u.integer(i['context'])} tokens", *_both(s["bytes_per_request"])],
        ], "lrr"),
    ]
    if not rows:
        out.insert(4, "No layer keeps a cache or state.")
    return out


def capacity_section(rec):
    c, i = rec["capacity"], rec["inputs"]
    b, ctx = i["batch"], u.integer(i["context"])
    st = c["stages"][c["binding_stage"]]
    where = f" (binding: stage {c['binding_stage']}, layers {st['layers']})" if i["pp"] > 1 else ""
    rows = [
        [f"Weights per device{where}", *_both(st["weight_bytes"])],
        ["Workspace reserve", *_both(c["reserve_bytes"])],
        [("Memory left for the KV cache (memory - weights - reserve)" if c["kv_cache_room_bytes"] >= 0 else
          "Shortfall before any KV cache (weights + reserve - memory)"),
         u.integer(abs(c["kv_cache_room_bytes"])), u.nbytes(abs(c["kv_cache_room_bytes"]))],
        ["KV cache per token per device", *_both(c["kv_bytes_per_token_per_device"])],
        ["KV cache per request per device", *_both(c["kv_bytes_per_request_per_device"])],
    ]
    if i["shared_prefix"]:
        rows.append(["Shared prefix cache per device (once)", *_both(c["shared_prefix_bytes_per_device"])])
    if i["page_size"]:
        rows += [[f"Page bytes per device ({i['page_size']} tokens x KV cache per token per device)",
                  *_both(c["page_bytes_per_device"])],
                 ["Page waste per request per device", *_both(c["page_waste_bytes_per_request"])],
                 [f"Page waste at batch {b}", *_both(c["page_waste_bytes_at_batch"])]]
    rows.append([f"**Max concurrent requests at {ctx} tokens**", _requests(c["max_requests"]), ""])
    left = c["memory_left_bytes_at_batch"]
    label = f"Memory left at batch {b}" if left >= 0 else f"Memory short at batch {b}"
    rows.append([label, u.integer(abs(left)), u.nbytes(abs(left))])
    if c["memory_left_bytes_at_max_requests"] is not None:
        rows.append(["Memory left at the max requests", *_both(c["memory_left_bytes_at_max_requests"])])
    mc = c["max_context_at_batch"]
    rows.append([f"**Max context at batch {b}**",
                 u.integer(mc) + (" (the model's maximum)" if c["max_context_is_model_limit"] else ""), ""])
    out = ["## Capacity", "",
           "Per device: memory = weight shard + KV cache + reserve.", ""]
    if not c["fits_one_request"]:
        out += [f"**Does not fit: one request at {ctx} tokens needs "
                f"{u.integer(c['shortfall_bytes_at_batch_1'])} B "
                f"({u.nbytes(c['shortfall_bytes_at_batch_1'])}) more than the device holds.**", ""]
    out.append(markdown_table(["quantity", "exact", "human"], rows, "lrr"))
    if i["pp"] > 1:
        srows = [[s["stage"], s["layers"], *_both(s["weight_bytes"]), u.integer(s["kv_bytes_per_request"]),
                  _requests(s["max_requests"]), u.integer(s["memory_left_bytes_at_batch"])]
                 for s in c["stages"]]
        out += ["", "### Pipeline stages (one device each per TP rank)", "",
                markdown_table(["stage", "layers", "weight B", "weights", "KV B/request",
                                "max requests", f"left at batch {b} (B)"], srows, "rlrrrrr")]
    return out


def concurrency_section(rec):
    rows = [[u.integer(r["context"]), _requests(r["max_requests"])]
            + ([r["binding_stage"]] if rec["inputs"]["pp"] > 1 else [])
            for r in rec["concurrency"]]
    head = ["context", "max requests"] + (["binding stage"] if rec["inputs"]["pp"] > 1 else [])
    return ["## Max concurrency by context", "",
            "Same layout, reserve, paging and prefix; contexts are powers of two from 1K and the "
            "model's maximum" + (", longer than the shared prefix." if rec["inputs"]["shared_prefix"]
                                 else "."), "", markdown_table(head, rows)]


def summary(rec):
    """The verdict block: how many requests fit, whether the batch fits, the longest context."""
    from . import verdict as v

    c, i = rec["capacity"], rec["inputs"]
    stage = c["stages"][c["binding_stage"]]
    context = u.integer(i["context"])
    where = (f"stage {c['binding_stage']}, " if len(c["stages"]) > 1 else "") + "per device"
    if not c["fits_one_request"]:
        head = (f"Does not fit: not one request of {context} tokens; short by "
                f"{u.nbytes(c['shortfall_bytes_at_batch_1'])} {where}")
    elif c["max_requests"] is None:   # every request's cache is the shared prefix: no per-request bytes
        head = f"Fits: any number of requests of {context} tokens (each adds no cache beyond the shared prefix)"
    else:
        head = f"Fits: at most {u.count(c['max_requests'], 'request')} of {context} tokens at once"
    lines = [f"Memory {where}: weights {u.nbytes(stage['weight_bytes'])} + reserve "
             f"{u.nbytes(c['reserve_bytes'])} + KV cache {u.nbytes(stage['kv_bytes_per_request'])} per "
             f"request, of {u.nbytes(c['memory_bytes_per_device'])}"]
    batch = u.count(i["batch"], "request")
    left = c["memory_left_bytes_at_batch"]
    if c["fits_one_request"] and i["batch"] > 1:
        lines.append(f"Batch of {batch}: " + (f"fits, {u.nbytes(left)} left" if c["max_requests"] is None or c["max_requests"] >= i["batch"]
                                              else f"{v.DOES_NOT_FIT} (at most {c['max_requests']})"))
    if not c["fits_one_request"]:
        lines.append("Would fit with more devices (`--tp`, `--pp`), smaller formats (`--weight-dtype`, "
                     "`--kv-dtype`) or a smaller `--reserve`")
    if c["max_context_at_batch"]:
        lines.append(f"Longest context for {batch}: {u.integer(c['max_context_at_batch'])} tokens"
                     + (" (the model's maximum)" if c["max_context_is_model_limit"] else ""))
    return v.block(head, lines)


def markdown(rec):
    m, i = rec["model"], rec["inputs"]
    where = inline(i["device"]) if i["device"] else "memory " + u.nbytes(i["memory_bytes"])
    parts = [f"# kv: {inline(m['id'])} at {u.integer(i['context'])} tokens on {where} "
             f"(TP {i['tp']}, PP {i['pp']})", "", *summary(rec), *header_lines(rec), "",
             *sizing_section(rec), "", *capacity_section(rec), "", *concurrency_section(rec), ""]
    if rec.get("weights"):
        wt = rec["weights"]
        parts += ["## Resident weights (--weights all)", "",
                  markdown_table(["part", "bytes", "human"], [["text model", *_both(wt["text_bytes"])]]
                                 + [[name, *_both(b)] for name, b in wt["parts"].items()], "lrr"), ""]
    if rec.get("screen"):
        sc = rec["screen"]
        rows = [[u.integer(x["memory_bytes"]), u.integer(x["reserve_bytes"]), u.integer(x["need_bytes_at_batch"]),
                 "yes" if x["fits"] else "no", u.integer(x["memory_left_bytes_at_batch"])] for x in sc["devices"]]
        parts += ["## Necessary budget against other memory sizes (--screen)", "",
                  f"Batch {i['batch']} at {u.integer(i['context'])} tokens; need = weights + reserve + shared "
                  "prefix + batch x cache per request, on the binding stage.", ""]
        if sc.get("terms_at_batch"):
            parts += [markdown_table(["term at the batch", "bytes"],
                                     [[k.replace("_", " "), u.integer(v)] for k, v in sc["terms_at_batch"].items()],
                                     "lr"), ""]
        parts += [markdown_table(["memory per device (B)", "reserve (B)", "need at batch (B)", "fits",
                                  "memory left (B)"], rows, "rrrlr"), ""]
    if rec["notes"]:
        parts += ["## Notes", "", *[f"- {inline(n)}" for n in rec["notes"]], ""]
    parts += [*conventions(rec["conventions"])]
    return "\n".join(parts)


def csv(rec):
    return records_to_csv(rec["concurrency"], ("context", "max_requests", "binding_stage"))

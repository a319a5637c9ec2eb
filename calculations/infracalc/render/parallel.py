"""Markdown and CSV for `parallel` records (one layout, a batch sweep, a search)."""

from ..analyses.parallel import SWEEP_COLUMNS
from . import units as u
from .forward import architecture_options, device_line, formats_line, model_line, note_lines
from .table import conventions, inline, markdown_table, no_layout_line, records_to_csv, rejection_reasons, to_csv

PHASES = (("prefill", "prefill (TTFT)"), ("first", "first decode step"), ("last", "last decode step"),
          ("decode", "all decode steps"))
STAGE_COLUMNS = ("phase", "stage", "roofline_s", "compute_bound_s", "weights_s", "kv_s", "activations_s",
                 "comm_s", "exposed_comm_s", "time_s", "matrix_flops", "vector_flops", "weight_bytes_read",
                 "kv_bytes_read", "kv_bytes_written", "act_bytes_moved", "ideal_s", "comm_fastest_s",
                 "lower_bound_s", "predicted_s", "predicted_comm_s", "predicted_efficiency")
SEARCH_COLUMNS = ("rank", "layout", "tp", "pp", "dp", "cp", "ep", "batch", "micro_batches", "ttft_s",
                  "tpot_mean_s", "decode_tokens_per_s_cluster", "decode_tokens_per_s_per_device",
                  "bubble_fraction", "comm_s", "exposed_comm_s", "binding_stage", "max_requests_per_replica",
                  "lower_bound_ttft_s", "lower_bound_tpot_mean_s", "upper_bound_decode_tokens_per_s_per_device")


def _rate(x):
    return "-" if x is None else f"{x:,.1f}"


def _pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def _requests(i):
    return (f"- Requests: {i['input_len']} input and {i['output_len']} output tokens each"
            + (f", batch {i['batch']} per replica" if i.get("batch") else ""))


def layout_line(lay):
    groups = "; ".join(f"{g['dim']} group of {g['size']} (stride {g['stride']}, span {g['span']}"
                       + (f", {g['tier']} tier)" if g["tier"] != "-" else ")") for g in lay["groups"])
    ep = f", expert TP {lay['expert_tp']}" if lay.get("expert_tp") and lay["ep"] > 1 else ""
    return (f"- Layout: {lay['label']} on {u.count(lay['devices'], 'device')} (tp {lay['tp']}, pp {lay['pp']}, "
            f"dp {lay['dp']}, cp {lay['cp']}, ep {lay['ep']}{ep}, sp {'on' if lay['sp'] else 'off'}); "
            f"rank order {lay['order']}; layers per stage {','.join(map(str, lay['pp_layers']))}; "
            f"micro-batches {lay['micro_batches']}" + (f"; {groups}" if groups else ""))


def links_lines(links):
    out = []
    for tier, link in links.items():
        if link is None:
            out.append(f"- Scale-{tier} link: none in the device data")
            continue
        extra = "".join(f"; {a}" for a in link["assumptions"])
        out.append(f"- Scale-{tier} link: {inline(link['name'])}: {u.rate_bytes(link['bytes_per_s'])} per direction "
                   f"per device, alpha {link['alpha_s'] * 1e6:g} us per step, {link['topology']}"
                   + (f" of {u.count(link['domain_size'], 'device')}" if tier == "up" else "")
                   + f", efficiency {link['efficiency']:g}{extra}")
    return out


def _header(rec, title):
    m, i = rec["model"], rec["inputs"]
    extra = architecture_options(m, i)
    overlap = ("communication hidden under the shard's kernels (--overlap)" if i["overlap"] else
               "communication not overlapped (all of it exposed)")
    lines = [f"# {inline(title)}", "", model_line(m, tied=False), _requests(i) + (f"; {', '.join(extra)}" if extra else ""),
             formats_line(i), device_line(rec["device"], memory=True), *links_lines(rec["links"]),
             f"- Collectives: {i['algorithm']}; {overlap}"
             + ("; EP dispatch and combine send one copy per destination rank (--ep-dedup)"
                if i.get("ep_dedup") else "")]
    if "layout" in rec:
        lines.append(layout_line(rec["layout"]))
    return lines + note_lines(rec)


def _tail(rec):
    definitions = [rec[k] for k in ("latency_definition",) if k in rec] + rec.get("definitions", [])
    if "lower_bound" in rec and "definition" in rec["lower_bound"]:
        definitions.append(rec["lower_bound"]["definition"])
    return ["", "## What neither the estimate nor the bound charges", "", *[f"- {t}" for t in rec["left_out"]],
            "", *conventions(definitions + rec["conventions"])]


def _with_summary(header, block):
    """The header lines with the verdict block right under the title."""
    return header[:2] + block + header[2:]


def _fit(mem):
    from . import verdict as v

    short = mem.get("shortfall_bytes") or 0
    if mem.get("fits", True):
        return (f"Fits: at most {u.count(mem['max_requests_per_replica'], 'request')} per replica"
                if mem.get("max_requests_per_replica") is not None else "Fits")
    most = mem.get("max_requests_per_replica")
    room = f" (at most {u.count(most, 'request')} per replica)" if most else ""
    return (f"Does not fit: stage {mem['binding_stage']} short by {u.nbytes(short)} per device{room}" if short
            else f"Does not fit{room}")


def _summary(rec):
    """The verdict block of one layout: fits or not, TTFT, TPOT, tokens/s per device."""
    from . import verdict as v

    lat, lb, mem, i = rec["latency"], rec["lower_bound"], rec["memory"], rec["inputs"]
    fits = mem.get("fits", True)
    return v.block(_fit(mem) + f"; batch {i['batch']} per replica", [
        f"TTFT: {v.times(lat['ttft_s'], lb.get('ttft_s'), lat.get('predicted_ttft_s'), fits)}",
        f"TPOT (mean): {v.times(lat['tpot_mean_s'], lb.get('tpot_mean_s'), lat.get('predicted_tpot_mean_s'), fits)}",
        f"Decode tokens/s per device: {_rate(lat['decode_tokens_per_s_per_device'])} estimate, "
        f"{_rate(lb.get('decode_tokens_per_s_per_device'))} upper bound"
        + (f", {_rate(lat['predicted_decode_tokens_per_s_per_device'])} predicted"
           if lat.get("predicted_decode_tokens_per_s_per_device") is not None else "")
        + ("" if fits else f" ({v.DOES_NOT_FIT})")]
        + _stream_line(rec.get("serving"))
        + ([] if fits else ["Would fit with a smaller `--batch`, more devices (`--tp`, `--pp`), smaller formats, "
                            "or run with `--search` over a device count"]))


def _stream_line(s):
    """The first screen's serving-stream line: the layout's serving bound per device beside the
    predicted steady state of a tuned engine (efficiency.serving.predicted_layout)."""
    if not s:
        return []
    p = s.get("predicted")
    pred = (f", {_rate(p['output_tokens_per_s_per_device'])} predicted (a well-tuned engine at "
            f"{u.integer(p['concurrency'])} requests in flight per replica)" if p else "")
    return [f"Serving a stream (continuous batching): at most {_rate(s['output_tokens_per_s_per_device'])} "
            f"output tokens/s per device (upper bound){pred}"]


def _opt_s(x):
    return "-" if x is None else u.seconds(x)


def _sweep_summary(rec):
    from . import verdict as v

    rows = rec["rows"]
    if not rows:
        return v.block("Does not fit: not one request per replica", [])
    last = rows[-1]
    pred = last.get("predicted_decode_tokens_per_s_per_device")
    return v.block(f"Fits up to batch {last['batch']} per replica: {_rate(last['decode_tokens_per_s_per_device'])} "
                   "decode tokens/s per device (estimate" + (f"; {_rate(pred)} predicted" if pred is not None else "")
                   + ")", [
        f"TPOT (mean) at batch {last['batch']}: {u.seconds(last['tpot_mean_s'])}; at batch {rows[0]['batch']}: "
        f"{u.seconds(rows[0]['tpot_mean_s'])}"])


def _search_summary(rec):
    from . import verdict as v

    i = rec["inputs"]
    if not rec["top"]:
        return v.block(f"No layout of {u.count(i['devices'], 'device')} is admitted", [
            "Why: " + (rejection_reasons(rec["rejected"]) or "no layout considered"),
            "Try more devices or smaller formats"])
    best = _search_row(rec["top"][0])
    limit = f" (TPOT limit {u.seconds(i['tpot_limit_s'])})" if i["tpot_limit_s"] is not None else ""
    lines = [f"Decode tokens/s per device: {_rate(best['decode_tokens_per_s_per_device'])} estimate, "
             f"{_rate(best['upper_bound_decode_tokens_per_s_per_device'])} upper bound",
             f"TTFT {v.times(best['ttft_s'], best['lower_bound_ttft_s'])}",
             f"TPOT (mean) {v.times(best['tpot_mean_s'], best['lower_bound_tpot_mean_s'])}",
             *([f"Predicted (ranked): {_rate(best['predicted_output_tokens_per_s_per_device'])} output tokens/s "
                f"per device at the engine's concurrency {u.integer(best['predicted_concurrency'])} per replica"]
               if "predicted_output_tokens_per_s_per_device" in best else []),
             *([f"Predicted for this layout (a well-tuned engine, not a bound; `--objective predicted` ranks by "
                f"it): {_rate(rec['best_predicted']['output_tokens_per_s_per_device'])} output tokens/s per "
                f"device at {u.integer(rec['best_predicted']['concurrency'])} requests in flight per replica"]
               if rec.get("best_predicted") else []),
             f"{u.integer(rec['layouts_admitted'])} of {u.integer(rec['layouts_considered'])} layouts admitted; "
             + (", ".join(f"{r['layouts']} rejected: {r['reason']}" for r in rec["rejected"][:2]) or "none rejected")]
    return v.block(f"Best of {u.count(i['devices'], 'device')}{limit}: {best['layout']}, batch {best['batch']} per "
                   f"replica, {i['objective']} objective", lines)


def _stage_row(name, s):
    return [name, s["stage"], u.seconds(s["roofline_s"]), u.seconds(s["compute_bound_s"]), u.seconds(s["weights_s"]),
            u.seconds(s["kv_s"]), u.seconds(s["activations_s"]), u.seconds(s["comm_s"]),
            u.seconds(s["exposed_comm_s"]), u.seconds(s["time_s"]), u.seconds(s["ideal_s"]),
            u.seconds(s["lower_bound_s"])] + ([u.seconds(s["predicted_s"]), u.ratio(s.get("predicted_efficiency"), 2)]
                                              if "predicted_s" in s else [])


def _collective_rows(name, stage, cs):
    return [[name, stage, c["name"], c["kind"], u.integer(c["bytes_per_run"]), c["runs"] * c.get("passes", 1),
             c["group"], c["tier"], u.seconds(c["time_s"])] for c in cs]


def memory_lines(mem):
    rows = [[s["stage"], s["layers"], u.nbytes(s["weight_bytes"]), u.integer(s["cache_bytes_per_request"]),
             u.nbytes(s["reserve_bytes"]), u.nbytes(s["need_bytes"]), u.nbytes(s["memory_bytes"]),
             "unbounded" if s["max_requests"] is None else u.integer(s["max_requests"]),
             u.integer(s["shortfall_bytes"]) if s["shortfall_bytes"] else "-"] for s in mem["stages"]]
    cap = mem["max_requests_per_replica"]
    return ["", "## Memory per device, per stage", "",
            f"Cache of {u.integer(mem['context_tokens'])} tokens per request ({u.integer(mem['cache_tokens_per_rank'])} "
            f"per CP rank); {mem['memory_convention']} capacity.", "",
            markdown_table(["stage", "layers", "weights", "cache per request (B)", "reserve", "need at batch",
                            "memory", "requests that fit", "shortfall (B)"], rows, "rlrrrrrrr"), "",
            f"- Binding stage: {mem['binding_stage']}; requests that fit per replica: "
            f"{'unbounded' if cap is None else u.integer(cap)}, in the cluster: "
            f"{'unbounded' if cap is None else u.integer(mem['max_requests_cluster'])}",
            f"- Batch fits: {'yes' if mem['fits'] else 'no, short by ' + u.integer(mem['shortfall_bytes']) + ' B on a device'}",
            f"- Reserve per device: {mem['reserve_rule']}",
            *[f"- Engine default on a binding-stage device, {e['engine']}: "
              + ("-" if e["reserve_bytes"] is None else
                 f"reserve {u.nbytes(e['reserve_bytes'])}, {u.count(e['max_requests'], 'request')} fit")
              + f" ({e['rule']})" for e in mem["engine_defaults"] or ()]]


def _pipeline_rows(ph):
    rows = []
    for key, name in PHASES:
        p = ph.get(key)
        if p is None:
            continue
        cycle = p.get("cycle_s", p.get("ttft_s"))
        rows.append([name, u.seconds(max(s["time_s"] for s in p["stages"])), u.seconds(p["transfer_s"]),
                     u.seconds(p["pass_s"]), u.seconds(cycle), _pct(p["bubble_fraction"])])
    return rows


def markdown(rec):
    m, d, lat, lb = rec["model"], rec["device"], rec["latency"], rec["lower_bound"]
    i, lay = rec["inputs"], rec["layout"]
    steps = i["decode_steps"]
    has_pred = "predicted_ttft_s" in lat
    quantities = [
        [name, fmt(lat[key]), fmt(lb[key]) if key in lb else "-"]
        + ([fmt(lat[f"predicted_{key}"]) if lat.get(f"predicted_{key}") is not None else "-"] if has_pred else [])
        for name, key, fmt in (
            ("TTFT of the batch (all micro-batches prefilled)", "ttft_s", u.seconds),
            ("TTFT of the first micro-batch", "ttft_first_micro_batch_s", u.seconds),
            ("TPOT, first decode step", "tpot_first_s", u.seconds),
            (f"TPOT, mean over {u.count(steps, 'step')}", "tpot_mean_s", u.seconds),
            ("TPOT, last decode step", "tpot_last_s", u.seconds),
            ("Generation (TTFT + decode)", "generation_s", u.seconds),
            ("Decode tokens/s per request", "decode_tokens_per_s_per_request", _rate),
            (f"Decode tokens/s per replica (batch {i['batch']})", "decode_tokens_per_s_replica", _rate),
            (f"Decode tokens/s, cluster ({u.count(lay['dp'], 'replica')})", "decode_tokens_per_s_cluster", _rate),
            (f"Decode tokens/s per device ({u.count(lay['devices'], 'device')})", "decode_tokens_per_s_per_device", _rate),
            ("End-to-end tokens/s, cluster (G / generation time)", "tokens_per_s_cluster", _rate),
            ("End-to-end tokens/s per device", "tokens_per_s_per_device", _rate))]
    ph = rec["phases"]
    stage_rows, coll_rows = [], []
    for key, name in PHASES:
        p = ph.get(key)
        if p is None:
            continue
        for s in p["stages"]:
            stage_rows.append(_stage_row(name, s))
        if key != "last":
            for s in _distinct_stages(p["stages"]):
                coll_rows += _collective_rows(name, s["stage"], s["collectives"])
            coll_rows += _collective_rows(name, "boundary", p["transfer"])
    parts = [*_with_summary(_header(rec, f"parallel: {m['id']} on {lay['devices']} x {d['id']} ({lay['label']})"),
                            _summary(rec)), "",
             "## Latency and throughput: estimate, lower bound" + (" and predicted" if has_pred else ""), "",
             "Definitions of the estimate, the bound and the prediction: Conventions.", "",
             markdown_table(["quantity", "estimate (exposed communication)", "bound (time: lower; tokens/s: upper)"]
                            + (["predicted (a well-tuned stack)"] if has_pred else []), quantities,
                            "lrrr" if has_pred else "lrr"),
             "", "## Pipeline", "",
             "Slowest stage and boundary transfer per micro-batch pass; pass = sum of stage times + "
             "transfers; cycle = TTFT of the batch (prefill) or max(pass, micro-batches x slowest stage) "
             "(decode); bubble = the slowest stage's idle share.", "",
             markdown_table(["phase", "slowest stage", "transfer", "pass", "TTFT / cycle", "bubble"],
                            _pipeline_rows(ph), "lrrrrr"),
             "", "## Per device, per stage and phase", "",
             "Roofline of the stage's shard (compute-bound operators, then memory-bound operators' time by "
             "bytes moved) plus communication; time (the estimate) = roofline + exposed communication; "
             "lower bound = max(ideal, communication with the fastest algorithm)"
             + ("; predicted = the shard at the achievable rates plus its collectives as NCCL runs them, "
                "and bound / predicted the share of it the lower bound explains" if has_pred else "")
             + ". Per micro-batch pass; the decode row sums every step.", "",
             markdown_table(["phase", "stage", "roofline", "compute-bound", "weights", "KV", "activations",
                             "comm", "exposed comm", "time", "ideal", "lower bound"]
                            + (["predicted", "bound / predicted"] if has_pred else []), stage_rows,
                            "lrrrrrrrrrrr" + ("rr" if has_pred else "")),
             "", "## Collectives per device (one micro-batch pass; decode summed over the steps)", "",
             "Stages with the same collectives are listed once. Bytes per run are S as nccl-tests counts it.", "",
             markdown_table(["phase", "stage", "collective", "kind", "bytes per run", "runs", "group", "tier",
                             "time"], coll_rows, "llllrrrlr") if coll_rows else "None: one device per replica "
                                                                               "and no pipeline.",
             *memory_lines(rec["memory"])]
    if rec.get("communication_path"):
        parts += path_lines(rec["communication_path"])
    if rec["serving"]:
        s = rec["serving"]
        rows = [[x["stage"], "-" if x["guaranteed_concurrency"] is None else f"{x['guaranteed_concurrency']:,}",
                 "-" if x["concurrency"] is None else f"{x['concurrency']:,.2f}",
                 _rate(x["requests_per_s"]), _rate(x["output_tokens_per_s"]), x["bound"]] for x in s["stages"]]
        parts += ["", "## Serving-throughput bound per stage shard (continuous batching, upper bound)", "",
                  markdown_table(["stage", "guaranteed concurrency", "steady-state concurrency", "requests/s",
                                  "output tokens/s", "bound"], rows, "rrrrrl"),
                  "", f"- Replica (slowest stage): {_rate(s['requests_per_s_replica'])} requests/s, "
                      f"{_rate(s['output_tokens_per_s_replica'])} output tokens/s; "
                      f"cluster {_rate(s['requests_per_s_cluster'])} requests/s, "
                      f"{_rate(s['output_tokens_per_s_cluster'])} output tokens/s; per device "
                      f"{_rate(s['output_tokens_per_s_per_device'])} output tokens/s (communication not "
                      "charged; why it is an upper bound: Conventions)"] + _predicted_lines(s.get("predicted"))
    return "\n".join(parts + _tail(rec))


def path_lines(path):
    """The --comm-path section: per phase the totals, then every collective in path order."""
    out = ["", "## Communication path (one micro-batch pass, per replica)", "",
           "Every collective in pipeline order, summed serially; bytes are what all the replica's senders "
           "send; bandwidth = the same runs with every alpha zero, startup = time - bandwidth"
           + (" (the sampled token IDs' feedback included)." if path["token_feedback"] else "."), ""]
    totals, rows, cluster = [], [], []
    for key, name in PHASES:
        p = path.get(key)
        if p is None:
            continue
        totals.append([name, p["operations"], u.integer(p["bytes_sent_per_replica"]), f"{p['startup_s'] * 1e3:.6f}",
                       f"{p['bandwidth_s'] * 1e3:.6f}", f"{p['serial_s'] * 1e3:.6f}"])
        cluster.append(f"{name} {u.integer(p['bytes_sent_cluster'])} B")
        rows += [[name, x["where"], x["name"], x["runs"], x["senders"], u.integer(x["bytes_sent"]),
                  f"{x['startup_s'] * 1e6:.6f}", f"{x['bandwidth_s'] * 1e6:.6f}", f"{x['time_s'] * 1e6:.6f}"]
                 for x in p["items"]]
    return out + [markdown_table(["phase", "operations", "bytes sent per replica", "startup (ms)", "bandwidth (ms)",
                                  "serial (ms)"], totals, "lrrrrr"), "",
                  f"- Bytes sent by the cluster (all DP replicas): {'; '.join(cluster)}", "",
                  markdown_table(["phase", "where", "collective", "runs", "senders", "bytes sent", "startup (us)",
                                  "bandwidth (us)", "time (us)"], rows, "lllrrrrrr")]


def _predicted_lines(p):
    if not p:
        return []
    return [f"- Predicted (a well-tuned engine, not a bound): cluster {_rate(p['output_tokens_per_s_cluster'])} "
            f"output tokens/s, per device {_rate(p['output_tokens_per_s_per_device'])}, at "
            f"{p['concurrency']:,} requests in flight per replica; one iteration {u.seconds(p['iteration_s'])} "
            f"({_gpu_part(p)} {u.seconds(p['gpu_s'])}, host {u.seconds(p['host_s'])}; docs/prediction.md)"]


def _gpu_part(p):
    mb = p.get("pipeline_micro_batches")
    what = p.get("exposed_collectives", "TP all-reduces")
    return (f"GPU, {what} and stage sends of {mb} pipeline micro-batches on the slowest stage" if mb
            else f"GPU and {what}")


def _distinct_stages(stages):
    seen, out = set(), []
    for s in stages:
        key = tuple((c["name"], c["bytes_per_run"], c["runs"], c["tier"]) for c in s["collectives"])
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def csv(rec):
    rows = []
    for key, _ in PHASES:
        p = rec["phases"].get(key)
        for s in (p or {}).get("stages", []):
            rows.append([key] + [s.get(c) for c in STAGE_COLUMNS[1:]])
    return to_csv(STAGE_COLUMNS, rows)


def sweep_markdown(rec):
    m, d, lay, i = rec["model"], rec["device"], rec["layout"], rec["inputs"]
    rows = [[r["batch"], r["micro_batches"], u.seconds(r["ttft_s"]), u.seconds(r["tpot_first_s"]),
             u.seconds(r["tpot_mean_s"]), u.seconds(r["tpot_last_s"]), _rate(r["decode_tokens_per_s_per_request"]),
             _rate(r["decode_tokens_per_s_replica"]), _rate(r["decode_tokens_per_s_cluster"]),
             _rate(r["decode_tokens_per_s_per_device"]), _pct(r["exposed_comm_share"]), _pct(r["bubble_fraction"]),
             _opt_s(r.get("predicted_ttft_s")), _opt_s(r.get("predicted_tpot_mean_s")),
             _rate(r.get("predicted_decode_tokens_per_s_per_device"))]
            for r in rec["rows"]]
    parts = [*_with_summary(_header(rec, f"parallel batch sweep: {m['id']} on {lay['devices']} x {d['id']} "
                                         f"({lay['label']})"), _sweep_summary(rec)),
             "", "## Sweep (estimates; predicted beside them)", "",
             "B = requests per replica; exposed comm = the slowest stage's exposed "
             "communication over the decode cycle; predicted = the same layout and batch at the "
             "achievable rates with NCCL's collectives (a well-tuned stack, not a bound).", "",
             markdown_table(["batch", "micro-batches", "TTFT", "TPOT first", "TPOT mean", "TPOT last",
                             "tokens/s per request", "tokens/s per replica", "tokens/s cluster",
                             "tokens/s per device", "exposed comm", "bubble", "predicted TTFT",
                             "predicted TPOT mean", "predicted tokens/s per device"], rows,
                            "rrrrrrrrrrrrrrr")
             if rows else "No batch fits.", *memory_lines(rec["memory"])]
    return "\n".join(parts + _tail(rec))


def sweep_csv(rec):
    return records_to_csv(rec["rows"], SWEEP_COLUMNS)


def _search_row(t):
    lat, lay = t["latency"], t["layout"]
    s = t.get("slowest_decode_stage") or t.get("slowest_prefill_stage")
    return {"rank": t["rank"], "layout": lay["label"], "tp": lay["tp"], "pp": lay["pp"], "dp": lay["dp"],
            "cp": lay["cp"], "ep": lay["ep"], "batch": t["batch"], "micro_batches": lay["micro_batches"],
            "ttft_s": lat["ttft_s"], "tpot_mean_s": lat["tpot_mean_s"],
            "decode_tokens_per_s_cluster": lat["decode_tokens_per_s_cluster"],
            "decode_tokens_per_s_per_device": lat["decode_tokens_per_s_per_device"],
            "bubble_fraction": t["bubble_fraction"], "comm_s": s["comm_s"], "exposed_comm_s": s["exposed_comm_s"],
            "binding_stage": t["memory"]["binding_stage"],
            "max_requests_per_replica": t["memory"]["max_requests_per_replica"],
            "lower_bound_ttft_s": t["lower_bound"]["ttft_s"],
            "lower_bound_tpot_mean_s": t["lower_bound"]["tpot_mean_s"],
            "upper_bound_decode_tokens_per_s_per_device": t["lower_bound"]["decode_tokens_per_s_per_device"],
            **({"predicted_output_tokens_per_s_per_device": t["predicted"]["output_tokens_per_s_per_device"],
                "predicted_concurrency": t["predicted"]["concurrency"]} if "predicted" in t else {})}


def search_markdown(rec):
    m, d, i = rec["model"], rec["device"], rec["inputs"]
    rows = []
    for t in rec["top"]:
        r = _search_row(t)
        s = t.get("slowest_decode_stage") or t.get("slowest_prefill_stage")
        by_dim = ", ".join(f"{k} {u.seconds(v)}" for k, v in s["comm_s_by_dim"].items()) or "-"
        rows.append([r["rank"], r["layout"], r["batch"], r["micro_batches"], u.seconds(r["ttft_s"]),
                     u.seconds(r["tpot_mean_s"]), _rate(r["decode_tokens_per_s_cluster"]),
                     _rate(r["decode_tokens_per_s_per_device"]),
                     _rate(r["upper_bound_decode_tokens_per_s_per_device"]), u.seconds(s["roofline_s"]), by_dim,
                     u.seconds(s["exposed_comm_s"]), _pct(r["bubble_fraction"]),
                     "-" if r["max_requests_per_replica"] is None else u.integer(r["max_requests_per_replica"])]
                    + ([_rate(r["predicted_output_tokens_per_s_per_device"]), u.integer(r["predicted_concurrency"])]
                       if "predicted_output_tokens_per_s_per_device" in r else []))
    rej = [[r["layouts"], r["reason"], r["example"],
            "-" if r["least_shortfall_bytes"] is None else u.integer(r["least_shortfall_bytes"])]
           for r in rec["rejected"]]
    limit = f", mean TPOT within {u.seconds(i['tpot_limit_s'])}" if i["tpot_limit_s"] is not None else ""
    parts = [*_with_summary(_header(rec, f"parallel search: {m['id']} on {i['devices']} x {d['id']}"),
                            _search_summary(rec)),
             f"- Objective: {i['objective']}{limit}; ranking: {rec['ranking']}",
             f"- Layouts: {u.integer(rec['layouts_considered'])} considered, {u.integer(rec['layouts_admitted'])} "
             f"admitted, {u.integer(rec['layouts_considered'] - rec['layouts_admitted'])} rejected", "",
             *(_top_table(rec, rows) if rows else
               [no_layout_line(i["devices"], rec["rejected"])]),
             "", "## Rejected layouts, by reason", "",
             markdown_table(["layouts", "reason", "example", "least shortfall (B)"], rej, "rllr")
             if rej else "None."]
    return "\n".join(parts + _tail(rec))


def _top_table(rec, rows):
    pred = rec["inputs"]["objective"] == "predicted"
    return [f"## Top {u.count(len(rows), 'layout')}", "",
            ("Ranked by the predicted output tokens/s per device (last columns: a tuned engine at its own "
             "concurrency), beside the estimates" if pred else "Estimates (ranked)") +
            ", and the upper bound on tokens/s per device (the lower bound on time; "
            "definitions: Conventions); roofline, communication and exposed communication of the slowest "
            "stage over all decode steps (the prefill for --objective ttft).", "",
            markdown_table(["rank", "layout", "batch", "micro-batches", "TTFT", "TPOT mean", "tokens/s cluster",
                            "tokens/s per device", "tokens/s per device, upper bound", "roofline",
                            "comm by dimension", "exposed comm", "bubble", "requests fit"]
                           + (["predicted output tokens/s per device", "predicted concurrency"] if pred else []),
                           rows, "rlrrrrrrrrlrrr" + ("rr" if pred else ""))]


def search_csv(rec):
    extra = (("predicted_output_tokens_per_s_per_device", "predicted_concurrency")
             if rec["inputs"]["objective"] == "predicted" else ())
    return records_to_csv([_search_row(t) for t in rec["top"]], SEARCH_COLUMNS + extra)

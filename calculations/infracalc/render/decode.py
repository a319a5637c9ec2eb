"""Markdown and CSV for `decode` records (one batch, or a batch sweep)."""

from ..analyses.decode import OPERATOR_COLUMNS, SWEEP_COLUMNS
from . import units as u
from .forward import EFFICIENCY_NOTE, architecture_options, rates_text, device_line, formats_line, model_line, note_lines
from .table import inline, markdown_table, records_to_csv, conventions


def _header(rec, batch_text):
    m, i = rec["model"], rec["inputs"]
    steps = i["decode_steps"]
    decode = (f"then {steps} decode steps over histories {i['first_history']}..{i['last_history']}"
              if steps else "no decode step")
    extra = architecture_options(m, i)
    requests = (f"- Requests: {batch_text}, {i['input_len']} input and {i['output_len']} output tokens each: "
                f"one prefill pass, {decode}" + (f"; {', '.join(extra)}" if extra else ""))
    return [model_line(m, tied=False), requests, formats_line(i), device_line(rec["device"], memory=True),
            *note_lines(rec)]


def _tail(rec):
    return ["", "## What the bound leaves out", "", *[f"- {t}" for t in rec["left_out"]],
            "", *conventions(rec["conventions"])]


def _rate(x):
    return "-" if x is None else f"{x:,.1f}"


def _capacity_lines(c, batch=None):
    fit = c["max_requests"]
    lines = [
        f"- Cache per request at {u.integer(c['context_tokens'])} tokens: "
        f"{u.integer(c['cache_bytes_per_request'])} B ({u.nbytes(c['cache_bytes_per_request'])})",
        f"- Device memory {u.nbytes(c['memory_bytes'])} - weights {u.nbytes(c['weight_bytes'])} "
        f"- reserve {u.nbytes(c['reserve_bytes'])} = "
        + (f"{u.nbytes(c['cache_room_bytes'])} for caches" if c["cache_room_bytes"] >= 0 else
           f"a shortfall of {u.integer(-c['cache_room_bytes'])} B ({u.nbytes(-c['cache_room_bytes'])}) "
           "before any cache"),
        f"- Requests that fit: {'unbounded (no per-request cache)' if fit is None else u.integer(fit)}",
    ]
    if batch is not None:
        lines.append(f"- Batch {batch} fits: {'yes' if c['fits'] else 'no'}")
    lines.append(f"- Memory: {c['memory_convention']} capacity (--memory-convention); reserve: "
                 f"{c['reserve_rule']}")
    for e in c["engine_defaults"]:
        fit = ("-" if e["reserve_bytes"] is None else
               f"reserve {u.nbytes(e['reserve_bytes'])}, {u.count(e['max_requests'] or 0, 'request')} fit")
        lines.append(f"- Engine default, {e['engine']}: {fit} ({e['rule']})")
    lines.append("- Our default reserve follows vLLM's (a fraction of total memory).")
    return lines


def serving_lines(s):
    """The serving-throughput bound (analyses/serving) as a table and its reading."""
    def conc(x):
        return "unbounded (no per-request cache)" if x is None else f"{x:,.2f}"

    def row(name, t):
        if t is None:
            return [name, "-", "-", "-", "-", "-", "nothing fits"]
        return [name, conc(t["concurrency"]), u.seconds(t["time_per_request_s"]),
                _rate(t["requests_per_s"]), _rate(t["output_tokens_per_s"]),
                _rate(t["total_tokens_per_s"]), t["bound"]]

    mean = s["held_cache_summed_bytes"] / s["held_cache_steps"]   # display only; JSON keeps both integers
    return ["", "## Serving-throughput bound (continuous batching, upper bound)", "",
            f"- Mean cache a request holds over its decode steps: "
            f"{u.integer(round(mean))} B ({u.nbytes(mean)}) = "
            f"{u.integer(s['held_cache_summed_bytes'])} B summed over {u.count(s['held_cache_steps'], 'step')}; "
            f"at its final length {u.integer(s['final_cache_bytes'])} B ({u.nbytes(s['final_cache_bytes'])})",
            f"- Guaranteed concurrency (every request at its final length, no preemption): "
            f"{'unbounded' if s['guaranteed_concurrency'] is None else u.integer(s['guaranteed_concurrency'])}; "
            f"steady-state mean concurrency at most {conc(s['steady_state_concurrency'])}",
            f"- One request's own work: {u.flops(s['request_matrix_flops'])} matrix FLOPs, "
            f"{u.nbytes(s['request_kv_bytes'])} of KV read and written", "",
            markdown_table(["concurrency", "requests in flight", "device time per request", "requests/s",
                            "output tokens/s", "total tokens/s", "bound"],
                           [row("steady state (the bound)", s["steady_state"]),
                            row("guaranteed", s["guaranteed"])], "lrrrrrl")] + predicted_serving_lines(s.get("predicted"))


def predicted_serving_lines(p):
    """The predicted steady state of a tuned engine (efficiency.serving), beside the bound."""
    if not p:
        return []
    return ["", f"- Predicted (a well-tuned engine, not a bound): {_rate(p['output_tokens_per_s'])} output "
                f"tokens/s at {u.integer(p['concurrency'])} requests in flight (engine limit "
                f"{u.integer(p['engine_batch_limit'])}); one iteration {u.seconds(p['iteration_s'])}: GPU "
                f"{u.seconds(p['gpu_s'])}, host {u.seconds(p['host_s'])} (docs/prediction.md)"]


def _phase_row(name, p):
    return [name, u.seconds(p["time_s"]), u.seconds(p["ideal_time_s"]), u.seconds(p["compute_bound_s"]),
            u.seconds(p["weights_s"]), u.seconds(p["kv_s"]), u.seconds(p["activations_s"]), p["bound"]]


def _work_row(name, p):
    return [name, p["steps"], u.flops(p["linear_flops"]), u.flops(p["attention_flops_causal"]),
            u.flops(p["vector_flops"]), u.nbytes(p["weight_bytes_read"]), u.nbytes(p["kv_bytes_read"]),
            u.nbytes(p["kv_bytes_written"]), u.nbytes(p["act_bytes_read"] + p["act_bytes_written"])]


def summary(rec):
    """The verdict block: the batch fits or not, TTFT and TPOT (bound, predicted), the stream bound."""
    from . import verdict as v

    c, lat, i = rec["capacity"], rec["latency"], rec["inputs"]
    fits = c.get("fits", True)
    head = (f"Fits: batch {i['batch']} of at most {u.count(c['max_requests'], 'request')} of "
            f"{u.integer(c['context_tokens'])} tokens" if fits else
            f"Does not fit: batch {i['batch']} of {u.integer(c['context_tokens'])} tokens (at most "
            f"{u.count(c['max_requests'], 'request')})")

    def both(key):
        return v.times(bound=lat[key], predicted=lat.get(f"predicted_{key}"), fits=fits)

    lines = [f"TTFT: {both('ttft_s')}"]
    if i["decode_steps"]:
        lines.append(f"TPOT (mean): {both('tpot_mean_s')}")
    s = (rec.get("serving") or {}).get("steady_state")
    if s:
        lines.append(f"Serving a stream (continuous batching): at most {_rate(s['output_tokens_per_s'])} "
                     f"output tokens/s ({s['bound']}-bound, {s['concurrency']:,.1f} requests in flight)"
                     + predicted_stream_text(rec["serving"].get("predicted")))
    return v.block(head, lines)


def predicted_stream_text(p):
    """', 2,826.1 predicted (a well-tuned engine at 207 requests in flight)': the steady state of
    efficiency.serving beside the stream's bound, on the first screen ('' without a prediction)."""
    if not p:
        return ""
    return (f", {_rate(p['output_tokens_per_s'])} predicted (a well-tuned engine at "
            f"{u.integer(p['concurrency'])} requests in flight)")


def markdown(rec):
    m, d, i, lat = rec["model"], rec["device"], rec["inputs"], rec["latency"]
    b, steps = i["batch"], i["decode_steps"]
    phases = [("prefill (TTFT)", rec["prefill"])]
    if steps:
        phases += [(f"first decode step (history {i['first_history']})", rec["decode_first_step"]),
                   (f"last decode step (history {i['last_history']})", rec["decode_last_step"]),
                   (f"all {steps} decode steps", rec["decode"])]
    def pred(key, fmt=u.seconds):
        value = lat.get(key)
        return fmt(value) if value is not None else "-"

    latency = [
        [f"TTFT: prefill of {b} x {i['input_len']} tokens", u.seconds(lat["ttft_s"]), pred("predicted_ttft_s")],
        [f"Time per output token, first decode step", u.seconds(lat["tpot_first_s"]), ""],
        [f"Time per output token, mean over {u.count(steps, 'step')}", u.seconds(lat["tpot_mean_s"]),
         pred("predicted_tpot_mean_s")],
        [f"Time per output token, last decode step", u.seconds(lat["tpot_last_s"]), ""],
        [f"Decode time ({steps} steps)", u.seconds(lat["decode_s"]), ""],
        ["Total latency (TTFT + decode)", u.seconds(lat["total_s"]), pred("predicted_total_s")],
        ["Decode tokens/s per request (1 / mean TPOT)", _rate(lat["decode_tokens_per_s_per_request"]), ""],
        [f"Decode tokens/s, batch of {b}", _rate(lat["decode_tokens_per_s_batch"]), ""],
        ["End-to-end tokens/s per request (G / total latency)", _rate(lat["tokens_per_s_per_request"]), ""],
        [f"End-to-end tokens/s, batch of {b}", _rate(lat["tokens_per_s_batch"]),
         pred("predicted_tokens_per_s_batch", _rate)],
    ]
    parts = [f"# decode: {inline(m['id'])} on {inline(d['id'])}", "", *summary(rec), *_header(rec, f"batch {b}"), "",
             "## Latency and throughput (roofline lower bounds; predicted: a well-tuned stack)", "",
             markdown_table(["quantity", "bound", "predicted"], latency, "lrr"),
             "", "## What bounds each phase", "",
             "Time = compute-bound operators' time + memory-bound operators' time split by the bytes "
             "they move. Ideal: per step max(all FLOPs at peak, (weights + KV) bytes / bandwidth).", "",
             markdown_table(["phase", "time", "ideal", "compute-bound ops", "weights", "KV", "activations",
                             "bound"], [_phase_row(n, p) for n, p in phases], "lrrrrrrl"),
             "", "## Work per phase (exact)", "",
             markdown_table(["phase", "steps", "linear FLOPs", "attention FLOPs (causal)", "vector FLOPs",
                             "weights read", "KV read", "KV written", "activations moved"],
                            [_work_row(n, p) for n, p in phases], "lrrrrrrrr"),
             "", "## Capacity", "", *_capacity_lines(rec["capacity"], b)]
    parts += serving_lines(rec["serving"])
    if "speculative" in rec:
        parts += speculative_lines(rec["speculative"], lat)
    if rec["operators"]:
        rows = [[o["name"], o["layers"], o["repeats"], f"`{o['shape']}`", u.flops(o["matrix_flops"]),
                 u.flops(o["vector_flops"]), u.nbytes(o["weight_bytes_read"]), u.nbytes(o["kv_bytes_read"]),
                 u.nbytes(o["act_bytes_read"] + o["act_bytes_written"] + o["kv_bytes_written"]),
                 u.seconds(o["time_s"]), o["bound"], _opt_seconds(o.get("predicted_time_s")),
                 u.ratio(o.get("predicted_efficiency"), 2)]
                for o in rec["operators"]]
        parts += ["", f"## Decode operators, summed over the {u.count(steps, 'step')}", "",
                  "Shapes of the first step ... the last step; values summed over the steps and the "
                  "listed layers (x = number of layers). " + EFFICIENCY_NOTE, "",
                  markdown_table(["operator", "layers", "x", "shape", "matrix", "vector", "weights read",
                                  "KV read", "other bytes", "time", "bound", "predicted", "bound / predicted"],
                                 rows, "llrlrrrrrrlrr")]
        if rec.get("prediction"):
            parts += ["", f"- Predicted at {rates_text(rec['prediction'])} (docs/prediction.md)"]
    return "\n".join(parts + _tail(rec))


def speculative_lines(s, lat):
    """The speculative-decoding section beside the plain decode figures."""
    def step(name, x):
        return [f"{name} (history {x['history']:,})", u.seconds(x["draft_s"]), u.seconds(x["verify_s"]),
                u.seconds(x["time_s"]), u.seconds(x["tpot_s"]), x["verify_bound"]]

    speedup = s["speedup_vs_plain_decode"]
    summary = [
        ["Draft model", f"`{s['draft_model']}` ({u.integer(s['draft_params'])} params)"],
        ["Acceptance rate alpha; tokens drafted per step k", f"{s['acceptance_rate']}; {s['draft_tokens']}"],
        ["Expected tokens per verification step E", f"{s['expected_tokens_per_step']:.4f}"],
        ["Verification steps for the decode tokens", f"{s['verification_steps']:,.1f}"],
        ["TTFT (target and draft prefill)", u.seconds(s["ttft_s"])],
        ["Time per output token", f"{u.seconds(s['tpot_s'])} (plain decode {u.seconds(lat['tpot_mean_s'])})"],
        ["Speed-up of decode over plain decode", "-" if speedup is None else f"{speedup:.2f}x"],
        ["Decode time", u.seconds(s["decode_s"])],
        ["Draft weights", u.nbytes(s["draft_weight_bytes"])],
        ["Cache per request, target + draft", u.nbytes(s["cache_bytes_per_request"])],
        ["Requests that fit with the draft", "unbounded" if s["max_requests"] is None else u.integer(s["max_requests"])],
    ]
    return ["", "## Speculative decoding", "",
            markdown_table(["quantity", "value"], summary, "lr"), "",
            markdown_table(["verification step", "draft (k steps)", "verify (k+1 tokens)", "step",
                            "per token", "verify bound"],
                           [step("first", s["first_step"]), step("mid-generation", s["mid_step"])], "lrrrrl"),
            "", *[f"- {a}" for a in s["assumptions"]]]


def _opt_seconds(x):
    return u.seconds(x) if x is not None else "-"


def csv(rec):
    return records_to_csv(rec["operators"], OPERATOR_COLUMNS)


def sweep_summary(rec):
    """The verdict block of a batch sweep: the largest batch that fits and its throughput."""
    from . import verdict as v

    rows = rec["rows"]
    if not rows:
        return v.block("Does not fit: not one request beside the weights and the reserve", [])
    last = rows[-1]
    cb = rec["compute_bound_batch"]
    pred = last.get("predicted_decode_tokens_per_s_aggregate")
    return v.block(f"Fits up to batch {last['batch']}: at most {_rate(last['decode_tokens_per_s_aggregate'])} "
                   f"decode tokens/s there" + (f", {_rate(pred)} predicted" if pred is not None else ""), [
        f"TPOT (mean) at batch {last['batch']}: {u.seconds(last['tpot_mean_s'])}; at batch 1: "
        f"{u.seconds(rows[0]['tpot_mean_s'])}",
        ("Decode turns compute-bound from batch " + str(cb)) if cb is not None else
        "Decode stays memory-bound up to the capacity limit"])


def sweep_markdown(rec):
    m, d, i = rec["model"], rec["device"], rec["inputs"]
    rows = [[r["batch"], u.seconds(r["tpot_first_s"]), u.seconds(r["tpot_mean_s"]), u.seconds(r["tpot_last_s"]),
             _rate(r["decode_tokens_per_s_per_request"]), _rate(r["decode_tokens_per_s_aggregate"]),
             f"{100 * r['compute_share']:.1f}%",
             r["bound"], u.nbytes(r["cache_bytes"]), _rate(r["stream_output_tokens_per_s"]),
             r["stream_bound"], _opt_seconds(r.get("predicted_tpot_mean_s")),
             _rate(r.get("predicted_decode_tokens_per_s_aggregate"))] for r in rec["rows"]]
    cb, ideal, cap = rec["compute_bound_batch"], rec["ideal_compute_bound_batch"], rec["capacity_batch"]

    def crossover(batch, name):
        if batch is not None:
            return f"- {name}: compute-bound from batch {batch}."
        if rec["compute_unknown"]:
            return (f"- {name}: not found up to the capacity limit; the device publishes no peak for "
                    "this work, so its compute side is unknown (memory-bound lower bound).")
        return f"- {name}: memory-bound up to the capacity limit."

    if cap:
        ridge = rec["ridge_estimate_batch"]
        findings = [
            (f"- Ridge-point estimate (2 FLOPs per parameter vs one read of the weights): compute-bound "
             f"from batch {ridge}." if ridge is not None else
             "- Ridge-point estimate: not defined for an MoE model (the weights read depend on the batch)."
             if m["active_params"] != m["params"] else
             "- Ridge-point estimate: unknown (the device publishes no matrix peak)."),
            crossover(ideal, "Ideal-bound crossover (all FLOPs at peak vs unique bytes at bandwidth)"),
            crossover(cb, "Operator-sum crossover (compute-bound operators over half the summed bounds)"),
            f"- Capacity stops the sweep at batch {cap}: a larger batch's caches of "
            f"{u.integer(rec['capacity']['context_tokens'])} tokens per request do not fit.",
        ]
    else:
        findings = ["- Not even one request fits on the device: nothing to sweep."]
    parts = [f"# decode batch sweep: {inline(m['id'])} on {inline(d['id'])}", "", *sweep_summary(rec),
             *_header(rec, "B requests in lockstep"), "",
             "## Sweep", "",
             "TPOT = decode step time; tokens/s per request = 1 / mean TPOT; aggregate = B / mean TPOT; "
             "compute share = compute-bound operators' share of the decode time; predicted = the same "
             "steps at the achievable rates (a well-tuned stack, not a bound).", "",
             markdown_table(["batch", "TPOT first", "TPOT mean", "TPOT last", "tokens/s per request",
                             "tokens/s aggregate", "compute share", "bound", "caches", "stream tokens/s",
                             "stream bound", "predicted TPOT mean", "predicted tokens/s aggregate"], rows,
                            "rrrrrrrlrrlrr")
             if rows else "No batch fits.",
             "", *findings, *serving_lines(rec["serving"]),
             "", "## Capacity", "", *_capacity_lines(rec["capacity"])]
    return "\n".join(parts + _tail(rec))


def sweep_csv(rec):
    return records_to_csv(rec["rows"], SWEEP_COLUMNS)

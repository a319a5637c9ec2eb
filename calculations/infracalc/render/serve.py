"""Markdown for `serve` records (the SLO sizing first, then the schedulers side by side)."""

from . import units as u
from .forward import device_line, formats_line, model_line, note_lines
from .table import conventions, inline, markdown_table, records_to_csv

KINDS = (("estimate", "estimate"), ("lower_bound", "lower bound"))


def _s(x):
    return u.seconds(x)


def _rate(x):
    return "-" if x is None else f"{x:,.3f}"


def _limits(i):
    parts = []
    if i.get("ttft_limit_s") is not None:
        parts.append(f"TTFT <= {_s(i['ttft_limit_s'])}")
    if i.get("tpot_limit_s") is not None:
        parts.append(f"TPOT <= {_s(i['tpot_limit_s'])}")
    return " and ".join(parts)


def sizing_lines(rec):
    s, i, d = rec["sizing"], rec["inputs"], rec["device"]
    a = s["answer"]
    lines = [f"## Fewest {inline(d['id'])} meeting {_limits(i)}", ""]
    if a is None:
        figure = rec["sizing"].get("figure", "estimate")
        lines.append(f"**No count up to {i['max_devices']} devices meets the limits** ({figure}); "
                     "why each count fails is below.")
    else:
        lb = a["lower_bound"]
        from .verdict import _wrap   # the answer within 100 columns
        lines += _wrap(f"**{u.count(a['devices'], 'device')}**: layout {a['layout']}, batch "
                       f"{a['batch_per_replica']} per replica: TTFT {_s(a['ttft_s'])}, TPOT {_s(a['tpot_s'])}, "
                       f"{a['decode_tokens_per_s_per_device']:,.1f} decode tokens/s per device (estimate); "
                       f"lower bound TTFT {_s(lb['ttft_s'])}, TPOT {_s(lb['tpot_s'])}; "
                       + (f"predicted TTFT {_s(a['predicted_ttft_s'])}, TPOT {_s(a['predicted_tpot_s'])}, "
                          f"{a['predicted_output_tokens_per_s_per_device']:,.1f} output tokens/s per device."
                          if a.get("predicted_tpot_s") is not None else
                          f"predicted: {a.get('predicted_status', 'not modelled for this layout')}."), "", "")
    lines.append("")
    rows = []
    for c in s["counts"]:
        if c["meets"]:
            p = c.get("predicted_tpot_s") is not None
            rows.append([c["devices"], "yes", "-", c["layout"], c["batch_per_replica"], _s(c["ttft_s"]),
                         _s(c["tpot_s"]), f"{c['decode_tokens_per_s_per_device']:,.1f}",
                         _s(c["predicted_ttft_s"]) if p else "not modelled",
                         _s(c["predicted_tpot_s"]) if p else "not modelled",
                         f"{c['predicted_output_tokens_per_s_per_device']:,.1f}" if p else "not modelled"])
        else:
            rows.append([c["devices"], "no", c["why"], "-", "-", "-", "-", "-", "-", "-", "-"])
    lines.append(markdown_table(["devices", "meets", "why not", "layout", "batch", "TTFT", "TPOT",
                                 "decode tok/s per device", "predicted TTFT", "predicted TPOT",
                                 "predicted output tok/s per device"], rows, "rllllrrrrrr"))
    return lines + [""]


def _predicted_rate(a):
    """The answer's predicted throughput, or why there is none (docs/prediction.md)."""
    if a.get("predicted_tpot_s") is None:
        return f"predicted: {a.get('predicted_status', 'not modelled for this layout')}"
    return (f"{a['decode_tokens_per_s_per_device']:,.1f} decode tokens/s per device estimate, "
            f"{a['predicted_output_tokens_per_s_per_device']:,.1f} output tokens/s per device predicted")


def policy_lines(rec):
    rows = []
    for p in rec["policies"]:
        if "refused" in p:
            rows.append([p["policy"], "-", "-", "-", "-", "-", "-", "-", "-", p["refused"]])
            continue
        for key, name in KINDS:
            rows.append([p["policy"], name, f"{p['concurrency']:,.2f}", _rate(p["requests_per_s"][key]),
                         f"{p['output_tokens_per_s'][key]:,.1f}", _s(p["ttft_s"][key]),
                         _s(p["tpot_s"][key]), _s(p["max_itl_s"][key]),
                         u.nbytes(p.get("kv_peak_bytes", p.get("kv_mean_bytes"))), p["limited_by"]])
    replica = rec.get("replica") or {}
    where = (f"one device of a TP {replica['tp']} replica" if replica.get("tp", 1) > 1 else "one device")
    lines = [f"## Schedulers side by side ({where})", "",
             markdown_table(["policy", "figure", "concurrency", "requests/s", "output tok/s", "TTFT",
                             "TPOT", "max ITL", "KV (fixed: peak; else mean)", "limited by"], rows,
                            "llrrrrrrrl"), ""]
    if replica.get("note"):
        lines += [f"- Replica: {replica['note']}.", ""]
    loads = [p for p in rec["policies"] if "load" in p]
    if loads:
        rows = []
        for p in loads:
            q = p["load"]
            rows.append([p["policy"], f"{q['utilisation']:.3f}", _s(q["queue_wait_s"]),
                         _s(q["ttft_under_load_s"]), _rate(q["requests_in_system"]),
                         _rate(q.get("ttft_limit_breaks_at_rate_per_s"))])
        lines += [f"## Load at {rec['inputs']['rate_per_s']:g} requests/s (estimate)", "",
                  markdown_table(["policy", "utilisation", "queue wait", "TTFT under load",
                                  "requests in system", "TTFT limit breaks at (req/s)"], rows), ""]
    pc = rec.get("prefix_cache")
    if pc:
        lines += [f"## Prefix cache: the first {u.integer(pc['cached_prefix_tokens'])} prompt tokens of every request", "",
                  f"- Saved per request: {u.flops(pc['prefill_matrix_flops_saved_per_request'])} of prefill matrix "
                  f"work, {u.nbytes(pc['kv_bytes_written_saved_per_request'])} of KV written; the prefix holds "
                  f"{u.nbytes(pc['prefix_cache_bytes'])} once"]
        if "chunked_requests_per_s" in pc:
            a, b = pc["chunked_requests_per_s"], pc["chunked_requests_per_s_without_prefix"]
            lines.append(f"- Chunked: {_rate(a['estimate'])} requests/s with it, {_rate(b['estimate'])} without "
                         f"(estimate; lower bound {_rate(a['lower_bound'])} and {_rate(b['lower_bound'])}); TTFT "
                         f"{_s(pc['chunked_ttft_s']['estimate'])} against {_s(pc['chunked_ttft_s_without_prefix']['estimate'])}")
        lines.append("")
    slos = [p for p in rec["policies"] if "slo" in p]
    if slos:
        lines += ["## SLO per policy", ""]
        for p in slos:
            for key, name in KINDS:
                v = p["slo"][key]
                lines.append(f"- {p['policy']}, {name}: " + ("meets" if v["meets"] else
                                                               "misses: " + "; ".join(v["misses"])))
        lines.append("")
    return lines


def _x(rec, key):
    """A figure with its exact rational when the record has one: '3.200 (16/5)'."""
    v, e = rec.get(key), rec.get(f"{key}_exact")
    if v is None:
        return "-"
    if e and "/" not in e:   # a whole number: printed whole
        return f"{int(e):,}"
    return f"{v:,.3f}" + (f" ({e})" if e and e != f"{v:g}" else "")


def _pool(d):
    return inline(", ".join(f"{k} {n}" for k, n in d.items()) or "-")


def worker_lines(rec):
    p = rec["workers"]
    lines = ["## Prefill and decode pools from the given workers", "",
             f"- Per request: {u.integer(p['new_prefill_tokens_per_request'])} new prefill tokens, "
             f"{u.integer(p['decode_calls_per_request'])} decode calls, KV handoff "
             f"{u.integer(p['handoff_bytes_per_request'])} B ({u.nbytes(p['handoff_bytes_per_request'])}); "
             f"network carries at most {_x(p, 'network_requests_per_s')} requests/s",
             f"- **Best split** (of {p['assignments']}): prefill pool {_pool(p['best']['prefill_workers'])}; "
             f"decode pool {_pool(p['best']['decode_workers'])}: {_x(p, 'best_requests_per_s')} requests/s "
             f"(limited by {', '.join(p['best']['limited_by'])}); co-located {_x(p, 'colocated_requests_per_s')} "
             f"requests/s; ratio {_x(p, 'pd_to_colocated')}"]
    if "arrival_requests_per_s" in p:
        lines.append(f"- Arrival {p['arrival_requests_per_s']:g} requests/s: below the best split's bound: "
                     f"{'yes' if p['arrival_below_best_pd'] else 'no'}; below co-located: "
                     f"{'yes' if p['arrival_below_colocated'] else 'no'}")
    rows = [[w["name"], w["count"], _x(w, "prefill_tokens_per_s"), _x(w, "decode_tokens_per_s"),
             _x(w, "prefill_s_per_request"), _x(w, "decode_s_per_request"), _x(w, "colocated_requests_per_s")]
            for w in p["workers"]]
    lines += ["", markdown_table(["worker", "count", "prefill tok/s", "decode calls/s", "P s per request",
                                  "D s per request", "co-located req/s each"], rows), ""]
    if "stage_bounds" in p:
        rows = [[b["worker"], inline(b["device"]), u.integer(b["prefill_pass"]["matrix_flops"]),
                 u.integer(b["prefill_pass"]["unique_bytes"]), _x(b["prefill_pass"], "lower_bound_s"),
                 u.integer(b["decode_step"]["unique_bytes"]), _x(b["decode_step"], "lower_bound_s")]
                for b in p["stage_bounds"]]
        lines += ["Stage bounds (one prefill of the new tokens; one decode step of "
                  f"{p['stage_bounds'][0]['decode_step']['batch']} requests at history "
                  f"{p['stage_bounds'][0]['decode_step']['history']:,}):", "",
                  markdown_table(["worker", "device", "prefill matrix FLOPs", "prefill unique B",
                                  "prefill LB s", "step unique B", "step LB s"], rows), ""]
    rows = [[_pool(s["prefill_workers"]), _pool(s["decode_workers"]), _x(s, "prefill_requests_per_s"),
             _x(s, "decode_requests_per_s"), _x(s, "bound_requests_per_s"), ", ".join(s["limited_by"])]
            for s in p["splits"]]
    lines += [markdown_table(["prefill pool", "decode pool", "P req/s", "D req/s", "bound req/s", "limited by"],
                             rows, "llrrrl"), ""]
    return lines


def pd_lines(rec):
    pd = rec["pd"]
    pre, dec, move = pd["prefill_worker"], pd["decode_worker"], pd["handoff"]
    lines = [f"## Disaggregated: prefill on {inline(pre['device'])} (TP {pre['tp']}), decode on {inline(dec['device'])} "
             f"(TP {dec['tp']}), {pd['rate_per_s']:g} requests/s", ""]
    rows = []
    for key, name in KINDS:
        pl = pd["pools"][key]
        rows.append([name, f"{pre[key]['prefill_tokens_per_s']:,.1f}", f"{dec[key]['decode_tokens_per_s']:,.1f}",
                     f"{dec[key]['decode_concurrency']:,.2f}", _s(dec[key]["tpot_s"]),
                     f"{pl['prefill_requests_per_s_per_worker']:,.3f}",
                     f"{pl['decode_requests_per_s_per_worker']:,.3f}", pl.get("prefill_workers", "-"),
                     pl.get("decode_workers", "-"), pl.get("devices", "-")])
    lines.append(markdown_table(["figure", "prefill tok/s per worker", "decode calls/s per worker",
                                 "decode concurrency", "TPOT", "P req/s per worker", "D req/s per worker",
                                 "prefill workers", "decode workers", "devices"], rows))
    lines += ["", f"- KV handoff per request: {u.integer(move['bytes'])} B ({u.nbytes(move['bytes'])})"
              + (f" over {inline(move['link'])}: {_s(move['time_s'])} at {u.rate_bytes(move['bytes_per_s'])} (lower bound)"
                 if move["time_s"] else " (no scale-out link in the device data)")]
    af = pd.get("af")
    if af:
        lines.append(f"- Attention/FFN split instead (per decode token): {af['directions_per_token']} one-way messages "
                     f"of {u.integer(af['message_bytes'])} B ({af['round_trips_per_token']} round trips), "
                     f"{u.integer(af['bytes_per_token'])} B"
                     + (f", {_s(af['time_per_token_s'])} over the same link (lower bound)" if af.get("time_per_token_s") else ""))
        ap = af.get("pools")
        if ap:
            lines.append(f"- AF pools on {inline(ap['device'])} at {ap['batch']:,} requests per micro-batch (estimate): "
                         f"attention step {_s(ap['attention']['step_s'])}, {ap['attention']['workers']} workers; "
                         f"FFN step {_s(ap['ffn']['step_s'])}, {ap['ffn']['workers']} workers, for "
                         f"{ap['decode_tokens_per_s']:,.0f} decode tokens/s")
    for dev, c in pd["colocated"].items():
        lines.append(f"- Co-located (chunked scheduler) on {inline(dev)} (TP {c['tp']}): "
                     f"{_rate(c['estimate']['requests_per_s_per_replica'])} requests/s per replica, "
                     f"{c['estimate']['devices'] or '-'} devices for the rate (estimate); lower bound "
                     f"{_rate(c['lower_bound']['requests_per_s_per_replica'])} requests/s, "
                     f"{c['lower_bound']['devices'] or '-'} devices")
    return lines + [""]


def speculative_lines(rec):
    sp = rec["speculative"]
    b = sp["best"]
    rates = ", ".join(f"{a:g}" for a in sp["acceptance"])
    lines = [f"## Speculative decoding: draft `{inline(sp['draft_model'])}`, acceptance {rates}, "
             f"batch {sp['batch']}, at history {sp['history']} (estimate)", "",
             f"**Best draft length {b['draft_tokens']}**: {b['expected_tokens_per_step']:.4f} tokens per verify "
             f"step, TPOT {_s(b['tpot_s'])} against {_s(sp['plain_step_s'])} plain "
             f"({b['speedup_vs_plain']:.3f}x).", ""]
    rows = [[x["draft_tokens"], f"{x['expected_tokens_per_step']:.4f}", _s(x["draft_s"]), _s(x["verify_s"]),
             _s(x["tpot_s"]), f"{x['speedup_vs_plain']:.3f}", x["verify_bound"]] for x in sp["rows"]]
    lines += [markdown_table(["k", "E(k) tokens/step", "draft", "verify", "TPOT", "speed-up", "verify bound"],
                             rows), ""]
    rows = [[p["accepted"], p["tokens"], f"{p['at_least_probability']:.6f}", f"{p['probability']:.6f}"]
            for p in sp["positions"]]
    lines += [f"Accepted drafts per verify step at k = {b['draft_tokens']}:", "",
              markdown_table(["accepted", "tokens yielded", "P(at least)", "P(exactly)"], rows), ""]
    return lines


def replay_lines(rec):
    rp = rec["replay"]
    keys = ("iterations", "finish_ns", "total_output_tokens", "total_scheduled_tokens", "total_matrix_flops",
            "peak_live_kv_bytes", "peak_reserved_kv_bytes", "live_kv_byte_ns", "max_waiting_ns",
            "max_ttft_ns", "max_itl_ns")
    lines = [f"## Replay: {rp['policy']}, {u.count(rp['requests'], 'request')}", "",
             markdown_table(["figure", "value"], [[k, u.integer(rp[k])] for k in keys], "lr"), ""]
    rows = [[r["id"], u.integer(r["arrival_ns"]), r["prompt_tokens"], r["output_tokens"],
             u.integer(r["admitted_ns"]), u.integer(r["ttft_ns"]), u.integer(r["finish_ns"]),
             u.integer(r["max_itl_ns"]) if r["max_itl_ns"] is not None else "-", u.integer(r["matrix_flops"])]
            for r in rp["per_request"]]
    lines += [markdown_table(["request", "arrival ns", "P", "G", "admitted ns", "TTFT ns", "finish ns",
                              "max ITL ns", "matrix FLOPs"], rows), ""]
    rows = [[u.integer(s["start_ns"]), u.integer(s["end_ns"]), s["new_tokens"], u.integer(s["causal_pairs"]),
             u.integer(s["kv_bytes"]), ", ".join(s["parts"])] for s in rp["steps"]]
    lines += [markdown_table(["start ns", "end ns", "new tokens", "pairs", "KV bytes", "request:phase:tokens"],
                             rows, "rrrrrl"), ""]
    return lines


def verdict_lines(rec):
    """The answer first: the fewest devices, the best pool split, the pools for the rate, the
    best draft length, or the scheduler serving the most requests/s."""
    from . import verdict

    if "replay" in rec:
        rp = rec["replay"]
        return verdict.block(f"{rp['policy']}: {u.count(rp['requests'], 'request')} done at "
                             f"{u.integer(rp['finish_ns'])} ns in {rp['iterations']} iterations (declared costs)",
                             [f"max TTFT {u.integer(rp['max_ttft_ns'])} ns, max ITL "
                              f"{u.integer(rp['max_itl_ns'])} ns, peak KV {u.integer(rp['peak_live_kv_bytes'])} B"])
    if "sizing" in rec:
        a, i = rec["sizing"]["answer"], rec["inputs"]
        if a is None:
            figure = rec["sizing"].get("figure", "estimate")
            return verdict.block(f"No count up to {i['max_devices']} devices meets {_limits(i)} ({figure})",
                                 [c["why"] for c in rec["sizing"]["counts"][-1:]])
        lb = a["lower_bound"]
        fewer = [f"{c['devices']}: {c['why']}" for c in rec["sizing"]["counts"] if not c["meets"]]
        return verdict.block(
            f"{u.count(a['devices'], 'device')} ({a['layout']}, batch {a['batch_per_replica']} per replica) "
            f"{'meets' if a['devices'] == 1 else 'meet'} {_limits(i)} "
            f"({a.get('judged_by', rec['sizing'].get('figure', 'estimate'))})",
            [f"TTFT {verdict.times(a['ttft_s'], lb['ttft_s'], a.get('predicted_ttft_s'))}",
             f"TPOT {verdict.times(a['tpot_s'], lb['tpot_s'], a.get('predicted_tpot_s'))}",
             _predicted_rate(a)]
            + [f"fewer fail: {f}" for f in fewer[-3:]])
    if "prefix_value" in rec:
        v = rec["prefix_value"]
        return verdict.block(f"Keep {', '.join(v['exact']) or 'nothing'} ({u.integer(v['exact_bytes'])} B)",
                             [f"greedy by value per byte keeps {', '.join(v['greedy']) or 'nothing'}; the exact "
                              f"choice saves {_x(v, 'exact_minus_greedy_flops')} FLOPs more"])
    if "route" in rec:
        r = rec["route"]
        return verdict.block(f"Fastest valid path: {r['fastest_valid_path']}",
                             [f"A: mean {_x(r, 'a_expected_ns')} ns, p99 {_x(r, 'a_p99_ns')} ns, meets the SLO "
                              f"with probability {_x(r, 'a_slo_probability')}"])
    if "handoff" in rec:
        h = rec["handoff"]
        return verdict.block(f"PD {_x(h, 'pd_ns')} ns against AF {_x(h, 'af_ns')} ns "
                             f"({'AF' if h['af_faster'] else 'PD'} faster)",
                             [f"PD {u.integer(h['pd_bytes'])} B in one message; AF {u.integer(h['af_bytes'])} B "
                              f"in {u.integer(h['af_messages'])}"])
    if "kv_offload" in rec:
        k = rec["kv_offload"]
        fit = (lambda n: "any number" if n is None else u.integer(n))
        return verdict.block(f"Decode step >= {_s(k['step_lower_bound_s'])} with {k['fraction']:g} of the KV on the "
                             f"host ({k['slowdown']:.2f}x the resident step)",
                             [f"{'the host link binds' if k['link_binds'] else 'the device binds'}; "
                              f"{fit(k['requests_fit_offloaded'])} requests fit against "
                              f"{fit(k['requests_fit_resident'])} with all the cache on the device"])
    if "offload" in rec:
        o = rec["offload"]
        hide = o["slots_that_hide"]
        return verdict.block(f"Offload saves {u.nbytes(o['device_bytes_saved'])}; exposed wait "
                             f"{_x(o, 'exposed_wait_ns')} ns over {_x(o, 'compute_ns')} ns of layers",
                             [f"{u.integer(o['link_bytes_per_pass'])} B over the host link per pass",
                              f"slots that hide the copies: {hide if hide else 'none (the link binds)'}"])
    if "experts" in rec:
        e = rec["experts"]
        pay = e.get("payback")
        extra = [] if pay is None else [
            f"replicas {pay['selected']}: " + (f"pay back after {pay['strict_payback_batches']} batches"
                                               if pay["strict_payback_batches"] is not None
                                               else "never pay back (no saving per batch)")]
        return verdict.block(f"Busiest rank {u.integer(e['busiest_rank_padded_flops'])} padded FLOPs; padding "
                             f"{_x(e, 'padding_ratio')}x the valid work",
                             [f"valid {u.integer(e['valid_flops'])} FLOPs over {e['active_experts']} experts"]
                             + extra)
    if "spec_round" in rec:
        r = rec["spec_round"]
        return verdict.block(f"{_x(r, 'ns_per_delivered_token')} ns per delivered token, "
                             f"{_x(r, 'speedup')}x plain decoding",
                             [f"acceptance {_x(r, 'acceptance')}, {_x(r, 'mean_delivered')} tokens per round"])
    if "spec_budget" in rec:
        b = rec["spec_budget"]
        return verdict.block(f"First action {b['first_action']}: {_x(b, 'expected_ns')} ns expected",
                             [f"speed-up {_x(b, 'speedup')} over plain decoding"])
    if "workers" in rec:
        p = rec["workers"]
        return verdict.block(f"Best split {_x(p, 'best_requests_per_s')} requests/s, co-located "
                             f"{_x(p, 'colocated_requests_per_s')}",
                             [f"prefill pool {_pool(p['best']['prefill_workers'])}",
                              f"decode pool {_pool(p['best']['decode_workers'])}"])
    if "pd" in rec:
        pd = rec["pd"]
        est, lb = pd["pools"]["estimate"], pd["pools"]["lower_bound"]
        return verdict.block(f"{est.get('prefill_workers', '-')} prefill + {est.get('decode_workers', '-')} "
                             f"decode workers for {pd['rate_per_s']:g} requests/s (estimate)",
                             [f"lower bound: no fewer than {lb.get('prefill_workers', '-')} + "
                              f"{lb.get('decode_workers', '-')}",
                              f"KV handoff {u.nbytes(pd['handoff']['bytes'])} per request"])
    if "speculative" in rec:
        b = rec["speculative"]["best"]
        return verdict.block(f"Best draft length {b['draft_tokens']}: TPOT {_s(b['tpot_s'])} "
                             f"({b['speedup_vs_plain']:.3f}x plain, estimate)", [])
    ok = [p for p in rec["policies"] if "refused" not in p]
    if not ok:
        return verdict.block("No scheduler can run: " + "; ".join(p["refused"] for p in rec["policies"]), [])
    top = max(ok, key=lambda p: p["requests_per_s"]["estimate"])
    return verdict.block(f"{top['policy']} serves the most: {_rate(top['requests_per_s']['estimate'])} "
                         f"requests/s (estimate; {_rate(top['requests_per_s']['lower_bound'])} upper bound)",
                         [f"TTFT {verdict.times(top['ttft_s']['estimate'], top['ttft_s']['lower_bound'])}",
                          f"TPOT {verdict.times(top['tpot_s']['estimate'], top['tpot_s']['lower_bound'])}",
                          *predicted_lines(rec.get("predicted"))])


def predicted_lines(p):
    """The tuned engine's predicted steady state (system.predicted_replica) on the first screen."""
    if not p:
        return []
    return [f"Predicted (a well-tuned engine, not a bound): {_rate(p['requests_per_s'])} requests/s, "
            f"{_rate(p['output_tokens_per_s_cluster'])} output tokens/s at {u.integer(p['concurrency'])} requests "
            f"in flight; TPOT {_s(p['iteration_s'])} (one iteration)"]


def round_lines(rec):
    r = rec["spec_round"]
    rows = [[x["accepted"], x["rounds"], x["delivered"]] for x in r["rows"]]
    keys = ("rounds", "accepted_drafts", "acceptance", "mean_delivered", "round_ns", "ns_per_delivered_token",
            "speedup", "verify_matrix_flops", "kv_bytes_discarded")
    return [f"## Speculative round ledger: k = {r['draft_tokens']} drafts, declared costs", "",
            markdown_table(["accepted drafts", "rounds", "tokens delivered"], rows), "",
            markdown_table(["figure", "value"], [[k, _x(r, k) if f"{k}_exact" in r else u.integer(r[k])]
                                                 for k in keys], "lr"), ""]


def budget_lines(rec):
    b = rec["spec_budget"]
    rows = [[f["policy"], _x(f, "expected_ns"), _x(f, "expected_rounds")] for f in b["fixed"]]
    prepared = ", ".join(f"{x['tokens_left']}: {x['action']}" for x in b["prepared_actions"])
    return [f"## Speculative budget over {b['output_tokens']} output tokens, declared costs", "",
            f"- Adaptive policy: {_x(b, 'expected_ns')} ns expected (plain {u.integer(b['plain_ns'])} ns, "
            f"speed-up {_x(b, 'speedup')}); first action {b['first_action']}; best fixed policy {b['fixed_best']}",
            f"- Prepared, by tokens left: {prepared}", "",
            markdown_table(["fixed policy", "expected ns", "expected rounds"], rows), ""]


def expert_lines(rec):
    e, i = rec["experts"], rec["inputs"]
    keys = ("active_experts", "assignments", "valid_flops", "padded_flops", "padding_ratio",
            "busiest_rank_valid_flops", "busiest_rank_padded_flops", "replicas", "rerouted_assignments",
            "replica_bytes")
    lines = [f"## Grouped experts: {i['expert_tokens']} tokens, routing {i['routing']}, {i['expert_ranks']} ranks "
             f"({i['placement']}), tile {'x'.join(map(str, i['tile']))}", "",
             markdown_table(["figure", "value"], [[k, _x(e, k) if f"{k}_exact" in e else u.integer(e[k])]
                                                  for k in keys], "lr"), "",
             markdown_table(["rank", "copies", "rows", "valid FLOPs", "padded FLOPs", "tile traffic B", "replica B"],
                            [[r["rank"], r["active_copies"], r["rows"], u.integer(r["valid_flops"]),
                              u.integer(r["padded_flops"]), u.integer(r["tile_traffic_bytes"]),
                              u.integer(extra)] for r, extra in zip(e["ranks"], e["replica_bytes_per_rank"])]), ""]
    if "locality" in e:
        lo = e["locality"]
        keys = ("resident_experts", "remote_experts", "remote_tasks", "remote_weight_bytes", "remote_matrix_flops",
                "activation_roundtrip_bytes", "cpu_ns", "copy_to_device_ns", "resident_ns", "faster")
        lines += ["## Host-resident experts: on the CPU or copied to the device (declared rates)", "",
                  markdown_table(["figure", "value"],
                                 [[k, _x(lo, k) if f"{k}_exact" in lo else
                                   (lo[k] if isinstance(lo[k], str) else u.integer(lo[k]))] for k in keys], "lr"), ""]
    if "payback" in e:
        pb = e["payback"]
        keys = ("baseline_batch_ns", "replicated_batch_ns", "setup_ns", "saving_per_batch_ns",
                "strict_payback_batches", "capacity_feasible", "baseline_window_ns", "replicated_window_ns",
                "selected")
        lines += [f"## Replica payback over {pb['batches']} batches (declared rates)", "",
                  markdown_table(["figure", "value"],
                                 [[k, _x(pb, k) if f"{k}_exact" in pb else str(pb[k])] for k in keys], "lr"), ""]
    return lines


def offload_lines(rec):
    o = rec["offload"]
    keys = ("ffn_bytes_per_layer", "host_bytes", "slot_bytes", "device_bytes_saved", "link_bytes_per_pass",
            "copy_ns", "link_ns_per_pass", "layer_ns", "compute_ns", "finish_ns", "exposed_wait_ns",
            "slots_that_hide")
    val = (lambda k: _x(o, k) if f"{k}_exact" in o else ("none" if o[k] is None else u.integer(o[k])))
    lines = [f"## FFN weight offload: {len(o['offloaded_layers'])} layers, {rec['inputs']['offload_slots']} "
             f"slot(s), {rec['inputs']['offload_passes']} pass(es)", "",
             markdown_table(["figure", "value"], [[k, val(k)] for k in keys], "lr"), ""]
    rows = [[c["pass"], c["layer"], c["slot"], _x(c, "copy_start_ns"), _x(c, "copy_end_ns"),
             _x(c, "use_start_ns"), _x(c, "use_end_ns")] for c in o["copies"][:32]]
    lines += [markdown_table(["pass", "layer", "slot", "copy start ns", "copy end ns", "use start ns",
                              "use end ns"], rows), ""]
    return lines


def handoff_lines(rec):
    h = rec["handoff"]
    rows = [["PD snapshot", 1, u.integer(h["pd_bytes"]), _x(h, "pd_ns")],
            ["AF activations", u.integer(h["af_messages"]), u.integer(h["af_bytes"]), _x(h, "af_ns")]]
    return [f"## Handoff over {' -> '.join(h['hops'])} (declared link, serial messages)", "",
            markdown_table(["handoff", "messages", "bytes", "serial ns"], rows), ""]


def route_lines(rec):
    r = rec["route"]
    keys = ("prefix_bytes", "a_expected_ns", "a_p99_ns", "a_slo_probability", "hit_probability_where_a_mean_equals_b",
            "cold_matrix_flops", "warm_matrix_flops", "saved_matrix_flops")
    return ["## Cache route (declared times)", "",
            markdown_table(["path", "first token ns"], [[x["path"], _x(x, "finish_ns")] for x in r["paths"]]), "",
            markdown_table(["figure", "value"], [[k, _x(r, k) if f"{k}_exact" in r else u.integer(r[k])]
                                                 for k in keys], "lr"), ""]


def prefix_value_lines(rec):
    v = rec["prefix_value"]
    rows = [[c["id"], c["prefix_tokens"], c["suffix_tokens"], _x(c, "expected_reuses"), u.integer(c["resident_bytes"]),
             u.integer(c["saved_flops_per_reuse"]), _x(c, "value_per_byte")] for c in v["candidates"]]
    return ["## Prefix candidates", "",
            markdown_table(["id", "prefix", "suffix", "reuses", "held B", "saved FLOPs per reuse", "FLOPs per B"], rows),
            "", markdown_table(["choice", "kept", "held B", "expected saved FLOPs"],
                               [["exact", ", ".join(v["exact"]) or "-", u.integer(v["exact_bytes"]),
                                 _x(v, "exact_saved_flops")],
                                ["greedy by value per byte", ", ".join(v["greedy"]) or "-",
                                 u.integer(v["greedy_bytes"]), _x(v, "greedy_saved_flops")]]), ""]


def kv_offload_lines(rec):
    k = rec["kv_offload"]
    fit = (lambda n: "no limit" if n is None else u.integer(n))
    return [f"## KV offload: {k['fraction']:g} of the cache on the host, batch {k['batch']}, history "
            f"{k['history']:,} (lower bound)", "",
            markdown_table(["figure", "value"], [
                ["KV read per step", f"{u.integer(k['kv_bytes_read'])} B"],
                ["over the host link per step", f"{u.integer(round(k['host_bytes_per_step']))} B, {_s(k['link_s_per_step'])}"],
                ["step lower bound (offloaded)", _s(k["step_lower_bound_s"])],
                ["step lower bound (all on the device)", _s(k["step_lower_bound_resident_s"])],
                ["requests that fit (all on the device)", fit(k["requests_fit_resident"])],
                ["requests that fit (offloaded)", fit(k["requests_fit_offloaded"])]], "lr"), ""]


def left_out_lines(rec):
    """The record's `left_out` list as its own section (none when the list is empty)."""
    out = rec.get("left_out")
    return ["## What it leaves out", "", *[f"- {t}" for t in out], ""] if out else []


def _maybe(rec, key):
    return "unknown" if rec.get(key) is None else _x(rec, key)


def reconfigure_lines(rec):
    r = rec["reconfigure"]
    fit = {True: "yes", False: "**no**", None: "unknown"}
    moved = [[kind, u.integer(t["local_bytes"]), u.integer(t["network_bytes"])] for kind, t in r["totals"].items()]
    cards = [[c["device"], u.integer(c["old_bytes"]), u.integer(c["new_bytes"]), u.integer(c["peak_bytes"]),
              "unknown" if c["capacity_bytes"] is None else u.integer(c["capacity_bytes"]), fit[c["fits"]],
              u.integer(r["sent_bytes"].get(c["device"], 0)), u.integer(r["received_bytes"].get(c["device"], 0))]
             for c in r["devices"]]
    b = r["bounds_s"]
    times = [[f"network / {k} rate", _maybe(b, k)] for k in ("fabric", "sender", "receiver")]
    times += [["**transfer lower bound**", _maybe(r, "transfer_lower_bound_s")],
              ["declared serial steps", _maybe(r, "runtime_s")],
              ["declared transfer", _maybe(r, "declared_transfer_s")],
              ["serial switch lower bound (bound + declared steps)", _maybe(r, "serial_lower_bound_s")],
              ["declared serial switch", _maybe(r, "declared_serial_s")]]
    lines = [f"## Reconfiguration {r['source']} -> {r['target']}: {u.integer(r['network_bytes'])} B over the "
             f"network, every device fits: {fit[r['all_fit']]}", "",
             markdown_table(["state", "local copy B", "network B"], moved), "",
             f"Local copies read and write {u.integer(r['local_read_write_bytes'])} B.", "",
             markdown_table(["device", "old B", "new B", "peak B (old + new + extra)", "capacity B", "fits",
                             "sends B", "receives B"], cards), "",
             markdown_table(["time (s, exact)", "value"], times, "lr"), ""]
    p = r["payback"]
    if p is not None:
        lines += [f"Payback: {_x(p, 'overhead_s')} s of switch at {_x(p, 'saving_per_step_s')} s saved per step "
                  f"breaks even after {p['break_even_steps'] if p['break_even_steps'] is not None else 'never'} "
                  f"steps, strictly better after "
                  f"{p['strictly_better_steps'] if p['strictly_better_steps'] is not None else 'never'}.", ""]
    return lines


def dflash_lines(rec):
    d, i = rec["dflash"], rec["inputs"]
    keys = ("checkpoint_tensors", "draft_parameters", "draft_weight_bytes", "new_target_feature_bytes",
            "fused_target_feature_bytes", "noise_embedding_bytes", "shared_head_weight_bytes", "draft_candidates",
            "draft_matrix_flops", "target_verify_matrix_flops", "draft_kv_bytes_per_context_token",
            "draft_kv_peak_bytes", "draft_kv_after_crop_bytes", "draft_noise_kv_discarded_bytes",
            "target_verify_peak_kv_bytes")
    layers = ", ".join(map(str, d["target_feature_layers"]))
    return [f"## DFlash round: `{inline(d['draft_model'])}`, {i['cached_context']:,} cached and {i['new_context']:,} "
            f"new context rows, a block of {i['block_size']} (target layers {layers} tapped)", "",
            markdown_table(["figure", "value"], [[k, u.integer(d[k])] for k in keys]
                           + [["draft round (estimate)", _s(d["draft_round_s"])],
                              ["target verify (estimate)", _s(d["target_verify_s"])]], "lr"), "",
            markdown_table(["operator", "m", "k", "n", "count", "matrix FLOPs", "operand B / instance"],
                           [[x["operator"], u.integer(x["m"]), u.integer(x["k"]), u.integer(x["n"]), x["count"],
                             u.integer(x["matrix_flops"]), u.integer(x["logical_operand_bytes_per_instance"])]
                            for x in d["draft_matrices"]]), ""]


def residency_lines(rec):
    k = rec["residency"]
    keys = ("kv_bytes_per_token", "kv_page_bytes", "all_tier_peak_physical_bytes", "all_tier_physical_byte_seconds",
            "globally_unique_byte_seconds", "cross_tier_copy_byte_seconds", "all_tiers_capacity_feasible")
    rows = [[key, _x(k, key) if f"{key}_exact" in k else (("yes" if k[key] else "no") if isinstance(k[key], bool)
                                                        else u.integer(k[key]))] for key in keys]
    tiers = [[t["tier"], "-" if t["capacity_bytes"] is None else u.integer(t["capacity_bytes"]), u.integer(t["peak_bytes"]),
              _x(t, "physical_byte_seconds"), _x(t, "logical_byte_seconds"), _x(t, "shared_byte_seconds_saved"),
              u.integer(t["over_capacity_nanoseconds"])] for t in k["tiers"]]
    names = [t["tier"] for t in k["tiers"]]
    segs = [[u.integer(s["start_ns"]), u.integer(s["end_ns"])] + [u.integer(s["tier_physical_bytes"][n]) for n in names]
            + [u.integer(s["all_tier_physical_bytes"]), u.integer(s["globally_unique_page_bytes"])] for s in k["segments"]]
    return ["## Residency of immutable pages", "", markdown_table(["figure", "value"], rows, "lr"), "",
            markdown_table(["tier", "capacity B", "peak B", "physical B-s", "logical B-s", "shared saved B-s",
                            "over capacity ns"], tiers), "",
            markdown_table(["from ns", "to ns"] + [f"{n} B" for n in names] + ["all tiers B", "unique B"], segs), ""]


def pages_lines(rec):
    k = rec["kv_pages"]
    keys = ("kv_bytes_per_token", "page_bytes", "capacity_pages", "unusable_capacity_bytes", "rejected_events",
            "peak_allocated_page_bytes", "final_allocated_page_bytes", "final_logical_request_bytes",
            "final_unique_live_bytes", "final_unused_page_bytes", "final_private_paged_bytes",
            "final_fixed_reservation_bytes", "total_copied_valid_bytes")
    rows = [[key, "-" if k[key] is None else u.integer(k[key])] for key in keys]
    ev = [[e["event"], ":".join(map(str, e["operation"])), "yes" if e["accepted"] else e["rejection_reason"],
           e["additional_pages_required"], u.integer(e["logical_request_bytes"]), u.integer(e["unique_live_bytes"]),
           u.integer(e["allocated_page_bytes"]), u.integer(e["unused_page_bytes"]), u.integer(e["private_paged_bytes"]),
           u.integer(e["fixed_reservation_bytes"]), u.integer(e["copied_valid_bytes"]),
           ", ".join(map(str, e["freed_page_ids"])) or "-"] for e in k["events"]]
    return [f"## KV pages of {rec['inputs']['page_tokens']} tokens", "", markdown_table(["figure", "value"], rows, "lr"),
            "", markdown_table(["event", "operation", "accepted", "new pages", "logical B", "unique live B",
                                "allocated B", "unused B", "private paged B", "fixed reservation B", "copied B",
                                "freed pages"], ev), ""]


def restore_lines(rec):
    k, i = rec["kv_restore"], rec["inputs"]
    keys = ("kv_snapshot_bytes", "input_token_id_bytes", "replay_backbone_matrix_flops", "replay_new_kv_write_bytes",
            "offload_ns", "restore_ns", "prefetch_start_ns", "offload_return_stall_ns", "recompute_start_ns",
            "recompute_stall_ns", "host_snapshot_fits")
    rows = [[key, _x(k, key) if f"{key}_exact" in k else (("yes" if k[key] else "no") if isinstance(k[key], bool)
                                                        else u.integer(k[key]))] for key in keys]
    pol = [[p["policy"], "yes" if p["feasible"] else "no", _x(p, "ready_ns"), _x(p, "stall_ns"),
            _x(p, "kv_free_interval_ns"), _x(p, "released_byte_ns"), u.integer(p["transfer_bytes"]),
            u.integer(p["replayed_matrix_flops"])] for p in k["policies"]]
    return [f"## KV restore: {i['input_len']:,} tokens, next use at {i['next_use_ns']:,} ns", "",
            markdown_table(["figure", "value"], rows, "lr"), "",
            markdown_table(["policy", "feasible", "ready ns", "stall ns", "free interval ns", "released byte-ns",
                            "moved B", "replayed matrix FLOPs"], pol), ""]


def markdown(rec):
    i = rec["inputs"]
    if "residency" in rec:
        lines = [f"# serve: `{inline(rec['model']['id'])}`, multi-tier page residency", "", *residency_lines(rec),
                 "## Definitions", "", *[f"- {t}" for t in rec["definitions"]], "", *left_out_lines(rec),
                 *conventions(rec["conventions"])]
        return "\n".join(lines)
    if "kv_pages" in rec:
        lines = [f"# serve: `{inline(rec['model']['id'])}`, KV pages and branches", "", *pages_lines(rec),
                 "## Definitions", "", *[f"- {t}" for t in rec["definitions"]], "", *left_out_lines(rec),
                 *conventions(rec["conventions"])]
        return "\n".join(lines)
    if "kv_restore" in rec:
        lines = [f"# serve: `{inline(rec['model']['id'])}`, KV keep / offload / recompute", "",
                 *restore_lines(rec), "## Definitions", "", *[f"- {t}" for t in rec["definitions"]], "",
                 *left_out_lines(rec), *conventions(rec["conventions"])]
        return "\n".join(lines)
    if "dflash" in rec:
        lines = [f"# serve: `{inline(rec['model']['id'])}` with a DFlash drafter, one round", "",
                 device_line(rec["device"], memory=False), "", *dflash_lines(rec), "## Definitions", "",
                 *[f"- {t}" for t in rec["definitions"]], "", *left_out_lines(rec), *conventions(rec["conventions"])]
        return "\n".join(lines)
    if "reconfigure" in rec:
        lines = [f"# serve: `{inline(rec['model']['id'])}`, TP/EP reconfiguration", "",
                 f"- State: {i['batch']} requests x {i['history']:,} tokens of cache"
                 f"{' (replayed, not moved)' if i['replay'] else ''}, {i['aux_state_bytes']:,} B auxiliary; "
                 f"weights {i['weight_dtype']}, KV {i['kv_dtype']}", "",
                 *reconfigure_lines(rec), "## Definitions", "", *[f"- {t}" for t in rec["definitions"]], "",
                 "## What it leaves out", "", *[f"- {t}" for t in rec["left_out"]], "",
                 *conventions(rec["conventions"])]
        return "\n".join(lines)
    if "kv_offload" in rec:
        lines = [f"# serve: `{inline(rec['model']['id'])}` on {inline(rec['device']['id'])}, KV offload", "",
                 *verdict_lines(rec), model_line(rec["model"], tied=False), device_line(rec["device"], memory=True),
                 *note_lines(rec), "", *kv_offload_lines(rec), "## Definitions", "",
                 *[f"- {t}" for t in rec["definitions"]], "", *left_out_lines(rec), *conventions(rec["conventions"])]
        return "\n".join(lines)
    if "prefix_value" in rec:
        lines = [f"# serve: `{inline(rec['model']['id'])}`, prefix value", "", *verdict_lines(rec),
                 *prefix_value_lines(rec), "## Definitions", "", *[f"- {t}" for t in rec["definitions"]], "",
                 *left_out_lines(rec), *conventions(rec["conventions"])]
        return "\n".join(lines)
    if "route" in rec:
        lines = [f"# serve: `{inline(rec['model']['id'])}`, cache route", "", *verdict_lines(rec),
                 *route_lines(rec), "## Definitions", "", *[f"- {t}" for t in rec["definitions"]], "",
                 *left_out_lines(rec), *conventions(rec["conventions"])]
        return "\n".join(lines)
    if "handoff" in rec:
        lines = [f"# serve: `{inline(rec['model']['id'])}`, PD and AF handoff", "", *verdict_lines(rec),
                 *[f"- Note: {inline(n)}" for n in rec["notes"]], *([""] if rec["notes"] else []),
                 *handoff_lines(rec), "## Definitions", "", *[f"- {t}" for t in rec["definitions"]], "",
                 *left_out_lines(rec), *conventions(rec["conventions"])]
        return "\n".join(lines)
    if "offload" in rec:
        lines = [f"# serve: `{inline(rec['model']['id'])}`, FFN weights offloaded to the host", "",
                 *verdict_lines(rec), *[f"- Note: {inline(n)}" for n in rec["notes"]], *([""] if rec["notes"] else []),
                 *offload_lines(rec),
                 "## Definitions", "",
                 *[f"- {t}" for t in rec["definitions"]], "", "## What it leaves out", "",
                 *[f"- {t}" for t in rec["left_out"]], "", *conventions(rec["conventions"])]
        return "\n".join(lines)
    if "experts" in rec:
        lines = [f"# serve: `{inline(rec['model']['id'])}`, one MoE layer's experts", "", *verdict_lines(rec),
                 *expert_lines(rec), "## Definitions", "", *[f"- {t}" for t in rec["definitions"]], "",
                 "## What it leaves out", "", *[f"- {t}" for t in rec["left_out"]], "",
                 *conventions(rec["conventions"])]
        return "\n".join(lines)
    if "spec_round" in rec or "spec_budget" in rec:
        head = (f"# serve: `{inline(rec['model']['id'])}`, speculative rounds with declared costs"
                if "spec_round" in rec else "# serve: speculative budget with declared costs")
        lines = [head, "", *verdict_lines(rec),
                 *(round_lines(rec) if "spec_round" in rec else budget_lines(rec)),
                 "## Definitions", "", *[f"- {t}" for t in rec["definitions"]], "",
                 *conventions(rec["conventions"])]
        return "\n".join(lines)
    if "workers" in rec:   # the workers carry their own rates: no scheduler, no --device
        d = rec["device"]
        lines = [f"# serve: `{inline(rec['model']['id'])}`, PD pools of the given workers", "",
                 *verdict_lines(rec), model_line(rec["model"], tied=False),
                 f"- Requests: {i['input_len']} input and {i['output_len']} output tokens",
                 *([formats_line(i)] if "weight_dtype" in i else []),
                 *([f"- Device-rated workers: the stage bound at --decode-batch {i['decode_batch']}, "
                    f"efficiency compute {d['compute_efficiency']:g}, memory {d['memory_efficiency']:g}"]
                   if "decode_batch" in i else []), *note_lines(rec), ""]
        lines += worker_lines(rec)
        lines += ["## Definitions", "", *[f"- {t}" for t in rec["definitions"]], "",
                  *conventions(rec["conventions"])]
        return "\n".join(lines)
    title = f"# serve: `{inline(rec['model']['id'])}` on {inline(rec['device']['id'])}"
    shape = (f"- Requests: {i['input_len']} input and {i['output_len']} output tokens; scheduler "
             if "input_len" in i else f"- Requests: {len(i['requests'])} replayed; scheduler ")
    lines = [title, "", *verdict_lines(rec), model_line(rec["model"], tied=False),
             shape + f"--max-seqs {i['max_seqs']}, --max-batched-tokens {i['max_batched_tokens']}",
             *([formats_line(i)] if "weight_dtype" in i else []),
             device_line(rec["device"], memory=True), *note_lines(rec), ""]
    if "sizing" in rec:
        lines += sizing_lines(rec)
    if "replay" in rec:
        lines += replay_lines(rec)
    if "pd" in rec:
        lines += pd_lines(rec)
    if "speculative" in rec:
        lines += speculative_lines(rec)
    if rec["policies"]:
        lines += policy_lines(rec)
    lines += ["## Definitions", "", *[f"- {t}" for t in rec["definitions"]], "",
              "## What it leaves out", "", *[f"- {t}" for t in rec["left_out"]], "",
              *conventions(rec["conventions"])]
    return "\n".join(lines)


def csv(rec):
    """The SLO sizing's rows (one per device count tried) when the record has one, else one row
    per scheduler and figure (estimate, lower bound) and a tuned engine's predicted row."""
    sizing = rec.get("sizing")
    if sizing is not None:   # a count that fails carries fewer fields: every row gets every column
        rows = [dict(c, figure=sizing["figure"]) for c in sizing["counts"]]
        columns = list(dict.fromkeys(k for r in rows for k in r))
        return records_to_csv([{k: r.get(k) for k in columns} for r in rows], columns)
    keys = ("requests_per_s", "output_tokens_per_s", "ttft_s", "tpot_s", "iteration_s")
    rows = [{"policy": p["policy"], "figure": fig, "concurrency": p["concurrency"],
             **{k: p[k][fig] for k in keys}} for p in rec["policies"] if "refused" not in p
            for fig in ("estimate", "lower_bound")]
    pred = rec.get("predicted")
    if pred:
        rows.append({"policy": "tuned engine", "figure": "predicted", "concurrency": pred["concurrency"],
                     "requests_per_s": pred["requests_per_s"], "output_tokens_per_s": pred["output_tokens_per_s_cluster"],
                     "ttft_s": None, "tpot_s": pred["iteration_s"], "iteration_s": pred["iteration_s"]})
    return records_to_csv(rows, ("policy", "figure", "concurrency") + keys)

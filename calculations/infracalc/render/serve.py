"""Markdown for `serve` records (the SLO sizing first, then the schedulers side by side)."""

from . import units as u
from .forward import device_line, formats_line, model_line, note_lines
from .table import markdown_table, conventions

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
    lines = [f"## Fewest {d['id']} meeting {_limits(i)}", ""]
    if a is None:
        lines.append(f"**No count up to {i['max_devices']} devices meets the limits** (estimate); "
                     "why each count fails is below.")
    else:
        lb = a["lower_bound"]
        lines.append(f"**{u.count(a['devices'], 'device')}**: layout {a['layout']}, batch "
                     f"{a['batch_per_replica']} per replica: TTFT {_s(a['ttft_s'])}, TPOT {_s(a['tpot_s'])}, "
                     f"{a['decode_tokens_per_s_per_device']:,.1f} decode tokens/s per device (estimate); "
                     f"lower bound TTFT {_s(lb['ttft_s'])}, TPOT {_s(lb['tpot_s'])}.")
    lines.append("")
    rows = []
    for c in s["counts"]:
        if c["meets"]:
            rows.append([c["devices"], "yes", "-", c["layout"], c["batch_per_replica"], _s(c["ttft_s"]),
                         _s(c["tpot_s"]), f"{c['decode_tokens_per_s_per_device']:,.1f}"])
        else:
            rows.append([c["devices"], "no", c["why"], "-", "-", "-", "-", "-"])
    lines.append(markdown_table(["devices", "meets", "why not", "layout", "batch", "TTFT", "TPOT",
                                 "decode tok/s per device"], rows, "rllllrrr"))
    return lines + [""]


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


def markdown(rec):
    i = rec["inputs"]
    title = f"# serve: `{rec['model']['id']}` on {rec['device']['id']}"
    lines = [title, "", model_line(rec["model"], tied=False),
             f"- Requests: {i['input_len']} input and {i['output_len']} output tokens; scheduler "
             f"--max-seqs {i['max_seqs']}, --max-batched-tokens {i['max_batched_tokens']}",
             *([formats_line(i)] if "weight_dtype" in i else []),
             device_line(rec["device"], memory=True), *note_lines(rec), ""]
    if "sizing" in rec:
        lines += sizing_lines(rec)
    if rec["policies"]:
        lines += policy_lines(rec)
    lines += ["## Definitions", "", *[f"- {t}" for t in rec["definitions"]], "",
              "## What it leaves out", "", *[f"- {t}" for t in rec["left_out"]], "",
              *conventions(rec["conventions"])]
    return "\n".join(lines)

"""A self-contained HTML report of one record: the command's Markdown (its summary, tables and
conventions, in the full view) as HTML, then SVG charts drawn from the record: a roofline with
each operator as a point, the time per operator, the memory per device as stacked bars, and
the batch sweep curve. No script, no stylesheet or font from the network, standard library
only; the page is well-formed XML (XHTML syntax), so any XML parser can check it.
"""

import math
import re

from . import svg

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; }
th { background: #f2f2f2; }
td.r, th.r { text-align: right; }
code { background: #f6f6f6; }
.verdict { border-left: 4px solid #4a90d9; padding: 0.2em 1em; background: #f5f9fd; }
.charts svg { margin: 0.5em 1em 0.5em 0; border: 1px solid #ddd; }
p.note { font-size: 12px; color: #555; }
"""

RIGHT = ' class="r"'
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def _esc(text):
    return svg._escape(text)


def _inline(text):
    """Markdown inline marks (bold, code) as HTML, the rest escaped."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if len(part) > 1 and part.startswith("`") and part.endswith("`"):
            out.append(f"<code>{_esc(part[1:-1])}</code>")
        else:
            out.append(re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", _esc(part)))
    return "".join(out)


def _cells(line):
    """The cells of a Markdown table line (an escaped '\\|' stays inside its cell)."""
    body = line.strip()[1:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _table(lines):
    header, sep, rows = _cells(lines[0]), _cells(lines[1]), [_cells(x) for x in lines[2:]]
    right = [s.endswith(":") for s in sep]

    def row(cells, tag):
        return "<tr>" + "".join(f"<{tag}{RIGHT if r else ''}>{_inline(c)}</{tag}>"
                                for c, r in zip(cells, right)) + "</tr>"

    return "<table>" + row(header, "th") + "".join(row(r, "td") for r in rows) + "</table>"


def markdown_to_html(text):
    """The subset of Markdown the renderers write: headings, bullets, tables, paragraphs."""
    out, lines, i = [], text.split("\n"), 0
    verdict = False
    while i < len(lines):
        line = lines[i]
        if line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            out.append(_table(block))
            continue
        if line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            if verdict:
                out.append("</div>")
                verdict = False
            continue
        heading = re.match(r"(#{1,4}) (.*)", line)
        if heading:
            n = len(heading.group(1))
            out.append(f"<h{n}>{_inline(heading.group(2))}</h{n}>")
        elif line.startswith("**") and not verdict and len(out) == 1:   # the verdict under the title
            out.append(f'<div class="verdict"><p>{_inline(line)}</p>')
            verdict = True
        elif re.match(r"\[\d+\] ", line):
            out.append(f'<p class="note">{_inline(line)}</p>')
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        elif verdict:
            out.append("</div>")
            verdict = False
        i += 1
    if verdict:
        out.append("</div>")
    return "\n".join(out)


# -- charts ------------------------------------------------------------------

W, H, L, R, T, B = 640, 420, 90, 24, 48, 60


def _frame(title, x_label, y_label):
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
            f'font-family="sans-serif" font-size="12">', f'<rect width="{W}" height="{H}" fill="white"/>',
            f'<text x="{W / 2:.1f}" y="24" text-anchor="middle" font-size="14">{_esc(title)}</text>',
            f'<text x="{L + (W - L - R) / 2:.1f}" y="{H - 16}" text-anchor="middle">{_esc(x_label)}</text>',
            f'<text x="16" y="{T + (H - T - B) / 2:.1f}" text-anchor="middle" '
            f'transform="rotate(-90 16 {T + (H - T - B) / 2:.1f})">{_esc(y_label)}</text>']


def roofline(rec):
    """Each operator at (FLOP/byte, FLOP/s it reaches at its bound), under the device's roof
    min(peak, intensity x bandwidth); operators without FLOPs or bytes are left out."""
    d = rec.get("device") or {}
    peak, bw = d.get("matrix_flops_per_s"), d.get("memory_bandwidth_bytes_per_s")
    ops = [o for o in rec.get("operators") or []
           if o.get("time_s") and o.get("arithmetic_intensity_flops_per_byte")]
    if not ops or not peak or not bw:
        return None
    pts = [(o["arithmetic_intensity_flops_per_byte"], (o["matrix_flops"] + o["vector_flops"]) / o["time_s"],
            o["name"]) for o in ops]
    x_lo, x_hi, xt = svg.log_ticks(min(p[0] for p in pts + [(peak / bw / 10, 0, "")]),
                                   max(p[0] for p in pts + [(peak / bw * 10, 0, "")]))
    y_lo, y_hi, yt = svg.log_ticks(max(min(p[1] for p in pts), 1.0), peak * 1.5)
    pw, ph = W - L - R, H - T - B

    def px(x):
        return L + pw * math.log10(max(x, x_lo) / x_lo) / math.log10(x_hi / x_lo)

    def py(y):
        return T + ph * (1 - math.log10(min(max(y, y_lo), y_hi) / y_lo) / math.log10(y_hi / y_lo))

    out = _frame(f"Roofline: {rec['model']['id']} on {d['id']}", "arithmetic intensity (FLOP/byte), log scale",
                 "FLOP/s reached at the bound, log scale")
    for v in xt:
        out.append(f'<text x="{px(v):.1f}" y="{T + ph + 16}" text-anchor="middle">{svg._tick_label(v)}</text>')
    for v in yt[::2]:
        out.append(f'<text x="{L - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{svg._tick_label(v)}</text>')
    ridge = peak / bw
    roof = [(x_lo, x_lo * bw), (ridge, peak), (x_hi, peak)]
    out.append('<polyline fill="none" stroke="#d62728" stroke-width="2" points="'
               + " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in roof) + '"/>')
    out.append(f'<text x="{px(ridge) + 6:.1f}" y="{py(peak) - 6:.1f}" fill="#d62728">ridge {ridge:,.0f} FLOP/B</text>')
    for x, y, name in pts:
        out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="#1f77b4" fill-opacity="0.7">'
                   f'<title>{_esc(name)}</title></circle>')
    out.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="black"/>')
    return "\n".join(out + ["</svg>"])


def bars(title, items, unit_label, fmt):
    """Horizontal bars of (label, value), largest first, at most 16."""
    items = sorted((i for i in items if i[1]), key=lambda i: -i[1])[:16]
    if not items:
        return None
    height = T + 22 * len(items) + 40
    top = max(v for _, v in items)
    pw = W - 200 - R - 80   # room for the value label
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" '
           f'font-family="sans-serif" font-size="12">', f'<rect width="{W}" height="{height}" fill="white"/>',
           f'<text x="{W / 2:.1f}" y="24" text-anchor="middle" font-size="14">{_esc(title)}</text>']
    for k, (label, v) in enumerate(items):
        y = T + 22 * k
        out.append(f'<text x="194" y="{y + 14}" text-anchor="end">{_esc(label)}</text>')
        out.append(f'<rect x="200" y="{y + 3}" width="{pw * v / top:.1f}" height="15" fill="#1f77b4"/>')
        out.append(f'<text x="{200 + pw * v / top + 4:.1f}" y="{y + 14}" font-size="11">{_esc(fmt(v))}</text>')
    out.append(f'<text x="200" y="{height - 12}">{_esc(unit_label)}</text>')
    return "\n".join(out + ["</svg>"])


def stacked(title, stages, parts, capacity, fmt):
    """One stacked bar per stage of the named parts (bytes), with the device capacity line."""
    stages = [s for s in stages if any(s.get(k) for k, _ in parts)]
    if not stages:
        return None
    top = max([capacity or 0] + [sum(s.get(k) or 0 for k, _ in parts) for s in stages])
    pw, ph = W - L - R, H - T - B - 20
    bw = min(60, pw / (1.6 * len(stages)))
    out = _frame(title, "pipeline stage", "bytes per device")
    for j, s in enumerate(stages):
        x, y = L + bw * 0.3 + j * bw * 1.6, T + ph
        for c, (key, _) in enumerate(parts):
            h = ph * (s.get(key) or 0) / top
            y -= h
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bw:.1f}" height="{h:.1f}" fill="{COLORS[c]}">'
                       f'<title>{_esc(key)}: {_esc(fmt(s.get(key) or 0))}</title></rect>')
        out.append(f'<text x="{x + bw / 2:.1f}" y="{T + ph + 16}" text-anchor="middle">{_esc(s.get("stage", j))}</text>')
    if capacity:
        cy = T + ph * (1 - capacity / top)
        out.append(f'<line x1="{L}" y1="{cy:.1f}" x2="{L + pw}" y2="{cy:.1f}" stroke="#d62728" stroke-dasharray="6 3"/>')
        out.append(f'<text x="{L + pw - 4}" y="{cy - 4:.1f}" text-anchor="end" fill="#d62728">device memory '
                   f'{_esc(fmt(capacity))}</text>')
    for c, (_, name) in enumerate(parts):
        out.append(f'<rect x="{L + 10 + 120 * c}" y="{T - 14}" width="10" height="10" fill="{COLORS[c]}"/>'
                   f'<text x="{L + 24 + 120 * c}" y="{T - 5}" font-size="11">{_esc(name)}</text>')
    out.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="black"/>')
    return "\n".join(out + ["</svg>"])


def charts(rec):
    """The SVG charts this record has data for."""
    from . import units as u

    found = [roofline(rec)]
    ops = rec.get("operators") or []
    found.append(bars("Time per operator (bound, summed over its layers)",
                      [(o["name"] + (f" ({o['layers']})" if o.get("layers") not in (None, "-") else ""),
                        o.get("time_s")) for o in ops], "seconds", u.seconds) if ops else None)
    mem = rec.get("memory") or {}
    if rec.get("command") == "train" and mem.get("stages"):
        found.append(stacked("Memory per device, per pipeline stage", mem["stages"],
                             [("weights_bytes", "weights"), ("grads_bytes", "gradients"),
                              ("optimizer_bytes", "optimizer"), ("activations_bytes", "activations")],
                             mem.get("device_memory_bytes"), u.nbytes))
    cap = rec.get("capacity") or {}
    if rec.get("command") == "kv" and cap.get("stages"):
        batch = rec["inputs"]["batch"]
        stages = [dict(s, kv_at_batch=s["kv_bytes_per_request"] * batch, reserve=cap["reserve_bytes"])
                  for s in cap["stages"]]
        found.append(stacked(f"Memory per device at batch {batch}", stages,
                             [("weight_bytes", "weights"), ("kv_at_batch", "KV cache"), ("reserve", "reserve")],
                             cap.get("memory_bytes_per_device"), u.nbytes))
    if rec.get("rows") and rec.get("command") == "decode":
        found.append(svg.throughput_plot(rec))
    elif rec.get("rows") and str(rec.get("command")).startswith("parallel") and "layout" in rec:
        found.append(svg.parallel_plot(rec))
    phases = rec.get("phases") if rec.get("command") == "parallel" else None
    if phases:
        found.append(bars("Time per stage and phase (estimate, per micro-batch pass; decode: all steps)",
                          [(f"{name} stage {s['stage']}", s.get("time_s")) for name, p in phases.items()
                           if isinstance(p, dict) for s in p.get("stages", [])], "seconds", u.seconds))
    return [c for c in found if c]


def page(rec, markdown_text):
    """The report: title, the Markdown as HTML, the charts. Deterministic (no timestamp)."""
    title = markdown_text.split("\n", 1)[0].lstrip("# ") or "infra-calc report"
    body = markdown_to_html(markdown_text)
    figures = charts(rec)
    parts = ['<!DOCTYPE html>', '<html xmlns="http://www.w3.org/1999/xhtml" lang="en">', "<head>",
             '<meta charset="utf-8"/>', f"<title>{_esc(title)}</title>", f"<style>{STYLE}</style>", "</head>",
             "<body>", body]
    if figures:
        parts += ['<h2>Charts</h2>', '<div class="charts">', *[f.strip() for f in figures], "</div>"]
    parts += ['<p class="note">Generated by infra-calc from the same record as the Markdown, JSON and CSV '
              'outputs.</p>', "</body>", "</html>"]
    return "\n".join(parts) + "\n"

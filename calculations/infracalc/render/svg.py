"""SVG plots written with string formatting (no plotting library).

Output is deterministic: coordinates are printed with one decimal and the
elements come in a fixed order, so the same record gives the same bytes.
"""

import math

WIDTH, HEIGHT = 640, 440
LEFT, RIGHT, TOP, BOTTOM = 84, 28, 52, 64


def _escape(text):
    """XML text: control characters (not allowed in XML 1.0) shown escaped as repr would,
    then &, < and > as entities."""
    from ..errors import one_line

    return one_line(str(text)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _tick_label(v):
    """1, 20, 500, 2k, 50k, 1M, 0.5: short enough to stay clear of the axis title."""
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= factor:
            return f"{v / factor:g}{suffix}"
    return f"{v:g}"


def log_ticks(lo, hi):
    """Decade bounds [10^a, 10^b] around lo..hi (> 0) and the 1, 2, 5 x 10^k ticks inside."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if a == b:
        b += 1
    ticks = [m * 10.0 ** k for k in range(a, b + 1) for m in (1, 2, 5) if m * 10.0 ** k <= 10.0 ** b]
    return 10.0 ** a, 10.0 ** b, ticks


def scatter(points, labels, title, subtitle, x_label, y_label, empty="no data"):
    """A connected scatter plot of (x, y) points (x, y > 0) on log10 axes, or the
    frame, the axis titles and the `empty` message when there are no points."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2:.1f}" y="24" text-anchor="middle" font-size="14">{_escape(title)}</text>',
           f'<text x="{WIDTH / 2:.1f}" y="42" text-anchor="middle" font-size="11">{_escape(subtitle)}</text>']
    if points:
        x_min, x_max, x_ticks = log_ticks(min(p[0] for p in points), max(p[0] for p in points))
        y_min, y_max, y_ticks = log_ticks(min(p[1] for p in points), max(p[1] for p in points))
        x_span, y_span = math.log10(x_max / x_min), math.log10(y_max / y_min)

        def px(x):
            return LEFT + plot_w * math.log10(x / x_min) / x_span

        def py(y):
            return TOP + plot_h * (1 - math.log10(y / y_min) / y_span)

        for v in x_ticks:
            out.append(f'<line x1="{px(v):.1f}" y1="{TOP}" x2="{px(v):.1f}" y2="{TOP + plot_h}" stroke="#e5e5e5"/>')
            out.append(f'<text x="{px(v):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{_tick_label(v)}</text>')
        for v in y_ticks:
            out.append(f'<line x1="{LEFT}" y1="{py(v):.1f}" x2="{LEFT + plot_w}" y2="{py(v):.1f}" stroke="#e5e5e5"/>')
            out.append(f'<text x="{LEFT - 8}" y="{py(v) + 4:.1f}" text-anchor="end">{_tick_label(v)}</text>')
    else:
        out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{TOP + plot_h / 2:.1f}" '
                   f'text-anchor="middle">{_escape(empty)}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="black"/>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 18}" text-anchor="middle">{_escape(x_label)}</text>')
    out.append(f'<text x="18" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 18 {TOP + plot_h / 2:.1f})">{_escape(y_label)}</text>')
    if points:
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>')
    placed = []
    for (x, y), label in zip(points, labels):
        out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="#1f77b4"/>')
        lx, ly, anchor = _place(px(x), py(y), len(label), placed)
        out.append(f'<text x="{lx:.1f}" y="{ly:.1f}" font-size="11"{anchor}>{_escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _place(x, y, chars, placed):
    """A label position beside a point that overlaps no label placed so far
    (above-right, below-right, above-left, below-left; else above-right)."""
    w, h = 7 * chars + 6, 11   # an 11 px sans-serif label and a gap
    options = ((x + 6, y - 6, ""), (x + 6, y + 15, ""), (x - 6, y - 6, ' text-anchor="end"'),
               (x - 6, y + 15, ' text-anchor="end"'))
    for lx, ly, anchor in options:
        x0 = lx - w if anchor else lx
        box = (x0, ly - h, x0 + w, ly)
        if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
            placed.append(box)
            return lx, ly, anchor
    return options[0]


def throughput_plot(rec):
    """Aggregate decode tokens/s against tokens/s per request, one point per batch."""
    i = rec["inputs"]
    rows = rec["rows"]
    points = [(r["decode_tokens_per_s_per_request"], r["decode_tokens_per_s_aggregate"]) for r in rows]
    labels = [f"B={r['batch']}" for r in rows]
    title = (f"decode: {rec['model']['id']} on {rec['device']['id']}, "
             f"{i['input_len']} in / {i['output_len']} out per request")
    native = "".join(f", {role} {fmt}" for role, fmt in i.get("native_formats", {}).items())
    subtitle = (f"weights {i['weight_dtype']}{native}, activations {i['act_dtype']}, "
                f"KV cache {i['kv_dtype']}")
    return scatter(points, labels, title, subtitle, "decode tokens/s per request (1 / mean TPOT), log scale",
                   "aggregate decode tokens/s (B / mean TPOT), log scale",
                   "Not even one request fits beside the weights: nothing to plot")


def parallel_plot(rec):
    """`parallel --batch-sweep`: tokens/s per device against tokens/s per request, one point per batch."""
    i, lay = rec["inputs"], rec["layout"]
    rows = rec["rows"]
    points = [(r["decode_tokens_per_s_per_request"], r["decode_tokens_per_s_per_device"]) for r in rows]
    title = (f"parallel: {rec['model']['id']} on {lay['devices']} x {rec['device']['id']} ({lay['label']}), "
             f"{i['input_len']} in / {i['output_len']} out")
    subtitle = f"weights {i['weight_dtype']}, activations {i['act_dtype']}, KV cache {i['kv_dtype']}; B per replica"
    return scatter(points, [f"B={r['batch']}" for r in rows], title, subtitle,
                   "decode tokens/s per request (1 / mean TPOT), log scale",
                   "decode tokens/s per device, log scale", "Not even one request fits: nothing to plot")

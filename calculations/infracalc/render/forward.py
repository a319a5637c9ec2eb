"""Markdown and CSV for a `forward` record."""

from . import units as u
from .table import inline, markdown_table, records_to_csv, conventions


HEAD_ROWS = {"last": "the last position of each request", "all": "every position", "none": "no position"}


def architecture_options(m, i):
    """The options that change this model's figures: MoE routing, MLA path, DeltaNet form."""
    extra = []
    if "routing" in i and m["active_params"] != m["params"]:
        extra.append(f"MoE routing `{i['routing']}`")
    if i.get("mla") and "MLA" in m["attention"]:
        extra.append(f"MLA path `{i['mla']}`")
    if i.get("delta_form"):
        extra.append(f"linear-attention form `{i['delta_form']}`")
    return extra


def model_line(m, tied=True):
    active = f", active per token {u.integer(m['active_params'])}" if m["active_params"] != m["params"] else ""
    return (f"- Model: `{inline(m['id'])}` ({m['model_type']}), {m['layers']} layers, hidden {m['hidden_size']}, "
            f"attention {m['attention']}; params {u.integer(m['params'])}{active}"
            + ("; tied embeddings counted once" if tied and m["tied_embeddings"] else ""))


def formats_line(i):
    return (f"- Formats: weights {i['weight_dtype']}, activations {i['act_dtype']}, KV cache {i['kv_dtype']}"
            + "".join(f"; {role} stored natively as {fmt}" for role, fmt in i.get("native_formats", {}).items())
            + f"; matrix work computes at {i['act_dtype']}")


def device_line(d, memory=False):
    size = (f", {u.nbytes(d['memory_bytes'])} ({d.get('memory_convention', 'physical')} capacity)"
            if memory else "")
    return (f"- Device: {inline(d['name'])} (`{inline(d['id'])}`): {d['compute_dtype']} dense matrix peak "
            f"{u.rate_flops(d['matrix_flops_per_s'])}, vector {u.rate_flops(d['vector_flops_per_s'])} "
            f"({d['vector_peak']}), memory {u.rate_bytes(d['memory_bandwidth_bytes_per_s'])}{size}; "
            f"efficiency compute {d['compute_efficiency']}, memory {d['memory_efficiency']}")


def note_lines(rec):
    m = rec["model"]
    lines = [f"- Not counted in params: {p['name']} ({u.integer(p['params'])} params): {p['note']}"
             for p in m.get("parts_not_counted", [])]
    # Notes are prose that may quote an input (a device id): shown through `inline`.
    return lines + [f"- Note: {inline(note)}" for note in m.get("notes", []) + rec.get("notes", [])]


def header_lines(rec):
    """The lines naming model, workload, formats and device of a `forward` record."""
    m, i = rec["model"], rec["inputs"]
    workload = (f"- Workload: batch {i['batch']}, {u.count(i['tokens'], 'new token')} "
                f"per request, history {i['history']}, output head on {HEAD_ROWS[i['logits']]} "
                f"(`--logits {i['logits']}`)" + "".join(f"; {o}" for o in architecture_options(m, i)))
    return [model_line(m), workload, formats_line(i), device_line(rec["device"]), *note_lines(rec)]


def operator_rows(ops):
    def f(n):
        return u.flops(n) if n else "-"

    def b(n):
        return u.nbytes(n) if n else "-"

    for o in ops:
        yield [
            o["name"], o["layers"], o["repeats"], f"`{o['shape']}`",
            f(o["matrix_flops"]), f(o["vector_flops"]),
            b(o["weight_bytes_read"]), b(o["act_bytes_read"]), b(o["kv_bytes_read"]),
            b(o["act_bytes_written"] + o["kv_bytes_written"]),
            u.ratio(o["arithmetic_intensity_flops_per_byte"]), u.seconds(o["time_s"]), o["bound"],
            predicted_cell(o.get("predicted_time_s")), u.ratio(o.get("predicted_efficiency"), 2),
        ]


EFFICIENCY_NOTE = ("time = the operator's roofline bound; predicted = at the achievable rates (their "
                   "fractions of the peaks and the cost per kernel: below); bound / predicted = the share of the predicted "
                   "time the bound explains (the rest: the achievable fractions and kernel launches).")


def rates_text(p):
    """'achievable fractions: matrix 0.803 (measured); ...; 4.000 us per kernel' of a `prediction` record."""
    rates = "; ".join(f"{f['rate']} {f['fraction']:.3f} ({f['basis'].split(' (')[0]})" for f in p["fractions"])
    return f"achievable fractions: {rates}; {u.seconds(p['kernel_s'])} per kernel"


def predicted_cell(seconds):
    return u.seconds(seconds) if seconds is not None else "-"


def predicted_rows(t, rec):
    """The predicted pass time beside the bound, and the rates it uses (with their basis)."""
    if t.get("predicted_time_s") is None:
        return [["Predicted (well-tuned stack)", "", "- (no published matrix or vector peak to scale)"]]
    return [["Predicted (well-tuned stack, not a bound)", "", u.seconds(t["predicted_time_s"])],
            [f"  {rates_text(rec['prediction'])}", "",
             f"bound / predicted {t['roofline_time_s'] / t['predicted_time_s']:.2f}"]]


def totals_rows(t):
    exact = [
        ("Parameters", u.integer(t["params"]), ""),
        ("Active parameters per token", u.integer(t["active_params"]), ""),
        ("Weight bytes (resident)", u.integer(t["weight_bytes"]), u.nbytes(t["weight_bytes"])),
        ("Linear matrix FLOPs (projections, MLP, head)", u.integer(t["linear_flops"]), u.flops(t["linear_flops"])),
        ("Attention matrix FLOPs, causal", u.integer(t["attention_flops_causal"]), u.flops(t["attention_flops_causal"])),
        ("Attention matrix FLOPs, rectangular", u.integer(t["attention_flops_rectangular"]), u.flops(t["attention_flops_rectangular"])),
        ("Matrix FLOPs (linear + causal attention)", u.integer(t["matrix_flops"]), u.flops(t["matrix_flops"])),
        ("Vector FLOPs", u.integer(t["vector_flops"]), u.flops(t["vector_flops"])),
        ("Bytes read: weights", u.integer(t["weight_bytes_read"]), u.nbytes(t["weight_bytes_read"])),
        ("Bytes read: activations", u.integer(t["act_bytes_read"]), u.nbytes(t["act_bytes_read"])),
        ("Bytes read: KV cache", u.integer(t["kv_bytes_read"]), u.nbytes(t["kv_bytes_read"])),
        ("Bytes written: activations", u.integer(t["act_bytes_written"]), u.nbytes(t["act_bytes_written"])),
        ("Bytes written: KV cache", u.integer(t["kv_bytes_written"]), u.nbytes(t["kv_bytes_written"])),
        ("KV bytes per token (all layers)", u.integer(t["kv_bytes_per_token"]), u.nbytes(t["kv_bytes_per_token"])),
        ("KV resident before the pass (batch)", u.integer(t["kv_bytes_resident_before"]), u.nbytes(t["kv_bytes_resident_before"])),
        ("KV resident after the pass (batch)", u.integer(t["kv_bytes_resident_after"]), u.nbytes(t["kv_bytes_resident_after"])),
        ("Roofline time (sum of operator bounds)", "", u.seconds(t["roofline_time_s"])),
        ("  of which compute-bound operators", "", u.seconds(t["compute_bound_time_s"])),
        (f"Ideal bound ({_bound_words(t['ideal_bound'])}: max of compute and unique bytes)", "", u.seconds(t["ideal_time_s"])),
        ("  compute at peak" + ("; vector FLOPs not counted (no published peak)"
                                if "vector compute unknown" in t["ideal_bound"] else ""),
         "", "unknown (no published peak)" if t["ideal_compute_time_s"] is None
         else u.seconds(t["ideal_compute_time_s"])),
        ("  unique bytes (weights + KV read + KV written) at bandwidth", u.integer(t["unique_bytes"]), u.seconds(t["ideal_memory_time_s"])),
    ]
    return [list(row) for row in exact]


def _bound_words(bound):
    """'memory' -> 'memory-bound'; 'memory; compute unknown' -> 'memory-bound; compute unknown'."""
    side, _, rest = bound.partition("; ")
    return f"{side}-bound" + (f"; {rest}" if rest else "")


def summary(rec):
    """The verdict block: the pass fits one device or not, its bound and its prediction."""
    from . import verdict as v

    t, mem = rec["totals"], rec.get("memory")
    fits = mem["fits"] if mem else True
    head = (v.memory_headline(fits, None, mem["needs_bytes"], mem["device_memory_bytes"])
            + f" ({mem['counted']})") if mem else "Pass"
    return v.block(head, [
        f"Pass time: {v.times(t['roofline_time_s'], t['ideal_time_s'], t.get('predicted_time_s'), fits)}"
        .replace(" estimate,", " operator sum,", 1).replace(" lower bound", " ideal bound", 1),
        f"Work: {u.flops(t['matrix_flops'])} matrix, {u.flops(t['vector_flops'])} vector; "
        f"{u.nbytes(t['unique_bytes'])} unique bytes ({_bound_words(t['ideal_bound'])})"])


def markdown(rec):
    m, d = rec["model"], rec["device"]
    parts = [f"# forward: {inline(m['id'])} on {inline(d['id'])}", "", *summary(rec), *header_lines(rec), "",
             "## Operators", "",
             ("Values are for ONE layer: one instance of each distinct block, not multiplied by x "
              "(x = number of layers that share it)." if rec.get("per_layer") else
              "Values are per pass, summed over the listed layers (x = number of layers).")
             + " " + EFFICIENCY_NOTE, "",
             markdown_table(["operator", "layers", "x", "shape", "matrix", "vector", "weights read",
                             "act read", "KV read", "written", "FLOP/B", "time", "bound", "predicted",
                             "bound / predicted"],
                            list(operator_rows(rec["operators"])), "llrlrrrrrrrrlrr"),
             "", "## Totals", "",
             markdown_table(["quantity", "exact", "human"],
                            totals_rows(rec["totals"]) + predicted_rows(rec["totals"], rec), "lrr"),
             *fp8_lines(rec.get("fp8_linears")),
             *tile_lines(rec.get("tile_padding")),
             *attn_res_lines(rec.get("attn_res")),
             *kda_lines(rec.get("kda")),
             *book_lines(rec),
             "", *conventions(rec["conventions"])]
    return "\n".join(parts)


def fp8_lines(f):
    """The `--fp8-tiles` section: one row per block-scaled FP8 linear, then the totals."""
    if not f:
        return []
    keys = ("valid_matrix_flops", "tile_matrix_flops", "scale_product_flops", "scale_accumulation_flops",
            "scale_flops", "padded_scale_flops")
    t = f["totals"]
    rows = [[inline(r["name"]), str(r["calls"]), "[{}, {}]".format(*r["weight_shape"]),
             *(f"{r[k]:,}" for k in keys)] for r in f["linears"]]
    rows.append(["**total**", str(t["calls"]), "", *(f"**{t[k]:,}**" for k in keys)])
    tile = "x".join(map(str, f["tile"]))
    return ["", f"## Block-scaled FP8 linears (tile {tile})", "",
            f"M = {f['rows']:,} rows ({f['tile_rows']:,} padded to the tile); weights "
            f"{t['weight_bytes']:,} B + scales {t['weight_scale_bytes']:,} B ({f['format']}).", "",
            markdown_table(["linear", "calls", "weight [N, K]", "valid FLOPs", "tile FLOPs", "scale products",
                            "scale accumulation", "scale FLOPs", "padded scale FLOPs"], rows, "lrlrrrrrr"),
            "", f"Convention: {f['convention']}."]


def attn_res_lines(a):
    """AttnRes models: the block stack held across the layers of the pass."""
    if not a:
        return []
    n, h = a["block_shape"]
    return ["", "## AttnRes block stack", "",
            f"{a['saved_blocks']} saved blocks x [{n:,}, {h:,}] {a['dtype']} = {a['block_stack_bytes']:,} B "
            f"({u.nbytes(a['block_stack_bytes'])}) ({a['counted']})."]


def book_lines(rec):
    """--scalar-count book: the book's count, per operator (as the table's rows) and for the pass."""
    b = rec.get("book_count")
    if not b:
        return []
    rows = [[inline(o["name"]), o["layers"], str(o["repeats"]), f"{o['book_scalar_flops']:,}",
             ", ".join(f"{k} {v:,}" for k, v in o["book_special_ops"].items()) or "-"]
            for o in rec["operators"] if o["book_scalar_flops"] or o["book_special_ops"]]
    rows.append(["**pass**", "", "", f"{b['scalar_flops']:,}",
                 ", ".join(f"{k} {v:,}" for k, v in b["special_ops"].items()) or "-"])
    st = b["stages"]
    fmt = lambda x: "unknown" if x is None else f"{x:.6g} s"
    return ["", "## The book's count (--scalar-count book)", "",
            markdown_table(["operator", "layers", "x", "scalar FLOPs", "special functions"], rows, "llrrl"), "",
            f"Interface bytes (materialized operands): {b['interface_bytes']:,}. Stages (input, "
            f"{len(st['layer_stage_s'])} layers, head), each the larger of matrix and scalar time: serial sum "
            f"{fmt(st['known_serial_stage_max_sum_s'])}; pooled: matrix {fmt(st['matrix_s'])}, scalar "
            f"{fmt(st['vector_s'])}, larger {fmt(st['known_global_max_s'])}"
            + (f" (no rate for: {', '.join(st['unknown_rates'])}; their work is left out)." if st["unknown_rates"] else ".")]


def kda_lines(k):
    """--kda-count recurrent-baseline: the KDA layers' figures as the book prints them."""
    if not k:
        return []
    rows = [["projection matrix FLOPs", f"{k['projection_matrix_flops']:,}"],
            ["recurrent and other scalar FLOPs", f"{k['recurrent_and_other_scalar_flops']:,}"],
            *[[f"  {inline(name)}", f"{v:,}"] for name, v in k["scalar_flops_by_operator"].items()],
            ["FP32 recurrent state (B)", f"{k['recurrent_state_fp32_bytes']:,} ({u.nbytes(k['recurrent_state_fp32_bytes'])})"],
            ["conv cache (B)", f"{k['conv_cache_bytes']:,}"]]
    return ["", f"## KDA layers ({k['layers']}), recurrent baseline", "",
            markdown_table(["quantity", "value"], rows, "lr")]


def tile_lines(f):
    """The `--tile` section: one row per distinct matrix product, then the totals."""
    if not f:
        return []
    keys = ("valid_matrix_flops", "rectangular_matrix_flops", "padded_matrix_flops")
    rows = [[inline(r["name"]), f"[{r['m']}, {r['k']}, {r['n']}]", f"{r['calls']:,}", *(f"{r[k]:,}" for k in keys)]
            for r in f["products"]]
    rows.append(["**total**", "", "", *(f"**{f['totals'][k]:,}**" for k in keys)])
    return ["", "## Tile padding (tile {})".format("x".join(map(str, f["tile"]))), "",
            markdown_table(["product", "[M, K, N]", "calls", "valid FLOPs", "rectangular FLOPs", "padded FLOPs"],
                           rows, "llrrrr"),
            "", f"Convention: {f['convention']}."]


def csv(rec):
    """One row per operator. With --per-layer the rows hold one layer instance, so the
    additive columns (FLOPs, bytes, times) are named `per_layer_...`: a consumer summing
    them must multiply by `repeats` (the markdown says so in a sentence; a CSV has only
    its header)."""
    ops = rec["operators"]
    if rec.get("per_layer"):
        ops = [{_per_layer_name(k): v for k, v in o.items()} for o in ops]
    return records_to_csv(ops)


def _per_layer_name(key):
    additive = key.endswith(("_flops", "_flops_rectangular", "_s")) or "_bytes_" in key
    return f"per_layer_{key}" if additive else key

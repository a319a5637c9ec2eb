"""Markdown and CSV for `validate` records."""

from .table import markdown_table, records_to_csv, conventions

CSV_COLUMNS = ("id", "kind", "model", "device", "devices", "formats", "input_len", "output_len",
               "global_batch", "seq_len",
               "measured", "unit", "bound", "ratio", "bound_kind", "concurrency", "status",
               "exemption", "not_evaluated", "family", "predicted", "predicted_error", "predicted_fit")


def _num(x, fmt="{:,.1f}"):
    return "-" if x is None else fmt.format(x)


def _lengths(r):
    if r["input_len"] is not None:
        return f"{r['input_len']:,}/{r['output_len']:,}"
    if r["seq_len"] is not None:
        return f"{r['global_batch']:,} x {r['seq_len']:,}"
    return "-"


def accuracy_rows(acc):
    def pct(x):
        return "-" if x is None else f"{x:+.1%}" if x < 0 else f"{x:.1%}"

    return [[a["family"], a["cases"], pct(a["median_abs_error"]), pct(a["p90_abs_error"]),
             pct(a["median_error"]), f"`{a['worst_case']}`" if a["worst_case"] else "-",
             pct(a["worst_error"]), a["worst_cause"] or "-"] for a in acc]


def recipe_lines(recipes):
    """Per training publisher, the recipe the prediction runs: what it overlaps, stated."""
    if not recipes:
        return []

    def on(x):
        return "on" if x else "off"

    rows = [[r["publisher"], r["zero"], on(r["overlap_dp"]), on(r["overlap_tp"]), on(r["overlap_ep"]),
             on(r["overlap_pp"]), r["recompute"], r["schedule"] or "1f1b / interleaved as the case's layout",
             r["recipe"]] for r in recipes]
    return ["## Training recipes the prediction runs, per publisher", "",
            "A case's own setup (its row's recompute, TP overlap, EP overlap, schedule) overrides its publisher's "
            "recipe; its assumptions say so.", "",
            markdown_table(["publisher", "ZeRO", "DP overlap", "TP overlap", "EP overlap", "PP sends overlap",
                            "recompute", "schedule", "the recipe"], rows, "lrlllllll"), ""]


def markdown(rec):
    rows = [[f"`{r['id']}`", r["model"], r["device"] + (f" x{r['devices']}" if r["devices"] != 1 else ""),
             r["formats"], _lengths(r),
             f"{_num(r['measured'])} {r['unit']}", _num(r["bound"]), _num(r["ratio"], "{:.3f}"),
             r["bound_kind"] or "-", r["status"], _num(r.get("predicted")),
             _num(r["predicted"] / r["measured"] if r.get("predicted") else None, "{:.2f}")] for r in rec["cases"]]
    spread = [[s["kind"], s["device"], s["formats"], s["cases"], f"{s['min_ratio']:.3f}", f"{s['median_ratio']:.3f}",
               f"{s['max_ratio']:.3f}"] for s in rec["spread"]]
    notes = [f"- `{r['id']}`: exempt: {r['exemption']}" for r in rec["cases"] if r["exemption"]]
    notes += [f"- `{r['id']}`: not evaluated: {r['not_evaluated']}" for r in rec["cases"] if r["not_evaluated"]]
    verdict = (f"**{len(rec['failures'])} case(s) exceed their bound:** "
               + ", ".join(f"`{i}`" for i in rec["failures"]) if rec["failures"] else
               "No measurement exceeds its bound.")
    parts = ["# validate: published measurements against our bounds", "",
             markdown_table(["case", "model", "device", "formats w/a/kv", "P/G (serving) or GBS x seq", "measured", "bound",
                             "measured / bound", "bound by", "status", "predicted", "predicted / measured"],
                            rows, "llllrrrrllrr"),
             "", verdict, *([""] + notes if notes else []), "",
             "## Accuracy of the predicted figure per family", "",
             markdown_table(["family", "cases", "median abs error", "p90 abs error", "median error",
                             "worst case", "its error", "what dominated it"], accuracy_rows(rec["accuracy"]),
                            "lrrrrlrl"), "",
             *recipe_lines(rec.get("training_recipes")),
             "## Efficiency spread per kind, device and format family", "",
             markdown_table(["kind", "device", "formats w/a/kv", "cases", "min", "median", "max"], spread, "lllrrrr")
             if spread else "No evaluated case.",
             "", "## Assumptions per case", ""]
    for r in rec["cases"]:
        parts += [f"- `{r['id']}` ({r['source']}):", *[f"  - {a}" for a in r["assumptions"]]]
    parts += ["", *conventions(rec["conventions"])]
    return "\n".join(parts)


def csv(rec):
    return records_to_csv([{k: r[k] for k in CSV_COLUMNS} for r in rec["cases"]], CSV_COLUMNS)

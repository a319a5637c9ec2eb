"""Markdown and CSV for `gemm` and `attention` records."""

from . import units as u
from .table import markdown_table, to_csv, conventions


def _inputs_line(rec):
    i = rec["inputs"]
    if rec["command"] == "gemm":
        return (f"- GEMM: [{i['m']},{i['k']}] x [{i['k']},{i['n']}] -> [{i['m']},{i['n']}]; input "
                f"{i['input_dtype']}, weight {i['weight_dtype']}, output {i['output_dtype']}; matrix work "
                f"computes at the {i['compute_dtype']} peak")
    gqa = f", {i['kv_heads']} KV heads" if i["kv_heads"] != i["heads"] else " (MHA)"
    mask = ("causal: the queries are the last of the keys, query p sees keys 0..p" if i["causal"]
            else "not causal: every query sees every key")
    return (f"- Attention core: batch {i['batch']}, {i['queries']} queries over {i['keys']} keys per request, "
            f"{i['heads']} heads x head dim {i['head_dim']}{gqa}; {mask}; Q and output {i['act_dtype']}, "
            f"K and V {i['kv_dtype']}; matrix work computes at the {i['act_dtype']} peak")


LABELS = {
    "gemm": (("weight_bytes_read", "bytes read: weight [K,N]"), ("act_bytes_read", "bytes read: input [M,K]"),
             ("act_bytes_written", "bytes written: output [M,N]")),
    "attention": (("act_bytes_read", "bytes read: Q"), ("kv_bytes_read", "bytes read: K and V"),
                  ("act_bytes_written", "bytes written: output")),
}


def _work_rows(w, command):
    rows = [["matrix FLOPs", u.integer(w["matrix_flops"]), u.flops(w["matrix_flops"])]]
    if w["matrix_flops_rectangular"] != w["matrix_flops"]:
        rows.append(["matrix FLOPs of an unmasked (rectangular) matmul", u.integer(w["matrix_flops_rectangular"]),
                     u.flops(w["matrix_flops_rectangular"])])
    if w["vector_flops"]:
        rows.append(["vector FLOPs (softmax)", u.integer(w["vector_flops"]), u.flops(w["vector_flops"])])
    for key, text in LABELS[command]:
        rows.append([text, u.integer(w[key]), u.nbytes(w[key])])
    rows.append(["bytes moved (total)", u.integer(w["bytes_moved"]), u.nbytes(w["bytes_moved"])])
    rows.append(["arithmetic intensity (FLOPs / bytes moved)", "", f"{w['arithmetic_intensity_flops_per_byte']:,.2f} FLOP/B"])
    return rows


def _yes(flag):
    return "yes" if flag else "no"


def _tile_section(t):
    """The tile view (analyses/tiles.py): one row per candidate, then the choice."""
    i = u.integer
    if t["kind"] == "gemm":
        head = ["tile MxKxN", "working B", "fits", "A read", "B read", "C write", "partials st+ld",
                "next-level B", "FLOP/B", "padded FLOPs"]
        rows = [["x".join(map(str, r["tile"])), i(r["working_bytes"]), _yes(r["fits"]), i(r["a_read_bytes"]),
                 i(r["b_read_bytes"]), i(r["c_write_bytes"]), i(r["partial_store_bytes"] + r["partial_load_bytes"]),
                 i(r["next_level_bytes"]), f"{r['arithmetic_intensity_flops_per_byte']:,.2f}",
                 i(r["padded_matrix_flops"])] for r in t["candidates"]]
        setup = f"schedule {t['schedule']}, {t['input_buffers']} input buffer(s)"
        best = ("none fits" if t["best_tile"] is None else
                f"{'x'.join(map(str, t['best_tile']))}, {i(t['best_next_level_bytes'])} B to the next level")
        align = "lrlrrrrrrr"
    else:
        head = ["KV block", "query block", "working B", "fits", "query blocks", "KV read", "interface B",
                "visited-tile FLOPs", "padded FLOPs", "row updates"]
        rows = [[i(r["kv_block"]), "-", "-", "no", "-", "-", "-", "-", "-", "-"] if r["query_block"] is None else
                [i(r["kv_block"]), i(r["query_block"]), i(r["working_bytes"]), _yes(r["fits"]), i(r["query_blocks"]),
                 i(r["kv_read_bytes"]), i(r["interface_bytes"]), i(r["visited_tile_matrix_flops"]),
                 i(r["padded_matrix_flops"]), i(r["row_state_updates"])] for r in t["candidates"]]
        setup = f"{t['kv_slots']} K/V slot(s), one query head of one request"
        best = ("none fits" if t["best_kv_block"] is None else
                f"KV block {i(t['best_kv_block'])}, {i(t['best_interface_bytes'])} B to the next level")
        align = "rrrlrrrrrr"
    return [f"## Tile candidates (capacity {i(t['capacity_bytes'])} B; {setup})", "",
            markdown_table(head, rows, align), "",
            f"- {t['fitting_candidates']} of {len(t['candidates'])} candidates fit; fewest next-level bytes: {best}",
            f"- Every operand read or written once: {i(t['one_read_write_bytes'])} B", ""]


def _device_rows(devices):
    for d in devices:
        ridge = d["ridge_point_flops_per_byte"]
        if d["time_s"] is None:   # no matrix unit for the compute format
            yield [f"`{d['id']}`", "-", u.rate_bytes(d["memory_bandwidth_bytes_per_s"]), "-", "-", "-", "-", d["bound"],
                   "-", "-"]
            continue
        pred = d.get("predicted_time_s")
        yield [f"`{d['id']}`", u.rate_flops(d["matrix_flops_per_s"]), u.rate_bytes(d["memory_bandwidth_bytes_per_s"]),
               "unknown" if ridge is None else f"{ridge:,.1f}",
               "unknown" if d["compute_time_s"] is None else u.seconds(d["compute_time_s"]),
               u.seconds(d["memory_time_s"]), u.seconds(d["time_s"]), d["bound"],
               "-" if pred is None else u.seconds(pred), u.ratio(d.get("predicted_efficiency"), 2)]


def markdown(rec):
    w, i = rec["work"], rec["inputs"]
    title = (f"gemm: [{i['m']},{i['k']}]x[{i['k']},{i['n']}]" if rec["command"] == "gemm"
             else f"attention: {i['queries']} queries x {i['keys']} keys x {i['heads']} heads")
    eff = f"- Efficiency: compute {i['compute_efficiency']}, memory {i['memory_efficiency']}"
    declared = [d["name"] for d in rec["devices"] if "(declared:" in d["name"]]
    if declared:
        eff += "\n" + "\n".join(f"- Device figures declared on the command line: {n}" for n in declared)
    ops = []
    if len(w["operators"]) > 1:
        ops = ["## Operators of the kernel", "",
                         markdown_table(["operator", "shape", "matrix FLOPs", "vector FLOPs", "bytes read",
                                         "bytes written"],
                                        [[o["name"], f"`{o['shape']}`", u.integer(o["matrix_flops"]),
                                          u.integer(o["vector_flops"]),
                                          u.integer(o["weight_bytes_read"] + o["act_bytes_read"] + o["kv_bytes_read"]),
                                          u.integer(o["act_bytes_written"])] for o in w["operators"]],
                                        "llrrrr"), ""]
    return "\n".join([
        f"# {title}", "", _inputs_line(rec), eff, "", "## Work", "",
        markdown_table(["quantity", "exact", "human"], _work_rows(w, rec["command"]), "lrr"), "", *ops,
        *(_tile_section(rec["tiles"]) if "tiles" in rec else ()),
        f"## Roofline per device (compute at {w['compute_dtype']}; intensity "
        f"{w['arithmetic_intensity_flops_per_byte']:,.2f} FLOP/B)", "",
        markdown_table(["device", "matrix peak", "bandwidth", "ridge FLOP/B", "compute", "memory", "time bound",
                        "bound", "predicted", "bound / predicted"], list(_device_rows(rec["devices"])), "lrrrrrrlrr"),
        "", "predicted: the kernel's rows at the device's achievable rates (a well-tuned kernel, not a bound: "
            "efficiency.predict); bound / predicted: the share of it the time bound explains.",
        "", *conventions(rec["conventions"])])


def csv(rec):
    w = rec["work"]
    header = ["device", "matrix_flops", "vector_flops", "bytes_moved", "arithmetic_intensity_flops_per_byte",
              "matrix_flops_per_s", "memory_bandwidth_bytes_per_s", "ridge_point_flops_per_byte",
              "compute_time_s", "memory_time_s", "time_s", "bound", "predicted_time_s", "predicted_efficiency"]
    rows = [[d["id"], w["matrix_flops"], w["vector_flops"], w["bytes_moved"],
             w["arithmetic_intensity_flops_per_byte"], d["matrix_flops_per_s"], d["memory_bandwidth_bytes_per_s"],
             d["ridge_point_flops_per_byte"], d["compute_time_s"], d["memory_time_s"], d["time_s"], d["bound"],
             d.get("predicted_time_s"), d.get("predicted_efficiency")]
            for d in rec["devices"]]
    return to_csv(header, rows)

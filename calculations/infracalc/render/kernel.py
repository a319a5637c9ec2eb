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


def _device_rows(devices):
    for d in devices:
        ridge = d["ridge_point_flops_per_byte"]
        if d["time_s"] is None:   # no matrix unit for the compute format
            yield [f"`{d['id']}`", "-", u.rate_bytes(d["memory_bandwidth_bytes_per_s"]), "-", "-", "-", "-", d["bound"]]
            continue
        yield [f"`{d['id']}`", u.rate_flops(d["matrix_flops_per_s"]), u.rate_bytes(d["memory_bandwidth_bytes_per_s"]),
               "unknown" if ridge is None else f"{ridge:,.1f}",
               "unknown" if d["compute_time_s"] is None else u.seconds(d["compute_time_s"]),
               u.seconds(d["memory_time_s"]), u.seconds(d["time_s"]), d["bound"]]


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
        f"## Roofline per device (compute at {w['compute_dtype']}; intensity "
        f"{w['arithmetic_intensity_flops_per_byte']:,.2f} FLOP/B)", "",
        markdown_table(["device", "matrix peak", "bandwidth", "ridge FLOP/B", "compute", "memory", "time bound",
                        "bound"], list(_device_rows(rec["devices"])), "lrrrrrrl"),
        "", *conventions(rec["conventions"])])


def csv(rec):
    w = rec["work"]
    header = ["device", "matrix_flops", "vector_flops", "bytes_moved", "arithmetic_intensity_flops_per_byte",
              "matrix_flops_per_s", "memory_bandwidth_bytes_per_s", "ridge_point_flops_per_byte",
              "compute_time_s", "memory_time_s", "time_s", "bound"]
    rows = [[d["id"], w["matrix_flops"], w["vector_flops"], w["bytes_moved"],
             w["arithmetic_intensity_flops_per_byte"], d["matrix_flops_per_s"], d["memory_bandwidth_bytes_per_s"],
             d["ridge_point_flops_per_byte"], d["compute_time_s"], d["memory_time_s"], d["time_s"], d["bound"]]
            for d in rec["devices"]]
    return to_csv(header, rows)

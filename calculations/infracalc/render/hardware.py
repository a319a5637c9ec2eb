"""Markdown and CSV for `hardware`."""

from . import units as u
from .table import markdown_table, to_csv

PEAK_COLUMNS = ("bf16", "fp16", "fp8", "int8", "fp4")
UP_FIELDS = ("topology", "links_per_device", "bytes_per_s_per_link", "wraparound_axis", "in_network_reduce",
             "in_network_efficiency", "in_network_alpha_s", "alpha_s")


def _tf(x):
    return "-" if x is None else f"{x / 1e12:,.1f}"


def _peak(table, key):
    """A peak cell: '-' when the device lacks the format, 'unknown' when it has it
    but no figure is published."""
    if key not in table:
        return "-"
    return "unknown" if table[key] is None else _tf(table[key])


def _ridge(table, key):
    if key not in table:
        return "-"
    return "unknown" if table[key] is None else f"{table[key]:,.1f}"


def _csv_value(x):
    return str(x).lower() if isinstance(x, bool) else x


def _us(x):
    return "-" if x is None else f"{x * 1e6:g}"


def _interconnect_rows(rec):
    rows = []
    for d in rec["devices"]:
        up, out = d["scale_up"], d["scale_out"]
        scale_out = ["-" if out is None or out["nics_per_device"] is None else out["nics_per_device"],
                     "-" if out is None else _us(out["alpha_s"])]
        if up is None:   # no scale-up link published
            rows.append([f"`{d['id']}`", "-", "-", "-", "-", *scale_out])
            continue
        links = "-" if up["links_per_device"] is None else (
            f"{up['links_per_device']}" + ("" if up["bytes_per_s_per_link"] is None
                                           else f" x {up['bytes_per_s_per_link'] / 1e9:g}"))
        wrap = f", wraps at {up['wraparound_axis']}" if up["wraparound_axis"] else ""
        reduce = "no" if not up["in_network_reduce"] else (
            f"yes (eff {up['in_network_efficiency']:g}, {_us(up['in_network_alpha_s'])} us)")
        rows.append([f"`{d['id']}`", (up["topology"] or "-") + wrap, links, _us(up["alpha_s"]), reduce,
                     *scale_out])
    return rows


def markdown(rec):
    rows = []
    for d in rec["devices"]:
        p = d["matrix_flops_per_s"]
        up, out = d["scale_up"], d["scale_out"]
        vec = "-" if d["vector_flops_per_s"] is None else f"{_tf(d['vector_flops_per_s'])} ({d['vector_peak_kind']})"
        rows.append([f"`{d['id']}`", d["name"], *[_peak(p, k) for k in PEAK_COLUMNS], vec,
                     f"{u.nbytes(d['memory_bytes'])} (label {d['memory_label_bytes'] / 1e9:,.1f} GB)",
                     f"{d['memory_bandwidth_bytes_per_s'] / 1e9:,.0f}",
                     "-" if up is None else f"{up['name']}: {up['bytes_per_s_per_direction'] / 1e9:,.1f} x{up['domain_size']}",
                     "-" if out is None else f"{out['bytes_per_s_per_direction'] / 1e9:,.2f}",
                     "-" if d["tdp_watts"] is None else d["tdp_watts"]])
    return "\n".join([
        "# Bundled devices", "",
        "Dense peaks (never 2:4 sparse) in TFLOP/s (10^12); memory: the capacity a server can allocate "
        "(driver-reported total where published, else the label's binary capacity) in GiB (2^30), "
        "and the vendor's label in GB (10^9); "
        "bandwidths in GB/s (10^9), links per direction. Every figure's source and how well it is "
        "verified: calculations/hardware/SOURCES.md and the `sources` object of each JSON file.", "",
        markdown_table(["id", "name", "BF16", "FP16", "FP8", "INT8", "FP4", "vector", "memory",
                        "HBM GB/s", "scale-up GB/s per dir x domain", "scale-out GB/s", "TDP W"],
                       rows, "llrrrrrrrrlrr"), "",
        "A blank (-) peak means the device has no such precision; `unknown` means it has it but "
        "no figure is published. Work with no published peak is not charged compute time: its "
        "bound is memory-bound with the compute side stated as unknown (never a stand-in peak). "
        "TPUs publish no vector peak, so their vector compute time is unknown.", "",
        "## Ridge points", "",
        "Ridge point = dense matrix peak / memory bandwidth, in FLOP per byte: a kernel whose "
        "arithmetic intensity (FLOPs / bytes moved) is above it is compute-bound at that format's "
        "peak, below it memory-bound.", "",
        markdown_table(["id", "BF16", "FP16", "FP8", "INT8", "FP4"],
                       [[f"`{d['id']}`", *[_ridge(d["ridge_point_flops_per_byte"], k) for k in PEAK_COLUMNS]]
                        for d in rec["devices"]], "lrrrrr"), "",
        "## Interconnect", "",
        "Scale-up topology (switch, mesh or torus; a torus axis wraps around at multiples of the "
        "stated length), links per device x GB/s per link per direction, per-step latency alpha "
        "(NCCL's LL-protocol figures for NVIDIA, about 1 us per ICI hop for TPUs), in-network "
        "all-reduce (NVLS: NCCL's efficiency and latency), scale-out NICs per device and alpha. "
        "A dash: not published (the communication model then states the default it uses).", "",
        markdown_table(["id", "scale-up topology", "links x GB/s", "alpha up us", "in-network reduce",
                        "NICs", "alpha out us"], _interconnect_rows(rec), "llrrlrr"), ""])


def _peak_cell(peaks, fmt):
    """A format's peak as a CSV cell: empty when the device lacks the format, `unknown`
    when it has it but no figure is published (JSON: the key absent / null; Markdown:
    `-` / `unknown`)."""
    if fmt not in peaks:
        return None
    return "unknown" if peaks[fmt] is None else peaks[fmt]


def csv(rec):
    header = ["id", "name", *[f"{k}_flops_per_s" for k in PEAK_COLUMNS],
              *[f"{k}_ridge_point_flops_per_byte" for k in PEAK_COLUMNS], "vector_flops_per_s",
              "memory_bytes", "memory_label_bytes", "memory_bandwidth_bytes_per_s", "scale_up_bytes_per_s_per_direction",
              "scale_up_domain_size", "scale_out_bytes_per_s_per_direction", "tdp_watts",
              "scale_up_topology", "scale_up_links_per_device", "scale_up_bytes_per_s_per_link",
              "scale_up_wraparound_axis", "scale_up_in_network_reduce", "scale_up_in_network_efficiency",
              "scale_up_in_network_alpha_s", "scale_up_alpha_s", "scale_out_nics_per_device",
              "scale_out_alpha_s"]
    rows = [[d["id"], d["name"], *[_peak_cell(d["matrix_flops_per_s"], k) for k in PEAK_COLUMNS],
             *[_peak_cell(d["ridge_point_flops_per_byte"], k) for k in PEAK_COLUMNS],
             d["vector_flops_per_s"], d["memory_bytes"], d["memory_label_bytes"], d["memory_bandwidth_bytes_per_s"],
             d["scale_up"] and d["scale_up"]["bytes_per_s_per_direction"],
             d["scale_up"] and d["scale_up"]["domain_size"],
             d["scale_out"] and d["scale_out"]["bytes_per_s_per_direction"], d["tdp_watts"],
             *[_csv_value(d["scale_up"][k]) if d["scale_up"] else None for k in UP_FIELDS],
             d["scale_out"] and d["scale_out"]["nics_per_device"], d["scale_out"] and d["scale_out"]["alpha_s"]]
            for d in rec["devices"]]
    return to_csv(header, rows)

"""Markdown and CSV for `collective`."""

from . import units as u
from .parallel import links_lines
from .table import markdown_table, to_csv

CSV_COLUMNS = ("bytes", "algorithm", "time_s", "algbw_bytes_per_s", "busbw_bytes_per_s", "estimate", "bound",
               "predicted")


def _mark(row):
    return "bound" if row["bound"] else ("estimate" if row["estimate"] else
                                         ("predicted" if row.get("predicted") else ""))


def markdown(rec):
    i = rec["inputs"]
    where = ("one scale-up domain" if i["tier"] == "up" else
             f"{i['nodes']} nodes of {i['ranks_per_node']} ranks (scale-out)")
    rows = [[u.integer(r["bytes"]), r["algorithm"], u.seconds(r["time_s"]),
             f"{r['algbw_bytes_per_s'] / 1e9:,.2f}", f"{r['busbw_bytes_per_s'] / 1e9:,.2f}", _mark(r)]
            for r in rec["rows"]]
    lines = [f"# collective: {i['operation']} over {i['ranks']} ranks on {rec['device']['id']} ({where})", "",
             *links_lines(rec["links"]),
             *([f"- EP all-to-all of {i['experts']} experts, top-{i['top_k']}: the bound lets a node-deduplicating "
                f"dispatch send {i['nic_share']:.4f} of the per-copy NIC bytes (collectives.node_share)"]
               if i["experts"] else []), "",
             markdown_table(["size (B)", "algorithm", "time", "algbw (GB/s)", "busbw (GB/s)", "picked by"], rows,
                            "rlrrrl"),
             *_reconfiguration(rec),
             "", "## Conventions", ""] + [f"- {c}" for c in rec["conventions"]]
    return "\n".join(lines) + "\n"


def _reconfiguration(rec):
    if "reconfiguration" not in rec:
        return []
    rows = [[u.integer(r["bytes"]), r["algorithm"], u.seconds(r["before_s"]), u.seconds(r["after_s"]),
             u.seconds(r["saving_s"]), u.seconds(r["setup_s"]),
             "none" if r["payback_calls"] is None else u.integer(r["payback_calls"]),
             "" if r["wins_within_calls"] is None else f"{'yes' if r['wins_within_calls'] else 'no'} "
             f"({u.integer(r['calls'])} calls)"] for r in rec["reconfiguration"]]
    return ["", "## Reconfiguration", "",
            markdown_table(["size (B)", "algorithm", "before", "after", "saving per call", "setup",
                            "strict payback calls", "wins in lifetime"], rows, "rlrrrrrl")]


def csv(rec):
    return to_csv(CSV_COLUMNS, [[r[k] for k in CSV_COLUMNS] for r in rec["rows"]])


RING_COLUMNS = ("bytes", "pattern", "round", "message_bytes", "messages", "hops", "physical_link_bytes",
                "peak_link_messages", "peak_link_bytes", "round_lower_bound_s")


def ring_markdown(rec):
    i = rec["inputs"]
    lines = [f"# collective: {i['operation']} over a {i['ranks']}-node bidirectional ring, first {i['rounds']} "
             f"round(s), physical paths", "",
             f"- each directed ring link: {i['link_bw_bytes_per_s'] / 1e9:,.3f} GB/s (declared)"]
    for block in rec["sizes"]:
        rows = []
        for p in block["patterns"]:
            for r in p["rounds"]:
                rows.append([p["pattern"], str(r["round"]), u.integer(r["message_bytes"]), str(r["messages"]),
                             ",".join(map(str, r["hops"])), u.integer(r["physical_link_bytes"]),
                             str(r["peak_link_messages"]), u.integer(r["peak_link_bytes"]),
                             u.seconds(r["round_lower_bound_s"])])
        totals = [[p["pattern"], str(p["messages"]), u.integer(p["injected_bytes"]),
                   u.integer(p["physical_link_bytes"]), u.seconds(p["barrier_lower_bound_s"]),
                   u.seconds(p["aggregate_lower_bound_s"])] for p in block["patterns"]]
        lines += ["", f"## S = {u.integer(block['bytes'])} B per rank: {block['messages']} messages enumerated", "",
                  markdown_table(["pattern", "round", "message (B)", "messages", "hops", "physical link B",
                                  "busiest link msgs", "busiest link B", "round bound"], rows, "lrrrrrrrr"),
                  "", markdown_table(["pattern", "messages", "injected B", "physical link B",
                                      "sum of round bounds", "aggregate bound"], totals, "lrrrrr")]
    lines += ["", "## Conventions", ""] + [f"- {c}" for c in rec["conventions"]]
    return "\n".join(lines) + "\n"


def ring_csv(rec):
    out = []
    for block in rec["sizes"]:
        for p in block["patterns"]:
            for r in p["rounds"]:
                out.append([block["bytes"], p["pattern"], r["round"], r["message_bytes"], r["messages"],
                            " ".join(map(str, r["hops"])), r["physical_link_bytes"], r["peak_link_messages"],
                            r["peak_link_bytes"], r["round_lower_bound_s"]])
    return to_csv(RING_COLUMNS, out)

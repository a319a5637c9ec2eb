"""Markdown and CSV for `collective`."""

from . import units as u
from .parallel import links_lines
from .table import markdown_table, to_csv

CSV_COLUMNS = ("bytes", "algorithm", "time_s", "algbw_bytes_per_s", "busbw_bytes_per_s", "estimate", "bound")


def _mark(row):
    return "bound" if row["bound"] else ("estimate" if row["estimate"] else "")


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
             "", "## Conventions", ""] + [f"- {c}" for c in rec["conventions"]]
    return "\n".join(lines) + "\n"


def csv(rec):
    return to_csv(CSV_COLUMNS, [[r[k] for k in CSV_COLUMNS] for r in rec["rows"]])

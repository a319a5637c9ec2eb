"""Markdown and CSV for `models`."""

from . import units as u
from .table import inline, markdown_table, records_to_csv


def _heads(m):
    if m.get("heads") is None:
        return "-"
    return f"{m['heads']} / {m['kv_heads'] if m['kv_heads'] is not None else '-'} / {m['head_dim'] if m['head_dim'] is not None else '-'}"


_FORMATS = ("bf16", "fp8", "int8-g128", "int4-g128")


def listing_markdown(rec):
    rows = []
    for m in rec["models"]:
        if "error" in m:
            rows.append([f"`{inline(m['id'])}`", "-", "-", "-", "-", f"not modelled: {m['error']}", "-", "-", "-", "-"])
            continue
        active = u.integer(m["active_params"]) if m["active_params"] != m["params"] else "="
        rows.append([f"`{inline(m['id'])}`", m["model_type"], m["layers"], m["hidden_size"], _heads(m),
                     m["attention"], u.integer(m["params"]), active,
                     u.integer(m["kv_bytes_per_token_bf16"])
                     + (f" + {u.integer(m['state_bytes_per_request'])} state/request"
                        if m.get("state_bytes_per_request") else ""),
                     u.integer(m["max_context"])])
    return "\n".join([
        "# Bundled models", "",
        "Parameters are exact counts of the checkpoint tensors (tied embeddings once). "
        "KV bytes per token: all layers' cache for one token at bf16 "
        "(windowed layers hold at most W tokens; see `kv`).", "",
        markdown_table(["id", "model_type", "layers", "hidden", "heads / KV heads / head dim",
                        "attention", "params", "active params", "KV B/token (bf16)", "max context"],
                       rows, "llrrllrrrr"), "",
        "## Weight bytes per format", "",
        "Every tensor in the format (linear layers' matrices; embedding, head and 1-D tensors stay "
        "bf16 under the 8- and 4-bit formats, whose scales are included).", "",
        markdown_table(["id", *_FORMATS],
                       [[f"`{inline(m['id'])}`", *(u.nbytes(m["weight_bytes"][f]) for f in _FORMATS)]
                        for m in rec["models"] if "weight_bytes" in m], "lrrrr"), ""])


def detail_markdown(rec):
    m, s = rec["model"], rec["summary"]
    lines = [f"# Model `{inline(m['id'])}` ({m['model_type']})", "",
             f"- Parameters: {u.integer(m['params'])}"
             + (f" (active per token: {u.integer(m['active_params'])})" if m["active_params"] != m["params"] else ""),
             f"- Layers: {m['layers']}, hidden {m['hidden_size']}, vocabulary {m['vocab_size']}, "
             f"max context {u.integer(m['max_context'])}",
             f"- Attention: {m['attention']}; KV cache {u.integer(s['kv_bytes_per_token_bf16'])} bytes per token at bf16"
             + (f", plus a fixed state of {u.integer(s['state_bytes_per_request'])} bytes per request "
                "(recurrent layers; does not grow with context)" if s.get("state_bytes_per_request") else ""),
             f"- Embeddings: {'tied (counted once)' if m['tied_embeddings'] else 'untied'}"]
    for p in m.get("parts_not_counted", []):
        stored = (f" ({u.integer(p['checkpoint_bytes'])} checkpoint bytes)" if p.get("checkpoint_bytes") else "")
        lines.append(f"- Not counted: {p['name']}, {u.integer(p['params'])} params{stored}: {p['note']}")
    for note in m.get("notes", []):
        lines.append(f"- Note: {note}")
    lines += ["", "## Layers", "",
              markdown_table(["layers", "count", "blocks", "params / layer", "active / layer", "KV B/token (bf16)"],
                             [[g["layers"], g["count"], "; ".join(g["blocks"]),
                               u.integer(g["params_per_layer"]), u.integer(g["active_params_per_layer"]),
                               u.integer(g["kv_bytes_per_token_bf16"])] for g in rec["layer_groups"]],
                             "lrlrrr"),
              "", "## Tensors", "",
              markdown_table(["tensor", "shape", "role", "params each", "copies", "params"],
                             [[f"`{t['tensor']}`", "x".join(map(str, t["shape"])), t["role"],
                               u.integer(t["params_each"]), t["copies"], u.integer(t["params"])]
                              for t in rec["tensors"]], "lllrrr"),
              "", f"Total: {u.integer(sum(t['params'] for t in rec['tensors']))} parameters.", ""]
    return "\n".join(lines)


def listing_csv(rec):
    return records_to_csv(rec["models"])


def detail_csv(rec):
    rows = [dict(t, shape="x".join(map(str, t["shape"]))) for t in rec["tensors"]]
    return records_to_csv(rows)


TYPES_HEADER = ("Every model_type the loader accepts, the adapter that builds it, and the bundled "
                "configs of that type: our exact parameter count, and the published checkpoint total "
                "where calculations/models/published-counts.csv records one (\"= published\": equal, "
                "with the parts reported apart (vision tower, MTP module) added where the published "
                "total includes them; asserted by tests/test_model_types.py).")


def _example(e):
    if e["checked"] and e["relation"] == "with_parts":
        mark = f" + {u.integer(e['parts_params'])} apart (= published {u.integer(e['published_params'])})"
    elif e["checked"]:
        mark = " (= published)"
    elif e["published_params"] is not None:
        mark = f" (published {u.integer(e['published_params'])}: differs, see SOURCES.md)"
    else:
        mark = ""
    return f"`{inline(e['id'])}` {u.integer(e['params'])}{mark}"


def types_table(rec):
    """The markdown table of `models --types` (also kept in docs/models.md)."""
    return markdown_table(["model_type", "adapter", "bundled configs: params"],
                          [[f"`{r['model_type']}`", f"`{r['adapter']}`",
                            "; ".join(_example(e) for e in r["examples"]) or "-"] for r in rec["model_types"]],
                          "lll")


def types_markdown(rec):
    n = len(rec["model_types"])
    return "\n".join(["# Supported model types", "", f"{n} model_types. " + TYPES_HEADER, "",
                      types_table(rec), ""])


def types_csv(rec):
    columns = ["model_type", "adapter", "id", "params", "parts_params", "published_params", "relation", "checked"]
    rows = [{"model_type": r["model_type"], "adapter": r["adapter"], **{k: e.get(k) for k in columns[2:]}}
            for r in rec["model_types"] for e in (r["examples"] or [{}])]
    return records_to_csv(rows, columns)

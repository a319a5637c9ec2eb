"""`models --types`: every supported model_type, its adapter, and the bundled
configs of that type with their parameter counts checked against the
published totals of calculations/models/published-counts.csv."""

import csv
import os

from .records import SCHEMA_VERSION

PUBLISHED_FILE = "published-counts.csv"


def published_counts(models_dir):
    """{id: (published params, relation, source)} from the bundled published-counts table;
    relation "total": our count must equal it; "with_parts": our count plus the parts
    reported apart (vision tower, MTP module) must equal it; "differs": it counts more
    (stored duplicates, scales), explained in SOURCES.md."""
    with open(os.path.join(models_dir, PUBLISHED_FILE), encoding="utf-8", newline="") as f:
        return {row["id"]: (int(row["published_params"]), row["relation"], row["source"])
                for row in csv.DictReader(f)}


def type_rows(families, adapter_name, bundled, load, published):
    """One row per supported model_type (sorted): the adapter function's dotted
    name and the bundled examples of that type, each with our count, the
    published total where one is recorded, and whether they are equal."""
    by_type = {}
    for model_id, model_type in bundled:
        by_type.setdefault(model_type, []).append(model_id)
    rows = []
    for model_type in sorted(families, key=str.lower):
        examples = []
        for model_id in by_type.get(model_type, []):
            arch = load(model_id)
            official, relation, _ = published.get(model_id, (None, "", ""))
            parts = sum(p.params or 0 for p in arch.parts)
            checked = (relation == "total" and official == arch.params) or (
                relation == "with_parts" and official == arch.params + parts)
            examples.append({"id": model_id, "params": arch.params, "parts_params": parts,
                             "published_params": official, "relation": relation, "checked": checked})
        rows.append({"model_type": model_type, "adapter": adapter_name(model_type), "examples": examples})
    return rows


def listing(families, adapter_name, bundled, load, published):
    return {"schema_version": SCHEMA_VERSION, "command": "models",
            "model_types": type_rows(families, adapter_name, bundled, load, published)}

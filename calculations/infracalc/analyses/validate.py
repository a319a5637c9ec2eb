"""`validate`: published measurements against our bounds (calculations/validation/*.json).

Each case file records one published measurement: its source, the setup as
published, the measured figure with its unit, the assumptions the case had to
make, and an optional reasoned exemption (schema: calculations/validation/SOURCES.md).
For every case we compute our bound for the same setup and the ratio
measured / bound, an efficiency that a bound keeps at or below 1:

- serving-throughput (one device): the serving-throughput bound of
  analyses/serving (steady-state concurrency, joint max(compute, memory) per
  request over the stream) on the device's physical capacity with no reserve
  beyond the weights and caches, at efficiency 1.0: the most any server could do.

Kinds and layouts the tool cannot evaluate yet (multi-device serving before
`parallel`, training steps before `train`) are listed as not evaluated, with
the reason; they never count as passing or failing.
"""

import os

from ..errors import UserError
from ..paths import data_dir
from .records import SCHEMA_VERSION

VALIDATION_DIR = data_dir("validation")

KINDS = ("serving-throughput", "serving-latency", "training-step")
THROUGHPUT_UNITS = {"output_tokens_per_s": "output_tokens_per_s",
                    "total_tokens_per_s": "total_tokens_per_s",
                    "requests_per_s": "requests_per_s"}
REQUIRED = ("id", "kind", "source", "setup", "measured", "assumptions", "exemption")
_COMMON = ("model", "device", "devices", "weight_dtype", "act_dtype", "scenario")
SETUP_REQUIRED = {   # per kind (calculations/validation/SOURCES.md, schema v1 + training-step)
    "serving-throughput": _COMMON + ("kv_dtype", "input_len", "output_len"),
    "serving-latency": _COMMON + ("kv_dtype", "input_len", "output_len"),
    "training-step": _COMMON + ("layout", "global_batch", "micro_batch", "seq_len"),
}

CONVENTIONS = (
    "Ratio = measured / bound, an efficiency: a bound is never beaten, so every ratio is at most "
    "1 unless the case carries a reasoned exemption (printed with it).",
    "Serving-throughput cases (one device): the bound of `decode`'s serving section for the "
    "published model, device, formats and lengths, on the device's physical (allocatable) "
    "capacity with no workspace reserve (the most memory any server could give the cache; a "
    "case may set setup.reserve_bytes), at the dense vendor peaks (efficiency 1.0).",
    "Spread: per device and format family (weights/activations/KV), the smallest, median and "
    "largest efficiency of its evaluated cases.",
)


def case_paths(directory=VALIDATION_DIR):
    return sorted(os.path.join(directory, f) for f in os.listdir(directory)
                  if f.endswith(".json") and not f.endswith(".config.json"))


def load_case(path):
    """A case file -> dict, its required fields checked (UserError naming the field)."""
    from ..load.models import read_json

    data = read_json(path)
    name = os.path.basename(path)
    if not isinstance(data, dict):
        raise UserError(f"{name}: a validation case must be a JSON object")
    for key in REQUIRED:
        if key not in data:
            raise UserError(f"{name}: missing required field '{key}'")
    if data["id"] + ".json" != name:
        raise UserError(f"{name}: id '{data['id']}' must equal the file name without .json")
    if data["kind"] not in KINDS:
        from ..errors import unknown
        raise UserError(f"{name}: {unknown('kind', data['kind'], KINDS)}")
    setup, measured = data["setup"], data["measured"]
    for key in SETUP_REQUIRED[data["kind"]]:
        if not isinstance(setup, dict) or key not in setup:
            raise UserError(f"{name}: missing required field 'setup.{key}'")
    value = measured.get("value") if isinstance(measured, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise UserError(f"{name}: 'measured.value' must be a positive number")
    if not isinstance(data["assumptions"], list):
        raise UserError(f"{name}: 'assumptions' must be a list of strings")
    ex = data["exemption"]
    if ex is not None and not (isinstance(ex, dict) and isinstance(ex.get("reason"), str)
                               and ex["reason"].strip()):
        raise UserError(f"{name}: 'exemption' must be null or {{\"reason\": \"...\"}} with a reason")
    data["_dir"] = os.path.dirname(path)
    return data


def _model(case):
    from ..load.models import load_model

    spec = case["setup"]["model"]
    if spec.endswith(".json"):
        spec = os.path.join(case["_dir"], spec)
    return load_model(spec)


def _not_evaluated(case):
    """Why the tool cannot evaluate a case yet, or None."""
    s = case["setup"]
    if case["kind"] != "serving-throughput":
        return f"kind {case['kind']} is not evaluated yet (serving-throughput only)"
    if s["devices"] != 1:
        return f"{s['devices']} devices: multi-device serving is evaluated once `parallel` lands"
    if case["measured"].get("unit") not in THROUGHPUT_UNITS:
        return (f"unit {case['measured'].get('unit')!r} is not a throughput "
                f"({', '.join(THROUGHPUT_UNITS)})")
    return None


def serving_case(case):
    """Our serving-throughput bound for the case's setup: the `serving` record."""
    from types import SimpleNamespace

    from ..cli.common import workload
    from ..load.hardware import load_device
    from .decode import decode_path
    from .memory import cache_room
    from .mla_path import for_pass
    from .roofline import roof
    from .serving import serving_bound

    s = case["setup"]
    arch = _model(case)
    device = load_device(s["device"])
    args = SimpleNamespace(weight_dtype=s["weight_dtype"], act_dtype=s["act_dtype"],
                           kv_dtype=s["kv_dtype"], routing=s.get("routing", "uniform"),
                           mla=s.get("mla", "auto"))
    w = workload(args, arch, 1, 1, 0)
    room = cache_room(device.memory_bytes, arch.weight_bytes(w), s.get("reserve_bytes", 0))
    r = roof(device, w.compute_dtype)
    wp, _ = for_pass(arch, w.replace(tokens=s["input_len"]), r)
    ws = decode_path(arch, w, s["input_len"], s["input_len"] + s["output_len"] - 2, r)[0]
    return arch, device, serving_bound(arch, ws, r, s["input_len"], s["output_len"], room, wp)


def evaluate(case):
    """One output row: measured, bound, ratio (or why it is not evaluated)."""
    s, m = case["setup"], case["measured"]
    row = {
        "id": case["id"], "kind": case["kind"], "model": s["model"], "device": s["device"],
        "devices": s["devices"],
        "formats": f"{s['weight_dtype']}/{s['act_dtype']}/{s.get('kv_dtype', '-')}",
        "input_len": s.get("input_len"), "output_len": s.get("output_len"),
        "measured": m["value"], "unit": m.get("unit"),
        "bound": None, "ratio": None, "bound_kind": None, "concurrency": None,
        "status": None, "source": case["source"].get("title", "") if isinstance(case["source"], dict) else "",
        "assumptions": list(case["assumptions"]),
        "exemption": case["exemption"]["reason"] if case["exemption"] else None,
        "not_evaluated": _not_evaluated(case),
    }
    if row["not_evaluated"]:
        row["status"] = "not evaluated"
        return row
    _, _, sv = serving_case(case)
    best = sv["steady_state"]
    if best is None:
        row["status"] = "not evaluated"
        row["not_evaluated"] = "the weights alone exceed the device memory: no bound on one device"
        return row
    bound = best[THROUGHPUT_UNITS[m["unit"]]]
    row.update(bound=bound, ratio=m["value"] / bound, bound_kind=best["bound"],
               concurrency=sv["steady_state_concurrency"])
    row["status"] = ("ok" if row["ratio"] <= 1 else
                     "exempt" if row["exemption"] else "EXCEEDS BOUND")
    return row


def spread(rows):
    """Per (device, formats): cases, min, median, max efficiency of evaluated rows."""
    groups = {}
    for r in rows:
        if r["ratio"] is not None:
            groups.setdefault((r["device"], r["formats"]), []).append(r["ratio"])
    out = []
    for (device, formats), ratios in sorted(groups.items()):
        ratios.sort()
        n = len(ratios)
        median = ratios[n // 2] if n % 2 else (ratios[n // 2 - 1] + ratios[n // 2]) / 2
        out.append({"device": device, "formats": formats, "cases": n, "min_ratio": ratios[0],
                    "median_ratio": median, "max_ratio": ratios[-1]})
    return out


def validate(case_id=None, directory=VALIDATION_DIR):
    """The `validate` record over every case (or one)."""
    paths = case_paths(directory)
    if case_id is not None:
        ids = [os.path.basename(p)[:-5] for p in paths]
        if case_id not in ids:
            from ..errors import unknown
            raise unknown("validation case", case_id, ids)
        paths = [p for p in paths if os.path.basename(p)[:-5] == case_id]
    rows = [evaluate(load_case(p)) for p in paths]
    failures = [r["id"] for r in rows if r["status"] == "EXCEEDS BOUND"]
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "validate",
        "inputs": {"case": case_id},
        "cases": rows,
        "spread": spread(rows),
        "failures": failures,
        "conventions": list(CONVENTIONS),
    }

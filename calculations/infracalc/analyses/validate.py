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

- serving-throughput (several devices): `parallel`'s serving bound for the
  published layout (analyses/parallel.serving_record): every pipeline stage's
  shard through the same serving bound on its device's memory beside its
  weights (no reserve), the replica bounded by its slowest stage, dp replicas
  adding up, communication not charged (hidden entirely: the most any layout
  could do). Compared with the whole run's figure.
- training-step: the lower bound on the step time of analyses/train_time
  (`step_lower_bound`: the mean device's share of the model FLOPs at the dense
  peak of the compute format, or its unavoidable weight and optimizer bytes at
  the memory bandwidth, whichever is longer; communication hidden, no bubble)
  for the published model, devices, layout, global batch and sequence. A
  throughput (tokens/s per device) is compared as measured / bound; a step time
  as bound / measured, the same efficiency.

- collective: one published collective measurement (nccl-tests, DeepEP) against
  `comm.lower_bound_s` for the same operation, size, ranks and ranks per node on the
  device's links (with the case's NIC figure where the cluster's differs from the device
  file's): bound time / measured time, or measured busbw / the bound's busbw (the same
  ratio), at most 1.

Kinds and layouts the tool cannot evaluate yet are listed as not evaluated,
with the reason; they never count as passing or failing.
"""

import os

from ..errors import UserError
from ..paths import data_dir
from .records import SCHEMA_VERSION

VALIDATION_DIR = data_dir("validation")

KINDS = ("serving-throughput", "serving-latency", "training-step", "collective")
COLLECTIVE_UNITS = ("time_us", "busbw_GB_per_s")
THROUGHPUT_UNITS = {"output_tokens_per_s": "output_tokens_per_s",
                    "total_tokens_per_s": "total_tokens_per_s",
                    "requests_per_s": "requests_per_s"}
TRAINING_UNITS = ("tokens_per_s_per_device", "step_time_s", "megatron_eq3_flops_per_s_per_device")
REQUIRED = ("id", "kind", "source", "setup", "measured", "assumptions", "exemption")
_COMMON = ("model", "device", "devices", "weight_dtype", "act_dtype", "scenario")
SETUP_REQUIRED = {   # per kind (calculations/validation/SOURCES.md, schema v1 + training-step)
    "serving-throughput": _COMMON + ("kv_dtype", "input_len", "output_len"),
    "serving-latency": _COMMON + ("kv_dtype", "input_len", "output_len"),
    "training-step": _COMMON + ("layout", "global_batch", "micro_batch", "seq_len"),
    "collective": ("device", "devices", "ranks_per_node", "operation", "bytes", "scenario"),
}

CONVENTIONS = (
    "Ratio = measured / bound, an efficiency: a bound is never beaten, so every ratio is at most "
    "1 unless the case carries a reasoned exemption (printed with it).",
    "Serving-throughput cases (one device): the bound of `decode`'s serving section for the "
    "published model, device, formats and lengths, on the device's physical (allocatable) "
    "capacity with no workspace reserve (the most memory any server could give the cache; a "
    "case may set setup.reserve_bytes), at the dense vendor peaks (efficiency 1.0).",
    "Serving-throughput cases on several devices: `parallel`'s serving bound for the published "
    "layout (each pipeline stage's shard through the same bound on its device's memory beside its "
    "weights, no reserve; the replica bounded by its slowest stage; dp replicas add up), with no "
    "communication charged (hidden entirely), against the whole run's measured figure.",
    "Training-step cases: `train`'s lower bound on the step time (the mean device's share of "
    "the model FLOPs, 3x the forward matrix FLOPs with causal attention halved, at the dense "
    "matrix peak of the compute format; or its weights read in every forward and backward plus "
    "the optimizer update of its share of the parameters at the memory bandwidth, whichever is "
    "longer; communication fully hidden, no pipeline bubble, vector FLOPs free, recompute not "
    "counted) for the published model, devices, layout, global batch and sequence; optimizer "
    "AdamW with fp32 master, momentum and variance and 2-byte gradients unless the case says "
    "otherwise (fewer bytes only lower the bound). Tokens/s per device and Megatron-LM's eq. 3 "
    "FLOP/s per device are compared as measured / bound, a step time as bound / measured.",
    "Collective cases: comm.lower_bound_s (the fastest applicable algorithm, and for a group spanning "
    "nodes no faster than a node's bytes through its NICs and a rank's through all its links; "
    "docs/communication.md) for the published operation, message size S (nccl-tests' convention), ranks "
    "and ranks per node on the device's links, the NIC figure of the published cluster where the case "
    "gives one (setup.link_bw_out_bytes_per_s, per device per direction), never above the device's PCIe "
    "host link (a rank's NIC traffic crosses it); a time is compared as bound / "
    "measured, a bus bandwidth (nccl-tests' busbw) as measured / the bound's busbw.",
    "Spread: per kind (one-device and multi-device serving apart), device and format family (weights/activations/KV), the smallest, median and "
    "largest efficiency of its evaluated cases.",
)


def case_paths(directory=VALIDATION_DIR):
    return sorted(os.path.join(directory, f) for f in os.listdir(directory)
                  if f.endswith(".json") and not f.endswith(".config.json"))


def load_case(path):
    """A case file -> dict, checked against the case schema (analyses/case_schema;
    UserError naming the file and the field)."""
    from ..load.models import read_json
    from .case_schema import check

    data = read_json(path)
    check(data, os.path.basename(path), os.path.dirname(path), KINDS, SETUP_REQUIRED)
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
    if case["kind"] == "training-step":
        if case["measured"].get("unit") not in TRAINING_UNITS:
            return (f"unit {case['measured'].get('unit')!r} has no training bound "
                    f"({', '.join(TRAINING_UNITS)})")
        return None
    if case["kind"] == "collective":
        unit = case["measured"].get("unit")
        return None if unit in COLLECTIVE_UNITS else f"unit {unit!r} is not one of {', '.join(COLLECTIVE_UNITS)}"
    if case["kind"] != "serving-throughput":
        return f"kind {case['kind']} is not evaluated yet (serving-throughput only)"
    if case["measured"].get("unit") not in THROUGHPUT_UNITS:
        return (f"unit {case['measured'].get('unit')!r} is not a throughput "
                f"({', '.join(THROUGHPUT_UNITS)})")
    return None


def _serving_workload(s, arch):
    """The Workload of a serving case's formats (batch 1, one token)."""
    from ..workload import ROUTING_MODELS, from_formats

    routing = s.get("routing", "uniform")
    if routing not in ROUTING_MODELS:
        raise UserError(f"routing '{routing}': a case names one of {', '.join(ROUTING_MODELS)}")
    return from_formats(arch, weight_dtype=s["weight_dtype"], act_dtype=s["act_dtype"], kv_dtype=s["kv_dtype"],
                        routing=routing, mla=s.get("mla", "auto"))


def _layout(case, arch, micro_batch=None):
    """The case's Layout (dp defaults to devices / (tp x pp x cp)), checked against its
    device count and the model; with `micro_batch`, m = global batch / (dp x micro-batch)."""
    from .. import layout as placement

    s = case["setup"]
    lo = s.get("layout") or {}
    tp, pp, cp, ep = (lo.get(k, 1) for k in ("tp", "pp", "cp", "ep"))
    dp = lo.get("dp", s["devices"] // (tp * pp * cp))
    m = 1
    if micro_batch is not None:
        if s["global_batch"] % (dp * micro_batch):
            raise UserError(f"{case['id']}: global batch {s['global_batch']} is not a multiple of "
                            f"dp x micro-batch = {dp} x {micro_batch}")
        m = s["global_batch"] // (dp * micro_batch)
    lay = placement.Layout(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, micro_batches=m)
    if lay.devices != s["devices"]:
        raise UserError(f"{case['id']}: tp x pp x dp x cp = {lay.devices}, not devices = {s['devices']}")
    placement.validate(arch, lay)
    return lay


def parallel_serving_case(case):
    """`parallel`'s serving bound (analyses/parallel.serving_record) for a multi-device
    case's layout: each stage shard's serving bound on its device's memory beside its
    weights (no reserve unless the case sets reserve_bytes), communication not charged,
    the replica bounded by its slowest stage, dp replicas: (Layout, record); the record is
    None under CP (not derived)."""
    from .parallel import Plan, memory_record, serving_record

    s = case["setup"]
    arch = _model(case)
    lay = _layout(case, arch)
    plan = Plan(arch, _serving_workload(s, arch), _device(s["device"]), s["input_len"], s["output_len"],
                reserve_bytes=s.get("reserve_bytes", 0))
    return lay, serving_record(plan, lay, memory_record(plan, lay, 1)["stages"])


def serving_case(case):
    """Our serving-throughput bound for the case's setup: the `serving` record."""
    from .decode import decode_path, step_histories
    from .memory import cache_room
    from .mla_path import for_pass
    from .roofline import roof
    from .serving import serving_bound

    s = case["setup"]
    arch = _model(case)
    device = _device(s["device"])
    w = _serving_workload(s, arch)
    room = cache_room(device.memory_bytes, arch.weight_bytes(w), s.get("reserve_bytes", 0))
    r = roof(device, w.compute_dtype)
    wp, _ = for_pass(arch, w.replace(tokens=s["input_len"]), r)
    ws = decode_path(arch, w, *step_histories(s["input_len"], s["output_len"]), r)[0]
    return arch, device, serving_bound(arch, ws, r, s["input_len"], s["output_len"], room_bytes=room, prefill_w=wp)


def training_case(case):
    """(arch, tokens per step, train_time.StepBound) of a training-step case."""
    from .. import layout as placement
    from ..dtypes import dtype
    from ..workload import Workload
    from . import train_flops, train_memory
    from .train import check_formats
    from .train_time import step_lower_bound

    s = case["setup"]
    arch = _model(case)
    act, gb = dtype(s["act_dtype"]), s["global_batch"]
    w = Workload(batch=s["micro_batch"], tokens=s["seq_len"], logits="all",
                 weight_dtype=dtype(s["weight_dtype"]), act_dtype=act, kv_dtype=act)
    check_formats(w)
    lay = _layout(case, arch, s["micro_batch"])
    flops = train_flops.step(arch, w.replace(batch=gb)).model_flops
    stage_params = [sum(train_memory.device_params(placement.shard(arch, lay, st)))
                    for st in placement.stages(arch, lay)]
    opt = train_memory.optimizer_bytes(s.get("optimizer", "adamw"), s.get("master_bytes", 4))
    bound = step_lower_bound(flops, arch.params, stage_params, lay, _device(s["device"]),
                             compute_dtype=w.compute_dtype,
                             weight_bytes=dtype(s["weight_dtype"]).bits // 8,
                             grad_bytes=s.get("grad_bytes", 2), optimizer_bytes=opt)
    return arch, gb * s["seq_len"], bound


def training_bound(case):
    """(bound in the case's unit, 'compute'|'memory', ratio) of a training-step case."""
    from . import train_flops

    arch, tokens, b = training_case(case)
    unit, value, n = case["measured"]["unit"], case["measured"]["value"], b.devices
    if unit == "step_time_s":
        return b.step_s, b.bound, b.step_s / value
    if unit == "tokens_per_s_per_device":
        bound = tokens / b.step_s / n
    else:   # Megatron-LM's published FLOP/s: eq. 3 FLOPs of the step over the step time
        if arch.model_type != "gpt2":
            raise UserError(f"{case['id']}: {unit} is defined for GPT-style models only")
        s = case["setup"]
        eq3 = train_flops.megatron_closed_form(s["global_batch"], s["seq_len"], len(arch.layers),
                                              arch.hidden_size, arch.vocab_size)
        bound = eq3 / b.step_s / n
    return bound, b.bound, value / bound


def collective_bound(case):
    """(bound in the case's unit, the algorithm the bound rests on, ratio) of a collective case."""
    from .. import comm
    from .collective import placed

    s, m = case["setup"], case["measured"]
    device = _device(s["device"])
    c = placed(s["operation"], s["bytes"], s["devices"], s["ranks_per_node"], device)
    links = comm.links(device, link_bw_out=s.get("link_bw_out_bytes_per_s"))
    t = comm.lower_bound_s(c, links[c.tier], links["up"])
    name, fastest = comm.choose(c, links[c.tier], up=links["up"])
    kind = name if t == fastest else "floor"
    if m["unit"] == "time_us":
        return t * 1e6, kind, t * 1e6 / m["value"]
    bus = comm.busbw(c, t) / 1e9
    return bus, kind, m["value"] / bus


def _device(device_id):
    from ..load.hardware import load_device
    return load_device(device_id)


def evaluate(case):
    """One output row: measured, bound, ratio (or why it is not evaluated), and the
    predicted figure beside them (analyses/validate_predict)."""
    from .validate_predict import with_prediction

    return with_prediction(case, _bound_row(case))


def _bound_row(case):
    """The row's measured figure, bound and ratio (or why it is not evaluated)."""
    s, m = case["setup"], case["measured"]
    collective = case["kind"] == "collective"
    row = {
        "id": case["id"], "kind": case["kind"], "model": "-" if collective else s["model"], "device": s["device"],
        "devices": s["devices"],
        "formats": (f"{s['operation']}, {s['ranks_per_node']} per node" if collective else
                    f"{s['weight_dtype']}/{s['act_dtype']}/{s.get('kv_dtype', '-')}"),
        "input_len": s.get("input_len"), "output_len": s.get("output_len"),
        "global_batch": s.get("global_batch"), "seq_len": s.get("seq_len"),
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
    if collective:
        bound, kind, ratio = collective_bound(case)
        row.update(bound=bound, ratio=ratio, bound_kind=kind)
        return _status(row)
    if case["kind"] == "training-step":
        bound, kind, ratio = training_bound(case)
        row.update(bound=bound, ratio=ratio, bound_kind=kind)
        return _status(row)
    if s["devices"] > 1:
        return _multi_device(case, row)
    _, _, sv = serving_case(case)
    best = sv["steady_state"]
    if best is None:
        row["status"] = "not evaluated"
        row["not_evaluated"] = "the weights alone exceed the device memory: no bound on one device"
        return row
    bound = best[THROUGHPUT_UNITS[m["unit"]]]
    row.update(bound=bound, ratio=m["value"] / bound, bound_kind=best["bound"],
               concurrency=sv["steady_state_concurrency"])
    return _status(row)


def _multi_device(case, row):
    """A multi-device serving row: the cluster's output tokens/s bound of its layout."""
    s, m = case["setup"], case["measured"]
    lay, sv = parallel_serving_case(case)
    if sv is None:
        row["status"] = "not evaluated"
        row["not_evaluated"] = "context parallelism: `parallel` derives no serving bound under CP"
        return row
    out = sv["output_tokens_per_s_cluster"]
    if not out:
        row["status"] = "not evaluated"
        row["not_evaluated"] = "the weights alone exceed a device's memory on some stage: no bound"
        return row
    requests = out / s["output_len"]
    bound = {"output_tokens_per_s": out, "requests_per_s": requests,
             "total_tokens_per_s": requests * (s["input_len"] + s["output_len"])}[m["unit"]]
    kinds = sorted({st["bound"] for st in sv["stages"]})
    row.update(bound=bound, ratio=m["value"] / bound, bound_kind="/".join(kinds),
               concurrency=min(st["concurrency"] for st in sv["stages"]) * lay.dp)
    return _status(row)


def _status(row):
    row["status"] = ("ok" if row["ratio"] <= 1 else
                     "exempt" if row["exemption"] else "EXCEEDS BOUND")
    return row


def spread(rows):
    """Per (kind, device, formats): cases, min, median, max efficiency of evaluated rows
    (one-device and multi-device serving apart)."""
    groups = {}
    for r in rows:
        if r["ratio"] is not None:
            kind = r["kind"] + (" (multi-device)" if r["devices"] > 1 and r["kind"] in ("serving-throughput",
                                                                                      "serving-latency") else "")
            groups.setdefault((kind, r["device"], r["formats"]), []).append(r["ratio"])
    out = []
    for (kind, device, formats), ratios in sorted(groups.items()):
        ratios.sort()
        n = len(ratios)
        median = ratios[n // 2] if n % 2 else (ratios[n // 2 - 1] + ratios[n // 2]) / 2
        out.append({"kind": kind, "device": device, "formats": formats, "cases": n, "min_ratio": ratios[0],
                    "median_ratio": median, "max_ratio": ratios[-1]})
    return out


RECIPE_KEYS = ("zero", "overlap_dp", "overlap_tp", "overlap_ep", "overlap_pp", "recompute", "schedule")


def training_recipes(cases):
    """The recipe the prediction runs for each training publisher among `cases`
    (validate_predict.TRAINING_RECIPES: ZeRO stage, which communication it overlaps, recompute,
    schedule, and what the publication's recipe states), in publisher order; a case's own
    setup (its row's recompute, overlap_tp, overlap_ep, schedule) overrides it, and its
    assumptions say so."""
    from .validate_predict import TRAINING_RECIPES

    publishers = sorted({c["source"]["publisher"] for c in cases if c.get("kind") == "training-step"})
    out = []
    for name in publishers:
        r = TRAINING_RECIPES[name]
        out.append({"publisher": name, **{k: r.get(k, False if k.startswith("overlap") else None)
                                          for k in RECIPE_KEYS}, "recipe": r["why"]})
    return out


def validate(case_id=None, directory=VALIDATION_DIR):
    """The `validate` record over every case (or one)."""
    paths = case_paths(directory)
    if case_id is not None:
        by_id = {os.path.basename(p)[:-5]: p for p in paths}
        if case_id not in by_id:
            from ..errors import unknown
            raise unknown("validation case", case_id, list(by_id), "`validate --format csv`")
        paths = [by_id[case_id]]
    from .validate_predict import PREDICTION_CONVENTIONS, accuracy

    cases = [load_case(p) for p in paths]
    rows = [evaluate(c) for c in cases]
    failures = [r["id"] for r in rows if r["status"] == "EXCEEDS BOUND"]
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "validate",
        "inputs": {"case": case_id},
        "cases": rows,
        "spread": spread(rows),
        "accuracy": accuracy(rows),
        "training_recipes": training_recipes(cases),
        "failures": failures,
        "conventions": list(CONVENTIONS) + list(PREDICTION_CONVENTIONS),
    }

"""`validate`'s predicted figure per case, and its accuracy per family.

For a serving case the prediction is efficiency.serving's steady state for the case's
model, device, formats, lengths and layout (a tensor-parallel replica: each device's shard,
its TP all-reduces exposed; dp replicas add up), at the fitted constants of
efficiency.serving.FITTED chosen leave one publication out: a case is predicted with the
constants fitted on every publication but its own, so no case's own measurement shapes
its prediction. The accuracy table gives, per family, the median and 90th percentile of
|predicted / measured - 1| and the worst case with what dominated its predicted time.
"""

import statistics

TP_REDUCE_BYTES = 2   # the residual stream is all-reduced in 16 bits, whatever the GEMM format
FAMILIES = ("serving, one device", "serving, several devices", "training, dense", "training, MoE",
            "collectives")


def publication(case):
    """The publication a case comes from: publisher and title (its version included)."""
    src = case["source"] if isinstance(case["source"], dict) else {}
    return f"{src.get('publisher', '')}: {src.get('title', '')}"


def family(case, arch=None):
    s = case["setup"]
    if case["kind"] == "training-step":
        moe = arch is not None and arch.active_params != arch.params
        return "training, MoE" if moe else "training, dense"
    if case["kind"] == "collective":
        return "collectives"
    return "serving, several devices" if s["devices"] > 1 else "serving, one device"


def constants_for(case):
    """(constants, key): the fit without the case's publication, else the fit on all cases."""
    from .efficiency.serving import FITTED

    key = publication(case)
    return (FITTED[key], "without its publication") if key in FITTED else (FITTED["all"], "all cases (in-sample)")


def tp_comm(device, tp, arch, act_bytes):
    """tokens -> exposed seconds of the TP all-reduces of one iteration (after attention and
    after the MLP in every layer, plus the vocab-parallel embedding's), NCCL-style best
    algorithm on the scale-up tier, none overlapped."""
    from .. import comm
    from ..collectives import tp_collectives

    link = comm.links(device)[comm.tier(tp, device)]
    tier = comm.tier(tp, device)

    def seconds(tokens):
        cs = tp_collectives(max(1, round(tokens)), arch.hidden_size, act_bytes, tp, False, len(arch.layers), tier)
        return sum(c.count * comm.time_s(c, link, "best") for c in cs)
    return seconds


def serving_prediction(case, constants=None):
    """(predicted figure in the case's unit, the steady-state record) of a serving case;
    (None, None) when the tool has no prediction for it."""
    from .. import layout as placement
    from .efficiency.serving import predicted_serving
    from .validate import _device, _layout, _model, _serving_workload

    s, m = case["setup"], case["measured"]
    arch = _model(case)
    device = _device(s["device"])
    w = _serving_workload(s, arch)
    constants = constants or constants_for(case)[0]
    comm_s, replicas, shard = None, 1, arch
    if s["devices"] > 1:
        lay = _layout(case, arch)
        if lay.pp > 1 or lay.cp > 1 or lay.ep > 1:
            return None, None
        shard = placement.shard(arch, lay, placement.stages(arch, lay)[0])
        comm_s = tp_comm(device, lay.tp, arch, TP_REDUCE_BYTES)
        replicas = lay.dp
    rec = predicted_serving(shard, w, device, s["input_len"], s["output_len"], constants, comm_s)
    if rec is None:
        return None, None
    out = rec["output_tokens_per_s"] * replicas
    G, P = s["output_len"], s["input_len"]
    value = {"output_tokens_per_s": out, "requests_per_s": out / G,
             "total_tokens_per_s": out / G * (P + G)}.get(m.get("unit"))
    return value, rec


PREDICTION_CONVENTIONS = (
    "Predicted (beside the bound, not a bound): serving cases at efficiency.serving's steady "
    "state (the engine's concurrency and batch limit, one iteration of decode and chunked "
    "prefill at achievable rates, TP all-reduces exposed, host time per iteration); error = "
    "predicted / measured - 1 (positive: the prediction is optimistic). Its three fitted "
    "constants are fitted leave one publication out: a case is predicted with those fitted on "
    "every other publication (column fit). Training cases have no prediction yet.",
    "Accuracy per family: cases with a prediction, median and 90th percentile (linear "
    "interpolation) of |error|, the median signed error, and the worst case with the term "
    "that dominated its predicted iteration.",
)


def with_prediction(case, row):
    """`row` (validate's bound row) with the predicted figure, its error against the
    measurement, the family and the fit it used; None where there is no prediction."""
    row.update(family=family(case), predicted=None, predicted_error=None, predicted_fit=None,
               predicted_cause=None)
    if row["not_evaluated"] or case["kind"] != "serving-throughput":
        return row
    constants, fit = constants_for(case)
    value, rec = serving_prediction(case, constants)
    if value is None:
        return row
    row.update(predicted=value, predicted_error=value / case["measured"]["value"] - 1, predicted_fit=fit,
               predicted_cause=cause(rec))
    return row


def cause(rec):
    """What dominated a case's predicted iteration, in words."""
    parts = {"GPU work": rec["gpu_s"], "host (scheduling, sampling)": rec["host_s"]}
    name = max(parts, key=parts.get)
    return (f"{name} {parts[name] / rec['iteration_s']:.0%} of the iteration at concurrency "
            f"{rec['concurrency']} (engine limit {rec['engine_batch_limit']})")


def accuracy(rows):
    """Per family: cases with a prediction, median and p90 of |predicted / measured - 1|,
    the median signed error, and the worst case with its cause."""
    out = []
    for fam in FAMILIES:
        sel = [r for r in rows if r.get("family") == fam and r.get("predicted_error") is not None]
        if not sel:
            out.append({"family": fam, "cases": 0, "median_abs_error": None, "p90_abs_error": None,
                        "median_error": None, "worst_case": None, "worst_error": None, "worst_cause": None})
            continue
        errs = sorted(abs(r["predicted_error"]) for r in sel)
        worst = max(sel, key=lambda r: abs(r["predicted_error"]))
        out.append({"family": fam, "cases": len(sel), "median_abs_error": statistics.median(errs),
                    "p90_abs_error": percentile(errs, 0.9),
                    "median_error": statistics.median(r["predicted_error"] for r in sel),
                    "worst_case": worst["id"], "worst_error": worst["predicted_error"],
                    "worst_cause": worst["predicted_cause"]})
    return out


def percentile(sorted_values, q):
    """The q-quantile by linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)

"""`parallel --search`: every layout of N devices, scored and ranked."""

from ... import layout as placement
from ...collectives import ceil_div
from ...errors import UserError
from .. import mla_path
from .. import ranking
from ..ranking import Rejected, Rejections
from ..records import CONVENTIONS
from .conventions import ESTIMATE, LEFT_OUT, LOWER_BOUND, OBJECTIVES, PARALLEL_CONVENTIONS, comm_conventions
from .pipeline import latency, latency_bound, phases, ranked_phase
from .records import header, inputs_record, layout_record, memory_record, search_memory, unknown_peak_notes


def score(plan, lay, batch, objective):
    """(value to rank, figures) of one layout at one batch: lower is better."""
    ph = ranked_phase(plan, lay, batch, "prefill" if objective == "ttft" else "decode")
    lat = latency(plan, lay, batch, ph)
    if objective == "ttft":
        return lat["ttft_s"], lat, ph
    if objective == "tpot":
        return lat["tpot_mean_s"], lat, ph
    return -lat["decode_tokens_per_s_per_device"], lat, ph


def search_batches(cap, batch, pp):
    """The batches per replica tried for a layout: the given one, or pp micro-batches (a full
    pipeline) of b = 1, 4, 16, ... requests (powers of 4) while b x pp fits the capacity
    (2^20 when memory does not bound it)."""
    if batch is not None:
        return [batch]
    out, b = [], 1
    limit = cap if cap is not None else 1 << 20
    while b * pp <= limit:
        out.append(b * pp)
        b *= 4
    return out


def best_batch(plan, lay, batches, objective, tpot_limit=None):
    """(value, batch, figures) of the batch a layout is ranked at, or None when even the
    smallest has a mean TPOT over `tpot_limit`. One batch given: that one. Throughput over
    the batches that fit: the largest whose mean TPOT is within the limit, scored alone. Per
    micro-batch of b requests each stage's decode time is a sum of terms a + k b (a >= 0:
    weights, alpha), their maxima, and concave terms through 0 (experts read), so t(b) / b
    never grows with b: tokens/s per device never falls and the TPOT never falls as the batch
    grows; the largest batch within the limit is the best, and the batches within it are a
    prefix of the list (found by bisection)."""
    def scored(b):
        value, lat, _ = score(plan, lay, b, objective)
        return value, b, lat

    def within(x):
        return tpot_limit is None or x[2]["tpot_mean_s"] is None or x[2]["tpot_mean_s"] <= tpot_limit

    last = scored(batches[-1])
    if within(last):
        return last
    lo, hi, best = 0, len(batches) - 1, None   # batches[hi] is over the limit
    while lo < hi:
        mid = (lo + hi) // 2
        x = scored(batches[mid])
        if within(x):
            best, lo = x, mid + 1
        else:
            hi = mid
    return best


def _collective_span(lay):
    """Tie-break: the largest collective group, then the dimensions in order."""
    return (max(lay.tp, lay.cp, lay.ep, 2 if lay.pp > 1 else 1), lay.tp, lay.cp, lay.ep, lay.pp, lay.dp)


def search(plan, devices, objective="throughput", tpot_limit=None, top=10, batch=None):
    """Every layout of `devices` the model admits, ranked by the objective (best first).

    throughput: decode tokens/s per device (cluster decode tokens/s / devices) at the best
    batch per replica (`search_batches`, or --batch) with mean TPOT within
    --tpot-limit; ttft: the smallest TTFT; tpot: the smallest mean TPOT (both at --batch,
    default 1). Rejections are counted by reason."""
    if objective not in OBJECTIVES:
        raise UserError(f"unknown objective '{objective}'; choose from {', '.join(OBJECTIVES)}")
    if objective != "ttft" and plan.G < 2:
        raise UserError(f"--objective {objective} needs --output-len of at least 2 (one decode step)")
    if objective != "throughput" and batch is None:
        batch = 1
    layouts = list(placement.candidate_layouts(plan.arch, devices))

    def scored(lay):
        why = placement.refusal(plan.arch, lay)
        if why:
            raise Rejected(why)
        placement.validate(plan.arch, lay)
        if plan.P < lay.cp or plan.P - (lay.cp - 1) * ceil_div(plan.P, lay.cp) < 1:
            raise UserError(f"CP leaves a rank without prompt tokens (P = {plan.P})")
        bind, cap = search_memory(plan, lay)
        if cap == 0:
            raise Rejected("does not fit: weights and reserve exceed a device's memory",
                           bind.shortfall_bytes(0) or bind.need(1) - bind.memory_bytes)
        batches = search_batches(cap, batch, lay.pp)
        if cap is not None and (not batches or batches[-1] > cap):
            b = batches[-1] if batches else lay.pp   # the given batch, or one request per micro-batch
            raise Rejected(f"does not fit: batch {b} per replica", bind.shortfall_bytes(b))
        best = best_batch(plan, lay, batches, objective, tpot_limit)
        if best is None:
            raise Rejected("mean TPOT over --tpot-limit at every batch that fits")
        return best

    rejections = Rejections()
    ranked = ranking.rank(layouts, scored, _collective_span, rejections)
    return ranked, rejections.records(), len(layouts)


def search_record(plan, devices, objective="throughput", tpot_limit=None, top=10, batch=None):
    """The `parallel --search` record: the top K layouts with their breakdown, rejections by reason."""
    ranked, rejected, total = search(plan, devices, objective, tpot_limit, top, batch)
    rec = header(plan, "parallel --search")
    rec["inputs"] = inputs_record(plan, batch)
    rec["inputs"].update({"devices": devices, "objective": objective, "tpot_limit_s": tpot_limit, "top": top})
    best = []
    for rank, (value, _, lay, b, lat) in enumerate(ranked[:top], 1):
        ph = phases(plan, lay, b, detail=True)
        mem = memory_record(plan, lay, b)
        dec = ph.get("decode") or ph["prefill"]
        stage = max(dec["stages"], key=lambda s: s["time_s"])
        comm_by_dim = {}
        for c in stage["collectives"]:
            comm_by_dim[c["dim"]] = comm_by_dim.get(c["dim"], 0.0) + c["time_s"]
        best.append({"rank": rank, "layout": layout_record(plan, lay, ph["micro_batches"]), "batch": b,
                     "latency": latency(plan, lay, b, ph),
                     "lower_bound": {k: v for k, v in latency_bound(plan, lay, b, ph).items()
                                     if k not in ("phases", "definition")},
                     "slowest_decode_stage" if "decode" in ph else "slowest_prefill_stage": {
                         "stage": stage["stage"], "roofline_s": stage["roofline_s"],
                         "compute_bound_s": stage["compute_bound_s"], "weights_s": stage["weights_s"],
                         "kv_s": stage["kv_s"], "comm_s": stage["comm_s"],
                         "exposed_comm_s": stage["exposed_comm_s"], "comm_s_by_dim": comm_by_dim},
                     "bubble_fraction": dec["bubble_fraction"],
                     "memory": {"binding_stage": mem["binding_stage"],
                                "max_requests_per_replica": mem["max_requests_per_replica"],
                                "weight_bytes": mem["stages"][mem["binding_stage"]]["weight_bytes"]}})
    rec["notes"] = [f"{len(ranked)} of {total} layouts of {devices} devices admitted; "
                    f"{total - len(ranked)} rejected"] + unknown_peak_notes(plan)
    for phase, choice in plan.mla_choices.items():
        if choice:
            rec["notes"].append(mla_path.note(choice, phase) + f" (at batch {plan.batch}, for every layout)")
    rec["ranking"] = {
        "throughput": "decode tokens/s per device at the best batch per replica (pp micro-batches of "
                      "1, 4, 16, ... requests while they fit, or --batch) whose mean TPOT is within "
                      "--tpot-limit",
        "ttft": "TTFT of the batch (--batch, default 1), smallest first",
        "tpot": "mean TPOT (--batch, default 1), smallest first"}[objective] + \
        "; ties: fewer devices per collective (largest group, then tp, cp, ep, pp)"
    rec["definitions"] = [ESTIMATE, LOWER_BOUND]
    rec["layouts_considered"] = total
    rec["layouts_admitted"] = len(ranked)
    rec["top"] = best
    rec["rejected"] = rejected
    rec["left_out"] = list(LEFT_OUT) + [
        "The search keeps sequence parallelism off, stages even and the rank order tp-cp-ep-dp-pp; "
        "it tries each layout at the batches above (micro-batches gcd(B, pp))."]
    rec["conventions"] = list(CONVENTIONS) + list(PARALLEL_CONVENTIONS) + list(comm_conventions(plan))
    return rec

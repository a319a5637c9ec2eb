"""`parallel --search`: every layout of N devices, scored and ranked."""

from ... import comm
from ... import layout as placement
from ...splits import ceil_div
from ...errors import UserError
from .. import mla_path
from .. import ranking
from ..ranking import PRUNE_MARGIN, Rejected, Rejections
from ..efficiency.serving import predicted_ceiling as serving_ceiling, predicted_layout
from ..records import CONVENTIONS
from .conventions import ESTIMATE, LEFT_OUT, LOWER_BOUND, OBJECTIVES, PARALLEL_CONVENTIONS, comm_conventions
from .bound import comm_free_bounds, stage_time_bounds
from .pipeline import latency, latency_bound, phases, ranked_phase
from .stage import stage_times
from .communication import tiers

TPOT_REJECTED = "mean TPOT over --tpot-limit at every batch that fits"
from .records import header, inputs_record, layout_record, memory_record, search_memory, unknown_peak_notes


NOT_PREDICTED = "no predicted figure: EP under a skewed routing model, or nothing fits the engine's memory"


def predicted(plan, lay):
    """efficiency.serving's steady state of a layout (the engine's own concurrency), or None."""
    return predicted_layout(plan.arch, plan.wd, plan.device, lay, plan.P, plan.G)


def score(plan, lay, batch, objective, times=stage_times):
    """(value to rank, figures) of one layout at one batch: lower is better (`times`:
    bound.stage_time_bounds gives a value never above the exact one). predicted: minus the
    predicted output tokens/s per device (`predicted`), the estimate's figures at `batch` beside it."""
    ph = ranked_phase(plan, lay, batch, "prefill" if objective == "ttft" else "decode", times)
    lat = latency(plan, lay, batch, ph)
    if objective == "predicted":
        rec = predicted(plan, lay)
        if rec is None:
            raise Rejected(NOT_PREDICTED)
        return -rec["output_tokens_per_s_per_device"], lat, ph
    if objective == "ttft":
        return lat["ttft_s"], lat, ph
    if objective == "tpot":
        return lat["tpot_mean_s"], lat, ph
    return -lat["decode_tokens_per_s_per_device"], lat, ph


def predicted_ceiling(plan, lay, with_comm=False):
    """efficiency.serving's ceiling on a layout's predicted output tokens/s per device (never below
    `predicted`'s, None exactly where it is None)."""
    return serving_ceiling(plan.arch, plan.wd, plan.device, lay, plan.P, plan.G, with_comm=with_comm)


def score_bound(plan, lay, batch, objective, times=stage_time_bounds):
    """A value never above `score`'s for this layout and batch (-inf when the bound says
    nothing: a decode time bound of 0); `times`: the stage bounds (bound.comm_free_bounds:
    weaker and cheaper)."""
    ph = ranked_phase(plan, lay, batch, "prefill" if objective == "ttft" else "decode", times)
    lat = latency(plan, lay, batch, ph)
    value = {"ttft": lat["ttft_s"], "tpot": lat["tpot_mean_s"]}.get(objective)
    if objective == "throughput":
        rate = lat["decode_tokens_per_s_per_device"]
        value = -rate if rate else None
    return float("-inf") if value is None else value


def over_limit(plan, lay, batches, tpot_limit):
    """True when a lower bound on the mean TPOT exceeds `tpot_limit` at every batch: then
    `best_batch` finds none within it (whichever it tries), so the layout is rejected
    without its exact figures. The bound reads the layout only through its tp, ep, cp, sp,
    pp, micro-batches, stage split and group tiers (`bound.stage_time_bounds`, the PP
    transfer, `pipeline.ranked_phase`; the mean TPOT is per replica), so layouts that differ
    in dp alone with the same tiers share one answer: memoized on those (an SLO sizing meets
    the same replica at many device counts)."""
    def make():
        for b in batches:
            tpot = latency(plan, lay, b, ranked_phase(plan, lay, b, "decode", stage_time_bounds))["tpot_mean_s"]
            if tpot is None or tpot <= tpot_limit * (1 + PRUNE_MARGIN):
                return False
        return True
    key = ("over limit", lay.tp, lay.ep, lay.cp, lay.sp, lay.pp, lay.micro_batches, lay.pp_layers,
           tiers(plan, lay), tuple(batches), tpot_limit)
    return plan.memo(key, make)


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


def _checked(plan, objective, batch):
    """The batch a search runs at (--batch; 1 for the ttft and tpot objectives), after
    refusing an objective it cannot rank by."""
    if objective not in OBJECTIVES:
        raise UserError(f"unknown objective '{objective}'; choose from {', '.join(OBJECTIVES)}")
    if objective != "ttft" and plan.G < 2:
        raise UserError(f"--objective {objective} needs --output-len of at least 2 (one decode step)")
    return 1 if objective not in ("throughput", "predicted") and batch is None else batch


def admitted_batches(plan, lay, batch):
    """The batches a layout is tried at (`search_batches`); Rejected (or UserError) when the
    search refuses it before scoring: a refused kind, CP without prompt tokens, memory."""
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
    return batches


def search(plan, devices, *, objective="throughput", tpot_limit=None, top=None, batch=None):
    """Every layout of `devices` the model admits, ranked by the objective (best first).

    throughput: decode tokens/s per device (cluster decode tokens/s / devices) at the best
    batch per replica (`search_batches`, or --batch) with mean TPOT within
    --tpot-limit; ttft: the smallest TTFT; tpot: the smallest mean TPOT (both at --batch,
    default 1). Rejections are counted by reason. Returns (ranked, rejection records,
    layouts considered): every admitted layout, or with `top` only the best `top` of them
    (`search_top`, which also returns how many were admitted)."""
    if top is not None:
        return search_top(plan, devices, objective=objective, tpot_limit=tpot_limit, top=top, batch=batch)[:3]
    batch = _checked(plan, objective, batch)
    layouts = list(placement.candidate_layouts(plan.arch, devices))

    def scored(lay):
        batches = admitted_batches(plan, lay, batch)
        if tpot_limit is not None and over_limit(plan, lay, batches, tpot_limit):
            raise Rejected(TPOT_REJECTED)
        best = best_batch(plan, lay, batches, objective, tpot_limit)
        if best is None:
            raise Rejected(TPOT_REJECTED)
        return best

    rejections = Rejections()
    ranked = ranking.rank(layouts, scored, _collective_span, rejections)
    return ranked, rejections.records(), len(layouts)


def search_top(plan, devices, *, objective="throughput", tpot_limit=None, top=10, batch=None):
    """(the best `top` entries of `search`'s ranking, its rejection records, layouts
    considered, layouts admitted), equal to search(...)[0][:top] and the rest, pruned:
    without --tpot-limit every admitted layout is ranked at its last batch, so each gets a
    bound on its value first (`score_bound` without the collectives; with them where that
    cannot prune), the layouts are scored exactly in the order of their bounds, and the scoring stops once the next bound is worse than the top-th exact
    value (a layout's value is never better than its bound, so none left could enter the
    top; on links whose ring charge can refuse a collective -- a missing tier, a mesh or a
    torus -- every layout is scored, as the refusal would be a rejection). With --tpot-limit whether a layout is admitted needs its exact figures (unless
    `over_limit` rejects it), so every layout is scored as `search` scores it."""
    if tpot_limit is not None:
        ranked, rejected, total = search(plan, devices, objective=objective, tpot_limit=tpot_limit, top=None,
                                         batch=batch)
        return ranked[:top], rejected, total, len(ranked)
    batch = _checked(plan, objective, batch)
    layouts = list(placement.candidate_layouts(plan.arch, devices))
    rejections = Rejections()
    if not comm.prunable(plan.links):
        ranked, rejected, total = search(plan, devices, objective=objective, tpot_limit=None, top=None, batch=batch)
        return ranked[:top], rejected, total, len(ranked)

    def bounded(lay):
        b = admitted_batches(plan, lay, batch)[-1]
        if objective == "predicted":
            ceiling = predicted_ceiling(plan, lay)
            if ceiling is None:
                raise Rejected(NOT_PREDICTED)
            return -ceiling, b
        return score_bound(plan, lay, b, objective, comm_free_bounds), b

    def refined(lay, b):
        if objective == "predicted":
            return -predicted_ceiling(plan, lay, with_comm=True)
        return score_bound(plan, lay, b, objective)

    def exact(lay, b):
        value, lat, _ = score(plan, lay, b, objective)
        return value, b, lat

    ranked, admitted = ranking.rank_top(layouts, bound=bounded, exact=exact, tie_break=_collective_span,
                                        rejections=rejections, top=top, refine=refined)
    return ranked, rejections.records(), len(layouts), admitted


def search_record(plan, devices, *, objective="throughput", tpot_limit=None, top=10, batch=None):
    """The `parallel --search` record: the top K layouts with their breakdown, rejections by reason."""
    ranked, rejected, total, admitted = search_top(plan, devices, objective=objective, tpot_limit=tpot_limit,
                                                   top=top, batch=batch)
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
        if objective == "predicted":
            best[-1]["predicted"] = predicted(plan, lay)
        elif rank == 1:   # the first screen's answer carries the third figure whatever ranks it
            rec["best_predicted"] = predicted(plan, lay)
    rec["notes"] = [f"{admitted} of {total} layouts of {devices} devices admitted; "
                    f"{total - admitted} rejected"] + unknown_peak_notes(plan)
    for phase, choice in plan.mla_choices.items():
        if choice:
            rec["notes"].append(mla_path.note(choice, phase) + f" (at batch {plan.batch}, for every layout)")
    rec["ranking"] = {
        "throughput": "decode tokens/s per device at the best batch per replica (pp micro-batches of "
                      "1, 4, 16, ... requests while they fit, or --batch) whose mean TPOT is within "
                      "--tpot-limit",
        "ttft": "TTFT of the batch (--batch, default 1), smallest first",
        "tpot": "mean TPOT (--batch, default 1), smallest first",
        "predicted": "predicted output tokens/s per device (efficiency.serving: a tuned engine's steady "
                     "state at its own concurrency; TP, PP, DP, EP and CP layouts), the estimate's figures "
                     "shown at the largest batch that fits (or --batch) with mean TPOT within --tpot-limit"}[objective] + \
        "; ties: fewer devices per collective (largest group, then tp, cp, ep, pp)"
    rec["definitions"] = [ESTIMATE, LOWER_BOUND]
    rec["layouts_considered"] = total
    rec["layouts_admitted"] = admitted
    rec["top"] = best
    rec["rejected"] = rejected
    rec["left_out"] = list(LEFT_OUT) + [
        "The search keeps sequence parallelism off, stages even and the rank order tp-cp-ep-dp-pp; "
        "it tries each layout at the batches above (micro-batches gcd(B, pp))."]
    rec["conventions"] = list(CONVENTIONS) + list(PARALLEL_CONVENTIONS) + list(comm_conventions(plan))
    return rec

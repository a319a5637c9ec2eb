"""One stage's figures in one phase: its record (detail) or its times (a search, a sweep)."""

from ... import comm
from ...arch import Layer
from ...collectives import ceil_div
from .. import decode_sum
from .costs import _NACC, _time


def _collective_rows(plan, cs):
    return [{"name": c.name, "dim": c.dim, "kind": c.kind, "bytes_per_run": c.bytes, "runs": c.count,
             "group": c.group, "tier": c.tier, "wire_bytes_per_run": round(comm.wire_bytes(c, plan.algorithm_for(c))),
             "time_s": plan.comm_time(c)} for c in cs]


def _work(cost):
    v = dict(zip(decode_sum.FIELDS, cost[_NACC:]))
    return {"matrix_flops": v["matrix_flops"], "vector_flops": v["vector_flops"],
            "weight_bytes_read": v["weight_read"], "kv_bytes_read": v["kv_read"],
            "kv_bytes_written": v["kv_write"], "act_bytes_moved": v["act_read"] + v["act_write"]}


def _stage_phase(plan, lay, stage, cost, cs, runs=1):
    """One stage's phase record: roofline split, work, collectives (x runs passes), exposed comm."""
    roofline = _time(cost)
    comm_s = sum(plan.comm_time(c) for c in cs) * runs
    rec = {"stage": stage.index, "roofline_s": roofline, "compute_bound_s": cost[0], "weights_s": cost[1],
           "kv_s": cost[2], "activations_s": cost[3], "comm_s": comm_s,
           "exposed_comm_s": plan.stage_time(roofline, comm_s) - roofline,
           "time_s": plan.stage_time(roofline, comm_s)}
    rec.update(_work(cost))
    # the lower bound (LOWER_BOUND): the work's least time, communication hidden under it up to it
    ideal = ideal_s(plan.r, rec)
    fastest = sum(plan.comm_time_fastest(c) for c in cs) * runs
    rec.update(ideal_s=ideal, comm_fastest_s=fastest, lower_bound_s=max(ideal, fastest))
    rec["collectives"] = _collective_rows(plan, cs)
    if runs != 1:
        for row in rec["collectives"]:
            row["passes"] = runs
            row["time_s"] *= runs
    return rec


def ideal_s(r, work):
    """The least time of a stage's work on its device: max(matrix FLOPs / matrix peak, vector
    FLOPs / vector peak, (weight bytes read + KV bytes read and written) / bandwidth). The three
    units may run in parallel, operators may fuse (activations never leave the chip) and the
    weights and cache must be read at least once per pass (they exceed on-chip memory)."""
    return max(work["matrix_flops"] / r.matrix_flops_per_s, work["vector_flops"] / r.vector_flops_per_s,
               (work["weight_bytes_read"] + work["kv_bytes_read"] + work["kv_bytes_written"]) / r.bytes_per_s)


def stage_phase(plan, lay, stage, phase, b, detail=True):
    """One stage's record in `phase` (prefill | first | last | decode) for a micro-batch of b
    requests, memoized per stage kind (identical stages are costed once)."""
    key = ("stage phase", lay.tp, lay.ep, lay.cp, lay.sp, plan.tiers(lay), plan.kind_id(lay, stage), phase, b,
           detail)

    def make():
        runs, tokens, kind = 1, 1, "decode"
        if phase == "prefill":
            cost, tokens = plan.prefill_cost(lay, stage, b, detail)
            kind = "prefill"
        else:
            total, first, last = plan.decode_cost(lay, stage, b, detail)
            if phase == "decode":
                cost, runs = total, plan.steps
            else:
                cost = first if phase == "first" else last
        if detail:
            return _stage_phase(plan, lay, stage, cost, plan.collectives(lay, stage, kind, b, tokens), runs)
        roofline, comm_s = _time(cost), plan.comm_s(lay, stage, kind, b, tokens) * runs
        t = plan.stage_time(roofline, comm_s)
        return {"stage": stage.index, "roofline_s": roofline, "comm_s": comm_s,
                "exposed_comm_s": t - roofline, "time_s": t}

    rec = plan.memo(key, make)
    return rec if rec["stage"] == stage.index or not detail else dict(rec, stage=stage.index)


def stage_phases(plan, lay, sts, phase, b, detail):
    """stage_phase of every stage; without `detail` (a search, a sweep: times only) each stage
    kind's times are composed from its parts' times (`_fast_parts`), one record per kind."""
    if detail:
        return [stage_phase(plan, lay, st, phase, b, detail) for st in sts]
    ids, firsts = plan.stage_kinds(lay)
    by_kind = {}
    for k, st, (roofline, comm_s, t) in _kind_times(plan, lay, phase, b, firsts):
        by_kind[k] = {"stage": st.index, "roofline_s": roofline, "comm_s": comm_s,
                      "exposed_comm_s": t - roofline, "time_s": t}
    return [by_kind[k] for k in ids]


def _kind_times(plan, lay, phase, b, firsts):
    """[(kind id, first stage, (roofline s, comm s, stage time s))] per distinct stage kind
    (`_fast_stage`), memoized per kind with the parts they are summed from."""
    parts = plan.memo(("fast parts", lay.tp, lay.ep, lay.cp, lay.sp, plan.comm_tiers(lay), phase, b), dict)
    out = []
    for k, st in firsts:
        times = parts.get(k)
        if times is None:
            roofline, comm_s = _fast_stage(plan, lay, st, phase, b, parts)
            times = parts[k] = (roofline, comm_s, plan.stage_time(roofline, comm_s))
        out.append((k, st, times))
    return out


def fast_stage_times(plan, lay, phase, b):
    """Every stage's time in `phase` (as `stage_phases(..., detail=False)`'s time_s, in stage
    order) without building its records: what a search ranks by."""
    ids, firsts = plan.stage_kinds(lay)
    if len(firsts) == 1:
        return [_kind_times(plan, lay, phase, b, firsts)[0][2][2]] * len(ids)
    t = {k: times[2] for k, _, times in _kind_times(plan, lay, phase, b, firsts)}
    return [t[k] for k in ids]


def _fast_parts(plan, lay, phase, b, part, key):
    """Times of one part of a stage (a layer shard, or the top blocks (embedding?, head?)) in
    `phase`: per option (prefill: the slowest CP rank's candidates, as `Plan.prefill_cost`;
    decode: one) a (roofline s, comm s) pair, from the same memoized cost vectors and
    collectives as `stage_phase`. A stage's times are count-weighted sums of its parts' (the
    same sums as `Plan.stage_cost`, taken of times instead of cost vectors: equal up to
    floating-point rounding)."""
    top = not hasattr(part, "blocks")
    roofs = plan.memo(("part roof", part, phase, b, lay.cp), lambda: _part_roofs(plan, lay.cp, phase, b, part))
    if phase == "prefill":
        return [(r, plan.top_s(lay, key, b, tokens) if top else plan.layer_comm_s(lay, part, "prefill", b, tokens))
                for r, tokens in roofs]
    cs = plan.top_s(lay, key, b, 1) if top else plan.layer_comm_s(lay, part, "decode", b, 1)
    return [(roofs[0][0], cs * plan.steps if phase == "decode" else cs)]


def _part_roofs(plan, cp, phase, b, part):
    """[(roofline s, tokens per rank)] of one part (`_fast_parts`) per option, a layer shard's
    as the sum of its blocks' (each block costed once per workload, `Plan.unit_cost`)."""
    units = ([plan.memo(("block unit", block), lambda: plan.unit(Layer(blocks=(block,)))) for block in part.blocks]
             if hasattr(part, "blocks") else [part])
    if phase == "prefill":
        out = []
        for tokens, history in plan.prefill_ranks(cp):
            w = plan.workload(plan.wp, batch=b, logits="last", tokens=tokens, history=history)
            out.append((sum(_time(plan.unit_cost(u, w, ("pass",), False)[0]) for u in units), tokens))
        return out
    lo, hi = plan.P, plan.P + plan.steps - 1
    lo2, hi2 = ceil_div(lo, cp), ceil_div(hi, cp)
    w = plan._decode_w.get(b) or plan.workload(plan.wd, batch=b, tokens=1, history=0)
    i = {"first": 1, "last": 2}.get(phase)
    if i is not None:
        return [(sum(_time(plan.unit_cost(u, w, ("steps", lo2, hi2), False)[i]) for u in units), 1)]
    total = 0.0
    for u in units:
        t, first, last = plan.unit_cost(u, w, ("steps", lo2, hi2), False)
        if cp > 1:
            x, y = lo - cp * (lo2 - 1) - 1, cp * hi2 - hi
            total += cp * _time(t) - x * _time(first) - y * _time(last)
        else:
            total += _time(t)
    return [(total, 1)]


def _fast_stage(plan, lay, stage, phase, b, parts):
    """(roofline s, comm s) of one device of `stage` from its parts' times (`_fast_parts`)."""
    key = (stage.has_embedding, stage.has_head)
    top = parts.get(key)
    if top is None:
        top = parts[key] = _fast_parts(plan, lay, phase, b, plan.top_unit(lay, stage), key)
    sums = [list(o) for o in top]
    for layer, count in plan.kind(lay, stage)[0]:
        one = parts.get(layer)
        if one is None:
            one = parts[layer] = _fast_parts(plan, lay, phase, b, layer, None)
        for acc, (r, c) in zip(sums, one):
            acc[0] += count * r
            acc[1] += count * c
    best = sums[0]
    for o in sums[1:]:
        if o[0] > best[0]:
            best = o
    return best[0], best[1]

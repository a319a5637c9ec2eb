"""A cheap lower bound on a layout's stage times, for pruning the search.

A stage's time is its top blocks' and its layers' operator-sum roofline plus its
collectives' seconds (`stage.evaluate`), and every part is non-negative: the top blocks
(embedding, final norm, head) and their vocab-parallel collectives cost >= 0, and a
stage's roofline and communication are sums over its layers of count x one layer's
(`costs.stage_cost`, `communication.stage_collectives`: runs of one collective merged,
seconds = one run's x the runs). So, per stage,

    time_s >= stage_time(sum_l count_l x R_l, sum_l count_l x C_l)

with R_l and C_l one layer shard's roofline and collective seconds in the phase
(`stage_time`: roofline + communication, or their max with --overlap; both grow with
each argument). The prefill charges the slowest CP rank's option (`prefill_ranks`) by
roofline, so its time is at least the largest R over the options plus the smallest C.
Over the decode steps under CP, a layer's cost combines its summed, first and last steps
as `decode_cost` does (an exact identity, so the per-layer sums add up to the stage's).

The per-layer figures depend on (tp, ep, cp, sp, the group tiers, the layer shard, the
phase, the micro-batch), not on pp or the stage, so the layouts of one search share
them, and they are the same memo entries the exact evaluation reads.

Composed by `pipeline.ranked_phase` (its figures grow with every stage time) and read as
`search.score` reads the exact figures, the result bounds the value a layout is ranked
by: never above it (up to float rounding, which `ranking.PRUNE_MARGIN` covers)."""

from ...collectives import ceil_div
from . import communication as comms
from .costs import prefill_ranks, unit, unit_cost
from .plan import stage_kinds
from ... import layout as placement


def layer_figures(plan, lay, layer, phase, b):
    """[(R, C)] of one device's shard `layer` in `phase` ("prefill": one per CP rank option;
    "decode": the G - 1 steps, one pair) for a micro-batch of b requests: roofline seconds
    and collective seconds (x the G - 1 steps in "decode")."""
    def make():
        t = comms.tiers(plan, lay)
        out = []
        if phase == "prefill":
            for tokens, history in prefill_ranks(plan, lay.cp):
                w = plan.workload(plan.wp, batch=b, logits="last", tokens=tokens, history=history)
                r = unit_cost(plan, unit(plan, layer), w, ("pass",))[0].time_s
                out.append((r, _layer_comm(plan, lay, layer, "prefill", b * tokens, t)))
            return out
        cp, lo, hi = lay.cp, plan.P, plan.P + plan.steps - 1
        lo2, hi2 = ceil_div(lo, cp), ceil_div(hi, cp)
        w = plan.workload(plan.wd, batch=b, tokens=1, history=0)
        total, first, last = unit_cost(plan, unit(plan, layer), w, ("steps", lo2, hi2))
        r = total.time_s
        if cp > 1:
            x, y = lo - cp * (lo2 - 1) - 1, cp * hi2 - hi
            r = r * cp - first.time_s * x - last.time_s * y
        return [(r, _layer_comm(plan, lay, layer, "decode", b, t) * plan.steps)]
    return plan.memo(("layer figures", lay.tp, lay.ep, lay.cp, lay.sp, comms.comm_tiers(plan, lay), layer,
                      phase, b), make)


def _layer_comm(plan, lay, layer, phase, tokens, t):
    """Seconds of one layer's collectives in one pass (the units `stage_collectives` merges)."""
    cs = comms.units(plan, ("layer", lay.tp, lay.ep, lay.cp, lay.sp, t[:3] + t[4:], layer, phase, tokens),
                     lambda: comms.layer_collectives(plan, lay, layer, phase, tokens))
    return sum(comms.comm_time(plan, c, n) for _, c, n in cs)


def stage_time_bounds(plan, lay, phase, b):
    """A lower bound on every stage's time in `phase` ("prefill" or "decode"), in stage order."""
    ids, firsts = stage_kinds(plan, lay)
    bound = {}
    for k, st in firsts:
        totals = None
        for layer, count, _ in placement.device_layers(plan.arch, lay, st):
            figs = layer_figures(plan, lay, layer, phase, b)
            totals = [(count * r, count * c) for r, c in figs] if totals is None else \
                [(R + count * r, C + count * c) for (R, C), (r, c) in zip(totals, figs)]
        if totals is None:
            bound[k] = 0.0
            continue
        bound[k] = comms.stage_time(plan, max(R for R, _ in totals), min(C for _, C in totals))
    return [bound[k] for k in ids]

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

The per-layer figures depend on (tp, ep, cp, the layer shard, the phase, the micro-batch;
the collectives also on sp and the group tiers), not on pp or the stage, so the layouts of
one search share them, and they are the same memo entries the exact evaluation reads. Left
without the collectives (C = 0, `comm_free_bounds`) the bound is weaker but needs no
collective: a search ranks by it first and adds the collectives only where it cannot prune.

Composed by `pipeline.ranked_phase` (its figures grow with every stage time) and read as
`search.score` reads the exact figures, the result bounds the value a layout is ranked
by: never above it (up to float rounding, which `ranking.PRUNE_MARGIN` covers)."""

from ...splits import ceil_div
from . import communication as comms
from .costs import prefill_ranks, unit, unit_cost
from .plan import stage_kinds
from ...summation import plain_sum


def layer_roofs(plan, lay, layer, phase, b):
    """[R] of one device's shard `layer` in `phase` ("prefill": one per CP rank option;
    "decode": the G - 1 steps summed, one) for a micro-batch of b requests: its roofline
    seconds (`costs.unit_cost`, the entries the exact evaluation reads)."""
    def make():
        if phase == "prefill":
            return [unit_cost(plan, unit(plan, layer), plan.workload(plan.wp, batch=b, logits="last", tokens=tokens,
                                                                     history=history), ("pass",))[0].time_s
                    for tokens, history in prefill_ranks(plan, lay.cp)]
        cp, lo, hi = lay.cp, plan.P, plan.P + plan.steps - 1
        lo2, hi2 = ceil_div(lo, cp), ceil_div(hi, cp)
        w = plan.workload(plan.wd, batch=b, tokens=1, history=0)
        total, first, last = unit_cost(plan, unit(plan, layer), w, ("steps", lo2, hi2))
        r = total.time_s
        if cp > 1:
            x, y = lo - cp * (lo2 - 1) - 1, cp * hi2 - hi
            r = r * cp - first.time_s * x - last.time_s * y
        return [r]
    return plan.memo(("layer roofs", lay.tp, lay.ep, lay.cp, layer, phase, b), make)


def layer_comms(plan, lay, layer, phase, b, *, ct):
    """[C] of the same shard and phase: its collectives' seconds in one pass (per CP rank
    option in "prefill"; x the G - 1 steps in "decode"); `ct`: comm_tiers(plan, lay)."""
    def make():
        if phase == "prefill":
            return [_layer_comm(plan, lay, layer, "prefill", b * tokens, ct=ct)
                    for tokens, _ in prefill_ranks(plan, lay.cp)]
        return [_layer_comm(plan, lay, layer, "decode", b, ct=ct) * plan.steps]
    return plan.memo(("layer comms", lay.tp, lay.ep, lay.cp, lay.sp, ct, layer, phase, b), make)


def _layer_comm(plan, lay, layer, phase, tokens, *, ct):
    """Seconds of one layer's collectives in one pass (the units `stage_collectives` merges)."""
    cs = comms.units(plan, ("layer", lay.tp, lay.ep, lay.cp, lay.sp, ct, layer, phase, tokens),
                     lambda: comms.layer_collectives(plan, lay, layer, phase, tokens))
    return plain_sum(comms.comm_time(plan, c, n) for _, c, n in cs)


def stage_time_bounds(plan, lay, phase, b, comm=True):
    """A lower bound on every stage's time in `phase` ("prefill" or "decode"), in stage order;
    without `comm` the collectives are left out too (a weaker bound, without their cost)."""
    ids, firsts = stage_kinds(plan, lay)
    ct = comms.comm_tiers(plan, lay) if comm else None
    bound = {}
    for k, _ in firsts:
        R = C = None
        for layer, count in plan.kind_layers(k):
            rs = layer_roofs(plan, lay, layer, phase, b)
            R = [count * r for r in rs] if R is None else [x + count * r for x, r in zip(R, rs)]
            if comm:
                cs = layer_comms(plan, lay, layer, phase, b, ct=ct)
                C = [count * c for c in cs] if C is None else [x + count * c for x, c in zip(C, cs)]
        bound[k] = 0.0 if R is None else comms.stage_time(plan, max(R), min(C) if comm else 0.0)
    return [bound[k] for k in ids]


def comm_free_bounds(plan, lay, phase, b):
    """stage_time_bounds without the collectives: the first, cheaper floor of a pruned search."""
    return stage_time_bounds(plan, lay, phase, b, comm=False)

"""The collectives one device of a stage takes part in, a PP boundary's, and their seconds
on the tier each group spans (collectives.py builds them, comm.py costs them)."""

from ... import comm
from .. import stage_comm
from ..stage_comm import DIMS, Traffic, group_tiers
from .conventions import LOGITS_BYTES
from ...summation import plain_sum


def tier(plan, lay, dim):
    """The tier of the `dim` group (`stage_comm.group_tiers`, the rule `train` applies): 'up'
    when the devices it spans fit one scale-up domain, else 'out'."""
    return tiers(plan, lay)[DIMS.index(dim)]


def tiers(plan, lay):
    """stage_comm.group_tiers of the layout (memoized per layout): the tp, ep, cp and pp
    tiers, then the tp, ep and cp groups' ranks per scale-up domain."""
    return plan.memo(("tiers", lay), lambda: group_tiers(lay, plan.device))


def comm_tiers(plan, lay):
    """The tiers and ranks per domain of the tp, ep and cp groups: all a stage's own
    collectives depend on (the PP tier only prices boundary transfers), so layouts differing
    in it share them: (tp, ep, cp tiers, tp, ep, cp locals)."""
    t = tiers(plan, lay)
    return t[:3] + t[4:]


def traffic(plan, lay, phase):
    """The stage_comm.Traffic of the plan's passes in `phase` ("prefill" or "decode")."""
    def make():
        w, act, hidden = plan.w, plan.act_bytes, plan.arch.hidden_size
        return Traffic(hidden=hidden, act_bytes=act, tiers=comm_tiers(plan, lay), kv_dtype=w.kv_dtype,
                       kv_path=(plan.wp if phase == "prefill" else plan.wd).mla,
                       cp_pass="ring" if phase == "prefill" else "merge", dedup=plan.ep_dedup, routing=w.routing,
                       loads=w.routing_loads, dispatch_bytes=comm.token_bytes(hidden, plan.dispatch_dtype, act),
                       combine_bytes=comm.token_bytes(hidden, plan.combine_dtype, act),
                       logits_bytes=LOGITS_BYTES.get(plan.logits_dtype))
    return plan.memo(("traffic", comm_tiers(plan, lay), phase), make)


def stage_collectives(plan, lay, stage, phase, b, *, tokens_per_rank):
    """((Collective with count 1, runs), ...) of one device of `stage` in one micro-batch pass
    of `phase` ("prefill" or "decode"), b requests of tokens_per_rank new tokens each
    (`stage_comm.stage_collectives`, the builder `train` shares): its top blocks' (with the
    head's logits all-gather of the b last positions) and, per distinct layer, one layer's
    collectives x the layer count (each unit memoized)."""
    t = tiers(plan, lay)
    tokens = b * tokens_per_rank
    top = units(plan, ("top", lay.tp, lay.sp, t[0], t[4], stage.has_embedding, stage.has_head, b, tokens_per_rank),
                lambda: top_collectives(plan, lay, stage, b, tokens_per_rank))
    layer_units = lambda layer: units(plan, ("layer", lay.tp, lay.ep, lay.cp, lay.sp, t[:3] + t[4:], layer, phase,
                                             tokens), lambda: layer_collectives(plan, lay, layer, phase, tokens))
    return stage_comm.stage_collectives(plan.arch, lay, stage, tokens, traffic(plan, lay, phase), top=top,
                                        layer_units=layer_units)


def units(plan, key, build):
    """stage_comm.units of the collectives build() returns, memoized by `key`."""
    return plan.memo(("units",) + key, lambda: stage_comm.units(build()))


def merged_collectives(runs):
    """[Collective] of stage_collectives' (unit, runs) pairs, counts restored."""
    return [c.replace(count=n) for c, n in runs]


def top_collectives(plan, lay, stage, b, tokens_per_rank):
    """The embedding's and the head's TP collectives (vocab-parallel) of one pass."""
    return stage_comm.top_collectives(plan.arch, lay, stage, b * tokens_per_rank, traffic(plan, lay, "prefill"),
                                      head_tokens=b)


def layer_collectives(plan, lay, layer, phase, tokens):
    """stage_comm.layer_collectives of ONE layer (its shard `layer`) in one pass of `tokens`
    tokens per rank, each with count 1 (or cp - 1 for the CP ring pass): TP's, EP's, CP's."""
    return stage_comm.layer_collectives(layer, lay, tokens, traffic(plan, lay, phase))


def comm_time(plan, c, runs=None):
    """Seconds of all c.count runs (or `runs` runs) of a collective on its tier (`comm.run_s`,
    as the `collective` command and `train` charge it)."""
    one = plan.memo(("run s", c._values()), lambda: comm.run_s(c, plan.links, plan.algorithm))
    return one * (c.count if runs is None else runs)


def comm_time_fastest(plan, c, runs=None):
    """Seconds of all c.count runs (or `runs` runs) of a collective at `comm.lower_bound_s`
    (the fastest applicable algorithm, the binomial tree, and across domains the physical
    floor): what the lower bound charges."""
    return comm.run_s(c, plan.links, "bound") * (c.count if runs is None else runs)


def algorithm_for(plan, c):
    """The named algorithm where it applies (binomial: all-reduces), ring otherwise."""
    return "binomial" if plan.algorithm == "binomial" and c.kind == "all_reduce" else "ring"


def transfer(plan, lay, tokens):
    """([Collective], seconds) of one PP boundary crossing of `tokens` token activations
    (`collectives.pp_boundary_collectives`: the 1/tp slice per TP rank, and without SP the
    receiver's TP all-gather; with --pp-send replicated the whole tensor per TP rank)."""
    if lay.pp == 1:
        return [], 0.0

    def make():
        cs = comm.pp_boundary_collectives(tokens, plan.arch.hidden_size, plan.act_bytes, tp=lay.tp, sp=lay.sp,
                                          tier_pp=tier(plan, lay, "pp"), tier_tp=tier(plan, lay, "tp"), local_tp=ts[4],
                                          replicated=plan.pp_send == "replicated")
        return cs, plain_sum(comm_time(plan, c) for c in cs)
    ts = tiers(plan, lay)
    return plan.memo(("transfer", lay.tp, lay.sp, ts[3], ts[0], ts[4], tokens), make)


def stage_time(plan, roofline_s, comm_s):
    """A stage's time: roofline + communication, or with --overlap the larger of the two."""
    return max(roofline_s, comm_s) if plan.overlap else roofline_s + comm_s

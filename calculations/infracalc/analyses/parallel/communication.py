"""The collectives one device of a stage takes part in, a PP boundary's, and their seconds
on the tier each group spans (collectives.py builds them, comm.py costs them)."""

from ... import comm
from ... import layout as placement
from ...collectives import ceil_div


def tier(plan, lay, dim):
    """The tier of the `dim` group (`comm.tier`, the rule `train` applies): 'up' when the
    devices it spans fit one scale-up domain, else 'out'."""
    return comm.tier(lay.group_stride("pp") + 1 if dim == "pp" else lay.group_span(dim), plan.device)


def local(plan, lay, dim):
    """Ranks of the `dim` group inside one scale-up domain when it spans several (1 when it
    fits one: then unused): `comm.ranks_per_domain`."""
    return 1 if tier(plan, lay, dim) == "up" else comm.ranks_per_domain(lay, dim, plan.domain)


def tiers(plan, lay):
    """The tier of the tp, ep, cp and pp groups, then the ranks per domain (`local`) of the
    tp, ep and cp groups (memoized per layout)."""
    return plan.memo(("tiers", lay), lambda: tuple(tier(plan, lay, d) for d in ("tp", "ep", "cp", "pp"))
                     + tuple(local(plan, lay, d) for d in ("tp", "ep", "cp")))


def comm_tiers(plan, lay):
    """The tiers and ranks per domain of the tp, ep and cp groups: all a stage's own
    collectives depend on (the PP tier only prices boundary transfers), so layouts differing
    in it share them: (tp, ep, cp tiers, tp, ep, cp locals)."""
    t = tiers(plan, lay)
    return t[:3] + t[4:]


def stage_collectives(plan, lay, stage, phase, b, tokens_per_rank):
    """((Collective with count 1, runs), ...) of one device of `stage` in one micro-batch pass
    of `phase` ("prefill" or "decode"), b requests of tokens_per_rank new tokens each: its top
    blocks' and, per distinct layer, one layer's collectives x the layer count, runs of the
    same collective merged (in order of first appearance)."""
    t = tiers(plan, lay)
    merged = {}
    parts = [(units(plan, ("top", lay.tp, lay.sp, t[0], t[4], stage.has_embedding, stage.has_head, b,
                           tokens_per_rank), lambda: top_collectives(plan, lay, stage, b, tokens_per_rank)), 1)]
    parts += [(units(plan, ("layer", lay.tp, lay.ep, lay.cp, lay.sp, t[:3] + t[4:], layer, phase, b * tokens_per_rank),
                     lambda: layer_collectives(plan, lay, layer, phase, b * tokens_per_rank)), count)
              for layer, count, _ in placement.device_layers(plan.arch, lay, stage)]
    for cs, count in parts:
        for key, c, n in cs:
            run = merged.get(key)
            if run is None:
                merged[key] = [c, n * count]
            else:
                run[1] += n * count
    return tuple((c, n) for c, n in merged.values())


def units(plan, key, build):
    """((values, collective with count 1, its count), ...) of the collectives build()
    returns, memoized by `key` (the values tuple merges equal collectives cheaply)."""
    def make():
        out = []
        for c in build():
            one = c.replace(count=1)
            out.append((one._values(), one, c.count))
        return tuple(out)
    return plan.memo(("units",) + key, make)


def merged_collectives(runs):
    """[Collective] of stage_collectives' (unit, runs) pairs, counts restored."""
    return [c.replace(count=n) for c, n in runs]


def top_collectives(plan, lay, stage, b, tokens_per_rank):
    """The embedding's and the head's TP collectives (vocab-parallel) of one pass."""
    if lay.tp == 1 or not (stage.has_embedding or stage.has_head):
        return []
    arch = plan.arch
    return comm.tp_collectives(b * tokens_per_rank, arch.hidden_size, plan.act_bytes, tp=lay.tp, sp=lay.sp, layers=0,
                               tier=tier(plan, lay, "tp"), embedding=stage.has_embedding,
                               head_tokens=b if stage.has_head else 0,
                               vocab=lay.tp * ceil_div(arch.vocab_size, lay.tp), local=tiers(plan, lay)[4])


def layer_collectives(plan, lay, layer, phase, tokens):
    """The collectives of ONE layer (its shard `layer`) in one pass of `tokens` tokens per
    rank, each with count 1 (or cp - 1 for the CP ring pass): TP's, EP's, CP's, in this order."""
    w, act, hidden = plan.w, plan.act_bytes, plan.arch.hidden_size
    tp_tier, ep_tier, cp_tier, tp_local, ep_local, cp_local = comm_tiers(plan, lay)
    tp, ep, cp, sp = lay.tp, lay.ep, lay.cp, lay.sp
    out = []
    moe = [blk for blk in layer.blocks if hasattr(blk, "experts")]
    if tp > 1:
        mlp = 1 if not moe or comm.moe_keeps_tp_reduction(tp, ep, sp, moe[0].shared_inter) else 0
        out += comm.tp_collectives(tokens, hidden, act, tp=tp, sp=sp, layers=1, tier=tp_tier, embedding=False,
                                   mlp_layers=mlp,
                                   local=tp_local)
    if ep > 1 and moe:
        out += comm.moe_collectives(tokens, moe[0].top_k, hidden, act, tp=tp, ep=ep, moe_layers=1, tier_ep=ep_tier,
                                    tier_tp=tp_tier, dedup=plan.ep_dedup, routing=w.routing, experts=moe[0].experts,
                                    loads=w.routing_loads,
                                    dispatch_token_bytes=comm.token_bytes(hidden, plan.dispatch_dtype, act),
                                    combine_token_bytes=comm.token_bytes(hidden, plan.combine_dtype, act),
                                    local_ep=ep_local, local_tp=tp_local)
    if cp > 1:
        per_token = layer.kv_bytes_per_token(w.kv_dtype, (plan.wp if phase == "prefill" else plan.wd).mla)
        if per_token and phase == "prefill":
            out += comm.cp_collectives(tokens, per_token, cp, 1, cp_tier, local=cp_local)
        elif per_token:
            out.append(comm.Collective("CP decode merge of partial attention", "all_reduce", tokens * hidden * act,
                                       cp, cp_tier, 1, "cp", local=cp_local))
    return out


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
    receiver's TP all-gather)."""
    if lay.pp == 1:
        return [], 0.0

    def make():
        cs = comm.pp_boundary_collectives(tokens, plan.arch.hidden_size, plan.act_bytes, tp=lay.tp, sp=lay.sp,
                                          tier_pp=tier(plan, lay, "pp"), tier_tp=tier(plan, lay, "tp"), local_tp=ts[4])
        return cs, sum(comm_time(plan, c) for c in cs)
    ts = tiers(plan, lay)
    return plan.memo(("transfer", lay.tp, lay.sp, ts[3], ts[0], ts[4], tokens), make)


def stage_time(plan, roofline_s, comm_s):
    """A stage's time: roofline + communication, or with --overlap the larger of the two."""
    return max(roofline_s, comm_s) if plan.overlap else roofline_s + comm_s

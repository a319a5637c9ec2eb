"""The collectives one device of a pipeline stage takes part in during one pass: the one
builder `parallel` (a prefill or a decode step of a micro-batch) and `train` (a micro-batch's
forward, which train charges again for the backward and the recompute) share, with the one
tier rule (`group_tiers`).

A stage's collectives are its top blocks' (the vocab-parallel embedding and head) and, per
distinct layer it holds, one layer's (TP's, EP's, CP's, in this order: `layer_collectives`)
x the layer count; runs of the same collective are merged, in order of first appearance
(`stage_collectives`). `collectives.py` builds each collective from integers; `comm.run_s`
costs it."""

from .. import comm
from .. import layout as placement
from ..splits import ceil_div
from ..record import Record

DIMS = ("tp", "ep", "cp", "pp")


def group_tiers(lay, device):
    """(tp, ep, cp, pp tiers, then the tp, ep and cp groups' ranks per scale-up domain): a
    group is on "up" when the devices it spans (a PP neighbour pair: its stride + 1) fit one
    scale-up domain, else "out" (`comm.tier`); its ranks per domain are 1 on "up", else
    `comm.ranks_per_domain`."""
    domain = device.scale_up.domain_size if device.scale_up else 1
    ts = tuple(comm.tier(lay.group_stride("pp") + 1 if d == "pp" else lay.group_span(d), device) for d in DIMS)
    return ts + tuple(1 if t == "up" else comm.ranks_per_domain(lay, d, domain) for t, d in zip(ts, DIMS[:3]))


class Traffic(Record):
    """What a layer's collectives depend on besides the layer shard, the layout and the tokens."""
    hidden: int
    act_bytes: int
    tiers: tuple                # (tp, ep, cp tiers, tp, ep, cp ranks per domain): group_tiers without pp's
    kv_dtype: object            # of the K/V a CP ring passes
    kv_path: str                # its MLA path (train: "naive")
    cp_pass: str = "ring"       # "ring": the K/V ring pass (prefill, training); "merge": a decode step's
    #                             all-reduce of the partial attention
    dedup: bool = False         # EP dispatch deduplicated per destination (`collectives.ep_collectives`)
    routing: str = "uniform"
    loads: tuple = ()
    dispatch_bytes: object = None   # bytes per token on the wire (None: act_bytes x hidden)
    combine_bytes: object = None
    logits_bytes: object = None     # bytes per gathered logit (None: act_bytes; `parallel --logits-dtype`)


def layer_collectives(layer, lay, tokens, t):
    """The collectives of ONE layer (its shard `layer`) in one pass of `tokens` tokens per rank
    (Traffic t), each with count 1 (cp - 1 for the CP ring pass): TP's, EP's, CP's, in this order.
    An MoE layer keeps its MLP's TP reduction as `collectives.moe_keeps_tp_reduction` says."""
    tp_tier, ep_tier, cp_tier, tp_local, ep_local, cp_local = t.tiers
    tp, ep, cp, sp = lay.tp, lay.ep, lay.cp, lay.sp
    out = []
    moe = [blk for blk in layer.blocks if hasattr(blk, "experts")]
    if tp > 1:
        mlp = 1 if not moe or comm.moe_keeps_tp_reduction(tp, ep, sp, moe[0].shared_inter) else 0
        out += comm.tp_collectives(tokens, t.hidden, t.act_bytes, tp=tp, sp=sp, layers=1, tier=tp_tier,
                                   embedding=False, mlp_layers=mlp, local=tp_local)
    if ep > 1 and moe:
        out += comm.moe_collectives(tokens, moe[0].top_k, t.hidden, t.act_bytes, tp=tp, ep=ep, moe_layers=1,
                                    tier_ep=ep_tier, tier_tp=tp_tier, dedup=t.dedup, routing=t.routing,
                                    experts=moe[0].experts, loads=t.loads, dispatch_token_bytes=t.dispatch_bytes,
                                    combine_token_bytes=t.combine_bytes, local_ep=ep_local, local_tp=tp_local)
    if cp > 1:
        per_token = layer.kv_bytes_per_token(t.kv_dtype, t.kv_path)
        if per_token and t.cp_pass == "ring":
            out += comm.cp_collectives(tokens, per_token, cp, 1, cp_tier, local=cp_local)
        elif per_token:
            out.append(comm.Collective("CP decode merge of partial attention", "all_reduce",
                                       tokens * t.hidden * t.act_bytes, cp, cp_tier, count=1, dim="cp",
                                       local=cp_local))
    return out


def top_collectives(arch, lay, stage, tokens, t, head_tokens=0):
    """The embedding's TP collectives (vocab-parallel) of one pass, and with `head_tokens` the
    head's logits all-gather of that many tokens (over the padded vocabulary)."""
    if lay.tp == 1 or not (stage.has_embedding or (stage.has_head and head_tokens)):
        return []
    return comm.tp_collectives(tokens, arch.hidden_size, t.act_bytes, tp=lay.tp, sp=lay.sp, layers=0,
                               tier=t.tiers[0], embedding=stage.has_embedding,
                               head_tokens=head_tokens if stage.has_head else 0,
                               vocab=lay.tp * ceil_div(arch.vocab_size, lay.tp), logits_bytes=t.logits_bytes,
                               local=t.tiers[3])


def units(collectives):
    """((values, the collective with count 1, its count), ...): the form runs merge in."""
    out = []
    for c in collectives:
        one = c if c.count == 1 else c.replace(count=1)   # most already run once per layer
        out.append((one._values(), one, c.count))
    return tuple(out)


def stage_collectives(arch, lay, stage, tokens, t, *, top=(), layer_units=None):
    """((Collective with count 1, runs in one pass), ...) of one device of `stage`: the `top`
    units (`units(top_collectives(...))`, or none), then per distinct layer one layer's (`layer_units(layer)`, default
    units(layer_collectives(...))) x its count; runs of one collective merged, in order of
    first appearance."""
    merged = {}
    parts = [(top, 1)] + [
        (layer_units(layer) if layer_units else units(layer_collectives(layer, lay, tokens, t)), count)
        for layer, count, _ in placement.device_layers(arch, lay, stage)]
    for cs, count in parts:
        for key, c, n in cs:
            run = merged.get(key)
            if run is None:
                merged[key] = [c, n * count]
            else:
                run[1] += n * count
    return tuple((c, n) for c, n in merged.values())

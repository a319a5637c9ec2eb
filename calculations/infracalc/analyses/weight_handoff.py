"""Weight handoff from training to rollout (`budget handoff`): the BF16 weights each expert-parallel
rank needs, what a producer sends by unicast, and the memory the phases hold (the book's
chapter-10 weight-handoff budget).

Weights are BF16 (2 B per parameter); routed experts (E of them, equal size) split over an EP group
of R ranks in contiguous ranges by quotient and remainder (the first E mod R ranks one more); every
other weight is on every rank. With r replicas (independent EP groups) there are R r recipients:

    rank bytes = non-expert + experts of the rank x per-expert bytes;   full egress = R r x total
    selective egress = r x sum of rank bytes;   transfer >= max(egress / producer rate, largest
    received / receiver rate), for full (every rank the whole model) and selective unicast.

Phases on the largest rank (declared allocations, no aliasing): training = training live + common;
rollout = rank weights + KV + common; syncing the weights before releasing training holds training +
common + rank weights; restoring KV too before the release holds all four. The staged order (sync,
release, then allocate KV) peaks at the largest of training, sync and rollout. A lower bound, not a
framework's handoff.
"""

from fractions import Fraction


def expert_bytes(arch):
    """(total BF16 weight bytes, routed expert bytes, routed experts)."""
    from ..blocks.moe import MoE

    experts = {b.experts for layer in arch.layers for b in layer.blocks if isinstance(b, MoE)}
    routed = sum(t.params for t in arch.tensors() if t.role == "expert")
    return 2 * arch.params, 2 * routed, max(experts, default=0)


def handoff(arch, *, ep, replicas=1, producer_rate, receiver_rate, capacity, training_live, kv, common):
    from ..errors import UserError

    total, experts_b, experts = expert_bytes(arch)
    if ep > max(experts, 1):
        raise UserError(f"--ep {ep} exceeds the {experts} routed experts of {arch.id}")
    nonexpert = total - experts_b
    per = experts_b // experts if experts else 0
    q, r = divmod(experts, ep)
    ranks, start = [], 0
    for k in range(ep):
        n = q + (k < r)
        ranks.append({"rank": k, "experts": f"[{start},{start + n})", "expert_bytes": n * per,
                      "weight_bytes": nonexpert + n * per})
        start += n
    largest = max(x["weight_bytes"] for x in ranks)
    recipients = ep * replicas
    full = recipients * total
    selective = replicas * sum(x["weight_bytes"] for x in ranks)
    phases = {"training": training_live + common, "rollout": largest + kv + common,
              "restore_all_before_release": training_live + common + largest + kv,
              "sync_weights_before_release": training_live + common + largest}
    staged = max(phases["training"], phases["rollout"], phases["sync_weights_before_release"])

    def bound(egress, received):
        return str(max(Fraction(egress, producer_rate), Fraction(received, receiver_rate)))

    return {"model": arch.id, "total_weight_bytes": total, "expert_weight_bytes": experts_b,
            "nonexpert_weight_bytes": nonexpert, "recipients": recipients, "largest_rank_weight_bytes": largest,
            "full_egress_bytes": full, "selective_egress_bytes": selective,
            "egress_ratio_exact": str(Fraction(full, selective)),
            **{f"{k}_bytes": v for k, v in phases.items()}, "staged_peak_bytes": staged,
            "staged_fits": staged <= capacity, "restore_all_fits": phases["restore_all_before_release"] <= capacity,
            "ranks": ranks,
            "unicast": [{"strategy": "full_to_every_rank", "egress_bytes": full, "largest_received_bytes": total,
                         "lower_bound_s_exact": bound(full, total)},
                        {"strategy": "owned_experts_plus_common", "egress_bytes": selective,
                         "largest_received_bytes": largest, "lower_bound_s_exact": bound(selective, largest)}]}


HANDOFF_CONVENTIONS = [
    "BF16 weights; routed experts split over the EP ranks in contiguous quotient-and-remainder ranges (the first "
    "E mod R one more), every other weight on every rank; replicas are independent EP groups. Full unicast sends "
    "the whole model to every rank, selective only its experts and the rest; transfer >= max(egress / producer "
    "rate, largest received / receiver rate): a lower bound (no tree, multicast, startup or congestion).",
    "Phases on the largest rank, declared allocations without aliasing: training live + common; rollout weights + "
    "KV + common; sync before release = training + common + weights; restore all before release adds KV. The "
    "staged order peaks at max(training, sync, rollout).",
]

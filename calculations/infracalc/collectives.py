"""What crosses the links: the collectives of one forward pass (and of a training step's
gradient sync), per parallel dimension, from primitive shapes.

Every builder is a pure function of integers, so `parallel` and `train` call the same ones.
`Collective.bytes` is S as nccl-tests counts it (NVIDIA/nccl-tests:doc/PERFORMANCE.md): the
whole buffer per rank for all-reduce; the gathered output for all-gather; the input for
reduce-scatter; the bytes each rank sends plus keeps for all-to-all; the message for p2p.
What one device actually puts on the wire is `comm.wire_bytes` (S times the ring factor).
`tokens` is the number of tokens one device's model replica processes in the pass (the whole
sequence batch of its DP replica, before any TP/SP split).
"""

import math

from .errors import UserError
from .record import Record
from .splits import ceil_div, expert_tp
from .summation import plain_sum

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p", "broadcast")
TIERS = ("up", "out")
ROUTINGS = ("uniform", "balanced", "concentrated", "histogram")


class Collective(Record):
    name: str        # what it is, e.g. "TP all-reduce after attention"
    kind: str        # one of KINDS
    bytes: int       # S, nccl-tests' convention (module docstring)
    group: int       # ranks in the group (n)
    tier: str        # "up" (scale-up domain) | "out" (scale-out NIC)
    count: int = 1   # runs per pass (e.g. the number of layers)
    dim: str = ""    # tp | pp | ep | dp | cp
    skew: float = 1.0  # busiest rank's traffic / the mean (hot experts); scales the bandwidth term
    local: int = 1   # ranks of the group inside one scale-up domain (tier "out"; `comm.group_local`)
    nic_share: float = 1.0  # all-to-all across domains: the least share of its NIC bytes a node-deduplicating
    #                         implementation sends (`node_share`; DeepEP's normal mode); only the bound reads it
    rank_share: float = 1.0  # all-to-all: the share of its copies a dispatch sending one copy per destination
    #                          rank moves (`rank_share`; DeepEP's and HybridEP's); only a dispatcher's rate reads it

    def _check(self):
        if self.kind not in KINDS:
            raise UserError(f"unknown collective kind '{self.kind}'; choose from {', '.join(KINDS)}")
        if self.tier not in TIERS:
            raise UserError(f"unknown link tier '{self.tier}'; choose from up, out")
        for field in ("bytes", "group", "count"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if field == "group" else 0):
                raise UserError(f"collective '{self.name}': {field} must be a "
                                f"{'positive' if field == 'group' else 'non-negative'} integer, got {value!r}")
        if not self.skew >= 1.0:
            raise UserError(f"collective '{self.name}': skew must be >= 1, got {self.skew!r}")
        if not 0 < self.nic_share <= 1:
            raise UserError(f"collective '{self.name}': nic_share must be in (0, 1], got {self.nic_share!r}")
        if not 0 < self.rank_share <= 1:
            raise UserError(f"collective '{self.name}': rank_share must be in (0, 1], got {self.rank_share!r}")
        if isinstance(self.local, bool) or not isinstance(self.local, int) or not 1 <= self.local <= self.group:
            raise UserError(f"collective '{self.name}': local must be an integer from 1 to the group "
                            f"({self.group}), got {self.local!r}")

    @property
    def total_bytes(self):
        """S summed over the runs of one pass."""
        return self.bytes * self.count


def _positive(**values):
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UserError(f"{name} must be a positive integer, got {value!r}")


def tp_collectives(tokens, hidden, act_bytes, *, tp, sp, layers, tier, mlp_layers=None,
                   embedding=True, head_tokens=0, vocab=0, logits_bytes=None, local=1):
    """Tensor parallelism, forward pass (Megatron-LM; Shoeybi et al. 2019, arXiv:1909.08053;
    sequence parallelism: Korthikanti et al. 2022, arXiv:2205.05198).

    Without SP, per layer: one all-reduce of [tokens, hidden] after the attention (row-parallel
    output projection) and one after the MLP (row-parallel down projection).
    With SP the activations between blocks stay split over the sequence: each all-reduce becomes
    a reduce-scatter of the same [tokens, hidden] buffer and the block's input is rebuilt by an
    all-gather of it: same ring traffic (2(n-1)/n S = (n-1)/n S + (n-1)/n S).
    Vocab-parallel embedding: each rank looks up its vocabulary slice and an all-reduce of
    [tokens, hidden] sums them (with SP, a reduce-scatter). Head: with SP the last norm's output is
    all-gathered first; the vocab-parallel head's logits [head_tokens, vocab] are all-gathered
    (`vocab` is the padded vocabulary the head holds; `logits_bytes` defaults to `act_bytes`).
    `mlp_layers` (default `layers`) counts layers whose MLP is TP-split (MoE layers under EP
    without expert TP have none). `local`: the group's ranks per scale-up domain (tier "out")."""
    _positive(tokens=tokens, hidden=hidden, act_bytes=act_bytes, tp=tp)
    if tp == 1:
        return []
    mlp_layers = layers if mlp_layers is None else mlp_layers
    s = tokens * hidden * act_bytes
    c = lambda name, kind, size, count: Collective(name, kind, size, tp, tier, count=count, dim="tp",
                                                               local=local)
    out = []
    if embedding:
        out.append(c("TP embedding reduce-scatter (vocab-parallel, SP)" if sp else
                     "TP embedding all-reduce (vocab-parallel)", "reduce_scatter" if sp else "all_reduce", s, 1))
    if sp:
        out += [c("SP all-gather before attention", "all_gather", s, layers),
                c("SP reduce-scatter after attention", "reduce_scatter", s, layers)]
        if mlp_layers:
            out += [c("SP all-gather before MLP", "all_gather", s, mlp_layers),
                    c("SP reduce-scatter after MLP", "reduce_scatter", s, mlp_layers)]
    else:
        out.append(c("TP all-reduce after attention", "all_reduce", s, layers))
        if mlp_layers:
            out.append(c("TP all-reduce after MLP", "all_reduce", s, mlp_layers))
    if head_tokens:
        if sp:
            out.append(c("SP all-gather before the head", "all_gather", s, 1))
        if not vocab:
            raise UserError("the head's logits gather needs the vocabulary size")
        logits = head_tokens * vocab * (logits_bytes or act_bytes)
        out.append(c("TP head logits all-gather (vocab-parallel)", "all_gather", logits, 1))
    return [x for x in out if x.count]


def distinct_devices(experts, top_k, ep):
    """Expected distinct EP ranks among one token's top-k experts (exact, a Fraction).

    The k experts are k distinct of E, uniformly at random; each rank holds m = E/ep of them.
    A rank is missed when all k come from the other E - m: P = C(E-m, k) / C(E, k). By
    linearity of expectation, E[distinct ranks] = ep * (1 - C(E-m, k) / C(E, k))."""
    from fractions import Fraction   # only dedup needs exact rationals

    m = experts // ep
    return ep * (1 - Fraction(math.comb(experts - m, top_k), math.comb(experts, top_k)))


def rank_share(experts, top_k, ep):
    """Share of an EP all-to-all's per-expert copies that a dispatch sending one copy per destination
    rank moves (DeepEP's and HybridEP's dispatch; their combine returns the same rows), under uniform
    routing with E / ep experts per rank: E[distinct ranks] / k (`distinct_devices`). Qwen3-30B-A3B at
    EP 8 (E 128, k 8): (1 - C(112, 8) / C(128, 8)) = 0.667."""
    return float(distinct_devices(experts, top_k, ep) / top_k)


def node_share(experts, top_k, ep, local, dedup=False):
    """Least share of an EP all-to-all's NIC bytes a node-deduplicating dispatch sends (DeepEP's
    normal kernels: one RDMA copy per destination node, forwarded inside it over NVLink), under
    uniform routing, experts placed E/ep per rank and `local` EP ranks per node (m = ep / local
    nodes of E local / ep experts each):

        remote nodes a token reaches   (m - 1) (1 - C(E - E g/ep, k) / C(E, k))
        copies a rank sends off-node   k (ep - g) / ep   (dedup: (ep - g)(1 - C(E - E/ep, k) / C(E, k)))

    and the share is their ratio (<= 1; 1 when the group fits one node). DeepSeek-V3 at EP 64, 8
    per node (E 256, k 8): 7 x (1 - C(224, 8)/C(256, 8)) / 7 = 0.662."""
    from fractions import Fraction

    if local >= ep or not experts:
        return 1.0
    nodes, per_node = ep // local, experts * local // ep
    miss = lambda held: Fraction(math.comb(experts - held, top_k), math.comb(experts, top_k))
    remote_nodes = (nodes - 1) * (1 - miss(per_node))
    copies = (ep - local) * (1 - miss(experts // ep)) if dedup else Fraction(top_k * (ep - local), ep)
    return float(min(1, remote_nodes / copies))


def _routing_skew(routing, experts, top_k, ep, loads):
    """Busiest rank's share of the routed copies over the mean share (1 = even)."""
    m = experts // ep
    if routing in ("uniform", "balanced"):
        return 1.0
    if routing == "concentrated":   # every token picks experts 0..k-1, placed m per rank
        return ep * min(top_k, m) / top_k
    if routing == "histogram":
        if len(loads) != experts:
            raise UserError(f"routing histogram has {len(loads)} entries; this model has {experts} experts per layer")
        total = plain_sum(loads)
        return ep * max(plain_sum(loads[r * m:(r + 1) * m]) for r in range(ep)) / total
    raise UserError(f"unknown routing model '{routing}'; choose from {', '.join(ROUTINGS)}")


def token_bytes(hidden, dtype_name, act_bytes):
    """Bytes one token's [hidden] vector takes on the wire in a dispatch or combine format:
    fp8 carries one fp32 scale per 128 values (DeepEP's FP8 dispatch, 1x128 block scales:
    deepseek-ai/DeepEP README, 'FP8 dispatching'; the DeepSeek-V3 report, arXiv:2412.19437,
    section 3.3, fine-grained 1x128 activation tiles): hidden + 4 ceil(hidden / 128);
    bf16/fp16 2 hidden, fp32 4 hidden; "" (not given) is the activation format, act_bytes each."""
    if not dtype_name:
        return hidden * act_bytes
    if dtype_name == "fp8":
        return hidden + 4 * ceil_div(hidden, 128)
    widths = {"bf16": 2, "fp16": 2, "fp32": 4}
    if dtype_name not in widths:
        raise UserError(f"unknown dispatch/combine format '{dtype_name}'; choose from fp8, bf16, fp16, fp32")
    return hidden * widths[dtype_name]


WIRE_FORMATS = ("fp8", "bf16", "fp16", "fp32")


def ep_collectives(tokens, top_k, hidden, act_bytes, *, ep, moe_layers, tier, dedup=False,
                   routing="uniform", experts=0, loads=(), dispatch_token_bytes=None,
                   combine_token_bytes=None, share=1, local=1):
    """Expert parallelism: all-to-all dispatch and combine per MoE layer (GShard, Lepikhin et
    al. 2020, arXiv:2006.16668; DeepEP, deepseek-ai/DeepEP).

    Per copy: each token sends [hidden] to each of its k experts; S (sent + kept) =
    tokens * k * hidden * act_bytes. A copy leaves its rank with probability (ep-1)/ep under
    uniform routing, so a rank sends (ep-1)/ep * S (the all-to-all's ring factor).
    Qwen3-30B-A3B at ep 8: 8 * 2048 * 2 * 7/8 = 28,672 B per token.
    dedup: one copy per destination rank instead of per expert (DeepEP's dispatch):
    S = tokens * hidden * act_bytes * E[distinct ranks] (`distinct_devices`, uniform routing only),
    rounded up to whole bytes. Combine returns the same copies. Formats: a copy is
    `dispatch_token_bytes` on the way out and `combine_token_bytes` back (`token_bytes`; DeepEP
    dispatches FP8 with block scales and combines BF16); both default to hidden x act_bytes.
    Routing (as the MoE block's models, experts placed E/ep per rank in order): balanced and
    uniform load every rank evenly; concentrated (all tokens pick experts 0..k-1) and a
    histogram load the busiest rank `skew` times the mean, which scales the bandwidth term.
    `share`: the tokens' copies are spread evenly over that many ranks (a TP group) and one rank
    sends its share: ceil(tokens x k / share) copies (dedup: tokens / share in expectation)."""
    _positive(tokens=tokens, top_k=top_k, hidden=hidden, act_bytes=act_bytes, ep=ep)
    if ep == 1 or not moe_layers:
        return []
    if (dedup or routing not in ("uniform", "balanced")) and not experts:
        raise UserError("EP dedup and non-uniform routing need the number of routed experts")
    if experts:
        if experts % ep:
            raise UserError(f"EP {ep} does not divide the {experts} routed experts")
        if top_k > experts:
            raise UserError(f"top-k {top_k} exceeds the {experts} routed experts")
    skew = _routing_skew(routing, experts, top_k, ep, loads) if experts else 1.0
    out_bytes = dispatch_token_bytes or hidden * act_bytes
    back_bytes = combine_token_bytes or hidden * act_bytes
    if dedup:
        if routing != "uniform":
            raise UserError("EP dedup's expected destination count is derived for uniform routing only")
        copies = tokens * distinct_devices(experts, top_k, ep) / share
        dispatch = math.ceil(copies * out_bytes)
        combine = math.ceil(copies * back_bytes)
    else:
        copies = ceil_div(tokens * top_k, share)
        dispatch = copies * out_bytes
        combine = copies * back_bytes
    how = " (one copy per destination rank)" if dedup else ""
    even = routing in ("uniform", "balanced")
    share = node_share(experts, top_k, ep, local, dedup) if tier == "out" and even else 1.0
    per_rank = rank_share(experts, top_k, ep) if experts and even and not dedup else 1.0
    return [Collective(f"EP dispatch all-to-all{how}", "all_to_all", dispatch, ep, tier, count=moe_layers, dim="ep",
                       skew=skew,
                       local=local, nic_share=share, rank_share=per_rank),
            Collective(f"EP combine all-to-all{how}", "all_to_all", combine, ep, tier, count=moe_layers, dim="ep",
                       skew=skew,
                       local=local, nic_share=share, rank_share=per_rank)]


def moe_keeps_tp_reduction(tp, ep, sp, shared):
    """Whether an MoE layer keeps its MLP's TP collectives (`tp_collectives`' 'after MLP'
    all-reduce, or with SP the all-gather before and reduce-scatter after) under `moe_collectives`'
    convention: always without EP; with EP only when the layer has TP-split shared experts or
    runs without sequence parallelism (then the all-reduce both sums the shared experts' partial
    outputs and reassembles the routed outputs of the TP ranks' token slices)."""
    if tp == 1:
        return False
    if ep == 1:
        return True
    return bool(shared) or not sp


def moe_collectives(tokens, top_k, hidden, act_bytes, *, tp, ep, moe_layers, tier_ep, tier_tp,
                    dedup=False, routing="uniform", experts=0, loads=(), dispatch_token_bytes=None,
                    combine_token_bytes=None, local_ep=1, local_tp=1):
    """The expert-parallel traffic of `moe_layers` MoE layers in one forward pass: THE convention
    `parallel` and `train` share (Megatron-LM's all-to-all token dispatcher,
    NVIDIA/Megatron-LM:megatron/core/transformer/moe/token_dispatcher.py: a rank's local tokens
    are S/TP x B, its sequence-parallel slice; Megatron requires sequence parallelism with TP
    and EP).

    - Each TP rank dispatches the routed copies of its own 1/tp slice of the replica's tokens
      (with SP the activations are already split so; without SP the rank takes its slice of the
      replicated input locally): dispatch and combine all-to-all over the EP group of
      S = ceil(tokens x k / tp) copies x hidden x bytes each (`ep_collectives` with share = tp;
      copies rounded up as the compute split rounds them, so a decode step of fewer tokens than
      TP ranks still sends whole copies).
    - When ep < tp each expert is split over expert TP etp = tp/ep ranks (`expert_tp`): the
      copies a rank received are all-gathered over its etp group before the experts and the
      outputs reduce-scattered after: S = etp x the dispatch's S (the gathered copies), in the
      TP group's tier.
    This matches the layout library's compute split: a device runs tokens x k / min(tp, ep)
    routed copies (`blocks.moe.MoE.ops`): tokens x k / tp received, times etp when ep < tp.
    Whether the layer's TP reduction stays is `moe_keeps_tp_reduction`."""
    _positive(tokens=tokens, tp=tp)
    out = ep_collectives(tokens, top_k, hidden, act_bytes, ep=ep, moe_layers=moe_layers, tier=tier_ep, dedup=dedup,
                         routing=routing,
                         experts=experts, loads=loads, dispatch_token_bytes=dispatch_token_bytes,
                         combine_token_bytes=combine_token_bytes, share=tp, local=local_ep)
    etp = expert_tp(tp, ep)
    if out and etp > 1:
        dispatch, combine = out
        out += [Collective("EP expert-TP all-gather of the received copies", "all_gather", etp * dispatch.bytes,
                           etp, tier_tp, count=moe_layers, dim="ep", skew=dispatch.skew, local=min(local_tp, etp)),
                Collective("EP expert-TP reduce-scatter of the expert outputs", "reduce_scatter",
                           etp * combine.bytes, etp, tier_tp, count=moe_layers, dim="ep", skew=combine.skew,
                           local=min(local_tp, etp))]
    return out


def pp_boundary_collectives(tokens, hidden, act_bytes, *, tp, sp, tier_pp, tier_tp, direction="activations",
                            local_tp=1, replicated=False):
    """One pipeline boundary crossing of [tokens, hidden]: THE convention `parallel` and `train`
    share (Megatron-LM's scatter/gather optimization, Narayanan et al. 2021, arXiv:2104.04473,
    section 4.1): each TP rank sends only its 1/tp slice of the flattened tensor,
    ceil(tokens x hidden / tp) x bytes (`pp_collectives`), over its own link; with sequence
    parallelism the activations are already that slice, without it the receiving stage rebuilds
    the replicated tensor by an all-gather of [tokens, hidden] over its TP group. `direction` names what crosses (activations forward,
    gradients backward). `replicated` (the book's basic placement, `parallel --pp-send replicated`):
    without SP every TP rank sends the whole replicated [tokens, hidden] to its matching rank
    of the next stage and nothing is gathered (the same bytes per rank, one step instead of
    tp); with SP the slice is all there is to send, so it changes nothing."""
    _positive(tokens=tokens, hidden=hidden, tp=tp)
    if replicated and tp > 1 and not sp:
        (send,) = pp_collectives(tokens, hidden, act_bytes, 1, tier_pp)
        to = "previous" if direction == "gradients" else "next"
        return [send.replace(name=f"PP {direction} send to the {to} stage (whole tensor per TP rank)")]
    (send,) = pp_collectives(1, ceil_div(tokens * hidden, tp), act_bytes, 1, tier_pp)
    to = "previous" if direction == "gradients" else "next"
    send = send.replace(name=f"PP {direction} send to the {to} stage" + (" (1/tp slice per TP rank)" if tp > 1 else ""))
    if tp == 1 or sp:
        return [send]
    return [send, Collective(f"PP {direction} all-gather over TP at the receiving stage", "all_gather",
                             tokens * hidden * act_bytes, tp, tier_tp, count=1, dim="pp", local=local_tp)]


def pp_collectives(tokens, hidden, act_bytes, boundaries, tier):
    """Pipeline parallelism: a point-to-point send of the activations [tokens, hidden] across
    each stage boundary (pp - 1 boundaries per forward pass; Narayanan et al. 2021,
    arXiv:2104.04473)."""
    _positive(tokens=tokens, hidden=hidden, act_bytes=act_bytes)
    if not boundaries:
        return []
    return [Collective("PP activations send (stage boundary)", "p2p", tokens * hidden * act_bytes, 2,
                       tier, count=boundaries, dim="pp")]


def cp_collectives(tokens_per_rank, kv_bytes_per_token_per_layer, cp, layers, tier, local=1):
    """Context parallelism, ring attention (Liu et al. 2023, arXiv:2310.01889): per layer each
    rank passes its K/V shard (tokens_per_rank * K/V bytes per token per layer) to the next
    rank cp - 1 times, so every rank sees every shard: cp - 1 p2p steps per layer, the traffic
    of an all-gather of the K/V. The zig-zag split changes which tokens a rank holds, not the
    bytes (see `cp_attention_pairs` for the compute balance)."""
    _positive(tokens_per_rank=tokens_per_rank, kv_bytes_per_token_per_layer=kv_bytes_per_token_per_layer, cp=cp)
    if cp == 1 or not layers:
        return []
    return [Collective("CP ring pass of K/V shards", "p2p", tokens_per_rank * kv_bytes_per_token_per_layer,
                       cp, tier, count=(cp - 1) * layers, dim="cp", local=local)]


def cp_attention_pairs(tokens_per_rank, cp, zigzag=False):
    """Causal query-key pairs each CP rank computes, per head and layer (a tuple, rank order).

    Contiguous split, chunk c = tokens_per_rank: rank r attends to r full earlier chunks and its
    own triangle: c^2 r + c(c+1)/2, so the last rank does the most (the causal imbalance).
    Zig-zag split (2cp chunks of h = c/2, rank r takes chunks r and 2cp-1-r): chunk j costs
    h^2 j + h(h+1)/2, so every rank gets h^2 (2cp-1) + h(h+1): exactly balanced. The sum over
    ranks is T(T+1)/2 with T = cp * c either way."""
    _positive(tokens_per_rank=tokens_per_rank, cp=cp)
    c = tokens_per_rank
    if not zigzag:
        return tuple(c * c * r + c * (c + 1) // 2 for r in range(cp))
    if c % 2:
        raise UserError(f"zig-zag context parallelism needs an even number of tokens per rank, got {c}")
    h = c // 2
    chunk = lambda j: h * h * j + h * (h + 1) // 2
    return tuple(chunk(r) + chunk(2 * cp - 1 - r) for r in range(cp))


def dp_gradient_collectives(grad_bytes, dp, zero_stage, tier, *, param_bytes=None, local=1):
    """Data parallelism, one training step's gradient and parameter traffic by ZeRO stage
    (Rajbhandari et al. 2019, arXiv:1910.02054, section 7):
    stage 0: all-reduce of the gradients (2(n-1)/n Psi on the wire);
    stages 1, 2: reduce-scatter of the gradients + all-gather of the updated parameters (the
    same 2(n-1)/n Psi; Megatron's distributed optimizer does the same);
    stage 3: reduce-scatter of the gradients + an all-gather of the parameters before the forward
    and again before the backward (3(n-1)/n Psi, 1.5x the baseline).
    `param_bytes` (the parameters in their communication dtype) defaults to `grad_bytes` (the
    same dtype for both, e.g. BF16)."""
    _positive(grad_bytes=grad_bytes, dp=dp)
    if zero_stage not in (0, 1, 2, 3):
        raise UserError(f"ZeRO stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    if dp == 1:
        return []
    params = grad_bytes if param_bytes is None else param_bytes
    c = lambda name, kind, size, count=1: Collective(name, kind, size, dp, tier, count=count, dim="dp",
                                                                         local=local)
    if zero_stage == 0:
        return [c("DP gradient all-reduce", "all_reduce", grad_bytes)]
    out = [c("DP gradient reduce-scatter", "reduce_scatter", grad_bytes)]
    if zero_stage == 3:
        return out + [c("ZeRO-3 parameter all-gather (forward and backward)", "all_gather", params, 2)]
    return out + [c("DP updated-parameter all-gather", "all_gather", params)]

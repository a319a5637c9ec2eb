"""Step time of training on a layout: compute of each device's shard, exposed
communication, the pipeline bubble, the data-parallel sync and the optimizer.

Per micro-batch and pipeline stage (one device of the stage):
- compute: the roofline of every operator of the stage's shard, each
  max(FLOPs / peak, bytes / bandwidth) and summed (the operator-sum bound of
  `analyses/roofline.py`), for the forward, the backward (`train_flops.backward`)
  and what the recompute level runs again. W (the weight-gradient part of the
  backward, for the zero-bubble and DualPipe formulas) = each GEMM's forward
  time again (dW = X^T dY is as large as the forward matmul). With context
  parallelism every rank does 1/cp of the FLOPs and activation bytes (a zig-zag
  split balances the causal work, `collectives.cp_attention_pairs`) and reads
  all of its weights; with sequence parallelism the decoder layers' norms and
  residual adds (the sequence region) likewise do 1/tp of theirs;
- communication (`collectives` builders costed by `comm.run_s`, ring
  algorithm (multi-rail across domains), not overlapped with compute): TP/SP collectives of the forward
  (every layer; MoE layers under EP keep the MLP reduction only with shared
  experts or without SP, `collectives.moe_keeps_tp_reduction`; the
  vocab-parallel embedding, the vocab-parallel
  cross-entropy's three all-reduces of one fp32 per token), the same layer
  collectives again in the backward (Megatron's conjugate f/g operators) and
  in a full recompute; EP dispatch + combine all-to-all of each TP rank's
  1/tp token slice (`collectives.moe_collectives`, shared with `parallel`;
  with expert TP > 1 an all-gather and a reduce-scatter over the expert-TP
  group too) in the forward and again in the backward (4 all-to-alls per MoE
  layer per micro-batch; 6 with full recompute); the CP ring pass of K/V in the forward, twice its traffic in the
  backward (K/V again and dK/dV back) and once more when the attention is
  recomputed; PP point-to-point of the stage's output forward (all but the
  last stage) and of its input gradient backward (all but the first), the
  1/tp slice per TP rank (Narayanan et al. 2021 section 4.1 scatter/gather;
  without SP the receiver all-gathers it over TP;
  `collectives.pp_boundary_collectives`, shared with `parallel`), v times
  with v interleaved chunks, but for the end of the model (`boundary_runs`:
  under interleaving the last stage sends v - 1 chunks forward to the
  first, the first v - 1 gradients back to the last).

Pipeline (t_s = forward + backward + recompute of stage s, one micro-batch;
m micro-batches, p stages, b = the slowest stage):
- 1f1b: m t_b + (sum_s t_s - t_b): with equal stages (m + p - 1) t, a bubble
  fraction (p - 1)/m (Narayanan et al. 2021, arXiv:2104.04473, section 2.2.1);
- interleaved (v chunks per stage): bubble (sum_s t_s - t_b) / v, fraction
  (p - 1)/(m v) (ibid., section 2.2.2); needs m a multiple of p;
- zero-bubble (ZB-H1 / ZB1P, Qi et al. 2023, arXiv:2401.10241): bubble
  (p - 1)(F + B - 2W) of the slowest stage (B the whole backward with recompute);
- dualpipe (DeepSeek-V3, arXiv:2412.19437 Table 2): bubble
  (p/2 - 1)(F&B + B - 3W), F&B taken as F + B (no credit for the overlap of
  the two directions), 2x parameters per device; needs p even.

`step_lower_bound` is a lower bound on the same step (its docstring): what the
estimate above can approach but no run can beat.

Once per step, per stage (the slowest counts): the data-parallel gradient
sync (`collectives.dp_gradient_collectives`; dense parameters over DP x CP,
routed experts over the expert-data-parallel group), ZeRO-3's two parameter
all-gathers per micro-batch, and the optimizer update, memory-bound: it
reads and writes every optimizer state, reads the gradient and writes the
weight of the parameters this device updates. `overlap_dp` hides the
gradient sync under one micro-batch's backward, the parameter all-gather
under one forward, and ZeRO-3's gathers under every micro-batch's compute.
"""

import sys

from .. import comm
from .. import layout as placement
from ..collectives import Collective, dp_gradient_collectives, pp_boundary_collectives
from ..errors import UserError
from ..record import Record
from ..splits import ceil_div
from . import stage_comm, train_flops, train_memory
from .efficiency.collective import EP_DISPATCHERS, seconds as nccl_seconds
from .efficiency.dispatcher import sm_share
from .roofline import roof as make_roof
from ..summation import plain_sum

SCHEDULES = ("1f1b", "interleaved", "zero-bubble", "dualpipe")
CE_ALLREDUCES = 3      # vocab-parallel cross-entropy: max, sum of exp, target logit (fp32 per token)
ALGORITHM = "ring"


class Pass(Record):
    """Seconds of one micro-batch on one device: forward, backward (of which
    the weight gradients), recompute."""
    forward: float = 0.0
    backward: float = 0.0
    weight_grad: float = 0.0
    recompute: float = 0.0

    def __add__(self, o):
        return Pass(self.forward + o.forward, self.backward + o.backward,
                    self.weight_grad + o.weight_grad, self.recompute + o.recompute)

    def times(self, k):
        return Pass(self.forward * k, self.backward * k, self.weight_grad * k, self.recompute * k)

    @property
    def total(self):
        return self.forward + self.backward + self.recompute


def in_sequence_region(op):
    """True for the operators Megatron's sequence parallelism runs on 1/tp of the
    tokens (Korthikanti et al. 2022, arXiv:2205.05198, section 4.2.2): the residual
    stream's norms (their saved input is in the sequence region) and the residual
    adds (with their dropout)."""
    return op.kind == "residual" or (op.kind == "norm" and op.saved_replicated > 0)


def row_terms(op, w, vocab, recompute, flash):
    """What the roofline of one forward row's pass reads, device-independent: (linear row?, in the
    sequence region?, forward matrix FLOPs, vector FLOPs, bytes, weight bytes, the same four of
    its backward (`train_flops.backward`; the weights read twice, dX = dY W^T and dW, none by a
    memory row), a GEMM (its weight gradient = its forward time)?, run again by the recompute?, and for
    a fused attention row (head dimension, keys per query: pairs / queries = T x FLOPs / rectangle
    FLOPs, the shape efficiency.attention prices it by), else None)."""
    b = train_flops.backward(op, w, vocab, flash)
    wb = op.weight_read
    geometry = None
    if op.kind == "attention" and op.rect_flops:
        geometry = (op.head_dim, w.tokens * op.matrix_flops / op.rect_flops)
    return (train_flops.linear_row(op), in_sequence_region(op), op.matrix_flops, op.vector_flops,
            op.bytes_moved, wb, b.matrix_flops, b.vector_flops, b.bytes, 0 if op.kind == "memory" else 2 * wb,
            op.kind == "gemm", train_flops.recomputed(op, recompute), geometry)


def terms_pass(terms, roofs, cp, sp_tp=1):
    """Pass of forward rows given by their `row_terms`: their `row_seconds` summed in order."""
    return seconds_pass(row_seconds(terms, roofs, cp, sp_tp))


def row_seconds(terms, roofs, cp, sp_tp=1):
    """[(forward s, backward s, a GEMM?, run again by the recompute?)] of forward rows given by their
    `row_terms`: each direction's roofline on one CP rank, max(matrix / (cp peak) + vector / (cp
    vector peak), (weights + other bytes / cp) / bandwidth); `roofs` = (the compute format's roof,
    BF16's): linear rows at the first, every other row at the second (the format convention,
    train_flops.stored_workload); `sp_tp` = tp under sequence parallelism: the sequence-region
    rows do 1/sp_tp of their work. A third roof, efficiency.attention's AttentionRates (the
    predicted step's), prices the fused attention rows' matrix work at the kernel's forward and
    backward rates for their shape instead of the matrix peak."""
    out = []
    r_linear, r_other = roofs[0], roofs[1]
    attention = roofs[2] if len(roofs) > 2 else None
    seq_split = cp * sp_tp
    for linear, seq, fm, fv, fb, fw, bm, bv, bb, bw, gemm, rec, geometry in terms:
        r = r_linear if linear else r_other
        mps, vps, bps = r.matrix_flops_per_s, r.vector_flops_per_s, r.bytes_per_s
        split = seq_split if seq else cp
        if attention is not None and geometry is not None:
            fm_s = attention.forward_s(fm, *geometry) / split
            bm_s = attention.backward_s(fm, *geometry) / split
        else:
            fm_s, bm_s = fm / split / mps, bm / split / mps
        fwd = max(fm_s + fv / split / vps, (fw + (fb - fw) / split) / bps)
        bwd = max(bm_s + bv / split / vps, (bw + (bb - bw) / split) / bps)
        out.append((fwd, bwd, gemm, rec))
    return out


def seconds_pass(rows):
    """Pass of rows given by their `row_seconds`, summed in row order: forward, backward, the
    GEMMs' weight gradients (each its forward's time) and the recomputed rows' forward."""
    fwd_s = bwd_s = wgrad_s = rec_s = 0.0
    for fwd, bwd, gemm, rec in rows:
        fwd_s += fwd
        bwd_s += bwd
        if gemm:
            wgrad_s += fwd
        if rec:
            rec_s += fwd
    return Pass(fwd_s, bwd_s, wgrad_s, rec_s)


def ops_pass(ops, w, vocab, roofs, *, cp, recompute, flash, sp_tp=1):
    """Pass of a list of forward ledger rows (one micro-batch): `terms_pass` of their
    `row_terms`."""
    return terms_pass([row_terms(op, w, vocab, recompute, flash) for op in ops], roofs, cp, sp_tp)


def block_terms(block, w, recompute, flash):
    """The `row_terms` of one block's training rows (`train_flops.recipe_block_ops`), memoized: the
    layers of a model share most blocks, and a step's estimate and prediction share all."""
    return placement.memo(("train terms", block, w, recompute, flash), lambda: tuple(
        row_terms(op, w, 0, recompute, flash) for op in train_flops.recipe_block_ops(block, w)))


def block_seconds(b, w, r, *, cp, recompute, flash, sp_tp=1):
    """The `row_seconds` of one block's training rows, memoized per block (the layers share most blocks)."""
    return placement.memo(("train seconds", b, w, r, cp, recompute, flash, sp_tp),
                          lambda: tuple(row_seconds(block_terms(b, w, recompute, flash), r, cp, sp_tp)))


def layer_pass(layer, w, r, *, cp, recompute, flash, sp_tp=1):
    """Pass of one decoder layer as one device holds it: its blocks' `block_seconds` summed in row
    order (memoized)."""
    key = ("train pass", layer, w, r, cp, recompute, flash, sp_tp)
    return placement.memo(key, lambda: seconds_pass([
        row for b in layer.blocks for row in block_seconds(b, w, r, cp=cp, recompute=recompute, flash=flash,
                                                           sp_tp=sp_tp)]))


def top_pass(arch, lay, stage, w, *, r, cp, recompute, flash):
    """Embedding on the first stage; final norm, head and loss on the last (in BF16 under an
    8-bit compute format: train_flops.stored_workload)."""
    w, r = train_flops.stored_workload(w), (r[1], r[1])
    emb, norm, head = placement.top_shards(arch, lay, stage)
    ops = [op.times(1, "-") for b in (emb, norm, head) for op in placement.block_ops(b, w)]
    vocab = 0
    if stage.has_head:
        vocab = head.vocab
        ops += [op.times(1, "-") for op in train_flops.CrossEntropy(vocab).ops(w)]
    return ops_pass(ops, w, vocab, r, cp=cp, recompute=recompute, flash=flash)


class Timed(Record):
    """A collective of one micro-batch (or one step), with its seconds for all its runs."""
    collective: object
    phase: str        # forward | backward | recompute | step
    seconds: float


def stage_collectives(arch, lay, stage, w, device, *, recompute, chunks, wire=("", "")):
    """[(Collective, phase)] one device of `stage` runs per micro-batch; `wire`: the formats of
    the EP dispatch and combine ("" = the activation format; `collectives.token_bytes`). The
    forward's layer collectives are `stage_comm.stage_collectives`' (the builder `parallel`
    shares: one layer's TP, EP and CP collectives x the layer count, the tiers of
    `stage_comm.group_tiers`), the embedding's its `top_collectives` (no logits gather: the loss
    is vocab-parallel, its three all-reduces charged here). The backward repeats the layers' TP
    and EP collectives (Megatron's conjugate f/g operators; a dispatch's backward is a combine,
    DeepEP, so each direction keeps its format) and twice the CP ring's traffic (K/V, and dK/dV
    back); a recompute repeats the forward's layer collectives (CP's with any recompute)."""
    tp, cp = lay.tp, lay.cp
    w = train_flops.stored_workload(w)    # activations travel in BF16 under an 8-bit compute format
    act = w.act_dtype.bits // 8
    hidden = arch.hidden_size
    level, modules = train_flops.parse_recompute(recompute)
    full = level == "full"
    tiers = stage_comm.group_tiers(lay, device)
    tokens, t = _traffic(arch, lay, w, tiers, wire)
    layers = [c.replace(count=n) for c, n in stage_comm.stage_collectives(arch, lay, stage, tokens, t)]
    of = lambda dim: [c for c in layers if c.dim == dim]
    t_tp, l_tp = tiers[0], tiers[4]
    out = []
    if tp > 1:
        fwd = stage_comm.top_collectives(arch, lay, stage, tokens, t) + of("tp")
        if stage.has_head:
            fwd.append(Collective("TP vocab-parallel cross-entropy all-reduces (fp32 per token)",
                                  "all_reduce", tokens * 4, tp, t_tp, count=CE_ALLREDUCES, dim="tp", local=l_tp))
        out += [(c, "forward") for c in fwd] + [(c, "backward") for c in of("tp")]
        out += [(c, "recompute") for c in of("tp")] if full else []
    cs = of("ep")
    out += [(c, "forward") for c in cs] + [(c, "backward") for c in cs]
    out += [(c, "recompute") for c in cs] if full else []
    for c in of("cp"):
        out += [(c, "forward"), (c.replace(name=c.name + " (K/V and dK/dV)", count=2 * c.count), "backward")]
        out += [(c, "recompute")] if level != "none" or "core_attn" in modules else []
    if lay.pp > 1:
        # collectives.pp_boundary_collectives: the 1/tp slice per TP rank (scatter/gather); without
        # SP the receiving stage's TP all-gather, charged to the receiver; boundary_runs: how many
        for direction, phase, sends, receives in (("activations", "forward", stage.has_head, stage.has_embedding),
                                                  ("gradients", "backward", stage.has_embedding, stage.has_head)):
            for c in pp_boundary_collectives(tokens, hidden, act, tp=tp, sp=lay.sp, tier_pp=tiers[3], tier_tp=t_tp,
                                             direction=direction,
                                             local_tp=l_tp):
                runs = boundary_runs(chunks, sends if c.kind == "p2p" else receives)
                if runs:
                    out.append((c.replace(count=runs), phase))
    return out


def boundary_runs(chunks, at_end):
    """How many times per micro-batch a stage sends (or receives) across a pipeline boundary in
    one direction: once per model chunk it holds, but the chunk at the end of the model in that
    direction (the head's going forward, the embedding's going backward; `at_end`: the stage
    holds it). Under the interleaved schedule a stage holds v chunks, s, s + p, ... of the p v
    (Narayanan et al. 2021, arXiv:2104.04473, section 2.2.2), so the last stage's first v - 1
    chunks send forward to the first stage's next ones and the first stage's last v - 1 send their
    gradients back: v - [at_end] runs; with one chunk (1f1b) 1 or 0."""
    return chunks - (1 if at_end else 0)


def _traffic(arch, lay, w, tiers, wire):
    """(tokens per CP rank, stage_comm.Traffic) of a micro-batch's layer collectives; `w` is the
    stored workload (the activations' format on the wire)."""
    act = w.act_dtype.bits // 8
    hidden = arch.hidden_size
    return ceil_div(w.positions, lay.cp), stage_comm.Traffic(
        hidden=hidden, act_bytes=act, tiers=tiers[:3] + tiers[4:], kv_dtype=w.kv_dtype, kv_path="naive",
        dispatch_bytes=comm.token_bytes(hidden, wire[0], act), combine_bytes=comm.token_bytes(hidden, wire[1], act))


def layer_runs(dim, recompute):
    """How many times per micro-batch `stage_collectives` runs a forward layer collective of
    dimension `dim`: TP and EP forward + backward (+ a full recompute); CP forward + twice in the
    backward (+ the recompute of the attention)."""
    level, modules = train_flops.parse_recompute(recompute)
    if dim == "cp":
        return 3 + (level != "none" or "core_attn" in modules)
    return 2 + (level == "full")


def layer_comm_s(layer, lay, tokens, t, *, links, recompute, overlap_tp=False, overlap_ep=False, model="ring",
                 device_id=None):
    """Seconds of ONE layer's TP, EP and CP collectives (`stage_comm.layer_collectives`) in one
    micro-batch, each run as often as `layer_runs` says (without TP's under `overlap_tp` and EP's
    under `overlap_ep`, which may hide them): what `stage_collectives` charges per layer of this
    shard (memoized), each priced by `run_s` under `model`."""
    hidden = hidden_dims(overlap_tp, overlap_ep)

    def make():
        return plain_sum(run_s(c, links, model, device_id) * c.count * layer_runs(c.dim, recompute)
                   for c in stage_comm.layer_collectives(layer, lay, tokens, t)
                   if c.dim not in hidden)
    key = ("train layer comm", layer, lay.tp, lay.ep, lay.cp, lay.sp, tokens, t, recompute, hidden,
           links.get("up"), links.get("out"), model, device_id)
    return placement.memo(key, make)


COLLECTIVE_MODELS = ("ring", "nccl")


def pricing(collective_model, ep_dispatcher="alltoall"):
    """The pricing key `run_s` takes: "ring" (the estimate), "nccl" (NCCL's model, the EP
    all-to-all by NCCL's own all-to-all), or "nccl/<dispatcher>" when the recipe's EP dispatch
    runs another dispatcher (efficiency.collective.EP_DISPATCHERS)."""
    if ep_dispatcher not in EP_DISPATCHERS:
        raise UserError(f"unknown EP dispatcher {ep_dispatcher!r}; choose from {', '.join(EP_DISPATCHERS)}")
    if collective_model == "ring" or ep_dispatcher == "alltoall":
        return collective_model
    return f"{collective_model}/{ep_dispatcher}"


def run_s(c, links, model="ring", device_id=None):
    """Seconds of one run of `c`: the estimate's (`comm.run_s`, ring algorithm), or under
    model "nccl" the predicted figure's, NCCL's own cost model with its fitted residual
    (`efficiency.collective.predicted_s`: the algorithm and protocol NCCL picks for the size);
    "nccl/<dispatcher>" (`pricing`) prices the EP collectives as that dispatcher runs them."""
    if model.startswith("nccl"):
        dispatcher = model.partition("/")[2] if c.dim == "ep" else ""
        return _nccl_s(c, links.get("up"), links.get("out"), device_id, dispatcher or "alltoall")
    return comm.run_s(c, links, ALGORITHM)


def _nccl_s(c, up, out, device_id, dispatcher="alltoall"):
    """`run_s` under NCCL's model (`efficiency.collective.seconds`, memoized)."""
    return nccl_seconds(c, up, out, device_id, dispatcher)


def cost(collectives, links, model="ring", device_id=None):
    """[Timed] of (Collective, phase) pairs over the device's links (`run_s`: ring algorithm, or
    NCCL's model)."""
    return [Timed(c, phase, run_s(c, links, model, device_id) * c.count) for c, phase in collectives]


def stage_pass(arch, lay, st, w, *, r, recompute, flash, chunks, device, links, wire=("", ""), model="ring"):
    """(compute Pass, [Timed] collectives) of one micro-batch on one device of stage `st`."""
    compute = top_pass(arch, lay, st, w, r=r, cp=lay.cp, recompute=recompute, flash=flash)
    for layer, count, _ in placement.device_layers(arch, lay, st):
        compute += layer_pass(layer, w, r, cp=lay.cp, recompute=recompute, flash=flash,
                              sp_tp=lay.tp if lay.sp else 1).times(count)
    key = ("stage collectives", arch, lay, placement.stage_signature(arch, lay, st), w, recompute, chunks, device,
           wire)   # no roof, links or pricing model: the estimate and the prediction share the list
    collectives = placement.memo(key, lambda: stage_collectives(arch, lay, st, w, device, recompute=recompute,
                                                                chunks=chunks, wire=wire))
    return compute, placement.memo(key + (links.get("up"), links.get("out"), model),
                                   lambda: tuple(cost(collectives, links, model, device.id)))


class StageTime(Record):
    stage: int
    compute: Pass              # per micro-batch
    comm: Pass                 # exposed communication per micro-batch
    collectives: tuple         # Timed, per micro-batch
    dp_collectives: tuple      # Timed, per step (phase "step")
    dp_exposed_s: float        # per step, after overlap
    optimizer_s: float         # per step
    host_s: float = 0.0        # per micro-batch: the per-expert host cost left exposed (`exposed_host_pass`)

    @property
    def micro_batch(self):
        return self.compute + self.comm


def local_expert_layers(arch, lay, st):
    """Sum over the MoE layers one device of stage `st` runs of its local routed experts."""
    moe = sys.modules.get(__name__.rsplit(".", 2)[0] + ".blocks.moe")
    if moe is None:   # no MoE block exists before blocks.moe is imported (by the adapters that build one)
        return 0
    return plain_sum(count * b.local_experts for layer, count, _ in placement.device_layers(arch, lay, st)
               for b in layer.blocks if isinstance(b, moe.MoE))


def expert_host_pass(arch, lay, st, per_expert_s, recompute):
    """The Pass of a fixed cost per local expert per MoE layer and micro-batch, `per_expert_s`
    for the forward and backward together: a third in the forward (each expert's two GEMMs,
    gate/up and down), two thirds in the backward (their data and weight gradients), the forward's
    share again under full recompute. What it stands for: a grouped expert MLP that runs every
    local expert's GEMM (and its casts) as a launch of its own, host-issued per split
    (Transformer Engine's GroupedLinear over `m_splits`), costs the host a fixed time per expert
    that the GPU waits for when each expert's GEMM is short."""
    f = per_expert_s * local_expert_layers(arch, lay, st) / 3
    return Pass(forward=f, backward=2 * f, recompute=f if recompute == "full" else 0.0)


def moe_block_pass(arch, lay, st, w, r, *, recompute, flash):
    """The GPU Pass of the MoE blocks one device of stage `st` runs in one micro-batch (the ledger's
    MoE rows: router, the local experts' GEMMs and activations, the combine), at the roofs `r`."""
    moe = sys.modules.get(__name__.rsplit(".", 2)[0] + ".blocks.moe")
    out = Pass()
    if moe is None:
        return out
    sp_tp = lay.tp if lay.sp else 1
    for layer, count, _ in placement.device_layers(arch, lay, st):
        for b in layer.blocks:
            if isinstance(b, moe.MoE):
                rows = block_seconds(b, w, r, cp=lay.cp, recompute=recompute, flash=flash, sp_tp=sp_tp)
                out = out + seconds_pass(list(rows)).times(count)
    return out


def exposed_host_pass(host, gpu):
    """The Pass of the host time `host` (`expert_host_pass`) the GPU waits for when the host issues it
    while the GPU runs only `gpu` (`moe_block_pass`), per phase:

        exposed = max(0, host - gpu)

    What it stands for: the host launches asynchronously, so the GPU runs the MoE layer's own kernels
    while the host issues the per-expert launches; it cannot run further ahead, because a dropless
    dispatcher waits on the device once per MoE layer and micro-batch for the routed token counts
    (NVIDIA/Megatron-LM megatron/core/transformer/moe/token_dispatcher.py: the all-to-all
    dispatcher's `cuda_sync_point = "before_ep_alltoall"` for the all-to-all splits; the flex
    dispatcher's `tokens_per_expert.sum().item()`). Short expert GEMMs (few tokens per expert: one
    sequence per micro-batch) leave the host's time exposed; long ones hide it.

    Under the EP all-to-all overlap (step_time's `overlap_ep`: Megatron's combined forward-backward
    schedule, `moe_a2a_overlap`) step_time charges the host time in full instead: that schedule
    interleaves two micro-batches' sub-modules across streams, and NVIDIA disabled it for its "CPU
    overhead" (NVIDIA-NeMo/Megatron-Bridge pull request #1760: Qwen3-235B-A22B on 64 B200s, MXFP8 step
    20.1 s with it, 16.9 s without, with the VP change), about 52 ms per micro-batch beyond the
    all-to-all it hid, where the full per-expert host time of that layout is 48 ms at 250 us."""
    return Pass(forward=max(0.0, host.forward - gpu.forward), backward=max(0.0, host.backward - gpu.backward),
                recompute=max(0.0, host.recompute - gpu.recompute))


def permute_bytes(block, positions, act_bytes=2):
    """Bytes one micro-batch's token permutations move in one MoE layer's forward on a device whose
    shard of the layer is `block`, under Megatron-Core's all-to-all token dispatcher
    (NVIDIA/Megatron-LM megatron/core/transformer/moe/token_dispatcher.py,
    MoEAlltoAllTokenDispatcher): "permutation 1" gathers each token's k routed copies into
    expert order before the dispatch (reads n x h, writes n k x h), and with more than one local
    expert "permutation 2" (sort_chunks_by_idxs) regroups the received copies by local expert
    after the all-to-all and back before the combine (each reads and writes n k x h); the
    unpermute that sums the copies back is the ledger's experts.combine. With n = positions /
    min(tp, ep) and n k = the shard's routed copies (the ledger's `routed`), each value of
    `act_bytes` (the stored format's, `train_flops.stored_workload`: 2 under BF16 and FP8 training):

        bytes = act_bytes x h x (n + n k + 4 n k [local experts > 1])

    The backward runs the same permutations on the gradients (the same bytes)."""
    ways = min(block.tp, block.ep)
    n, copies = ceil_div(positions, ways), ceil_div(positions * block.top_k, ways)
    sorts = 4 * copies if block.local_experts > 1 else 0
    return act_bytes * block.hidden * (n + copies + sorts)


def token_permute_pass(arch, lay, st, w, r, recompute):
    """The Pass of the token permutations (`permute_bytes`) of every MoE layer one device of stage
    `st` runs in one micro-batch, memory-bound at `r` (the stored format's roof): forward and
    backward each bytes / bandwidth (1/cp of the tokens per CP rank), the forward again under
    full recompute."""
    moe = sys.modules.get(__name__.rsplit(".", 2)[0] + ".blocks.moe")
    if moe is None:
        return Pass()
    act = train_flops.stored_workload(w).act_dtype.bits // 8
    moved = plain_sum(count * permute_bytes(b, w.positions, act) for layer, count, _ in placement.device_layers(arch, lay, st)
                      for b in layer.blocks if isinstance(b, moe.MoE))
    f = r.memory_s(moved / lay.cp)
    return Pass(forward=f, backward=f, recompute=f if recompute == "full" else 0.0)


def expert_bias_bytes(block, positions, act_bytes=2):
    """(forward, backward) bytes of one micro-batch's unfused expert output bias in one MoE layer on a
    device whose shard of the layer is `block` (0, 0 without expert biases). Megatron-Core's grouped
    experts (NVIDIA/Megatron-LM megatron/core/transformer/moe/experts.py, TEGroupedMLP: linear_fc2
    built with skip_bias_add=True, then `_apply_bias`) add each local expert's down-projection bias
    scaled by the routing probability outside the GEMM, as separate PyTorch ops on the [c, h] output
    (c = the shard's routed copies, `permute_bytes`' n k; h the hidden size; probabilities in the
    activation format: Megatron-Core's moe_router_dtype None keeps the input's): per expert split
    b x p (writes c h), t + b p (reads 2 c h, writes c h), then one torch.cat (reads and writes c h):

        forward  = act_bytes x c x h x 6
        backward = act_bytes x c x h x 8

    (the backward: the split's gradient concatenated, 2 c h; the bias gradient, grad x p written and
    summed over the tokens, 3 c h; the probabilities' gradient, grad x b written and summed over the
    hidden size, 3 c h; the cat and add pass gradients as views)."""
    if not getattr(block, "expert_bias", False):
        return 0, 0
    copies = ceil_div(positions * block.top_k, min(block.tp, block.ep))
    plane = act_bytes * copies * block.hidden
    return 6 * plane, 8 * plane


def expert_bias_pass(arch, lay, st, w, r, recompute):
    """The Pass of the unfused expert output bias (`expert_bias_bytes`) of every MoE layer one device
    of stage `st` runs in one micro-batch, memory-bound at `r` (the stored format's roof; 1/cp of the
    tokens per CP rank), the forward again under full recompute."""
    moe = sys.modules.get(__name__.rsplit(".", 2)[0] + ".blocks.moe")
    if moe is None:
        return Pass()
    act = train_flops.stored_workload(w).act_dtype.bits // 8
    fwd = bwd = 0
    for layer, count, _ in placement.device_layers(arch, lay, st):
        for b in layer.blocks:
            if isinstance(b, moe.MoE):
                f, g = expert_bias_bytes(b, w.positions, act)
                fwd, bwd = fwd + count * f, bwd + count * g
    f = r.memory_s(fwd / lay.cp)
    return Pass(forward=f, backward=r.memory_s(bwd / lay.cp), recompute=f if recompute == "full" else 0.0)


def hidden_dims(overlap_tp=False, overlap_ep=False, overlap_pp=False):
    """The parallel dimensions whose per-micro-batch collectives a recipe runs under compute."""
    return ("tp",) * bool(overlap_tp) + ("ep",) * bool(overlap_ep) + ("pp",) * bool(overlap_pp)


def _pass_of(timed, hide_tp_under=None, dims=("tp",), ep_sm_share=0.0):
    """The seconds of per-micro-batch collectives summed by phase, as a Pass; with
    `hide_tp_under` (the stage's compute Pass) the collectives of `dims` (TP's; EP's too under
    an all-to-all overlapping schedule) of a phase are exposed only beyond that phase's compute:
    max(0, their seconds - compute seconds), and at least the compute the overlapped EP dispatch's
    kernels take from it, ep seconds x `ep_sm_share` (their share of the SMs,
    efficiency.dispatcher.sm_share): max(hidden - compute, ep x share)."""
    p = {"forward": 0.0, "backward": 0.0, "recompute": 0.0}
    tp = {"forward": 0.0, "backward": 0.0, "recompute": 0.0}
    ep = {"forward": 0.0, "backward": 0.0, "recompute": 0.0}
    for t in timed:
        if hide_tp_under is not None and t.collective.dim in dims:
            tp[t.phase] += t.seconds
            ep[t.phase] += t.seconds if t.collective.dim == "ep" else 0.0
        else:
            p[t.phase] += t.seconds
    if hide_tp_under is not None:
        for phase in p:
            p[phase] += max(0.0, tp[phase] - getattr(hide_tp_under, phase), ep[phase] * ep_sm_share)
    return Pass(p["forward"], p["backward"], 0.0, p["recompute"])


def dp_step(dense, expert, lay, *, w_bytes, g_bytes, zero, device, links, micro_batches, model="ring"):
    """[Timed] of the data-parallel traffic of one step for one device holding
    `dense` + `expert` parameters; ZeRO-3's gathers repeat per micro-batch."""
    out = []
    span = lay.group_span("dp") if lay.dp > 1 else lay.group_span("cp")
    t = comm.tier(span, device)
    domain = device.scale_up.domain_size if device.scale_up else 1
    # the DP x CP group: members tp apart (cp, then dp, outside tp in the rank order)
    local = 1 if t == "up" else comm.group_local(span, lay.group_stride("cp" if lay.cp > 1 else "dp"),
                                                  lay.dp * lay.cp, domain)
    placed = {"": (t, local)}
    edp = train_memory.expert_dp(lay)
    placed[" (experts, expert-DP group)"] = expert_dp_placement(lay, edp, domain, device) or (t, local)
    for params, group, what in ((dense, lay.dp * lay.cp, ""),
                                (expert, edp, " (experts, expert-DP group)")):
        if not params or group == 1:
            continue
        tier, here = placed[what]
        for c in dp_gradient_collectives(params * g_bytes, group, zero, tier, param_bytes=params * w_bytes,
                                         local=min(here, group)):
            c = c.replace(name=c.name + what)
            if c.name.startswith("ZeRO-3"):
                c = c.replace(name=c.name + ", every micro-batch", count=c.count * micro_batches)
            out.append(Timed(c, "step", run_s(c, links, model, device.id) * c.count))
    return out


def expert_dp_placement(lay, edp, domain, device):
    """(tier, members per scale-up domain) of the expert data-parallel group: the ranks that hold
    the same expert shard are expert_tp x ep apart in the rank order (an EP group, with the TP
    ranks inside it, is expert_tp x ep consecutive ranks; Megatron-LM's expert-parallel groups), so
    an EP group that fills a domain leaves one member of the expert-DP group per domain. None under
    context parallelism (the dense group's placement is kept)."""
    if lay.cp > 1 or edp == 1:
        return None
    stride = lay.expert_tp * lay.ep
    span = stride * (edp - 1) + 1
    tier = comm.tier(span, device)
    return tier, 1 if tier == "up" else comm.group_local(span, stride, edp, domain)


def _exposed_dp(timed, compute, micro_batches, overlap):
    """Exposed seconds of the DP traffic: all of it, or with `overlap` what the
    compute it runs under (module doc) does not hide."""
    if not overlap:
        return plain_sum(t.seconds for t in timed)
    exposed = 0.0
    for t in timed:
        name = t.collective.name
        if name.startswith("ZeRO-3"):
            per = t.seconds / micro_batches
            exposed += micro_batches * max(0.0, per - (compute.forward + compute.backward))
        elif t.collective.kind == "all_gather":
            exposed += max(0.0, t.seconds - compute.forward)
        else:
            exposed += max(0.0, t.seconds - compute.backward)
    return exposed


class StepTime(Record):
    schedule: str
    chunks: int
    micro_batches: int
    stages: tuple              # StageTime per pipeline stage
    bottleneck: int            # slowest stage per micro-batch
    pipeline_s: float          # m t_b + bubble
    bubble_s: float
    sync_s: float              # the slowest stage's exposed DP traffic + optimizer update
    step_s: float
    bubble_formula: str


def bubble(schedule, times, bottleneck, *, pp, micro_batches, chunks):
    """(bubble seconds, formula) of the schedule (module doc)."""
    tb = times[bottleneck]
    rest = plain_sum(t.total for t in times) - tb.total
    if schedule == "1f1b":
        return rest, "sum of stage times - slowest ((p - 1) t for equal stages: fraction (p - 1)/m)"
    if schedule == "interleaved":
        return rest / chunks, "(sum of stage times - slowest) / v (fraction (p - 1)/(m v))"
    f, b, w = tb.forward, tb.backward + tb.recompute, tb.weight_grad
    if schedule == "zero-bubble":
        return max(0.0, (pp - 1) * (f + b - 2 * w)), "(p - 1)(F + B - 2W), ZB-H1 (arXiv:2401.10241)"
    return max(0.0, (pp // 2 - 1) * ((f + b) + b - 3 * w)), \
        "(p/2 - 1)(F&B + B - 3W), F&B = F + B (DualPipe, arXiv:2412.19437)"


def check_schedule(arch, lay, schedule, chunks):
    """UserError when the schedule cannot run this layout."""
    if schedule not in SCHEDULES:
        raise UserError(f"unknown schedule '{schedule}'; choose from {', '.join(SCHEDULES)}")
    if chunks != 1 and schedule != "interleaved":
        raise UserError("--virtual-stages applies to the interleaved schedule only")
    if schedule == "interleaved":
        if lay.pp == 1 or chunks < 2:
            raise UserError("the interleaved schedule needs --pp > 1 and --virtual-stages >= 2")
        # Each stage's layers split into v chunks of whole layers (Megatron-LM's uneven first and
        # last stages, --decoder-first/last-pipeline-num-layers, run interleaved too): a stage of
        # fewer than v layers cannot; chunks of one stage may differ by a layer.
        sizes = placement.stage_sizes(len(arch.layers), lay.pp, lay.pp_layers)
        short = [i for i, n in enumerate(sizes) if n < chunks]
        if short:
            raise UserError(f"interleaved: stage {short[0]} holds {sizes[short[0]]} layers, fewer than the "
                            f"v = {chunks} chunks every stage runs")
        if lay.micro_batches % lay.pp:
            raise UserError(f"interleaved: {lay.micro_batches} micro-batches is not a multiple of "
                            f"pp = {lay.pp} (Megatron-LM's requirement)")
    if schedule == "dualpipe" and lay.pp % 2:
        raise UserError(f"DualPipe needs an even number of pipeline stages, got pp = {lay.pp}")


def optimizer_s(r, lay, dense, expert, *, zero, weight_bytes, grad_bytes, optimizer_bytes):
    """The optimizer update of one device, memory-bound: it reads and writes every optimizer
    state, reads the gradient and writes the weight of the parameters it updates (with ZeRO its
    share over DP x CP, the experts' over the expert-data-parallel group)."""
    updated = (ceil_div(dense, lay.dp * lay.cp) + ceil_div(expert, train_memory.expert_dp(lay))
               if zero >= 1 else dense + expert)
    return r.memory_s(updated * (2 * optimizer_bytes + grad_bytes + weight_bytes))


def rank_params(arch, lay, st, schedule, stage_params=None):
    """(dense, expert) parameters on a device of stage `st`; DualPipe's rank also holds the
    reverse direction's stage p - 1 - i (train.stage_memory)."""
    def of(stage):
        return stage_params(stage) if stage_params else train_memory.stage_params(arch, lay, stage)
    dense, expert = of(st)
    if schedule == "dualpipe":
        d, e = of(placement.stages(arch, lay)[lay.pp - 1 - st.index])
        dense, expert = dense + d, expert + e
    return dense, expert


def roofs_of(device, w, compute_efficiency=1.0, memory_efficiency=1.0, attention=None):
    """(the compute format's roof, the roof of every other row): the same roof unless the
    format is 8-bit, whose non-linear rows run at BF16's (train_flops.stored_workload); with
    `attention` (efficiency.attention.AttentionRates) a third, the fused attention rows' rates."""
    r = make_roof(device, w.compute_dtype, compute_efficiency, memory_efficiency)
    store = train_flops.stored_workload(w)
    other = r if store is w else make_roof(device, store.compute_dtype, compute_efficiency, memory_efficiency)
    return (r, other) if attention is None else (r, other, attention)


def step_time(arch, w, lay, device, *, recompute="none", flash=False, zero=0, schedule="1f1b",
              chunks=1, weight_bytes=2, grad_bytes=2, optimizer_bytes=12, links=None,
              compute_efficiency=1.0, memory_efficiency=1.0, overlap_dp=False, stage_params=None,
              wire=("", ""), overlap_tp=False, overlap_ep=False, collective_model="ring",
              expert_gemm_host_s=0.0, token_permute=False, overlap_pp=False, unfused_expert_bias=False,
              ep_dispatcher="alltoall", attention=None):
    """StepTime of one optimizer step: `w` is one micro-batch (batch = micro-batch
    size, tokens = sequence length), `lay` the layout (micro_batches = m); `wire`: the EP
    dispatch and combine formats ("" = the activation format; `collectives.token_bytes`).
    `overlap_tp`: the TP/SP collectives run under the same phase's compute (Megatron/NeMo
    tp_comm_overlap, Transformer Engine userbuffers): per phase only max(0, TP - compute) of
    them is exposed (`_pass_of`); off by default (every collective exposed). `overlap_ep`: the
    EP dispatch and combine likewise (DeepSeek-V3's DualPipe overlaps each chunk's all-to-all with
    another chunk's compute, arXiv:2412.19437 section 3.2.1; Megatron-LM's combined-1F1B
    all-to-all overlap): off by default. `collective_model`: "ring" (the estimate's alpha-beta
    ring at the links' figures) or "nccl" (the predicted figure's NCCL model, `run_s`).
    `expert_gemm_host_s`: seconds per local expert per MoE layer per micro-batch that a stack
    running each expert's GEMMs as their own launches spends on the host (`expert_host_pass`),
    charged where the MoE blocks' own GPU time does not cover it (`exposed_host_pass`), in full under
    `overlap_ep` (0 in the estimate). `token_permute`: charge the all-to-all dispatcher's token permutations of every
    MoE layer (`token_permute_pass`; off in the estimate, whose ledger has none). `overlap_pp`:
    under the interleaved schedule (chunks > 1) the pipeline boundary sends and receives run
    under the same phase's compute, as TP's do under `overlap_tp` (Megatron's overlap_p2p_comm,
    which Megatron Bridge turns on whenever pp > 1 and vp > 1 and replaces by batched, blocking
    sends otherwise: src/megatron/bridge/training/comm_overlap.py); off by default.
    `unfused_expert_bias`: charge Megatron-Core's per-expert output bias add of every MoE layer with
    expert biases (`expert_bias_pass`; off in the estimate, whose ledger fuses the bias into the GEMM).
    `ep_dispatcher`: what runs the EP dispatch and combine under the NCCL model (`pricing`;
    efficiency.collective item 4): "alltoall" (NCCL's all-to-all, the default), "hybridep", "deepep".
    `attention`: efficiency.attention.AttentionRates pricing the fused attention rows (the predicted
    step's; None, the estimate: at the matrix peak like every matmul)."""
    check_schedule(arch, lay, schedule, chunks)
    collective_model = pricing(collective_model, ep_dispatcher)
    w = train_flops.training_workload(w)
    roofs = roofs_of(device, w, compute_efficiency, memory_efficiency, attention)
    r = roofs[0]
    links = links or comm.links(device)
    m = lay.micro_batches
    link_key = (links.get("up"), links.get("out"))
    stages = []
    for st in placement.stages(arch, lay):
        key = ("stage pass", arch, lay, placement.stage_signature(arch, lay, st), w, roofs, recompute, flash,
               chunks, device, link_key, wire, collective_model)
        compute, timed = placement.memo(key, lambda: stage_pass(
            arch, lay, st, w, r=roofs, recompute=recompute, flash=flash, chunks=chunks, device=device, links=links,
            wire=wire, model=collective_model))
        dense, expert = rank_params(arch, lay, st, schedule, stage_params)
        dp = placement.memo(("dp step", dense, expert, lay, weight_bytes, grad_bytes, zero, device, link_key,
                             collective_model),
                            lambda: dp_step(dense, expert, lay, w_bytes=weight_bytes, g_bytes=grad_bytes, zero=zero,
                                            device=device, links=links, micro_batches=m, model=collective_model))
        host = Pass()
        if expert_gemm_host_s:
            host = expert_host_pass(arch, lay, st, expert_gemm_host_s, recompute)
            if not overlap_ep:   # the overlapped schedule's host time is charged in full (exposed_host_pass)
                host = exposed_host_pass(host, moe_block_pass(arch, lay, st, w, roofs, recompute=recompute, flash=flash))
            compute = compute + host
        if token_permute:
            compute = compute + token_permute_pass(arch, lay, st, w, roofs[1], recompute)
        if unfused_expert_bias:
            compute = compute + expert_bias_pass(arch, lay, st, w, roofs[1], recompute)
        exposed = _exposed_dp(dp, compute, m, overlap_dp)
        opt_s = optimizer_s(r, lay, dense, expert, zero=zero, weight_bytes=weight_bytes, grad_bytes=grad_bytes,
                            optimizer_bytes=optimizer_bytes)
        hidden = hidden_dims(overlap_tp, overlap_ep, overlap_pp and chunks > 1)
        stages.append(StageTime(st.index, compute=compute,
                                comm=_pass_of(timed, compute if hidden else None, hidden,
                                              ep_sm_share=sm_share(ep_dispatcher, device.id)
                                              if overlap_ep and collective_model != "ring" else 0.0),
                                collectives=tuple(timed),
                                dp_collectives=tuple(dp), dp_exposed_s=exposed, optimizer_s=opt_s,
                                host_s=host.total))
    times = [s.micro_batch for s in stages]
    b = max(range(len(times)), key=lambda i: (times[i].total, -i))
    bub, formula = bubble(schedule, times, b, pp=lay.pp, micro_batches=m, chunks=chunks)
    pipeline = m * times[b].total + bub
    sync = max(s.dp_exposed_s + s.optimizer_s for s in stages)
    return StepTime(schedule, chunks=chunks, micro_batches=m, stages=tuple(stages), bottleneck=b,
                    pipeline_s=pipeline, bubble_s=bub, sync_s=sync, step_s=pipeline + sync, bubble_formula=formula)


def step_floor(arch, w, lay, device, *, recompute="none", flash=False, zero=0, schedule="1f1b", chunks=1,
               weight_bytes=2, grad_bytes=2, optimizer_bytes=12, links=None, compute_efficiency=1.0,
               memory_efficiency=1.0, stage_params=None, wire=("", ""), overlap_tp=False, overlap_ep=False,
               collective_model="ring", ep_dispatcher="alltoall", attention=None, **_):
    """A value never above step_time(...).step_s with the same arguments, for pruning a search.
    With c_s = stage s's layers' compute and their TP, EP and CP collectives (count x
    (`layer_pass` + `layer_comm_s`); the top blocks', the PP boundary's and, under
    `overlap_tp`, TP's, under `overlap_ep`, EP's left out: each >= 0) and t_s >= c_s its micro-batch
    time, t_b = max_s t_s:
    the pipeline m t_b + bubble >= m max c + (1f1b: sum_{s != b} t_s >= sum c - max c;
    interleaved: that / v; zero-bubble and DualPipe: a max with 0, >= 0), and the sync, the
    largest stage's DP traffic + optimizer update, >= the largest update (`optimizer_s`)."""
    collective_model = pricing(collective_model, ep_dispatcher)
    w = train_flops.training_workload(w)
    roofs = roofs_of(device, w, compute_efficiency, memory_efficiency, attention)
    r = roofs[0]
    links = links or comm.links(device)
    sp_tp = lay.tp if lay.sp else 1
    tokens, t = _traffic(arch, lay, train_flops.stored_workload(w), stage_comm.group_tiers(lay, device), wire)
    per_layer = {}   # layer shard -> its compute + collectives (the stages share a few shards)

    def of(layer):
        got = per_layer.get(layer)
        if got is None:
            got = per_layer[layer] = (layer_pass(layer, w, roofs, cp=lay.cp, recompute=recompute, flash=flash,
                                                 sp_tp=sp_tp).total
                                      + layer_comm_s(layer, lay, tokens, t, links=links, recompute=recompute,
                                                     overlap_tp=overlap_tp, overlap_ep=overlap_ep,
                                                     model=collective_model, device_id=device.id))
        return got

    c, opt = [], 0.0
    for st in placement.stages(arch, lay):
        c.append(plain_sum(of(layer) * count for layer, count, _ in placement.device_layers(arch, lay, st)))
        dense, expert = rank_params(arch, lay, st, schedule, stage_params)
        opt = max(opt, optimizer_s(r, lay, dense, expert, zero=zero, weight_bytes=weight_bytes,
                                   grad_bytes=grad_bytes, optimizer_bytes=optimizer_bytes))
    rest = plain_sum(c) - max(c) if schedule in ("1f1b", "interleaved") else 0.0
    return lay.micro_batches * max(c) + (rest / chunks if schedule == "interleaved" else rest) + opt


# -- Lower bound ------------------------------------------------------------------------

class StepBound(Record):
    """A lower bound on the time of one optimizer step (`step_lower_bound`)."""
    devices: int
    model_flops_per_device: int     # the step's model FLOPs // devices
    peak_flops_per_s: object        # dense matrix peak of the compute format (None: unpublished)
    compute_s: float
    weight_read_bytes: int          # per device, every micro-batch's forward and backward
    optimizer_bytes: int            # per device, the update of its share of the parameters
    memory_s: float
    step_s: float
    bound: str                      # compute | memory


def step_lower_bound(model_flops, params, stage_params, lay, device, *, compute_dtype,
                     weight_bytes=2, grad_bytes=2, optimizer_bytes=12):
    """A step can take no less than max(compute_s, memory_s), per device:

    compute_s = model FLOPs / devices / dense matrix peak of the compute format:
        the step must run its model FLOPs (3x the forward matrix FLOPs, causal
        attention halved: the least any kernel computes); the busiest device
        runs at least the mean share; recompute adds, so it is left out.
    memory_s = (2 m W + P U) / bandwidth: the mean device reads its weight
        shard W (bytes; the mean over pipeline stages of a device's parameters,
        which no placement of layers on stages changes) in the forward and
        again in the backward (dX = dY W^T) of each of its m micro-batches --
        the shard is far larger than on-chip memory -- and the optimizer must
        read and write its states, read the gradient and write the weight
        (U = 2 x optimizer + gradient + weight bytes per parameter) of at
        least P = parameters / devices parameters (every parameter is updated
        somewhere); byte counts rounded down.

    Nothing else is charged: communication fully hidden under compute, no
    pipeline bubble (zero-bubble schedules approach none), vector FLOPs on
    their own units in parallel, every matrix FLOP at the vendor peak
    (efficiency 1.0). So no schedule, overlap or kernel can beat it, and
    the estimate of `step_time` is never below it."""
    n = lay.devices
    peak = device.peak(compute_dtype)
    compute = model_flops / n / peak if peak else 0.0   # no published peak: the FLOPs take no time
    shard = plain_sum(stage_params) * weight_bytes // len(stage_params)
    weights = 2 * lay.micro_batches * shard
    update = params * (2 * optimizer_bytes + grad_bytes + weight_bytes) // n
    memory = (weights + update) / device.memory_bandwidth_bytes_per_s
    return StepBound(n, model_flops_per_device=model_flops // n, peak_flops_per_s=peak or None, compute_s=compute,
                     weight_read_bytes=weights, optimizer_bytes=update, memory_s=memory,
                     step_s=max(compute, memory), bound="compute" if compute >= memory else "memory")

"""Memory per device for training: model states under ZeRO and activations by recompute level.

Model states (Rajbhandari et al. 2019, ZeRO, arXiv:1910.02054, section 3):
parameters in the weight format, gradients in the gradient format, and the
optimizer's states (OPTIMIZERS; AdamW with an fp32 master copy, momentum and
variance = K = 12 bytes per parameter). The model is first placed by the
layout engine (`layout.shard`: TP, PP stages, EP carved out of TP then DP),
then ZeRO shards over the data-parallel group: stage 1 the optimizer states,
stage 2 also the gradients, stage 3 also the parameters (Megatron's
distributed optimizer = stage 1). Dense parameters shard over DP x CP;
routed-expert parameters over the expert-data-parallel group EDP = TP x DP x
CP / (expert TP x EP) (Megatron-LM's expert groups), never by TP alone.

Activations (per micro-batch) are the ledger's `saved_bytes` of a training
pass: what every operator keeps for its backward. By recompute level:
- none: everything saved;
- selective: minus the attention core's internal state (the softmax row
  statistics of a fused kernel, the T^2 probabilities of an unfused one);
- full: each decoder layer keeps its input only (tokens x hidden), plus, while
  one layer is recomputed and back-propagated, that layer's full set
  (`recompute_working_bytes`).
Tensor parallelism splits what lies inside its region; the sequence region
(`saved_replicated`: norm inputs and statistics, a sublayer's first input,
residual dropout masks) is whole on every TP rank unless sequence
parallelism splits it too; context parallelism splits every activation.
`attention="unfused"` adds the T x T tensors of a non-fused kernel (Korthikanti
et al. 2022, arXiv:2205.05198: softmax output 2 bytes, dropout mask 1 byte and
dropout output 2 bytes per score): 5 a s^2 b with dropout, 2 a s^2 b without.

The loss keeps the logits in fp32 (tokens x vocabulary x 4 bytes; split by TP:
the head is vocabulary-parallel) and one fp32 log-sum-exp per token (whole on
every TP rank). Pipelines hold several micro-batches: 1F1B
stage i (from 0) holds min(p - i, m); interleaved with v chunks per stage,
stage i holds min(2(p - i - 1) + (v - 1)p + 1, m v) chunks of 1/v of its
layers (Narayanan et al. 2021, arXiv:2104.04473; stage 0: p + (p - 1)/v
micro-batches' worth, Megatron-LM's 1 + (p - 1)/(p v) factor).
"""

from .. import layout as placement
from ..dtypes import DTYPES
from ..splits import ceil_div
from ..errors import UserError
from ..record import Record
from . import train_flops

# bytes per parameter of each optimizer state
OPTIMIZERS = {
    "adamw": (("fp32 master weights", 4), ("momentum fp32", 4), ("variance fp32", 4)),
    "adamw-bf16": (("fp32 master weights", 4), ("momentum bf16", 2), ("variance bf16", 2)),
    "sgd": (("fp32 master weights", 4), ("momentum fp32", 4)),
}
MASTER_NAMES = {4: "fp32", 2: "16-bit"}
ZERO_STAGES = (0, 1, 2, 3)
ATTENTION_KERNELS = ("fused", "unfused")
UNFUSED_SCORE_BYTES = 2   # softmax output per score (16-bit)
DROPOUT_SCORE_BYTES = 3   # + 1-byte mask + 16-bit dropout output per score


def optimizer_states(optimizer, master_bytes=4):
    """((state, bytes per parameter), ...): the optimizer's states with the master
    copy in `master_bytes` (0: no master copy, the weights are updated in place)."""
    if optimizer not in OPTIMIZERS:
        raise UserError(f"unknown optimizer '{optimizer}' (choose from {', '.join(OPTIMIZERS)})")
    (_, _), *rest = OPTIMIZERS[optimizer]
    master = ((f"{MASTER_NAMES[master_bytes]} master weights", master_bytes),) if master_bytes else ()
    return master + tuple(rest)


def optimizer_bytes(optimizer, master_bytes=4):
    return sum(b for _, b in optimizer_states(optimizer, master_bytes))


class ModelStates(Record):
    weights: int
    grads: int
    optimizer: int

    @property
    def total(self):
        return self.weights + self.grads + self.optimizer

    def __add__(self, other):
        return ModelStates(self.weights + other.weights, self.grads + other.grads,
                           self.optimizer + other.optimizer)


def model_states(params, dp, zero, *, weight_bytes=2, grad_bytes=2, optimizer_bytes=12):
    """Bytes per device of `params` parameters replicated over `dp` ranks
    under ZeRO stage `zero` (shares rounded up: the largest rank's):
    0: (W + G + K) x params; 1: W + G + K/dp; 2: W + (G + K)/dp; 3: (W + G + K)/dp."""
    if zero not in ZERO_STAGES:
        raise UserError(f"zero stage must be one of 0, 1, 2, 3, got {zero!r}")
    w, g, k = params * weight_bytes, params * grad_bytes, params * optimizer_bytes
    return ModelStates(ceil_div(w, dp) if zero >= 3 else w, ceil_div(g, dp) if zero >= 2 else g,
                       ceil_div(k, dp) if zero >= 1 else k)


def stage_states(dense, expert, lay, zero, *, weight_bytes=2, grad_bytes=2, optimizer_bytes=12):
    """ModelStates of one device holding `dense` + `expert` parameters under layout `lay`: the
    dense ones replicated over DP x CP, the routed experts' over EDP (`expert_dp`)."""
    sizes = dict(weight_bytes=weight_bytes, grad_bytes=grad_bytes, optimizer_bytes=optimizer_bytes)
    return (model_states(dense, lay.dp * lay.cp, zero, **sizes)
            + model_states(expert, expert_dp(lay), zero, **sizes))


def device_params(dev):
    """(dense, expert) parameters of a per-device architecture (`layout.shard`):
    routed-expert tensors apart, since ZeRO shards them over another group."""
    return parts_params([(block, 1) for block in dev.top_blocks()]
                        + [(layer, count) for layer, count, _ in dev.layer_groups()])


def stage_params(arch, lay, stage):
    """`device_params` of one device of `stage`, from its top block shards and layer shards
    (`layout.top_shards`, `layout.device_layers`) without building its architecture."""
    return parts_params([(block, 1) for block in placement.top_shards(arch, lay, stage)]
                        + [(layer, count) for layer, count, _ in placement.device_layers(arch, lay, stage)])


def parts_params(parts):
    """(dense, expert) parameters of [(block or layer, copies)]: each part's tensors, the
    routed experts' apart (memoized per part: a search meets the same shards in many layouts)."""
    dense = expert = 0
    for part, count in parts:
        d, e = placement.memo(("part params", part), lambda: _part_params(part))
        dense += count * d
        expert += count * e
    return dense, expert


def _part_params(part):
    dense = expert = 0
    for t in part.tensors():
        if t.role == "expert":
            expert += t.params
        else:
            dense += t.params
    return dense, expert


def expert_dp(layout):
    """EDP = TP x DP x CP / (expert TP x EP): the ranks holding the same expert
    shard, over which ZeRO shards its states (Megatron-LM's expert data-parallel
    group; EP is carved out of TP first, see `layout`)."""
    return layout.tp * layout.dp * layout.cp // (layout.expert_tp * layout.ep)


class LayerActivations(Record):
    """Bytes one decoder layer keeps per micro-batch on one device."""
    none: int
    selective: int
    full: int          # the layer input only


def _split(saved, replicated, tp, sp, cp):
    """Per-device bytes of a shard's saved bytes: the sequence region split by
    TP only with SP; everything by CP."""
    seq = ceil_div(replicated, tp) if sp else replicated
    return ceil_div(saved - replicated + seq, cp)


def unfused_score_bytes(layer, w):
    """T x T tensors a non-fused softmax attention keeps for one layer:
    B x heads x T x keys scores, 2 bytes each (softmax output), 5 with dropout
    (grouped-query `Attention` blocks; MLA and linear attention are always fused here)."""
    total = 0
    for b in layer.blocks:
        if hasattr(b, "heads") and hasattr(b, "prob_dropout"):
            per = DROPOUT_SCORE_BYTES + UNFUSED_SCORE_BYTES if b.prob_dropout else UNFUSED_SCORE_BYTES
            total += w.batch * b.heads * w.tokens * (w.history + w.tokens) * per
    return total


def layer_activations(layer, w, hidden, *, tp=1, sp=False, cp=1, attention="fused", recompute="none",
                      fp8_activation_input=False):
    """`_layer_activations`, memoized (a search meets the same layer shard in many layouts; the
    figures of every level depend on the recipe's modules only, so the levels share them)."""
    _, modules = train_flops.parse_recompute(recompute)
    return placement.memo(("layer activations", layer, w, hidden, tp, sp, cp, attention, modules, fp8_activation_input),
                lambda: _layer_activations(layer, w, hidden, tp=tp, sp=sp, cp=cp, attention=attention,
                                           recompute=recompute, fp8_activation_input=fp8_activation_input))


def kept_rows(layer, w, modules=frozenset(), fp8_activation_input=False):
    """[(op, saved bytes, of which in the sequence region)] of one decoder layer as one device
    holds it, under the training format convention (`train_flops.recipe_block_ops`) and the
    recompute modules (Megatron-LM's names; what each keeps instead, module doc):
    - layernorm: the projection that reads a residual-stream norm's output keeps no input (the
      norm keeps its own input and runs again);
    - mla_up_proj: q_b_proj and kv_b_proj keep no input (their norms keep the latents c_q and
      c_kv) and attention keeps no up-projected Q, K, V, only the RoPE key k_pe (qk_rope values
      per token): the up-projections run again before attention's backward;
    - moe_act: the routed experts' down projection keeps no input (the activation keeps its own
      inputs and runs again);
    `fp8_activation_input`: every activation keeps its inputs in FP8, one byte per value
    (Megatron-LM's activation_func_fp8_input_store; the DeepSeek-V3 report, section 3.3.3,
    caches the MoE SwiGLU inputs so)."""
    fp8 = DTYPES["fp8"]
    pairs = [(b, op) for b in layer.blocks for op in train_flops.recipe_block_ops(b, w)]
    low = ([op for b in layer.blocks for op in placement.block_ops(b, w.replace(act_dtype=fp8, kv_dtype=fp8))]
           if fp8_activation_input else None)
    store = train_flops.stored_workload(w)
    rows = []
    prev = None
    for i, (b, op) in enumerate(pairs):
        saved, repl = op.saved_bytes, op.saved_replicated
        if op.kind == "gemm" and prev is not None and _input_recomputed(prev, modules):
            saved = repl = 0
        elif "mla_up_proj" in modules and op.name in ("attn_qk", "attn_pv") and hasattr(b, "kv_lora_rank"):
            saved, repl = (store.kv_dtype.nbytes_flat(w.positions * b.qk_rope) if op.name == "attn_qk" else 0), 0
        elif low is not None and op.kind == "activation":
            saved, repl = low[i].saved_bytes, low[i].saved_replicated
        rows.append((op, saved, repl))
        prev = op
    return rows


def _input_recomputed(prev, modules):
    """Is the input of the projection that follows row `prev` (its output) recomputed?"""
    if prev.kind == "norm":
        mla = prev.name in train_flops.MLA_UP_ROWS
        return ("mla_up_proj" if mla else "layernorm") in modules
    return prev.kind == "activation" and prev.name.startswith("experts.") and "moe_act" in modules


def _layer_activations(layer, w, hidden, *, tp=1, sp=False, cp=1, attention="fused", recompute="none",
                       fp8_activation_input=False):
    """Saved bytes per device of one decoder layer as one device holds it (a
    `layout.shard_layer`: heads and MLP already split by TP), by recompute level
    (see module doc) under the recipe's modules (`kept_rows`). The sequence region is whole
    on every TP rank unless `sp` splits it tp ways; `cp` splits everything; `hidden` is the
    residual width."""
    _, modules = train_flops.parse_recompute(recompute)
    rows = kept_rows(layer, w, modules, fp8_activation_input)
    saved = sum(s for _, s, _ in rows)
    repl = sum(r for _, _, r in rows)
    core = sum(s for op, s, _ in rows if op.kind == "softmax")
    scores = ceil_div(unfused_score_bytes(layer, w), cp) if attention == "unfused" else 0
    selective = _split(saved - core, repl, tp, sp, cp)
    none = selective if "core_attn" in modules else _split(saved, repl, tp, sp, cp) + scores
    full_in = train_flops.stored_workload(w).act_dtype.nbytes_flat(w.positions * hidden)
    full = ceil_div(ceil_div(full_in, tp) if sp else full_in, cp)
    return LayerActivations(none, selective, full)


def in_flight(stage, pp, micro_batches, chunks=1):
    """(numerator, denominator): micro-batches of the stage's activations held at
    the peak. 1F1B: min(p - i, m); interleaved (v = chunks): min(2(p-i-1) +
    (v-1)p + 1, m v) chunks of 1/v of the stage."""
    if chunks == 1:
        return min(pp - stage, micro_batches), 1
    held = 2 * (pp - stage - 1) + (chunks - 1) * pp + 1
    return min(held, micro_batches * chunks), chunks


class StageMemory(Record):
    stage: int
    layers: tuple            # (lo, hi): layers lo .. hi-1
    device: str              # what one device of the stage holds (the shard's id)
    dense_params: int
    expert_params: int
    states: ModelStates
    layer_activation_bytes: int     # one micro-batch, the stage's layers at the recompute level
    extra_activation_bytes: int     # embedding / final norm / head / loss on first or last stage
    logits_bytes: int               # part of extra: the loss's fp32 logits
    in_flight: tuple                # (numerator, denominator) micro-batches held
    recompute_working_bytes: int    # full recompute: one layer's set while it is back-propagated
    extra_in_flight: tuple = ()     # micro-batches of the extra (embedding/head/loss) held; () = in_flight
    gather_bytes: int = 0           # ZeRO-3 / FSDP: unsharded units in use (`fsdp_gather_bytes`)
    offload_buffer_bytes: int = 0   # activation offload: one offloaded layer's set on the device in transit
    partner_activation_bytes: int = 0   # DualPipe: the reverse-direction stage's activations on this rank

    @property
    def activation_bytes(self):
        num, den = self.in_flight
        if not self.extra_in_flight:
            return ceil_div((self.layer_activation_bytes + self.extra_activation_bytes) * num, den) \
                + self.recompute_working_bytes + self.partner_activation_bytes
        e_num, e_den = self.extra_in_flight
        return ceil_div(self.layer_activation_bytes * num, den) + \
            ceil_div(self.extra_activation_bytes * e_num, e_den) + self.recompute_working_bytes \
            + self.partner_activation_bytes

    @property
    def total(self):
        return self.states.total + self.activation_bytes + self.gather_bytes + self.offload_buffer_bytes


def fsdp_gather_bytes(top, layers, weight_bytes, grad_bytes):
    """What ZeRO-3 holds unsharded on top of its shards, as PyTorch FSDP2 (and Megatron-FSDP)
    run it: every decoder layer and the embedding, final norm and head are units, gathered
    (all-gather) just before their forward and again before their backward and freed after
    (reshard after forward); the next unit is prefetched while one computes, so two units'
    parameters are whole at once, and one unit's gradient is whole until its reduce-scatter:
    2 x W_max x weight bytes + W_max x gradient bytes, W_max the largest unit's parameters as
    the device places them (TP/EP shard; PyTorch FSDP docs, "FSDP2": forward and backward
    prefetching of one unit ahead). `top`: the device's embedding, final norm and head shards;
    `layers`: its distinct layer shards."""
    unit = max(sum(parts_params([(part, 1)])) for part in (*top, *layers))
    return unit * (2 * weight_bytes + grad_bytes)


def offloaded(groups, n):
    """[(activations, count kept, count offloaded)] of a stage's layer groups when its first `n`
    layers (local indices 0 .. n-1) keep their activations in host memory."""
    return [(a, count - sum(1 for i in indices if i < n), sum(1 for i in indices if i < n))
            for a, count, indices in groups]


def _top_saved(top, stage, w, *, tp, sp, cp):
    """Saved bytes outside the layers on one device (`top`: its embedding, final norm and
    head shards): the embedding's on the first stage; the final norm's, the head's input and
    the loss's fp32 logits (of the device's vocabulary slice) on the last. Returns (total,
    logits part)."""
    embedding, final_norm, head = top
    ops = list(embedding.ops(w)) if stage.has_embedding else []
    loss = train_flops.CrossEntropy(head.vocab).ops(w) if stage.has_head else []
    if stage.has_head:
        ops += list(final_norm.ops(w)) + list(head.ops(w))
    logits = sum(ceil_div(op.saved_bytes, cp) for op in loss)
    return sum(_split(op.saved_bytes, op.saved_replicated, tp, sp, cp) for op in ops) + logits, logits


def memory(arch, w, layout=None, *, zero=0, recompute="none", optimizer="adamw", weight_bytes=2,
           grad_bytes=2, chunks=1, attention="fused", master_bytes=4, fp8_activation_input=False,
           offload_layers=0, **degrees):
    """Per-stage memory of one device of each pipeline stage: [StageMemory].
    `w` is one micro-batch (batch = micro-batch size, tokens = sequence length);
    the placement is a `layout.Layout` or its fields as keywords (tp, pp, dp,
    cp, ep, sp, micro_batches, pp_layers); `chunks` = interleaved chunks per stage."""
    if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
        raise UserError(f"chunks must be a positive integer, got {chunks!r}")
    level, _ = train_flops.parse_recompute(recompute)
    if attention not in ATTENTION_KERNELS:
        raise UserError(f"attention must be one of {', '.join(ATTENTION_KERNELS)}, got {attention!r}")
    lay = layout or placement.Layout(**degrees)
    placement.validate(arch, lay)
    w = train_flops.training_workload(w)
    tp, cp, sp = lay.tp, lay.cp, lay.sp
    edp = expert_dp(lay)
    k = optimizer_bytes(optimizer, master_bytes)
    out = []
    one = lay.replace(micro_batches=1)   # the memo key's layout: a stage's figures do not depend on m
    _, modules = train_flops.parse_recompute(recompute)
    for stage in placement.stages(arch, lay):
        signature = placement.stage_signature(arch, lay, stage)

        def held():
            """What the recipe's level and ZeRO stage do not change (memoized apart: `would_fit`
            tries several of both on one layout)."""
            top = placement.top_shards(arch, lay, stage)
            groups = placement.device_layers(arch, lay, stage)
            acts = [(layer_activations(layer, w, arch.hidden_size, tp=tp, sp=sp, cp=cp, attention=attention,
                                       recompute=recompute, fp8_activation_input=fp8_activation_input),
                     count, tuple(i - stage.lo for i in indices))
                    for layer, count, indices in groups]   # indices local to the stage
            extra, logits = _top_saved(top, stage, train_flops.stored_workload(w), tp=tp, sp=sp, cp=cp)
            return top, groups, stage_params(arch, lay, stage), acts, extra, logits

        def make():
            top, groups, (dense, expert), acts, extra, logits = placement.memo(
                ("stage held", arch, one, signature, w, modules, attention, fp8_activation_input), held)
            states = stage_states(dense, expert, lay, zero, weight_bytes=weight_bytes, grad_bytes=grad_bytes,
                                  optimizer_bytes=k)
            if offload_layers >= stage.layers:
                raise UserError(f"--cpu-offloading-num-layers {offload_layers} offloads every layer of stage "
                                f"{stage.index} ({stage.layers}); at least one must stay on the device")
            kept = offloaded(acts, offload_layers)
            layer_bytes = sum(getattr(a, level) * count for a, count, _ in kept)
            buffer = max((getattr(a, level) for a, _, off in kept if off), default=0)
            working = max(a.none for a, _, _ in acts) if level == "full" and acts else 0
            sharded = zero >= 3 and (lay.dp * cp > 1 or edp > 1)
            gather = fsdp_gather_bytes(top, [layer for layer, _, _ in groups], weight_bytes, grad_bytes) \
                if sharded else 0
            return dense, expert, states, layer_bytes, extra, logits, working, gather, buffer

        # stages holding the same shards share their figures (memoized per signature)
        key = ("stage memory", arch, one, signature,
               w, zero, recompute, weight_bytes, grad_bytes, k, attention, fp8_activation_input, offload_layers)
        dense, expert, states, layer_bytes, extra, logits, working, gather, buffer = placement.memo(key, make)
        out.append(StageMemory(stage.index, layers=(stage.lo, stage.hi), device=placement.shard_id(arch, lay, stage),
                               dense_params=dense, expert_params=expert, states=states,
                               layer_activation_bytes=layer_bytes, extra_activation_bytes=extra, logits_bytes=logits,
                               in_flight=in_flight(stage.index, lay.pp, lay.micro_batches, chunks),
                               recompute_working_bytes=working, gather_bytes=gather, offload_buffer_bytes=buffer))
    return out

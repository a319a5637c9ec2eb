"""`train`: FLOPs, memory per device and step time of one optimizer step on a
layout, as a record; and the search over every layout of a device count.

A step is `global_batch` sequences of `seq` tokens. Each of the dp x cp
replica groups processes global_batch / dp sequences as m = global_batch /
(dp x micro_batch) micro-batches (gradient accumulation, the pipeline's
micro-batches). FLOPs are exact for the whole step (`train_flops`), memory is
per device and pipeline stage (`train_memory`), time per micro-batch and per
step (`train_time`).
"""

from ..errors import UserError
from ..record import Record
from ..splits import ceil_div
from ..capacity import binding_stage
from . import train_flops, train_memory, train_time
from .records import SCHEMA_VERSION, device_record, links_record, model_record

CONVENTIONS = (
    "Training pass = the forward ledger with the output head on every position plus a "
    "softmax cross-entropy over the vocabulary in fp32 (4 vector FLOPs per logit + 2 per "
    "row forward, 3 per logit + 1 per row backward); no KV cache is read; MLA runs in its "
    "naive form (K and V up-projected per head, as Megatron-LM trains it; --mla does not apply).",
    "Backward: every matrix operator 2x its forward matrix FLOPs (input and weight "
    "gradients; attention's QK^T and PV likewise); the embedding a scatter-add (one add "
    "per element, no matrix FLOPs); vector operators their forward vector FLOPs times: "
    "norm 2, activation 2, softmax 1, RoPE 1, residual 1, bias (gemm) 1, other 1.",
    "Model FLOPs = forward + backward matrix FLOPs = 3x the forward matrix FLOPs; "
    "hardware FLOPs add the recomputed matrix FLOPs (selective: the attention core; full: "
    "one forward of every decoder layer, never the embedding, head or loss) and, with "
    "--flash-recompute, the QK^T a fused attention backward recomputes.",
    "Memory: weights, gradients and optimizer states in their formats (AdamW: fp32 master, "
    "momentum, variance = 12 B/param), placed by the layout (TP, PP stages, EP) and then sharded "
    "by ZeRO over DP x CP (routed experts over the expert-data-parallel group); activations = "
    "what each operator keeps for its backward at the recompute level, times the micro-batches "
    "a stage holds in flight (1F1B: p - i on stage i); the loss keeps the logits in fp32. A "
    "fused attention kernel keeps Q, K, V, O and one fp32 log-sum-exp per (query, head).",
    "Step time: per micro-batch and stage, the roofline of every operator of the device's shard "
    "(max of FLOPs at the matrix/vector peak and bytes at the memory bandwidth, summed over "
    "operators; under SP the layers' norms and residual adds on 1/tp of the tokens) for forward, "
    "backward and recompute, plus communication not overlapped with "
    "compute (ring algorithm, alpha-beta per tier): TP/SP collectives of every layer forward and "
    "backward, EP all-to-all 4 per MoE layer, CP ring K/V passes, PP point-to-point; then the "
    "pipeline bubble of the schedule, the data-parallel gradient sync (overlapped with the "
    "backward under --overlap-dp) and the optimizer update (memory-bound).",
    "Formats: an 8-bit or 4-bit compute format (--act-dtype fp8, mxfp8, nvfp4) converts only the decoder layers' "
    "linear projections (the MoE router excepted), which run at its peak and keep their inputs in "
    "it; attention (at the BF16 peak), norms, activations, the router, embedding, head and loss, "
    "and the activations TP/EP/PP send stay in BF16, as Transformer Engine, torchao and NeMo train "
    "(DeepSeek-V3 report, arXiv:2412.19437, section 3.3.1). --recompute-modules (Megatron-LM's "
    "names) drops what each module recomputes (docs/train.md).",
    "MFU = model FLOPs of the step / (step time x devices x dense matrix peak); HFU = hardware "
    "FLOPs (with recompute) / the same. The exact count halves causal attention; Megatron-LM's "
    "published FLOP/s use Narayanan et al.'s eq. 3 (full s x s attention, one recompute), shown "
    "beside it for GPT-style models.",
)


LOWER_BOUND = (
    "Lower bound on the step time = max(model FLOPs / devices / dense matrix peak of the compute "
    "format, (2 x micro-batches x the mean device's weight shard + parameters / devices x "
    "(2 x optimizer + gradient + weight bytes)) / memory bandwidth): the mean device's share of "
    "the model FLOPs (3x forward matrix, causal halved), its weights read in every forward and "
    "backward, and the optimizer update of its share of the parameters; communication fully "
    "hidden, no pipeline bubble, vector FLOPs free, recompute not counted, efficiency 1.0. No "
    "measured step can be shorter; the step time above is an estimate, not a bound.")


class Setup(Record):
    """Every knob of a training step besides the model, workload and layout."""
    recompute: str = "none"
    recompute_modules: tuple = ()    # Megatron-LM's --recompute-modules (train_flops.RECOMPUTE_MODULES)
    fp8_activation_input: bool = False   # activations keep their inputs in FP8 (train_memory.kept_rows)
    offload_layers: int = 0          # each stage's first N layers keep their activations in host memory
    flash_recompute: bool = False
    attention: str = "fused"
    zero: int = 0
    optimizer: str = "adamw"
    weight_bytes: int = 2
    grad_bytes: int = 2
    master_bytes: int = 4
    schedule: str = "1f1b"
    chunks: int = 1
    compute_efficiency: float = 1.0
    memory_efficiency: float = 1.0
    overlap_dp: bool = False
    dispatch_dtype: str = ""     # EP all-to-all formats on the wire (collectives.token_bytes); "" = activations
    combine_dtype: str = ""
    ep_dispatcher: str = "alltoall"   # what runs the EP dispatch in the predicted step (efficiency.collective.EP_DISPATCHERS)

    @property
    def recompute_spec(self):
        """The level and modules as one string (train_flops.recompute_spec)."""
        return train_flops.recompute_spec(self.recompute, self.recompute_modules)


def micro_batches(global_batch, micro_batch, dp):
    """m = global_batch / (dp x micro_batch), or a UserError's reason."""
    if global_batch % (dp * micro_batch):
        return (f"global batch {global_batch} is not a multiple of dp x micro-batch = "
                f"{dp} x {micro_batch}")
    return global_batch // (dp * micro_batch)


def cp_reason(seq, cp):
    """Why `seq` tokens cannot be split over `cp` ranks in zig-zag chunks ("" when they can)."""
    if cp > 1 and seq % (2 * cp):
        return f"context parallelism splits the sequence into 2 x cp = {2 * cp} zig-zag chunks; {seq} tokens do not"
    return ""


def stage_memory(arch, w, lay, s):
    """[StageMemory] of the layout. DualPipe (DeepSeek-V3, arXiv:2412.19437, section 3.2.1) runs on
    rank i stage i of the forward direction and stage j = p - 1 - i of the reverse one, each as
    1F1B keeps it: rank i holds both stages' model states, min(p - i, m) micro-batches of stage
    i's activations and min(i + 1, m) of stage j's (j's 1F1B position), p + 1 in all as the paper's
    Table 2 says; the embedding on ranks 0 and p - 1 and the head and fp32 logits there for one
    micro-batch (a last stage's backward follows its forward). Indexed by rank."""
    mem = train_memory.memory(arch, w, lay, zero=s.zero, recompute=s.recompute_spec, optimizer=s.optimizer,
                              weight_bytes=s.weight_bytes, grad_bytes=s.grad_bytes, chunks=s.chunks,
                              attention=s.attention, master_bytes=s.master_bytes,
                              fp8_activation_input=s.fp8_activation_input, offload_layers=s.offload_layers)
    if s.schedule == "dualpipe":
        p = lay.pp
        mem = [m.replace(states=m.states + mem[p - 1 - m.stage].states,
                         partner_activation_bytes=mem[p - 1 - m.stage].activation_bytes,
                         gather_bytes=max(m.gather_bytes, mem[p - 1 - m.stage].gather_bytes),
                         offload_buffer_bytes=max(m.offload_buffer_bytes, mem[p - 1 - m.stage].offload_buffer_bytes))
               for m in mem]
    return mem


def binding(mem, capacity):
    """Index of the stage with the least headroom (ties: the first)."""
    return binding_stage([capacity - m.total for m in mem])


def lower_bound(arch, w, lay, device, s, *, mem, model_flops):
    """train_time.StepBound of the step (`model_flops` of the whole step)."""
    return train_time.step_lower_bound(
        model_flops, arch.params, [m.dense_params + m.expert_params for m in mem], lay, device,
        compute_dtype=w.compute_dtype, weight_bytes=s.weight_bytes, grad_bytes=s.grad_bytes,
        optimizer_bytes=train_memory.optimizer_bytes(s.optimizer, s.master_bytes))


def lower_bound_record(b, tokens):
    return {
        "step_s": _s(b.step_s), "bound": b.bound,
        "compute_s": _s(b.compute_s), "memory_s": _s(b.memory_s),
        "model_flops_per_device": b.model_flops_per_device,
        "peak_matrix_flops_per_s": b.peak_flops_per_s,
        "weight_read_bytes_per_device": b.weight_read_bytes,
        "optimizer_update_bytes_per_device": b.optimizer_bytes,
        "tokens_per_s_per_device": _ratio(tokens / b.step_s / b.devices) if b.step_s else None,
        "definition": LOWER_BOUND,
    }


def recipe_options(s, links, mem):
    """step_time's recipe options of a Setup (everything but the efficiencies)."""
    params = {m.stage: (m.dense_params, m.expert_params) for m in mem}
    return dict(recompute=s.recompute_spec, flash=s.flash_recompute, zero=s.zero, schedule=s.schedule,
                chunks=s.chunks, weight_bytes=s.weight_bytes, grad_bytes=s.grad_bytes,
                optimizer_bytes=train_memory.optimizer_bytes(s.optimizer, s.master_bytes), links=links,
                overlap_dp=s.overlap_dp, stage_params=lambda st: params[st.index],
                wire=(s.dispatch_dtype, s.combine_dtype), ep_dispatcher=s.ep_dispatcher)


def evaluate(arch, w, lay, device, s, *, links):
    """(memory per stage, binding stage, StepTime) of one layout."""
    mem = stage_memory(arch, w, lay, s)
    return mem, binding(mem, device.memory_bytes), step_of(arch, w, lay, device, s, links=links, mem=mem)


def step_of(arch, w, lay, device, s, *, links, mem):
    """train_time.StepTime of one layout whose memory per stage is `mem`."""
    return train_time.step_time(arch, w, lay, device, compute_efficiency=s.compute_efficiency,
                                memory_efficiency=s.memory_efficiency, **recipe_options(s, links, mem))


def predicted(arch, w, lay, device, s, *, links, mem):
    """The predicted step seconds (efficiency.training), None without a prediction."""
    got = predicted_with_step(arch, w, lay, device, s, links=links, mem=mem)
    return got[0] if got else None


def predicted_with_step(arch, w, lay, device, s, *, links, mem):
    """(predicted step seconds, the StepTime at achievable rates it scales), None without a prediction."""
    from .efficiency.training import predicted_step

    return predicted_step(arch, w, lay, device, **recipe_options(s, links, mem))


def predicted_record(step, global_batch, w, lay, train_tokens, at_rates=None, device=None):
    """The predicted step, tokens/s per device and (with a token budget) days; with `at_rates`
    (the StepTime at achievable rates the step scales) its parts and each stage's micro-batch,
    each times the fitted factor, so the parts sum to the step as the estimate's do; with `device`
    the fused attention's rates at its best shape, their basis and source (efficiency.attention)."""
    if step is None:
        return None
    from .efficiency.attention import SOURCE, training_rates
    from .efficiency.training import FITTED

    tokens = global_batch * w.tokens
    out = {"step_s": _s(step), "tokens_per_s_per_device": _ratio(tokens / step / lay.devices),
           "fitted_factor": FITTED["all"]}
    rates = training_rates(device) if device is not None else None
    if rates is not None:
        out["attention"] = {"forward_flops_per_s": rates.forward_flops_per_s,
                            "backward_flops_per_s": rates.backward_flops_per_s, "basis": rates.basis,
                            "source": SOURCE}
    if train_tokens:
        steps = ceil_div(train_tokens, tokens)
        out["train_days"] = _ratio(steps * step / 86400)
    if at_rates is not None:
        k = step / at_rates.step_s if at_rates.step_s else 0.0
        parts = time_record(at_rates)
        out["breakdown"] = {key: _s(k * v) for key, v in parts["breakdown"].items()}
        out["stages"] = [{"stage": st["stage"], "micro_batch_s": _s(k * st["micro_batch_s"])}
                         for st in parts["stages"]]
    return out


def _flops_record(st):
    return {
        "tokens": st.tokens,
        "forward_matrix_flops": st.forward_matrix_flops,
        "backward_matrix_flops": st.backward_matrix_flops,
        "recompute_matrix_flops": st.recompute_matrix_flops,
        "flash_recompute_flops": st.flash_extra_flops,
        "model_flops": st.model_flops,
        "hardware_flops": st.hardware_flops,
        "forward_vector_flops": st.forward_vector_flops,
        "backward_vector_flops": st.backward_vector_flops,
        "recompute_vector_flops": st.recompute_vector_flops,
    }


def _op_record(r):
    return {
        "name": r.name, "layers": r.layers, "repeats": r.repeats, "kind": r.kind,
        "forward_matrix_flops": r.forward_matrix_flops,
        "backward_matrix_flops": r.backward_matrix_flops,
        "recompute_matrix_flops": r.recompute_matrix_flops,
        "forward_vector_flops": r.forward_vector_flops,
        "backward_vector_flops": r.backward_vector_flops,
        "backward_bytes": r.backward_bytes,
        "saved_bytes": r.saved_bytes,
    }


def _rounded(x, places):
    """x rounded to `places` decimals so reruns and platforms print the same; a nonzero x
    that would round to 0 (a device at the 10^30 limit) keeps 12 significant digits
    instead: a positive time is never printed as zero."""
    r = round(x, places)
    return r if r or not x else float(f"{x:.12g}")


def _ratio(x):
    return None if x is None else _rounded(x, 6)


def _s(x):
    """Seconds, to 1e-12 s (see _rounded)."""
    return _rounded(x, 12)


def memory_record(mem, capacity, lay):
    rows = []
    for m in mem:
        num, den = m.in_flight
        rows.append({
            "stage": m.stage, "layers": f"{m.layers[0]}-{m.layers[1] - 1}",
            "params": m.dense_params + m.expert_params,
            "weights_bytes": m.states.weights, "grads_bytes": m.states.grads,
            "optimizer_bytes": m.states.optimizer,
            "layer_activations_bytes": m.layer_activation_bytes,
            "embedding_head_loss_activations_bytes": m.extra_activation_bytes,
            "logits_fp32_bytes": m.logits_bytes,
            "micro_batches_in_flight": num / den if den > 1 else num,
            "recompute_working_bytes": m.recompute_working_bytes,
            "offload_buffer_bytes": m.offload_buffer_bytes,
            "fsdp_gather_bytes": m.gather_bytes,
            "reverse_stage_activations_bytes": m.partner_activation_bytes,
            "activations_bytes": m.activation_bytes,
            "total_bytes": m.total,
            "headroom_bytes": capacity - m.total,
            "fits": m.total <= capacity,
        })
    return rows


def _collective_record(t, stage):
    c = t.collective
    return {"stage": stage, "phase": t.phase, "name": c.name, "dim": c.dim, "kind": c.kind,
            "bytes": c.bytes, "group": c.group, "tier": c.tier, "count": c.count, "time_s": _s(t.seconds)}


def time_record(t):
    b = t.stages[t.bottleneck]
    per = b.micro_batch
    m = t.micro_batches
    stages = [{"stage": s.stage,
               "forward_compute_s": _s(s.compute.forward), "backward_compute_s": _s(s.compute.backward),
               "recompute_compute_s": _s(s.compute.recompute), "weight_grad_compute_s": _s(s.compute.weight_grad),
               "forward_comm_s": _s(s.comm.forward), "backward_comm_s": _s(s.comm.backward),
               "recompute_comm_s": _s(s.comm.recompute), "micro_batch_s": _s(s.micro_batch.total),
               "dp_exposed_s": _s(s.dp_exposed_s), "optimizer_s": _s(s.optimizer_s)} for s in t.stages]
    sync = max(t.stages, key=lambda s: s.dp_exposed_s + s.optimizer_s)
    return {
        "schedule": t.schedule, "virtual_stages": t.chunks, "micro_batches": m,
        "bottleneck_stage": t.bottleneck,
        "micro_batch_s": _s(per.total),
        "step_s": _s(t.step_s),
        "breakdown": {
            "compute_s": _s(m * b.compute.total),
            "exposed_comm_s": _s(m * b.comm.total),
            "bubble_s": _s(t.bubble_s),
            "dp_sync_exposed_s": _s(sync.dp_exposed_s),
            "optimizer_s": _s(sync.optimizer_s),
        },
        "bubble_formula": t.bubble_formula,
        "bubble_fraction": _ratio(t.bubble_s / (m * per.total)) if per.total else None,
        "stages": stages,
        "collectives": [_collective_record(x, t.bottleneck) for x in b.collectives]
        + [_collective_record(x, sync.stage) for x in sync.dp_collectives],
    }


def throughput_record(arch, st, t, lay, device, *, w, global_batch, train_tokens):
    tokens = global_batch * w.tokens
    step = t.step_s
    peak = device.peak(w.compute_dtype)
    denom = step * lay.devices * peak if peak else None
    gpt = arch.model_type == "gpt2"
    megatron = (train_flops.megatron_closed_form(global_batch, w.tokens, len(arch.layers), arch.hidden_size,
                                                 arch.vocab_size) if gpt else None)
    out = {
        "tokens_per_step": tokens,
        "tokens_per_s_cluster": _ratio(tokens / step),
        "tokens_per_s_per_device": _ratio(tokens / step / lay.devices),
        "peak_matrix_flops_per_s": peak,
        "model_flops_per_step": st.model_flops,
        "hardware_flops_per_step": st.hardware_flops,
        "model_flops_per_s_per_device": _ratio(st.model_flops / step / lay.devices),
        "mfu": _ratio(st.model_flops / denom) if denom else None,
        "hfu": _ratio(st.hardware_flops / denom) if denom else None,
        "megatron_eq3_flops_per_step": megatron,
        "megatron_eq3_flops_per_s_per_device": _ratio(megatron / step / lay.devices) if megatron else None,
        "megatron_eq3_fraction_of_peak": _ratio(megatron / denom) if megatron and denom else None,
    }
    if train_tokens:
        steps = ceil_div(train_tokens, tokens)
        out["train"] = {"tokens": train_tokens, "steps": steps, "time_s": _s(steps * step),
                        "days": _ratio(steps * step / 86400),
                        "device_hours": _ratio(steps * step * lay.devices / 3600)}
    return out


def check_recipe(arch, s):
    """Refuse recompute modules the model has nothing for (and full with modules)."""
    s.recompute_spec   # validates the level and the modules
    blocks = [b for layer, _, _ in arch.layer_groups() for b in layer.blocks]
    if "mla_up_proj" in s.recompute_modules and not any(hasattr(b, "kv_lora_rank") for b in blocks):
        raise UserError(f"--recompute-modules mla_up_proj: {arch.id} "
                        "has no MLA attention")
    if "moe_act" in s.recompute_modules and not any(hasattr(b, "experts") for b in blocks):
        raise UserError(f"--recompute-modules moe_act: {arch.id} has no routed experts")


# Sub-byte compute formats train runs: NVFP4, Transformer Engine's NVFP4BlockScaling recipe (every
# linear layer's forward, data-gradient and weight-gradient GEMMs in NVFP4), which Megatron Bridge's
# bf16_with_nvfp4_mixed selects (NVIDIA-NeMo/Megatron-Bridge:src/megatron/bridge/training/
# mixed_precision.py: fp4 = "e2m1", fp4_recipe = "nvfp4").
NARROW_COMPUTE = ("nvfp4",)


def check_formats(w):
    wd = w.weight_dtype
    if wd.bits % 8 or wd.is_quantized or w.formats:
        raise UserError(f"train keeps every weight in one whole-byte format (bf16, fp16, fp32); "
                        f"got {wd.name}{' with native formats' if w.formats else ''}")
    if w.act_dtype.bits % 8 and w.act_dtype.name not in NARROW_COMPUTE:
        raise UserError(f"train computes in a whole-byte activation format (bf16, fp16, fp8, mxfp8) "
                        f"or {', '.join(NARROW_COMPUTE)}, got {w.act_dtype.name}")


def _inputs(w, lay, s, global_batch, links):
    return {
        "devices": lay.devices, "tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "cp": lay.cp, "ep": lay.ep,
        "sp": lay.sp, "seq": w.tokens, **({"supervised_tokens": w.head_positions} if w.head_positions else {}),
        **({"supervised_tokens": w.loss_positions, "loss_mask": "dense"} if w.loss_positions else {}),
        "micro_batch": w.batch, "global_batch": global_batch,
        "micro_batches_per_step": lay.micro_batches,
        "recompute": s.recompute, "recompute_modules": list(s.recompute_modules),
        "fp8_activation_input": s.fp8_activation_input, "cpu_offloading_num_layers": s.offload_layers,
        "flash_recompute": s.flash_recompute, "attention": s.attention,
        "zero": s.zero, "optimizer": s.optimizer,
        "optimizer_states": [{"state": n, "bytes_per_param": b}
                             for n, b in train_memory.optimizer_states(s.optimizer, s.master_bytes)],
        "weight_dtype": w.weight_dtype.name, "grad_bytes_per_param": s.grad_bytes,
        "act_dtype": w.act_dtype.name, "schedule": s.schedule, "virtual_stages": s.chunks,
        "overlap_dp": s.overlap_dp, "compute_efficiency": s.compute_efficiency,
        "memory_efficiency": s.memory_efficiency,
        "links": links_record(links),
        **({"ep_dispatcher": s.ep_dispatcher} if s.ep_dispatcher != "alltoall" else {}),
    }


HC_MATRIX = ("mHC contractions as matrix work (--hc-contractions matrix, the book's training wrapper): per "
             "token and sublayer the pre weighted sum 2mD and the post stream mix 2m^2 D are matrix FLOPs "
             "(not vector), their backward dpre, dcomb, dx_residual, dz and dpost 6mD + 4m^2 D; model FLOPs "
             "are then not 3 x the forward's.")
PER_LAYER = ("Operators are per layer: one instance of each distinct block (the rows of the layers "
             "listed under 'layers'), not multiplied by the number of layers that share it (x); every "
             "other figure is the whole step.")


def train(arch, w, device, lay, s, *, global_batch, links, train_tokens=None, per_layer=False):
    """The `train` record of one layout. `w`: one micro-batch (batch =
    micro-batch size, tokens = sequence length); `lay.micro_batches` = m; per_layer: the
    operator table holds one instance of each distinct layer (as `forward --per-layer`)."""
    check_formats(w)
    check_recipe(arch, s)
    reason = cp_reason(w.tokens, lay.cp)
    if reason:
        raise UserError(reason)
    st = train_flops.step(arch, w.replace(batch=global_batch), s.recompute_spec, s.flash_recompute)
    micro = train_flops.step(arch, w, s.recompute_spec, s.flash_recompute, per_layer)
    mem, bind, t = evaluate(arch, w, lay, device, s, links=links)
    peaks = unknown_peaks(device, w)
    step_pred, at_rates = predicted_with_step(arch, w, lay, device, s, links=links, mem=mem) or (None, None)
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "train",
        "model": model_record(arch),
        "device": device_record(device, w.compute_dtype, s.compute_efficiency, s.memory_efficiency),
        "inputs": _inputs(w, lay, s, global_batch, links),
        "flops_per_step": _flops_record(st),
        "closed_forms": [{"name": c.name, "formula": c.formula, "flops": c.flops,
                          "compared_with": c.compared_with, "exact_flops": c.exact_flops,
                          "ratio_to_exact": _ratio(c.ratio), "reason": c.reason}
                         for c in train_flops.conventions(arch, st, global_batch, w.tokens)],
        "time": {**time_record(t), "predicted_step_s": _s(step_pred) if step_pred else None,
                 "unknown_peaks": peaks},
        "predicted": predicted_record(step_pred, global_batch, w, lay, train_tokens, at_rates, device),
        "lower_bound": lower_bound_record(lower_bound(arch, w, lay, device, s, mem=mem, model_flops=st.model_flops),
                                          global_batch * w.tokens),
        "throughput": throughput_record(arch, st, t, lay, device, w=w, global_batch=global_batch,
                                        train_tokens=train_tokens),
        "memory": {
            "device_memory_bytes": device.memory_bytes,
            "binding_stage": bind,
            "fits": all(m.total <= device.memory_bytes for m in mem),
            "shortfall_bytes": max(0, mem[bind].total - device.memory_bytes),
            "stages": memory_record(mem, device.memory_bytes, lay),
            **({} if mem[bind].total <= device.memory_bytes
               else {"would_fit": would_fit(arch, w, lay, s, device.memory_bytes, mem=mem)}),
        },
        **({"per_layer": True} if per_layer else {}),
        **({"hc_contractions": w.hc_contractions} if w.hc_contractions != "vector" else {}),
        "operators_per_micro_batch": [_op_record(r) for r in micro.ops],
        "conventions": _conventions(peaks, s.ep_dispatcher) + ([PER_LAYER] if per_layer else [])
                       + ([HC_MATRIX] if w.hc_contractions == "matrix" else []),
    }


def would_fit(arch, w, lay, s, capacity, limit=3, *, mem):
    """The first `limit` recipe changes, least invasive first, under which every stage of the
    layout fits: ZeRO stages past the current one (they shard over DP x CP, so only with more
    than one replica), then recompute levels past the current one, then both. Each as
    {"options": the flags, "needs_bytes": the binding stage's memory}. Empty when none fits:
    more devices are needed (`--search` ranks the layouts of a device count). `mem`: the
    layout's `stage_memory` under `s`; a change whose model states alone exceed the capacity on
    some rank (`states_floor`) does not fit and is not evaluated further."""
    levels = ("none", "selective", "full")
    zeros = [z for z in (1, 2, 3) if z > s.zero] if lay.dp * lay.cp > 1 else []
    recomputes = [r for r in levels if levels.index(r) > levels.index(s.recompute)]
    changes = ([(f"--zero {z}", {"zero": z}) for z in zeros]
               + [(f"--recompute {r}", _level(r)) for r in recomputes]
               + [(f"--zero {z} --recompute {r}", {"zero": z, **_level(r)})
                  for r in recomputes for z in zeros])
    found = []
    for options, change in changes:
        if states_floor(mem, lay, s, change.get("zero", s.zero)) > capacity:
            continue
        need = max(m.total for m in stage_memory(arch, w, lay, s.replace(**change)))
        if need <= capacity:
            found.append({"options": options, "needs_bytes": need})
            if len(found) == limit:
                break
    return found


def states_floor(mem, lay, s, zero):
    """The most model states a rank holds under ZeRO stage `zero` (`train_memory.stage_states` of
    its stage's parameters in `mem`, the `stage_memory` rows; DualPipe's rank adds the reverse
    stage's, as `stage_memory` does). No recompute level changes them, and a stage's total only
    adds activations, gathers and buffers to them, so a rank's total under the change is never
    below its figure here."""
    k = train_memory.optimizer_bytes(s.optimizer, s.master_bytes)
    states = [train_memory.stage_states(m.dense_params, m.expert_params, lay, zero, weight_bytes=s.weight_bytes,
                                        grad_bytes=s.grad_bytes, optimizer_bytes=k).total for m in mem]
    if s.schedule == "dualpipe":
        states = [states[i] + states[lay.pp - 1 - i] for i in range(len(states))]
    return max(states)


def _level(r):
    """The Setup change to recompute level `r` (full runs every layer again: no modules with it)."""
    return {"recompute": r, **({"recompute_modules": ()} if r == "full" else {})}


OBJECTIVES = ("step", "mfu", "predicted")


def unknown_peaks(device, w):
    """The peaks (matrix, vector) the device publishes none of for this compute format.
    Training has both kinds of FLOPs, so each missing peak leaves part of the compute
    time unknown: those FLOPs add 0 s and their operators take their memory time."""
    from .roofline import roof
    from .roofline import unknown_peaks as sides
    return sides(roof(device, w.compute_dtype))


def unknown_peak_note(peaks):
    """The convention printed when `unknown_peaks` is not empty (None otherwise)."""
    if not peaks:
        return None
    return (f"{' and '.join(peaks).capitalize()} peak unknown (not published for this device): "
            f"those FLOPs add no time, so 'compute' is each operator's memory time (and its FLOPs at "
            f"the known peaks), which understates the real compute; step time and time to train are "
            f"understated by it, tokens/s and model FLOP/s derived from them overstated, MFU/HFU "
            f"unknown.")


def _conventions(peaks, dispatcher="alltoall"):
    """CONVENTIONS, plus `unknown_peak_note` when a peak is unknown; `dispatcher`: the predicted
    step's EP dispatcher (efficiency.training.convention)."""
    from .efficiency.training import convention

    note = unknown_peak_note(peaks)
    return list(CONVENTIONS) + [convention(dispatcher)] + ([note] if note else [])


def search(arch, w, device, s, *, devices, global_batch, links, objective="step", top=10, cps=(1,)):
    """Every layout of `devices` devices ranked by step time (or MFU, the same
    order at a fixed model and batch), those that do not fit counted apart. The top list is
    `ranking.rank_top`'s: a layout's step time is computed only while its floor
    (`train_time.step_floor`; for --objective predicted `efficiency.training.predicted_floor`)
    could still beat the top-th (not on links where a collective can be refused: `comm.prunable`,
    nor for a prediction on a device without one)."""
    from .. import comm
    from .. import layout as placement
    from . import ranking

    if objective not in OBJECTIVES:
        raise UserError(f"unknown objective '{objective}'; choose from {', '.join(OBJECTIVES)}")
    check_formats(w)
    check_recipe(arch, s)
    st = train_flops.step(arch, w.replace(batch=global_batch), s.recompute_spec, s.flash_recompute)
    peak = device.peak(w.compute_dtype)
    peaks = unknown_peaks(device, w)

    def m_of(dp):
        m = micro_batches(global_batch, w.batch, dp)
        return "global batch is not a multiple of dp x micro-batch" if isinstance(m, str) else m

    examples = {}
    layouts, counted = placement.enumerate_layouts(arch, devices, cps=cps, micro_batches=m_of, examples=examples)
    rejections = ranking.Rejections()
    for reason, n in counted.items():
        rejections.add(reason, examples[reason], count=n)

    def checked(lay):
        if cp_reason(w.tokens, lay.cp):
            raise ranking.Rejected("the sequence does not split into 2 x cp zig-zag chunks")
        try:
            train_time.check_schedule(arch, lay, s.schedule, s.chunks)
        except UserError:
            raise ranking.Rejected(f"the {s.schedule} schedule cannot run this layout") from None
        if s.offload_layers and s.offload_layers >= min(st.layers for st in placement.stages(arch, lay)):
            raise ranking.Rejected("--cpu-offloading-num-layers offloads every layer of a stage")

    def fits(mem, bind):
        need = mem[bind].total
        if need > device.memory_bytes:
            raise ranking.Rejected("memory shortfall (the binding stage needs more than the device holds)",
                                   need - device.memory_bytes)
        return need

    def scored(lay):
        checked(lay)
        mem, bind, t = evaluate(arch, w, lay, device, s, links=links)   # a missing link: ranking.rank counts it
        need = fits(mem, bind)
        pred = predicted(arch, w, lay, device, s, links=links, mem=mem) if objective == "predicted" else None
        return (pred if objective == "predicted" and pred is not None else t.step_s), need, t, pred

    def bounded(lay):   # the step time's floor, after every refusal but the step time's own
        checked(lay)
        mem = stage_memory(arch, w, lay, s)
        need = fits(mem, binding(mem, device.memory_bytes))
        return train_time.step_floor(arch, w, lay, device, compute_efficiency=s.compute_efficiency,
                                     memory_efficiency=s.memory_efficiency, **recipe_options(s, links, mem)), \
            mem, need

    def exact(lay, mem, need):
        t = step_of(arch, w, lay, device, s, links=links, mem=mem)
        return t.step_s, need, t, None

    def bounded_predicted(lay):   # the predicted step's floor (efficiency.training.predicted_floor)
        from .efficiency.training import predicted_floor
        checked(lay)
        mem = stage_memory(arch, w, lay, s)
        need = fits(mem, binding(mem, device.memory_bytes))
        return predicted_floor(arch, w, lay, device, **recipe_options(s, links, mem)), mem, need

    def exact_predicted(lay, mem, need):
        pred = predicted(arch, w, lay, device, s, links=links, mem=mem)
        return pred, need, step_of(arch, w, lay, device, s, links=links, mem=mem), pred

    tie = lambda lay: (lay.tp * lay.cp, lay.pp)
    from .efficiency.predict import achievable
    if comm.prunable(links) and (objective != "predicted" or achievable(device, w.compute_dtype) is not None):
        # step_time refuses no layout on these links; the predicted step has a floor where it exists
        pred = objective == "predicted"
        ranked, admitted = ranking.rank_top(layouts, bound=bounded_predicted if pred else bounded,
                                            exact=exact_predicted if pred else exact, tie_break=tie,
                                            rejections=rejections, top=top)
    else:
        ranked = ranking.rank(layouts, scored, tie, rejections)
        admitted = len(ranked)
    considered = len(layouts) + sum(counted.values())
    rows = []
    for _, _, lay, need, t, pred in ranked[:top]:
        step = t.step_s
        b = t.stages[t.bottleneck]
        rows.append({
            "layout": lay.label(), "tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "cp": lay.cp, "ep": lay.ep,
            "sp": lay.sp, "micro_batches": lay.micro_batches, "step_s": _s(step),
            "compute_s": _s(t.micro_batches * b.compute.total),
            "exposed_comm_s": _s(t.micro_batches * b.comm.total), "bubble_s": _s(t.bubble_s),
            "dp_sync_and_optimizer_s": _s(t.sync_s),
            "mfu": _ratio(st.model_flops / (step * lay.devices * peak)) if peak else None,
            "tokens_per_s_per_device": _ratio(global_batch * w.tokens / step / lay.devices),
            "peak_memory_bytes": need, "headroom_bytes": device.memory_bytes - need,
            **({"predicted_step_s": _s(pred) if pred else None} if objective == "predicted" else {}),
        })
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "train --search",
        "model": model_record(arch),
        "device": device_record(device, w.compute_dtype, s.compute_efficiency, s.memory_efficiency),
        "inputs": {**_inputs(w, placement.Layout(dp=devices), s, global_batch, links),
                   "objective": objective, "top": top, "cp_values": list(cps)},
        "model_flops_per_step": st.model_flops,
        "layouts_considered": considered,
        "layouts_admitted": admitted,
        "rejected": rejections.records(),
        "top": rows,
        "unknown_peaks": peaks,
        "conventions": _conventions(peaks, s.ep_dispatcher) + [
            "Search: every tp x pp x cp x dp = devices (cp from the given values), every EP degree "
            "dividing tp x dp and the experts, sequence parallelism whenever tp > 1; ranked by step "
            "time (MFU ranks the same at a fixed model and batch; --objective predicted ranks by the "
            "predicted step, docs/prediction.md), ties to fewer devices per TP/CP "
            "group, then fewer stages; layouts that do not fit are counted, not ranked."],
    }

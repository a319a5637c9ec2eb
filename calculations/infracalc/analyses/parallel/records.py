"""The `parallel` record of one layout and the `--batch-sweep` record."""

from ... import layout as placement
from ...splits import ceil_div
from ...errors import UserError
from .. import mla_path
from ..memory import RESERVE_RULE, cache_room, engine_defaults
from ..records import CONVENTIONS, SCHEMA_VERSION, device_record, links_record, model_record, workload_record
from ..serving import SERVING_CONVENTIONS
from .conventions import ESTIMATE, LEFT_OUT, PARALLEL_CONVENTIONS, SERVING_LAYOUT, comm_conventions
from .communication import tier
from .pipeline import latency, latency_bound, phases
from .plan import stage_kinds


def memory(plan, lay, batch):
    """Per-stage memory (as `kv`), the binding stage and the replica's capacity (what a device
    holds does not depend on dp or the batch; asked once per record, so not memoized)."""
    context = plan.P + plan.G - 1
    rows, binding = placement.device_memory(plan.arch, plan.wd, lay, context, plan.device.memory_bytes,
                                            reserve_bytes=plan.reserve)
    return rows, binding, rows[binding].max_requests   # the binding stage fits the fewest


def search_memory(plan, lay):
    """(the binding stage's StageMemory, the replica's capacity) as `memory` gives them, from
    one row per distinct stage kind (`Plan.stage_kinds`; stages of one kind hold the same,
    and the first of a kind stands for it, as `memory`'s ties go to the first stage)."""
    def make():
        firsts = [st for _, st in stage_kinds(plan, lay)[1]]
        rows, binding = placement.binding_memory(plan.arch, plan.wd, lay, firsts, context=plan.P + plan.G - 1,
                                                 memory_bytes=plan.device.memory_bytes, reserve_bytes=plan.reserve)
        return rows[binding], rows[binding].max_requests
    return plan.memo(("search memory", lay.tp, lay.ep, lay.pp, lay.cp, lay.pp_layers), make)


def layout_record(plan, lay, m):
    groups = []
    for dim in ("tp", "cp", "ep", "dp", "pp"):
        size = getattr(lay, dim)
        if size > 1:
            span = lay.group_stride("pp") + 1 if dim == "pp" else lay.group_span(dim)
            groups.append({"dim": dim, "size": size, "stride": lay.group_stride(dim), "span": span,
                           "tier": "-" if dim == "dp" else tier(plan, lay, dim)})
    sizes = placement.stage_sizes(len(plan.arch.layers), lay.pp, lay.pp_layers)
    return {"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "cp": lay.cp, "ep": lay.ep, "sp": lay.sp,
            "expert_tp": lay.expert_tp if placement.moe_experts(plan.arch) else None,
            "micro_batches": m, "pp_layers": list(sizes), "order": lay.order, "devices": lay.devices,
            "label": lay.label(), "groups": groups}


def memory_record(plan, lay, batch):
    rows, binding, cap = memory(plan, lay, batch)
    stages = [{"stage": s.index, "layers": f"{s.lo}-{s.hi - 1}", "weight_bytes": s.weight_bytes,
               "cache_bytes_per_request": s.kv_bytes_per_request, "reserve_bytes": s.reserve_bytes,
               "need_bytes": s.need(batch), "memory_bytes": s.memory_bytes, "max_requests": s.max_requests,
               "shortfall_bytes": s.shortfall_bytes(batch)} for s in rows]
    fits = cap is None or batch <= cap
    bind = None if binding is None else stages[binding]
    return {"context_tokens": plan.P + plan.G - 1, "cache_tokens_per_rank": ceil_div(plan.P + plan.G - 1, lay.cp),
            "memory_convention": plan.device.memory_convention,
            "reserve_rule": RESERVE_RULE if plan.reserve is None else "--reserve",
            "engine_defaults": None if bind is None else engine_defaults(
                bind["memory_bytes"], bind["weight_bytes"], bind["cache_bytes_per_request"]),
            "stages": stages, "binding_stage": binding,
            "max_requests_per_replica": cap, "max_requests_cluster": None if cap is None else cap * lay.dp,
            "fits": fits, "shortfall_bytes": max(s["shortfall_bytes"] for s in stages)}


def serving_record(plan, lay, rows):
    """analyses/serving's bound per distinct stage shard (its room beside its weights and
    reserve); the replica is bounded by its slowest stage, the cluster by dp replicas.
    Communication is not charged (still an upper bound). Under CP a stage's bound is its CP
    group's (`cp_pool`): the cp devices holding one shard as one device of cp x its room, peaks
    and bandwidth, charged each request's whole work."""
    from ..serving import serving_bound

    per_stage, seen = [], {}
    r = cp_pool(plan.r, lay.cp)
    for st, mem in zip(placement.stages(plan.arch, lay), rows):
        room = cache_room(mem["memory_bytes"], mem["weight_bytes"], mem["reserve_bytes"]) * lay.cp
        key = (placement.stage_signature(plan.arch, lay, st), room)   # equal shards, one bound
        if key not in seen:
            shard = placement.shard(plan.arch, lay, st)
            seen[key] = serving_bound(shard, plan.wd, r, plan.P, plan.G, room_bytes=room,
                                      prefill_w=plan.wp.replace(tokens=plan.P))
        b = seen[key]
        s = b["steady_state"]
        per_stage.append({"stage": st.index, "guaranteed_concurrency": b["guaranteed_concurrency"],
                          "concurrency": None if s is None else s["concurrency"],
                          "requests_per_s": None if s is None else s["requests_per_s"],
                          "output_tokens_per_s": None if s is None else s["output_tokens_per_s"],
                          "bound": "nothing fits" if s is None else s["bound"]})
    rates = [s["output_tokens_per_s"] for s in per_stage]
    replica = 0.0 if any(x is None for x in rates) else min(rates)
    return {"stages": per_stage, "output_tokens_per_s_replica": replica,
            "output_tokens_per_s_cluster": replica * lay.dp,
            "output_tokens_per_s_per_device": replica * lay.dp / lay.devices,
            "requests_per_s_replica": replica / plan.G,
            "requests_per_s_cluster": replica * lay.dp / plan.G}


def cp_pool(r, cp):
    """The ceilings of a CP group of cp devices taken as one device: cp x each peak and the
    bandwidth (`r` itself when cp is 1). Context parallelism moves a request's work and cache
    between the ranks and cannot add any: whatever the split, the group holds at most cp x one
    device's room, runs each request's whole prefill and decode work (its FLOPs and cache
    traffic, not a rank's share) at no more than cp x the peaks, and reads the shard's weights at
    least once a step, so analyses/serving's bound of that pooled device bounds the group."""
    if cp == 1:
        return r
    return r.replace(matrix_flops_per_s=r.matrix_flops_per_s * cp, vector_flops_per_s=r.vector_flops_per_s * cp,
                     bytes_per_s=r.bytes_per_s * cp)


def inputs_record(plan, batch):
    rec = {"devices": None, "batch": batch, "input_len": plan.P, "output_len": plan.G,
           "decode_steps": plan.steps, "overlap": plan.overlap, "algorithm": plan.algorithm}
    rec.update((k, v) for k, v in workload_record(plan.w, plan.arch).items()
               if k not in ("batch", "tokens", "history", "logits"))
    if plan.ep_dedup:   # echoed only when set (stored results predate the option)
        rec["ep_dedup"] = True
    if plan.cp_split != "contiguous":   # likewise
        rec["cp_split"] = plan.cp_split
    for what in ("dispatch", "combine", "logits"):   # likewise
        if getattr(plan, f"{what}_dtype"):
            rec[f"{what}_dtype"] = getattr(plan, f"{what}_dtype")
    if plan.pp_send != "slice":   # likewise
        rec["pp_send"] = plan.pp_send
    mla = plan.mla_choices
    if any(mla.values()):
        rec["mla"] = (f"auto: {mla['prefill']['path'] if mla['prefill'] else '-'} for the prefill, "
                      f"{mla['decode steps']['path'] if mla['decode steps'] else '-'} for the decode steps")
    return rec


def header(plan, command="parallel"):
    ce, me = plan.efficiency
    return {"schema_version": SCHEMA_VERSION, "command": command, "model": model_record(plan.arch),
            "device": device_record(plan.device, plan.w.compute_dtype, ce, me),
            "links": links_record(plan.links)}


def unknown_peak_notes(plan):
    """A note when the device publishes no matrix or vector peak (Apple; TPUs' vector
    peak): those FLOPs are charged no time, so every time here leaves them out."""
    from ..roofline import unknown_peaks
    peaks = unknown_peaks(plan.r)
    if not peaks:
        return []
    return [f"{' and '.join(peaks)} peak unknown on {plan.device.id} (none published): those FLOPs are "
            f"charged no time, so the roofline and 'compute-bound' times count only the memory side "
            f"(and the FLOPs at known peaks): every time here leaves those FLOPs out"]


def notes(plan, lay, mem, batch):
    out = unknown_peak_notes(plan) + plan.length_notes
    for phase, choice in plan.mla_choices.items():
        if choice:
            out.append(mla_path.note(choice, phase) + f" (times of the whole model on one device at batch "
                       f"{batch}; the chosen path runs on every shard)")
    if not mem["fits"]:
        st = mem["stages"][mem["binding_stage"]]
        out.append(f"does not fit: batch {batch} per replica needs {st['need_bytes']:,} B on a device of "
                   f"stage {st['stage']}, {mem['shortfall_bytes']:,} B more than its "
                   f"{st['memory_bytes']:,} B; times are computed as if memory were unlimited")
    return out


def parallel(plan, lay, batch, comm_path=False, token_feedback=False):
    """The `parallel` record of one layout and one batch per replica; with `comm_path` the
    communication path of one micro-batch pass (`path.path_record`, `token_feedback` included)."""
    placement.validate(plan.arch, lay)
    plan = plan.at_batch(batch)
    ph = phases(plan, lay, batch)
    rec = header(plan)
    rec["inputs"] = inputs_record(plan, batch)
    rec["inputs"]["devices"] = lay.devices
    rec["layout"] = layout_record(plan, lay, ph["micro_batches"])
    mem = memory_record(plan, lay, batch)
    rec["notes"] = notes(plan, lay, mem, batch)
    rec["memory"] = mem
    rec["latency"] = latency(plan, lay, batch, ph)
    rec["latency_definition"] = ESTIMATE
    rec["lower_bound"] = latency_bound(plan, lay, batch, ph)
    from . import predicted
    predicted.annotate(plan, lay, batch, ph, rec["latency"])
    rec["phases"] = {k: ph[k] for k in ("prefill", "first", "last", "decode") if k in ph}
    if comm_path:
        from .path import PATH_CONVENTION, path_record
        rec["communication_path"] = path_record(plan, lay, ph, token_feedback)
    rec["serving"] = serving_record(plan, lay, mem["stages"])
    if rec["serving"]:
        from ..efficiency.serving import predicted_layout
        rec["serving"]["predicted"] = predicted_layout(plan.arch, plan.wd, plan.device, lay, plan.P, plan.G)
    rec["left_out"] = list(LEFT_OUT)
    rec["conventions"] = (list(CONVENTIONS) + list(PARALLEL_CONVENTIONS) + list(comm_conventions(plan))
                          + ([predicted.DEFINITION] if "predicted_ttft_s" in rec["latency"] else [])
                          + ([SERVING_LAYOUT] + list(SERVING_CONVENTIONS) if rec["serving"] else [])
                          + ([PATH_CONVENTION] if comm_path else []))
    return rec


# -- batch sweep ----------------------------------------------------------------------

SWEEP_COLUMNS = ("batch", "micro_batches", "ttft_s", "tpot_first_s", "tpot_mean_s", "tpot_last_s",
                 "decode_tokens_per_s_per_request", "decode_tokens_per_s_replica",
                 "decode_tokens_per_s_cluster", "decode_tokens_per_s_per_device", "exposed_comm_share",
                 "bubble_fraction", "predicted_ttft_s", "predicted_tpot_mean_s",
                 "predicted_decode_tokens_per_s_per_device")


def sweep(plan, lay):
    """B = 1, 2, 4, ... up to the replica's capacity: the `decode --batch-sweep` for a layout."""
    from ..decode import sweep_batches

    placement.validate(plan.arch, lay)
    if plan.G < 2:
        raise UserError("--batch-sweep needs --output-len of at least 2 (one decode step)")
    mem = memory_record(plan, lay, 1)
    cap = mem["max_requests_per_replica"]
    if cap is None:
        raise UserError(f"{plan.arch.id} keeps no per-request cache: memory does not bound the batch")
    from . import predicted as prediction

    rows = []
    for b in sweep_batches(cap):
        ph = phases(plan, lay, b, detail=False)
        lat = latency(plan, lay, b, ph)
        pred = prediction.phases(plan, lay, b, ph)
        plat = latency(plan, lay, b, pred) if pred else {}
        dec = ph["decode"]
        exposed = max(s["exposed_comm_s"] for s in dec["stages"])
        rows.append({"batch": b, "micro_batches": ph["micro_batches"], "ttft_s": lat["ttft_s"],
                     "tpot_first_s": lat["tpot_first_s"], "tpot_mean_s": lat["tpot_mean_s"],
                     "tpot_last_s": lat["tpot_last_s"],
                     "decode_tokens_per_s_per_request": lat["decode_tokens_per_s_per_request"],
                     "decode_tokens_per_s_replica": lat["decode_tokens_per_s_replica"],
                     "decode_tokens_per_s_cluster": lat["decode_tokens_per_s_cluster"],
                     "decode_tokens_per_s_per_device": lat["decode_tokens_per_s_per_device"],
                     "exposed_comm_share": exposed / dec["cycle_s"] if dec["cycle_s"] else 0.0,
                     "bubble_fraction": dec["bubble_fraction"],
                     **{f"predicted_{k}": plat.get(k) for k in ("ttft_s", "tpot_mean_s",
                                                                 "decode_tokens_per_s_per_device")}})
    rec = header(plan, "parallel --batch-sweep")
    rec["inputs"] = inputs_record(plan, None)
    rec["inputs"]["devices"] = lay.devices
    del rec["inputs"]["batch"]
    rec["layout"] = layout_record(plan, lay, lay.micro_batches)
    rec["layout"]["micro_batches"] = "gcd(B, pp)" if lay.micro_batches == 1 else lay.micro_batches
    rec["notes"] = notes(plan, lay, mem, 1) if cap else ["not even one request fits: nothing to sweep"]
    rec["memory"] = mem
    rec["rows"] = rows
    rec["latency_definition"] = (ESTIMATE + " The sweep gives the estimate and the prediction (predicted_*: "
                                 + prediction.DEFINITION + "); `parallel --batch B` adds the lower bound.")
    rec["left_out"] = list(LEFT_OUT)
    rec["conventions"] = list(CONVENTIONS) + list(PARALLEL_CONVENTIONS) + list(comm_conventions(plan))
    return rec

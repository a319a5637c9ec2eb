"""`serve`: a serving system on one device (or one model replica's device): the three
schedulers side by side, load and queueing, and the SLO check.

Every figure comes from the ledger through iteration.Parts; the memory ceilings are
the serving bound's (analyses/serving.concurrency) in the room `decode`'s capacity
record leaves; the MLA path is chosen as `decode` chooses it.
"""

from .. import mla_path, serving
from ..decode import (LEFT_OUT, cached_tokens, capacity_record, check_lengths, decode_path,
                      step_histories)
from ..records import SCHEMA_VERSION, conventions, device_record, model_record, workload_record
from ..roofline import roof
from . import batching, iteration, queueing

DEFINITIONS = (
    "lower_bound: no run of this policy at this concurrency can take less time per iteration "
    "(or serve more requests/s) under the stated peaks and bandwidth: work at peak, units in "
    "parallel, operators fused, weights and cache read once per iteration.",
    "estimate: the operator-sum roofline of the mean iteration (each operator max(FLOPs / peak, "
    "bytes / bandwidth), summed) at efficiency --compute-efficiency / --memory-efficiency; "
    "simple to check by hand, not a prediction.",
)


def meets(row, ttft_limit, tpot_limit):
    """Whether a policy's TTFT and TPOT meet the limits, under each kind of figure, and
    the first limit each misses ({'lower_bound': {'meets': .., 'misses': [..]}, ...})."""
    out = {}
    for kind in ("lower_bound", "estimate"):
        misses = [f"{name} {row[key][kind]:.6g} s > limit {limit:.6g} s"
                  for name, key, limit in (("TTFT", "ttft_s", ttft_limit), ("TPOT", "tpot_s", tpot_limit))
                  if limit is not None and row[key][kind] > limit]
        out[kind] = {"meets": not misses, "misses": misses}
    return out


class Options:
    """The scheduler and load options of one `serve` run."""

    def __init__(self, max_seqs=256, token_budget=8192, rate=None, cv2=0.0, ttft_limit=None,
                 tpot_limit=None, reserve_bytes=None, compute_efficiency=1.0, memory_efficiency=1.0):
        self.max_seqs, self.token_budget = max_seqs, token_budget
        self.rate, self.cv2 = rate, cv2
        self.ttft_limit, self.tpot_limit = ttft_limit, tpot_limit
        self.reserve_bytes = reserve_bytes
        self.compute_efficiency, self.memory_efficiency = compute_efficiency, memory_efficiency

    def record(self):
        return {"max_seqs": self.max_seqs, "max_batched_tokens": self.token_budget,
                "rate_per_s": self.rate, "service_cv2": self.cv2,
                "ttft_limit_s": self.ttft_limit, "tpot_limit_s": self.tpot_limit}


def parts_for(arch, w, device, input_len, output_len, r):
    """(Parts, the decode workload, notes): the MLA paths chosen as `decode` chooses them."""
    notes = check_lengths(arch, input_len, output_len)
    w = w.replace(batch=1, tokens=1, history=0, logits="last")
    lo, hi = step_histories(input_len, output_len)
    wp, choice = mla_path.for_pass(arch, w.replace(tokens=input_len), r)
    w, step_choice = decode_path(arch, w, lo, hi, r)
    for phase, c in (("prefill", choice), ("decode steps", step_choice)):
        if c:
            notes.append(mla_path.note(c, phase))
    return iteration.Parts(arch, w, input_len, output_len, wp), w, notes


def serve(arch, w, device, input_len, output_len, opts):
    """The `serve` record of one device."""
    r = roof(device, w.compute_dtype, opts.compute_efficiency, opts.memory_efficiency)
    parts, w, notes = parts_for(arch, w, device, input_len, output_len, r)
    cap = capacity_record(arch, w, device, cached_tokens(input_len, output_len), opts.reserve_bytes)
    conc = serving.concurrency(arch, w, input_len, output_len, cap["cache_room_bytes"],
                               cap["cache_bytes_per_request"] or None)
    rows = batching.policies(parts, r, opts.max_seqs, opts.token_budget, conc,
                             cap["cache_bytes_per_request"])
    for row in rows:
        if "refused" in row:
            continue
        if opts.rate is not None:
            mu = row["requests_per_s"]["estimate"]
            ttft, tpot = row["ttft_s"]["estimate"], row["tpot_s"]["estimate"]
            row["load"] = queueing.load(opts.rate, mu, ttft, ttft + (output_len - 1) * tpot, opts.cv2,
                                        opts.ttft_limit)
        if opts.ttft_limit is not None or opts.tpot_limit is not None:
            row["slo"] = meets(row, opts.ttft_limit, opts.tpot_limit)
    rec = {
        "schema_version": SCHEMA_VERSION,
        "command": "serve",
        "model": model_record(arch),
        "device": device_record(device, r, w.compute_dtype, opts.compute_efficiency, opts.memory_efficiency),
        "inputs": dict(workload_record(w), input_len=input_len, output_len=output_len, **opts.record()),
        "notes": notes,
        "capacity": {k: cap[k] for k in ("weight_bytes", "reserve_bytes", "cache_room_bytes",
                                         "cache_bytes_per_request", "max_requests")},
        "concurrency_ceilings": {"guaranteed": conc[0], "steady_state": conc[1],
                                 "held_cache_summed_bytes": conc[2], "held_cache_steps": conc[3]},
        "policies": rows,
        "definitions": list(DEFINITIONS),
        "left_out": list(LEFT_OUT[:1]),
        "conventions": conventions(w) + list(batching.SCHEDULER_CONVENTIONS)
                       + ([queueing.QUEUE_CONVENTION] if opts.rate is not None else []),
    }
    del rec["inputs"]["batch"], rec["inputs"]["tokens"], rec["inputs"]["history"], rec["inputs"]["logits"]
    return rec


def replica_shard(arch, tp, ep=1):
    """The per-device architecture of a tensor-parallel replica (one stage, no CP)."""
    from ... import layout as placement

    lay = placement.Layout(tp=tp, ep=ep)
    placement.validate(arch, lay)
    return placement.shard(arch, lay, placement.stages(arch, lay)[0])


def system_record(arch, w, device, input_len, output_len, opts, tp=1, max_devices=None):
    """The `serve` record: with limits (max_devices given), the SLO sizing over device counts
    first, then the schedulers compared on the chosen replica; else the schedulers on one
    replica of `tp` devices (communication not charged)."""
    sizing = None
    if max_devices is not None:
        from .. import parallel
        from . import slo

        plan = parallel.Plan(arch, w, device, input_len, output_len, compute_efficiency=opts.compute_efficiency,
                             memory_efficiency=opts.memory_efficiency, reserve_bytes=opts.reserve_bytes)
        answer, rows = slo.size(plan, opts.ttft_limit, opts.tpot_limit, max_devices)
        sizing = {"answer": None, "counts": [{k: v for k, v in row.items() if k != "layout_record"}
                                             for row in rows],
                  "convention": slo.SLO_CONVENTION}
        if answer is not None:
            lay = answer["layout_record"]
            sizing["answer"] = dict(sizing["counts"][-1], lower_bound=slo.chosen_bounds(plan, answer))
            tp = lay.tp if lay.pp == 1 and lay.cp == 1 and lay.ep == 1 else None
        else:
            tp = None
    rec = None
    if tp is not None:
        shard = replica_shard(arch, tp) if tp > 1 else arch
        rec = serve(shard, w, device, input_len, output_len, opts)
        rec["model"] = model_record(arch)
        rec["replica"] = {"tp": tp, "shard": shard.id if tp > 1 else None,
                          "note": "per device of the replica: its shard's work on its roof; TP "
                                  "communication is not charged (hidden), so the lower bounds stay "
                                  "bounds and the estimates leave it out" if tp > 1 else None}
    else:
        r = roof(device, w.compute_dtype, opts.compute_efficiency, opts.memory_efficiency)
        rec = {"schema_version": SCHEMA_VERSION, "command": "serve", "model": model_record(arch),
               "device": device_record(device, r, w.compute_dtype, opts.compute_efficiency,
                                       opts.memory_efficiency),
               "inputs": dict(input_len=input_len, output_len=output_len, **opts.record()),
               "notes": [], "policies": [],
               "definitions": list(DEFINITIONS), "left_out": list(LEFT_OUT[:1]),
               "conventions": conventions(w)}
        if sizing and sizing["answer"]:
            rec["notes"].append("the schedulers are compared on tensor-parallel replicas only; the "
                                f"chosen layout {sizing['answer']['layout']} has pipeline, context or "
                                "expert parallelism")
    if sizing is not None:
        rec["inputs"]["max_devices"] = max_devices
        rec["sizing"] = sizing
        rec["conventions"].append(sizing["convention"])
        from .. import parallel
        rec["definitions"] += [parallel.ESTIMATE, parallel.LOWER_BOUND]
    return rec

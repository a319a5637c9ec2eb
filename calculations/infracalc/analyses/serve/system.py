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

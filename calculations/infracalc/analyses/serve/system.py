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
from ...summation import plain_sum

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
                 tpot_limit=None, reserve_bytes=None, compute_efficiency=1.0, memory_efficiency=1.0,
                 cached=0, slo_figure="estimate", hit=1.0):
        self.slo_figure, self.hit = slo_figure, hit
        self.max_seqs, self.token_budget, self.cached = max_seqs, token_budget, cached
        self.rate, self.cv2 = rate, cv2
        self.ttft_limit, self.tpot_limit = ttft_limit, tpot_limit
        self.reserve_bytes = reserve_bytes
        self.compute_efficiency, self.memory_efficiency = compute_efficiency, memory_efficiency

    def record(self):
        return {"max_seqs": self.max_seqs, "max_batched_tokens": self.token_budget,
                "cached_prefix_tokens": self.cached, "prefix_hit_rate": self.hit,
                "rate_per_s": self.rate, "service_cv2": self.cv2,
                "ttft_limit_s": self.ttft_limit, "tpot_limit_s": self.tpot_limit}


def parts_for(arch, w, device, input_len, output_len, r, cached=0, hit=1.0):
    """(Parts, the decode workload, notes): the MLA paths chosen as `decode` chooses them."""
    notes = check_lengths(arch, input_len, output_len)
    w = w.replace(batch=1, tokens=1, history=0, logits="last")
    lo, hi = step_histories(input_len, output_len)
    wp, choice = mla_path.for_pass(arch, w.replace(tokens=input_len), r)
    w, step_choice = decode_path(arch, w, lo, hi, r)
    for phase, c in (("prefill", choice), ("decode steps", step_choice)):
        if c:
            notes.append(mla_path.note(c, phase))
    return iteration.Parts(arch, w, input_len, output_len, wp, cached, hit), w, notes


def serve(arch, w, device, input_len, output_len, opts):
    """The `serve` record of one device."""
    r = roof(device, w.compute_dtype, opts.compute_efficiency, opts.memory_efficiency)
    parts, w, notes = parts_for(arch, w, device, input_len, output_len, r, opts.cached, opts.hit)
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
    prefix = prefix_record(arch, w, device, input_len, output_len, opts, r, parts, rows) if opts.cached else None
    rec = {
        "schema_version": SCHEMA_VERSION,
        "command": "serve",
        "model": model_record(arch),
        "device": device_record(device, w.compute_dtype, opts.compute_efficiency, opts.memory_efficiency),
        "inputs": dict(workload_record(w), input_len=input_len, output_len=output_len, **opts.record()),
        "notes": notes,
        "capacity": {k: cap[k] for k in ("weight_bytes", "reserve_bytes", "cache_room_bytes",
                                         "cache_bytes_per_request", "max_requests")},
        "concurrency_ceilings": {"guaranteed": conc[0], "steady_state": conc[1],
                                 "held_cache_summed_bytes": conc[2], "held_cache_steps": conc[3]},
        "policies": rows,
        **({"prefix_cache": prefix} if prefix else {}),
        "definitions": list(DEFINITIONS),
        "left_out": list(LEFT_OUT[:1]),
        "conventions": conventions(w) + list(batching.SCHEDULER_CONVENTIONS)
                       + ([queueing.QUEUE_CONVENTION] if opts.rate is not None else []),
    }
    del rec["inputs"]["batch"], rec["inputs"]["tokens"], rec["inputs"]["history"], rec["inputs"]["logits"]
    return rec


PREDICTED_STEADY_STATE = (
    "Predicted (a third figure, not a bound; efficiency.serving, docs/prediction.md): a tuned "
    "continuous-batching engine's steady state on the replica, at its own concurrency (the requests "
    "whose cache fits 0.9 of the memory left after the weights, capped by TensorRT-LLM's batch limit): one "
    "iteration carries every request's decode and its share of chunked prefills, the operators at "
    "achievable rates, the TP all-reduces as NCCL runs them, and the fitted per-request, per-prompt-token "
    "and host times; requests/s = output tokens/s / G; queueing, --rate and the schedulers above not "
    "included; not modelled with a prefix cache.")


def predicted_replica(arch, w, device, input_len, output_len, tp, opts):
    """A tuned engine's predicted steady state on one TP replica (efficiency.serving.
    predicted_layout: its all-reduces as NCCL runs them, the engine's concurrency and batch
    limit), beside the schedulers' estimates and bounds, with its requests/s (output tokens/s /
    G). None without a prediction on the device, and with a prefix cache (not modelled)."""
    from ... import layout as placement
    from ..efficiency.serving import predicted_layout

    if opts.cached:
        return None
    p = predicted_layout(arch, w, device, placement.Layout(tp=tp), input_len, output_len)
    return None if p is None else dict(p, requests_per_s=p["output_tokens_per_s_cluster"] / output_len)


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
        answer, rows = slo.size(plan, opts.ttft_limit, opts.tpot_limit, max_devices, opts.slo_figure)
        sizing = {"answer": None, "figure": opts.slo_figure,
                  "counts": [{k: v for k, v in row.items() if k not in ("layout_record", "_predicted")}
                             for row in rows],
                  "convention": slo.SLO_CONVENTION}
        if answer is not None:
            lay = answer["layout_record"]
            sizing["counts"][-1].update(slo.chosen_predicted(plan, answer))
            sizing["answer"] = dict(sizing["counts"][-1], lower_bound=slo.chosen_bounds(plan, answer))
            tp = lay.tp if lay.pp == 1 and lay.cp == 1 and lay.ep == 1 else None
        else:
            tp = None
    rec = None
    if tp is not None:
        shard = replica_shard(arch, tp) if tp > 1 else arch
        rec = serve(shard, w, device, input_len, output_len, opts)
        rec["model"] = model_record(arch)
        rec["predicted"] = predicted_replica(arch, w, device, input_len, output_len, tp, opts)
        if rec["predicted"] is not None:
            rec["conventions"].append(PREDICTED_STEADY_STATE)
        rec["replica"] = {"tp": tp, "shard": shard.id if tp > 1 else None,
                          "note": "per device of the replica: its shard's work on its roof; TP "
                                  "communication is not charged (hidden), so the lower bounds stay "
                                  "bounds and the estimates leave it out" if tp > 1 else None}
    else:
        r = roof(device, w.compute_dtype, opts.compute_efficiency, opts.memory_efficiency)
        rec = {"schema_version": SCHEMA_VERSION, "command": "serve", "model": model_record(arch),
               "device": device_record(device, w.compute_dtype, opts.compute_efficiency,
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
        if opts.slo_figure == "predicted":
            rec["conventions"].append(slo.SLO_PREDICTED)
        if sizing["answer"]:
            from ..efficiency.predict import PREDICTION_CONVENTION
            rec["conventions"] += [slo.PREDICTED_CONVENTION, PREDICTION_CONVENTION]
        from .. import parallel
        rec["definitions"] += [parallel.ESTIMATE, parallel.LOWER_BOUND]
    return rec


def decode_concurrency(parts, r, ceiling, tpot_limit, kind=1):
    """The most decode tokens d <= ceiling per iteration of a decode-only worker whose step
    (estimate, or kind 0: lower bound) stays within `tpot_limit` (bisection; the step time
    grows with d). 0 when even one exceeds it."""
    def step(d):
        return iteration.times(parts.mix(0, d, d), r)[kind]

    if tpot_limit is None or step(ceiling) <= tpot_limit:
        return ceiling
    if step(1) > tpot_limit:
        return 0
    lo, hi = 1.0, float(ceiling)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if step(mid) <= tpot_limit else (lo, mid)
    return lo


def worker_rates(arch, w, device, input_len, output_len, opts, tp=1):
    """One worker's prefill tokens/s and decode calls/s on `device` (a TP replica of tp of them),
    under the estimate and the lower bound: prefill = the new tokens of one prompt over its
    prefill pass; decode = d / step(d), d = min(--max-seqs, the memory ceiling M_ss, the most
    within --tpot-limit)."""
    shard = replica_shard(arch, tp) if tp > 1 else arch
    r = roof(device, w.compute_dtype, opts.compute_efficiency, opts.memory_efficiency)
    parts, w, _ = parts_for(shard, w, device, input_len, output_len, r, opts.cached)
    cap = capacity_record(shard, w, device, cached_tokens(input_len, output_len), opts.reserve_bytes)
    steady = serving.concurrency(shard, w, input_len, output_len, cap["cache_room_bytes"],
                                 cap["cache_bytes_per_request"] or None)[1]
    ceiling = opts.max_seqs if steady is None else min(opts.max_seqs, steady)
    pre = iteration.times(parts.mix(1, 0, parts.new_tokens), r)
    out = {"device": device.id, "tp": tp}
    for i, kind in enumerate(("lower_bound", "estimate")):
        d = decode_concurrency(parts, r, ceiling, opts.tpot_limit, i) if ceiling > 0 else 0
        step = iteration.times(parts.mix(0, d, d), r)[i] if d else None
        out[kind] = {"prefill_tokens_per_s": parts.new_tokens / pre[i] if parts.new_tokens else None,
                     "decode_concurrency": d, "tpot_s": step,
                     "decode_tokens_per_s": d / step if d else 0.0}
    return out


def handoff(arch, w, device_from, device_to, input_len, tp_from=1, tp_to=1):
    """KV handoff of one request: its prompt's cache c(P) (what `kv` counts per request at P
    tokens), over the scale-out links: each of the tp_from prefill devices sends its shard;
    time >= alpha + bytes / (min(tp_from, tp_to) x the slower NIC's bandwidth)."""
    nbytes = arch.kv_bytes(w.kv_dtype, input_len, w.mla)
    links = [d.scale_out for d in (device_from, device_to)]
    if any(link is None for link in links):
        return {"bytes": nbytes, "link": None, "time_s": None}
    bw = min(link.bytes_per_s for link in links) * min(tp_from, tp_to)
    alpha = max(link.alpha_s or 0.0 for link in links)
    return {"bytes": nbytes, "link": "scale-out (" + " -> ".join(link.name for link in links) + ")",
            "bytes_per_s": bw, "time_s": alpha + nbytes / bw}


def pd_sizing(arch, w, prefill_device, decode_device, input_len, output_len, opts, tp_p=1, tp_d=1):
    """Prefill and decode pools for --rate requests/s on two device types (each worker a TP
    replica), the KV handoff, and co-located chunked serving on each type for comparison."""
    from math import ceil

    pre = worker_rates(arch, w, prefill_device, input_len, output_len, opts, tp_p)
    dec = worker_rates(arch, w, decode_device, input_len, output_len, opts, tp_d)
    move = handoff(arch, w.replace(mla="absorbed") if w.mla == "auto" else w, prefill_device,
                   decode_device, input_len, tp_p, tp_d)
    new, calls = input_len - opts.cached, output_len - 1
    out = {"rate_per_s": opts.rate, "prefill_worker": pre, "decode_worker": dec, "handoff": move,
           "af": af_messages(arch, w, move), "pools": {}, "colocated": {}}
    d = dec["estimate"]["decode_concurrency"]
    if d and opts.rate is not None:
        out["af"]["pools"] = af_pools(arch, w, decode_device, input_len, output_len, max(1, round(d)),
                                      opts.rate, opts, out["af"])
    for kind in ("lower_bound", "estimate"):
        p_rate = pre[kind]["prefill_tokens_per_s"] / new
        if move["time_s"]:   # each prefill worker's NIC carries its requests' handoffs
            p_rate = min(p_rate, move["bytes_per_s"] / move["bytes"])
        d_rate = dec[kind]["decode_tokens_per_s"] / calls
        row = {"prefill_requests_per_s_per_worker": p_rate, "decode_requests_per_s_per_worker": d_rate}
        if opts.rate is not None and d_rate > 0:
            n_p, n_d = ceil(opts.rate / p_rate), ceil(opts.rate / d_rate)
            row.update(prefill_workers=n_p, decode_workers=n_d, devices=n_p * tp_p + n_d * tp_d,
                       sustains_requests_per_s=min(n_p * p_rate, n_d * d_rate))
        out["pools"][kind] = row
    for device, tp in ((prefill_device, tp_p), (decode_device, tp_d)):
        shard = replica_shard(arch, tp) if tp > 1 else arch
        rows = serve(shard, w, device, input_len, output_len, opts)["policies"]
        chunk = next(r for r in rows if r["policy"] == "chunked")
        entry = {"device": device.id, "tp": tp}
        for kind in ("lower_bound", "estimate"):
            rate = None if "refused" in chunk else chunk["requests_per_s"][kind]
            entry[kind] = {"requests_per_s_per_replica": rate,
                           "devices": ceil(opts.rate / rate) * tp if rate and opts.rate else None}
        out["colocated"][device.id] = entry
    return out


def _header(arch, w, device, input_len, output_len, opts, r=None):
    r = r or roof(device, w.compute_dtype, opts.compute_efficiency, opts.memory_efficiency)
    inputs = dict(workload_record(w), input_len=input_len, output_len=output_len, **opts.record())
    for k in ("batch", "tokens", "history", "logits"):
        del inputs[k]
    return {"schema_version": SCHEMA_VERSION, "command": "serve", "model": model_record(arch),
            "device": device_record(device, w.compute_dtype, opts.compute_efficiency,
                                    opts.memory_efficiency),
            "inputs": inputs, "notes": check_lengths(arch, input_len, output_len), "policies": []}


def stage_bound_rates(arch, w, device, input_len, output_len, batch, opts):
    """A worker's two rates by the lower bound of one pass of each stage, exact rationals
    (the book's derived stage rates, chapter 9): prefill tokens/s = (P - C) / LB(one prefill
    of the P - C new tokens after C cached); decode calls/s = B / LB(one decode step of B requests at the history
    P + floor((G - 1) / 2)); LB = max(matrix FLOPs / (matrix peak x e_c), vector FLOPs /
    (vector peak x e_c), unique bytes / (bandwidth x e_m)) with every quantity an exact
    integer and the efficiencies taken as the exact values of their floats."""
    from fractions import Fraction

    from ... import ledger
    from ...errors import UserError

    ec, em = Fraction(opts.compute_efficiency), Fraction(opts.memory_efficiency)
    peak, vec = device.peak(w.compute_dtype), device.vector_flops_per_s
    if not peak:
        raise UserError(f"{device.id} has no {w.compute_dtype.name} matrix peak: its stage bound is unknown")

    def bound(work):
        if work.mla == "auto" and mla_path.has_mla(arch):   # the cheaper path's bound (mla_path)
            pick = min((bound(work.replace(mla=p)) for p in ("absorbed", "expanded")), key=lambda b: b[0])
            return pick[0], dict(pick[1], mla_path=pick[2])
        ops = ledger.operators(arch, work)
        mf = plain_sum(op.matrix_flops for op in ops)
        vf = plain_sum(op.vector_flops for op in ops)
        nbytes = plain_sum(op.weight_read + op.kv_read + op.kv_write for op in ops)
        terms = [Fraction(mf) / (peak * ec), Fraction(nbytes) / (device.memory_bandwidth_bytes_per_s * em)]
        if vec:
            terms.append(Fraction(vf) / (vec * ec))
        return max(terms), {"matrix_flops": mf, "vector_flops": vf, "unique_bytes": nbytes}, work.mla

    new = input_len - opts.cached
    pre, pre_work = bound(w.replace(batch=1, tokens=new, history=opts.cached, logits="last"))[:2]
    history = input_len + (output_len - 1) // 2
    dec, dec_work = bound(w.replace(batch=batch, tokens=1, history=history, logits="last"))[:2]
    return {"prefill_tokens_per_s": new / pre, "decode_tokens_per_s": batch / dec,
            "prefill_pass": dict(pre_work, tokens=new, history=opts.cached, lower_bound_s=pre),
            "decode_step": dict(dec_work, batch=batch, history=history, lower_bound_s=dec)}


STAGE_BOUND = (
    "Worker rates from a device (--decode-batch B): prefill tokens/s = (P - C) / LB(one prefill of "
    "the P - C new tokens after C cached), "
    "decode calls/s = B / LB(one decode step of B requests at history P + floor((G - 1) / 2)), "
    "LB = max(matrix FLOPs / matrix peak, vector FLOPs / vector peak, (weights + KV read + KV "
    "written) / bandwidth) at --compute-efficiency / --memory-efficiency, exact rationals (the "
    "book's derived stage rates, chapter 9).")


def workers_record(arch, w, device, input_len, output_len, opts, workers, network_bytes_per_s=None,
                   decode_batch=None, kv_arch=None):
    """Every split of the given worker types into a prefill and a decode pool (pools.pd_record);
    a type named by a device is rated by the ledger: worker_rates' estimate, or with
    `decode_batch` the stage bound (stage_bound_rates). The handoff carries the prompt's cache
    in `kv_arch`'s layout when given (handoff_kv_bytes)."""
    from ...load.hardware import load_device
    from . import pools

    rated, stages = [], []
    for wk in workers:
        if wk.decode_tokens_per_s is None:
            dev = load_device(wk.prefill_tokens_per_s)
            if decode_batch:
                rates = stage_bound_rates(arch, w, dev, input_len, output_len, decode_batch, opts)
                stages.append(dict(worker=wk.name, device=dev.id, prefill_pass=rates["prefill_pass"],
                                   decode_step=rates["decode_step"]))
            else:
                rates = worker_rates(arch, w, dev, input_len, output_len, opts)["estimate"]
            wk = wk.replace(prefill_tokens_per_s=rates["prefill_tokens_per_s"],
                            decode_tokens_per_s=rates["decode_tokens_per_s"])
        rated.append(wk)
    kv_w = w.replace(mla="absorbed") if w.mla == "auto" else w
    rec = _header(arch, kv_w, device, input_len, output_len, opts)
    from fractions import Fraction

    exact = (lambda x: None if x is None else Fraction(x))   # a float's exact binary value
    pd = pools.pd_record(rated, input_len, output_len, opts.cached,
                         handoff_kv_bytes(arch, kv_w, input_len, kv_arch, rec),
                         exact(network_bytes_per_s), exact(opts.rate))
    rec["inputs"]["network_bytes_per_s"] = network_bytes_per_s
    rec["workers"] = pools.jsonable(pd)
    if stages:
        rec["inputs"]["decode_batch"] = decode_batch
        rec["workers"]["stage_bounds"] = pools.jsonable(stages)
        rec["notes"] += [f"MLA path of {st['worker']}'s stage bounds: prefill {st['prefill_pass']['mla_path']}, "
                         f"decode {st['decode_step']['mla_path']} (--mla auto: the cheaper path's bound)"
                         for st in stages if "mla_path" in st["decode_step"]]
    rec.update(definitions=list(DEFINITIONS), left_out=list(LEFT_OUT[:1]),
               conventions=conventions(w) + [pools.PD_CONVENTION] + ([STAGE_BOUND] if stages else []))
    return rec


def pd_record(arch, w, prefill_device, decode_device, input_len, output_len, opts, tp_p=1, tp_d=1):
    """The `serve --prefill-device --decode-device --rate` record."""
    from . import pools

    rec = _header(arch, w, prefill_device, input_len, output_len, opts)
    rec["pd"] = pd_sizing(arch, w, prefill_device, decode_device, input_len, output_len, opts, tp_p, tp_d)
    rec.update(definitions=list(DEFINITIONS), left_out=list(LEFT_OUT[:1]),
               conventions=conventions(w) + list(batching.SCHEDULER_CONVENTIONS) + [PD_SIZING])
    return rec


PD_SIZING = (
    "PD sizing: a prefill worker serves min(its new prompt tokens/s / (P - C), its NIC bandwidth / "
    "handoff bytes) requests/s (tokens/s = P - C over one prompt's prefill); a decode worker d / "
    "step(d) decode calls/s over G - 1 calls per request, d = min(--max-seqs, the memory ceiling, "
    "the most within --tpot-limit); pools = ceil(rate / a worker's requests/s) each; the handoff of "
    "c(P) bytes (the prompt's cache, `kv`'s bytes per request at P tokens) over the slower scale-out "
    "NIC, alpha + bytes / bandwidth; co-located beside it: the chunked scheduler's requests/s per "
    "replica on each device type. AF pools: the decode step at the decode worker's concurrency split "
    "into the model with only its FFN blocks and the rest (their rows add up to the model's), each "
    "side's operator-sum estimate t on the decode device; ceil(rate (G - 1) t / batch) workers a side; "
    "one micro-batch size for both, no ping-pong overlap, message time not in t.")


SPEC_CONVENTION = (
    "Speculative decoding: a_i = probability that draft token i is accepted given 1..i-1 were "
    "(--acceptance, per position, the last repeated); a verify step yields E(k) = sum_{j=0}^{k} "
    "a_1...a_j tokens (i.i.d.: (1 - a^(k+1)) / (1 - a), Leviathan et al. 2023) and costs k draft "
    "decode steps plus one target pass over k + 1 tokens at the mid-generation history, both the "
    "operator-sum estimate at --spec-batch requests; TPOT = step / E(k); the best k minimises it. "
    "Draft and target share the device; sampling and rejection tests are not costed.")

DFLASH_SPEC_CONVENTION = (
    "DFlash drafter: the k drafts come from one forward of a block of k + 1 positions (not k decode "
    "steps), at the history's context rows with the k + 1 features of a fully accepted previous round "
    "fused; its time is the operator-sum of its products' logical operands (analyses/serve/dflash.py); "
    "k is at most the drafter's block_size - 1; one request per round.")


def is_drafter(draft):
    """True for a DFlash Drafter (not a causal draft Architecture)."""
    from ...load.dflash import Drafter
    return isinstance(draft, Drafter)


def speculative_record(target, draft, w, w_draft, device, input_len, output_len, alphas, max_k, batch, opts):
    """The `serve --draft-model` section: every draft length 1..max_k, the best, its positions."""
    from ... import ledger
    from ..decode import phase_record
    from .. import decode_sum
    from . import speculation

    from ...errors import UserError
    from ...load.dflash import Drafter

    r = roof(device, w.compute_dtype, opts.compute_efficiency, opts.memory_efficiency)
    lo, hi = step_histories(input_len, output_len)
    wt = decode_path(target, w.replace(batch=batch, tokens=1, history=0, logits="last"), lo, hi, r)[0]
    if isinstance(draft, Drafter):
        from . import dflash
        dflash.check(draft, target, input_len, 1, 2)
        if batch != 1:
            raise UserError(f"--spec-batch {batch}: a DFlash drafter's round is modelled for one request")
        if max_k > draft.block_size - 1:
            raise UserError(f"--max-draft-tokens {max_k}: the DFlash drafter {draft.id} drafts at most "
                            f"block_size - 1 = {draft.block_size - 1} tokens a round")
        wd, draft_params = None, dflash.params(draft)
    else:
        wd = decode_path(draft, w_draft.replace(batch=batch, tokens=1, history=0, logits="last"), lo, hi, r)[0]
        draft_params = draft.params
    if not isinstance(draft, Drafter) and target.vocab_size != draft.vocab_size:
        raise UserError(f"draft model {draft.id} has vocabulary {draft.vocab_size:,}, the target "
                        f"{target.vocab_size:,}: speculative decoding needs a shared tokenizer")
    mid = input_len + (output_len - 1) // 2
    plain = phase_record(decode_sum.single(ledger.operators(target, wt.replace(history=mid))), r)["time_s"]
    rows = speculation.draft_lengths(target, draft, wt, wd, input_len, output_len, alphas, max_k, r, plain)
    top = speculation.best(rows)
    return {"draft_model": draft.id, "drafter": "dflash" if wd is None else "causal",
            "draft_params": draft_params, "acceptance": list(alphas),
            "batch": batch, "history": mid, "plain_step_s": plain, "rows": rows, "best": top,
            "positions": speculation.position_table(alphas, top["draft_tokens"])}


def replay_record(arch, w, device, requests, policy, max_seqs, budget, chunk, capacity, base, token, pair):
    """The `serve --request ...` record: the replay with declared costs (replay.replay)."""
    from . import replay

    kv_w = w.replace(mla="absorbed") if w.mla == "auto" else w
    rec = _header(arch, kv_w, device, max(r[1] for r in requests), max(r[2] for r in requests),
                  Options(max_seqs=max_seqs, token_budget=budget))
    for k in ("input_len", "output_len", "rate_per_s", "service_cv2", "ttft_limit_s", "tpot_limit_s",
              "cached_prefix_tokens"):
        del rec["inputs"][k]
    rec["inputs"].update(policy=policy, chunk_tokens=chunk, kv_capacity_bytes=capacity, step_base_ns=base,
                         per_new_token_ns=token, per_causal_pair_ns=pair,
                         requests=[{"arrival_ns": a, "prompt_tokens": p, "output_tokens": g}
                                   for a, p, g in requests])
    rec["notes"] = []
    rec["replay"] = replay.replay(arch, kv_w, requests, policy, max_seqs, budget, chunk, capacity, base, token, pair)
    rec.update(definitions=["Declared step costs (teaching inputs, not a device): every time is exact "
                            "in integers of ns under them; not a bound and not a prediction."],
               left_out=["Preemption, shared prefixes, early stops, paging and fragmentation; "
                         "weights and workspace are outside the KV pool."],
               conventions=conventions(kv_w) + [replay.REPLAY_CONVENTION])
    return rec


def prefix_record(arch, w, device, input_len, output_len, opts, r, parts, rows):
    """What a prefix cache holding the first C prompt tokens of every request buys: the
    prefill FLOPs and KV bytes written that each request no longer spends, the cache the
    prefix holds (once, c(C) bytes, shared: not charged to the room above), and the chunked
    scheduler's requests/s with the prefix against without it; with a hit rate h < 1 the
    savings are the expected request's (h x a hit's)."""
    cold = iteration.Parts(parts.arch, parts.one, input_len, output_len, parts.prefill_w, 0)
    warm_t, cold_t = iteration.totals(parts.prefill), iteration.totals(cold.prefill)
    nocache = serve(arch, w, device, input_len, output_len,
                    Options(**dict(vars(opts), cached=0, hit=1.0)))["policies"]
    chunk = {row["policy"]: row for row in rows}.get("chunked", {})
    base = {row["policy"]: row for row in nocache}.get("chunked", {})
    out = {"cached_prefix_tokens": opts.cached, "hit_rate": opts.hit,
           "prefill_matrix_flops_saved_per_request": cold_t[iteration._MF] - warm_t[iteration._MF],
           "kv_bytes_written_saved_per_request": cold_t[iteration._KW] - warm_t[iteration._KW],
           "prefix_cache_bytes": arch.kv_bytes(parts.one.kv_dtype, opts.cached, parts.one.mla)}
    if "requests_per_s" in chunk and "requests_per_s" in base:
        out["chunked_requests_per_s"] = chunk["requests_per_s"]
        out["chunked_requests_per_s_without_prefix"] = base["requests_per_s"]
        out["chunked_ttft_s"] = chunk["ttft_s"]
        out["chunked_ttft_s_without_prefix"] = base["ttft_s"]
    return out


AF_BLOCKS = ("GatedMLP", "GPTMLP", "MoE", "LatentMoE")


def af_sides(arch):
    """(attention side, FFN side): the architecture with only its FFN blocks (MLP, MoE) in every
    layer, and with everything else (attention, norms, residuals, embedding, head); their
    ledgers' rows together are the whole model's."""
    from ...arch import Block, Layer

    def keep(ffn):
        return tuple(Layer(blocks=tuple(b for b in layer.blocks if (type(b).__name__ in AF_BLOCKS) == ffn))
                     for layer in arch.layers)

    ffn_side = arch.replace(id=f"{arch.id} (FFN side)", layers=keep(True), embedding=Block(), head=Block(),
                            final_norm=Block())
    return arch.replace(id=f"{arch.id} (attention side)", layers=keep(False)), ffn_side


def af_pools(arch, w, device, input_len, output_len, batch, rate, opts, messages):
    """Attention and FFN pools on `device` for `rate` requests/s: each side runs the decode step
    of `batch` requests (the decode worker's concurrency) at the middle history, its estimate
    (operator-sum roofline) t_A, t_F; the pools need ceil(rate (G - 1) t / batch) workers each
    (the side serves batch tokens per t); the messages between them are af_messages'. Both sides
    at the same micro-batch, no ping-pong overlap, the links not charged in t."""
    from math import ceil

    from ... import ledger
    from .. import decode_sum
    from ..decode import phase_record

    r = roof(device, w.compute_dtype, opts.compute_efficiency, opts.memory_efficiency)
    step = w.replace(batch=batch, tokens=1, history=input_len + (output_len - 1) // 2, logits="last")
    tokens = rate * (output_len - 1)
    out = {"device": device.id, "batch": batch, "decode_tokens_per_s": tokens}
    for name, side in zip(("attention", "ffn"), af_sides(arch)):
        t = phase_record(decode_sum.single(ledger.operators(side, step)), r)["time_s"]
        out[name] = {"step_s": t, "tokens_per_s_per_worker": batch / t, "workers": ceil(tokens * t / batch)}
    return out


def af_messages(arch, w, link):
    """Attention/FFN disaggregation of one decode token: each layer sends the token's hidden
    state [hidden] in the activation format from the attention to the FFN side and its output
    back, 2 x layers one-way messages of hidden x act bytes; over the handoff's link each costs
    alpha + bytes / bandwidth (one round trip per layer on the critical path)."""
    from ...splits import ceil_div

    message = arch.hidden_size * ceil_div(w.act_dtype.bits, 8)
    directions = 2 * len(arch.layers)
    out = {"message_bytes": message, "directions_per_token": directions,
           "bytes_per_token": message * directions, "round_trips_per_token": len(arch.layers)}
    if link.get("time_s"):
        alpha = link["time_s"] - link["bytes"] / link["bytes_per_s"]
        out["time_per_token_s"] = directions * alpha + message * directions / link["bytes_per_s"]
    return out


def round_record(arch, w, device, history, counts, draft_ns, verify_ns, commit_ns, baseline_ns, remaining):
    """The `serve --accepted-counts` record: the declared round ledger (rounds.round_ledger) and
    the target's verify pass from the ledger: k + 1 tokens at `history`, logits on every row, and
    the new K/V each round keeps (min(a + 1, M)) and discards."""
    from ... import ledger
    from . import pools, rounds

    kv_w = w.replace(mla="absorbed") if w.mla == "auto" else w
    k = len(counts) - 1
    out = rounds.round_ledger(counts, draft_ns, verify_ns, commit_ns, baseline_ns, remaining)
    ops = ledger.operators(arch, kv_w.replace(batch=1, tokens=k + 1, history=history, logits="all"))
    per_token = arch.kv_bytes(kv_w.kv_dtype, 1, kv_w.mla)
    kept = [min(a + 1, remaining or a + 1) for a in range(k + 1)]
    out.update(verify_tokens=k + 1, verify_matrix_flops=plain_sum(op.matrix_flops for op in ops),
               kv_bytes_per_token=per_token,
               kv_bytes_discarded=plain_sum(n * (k + 1 - kept[a]) * per_token for a, n in enumerate(counts)),
               rows=[{"accepted": a, "rounds": n, "delivered": kept[a]} for a, n in enumerate(counts)])
    rec = _header(arch, kv_w, device, history, (remaining or 0) + 1, Options())
    rec["inputs"] = {"history": history, "accepted_counts": list(counts), "draft_ns": draft_ns,
                     "verify_ns": verify_ns, "commit_ns": commit_ns, "baseline_token_ns": baseline_ns,
                     "remaining_output": remaining}
    rec["notes"] = []
    rec["spec_round"] = pools.jsonable(out)
    rec.update(definitions=[DECLARED], left_out=[], conventions=conventions(kv_w) + [rounds.ROUND_CONVENTION])
    return rec


def budget_record(arch, w, device, output_tokens, baseline_ns, setup_ns, options):
    """The `serve --spec-option ...` record: the finite-output budget (rounds.budget)."""
    from . import pools, rounds

    rec = _header(arch, w, device, 1, output_tokens, Options())
    rec["inputs"] = {"output_tokens": output_tokens, "baseline_token_ns": baseline_ns, "setup_ns": setup_ns,
                     "options": [{"id": n, "round_ns": c, "accepted_counts": list(h)} for n, c, h in options]}
    rec["notes"] = []
    rec["spec_budget"] = pools.jsonable(rounds.budget(output_tokens, baseline_ns, setup_ns, options))
    rec.update(definitions=[DECLARED], left_out=[], conventions=[rounds.BUDGET_CONVENTION])
    return rec


DECLARED = ("Declared costs (teaching inputs, not a device): every time is exact in rationals of ns "
            "under them; not a bound and not a prediction.")


def experts_record(arch, w, device, tokens, ranks, placement, tile, replicas, pay=None, local=None):
    """The `serve --expert-tokens` record (experts.grouped, and experts.payback with `pay` =
    (batches, compute FLOP/s, interface B/s, copy B/s, startup ns, budget bytes or None))."""
    from ...splits import ceil_div
    from . import experts, pools

    block = experts.moe_block(arch)
    b = ceil_div(w.act_dtype.bits, 8)
    hist = experts.histogram(w.routing, block.experts, block.top_k, tokens)
    args = (hist, block.hidden, block.expert_inter, ranks, placement, tile, b)
    out = experts.grouped(*args, replicas)
    rec = _header(arch, w, device, tokens, 1, Options())
    rec["inputs"] = {"expert_tokens": tokens, "routing": w.routing, "expert_ranks": ranks, "placement": placement,
                     "tile": list(tile), "replicas": [list(r) for r in replicas], "operand_bytes": b}
    rec["notes"] = []
    conv = [experts.EXPERTS_CONVENTION]
    if pay:
        batches, compute, interface, copy_bw, startup, budget = pay
        base = experts.grouped(*args) if replicas else out
        out["payback"] = experts.payback(base, out, batches, compute, interface, copy_bw, startup,
                                         budget if budget is not None else float("inf"))
        out["baseline_busiest_rank_padded_flops"] = base["busiest_rank_padded_flops"]
        rec["inputs"].update(payback_batches=batches, expert_compute_flops_per_s=compute,
                             expert_interface_bytes_per_s=interface, copy_bytes_per_s=copy_bw,
                             copy_startup_ns=startup, replica_budget_bytes=budget)
        conv.append(experts.PAYBACK_CONVENTION)
    if local:
        resident = local[0]
        if resident > block.experts:
            from ...errors import UserError
            raise UserError(f"--resident-experts {resident} exceeds the {block.experts} experts")
        out["locality"] = experts.locality(hist, resident, block.hidden, block.expert_inter, b, *local[1:])
        rec["inputs"].update(resident_experts=resident, cpu_flops_per_s=local[1], host_memory_bytes_per_s=local[2],
                             expert_compute_flops_per_s=local[3], expert_memory_bytes_per_s=local[4],
                             host_link_bytes_per_s=local[5], startup_ns=local[6])
        conv.append(experts.LOCALITY_CONVENTION)
    rec["experts"] = pools.jsonable(out)
    rec.update(definitions=["Padded FLOPs bound the matrix work from above (every tile run in full); the "
                            "payback's rates are declared (teaching inputs): exact, not a bound and not a "
                            "prediction."], left_out=["Dispatch and combine, routing, activation and the "
                                                      "other layers; the tile traffic is between the working "
                                                      "buffer and the next level, not necessarily HBM."],
               conventions=conv)
    return rec


def offload_record(arch, w, device, layers, slots, passes, bandwidth, layer_ns, history, ce, me):
    """The `serve --offload-ffn-layers` record (offload.plan). Without a declared --layer-ns the
    layer time is the operator-sum estimate of one batch-1 decode step at `history` over the
    layers, rounded up to whole ns (the FFN weights included, as if resident)."""
    from math import ceil

    from ... import ledger
    from . import offload, pools

    declared = layer_ns is not None
    step = choice = None
    if not declared:
        from ..decode import phase_record
        from .. import decode_sum

        r = roof(device, w.compute_dtype, ce, me)
        # --mla auto: the step takes the cheaper path, as decode charges its steps
        step_w, choice = mla_path.for_pass(arch, w.replace(batch=1, tokens=1, history=history, logits="last"), r)
        ops = ledger.operators(arch, step_w)
        step = phase_record(decode_sum.single(ops), r)["time_s"]
        layer_ns = ceil(step * 1e9 / len(arch.layers))
    out = offload.plan(arch, w, list(layers), slots, passes, layer_ns, bandwidth)
    rec = _header(arch, w, device, history or 1, 2, Options(compute_efficiency=ce, memory_efficiency=me))
    rec["inputs"] = {"offload_ffn_layers": list(layers), "offload_slots": slots, "offload_passes": passes,
                     "host_link_bytes_per_s": bandwidth, "layer_ns": layer_ns,
                     "layer_ns_declared": declared, "history": history,
                     "weight_dtype": rec["inputs"]["weight_dtype"]}
    if step is not None:
        out["decode_step_estimate_s"] = step
    rec["notes"] = [mla_path.note(choice, "decode step")] if choice else []
    rec["offload"] = pools.jsonable(out)
    rec.update(definitions=[DECLARED if declared else
                            "The layer time is the operator-sum estimate of one decode step over the layers; "
                            "the schedule is exact under it: an estimate, not a bound."],
               left_out=["Contention between the copies and the layers for memory; pinned host buffers; "
                         "the last read of a weight within its layer (a slot is held to the layer's end)."],
               conventions=[offload.OFFLOAD_CONVENTION])
    return rec


HANDOFF_CONVENTION = (
    "Handoff ledger (declared link): PD moves B requests' cache of P tokens in one message; AF moves "
    "2 x layers x N one-way messages of B x hidden x activation bytes (N decode steps); every message "
    "crosses every hop (network, or device-to-host, network, host-to-device when staged) one after "
    "the other: time = sum over hops of (bytes / hop bandwidth + messages x startup); no compute, "
    "queueing or overlap (the book's pd-af-handoff convention).")


def handoff_kv_bytes(arch, kv_w, tokens, kv_arch, rec):
    """KV bytes of one request's `tokens`-token prompt as the PD handoff carries them: in the
    model's own layout, or in `kv_arch`'s (another model's KV layout at the same dtype, MLA
    compact where it has MLA), which the record's inputs and notes then name."""
    if kv_arch is None:
        return arch.kv_bytes(kv_w.kv_dtype, tokens, kv_w.mla)
    per_token = kv_arch.kv_bytes_per_token(kv_w.kv_dtype, "absorbed")
    rec["inputs"]["handoff_kv_model"] = kv_arch.id
    rec["notes"] = list(rec.get("notes", [])) + [
        f"handoff KV layout: {kv_arch.id}'s ({per_token:,} B per token at {kv_w.kv_dtype.name}; MLA, where it "
        f"has it, as the compact latent cache), not {arch.id}'s; the stage rates and AF messages stay "
        f"{arch.id}'s"]
    return kv_arch.kv_bytes(kv_w.kv_dtype, tokens, "absorbed")


def handoff_record(arch, w, device, input_len, batch, steps, network_bw, staging_bw, startup_ns,
                   kv_arch=None):
    """The `serve --handoff-bw` record: the PD snapshot against the AF activations, serial over
    declared hops, exact rationals of ns; the snapshot in `kv_arch`'s KV layout when given."""
    from fractions import Fraction

    from ...splits import ceil_div
    from . import pools

    kv_w = w.replace(mla="absorbed") if w.mla == "auto" else w
    hops = [("network", network_bw)]
    if staging_bw:
        hops = [("device-to-host", staging_bw)] + hops + [("host-to-device", staging_bw)]

    def serial(nbytes, messages):
        return plain_sum((Fraction(nbytes * 10**9, bw) + messages * startup_ns for _, bw in hops), Fraction(0))

    rec = _header(arch, kv_w, device, input_len, steps + 1, Options())
    rec["inputs"] = {"input_len": input_len, "handoff_batch": batch, "af_steps": steps,
                     "network_bytes_per_s": network_bw, "staging_bytes_per_s": staging_bw,
                     "startup_ns": startup_ns, "kv_dtype": rec["inputs"]["kv_dtype"],
                     "act_dtype": rec["inputs"]["act_dtype"]}
    rec["notes"] = []
    pd_bytes = batch * handoff_kv_bytes(arch, kv_w, input_len, kv_arch, rec)
    message = batch * arch.hidden_size * ceil_div(w.act_dtype.bits, 8)
    count = 2 * len(arch.layers) * steps
    out = {"pd_bytes": pd_bytes, "af_message_bytes": message, "af_messages": count, "af_bytes": message * count,
           "hops": [name for name, _ in hops], "pd_ns": serial(pd_bytes, 1), "af_ns": serial(message * count, count)}
    out["af_faster"] = out["af_ns"] < out["pd_ns"]
    rec["handoff"] = pools.jsonable(out)
    rec.update(definitions=[DECLARED], left_out=["Compute, queueing and overlap of the messages."],
               conventions=[HANDOFF_CONVENTION])
    return rec


def route_record(arch, w, device, args):
    """The `serve --cache-route` record (route.route), with the ledger's cold and warm prefill
    matrix FLOPs of the request beside the declared times."""
    from ... import ledger
    from . import pools, route

    kv_w = w.replace(mla="absorbed") if w.mla == "auto" else w
    p, c = args.input_len, args.cached_prefix
    size = arch.kv_bytes(kv_w.kv_dtype, c, kv_w.mla)
    qa, qb, full, warm, lookup = args.cache_route
    out = route.route(size, qa, qb, full, warm, lookup, args.remote_bw, args.host_link_bw, args.hit_probability,
                      args.route_slo_ns, args.retrieval_after_queue)
    flops = [plain_sum(op.matrix_flops for op in ledger.operators(arch, kv_w.replace(batch=1, tokens=t, history=h,
                                                                                logits="last")))
             for t, h in ((p, 0), (p - c, c))]
    out.update(cold_matrix_flops=flops[0], warm_matrix_flops=flops[1], saved_matrix_flops=flops[0] - flops[1])
    rec = _header(arch, kv_w, device, p, 2, Options(cached=c))
    rec["inputs"] = {"input_len": p, "cached_prefix_tokens": c, "queue_a_ns": qa, "queue_b_ns": qb,
                     "full_compute_ns": full, "warm_compute_ns": warm, "lookup_ns": lookup,
                     "remote_bytes_per_s": args.remote_bw, "host_link_bytes_per_s": args.host_link_bw,
                     "hit_probability": str(args.hit_probability), "route_slo_ns": args.route_slo_ns,
                     "retrieval_after_queue": args.retrieval_after_queue, "kv_dtype": rec["inputs"]["kv_dtype"]}
    rec["notes"] = []
    rec["route"] = pools.jsonable(out)
    rec.update(definitions=[DECLARED], left_out=["Partial prefix hits, eviction correlated with the queue, "
                                                 "the rest of the generation."],
               conventions=[route.ROUTE_CONVENTION])
    return rec


def prefix_value_record(arch, w, device, candidates, budget, page):
    """The `serve --prefix-candidate` record (prefix.choose over the ledger's saved FLOPs)."""
    from fractions import Fraction

    from ... import ledger
    from . import pools, prefix

    from .. import kv

    kv_w = w.replace(mla="absorbed") if w.mla == "auto" else w
    per_token = arch.kv_bytes(kv_w.kv_dtype, 1, kv_w.mla)
    layer_counts = [(layer, count) for layer, count, _ in arch.layer_groups()]

    def paged(tokens):
        """`kv`'s cache of one request at `tokens` tokens in whole pages (windows, compressed
        entries and fixed states as each block keeps them; not tokens x the 1-token cache)."""
        return plain_sum(t.own_bytes for t in kv.terms(layer_counts, kv_w, tokens, page=page))

    def flops(tokens, history):
        return plain_sum(op.matrix_flops for op in ledger.operators(
            arch, kv_w.replace(batch=1, tokens=tokens, history=history, logits="last")))

    rows = []
    for name, p, sfx, reuses in candidates:
        saved = flops(p + sfx, 0) - flops(sfx, p)
        held = paged(p)
        rows.append({"id": name, "prefix_tokens": p, "suffix_tokens": sfx, "expected_reuses": Fraction(reuses),
                     "resident_bytes": held, "saved_flops_per_reuse": saved,
                     "expected_saved_flops": saved * Fraction(reuses),
                     "value_per_byte": saved * Fraction(reuses) / held})
    out = dict(prefix.choose(rows, budget), candidates=rows, kv_bytes_per_token=per_token)
    rec = _header(arch, kv_w, device, max(c[1] + c[2] for c in candidates), 2, Options())
    rec["inputs"] = {"prefix_candidates": [{"id": n, "prefix_tokens": p, "suffix_tokens": x,
                                            "expected_reuses": str(r)} for n, p, x, r in candidates],
                     "prefix_budget_bytes": budget, "page_tokens": page, "kv_dtype": rec["inputs"]["kv_dtype"]}
    rec["notes"] = []
    rec["prefix_value"] = pools.jsonable(out)
    rec.update(definitions=["Saved FLOPs are the ledger's exact counts; the reuses are declared: an expected "
                            "saving, not a time."],
               left_out=["Retrieval time, scheduling, eviction over time (a static choice)."],
               conventions=conventions(kv_w) + [prefix.PREFIX_CONVENTION])
    return rec


def kv_offload_record(arch, w, device, input_len, output_len, batch, f, link_bw, reserve, ce, me):
    """The `serve --offload-kv F` record: one decode step with f of the KV on the host (its lower
    bound against all of it on the device) and the requests each placement lets fit."""
    from math import floor

    from ... import ledger
    from . import offload

    if output_len < 2:
        from ...errors import UserError
        raise UserError("--offload-kv prices decode steps: --output-len of at least 2")
    r = roof(device, w.compute_dtype, ce, me)
    history = input_len + (output_len - 1) // 2
    # --mla auto: the step is charged the cheaper path, as decode charges its steps
    w, choice = mla_path.for_pass(arch, w.replace(batch=batch, tokens=1, history=history, logits="last"), r)
    ops = ledger.operators(arch, w)
    totals = tuple(plain_sum(getattr(op, k) for op in ops)
                   for k in ("matrix_flops", "vector_flops", "weight_read", "kv_read", "kv_write"))
    step, host, link = offload.kv_step(totals, f, r, link_bw)
    resident = offload.kv_step(totals, 0, r, link_bw)[0]
    cap = capacity_record(arch, w, device, cached_tokens(input_len, output_len), reserve)
    room, per = cap["cache_room_bytes"], cap["cache_bytes_per_request"]

    def fit(share):
        if room < 0:
            return 0
        return None if share == 0 or not per else floor(room / (share * per))

    rec = _header(arch, w, device, input_len, output_len, Options(compute_efficiency=ce, memory_efficiency=me))
    rec["inputs"].update(offload_kv_fraction=f, offload_batch=batch, host_link_bytes_per_s=link_bw)
    if choice:
        rec["notes"].append(mla_path.note(choice, "decode step"))
    rec["kv_offload"] = {"history": history, "batch": batch, "fraction": f, "kv_bytes_read": totals[3],
                         "host_bytes_per_step": host, "link_s_per_step": link, "step_lower_bound_s": step,
                         "step_lower_bound_resident_s": resident, "slowdown": step / resident,
                         "link_binds": link >= step, "cache_bytes_per_request": per, "cache_room_bytes": room,
                         "requests_fit_resident": fit(1), "requests_fit_offloaded": fit(1 - f)}
    rec.update(definitions=[DEFINITIONS[0]], left_out=["Paging granularity, pinned-buffer copies and contention "
                                                       "between the link and the device's memory."],
               conventions=conventions(w) + [offload.KV_OFFLOAD_CONVENTION])
    return rec


RECONFIGURE_CONVENTION = ("Reconfiguration: a quiescent snapshot; each tensor, the cache and the auxiliary state as "
                          "intervals on one sharding axis; every target interval taken from the device itself when it "
                          "holds it (a local copy still writes a new buffer) else from the first source device by name "
                          "(direct unicast, not an optimal schedule); transfer lower bound max(network / fabric, "
                          "max sent / sender, max received / receiver) at declared rates; memory peak old + new + "
                          "declared extra per device.")


def reconfigure_record(arch, w, device, source, target, **kw):
    """The `serve --reconfigure` record: `reconfigure.reconfigure` at the workload's weight and KV
    formats (whole bytes per value)."""
    from . import pools, reconfigure
    from ...errors import UserError

    for name, dt in (("weight", w.weight_dtype), ("KV", w.kv_dtype)):
        if dt.bits % 8 or dt.scale_bits:
            raise UserError(f"reconfiguration moves whole bytes per value: the {name} format {dt.name} is not "
                            f"(use bf16, fp16, fp8 or fp32)")
    out = reconfigure.reconfigure(arch, source, target, weight_bytes=w.weight_dtype.bits // 8,
                                  kv_bytes=w.kv_dtype.bits // 8, **kw)
    rec = _header(arch, w, device, max(kw.get("history", 0), 1), 1, Options())
    rec["inputs"] = {"from": source.label(), "to": target.label(), "batch": kw.get("batch", 1),
                     "history": kw.get("history", 0), "aux_state_bytes": kw.get("aux_bytes", 0),
                     "replay": kw.get("replay", False),
                     "bytes_per_second": {k: v for k, v in sorted((kw.get("rates") or {}).items())},
                     "weight_dtype": w.weight_dtype.name, "kv_dtype": w.kv_dtype.name}
    rec["notes"] = []
    rec["reconfigure"] = pools.jsonable(out)
    rec.update(definitions=["Byte counts are exact. The transfer lower bound is a lower bound under the declared "
                             "rates; the declared transfer and serial steps are teaching inputs (not a bound, not "
                             "a prediction); times are exact rationals of seconds."],
               conventions=[RECONFIGURE_CONVENTION],
               left_out=["Compute during the move, link contention beyond the three declared rates, and the "
                         "time of the serial steps unless declared."])
    return rec


DFLASH_CONVENTION = (
    "DFlash round (analyses/serve/dflash.py): one forward of the block-diffusion drafter over a block of B "
    "positions (the known token and B - 1 drafts) at C cached and N new context rows; matrix FLOPs "
    "2 m k n per product (FMA = 2), operand bytes 2 (m k + k n + m n) per instance (BF16, no GQA reuse, "
    "fusion or workspace: logical, not measured HBM); the embedding and the head are the target's, shared "
    "(not the drafter's parameters; their work is counted); the target verifies the block as one pass of B "
    "tokens after C + N, the head on all B rows; the two KV pools are reported apart.")


def dflash_round_record(arch, w, device, drafter, cached, new, block):
    """The `serve --draft-model DFLASH --draft-round C:N:B` record: one drafting round's
    products (dflash.rows), the drafter's parameters and KV, the features handed over, and the
    target's verification pass from the ledger (matrix FLOPs, KV peak)."""
    from ... import ledger
    from ..decode import phase_record
    from .. import decode_sum
    from . import dflash

    dflash.check(drafter, arch, cached, new, block)
    r = roof(device, w.compute_dtype, 1.0, 1.0)
    rec = _header(arch, w, device, cached + new, block, Options(), r)
    rec["inputs"] = {"draft_model": drafter.id, "cached_context": cached, "new_context": new,
                     "block_size": block, "act_dtype": rec["inputs"]["act_dtype"],
                     "kv_dtype": rec["inputs"]["kv_dtype"]}
    verify = phase_record(decode_sum.single(ledger.operators(
        arch, w.replace(batch=1, tokens=block, history=cached + new, logits="all"))), r)
    rows = dflash.rows(drafter, cached, new, block)
    per_row = dflash.kv_bytes_per_row(drafter)
    nbytes = dflash.BYTES
    params = dflash.params(drafter)
    rec["dflash"] = {
        "draft_model": drafter.id, "checkpoint_tensors": dflash.tensors(drafter), "draft_parameters": params,
        "draft_weight_bytes": params * nbytes, "target_feature_layers": list(drafter.target_layer_ids),
        "new_target_feature_bytes": new * len(drafter.target_layer_ids) * drafter.hidden * nbytes,
        "fused_target_feature_bytes": new * drafter.hidden * nbytes,
        "noise_embedding_bytes": block * drafter.hidden * nbytes,
        "shared_head_weight_bytes": drafter.vocab * drafter.hidden * nbytes,
        "draft_candidates": block - 1, "draft_matrices": rows,
        "draft_matrix_flops": plain_sum(row["matrix_flops"] for row in rows),
        "target_verify_matrix_flops": verify["linear_flops"] + verify["attention_flops_causal"],
        "draft_kv_bytes_per_context_token": per_row,
        "draft_kv_peak_bytes": (cached + new + block) * per_row,
        "draft_kv_after_crop_bytes": (cached + new) * per_row,
        "draft_noise_kv_discarded_bytes": block * per_row,
        "target_verify_peak_kv_bytes": arch.kv_bytes(w.kv_dtype, cached + new + block, w.mla),
        "draft_round_s": dflash.round_time_s(drafter, cached, new, block, r),
        "target_verify_s": verify["time_s"]}
    rec.update(definitions=["Work of one round (integers); the two times are the operator-sum estimate on the "
                            "device (the drafter's by its products' logical operands), not bounds."],
               left_out=["Norms, RoPE, SiLU, softmax and sampling (non-matrix work) in the matrix FLOPs; "
                         "acceptance (a measured quality of the trained drafter): give --acceptance for the "
                         "speculative table."],
               conventions=[DFLASH_CONVENTION])
    return rec


def restore_record(arch, w, device, tokens, next_use, offload_bw, restore_bw, startup, recompute, host_capacity):
    """The `serve --kv-restore T` record: keep, offload + prefetch or drop + recompute one request's
    snapshot of `tokens` tokens until its next use (restore.policies), with the ledger's snapshot
    bytes and its replay's backbone pass."""
    from ... import ledger
    from ..decode import phase_record
    from .. import decode_sum
    from . import pools, restore

    kv_w = w.replace(mla="absorbed") if w.mla == "auto" else w
    r = roof(device, w.compute_dtype, 1.0, 1.0)
    replay = phase_record(decode_sum.single(ledger.operators(
        arch, kv_w.replace(batch=1, tokens=tokens, history=0, logits="none"))), r)
    snapshot = arch.kv_bytes(kv_w.kv_dtype, tokens, kv_w.mla)
    flops = replay["linear_flops"] + replay["attention_flops_causal"]
    rows, summary = restore.policies(snapshot=snapshot, next_use=next_use, offload_bw=offload_bw,
                                     restore_bw=restore_bw, startup=startup, recompute=recompute,
                                     host_capacity=host_capacity, replay_flops=flops)
    rec = _header(arch, kv_w, device, tokens, 1, Options(), r)
    rec["inputs"] = {"input_len": tokens, "next_use_ns": next_use, "offload_bytes_per_s": offload_bw,
                     "restore_bytes_per_s": restore_bw, "transfer_startup_ns": startup, "recompute_ns": recompute,
                     "host_capacity_bytes": host_capacity, "kv_dtype": rec["inputs"]["kv_dtype"]}
    rec["notes"] = []
    rec["kv_restore"] = pools.jsonable({
        "kv_snapshot_bytes": snapshot, "input_token_id_bytes": 4 * tokens,
        "replay_backbone_matrix_flops": flops, "replay_new_kv_write_bytes": replay["kv_bytes_written"],
        **summary, "policies": rows})
    rec.update(definitions=[DECLARED], left_out=[
        "Contention for the links, the device room and the host memory; pinned allocation; a wrong "
        "next-use prediction; the replay's declared time is not derived from the device."],
               conventions=[restore.RESTORE_CONVENTION])
    return rec


def pages_record(arch, w, device, events, page_tokens, reservation_tokens, capacity_bytes):
    """The `serve --page-event ...` record: a paged cache of `page_tokens`-token pages under the
    events (pages.replay), c = the model's KV bytes per token (full attention: linear in tokens)."""
    from ...errors import UserError
    from . import pages

    kv_w = w.replace(mla="absorbed") if w.mla == "auto" else w
    c = arch.kv_bytes(kv_w.kv_dtype, 1, kv_w.mla)
    if c * page_tokens != arch.kv_bytes(kv_w.kv_dtype, page_tokens, kv_w.mla) or not c:
        raise UserError(f"{arch.id}: its cache is not the same bytes for every token (windows or states): "
                        "pages of whole tokens across layers are not modelled")
    rows, summary = pages.replay(events, page_tokens=page_tokens, token_bytes=c,
                                 reservation_tokens=reservation_tokens, capacity_bytes=capacity_bytes)
    rec = _header(arch, kv_w, device, 1, 1, Options())
    rec["inputs"] = {"page_tokens": page_tokens, "reservation_tokens": reservation_tokens,
                     "page_capacity_bytes": capacity_bytes, "kv_dtype": rec["inputs"]["kv_dtype"],
                     "events": [":".join(map(str, e)) for e in events]}
    rec["notes"] = []
    rec["kv_pages"] = dict(summary, events=rows)
    rec.update(definitions=["Bytes of a declared event sequence (integers): no time, no bound."],
               left_out=["Block-table and reference-count metadata, weights and workspace; eviction, swapping "
                         "and queueing of rejected events; a kernel that copies whole blocks."],
               conventions=[pages.PAGES_CONVENTION])
    return rec


def residency_record(arch, w, device, intervals, capacities, page_tokens):
    """The `serve --residency ...` record: immutable pages of prefix identities in memory tiers
    over declared intervals (residency.residency), c = the model's KV bytes per token."""
    from ...errors import UserError
    from . import pools, residency

    kv_w = w.replace(mla="absorbed") if w.mla == "auto" else w
    c = arch.kv_bytes(kv_w.kv_dtype, 1, kv_w.mla)
    if not c or c * page_tokens != arch.kv_bytes(kv_w.kv_dtype, page_tokens, kv_w.mla):
        raise UserError(f"{arch.id}: its cache is not the same bytes for every token (windows or states): "
                        "whole-token pages across layers are not modelled")
    for i in intervals:
        if i[3] % page_tokens:
            raise UserError(f"--residency {i[0]}: {i[3]} tokens is not whole pages of {page_tokens} "
                            "(partial pages are not modelled)")
    rows, segments, summary = residency.residency(intervals, capacities, c)
    rec = _header(arch, kv_w, device, 1, 1, Options())
    rec["inputs"] = {"page_tokens": page_tokens, "kv_dtype": rec["inputs"]["kv_dtype"],
                     "intervals": [{"id": i[0], "tier": i[1], "prefix_identity": i[2], "tokens": i[3],
                                    "start_ns": i[4], "end_ns": i[5]} for i in intervals],
                     "capacities": capacities}
    rec["notes"] = []
    rec["residency"] = pools.jsonable(dict(kv_bytes_per_token=c, kv_page_bytes=c * page_tokens, **summary,
                                           tiers=rows, segments=segments))
    rec.update(definitions=["Bytes and byte-time of declared intervals (exact): no time is predicted."],
               left_out=["Writes, migrations and their I/O; eviction; metadata, allocator and file padding."],
               conventions=[residency.RESIDENCY_CONVENTION])
    return rec

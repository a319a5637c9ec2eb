"""`decode`: prefill (TTFT bound) and G-1 decode steps for B requests on one device.

A request of P input tokens and G output tokens costs one prefill pass of its
P tokens, which yields the first output token (the TTFT bound), then G - 1
decode steps; step i (i = 0..G-2) reads a history of P + i cached tokens,
adds one token and writes its cache. The decode steps are summed in closed
form (analyses/decode_sum.py): two or three ledgers per linear piece of the
history, never one per token.

Every time is a roofline bound summed over operators (as in `forward`) and is
split by what bounds it: compute-bound operators' time, and memory-bound
operators' time in proportion to the bytes they move (weights, KV cache,
activations). A phase is compute-bound when compute-bound operators take more
than half its time; otherwise the largest byte class names it.
"""

from .. import ledger
from ..errors import UserError
from ..record import Record
from . import decode_sum, mla_path
from .efficiency import predict
from .efficiency.serving import predicted_serving
from .memory import RESERVE_RULE, cache_room, engine_defaults, request_bytes, requests_in, reserve_of
from .records import SCHEMA_VERSION, conventions, device_record, model_record, workload_record
from .roofline import UNKNOWN, compute_noted, roof
from .serving import SERVING_CONVENTIONS, throughput
from ..summation import plain_sum

DECODE_CONVENTIONS = (
    "Output length G counts every generated token (as vLLM's --output-len): the prefill pass "
    "over the P input tokens yields the first one, and its bound is the TTFT; G - 1 decode "
    "steps follow, step i (i = 0..G-2) reading a history of P + i cached tokens per request, "
    "so each step is charged its own history, not the final length.",
    "The B requests run in lockstep: their prompts are prefilled together in one pass "
    "(B x P tokens) and every decode step carries one new token of each request.",
    "Decode sums are closed forms: every ledger quantity is linear in the history on pieces "
    "delimited by window edges and the like, summed as arithmetic series in exact integers; "
    "each operator's per-step bound max(compute, memory) is summed exactly by splitting a "
    "piece where the operator turns from memory- to compute-bound.",
    "Bound of a phase: time of compute-bound operators against memory-bound operators' time, "
    "split by the bytes they move (weights read; KV cache read and written; activations). "
    "Compute-bound when compute-bound operators take more than half the time, otherwise "
    "named by the largest byte class.",
    "Time per output token (TPOT) = decode time / (G - 1); decode tokens/s per request = "
    "1 / TPOT, for the batch B / TPOT; end-to-end tokens/s per request = G / (TTFT + decode time).",
    "Capacity: requests whose cache for P + G - 1 tokens (the last generated token is never cached) fits beside the weights and a workspace "
    "reserve (--reserve; default 10% of device memory, as vLLM's gpu_memory_utilization 0.9; "
    "TensorRT-LLM's default leaves 10% of the memory free after the weights instead) "
    "(analyses/memory; `kv` adds sharding, paging, prefix sharing).",
)

CROSSOVER_RIDGE = (
    "Ridge-point estimate: the smallest batch B with B x 2 x active params / peak > weight bytes / "
    "bandwidth, i.e. B > ridge point x weight bytes / (2 x active params): two FLOPs per "
    "parameter per token, the weights read once, nothing else (for bf16 weights B > ridge point). "
    "Dense models only: an MoE batch reads only the experts it touches.")
CROSSOVER_IDEAL = (
    "Ideal-bound crossover: the smallest batch whose decode phase is compute-bound under perfect "
    "overlap: all its FLOPs at peak take longer than its unique bytes (weights read + KV read + "
    "KV written; activations assumed on chip) at bandwidth. For a dense model at short context "
    "it is about the ridge point x weight bytes / (2 x params) (the FLOP/byte of one token).")
CROSSOVER_SUM = (
    "Operator-sum crossover: the smallest batch whose decode phase is compute-bound as the sum "
    "of per-operator bounds counts it: operators bound by compute take more than half of that "
    "sum (each operator max(compute, memory), activation traffic counted). It can come before "
    "or after the ideal crossover: each operator turns compute-bound at its own intensity (the "
    "GEMMs early, attention over a long cache never), and activation traffic counts on the "
    "memory side; the ideal bound pools all FLOPs against all unique bytes.")

LEFT_OUT = (
    "This is a lower bound on time (an upper bound on throughput) for one device. It leaves out "
    "queueing and admission delays, scheduling and batching overheads (continuous batching, "
    "interleaving prefill with decode), kernel launch and synchronisation latency, host-side "
    "sampling and detokenisation, and communication (single device; see `parallel`).",
    "Efficiency factors divide every compute time (--compute-efficiency) and memory time "
    "(--memory-efficiency); at 1.0 the device runs at its dense vendor peaks.",
)


# Keys of an operator row and of a sweep row, in order (the CSV header even when empty).
OPERATOR_COLUMNS = ("name", "layers", "repeats", "category", "shape", "matrix_flops",
                    "attention_flops_rectangular", "vector_flops", "weight_bytes_read", "act_bytes_read",
                    "kv_bytes_read", "act_bytes_written", "kv_bytes_written", "time_s", "bound",
                    "predicted_time_s", "predicted_efficiency")
SWEEP_COLUMNS = ("batch", "tpot_first_s", "tpot_mean_s", "tpot_last_s", "decode_tokens_per_s_per_request",
                 "decode_tokens_per_s_aggregate", "compute_share", "compute_bound_s", "weights_s", "kv_s",
                 "activations_s", "bound", "cache_bytes",
                 "stream_output_tokens_per_s", "stream_bound", "predicted_tpot_mean_s",
                 "predicted_decode_tokens_per_s_aggregate")


class Account(Record):
    """Where a roofline time goes: compute-bound operators' time, and
    memory-bound operators' time split by the bytes they move."""
    compute_s: float = 0.0
    weights_s: float = 0.0
    kv_s: float = 0.0
    act_s: float = 0.0

    @property
    def time_s(self):
        return self.compute_s + self.weights_s + self.kv_s + self.act_s

    @property
    def bound(self):
        total = self.time_s
        if not total:
            return "-"
        if self.compute_s > total / 2:
            return "compute"
        name, _ = max((("weights", self.weights_s), ("KV", self.kv_s), ("activations", self.act_s)),
                      key=lambda kv: kv[1])
        return f"memory: {name}"


# Indices into decode_sum.FIELDS.
_MF, _RECT, _VF, _WR, _AR, _KR, _AW, _KW = range(8)


def _bounds(r):
    """compute_s(v) and memory_s(v) of a FIELDS vector on a roof."""
    def compute_s(v):
        return r.compute_s(v[_MF], v[_VF])

    def memory_s(v):
        return (v[_WR] + v[_AR] + v[_KR] + v[_AW] + v[_KW]) / r.bytes_per_s

    return compute_s, memory_s


def operator_accounts(steps, r):
    """Per operator: ((compute, weights, KV, activations) seconds summed over every
    step, steps on which it is compute-bound). Its compute-bound steps are charged
    the compute time of their summed FLOPs; its memory-bound steps their summed
    bytes by class over the bandwidth (decode_sum.bound_sums: exact integer sums,
    each turned into seconds once)."""
    compute_s, memory_s = _bounds(r)
    bw = r.bytes_per_s
    out = []
    for runs in steps.runs:
        steady = decode_sum.constant(runs)   # the same every step: one bound on all of them
        if steady is not None:
            v0, n = steady
            if compute_s(v0) - memory_s(v0) > 0:
                out.append(((compute_s(v0 if n == 1 else tuple([n * x for x in v0])), 0.0, 0.0, 0.0), n))
                continue
            on_compute, m, compute_steps = _ZERO_FIELDS, (v0 if n == 1 else tuple([n * x for x in v0])), 0
        else:
            on_compute, m, compute_steps = decode_sum.bound_sums(runs, compute_s, memory_s)
        c = compute_s(on_compute) if compute_steps else 0.0
        out.append(((c, m[_WR] / bw, (m[_KR] + m[_KW]) / bw, (m[_AR] + m[_AW]) / bw), compute_steps))
    return out


_ZERO_FIELDS = (0,) * len(decode_sum.FIELDS)


def account(steps, r, accounts=None):
    """The Account of all the steps (from their `operator_accounts` when the
    caller has them)."""
    accounts = operator_accounts(steps, r) if accounts is None else accounts
    return Account(*(plain_sum(col) for col in zip(*(a for a, _ in accounts))))


def ideal_time(steps, r):
    """Sum over steps of the ideal bound max(all FLOPs at peak, unique bytes / bandwidth):
    each step's totals over the operators (linear on the steps' common pieces), summed
    in exact integers over the compute-side and over the memory-side steps, each sum
    turned into seconds once."""
    def compute_s(v):
        return r.compute_s(v[_MF], v[_VF])

    def unique_s(v):
        return (v[_WR] + v[_KR] + v[_KW]) / r.bytes_per_s

    def diff(v):
        return compute_s(v) - unique_s(v)

    low, high, scale = steps.total_range(diff)
    margin = 1e-9 * scale   # far above the rounding of the per-step test
    if high < -margin or low > margin:   # one side on every step: the split's answer, without it
        t = decode_sum.summed_totals(steps)
        return compute_s(t) if low > margin else unique_s(t)
    on_compute, on_memory, compute_steps = decode_sum.bound_sums(steps.total_runs(), compute_s, unique_s)
    c = compute_s(on_compute) if compute_steps else 0.0
    return c + unique_s(on_memory) if compute_steps < steps.count else c


def _unknown_noted(bound, r, matrix_flops, vector_flops):
    """A memory-side bound gains '; compute unknown' when some of the FLOPs have no
    published peak on the device (their time is not counted), as forward's rows say."""
    if bound.startswith("memory") and r.compute_unknown(matrix_flops, vector_flops):
        return f"{bound}; compute unknown"
    return bound


def phase_record(steps, r, rows=None, accounts=None):
    """Exact work and bounded time of a phase (one pass, or decode steps summed:
    decode_sum.Steps); `rows` and `accounts`: the steps' summed_ops and
    operator_accounts when the caller has them (decode shows them per operator too)."""
    rows = decode_sum.summed_ops(steps) if rows is None else rows
    acc = account(steps, r, accounts)
    totals = ledger.op_totals(rows)
    return {
        "steps": steps.count,
        **totals,
        "time_s": acc.time_s,
        "compute_bound_s": acc.compute_s,
        "weights_s": acc.weights_s,
        "kv_s": acc.kv_s,
        "activations_s": acc.act_s,
        "bound": _unknown_noted(acc.bound, r, ledger.sum_field(rows, "matrix_flops"), totals["vector_flops"]),
        "ideal_time_s": ideal_time(steps, r),
    }


def operator_rows(pcs, r, rows=None, accounts=None):
    """The decode ledger summed over all steps, with each operator's summed bound
    (`rows`, `accounts`: as phase_record's)."""
    steps = pcs.count
    rows = decode_sum.summed_ops(pcs) if rows is None else rows
    accounts = operator_accounts(pcs, r) if accounts is None else accounts
    out = []
    for op, (acc, compute_steps) in zip(rows, accounts):
        bound = (compute_noted(r, op.matrix_flops, op.vector_flops) if compute_steps == steps
                 else _unknown_noted("memory", r, op.matrix_flops, op.vector_flops) if compute_steps == 0
                 else f"compute on {compute_steps} of {steps} steps")
        out.append({
            "name": op.name, "layers": op.layers, "repeats": op.repeats, "category": op.category,
            "shape": op.shape, "matrix_flops": op.matrix_flops,
            "attention_flops_rectangular": op.rect_flops, "vector_flops": op.vector_flops,
            "weight_bytes_read": op.weight_read, "act_bytes_read": op.act_read,
            "kv_bytes_read": op.kv_read, "act_bytes_written": op.act_write,
            "kv_bytes_written": op.kv_write, "time_s": plain_sum(acc), "bound": bound,
        })
    return out


def cached_tokens(input_len, output_len):
    """Tokens a request caches by the end: the prompt and every generated token
    but the last, which is never fed back: P + G - 1."""
    return input_len + output_len - 1


def step_histories(input_len, output_len):
    """(first, last): the histories of the G - 1 decode steps, P .. P + G - 2 (the
    first generated token comes from the prefill pass; last < first when G = 1)."""
    return input_len, input_len + output_len - 2


def capacity_record(arch, w, device, context, reserve_bytes=None):
    """Requests of `context` cached tokens that fit beside the weights and the
    reserve (default 10% of memory; memory.max_requests, with its parts shown),
    and what the serving engines' default reserves would leave."""
    memory = device.memory_bytes
    reserve = reserve_of(memory, reserve_bytes)
    per = request_bytes(arch, w, context)
    weights = arch.weight_bytes(w)
    room = cache_room(memory, weights, reserve)
    fit = requests_in(room, per)
    return {
        "context_tokens": context,
        "memory_bytes": memory,
        "memory_convention": device.memory_convention,
        "weight_bytes": weights,
        "reserve_bytes": reserve,
        "reserve_rule": RESERVE_RULE if reserve_bytes is None else "--reserve",
        "cache_room_bytes": room,   # negative: a shortfall
        "cache_bytes_per_request": per,
        "max_requests": fit,
        "fits": fit is None or w.batch <= fit,
        "engine_defaults": engine_defaults(memory, weights, per),
    }


def inputs_record(w, input_len, output_len, batch=True):
    base = workload_record(w)
    rec = {"batch": w.batch} if batch else {}
    rec.update({"input_len": input_len, "output_len": output_len, "decode_steps": output_len - 1,
                "first_history": input_len, "last_history": step_histories(input_len, output_len)[1]})
    rec.update((k, v) for k, v in base.items() if k not in ("batch", "tokens", "history", "logits"))
    return rec


def check_lengths(arch, input_len, output_len):
    for name, value in (("input_len", input_len), ("output_len", output_len)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UserError(f"{name} must be a positive integer, got {value!r}")
    notes = []
    if input_len + output_len > arch.max_context:
        notes.append(f"input + output length {input_len + output_len} exceeds the model's "
                     f"{arch.max_context_source} {arch.max_context}; computed anyway")
    return notes


def _header(arch, w, device, r, ce, me):
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "decode",
        "model": model_record(arch),
        "device": device_record(device, w.compute_dtype, ce, me),
    }


def decode_path(arch, w, lo, hi, r):
    """The decode steps' workload and MLA choice (mla_path.cheaper over all steps)."""
    if hi < lo:
        return mla_path.cheaper(arch, w, lambda x: 0.0)
    return mla_path.cheaper(arch, w, lambda x: account(
        decode_sum.decode_pieces(arch, x, lo, hi, check=False), r).time_s)


def mla_notes(rec, notes, prefill, steps):
    """State the MLA paths auto chose for the prefill and the decode steps."""
    if prefill:
        notes.append(mla_path.note(prefill, "prefill"))
    if steps:
        notes.append(mla_path.note(steps, "decode steps"))
    if prefill or steps:
        rec["inputs"]["mla"] = (f"auto: {prefill['path'] if prefill else '-'} for the prefill, "
                                f"{steps['path'] if steps else '-'} for the decode steps")


def serving_record(arch, w, r, input_len, output_len, cap, prefill_w=None):
    """The serving-throughput bound (analyses/serving) in the capacity's room."""
    from .serving import serving_bound

    return serving_bound(arch, w, r, input_len, output_len, room_bytes=cap["cache_room_bytes"], prefill_w=prefill_w)


def decode(arch, w, device, input_len, output_len, compute_efficiency=1.0, memory_efficiency=1.0,
           reserve_bytes=None):
    """The `decode` record for one request shape and batch."""
    notes = check_lengths(arch, input_len, output_len)
    w = w.replace(tokens=1, history=0, logits="last")
    r = roof(device, w.compute_dtype, compute_efficiency, memory_efficiency)
    steps = output_len - 1
    lo, hi = step_histories(input_len, output_len)
    wp, choice = mla_path.for_pass(arch, w.replace(tokens=input_len), r)
    prefill_ops = ledger.operators(arch, wp)
    prefill = phase_record(decode_sum.single(prefill_ops), r)
    rates = predict.achievable(device, w.compute_dtype)
    prefill["predicted_time_s"] = predict.pass_time(prefill_ops, rates) if rates else None
    rec = _header(arch, w, device, r, compute_efficiency, memory_efficiency)
    w, step_choice = decode_path(arch, w, lo, hi, r)
    rec["inputs"] = inputs_record(w, input_len, output_len)
    mla_notes(rec, notes, choice, step_choice)
    cap = capacity_record(arch, w, device, cached_tokens(input_len, output_len), reserve_bytes)
    if not cap["fits"]:
        room = (f"at most {cap['max_requests']} requests of {cap['context_tokens']} cached tokens fit beside "
                "the weights and reserve" if cap["max_requests"] else
                "the weights and reserve alone exceed device memory")
        notes.append(f"batch {w.batch} does not fit on one {device.id}: {room}; "
                     "times are computed as if memory were unlimited")
    rec["notes"] = notes
    rec["capacity"] = cap
    rec["prefill"] = prefill
    first = last = summed = None
    operators = []
    if steps:
        pcs = decode_sum.decode_pieces(arch, w, lo, hi)
        rows, accounts = decode_sum.summed_ops(pcs), operator_accounts(pcs, r)
        summed = phase_record(pcs, r, rows, accounts)
        first = phase_record(pcs.first_step(), r)
        last = phase_record(pcs.last_step(), r)
        operators = operator_rows(pcs, r, rows, accounts)
        per_op = predict.piece_times(pcs, rates) if rates else [None] * len(operators)
        for row, t in zip(operators, per_op):
            row["predicted_time_s"] = t
            row["predicted_efficiency"] = row["time_s"] / t if t else None
        summed["predicted_time_s"] = plain_sum(per_op) if rates else None
    rec["decode_first_step"] = first
    rec["decode_last_step"] = last
    rec["decode"] = summed
    rec["latency"] = latency_record(w.batch, output_len, prefill, first, summed, last)
    rec["latency"].update(predicted_latency(w.batch, output_len, prefill, summed))
    rec["prediction"] = predict.rates_record(rates) if rates else None
    rec["operators"] = operators
    rec["serving"] = serving_record(arch, w, r, input_len, output_len, cap, wp)
    rec["serving"]["predicted"] = predicted_serving(arch, w, device, input_len, output_len)
    rec["left_out"] = list(LEFT_OUT)
    rec["conventions"] = (conventions(w) + list(DECODE_CONVENTIONS) + list(SERVING_CONVENTIONS)
                          + [predict.PREDICTION_CONVENTION])
    return rec


def predicted_latency(batch, output_len, prefill, summed):
    """The predicted TTFT, mean TPOT, total and batch tokens/s (None: no prediction)."""
    ttft = prefill.get("predicted_time_s")
    dec = summed["predicted_time_s"] if summed else 0.0
    if ttft is None or dec is None:
        return {"predicted_ttft_s": None, "predicted_tpot_mean_s": None, "predicted_total_s": None,
                "predicted_tokens_per_s_batch": None}
    steps = output_len - 1
    return {"predicted_ttft_s": ttft, "predicted_tpot_mean_s": dec / steps if steps else None,
            "predicted_total_s": ttft + dec, "predicted_tokens_per_s_batch": batch * output_len / (ttft + dec)}


def latency_record(batch, output_len, prefill, first, summed, last):
    steps = output_len - 1
    ttft = prefill["time_s"]
    dec = summed["time_s"] if summed else 0.0
    total = ttft + dec
    mean = dec / steps if steps else None
    return {
        "ttft_s": ttft,
        "tpot_first_s": first["time_s"] if first else None,
        "tpot_mean_s": mean,
        "tpot_last_s": last["time_s"] if last else None,
        "decode_s": dec,
        "total_s": total,
        "decode_tokens_per_s_per_request": steps / dec if steps else None,
        "decode_tokens_per_s_batch": batch * steps / dec if steps else None,
        "tokens_per_s_per_request": output_len / total,
        "tokens_per_s_batch": batch * output_len / total,
    }


def sweep_batches(capacity):
    """1, 2, 4, ... up to the capacity, and the capacity itself."""
    out, b = [], 1
    while b <= capacity:
        out.append(b)
        b *= 2
    if out and out[-1] != capacity:
        out.append(capacity)
    return out


def predicted_sweep_row(pcs, rates, batch, steps):
    """A sweep row's predicted mean TPOT and aggregate decode tokens/s: the row's decode steps at
    the achievable rates (predict.piece_times, as `decode` predicts one batch); None without rates."""
    if rates is None:
        return {"predicted_tpot_mean_s": None, "predicted_decode_tokens_per_s_aggregate": None}
    dec = plain_sum(predict.piece_times(pcs, rates))
    return {"predicted_tpot_mean_s": dec / steps, "predicted_decode_tokens_per_s_aggregate": batch * steps / dec}


def sweep(arch, w, device, input_len, output_len, compute_efficiency=1.0, memory_efficiency=1.0,
          reserve_bytes=None):
    """The `decode --batch-sweep` record: B = 1, 2, 4, ... up to the batch whose cache still fits."""
    notes = check_lengths(arch, input_len, output_len)
    if output_len < 2:
        raise UserError("--batch-sweep needs --output-len of at least 2 (one decode step)")
    w = w.replace(batch=1, tokens=1, history=0, logits="last")
    r = roof(device, w.compute_dtype, compute_efficiency, memory_efficiency)
    steps = output_len - 1
    lo, hi = step_histories(input_len, output_len)
    wp, choice = mla_path.for_pass(arch, w.replace(tokens=input_len), r)
    w, step_choice = decode_path(arch, w, lo, hi, r)
    cap = capacity_record(arch, w, device, cached_tokens(input_len, output_len), reserve_bytes)
    if cap["max_requests"] is None:
        raise UserError(f"{arch.id} keeps no per-request cache: memory does not bound the batch")
    del cap["fits"]
    serving = serving_record(arch, w, r, input_len, output_len, cap, wp)
    work = (serving["request_matrix_flops"], serving["request_vector_flops"], serving["request_kv_bytes"])
    rows, pieces = [], []
    rates = predict.achievable(device, w.compute_dtype)
    for b in sweep_batches(cap["max_requests"]):
        wb = w.replace(batch=b)
        pcs = decode_sum.decode_pieces(arch, wb, lo, hi, check=b == 1)
        pieces.append(pcs)
        acc = account(pcs, r)
        dec = acc.time_s
        starts = pcs.starts()
        stream = throughput(work, plain_sum(v[_WR] for v in starts), input_len, output_len, b, r)
        rows.append({
            "batch": b, "tpot_first_s": account(pcs.first_step(), r).time_s,
            "tpot_mean_s": dec / steps, "tpot_last_s": account(pcs.last_step(), r).time_s,
            "decode_tokens_per_s_per_request": steps / dec,
            "decode_tokens_per_s_aggregate": b * steps / dec,
            "compute_share": acc.compute_s / dec,
            "compute_bound_s": acc.compute_s, "weights_s": acc.weights_s, "kv_s": acc.kv_s,
            "activations_s": acc.act_s,
            "bound": _unknown_noted(acc.bound, r, *(plain_sum(v[i] for v in starts) for i in (_MF, _VF))),
            "cache_bytes": b * cap["cache_bytes_per_request"],
            "stream_output_tokens_per_s": stream["output_tokens_per_s"],
            "stream_bound": stream["bound"],
            **predicted_sweep_row(pcs, rates, b, steps),
        })
    rec = _header(arch, w, device, r, compute_efficiency, memory_efficiency)
    rec["inputs"] = inputs_record(w, input_len, output_len, batch=False)
    mla_notes(rec, notes, choice, step_choice)
    if not rows:
        notes.append("not even one request fits: the weights and the reserve exceed device memory")
    rec["notes"] = notes
    rec["capacity"] = cap
    rec["rows"] = rows
    ideal, summed = crossovers(arch, w, rows, pieces, lo, hi, r)
    rec["ridge_estimate_batch"] = (ridge_estimate_batch(r, cap["weight_bytes"], arch.active_params)
                                   if arch.active_params == arch.params else None)   # dense only
    rec["ideal_compute_bound_batch"] = ideal
    rec["compute_bound_batch"] = summed
    rec["compute_unknown"] = r.compute_unknown(1, 1)
    rec["capacity_batch"] = cap["max_requests"]
    rec["serving"] = serving
    rec["left_out"] = list(LEFT_OUT)
    rec["conventions"] = conventions(w) + list(DECODE_CONVENTIONS) + list(SERVING_CONVENTIONS) + [
        "Sweep column 'stream tokens/s': the serving-throughput bound with the weights of each "
        "step shared by the row's batch as the mean concurrency (continuous batching, chunked "
        "prefill), beside the lockstep decode throughput.",
        CROSSOVER_RIDGE, CROSSOVER_IDEAL, CROSSOVER_SUM,
        "The operator-sum crossover (and the ideal one of an MoE model) is found by bisection "
        "between the last memory-bound and the first compute-bound swept batch; the ideal one of "
        "a dense model is solved from batches 1 and 2 (its totals are affine in the batch)."]
    return rec


def ridge_estimate_batch(r, weight_bytes, active_params):
    """floor(x) + 1 for x = ridge point x weight bytes / (2 x active params): the batch
    above which B tokens' 2 FLOPs per parameter at peak outlast one read of the
    weights at bandwidth (the textbook estimate: B > peak / bandwidth for bf16
    weights). None when the device publishes no peak."""
    if r.matrix_flops_per_s == UNKNOWN:
        return None
    return int(r.matrix_flops_per_s / r.bytes_per_s * weight_bytes / (2 * active_params)) + 1


def ideal_totals(pcs):
    """(matrix FLOPs, vector FLOPs, unique bytes) of a phase: what the ideal bound weighs."""
    t = decode_sum.summed_totals(pcs)
    return t[_MF], t[_VF], t[_WR] + t[_KR] + t[_KW]


def ideal_compute(t, r):
    """True when the FLOPs of totals t at peak take longer than its unique bytes
    (weights read + KV read + KV written) at bandwidth: the ideal bound's side."""
    return r.compute_s(t[0], t[1]) > r.memory_s(t[2])


def ideal_is_compute(pcs, r):
    return ideal_compute(ideal_totals(pcs), r)


def affine_ideal_crossover(one, two, capacity, vocab, r):
    """The ideal crossover of a dense model from the phases at batch 1 and 2.

    Without experts every total is affine in the batch B (per-request FLOPs and
    cache bytes, weights read once, an embedding row per request while B <= the
    vocabulary): t(B) = t(1) + (B - 1)(t(2) - t(1)), exactly, in integers. The
    crossover solves compute(t(B)) = memory(t(B)) (both linear in t), then is
    checked on the exact integer totals. None when it lies past the capacity;
    False when the affine form does not hold there (B > vocabulary): bisect.
    """
    t1, t2 = ideal_totals(one), ideal_totals(two)
    d = tuple(b - a for a, b in zip(t1, t2))

    def at(b):
        return tuple(a + (b - 1) * x for a, x in zip(t1, d))

    def margin(t):
        return r.compute_s(t[0], t[1]) - r.memory_s(t[2])

    slope = margin(d)
    if ideal_compute(t1, r):
        return 1
    if slope <= 0:
        return None
    b = max(2, 1 + int(-margin(t1) / slope))
    while b > 2 and ideal_compute(at(b - 1), r):
        b -= 1
    while not ideal_compute(at(b), r):
        b += 1
    if b > capacity:
        return None
    return b if b <= vocab else False


def operator_sum_is_compute(pcs, r):
    """True when compute-bound operators take more than half the summed operator bounds."""
    return account(pcs, r).bound == "compute"


def first_compute_batch(batches, flags, probe):
    """The smallest batch for which probe(batch) is True, given the swept `batches`
    and their `flags`: bisection between the last False and the first True swept
    batch (assumes one switch inside that bracket; log2 of its width probes).
    None when no swept batch is True."""
    k = next((i for i, f in enumerate(flags) if f), None)
    if k is None:
        return None
    if k == 0:
        return batches[0]
    below, above = batches[k - 1], batches[k]
    while above - below > 1:
        mid = (below + above) // 2
        if probe(mid):
            above = mid
        else:
            below = mid
    return above


def crossovers(arch, w, rows, pieces, lo, hi, r):
    """(ideal-bound crossover, operator-sum crossover): the smallest batches whose
    decode phase is compute-bound by each definition (None within capacity), from
    the swept rows and their pieces. The ideal one of a dense model is solved from
    batches 1 and 2 (its totals are affine in the batch); otherwise both are bisected."""
    def probe(test):
        return lambda b: test(decode_sum.decode_pieces(arch, w.replace(batch=b), lo, hi, check=False), r)

    batches = [row["batch"] for row in rows]
    ideal = False
    if arch.active_params == arch.params and batches[:2] == [1, 2]:
        ideal = affine_ideal_crossover(pieces[0], pieces[1], batches[-1], arch.vocab_size, r)
    if ideal is False:
        ideal = first_compute_batch(batches, [ideal_is_compute(p, r) for p in pieces],
                                    probe(ideal_is_compute))
    summed = first_compute_batch(batches, [row["bound"] == "compute" for row in rows],
                                 probe(operator_sum_is_compute))
    return ideal, summed

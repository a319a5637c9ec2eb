"""Serving-throughput bound: a stream of requests of P input and G output tokens.

A server under continuous batching keeps requests at every stage of generation
in flight and interleaves prefill chunks with decode steps. Two facts bound
its throughput from above, whatever its scheduler does:

1. Memory bounds the mean concurrency. A request's decode step i
   (i = 0..G-2) holds the cache of c(P + i + 1) bytes (its history and the
   token the step writes; c(n) = `Architecture.kv_bytes` of n tokens, windows,
   chunks and recurrent state included). Every step's caches fit in the room
   left by the weights and the reserve, so summed over a run of S steps
   completing R requests: R * sum_{n=P+1}^{P+G-1} c(n) <= S * room. The mean
   number of requests a step carries, N = R (G - 1) / S, is therefore at most

       N_ss = room / c_mean,   c_mean = sum_{n=P+1}^{P+G-1} c(n) / (G - 1),

   the steady-state concurrency. With full attention c(n) = n * b and c_mean =
   b * (P + G/2); a window W caps c(n) at W tokens, a chunk C holds
   (n - 1) mod C + 1 tokens, a recurrent state is constant: the sum is taken in
   closed form on the linear pieces of c (decode_sum.linear_sum). The guaranteed
   concurrency, with no preemption ever, charges every request its final
   length: N_g = floor(room / c_peak(P + G - 1)) <= N_ss. For G = 1 (no decode
   step) c_mean = c(P) and each request needs at least one step.

2. The device cannot beat its roofline over the whole request. Each step
   reads the weights once, shared by the N requests it carries, and a request
   takes part in G - 1 steps (its prefill rides on other requests' steps, as
   chunked prefill does), so a request's weight reads are at least
   W(N) * (G - 1) / N with W(N) the weight bytes of a step at batch N (MoE:
   the experts N tokens touch under --routing, so the figure is an expected
   value there). Its own work is exact: the prefill pass and the G - 1 decode
   steps at batch 1 (FLOPs, KV read and written; the decode steps summed in
   closed form, decode_sum). The device time per request is then at least

       t = max(FLOPs at peak, (W(N) (G - 1) / N + KV bytes) / bandwidth)

   (activations counted as staying on chip, the ideal bound's convention), and
   throughput is at most 1 / t requests/s, G / t output tokens/s, with N = N_ss.

The bound is an upper bound because every term is: N_ss over-states the mean
batch (it ignores the memory of prefills in flight), the per-request time
counts only unavoidable work at peak rates with perfect overlap of compute and
memory, and nothing is charged for scheduling, preemption, sampling or launch
gaps. A layout's shard (an `Architecture` of one device's part, its room and
roof) goes through the same function; communication is added by `parallel`.
"""

import math

from .. import ledger
from . import decode_sum
from .memory import request_bytes, requests_in
from .roofline import UNKNOWN_COMPUTE

SERVING_CONVENTIONS = (
    "Serving-throughput bound (continuous batching over a stream of requests of P input and "
    "G output tokens): mean concurrency <= room / c_mean, where c_mean is the mean cache a "
    "request holds over its G - 1 decode steps, sum_{n=P+1}^{P+G-1} c(n) / (G - 1) (full "
    "attention: P + G/2 tokens; windows, chunks and recurrent state by their own c(n)); "
    "guaranteed concurrency (no preemption) = floor(room / cache at P + G - 1 tokens).",
    "Device time per request >= max(FLOPs of its prefill and G - 1 decode steps at peak, "
    "(weights of one decode step x (G - 1) / concurrency + its KV read and written) / "
    "bandwidth): chunked prefill fills decode steps' idle compute and every step's weight "
    "reads are shared by the requests it carries. Throughput <= 1 / that time (requests/s), "
    "G / that time (output tokens/s).",
    "Why it is an upper bound: the concurrency over-states the mean batch (prefills' memory "
    "ignored), compute and memory overlap perfectly at peak rates, activations stay on chip, "
    "and nothing is charged for scheduling, preemption, sampling or kernel launches; with MoE "
    "the experts a step touches are the routing model's expectation.",
)


def held(arch, w, n):
    """c(n): cache bytes a request holds with n tokens cached (not the peak reserve)."""
    return arch.kv_bytes(w.kv_dtype, n, w.mla)


def held_sum(arch, w, first, last):
    """sum_{n=first}^{last} c(n) in exact integers: a step at history H holds c(H + 1),
    summed over the linear pieces and repeated periods of the history in closed form,
    block by block (decode_sum.block_sum: c is the layers' blocks' caches added up, so a
    few values of each block's cache, whatever the output length)."""
    dt, mla = w.kv_dtype, w.mla
    return decode_sum.block_sum(arch, first - 1, last - 1, lambda b, h: (
        b.kv_bytes_per_token(dt, mla) * b.kv_tokens(h + 1) + b.state_bytes(dt)))


def concurrency(arch, w, input_len, output_len, room_bytes, final_bytes):
    """(guaranteed, steady-state, held bytes summed over the steps, steps): requests that
    fit at their final length, `final_bytes` each (an integer, None when no request keeps
    a cache) and the mean-concurrency ceiling room / c_mean = room x steps / summed (a
    real number; None when no cache). The sum and its divisor are exact integers; c_mean
    is their ratio."""
    guaranteed = requests_in(room_bytes, final_bytes)
    steps = output_len - 1
    if steps:
        total = held_sum(arch, w, input_len + 1, input_len + steps)
    else:
        total, steps = held(arch, w, input_len), 1
    if not total:
        return guaranteed, None, 0, steps
    return guaranteed, max(room_bytes, 0) * steps / total, total, steps


def _work(arch, w):
    """(matrix FLOPs, vector FLOPs, KV bytes read + written) of a pass's ledger rows."""
    mf, vf, kr, kw = ledger.field_sums(arch, w, ("matrix_flops", "vector_flops", "kv_read", "kv_write"))
    return mf, vf, kr + kw


def request_work(arch, w, input_len, output_len, prefill_w=None):
    """One request's own work, batch 1: (matrix FLOPs, vector FLOPs, KV bytes read and
    written) of its prefill pass and its G - 1 decode steps summed in closed form.
    `prefill_w` is the prefill's workload when its MLA path differs."""
    one = w.replace(batch=1, tokens=1, history=0, logits="last")
    work = _work(arch, (prefill_w or one).replace(batch=1, tokens=input_len))
    if output_len > 1:
        mf, _, vf, _, _, kr, _, kw = decode_sum.steps_totals(arch, one, input_len, input_len + output_len - 2)
        work = tuple(a + b for a, b in zip(work, (mf, vf, kr + kw)))
    return work


def step_weight_bytes(arch, w, batch, history):
    """Weight bytes one decode step at `batch` reads (MoE: the experts it touches)."""
    return ledger.field_sums(arch, w.replace(batch=max(batch, 1), tokens=1, history=history, logits="last"),
                             ("weight_read",))[0]


def request_time(work, weights_per_step, output_len, n, r):
    """(time, compute_s, memory_s) of one request at mean concurrency n: max(FLOPs at
    peak, (weights_per_step * iterations / n + KV bytes) / bandwidth)."""
    mf, vf, kv = work
    compute = r.compute_s(mf, vf)
    iterations = max(output_len - 1, 1)
    shared = weights_per_step * iterations / n if n else 0.0
    memory = (shared + kv) / r.bytes_per_s
    return max(compute, memory), compute, memory


def throughput(work, weights_per_step, input_len, output_len, n, r):
    """The bound at mean concurrency n (None: unbounded by memory, weights amortised away)."""
    t, compute, memory = request_time(work, weights_per_step, output_len, n, r)
    unknown = compute < memory and r.compute_unknown(*work[:2])   # FLOPs with no published peak
    return {
        "concurrency": n,
        "time_per_request_s": t,
        "compute_s": None if unknown else compute,
        "memory_s": memory,
        "bound": UNKNOWN_COMPUTE if unknown else "compute" if compute >= memory else "memory",
        "requests_per_s": 1 / t if t else None,
        "output_tokens_per_s": output_len / t if t else None,
        "total_tokens_per_s": (input_len + output_len) / t if t else None,
    }


def serving_bound(arch, w, r, input_len, output_len, *, room_bytes, prefill_w=None):
    """The serving-throughput bound of one device (or one device's shard `arch`) with
    `room_bytes` left for caches beside its weights and reserve."""
    final = request_bytes(arch, w, input_len + output_len - 1)   # the peak at P + G - 1 cached tokens
    guaranteed, steady, held_total, steps = concurrency(arch, w, input_len, output_len, room_bytes, final)
    work = request_work(arch, w, input_len, output_len, prefill_w)
    history = input_len if output_len > 1 else 0

    def at(n):
        if n == 0:
            return None
        if n is None:   # no per-request cache: weights shared by an unbounded batch
            return throughput(work, 0, input_len, output_len, None, r)
        return throughput(work, step_weight_bytes(arch, w, math.ceil(n), history),
                          input_len, output_len, n, r)

    mf, vf, kv = work
    return {
        "input_len": input_len,
        "output_len": output_len,
        "cache_room_bytes": room_bytes,
        "held_cache_summed_bytes": held_total,   # sum over the decode steps of the cache held
        "held_cache_steps": steps,               # its divisor: mean held = summed / steps
        "final_cache_bytes": final,
        "guaranteed_concurrency": guaranteed,
        "steady_state_concurrency": steady,
        "request_matrix_flops": mf,
        "request_vector_flops": vf,
        "request_kv_bytes": kv,
        "steady_state": at(steady),
        "guaranteed": at(guaranteed),
    }

"""Three schedulers in steady state, saturated (a queue that never empties).

Requests of P input (P - C to prefill when a prefix cache holds C) and G >= 2
output tokens (P below is the tokens a prompt prefills); N = --max-seqs (requests running
at once), T = --max-batched-tokens (tokens one iteration may carry), memory
ceilings from the serving bound (analyses/serving): M_g = requests that fit at
their final length (no preemption), M_ss = room / mean cache held. Iteration
times come from iteration.Parts (the ledger). Policies, as formulas:

- fixed (static batching): B = min(N, M_g) requests admitted together; one
  prefill pass of B prompts, then G - 1 decode steps of B tokens; the next batch
  starts when all finish. Cycle = t_prefill(B) + (G - 1) t_step(B);
  requests/s = B / cycle; TTFT = t_prefill(B); TPOT = t_step(B) (mean step);
  max ITL = the last step (history P + G - 2).
- continuous (iteration-level admission, whole-prompt prefill: Orca's iteration
  scheduling, vLLM's prefill-first scheduler without chunking): d = min(N, M_ss)
  requests decoding; each decode iteration of d tokens completes
  rho = d / (G - 1) requests on average, whose replacements' prompts are
  prefilled in their own iterations while decodes wait. Cycle per decode
  iteration = t_step(d) + rho t_prefill(1); requests/s = rho / cycle; TPOT = the
  cycle; max ITL = t_step(d) + ceil(rho) t_prefill(1); TTFT = t_prefill(1).
  A prompt longer than T cannot be scheduled (vLLM requires T >= the prompt).
- chunked (stall-free chunked prefill: Sarathi-Serve, Agrawal et al., OSDI
  2024; vLLM's chunked prefill): every iteration carries the d decoding
  requests' tokens and fills the rest of the budget with prompt chunks (FIFO),
  so rho P + d <= T with rho = d / (G - 1): d = min(N, M_ss,
  T (G - 1) / (P + G - 1)). The mean iteration = rho prompts' prefill work + d
  decode tokens, weights read once; requests/s = rho / t_iter; TPOT = t_iter.
  A prompt is split into k = ceil(P / (T - d)) equal chunks (the budget the
  decodes leave); an iteration carrying one chunk (1/k of a prompt's prefill
  work and d decode tokens) takes t_chunk: TTFT = k t_chunk, max ITL = t_chunk.

d and rho are means (real numbers): the fluid steady state. Times are given
twice (iteration module): the lower bound and the operator-sum estimate. The
requests/s under the lower bound is an upper bound on what the policy sustains
at that concurrency (M_ss over-states the mean batch, as the serving bound
says); nothing is charged for scheduling, sampling or launch gaps.
"""

import math

from ...errors import UserError
from . import iteration

POLICIES = ("fixed", "continuous", "chunked")

SCHEDULER_CONVENTIONS = (
    "Scheduler model (steady state, saturated queue; N = --max-seqs, T = --max-batched-tokens; "
    "M_g = requests that fit at P + G - 1 cached tokens, M_ss = cache room / mean cache held): "
    "fixed: B = min(N, M_g) admitted together, cycle = prefill(B prompts) + (G - 1) decode steps "
    "of B, requests/s = B / cycle, TTFT = prefill(B), TPOT = mean step; continuous (whole-prompt "
    "prefill, decodes wait): d = min(N, M_ss), rho = d / (G - 1) prompts per decode iteration, "
    "cycle = step(d) + rho x prefill(1), requests/s = rho / cycle, TPOT = cycle, max ITL = step(d) "
    "+ ceil(rho) x prefill(1); chunked (stall-free, Sarathi-Serve): d = min(N, M_ss, T (G - 1) / "
    "(P + G - 1)), the mean iteration d decode tokens + rho prompts' prefill work, requests/s = "
    "rho / mean iteration, TPOT = mean iteration; a prompt in k = ceil(P / (T - d)) equal chunks, "
    "an iteration with one chunk and d decodes takes t_chunk: TTFT = k t_chunk, max ITL = t_chunk.",
    "Iteration work = prefills x one prompt's prefill + decode tokens x one request's mean "
    "decode step (each from the ledger at batch 1; decode steps summed in closed form) + the "
    "weights of a pass over the iteration's tokens, read once. Lower bound per iteration: "
    "max(matrix FLOPs / matrix peak, vector FLOPs / vector peak, (weights + KV read and "
    "written) / bandwidth); estimate: the operator-sum roofline of the mean iteration.",
)


def _pair(f):
    """f(index) for the lower bound (0) and the estimate (1): {'lower_bound': .., 'estimate': ..}."""
    return {"lower_bound": f(0), "estimate": f(1)}


def _limit(values):
    """(value, name) of the smallest of (name, value) limits (None: no limit)."""
    given = [(v, name) for name, v in values if v is not None]
    return min(given)


def fixed(parts, r, max_seqs, guaranteed, final_bytes, history_last):
    b = max_seqs if guaranteed is None else min(max_seqs, guaranteed)
    if b < 1:
        return None
    P, G = parts.new_tokens, parts.G
    pre = iteration.times(parts.mix(b, 0, b * P), r)
    step = iteration.times(parts.mix(0, b, b), r)
    last = iteration.times(iteration._rows(
        _last_step_ops(parts, b, history_last), drop_weights=False), r)
    cycle = [pre[i] + (G - 1) * step[i] for i in (0, 1)]
    return {
        "policy": "fixed",
        "concurrency": b,
        "limited_by": "--max-seqs" if guaranteed is None or max_seqs <= guaranteed else "memory (final length)",
        "prefills_per_iteration": None,
        "tokens_per_iteration": None,
        "iteration_s": _pair(lambda i: step[i]),
        "requests_per_s": _pair(lambda i: b / cycle[i]),
        "output_tokens_per_s": _pair(lambda i: b * G / cycle[i]),
        "ttft_s": _pair(lambda i: pre[i]),
        "tpot_s": _pair(lambda i: step[i]),
        "max_itl_s": _pair(lambda i: last[i]),
        "kv_peak_bytes": b * final_bytes,
    }


def _last_step_ops(parts, b, history):
    from ... import ledger
    return ledger.operators(parts.arch, parts.one.replace(batch=b, history=history))


def continuous(parts, r, max_seqs, steady, token_budget, mean_held_bytes):
    P, G = parts.new_tokens, parts.G
    if P > token_budget:
        return {"policy": "continuous", "refused": f"a whole prompt of {P} tokens exceeds --max-batched-tokens "
                                                   f"{token_budget} (prefill without chunking needs T >= P)"}
    d, why = _limit((("--max-seqs", max_seqs), ("memory (mean cache held)", steady)))
    if d <= 0:
        return None
    rho = d / (G - 1)
    step = iteration.times(parts.mix(0, d, d), r)
    pre = iteration.times(parts.mix(1, 0, P), r)
    cycle = [step[i] + rho * pre[i] for i in (0, 1)]
    return {
        "policy": "continuous",
        "concurrency": d,
        "limited_by": why,
        "prefills_per_iteration": rho,
        "tokens_per_iteration": d,
        "iteration_s": _pair(lambda i: step[i]),
        "requests_per_s": _pair(lambda i: rho / cycle[i]),
        "output_tokens_per_s": _pair(lambda i: rho * G / cycle[i]),
        "ttft_s": _pair(lambda i: pre[i]),
        "tpot_s": _pair(lambda i: cycle[i]),
        "max_itl_s": _pair(lambda i: step[i] + math.ceil(rho) * pre[i]),
        "kv_mean_bytes": d * mean_held_bytes,
    }


def chunked(parts, r, max_seqs, steady, token_budget, mean_held_bytes):
    P, G = parts.new_tokens, parts.G
    budget = token_budget * (G - 1) / (P + G - 1)
    d, why = _limit((("--max-seqs", max_seqs), ("memory (mean cache held)", steady),
                     ("--max-batched-tokens", budget)))
    if d <= 0:
        return None
    rho = d / (G - 1)
    tokens = d + rho * P
    it = iteration.times(parts.mix(rho, d, tokens), r)
    chunks = math.ceil(P / (token_budget - d))
    chunk = iteration.times(parts.mix(1 / chunks, d, d + P / chunks), r)
    return {
        "policy": "chunked",
        "concurrency": d,
        "limited_by": why,
        "prefills_per_iteration": rho,
        "tokens_per_iteration": tokens,
        "iteration_s": _pair(lambda i: it[i]),
        "requests_per_s": _pair(lambda i: rho / it[i]),
        "output_tokens_per_s": _pair(lambda i: rho * G / it[i]),
        "ttft_s": _pair(lambda i: chunks * chunk[i]),
        "tpot_s": _pair(lambda i: it[i]),
        "max_itl_s": _pair(lambda i: chunk[i]),
        "prefill_iterations": chunks,
        "kv_mean_bytes": d * mean_held_bytes,
    }


def policies(parts, r, max_seqs, token_budget, concurrency, final_bytes):
    """The three policies side by side. `concurrency` is serving.concurrency's
    (guaranteed, steady, held sum, steps)."""
    if parts.G < 2:
        raise UserError("serve needs --output-len of at least 2 (one decode step)")
    guaranteed, steady, held_sum, steps = concurrency
    mean_held = held_sum / steps if steps else 0
    last = parts.P + parts.G - 2
    rows = [fixed(parts, r, max_seqs, guaranteed, final_bytes, last),
            continuous(parts, r, max_seqs, steady, token_budget, mean_held),
            chunked(parts, r, max_seqs, steady, token_budget, mean_held)]
    return [row if row is not None else {"policy": name, "refused": "not even one request fits in memory"}
            for name, row in zip(POLICIES, rows)]

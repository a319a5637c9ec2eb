"""A short deterministic replay of a few requests through one scheduler, iteration by
iteration, with declared step costs (the book's chapter-8 iteration-batching group).

Rules (stated in REPLAY_CONVENTION and applied in this order at every iteration boundary):

- admission: waiting requests that have arrived join in arrival order (strict FIFO: the head
  blocks the rest) while fewer than --max-seqs run and, with --kv-capacity, the KV reserved
  for every running request at its final length c(P + G - 1) still fits; `fixed` admits only
  when nothing runs (a batch leaves as a whole);
- composition: a request whose prompt is done decodes one token (history P + outputs - 1);
  `fixed` and `continuous` prefill a whole remaining prompt in one iteration; `chunked`
  serves the decodes first, then prompt chunks in admission order, each at most
  --chunk-tokens and all within --max-batched-tokens;
- time: step = base + per_token x new tokens + per_pair x causal query-key pairs (a part of n
  tokens after h cached ones has n h + n (n + 1) / 2), summed over the requests, one base per
  iteration;
- outputs: the iteration that finishes a prompt yields its first output, every decode one
  more; a request with G outputs leaves at the end of that iteration and frees its cache;
- KV: at each iteration's start every part's new rows are allocated; live KV = sum over
  running requests of c(rows held); its peak and its integral over time are reported.

Matrix FLOPs per request are the ledger's (prefill pass and G - 1 decode steps; chunks
conserve them, the head running once per prompt). All times are integers of ns.
"""

from ...errors import UserError
from . import iteration
from ...summation import plain_sum

REPLAY_CONVENTION = (
    "Replay (declared costs, integers of ns): admission at iteration boundaries, strict FIFO, "
    "while fewer than --max-seqs run and the KV reserved at every running request's final "
    "length P + G - 1 fits --kv-capacity (fixed: only when nothing runs); fixed and continuous "
    "prefill whole prompts, chunked serves decodes first then FIFO prompt chunks of at most "
    "--chunk-tokens within --max-batched-tokens; step = base + per-token x new tokens + per-pair x "
    "causal pairs (n h + n (n + 1) / 2 per part); the iteration finishing a prompt yields the first "
    "output, each decode one more; KV rows allocated at the step's start, a finished request's freed "
    "at its end. Matrix FLOPs per request from the ledger (chunks conserve them, the head once).")

REPLAY_POLICIES = ("fixed", "continuous", "chunked")


class Request:
    def __init__(self, index, arrival, prompt, output):
        self.id, self.arrival, self.P, self.G = f"r{index}", arrival, prompt, output
        self.admitted = self.done = None
        self.prefilled = self.outputs = 0
        self.times = []


def pairs(n, h):
    """Causal query-key pairs of n new tokens after h cached ones."""
    return n * h + n * (n + 1) // 2


def _admit(policy, waiting, running, t, max_seqs, reserve, capacity):
    if policy == "fixed" and running:
        return
    while waiting and waiting[0].arrival <= t and len(running) < max_seqs:
        head = waiting[0]
        if capacity is not None and plain_sum(reserve(r) for r in running) + reserve(head) > capacity:
            return
        head.admitted = t
        running.append(waiting.pop(0))


def _compose(policy, running, budget, chunk):
    """[(request, phase, new tokens, history)] of one iteration."""
    decodes = [(r, "decode", 1, r.P + r.outputs - 1) for r in running if r.prefilled == r.P]
    prompts = [r for r in running if r.prefilled < r.P]
    if policy != "chunked":
        parts = {id(r): (r, "decode", 1, h) for r, _, _, h in decodes}
        parts.update((id(r), (r, "prefill", r.P - r.prefilled, r.prefilled)) for r in prompts)
        return [parts[id(r)] for r in running]
    left = budget - len(decodes)
    out = list(decodes)
    for r in prompts:
        n = min(r.P - r.prefilled, chunk, left)
        if n <= 0:
            break
        out.append((r, "prefill", n, r.prefilled))
        left -= n
    return out


def replay(arch, w, requests, policy, max_seqs, budget, chunk, capacity, base_ns, token_ns, pair_ns):
    """The replay record: per step, per request and totals."""
    if policy not in REPLAY_POLICIES:
        raise UserError(f"unknown policy '{policy}'; choose from {', '.join(REPLAY_POLICIES)}")
    reqs = [Request(i, *spec) for i, spec in enumerate(requests)]
    waiting = sorted(reqs, key=lambda r: (r.arrival, int(r.id[1:])))
    running, steps, t = [], [], 0

    def c(n):
        return arch.kv_bytes(w.kv_dtype, n, w.mla)

    def reserve(r):
        return c(r.P + r.G - 1)

    for r in reqs:
        if capacity is not None and reserve(r) > capacity:
            raise UserError(f"request {r.id} alone reserves {reserve(r):,} B of KV, more than "
                            f"--kv-capacity {capacity:,} B: it can never be admitted")
    peak_live = peak_reserved = live_ns = 0
    while waiting or running:
        _admit(policy, waiting, running, t, max_seqs, reserve, capacity)
        if not running:
            t = max(t, waiting[0].arrival)
            continue
        parts = _compose(policy, running, budget, chunk)
        if not parts:
            raise UserError("--max-batched-tokens leaves no room for any token of the running requests")
        new = plain_sum(n for _, _, n, _ in parts)
        pair_count = plain_sum(pairs(n, h) for _, _, n, h in parts)
        duration = base_ns + token_ns * new + pair_ns * pair_count
        for r, phase, n, _ in parts:
            if phase == "prefill":
                r.prefilled += n
        decoding = {id(r) for r, phase, _, _ in parts if phase == "decode"}
        # rows held after this step's allocation: prompt tokens done, tokens decoded before it,
        # and the one it decodes
        live = plain_sum(c(r.prefilled + max(r.outputs - 1, 0) + (id(r) in decoding)) for r in running)
        reserved = plain_sum(reserve(r) for r in running)
        end = t + duration
        for r, phase, n, _ in parts:
            if phase == "decode" or r.prefilled == r.P:
                r.outputs += 1
                r.times.append(end)
        steps.append({"start_ns": t, "end_ns": end, "new_tokens": new, "causal_pairs": pair_count,
                      "kv_bytes": live, "parts": [f"{r.id}:{phase}:{n}" for r, phase, n, _ in parts]})
        peak_live, peak_reserved = max(peak_live, live), max(peak_reserved, reserved)
        live_ns += live * duration
        for r in [r for r in running if r.outputs == r.G]:
            r.done = end
            running.remove(r)
        t = end
    rows = []
    flops = {}
    for r in reqs:
        key = (r.P, r.G)
        if key not in flops:
            flops[key] = request_matrix_flops(arch, w, r.P, r.G)
        gaps = [b - a for a, b in zip(r.times, r.times[1:])]
        rows.append({"id": r.id, "arrival_ns": r.arrival, "prompt_tokens": r.P, "output_tokens": r.G,
                     "admitted_ns": r.admitted, "ttft_ns": r.times[0] - r.arrival, "finish_ns": r.done,
                     "max_itl_ns": max(gaps) if gaps else None, "matrix_flops": flops[key]})
    itls = [x["max_itl_ns"] for x in rows if x["max_itl_ns"] is not None]
    return {
        "policy": policy,
        "requests": len(reqs),
        "iterations": len(steps),
        "finish_ns": t,
        "total_output_tokens": plain_sum(r.G for r in reqs),
        "total_scheduled_tokens": plain_sum(s["new_tokens"] for s in steps),
        "total_matrix_flops": plain_sum(x["matrix_flops"] for x in rows),
        "peak_live_kv_bytes": peak_live,
        "peak_reserved_kv_bytes": peak_reserved,
        "live_kv_byte_ns": live_ns,
        "max_waiting_ns": max(r.admitted - r.arrival for r in reqs),
        "max_ttft_ns": max(x["ttft_ns"] for x in rows),
        "max_itl_ns": max(itls) if itls else None,
        "per_request": rows,
        "steps": steps,
    }


def request_matrix_flops(arch, w, prompt, output):
    """Matrix FLOPs of one request: its prefill pass and its G - 1 decode steps (batch 1, the
    steps summed in closed form)."""
    parts = iteration.Parts(arch, w, prompt, output)
    return iteration.totals(parts.prefill)[0] + iteration.totals(parts.decode)[0]

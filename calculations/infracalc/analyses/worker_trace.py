"""A short request trace on W workers, each serving one request at a time, with declared service
times (the book's chapter-3 paired-request traces). Integers of ns and bytes.

Request i arrives at a_i with P_i prompt and G_i output tokens and declared times: a prefill p_i
(giving the first output) and a decode d_i per further output, so its service is
s_i = p_i + (G_i - 1) d_i. Requests start in arrival order (strict FIFO: a later request never starts
before an earlier one), each at the first time t >= max(a_i, the previous start) when a worker is
free and, with a KV budget C, the reservations of the running requests plus its own fit in C (each
reserves its final length c (P + G - 1) from start to finish; c = KV bytes per token). A request that
finishes at t frees its worker and its KV at t. The free worker chosen is the one free the longest
(then the lowest index).

    wait_i = start_i - a_i,  TTFT_i = wait_i + p_i,  latency_i = start_i + s_i - a_i;
    p95 = the nearest-rank value: the ceil(0.95 n)-th smallest.

Live KV of a request: P c from its start, one more token's c at each decode step's start (G - 1
steps), all released at its finish; the peak is over these events (releases first at equal times),
the residency c [P p + d ((G - 1) P + G (G - 1) / 2)] byte-ns per request. Matrix FLOPs per request
are the ledger's: the prefill pass (batch 1, last-position head) and the G - 1 decode steps.
"""


def _p95(values):
    ordered = sorted(values)
    return ordered[-(-95 * len(ordered) // 100) - 1]


def _peak(events):
    """Largest running sum of (time, delta) events, releases before additions at one time."""
    level = peak = 0
    for _, delta in sorted(events):
        level += delta
        peak = max(peak, level)
    return peak


def fifo_workers(requests, workers, kv_per_token, capacity=None):
    """requests: [(arrival, P, G, prefill_ns, decode_ns)] -> per-request rows (input order)."""
    order = sorted(range(len(requests)), key=lambda i: (requests[i][0], i))
    free_at, started, rows, previous = [0] * workers, [], [None] * len(requests), 0
    for i in order:
        arrival, prompt, out, prefill, decode = requests[i]
        service, reserve = prefill + (out - 1) * decode, kv_per_token * (prompt + out - 1)
        t = max(arrival, previous)
        for c in sorted({t} | {f for f, _ in started if f > t}):
            held = [r for f, r in started if f > c]
            if len(held) < workers and (capacity is None or sum(held) + reserve <= capacity):
                break
        worker = min(range(workers), key=lambda w: (free_at[w], w) if free_at[w] <= c else (float("inf"), w))
        free_at[worker] = finish = c + service
        started.append((finish, reserve))
        previous = c
        rows[i] = {"request": i, "worker": worker, "arrival_ns": arrival, "prompt_tokens": prompt, "output_tokens": out,
                   "start_ns": c, "first_token_ns": c + prefill, "finish_ns": finish, "wait_ns": c - arrival,
                   "ttft_ns": c + prefill - arrival,
                   "latency_ns": finish - arrival, "final_kv_bytes": reserve}
    return rows


def kv_events(rows, requests, kv_per_token):
    """Live KV changes (time, bytes) of every request: its prompt at start, a token per decode step's start."""
    events = []
    for r, (_, prompt, out, prefill, decode) in zip(rows, requests):
        events.append((r["start_ns"], prompt * kv_per_token))
        events += [(r["start_ns"] + prefill + k * decode, kv_per_token) for k in range(out - 1)]
        events.append((r["finish_ns"], -r["final_kv_bytes"]))
    return events


def kv_residency(requests, kv_per_token):
    return sum(kv_per_token * (p * pre + d * ((g - 1) * p + g * (g - 1) // 2)) for _, p, g, pre, d in requests)


def worker_trace(requests, workers, kv_per_token, capacity=None, flops=None):
    """The trace record; flops: {(P, G): (prefill matrix FLOPs, decode matrix FLOPs)} from the ledger."""
    rows = fifo_workers(requests, workers, kv_per_token, capacity)
    n = len(rows)
    out = {
        "requests": n,
        "mean_prompt_tokens": sum(r["prompt_tokens"] for r in rows) / n,
        "mean_output_tokens": sum(r["output_tokens"] for r in rows) / n,
        "p95_prompt_tokens": _p95(r["prompt_tokens"] for r in rows),
        "p95_output_tokens": _p95(r["output_tokens"] for r in rows),
    }
    if flops is not None:
        for r in rows:
            r["prefill_matrix_flops"], r["decode_matrix_flops"] = flops[(r["prompt_tokens"], r["output_tokens"])]
        out["prefill_matrix_flops"] = sum(flops[(r["prompt_tokens"], r["output_tokens"])][0] for r in rows)
        out["decode_matrix_flops"] = sum(flops[(r["prompt_tokens"], r["output_tokens"])][1] for r in rows)
    out.update({
        "mean_wait_ns": sum(r["wait_ns"] for r in rows) / n,
        "p95_wait_ns": _p95(r["wait_ns"] for r in rows),
        "p95_ttft_ns": _p95(r["ttft_ns"] for r in rows),
        "p95_latency_ns": _p95(r["latency_ns"] for r in rows),
        "finish_ns": max(r["finish_ns"] for r in rows),
        "kv_bytes_per_token": kv_per_token,
        "kv_peak_bytes": _peak(kv_events(rows, requests, kv_per_token)),
        "kv_residency_byte_ns": kv_residency(requests, kv_per_token),
    })
    if capacity is not None:
        out["kv_reservation_peak_bytes"] = _peak([e for r in rows for e in ((r["start_ns"], r["final_kv_bytes"]),
                                                                             (r["finish_ns"], -r["final_kv_bytes"]))])
        out["kv_reservation_byte_ns"] = sum(r["final_kv_bytes"] * (r["finish_ns"] - r["start_ns"]) for r in rows)
    out["per_request"] = rows
    return out


TRACE_CONVENTIONS = [
    "Declared service times (integers of ns): a request's service is its prefill (first output) + (G - 1) "
    "decodes. Strict FIFO in arrival order (input order on ties) over W workers, each serving one request to "
    "completion (no batching or preemption); with --kv-capacity a request also waits until the running "
    "requests' reservations c (P + G - 1) plus its own fit. A finished request frees its worker and KV at its "
    "finish; the worker free the longest is chosen.",
    "Live KV: P tokens from the start, one more at each decode step's start, released at the finish (the peak "
    "takes releases first at equal times); residency = c [P prefill + decode ((G - 1) P + G (G - 1) / 2)] "
    "byte-ns. p95 is the nearest-rank value. Matrix FLOPs per request from the ledger (prefill, batch 1, last "
    "head; G - 1 decode steps), independent of the declared times.",
]

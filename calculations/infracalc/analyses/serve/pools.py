"""Prefill/decode disaggregation: pools of workers, their rates, the KV handoff.

A worker is one model replica (one device, or a group) with two rates: the
prompt tokens per second it prefills and the decode calls (one token of one
request) per second it serves. A request of P prompt tokens, C of them found in
a prefix cache, and G output tokens needs P - C new prefill tokens and G - 1
decode calls (the prefill yields the first token), and hands its whole prompt's
cache, c(P) bytes (`Architecture.kv_bytes` of P tokens: what `kv` counts per
request at that context), from the prefill to the decode worker; with G = 1 no
decode call or handoff is needed.

Each worker is given to the prefill (P) or the decode (D) pool; rates within a
pool add (ideal load balance), so a split sustains at most

    min( sum_P prefill rate / (P - C),  sum_D decode rate / (G - 1),  network / c(P) )

requests/s (the network: one shared one-way link carrying every handoff).
Every split of the given workers is enumerated (types in the given order, the
prefill count of each from 0 up); the best is the first with the highest
bound. Co-located, a worker does both phases of its requests one after the
other, so it serves 1 / ((P - C) / prefill rate + (G - 1) / decode rate)
requests/s, and co-located workers add. These are steady-state capacity
bounds for the given rates: no queueing, no SLO, no interference between
co-located phases (the book's chapter-9 convention, its `pd-pool` group).

Rates are exact rationals when declared (Fraction in, Fraction out); from the
ledger they are the `serve` estimates of one device type (floats).
"""

import itertools
from fractions import Fraction

from ...errors import UserError
from ...record import Record
from ...summation import plain_sum

PD_CONVENTION = (
    "PD pools: a request needs P - C new prefill tokens (C cached), G - 1 decode calls and a "
    "handoff of its prompt's cache c(P); a split of the workers into a prefill and a decode pool "
    "sustains min(sum prefill tokens/s / (P - C), sum decode calls/s / (G - 1), network bytes/s / "
    "c(P)) requests/s (rates add within a pool); co-located, a worker serves 1 / ((P - C) / prefill "
    "rate + (G - 1) / decode rate); every split is enumerated, the first best kept; steady-state "
    "capacity, no queueing or SLO (the book's pd-pool convention).")


class Worker(Record):
    """A worker type: how many, and its two rates (prefill tokens/s, decode calls/s)."""
    name: str
    count: int
    prefill_tokens_per_s: object   # Fraction or float
    decode_tokens_per_s: object


def _div(a, b):
    """a / b, exact for Fractions and ints."""
    if isinstance(a, int) and isinstance(b, int):
        return Fraction(a, b)
    return a / b


def pool_rates(workers, prefill, new_tokens, decode_calls):
    """(prefill pool requests/s, decode pool requests/s) for prefill counts `prefill`."""
    p = plain_sum(_div(n * w.prefill_tokens_per_s, new_tokens) for n, w in zip(prefill, workers)) if new_tokens else None
    d = (plain_sum(_div((w.count - n) * w.decode_tokens_per_s, decode_calls) for n, w in zip(prefill, workers))
         if decode_calls else None)
    return p, d


def colocated(workers, new_tokens, decode_calls):
    """Requests/s of every worker doing both phases: sum count / (seconds of P work + of D work)."""
    total = 0
    for w in workers:
        seconds = ((_div(new_tokens, w.prefill_tokens_per_s) if new_tokens else 0)
                   + (_div(decode_calls, w.decode_tokens_per_s) if decode_calls else 0))
        total += _div(w.count, 1) / seconds if seconds else 0
    return total


def assignments(workers, new_tokens, decode_calls, network_rate=None):
    """Every split (prefill counts per type), with each pool's rate, the bound and what limits it."""
    rows = []
    for prefill in itertools.product(*(range(w.count + 1) for w in workers)):
        p, d = pool_rates(workers, prefill, new_tokens, decode_calls)
        limits = [(name, v) for name, v in (("prefill", p), ("decode", d), ("network", network_rate))
                  if v is not None]
        bound = min(v for _, v in limits)
        rows.append({"prefill_workers": dict(zip((w.name for w in workers), prefill)),
                     "decode_workers": {w.name: w.count - n for w, n in zip(workers, prefill)},
                     "prefill_requests_per_s": p, "decode_requests_per_s": d, "bound_requests_per_s": bound,
                     "limited_by": [name for name, v in limits if v == bound]})
    return rows


def best(rows):
    """The first split with the highest bound (ties: the enumeration's order)."""
    top = max(r["bound_requests_per_s"] for r in rows)
    return next(r for r in rows if r["bound_requests_per_s"] == top)


def exact(x):
    """A rational as 'p/q' (or 'p'), for the JSON beside its float."""
    if isinstance(x, Fraction):
        return str(x) if x.denominator != 1 else str(x.numerator)
    return None


def pd_record(workers, prompt_tokens, output_tokens, cached_tokens, handoff_bytes, network_bytes_per_s,
              arrival=None):
    """The pool-split record: every split, the best, co-located beside it."""
    if cached_tokens > prompt_tokens:
        raise UserError(f"--cached-prefix {cached_tokens} exceeds the prompt of {prompt_tokens} tokens")
    new_tokens, calls = prompt_tokens - cached_tokens, output_tokens - 1
    handoff = handoff_bytes if calls else 0
    network = _div(network_bytes_per_s, handoff) if network_bytes_per_s and handoff else None
    if not new_tokens and not calls:
        raise UserError("nothing to serve: every prompt token is cached and there is no decode call")
    rows = assignments(workers, new_tokens, calls, network)
    top = best(rows)
    co = colocated(workers, new_tokens, calls)
    rec = {
        "new_prefill_tokens_per_request": new_tokens,
        "decode_calls_per_request": calls,
        "handoff_bytes_per_request": handoff,
        "network_requests_per_s": network,
        "assignments": len(rows),
        "best": top,
        "best_requests_per_s": top["bound_requests_per_s"],
        "colocated_requests_per_s": co,
        "pd_to_colocated": _div(top["bound_requests_per_s"], co) if co else None,
        "workers": [{"name": w.name, "count": w.count, "prefill_tokens_per_s": w.prefill_tokens_per_s,
                     "decode_tokens_per_s": w.decode_tokens_per_s,
                     "prefill_s_per_request": _div(new_tokens, w.prefill_tokens_per_s) if new_tokens else 0,
                     "decode_s_per_request": _div(calls, w.decode_tokens_per_s) if calls else 0,
                     "colocated_requests_per_s": colocated([w.replace(count=1)], new_tokens, calls)}
                    for w in workers],
        "splits": rows,
    }
    if arrival is not None:
        rec["arrival_requests_per_s"] = arrival
        rec["arrival_below_best_pd"] = arrival < top["bound_requests_per_s"]
        rec["arrival_below_colocated"] = arrival < co
    return rec


def pool_sizes(rate, prefill_rate, decode_rate):
    """Workers each pool needs for `rate` requests/s: ceil(rate / a worker's requests/s)."""
    import math

    return math.ceil(rate / prefill_rate), math.ceil(rate / decode_rate)


def jsonable(value):
    """A record with every Fraction as a float, and beside each one `<key>_exact`: 'p/q'."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out[k] = jsonable(v)
            if isinstance(v, Fraction):
                out[f"{k}_exact"] = exact(v)
        return out
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return float(value) if isinstance(value, Fraction) else value

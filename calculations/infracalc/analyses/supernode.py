"""One burst of requests on a fixed set of C cards organised as TP t x R = C / t serving replicas, with
declared stage times, one declared fault, an SLO and a declared card price (the book's chapter-6
experiment 6-10, "is one large supernode cheaper than several small ones?"). Integers of ns, bytes and
FLOPs; costs as exact fractions.

Requests i = 0..N-1 all arrive at 0 and go to replica i mod R; a replica serves its queue in order, one
request at a time (no batching). A request is a prefill (first output) then G - 1 decode steps, each a
stage of declared time (per candidate). One fault at time F (optional) takes down replica 0 (the one
holding card 0) for a declared recovery time Rec:

- the attempt running on replica 0 at F is aborted when start < F < its end (a completion at exactly F
  commits first); its stages that ended by F are abandoned completed work (their matrix FLOPs are
  reported), a stage cut inside is partial (its work unknown, never prorated); the request restarts
  from scratch at F + Rec (no KV or tokens kept);
- an attempt of replica 0 that would start at or after F waits until F + Rec instead (the fault hits an
  idle replica); a replica 0 whose queue is done by F never sees the fault.

Latency of a request = its completion (arrival 0); valid when latency <= the deadline D. With a minimum
valid fraction m, the cohort needs ceil(m N) valid requests. Cost: the whole C cards are reserved until
the last completion T (idle, failed and recovery time included): C x T x price per card-second, plus a
declared recovery fee when the fault was used. A candidate is eligible when every card fits (weights of
its TP rank + the KV of one request at P + G - 1 tokens + a workspace <= the card's memory) and it has
ceil(m N) valid requests; the winners are the eligible candidates of least cost per valid request
(ties kept; none when no candidate is eligible).

Worked case: N = 2 on one replica, stages 20, 6, 6 ms, F = 26 ms, Rec = 10 ms: request 0 runs
0-20-26 and is aborted at 26 (its first decode ends at F, not final: 2 stages abandoned), restarts at
36 and completes at 68; request 1 runs 68-100. On C = 8 cards at 1 per card-second: 8 x 0.1 = 4/5.
"""

from fractions import Fraction

from ..splits import ceil_div


def replica_queue(requests, replica, replicas):
    """The requests replica `replica` serves, in order (static round-robin)."""
    return list(range(replica, requests, replicas))


def serve_queue(queue, stage_ns, fault_ns=None, recovery_ns=0):
    """(completions [(request, completion, attempts)], attempts rows, fault used) of one replica serving
    `queue` back to back with stages of `stage_ns`, under a fault at `fault_ns` (None: never)."""
    now, pending, done, rows = 0, fault_ns is not None, [], []
    ends = [sum(stage_ns[:k + 1]) for k in range(len(stage_ns))]
    used = False
    for request in queue:
        attempt = 0
        while True:
            if pending and now >= fault_ns:   # the fault hits the idle replica
                now, pending, used = max(now, fault_ns + recovery_ns), False, True
            start = now
            finish = start + ends[-1]
            if pending and start < fault_ns < finish:
                completed = sum(1 for e in ends if start + e <= fault_ns)
                cut = start + ends[completed - 1] if completed else start
                rows.append({"request": request, "attempt": attempt, "start_ns": start, "end_ns": fault_ns,
                             "aborted": True, "completed_stages": completed,
                             "partial_stage_elapsed_ns": fault_ns - cut if fault_ns > cut else None})
                now, pending, used, attempt = fault_ns + recovery_ns, False, True, attempt + 1
                continue
            rows.append({"request": request, "attempt": attempt, "start_ns": start, "end_ns": finish,
                         "aborted": False, "completed_stages": len(stage_ns), "partial_stage_elapsed_ns": None})
            done.append((request, finish, attempt + 1))
            now = finish
            break
    return done, rows, used


def required_valid(requests, fraction):
    """ceil(m N): the valid requests a cohort of N needs at minimum valid fraction m."""
    return ceil_div(requests * fraction.numerator, fraction.denominator)


def candidate_schedule(*, requests, replicas, stage_ns, fault_ns, recovery_ns):
    """Every replica's queue served; the fault belongs to replica 0. Replicas past the N-th serve
    nothing (round-robin), so only min(R, N) queues are walked: the cost grows with the requests,
    not with the cards."""
    per_request, attempts, used = [], [], False
    for r in range(min(replicas, requests)):
        done, rows, hit = serve_queue(replica_queue(requests, r, replicas), stage_ns,
                                      fault_ns if r == 0 else None, recovery_ns)
        per_request += [{"request": q, "replica": r, "completion_ns": t, "attempts": a} for q, t, a in done]
        attempts += [dict(row, replica=r) for row in rows]
        used = used or hit
    per_request.sort(key=lambda row: row["request"])
    return per_request, attempts, used


def cost(*, cards, finish_ns, price_per_card_second, fault_used, recovery_fee):
    """(reservation, total): C x T x price (T in seconds) and + the fee when the fault was used."""
    reservation = cards * Fraction(finish_ns, 10**9) * price_per_card_second
    return reservation, reservation + (recovery_fee if fault_used else 0)


def _text(value):
    return None if value is None else str(value)


def supernode(*, cards, requests, deadline_ns, stage_flops, candidates, fault_ns, recovery_ns, recovery_fee,
              price_per_card_second, min_valid_fraction):
    """candidates: [{tp, stage_ns, weight_bytes, kv_bytes, workspace_bytes, memory_bytes}] (per card);
    stage_flops: [(stage name, matrix FLOPs)] of one request, prefill first."""
    required = required_valid(requests, min_valid_fraction)
    rows, per_request, attempts = [], [], []
    for c in candidates:
        name = f"tp{c['tp']}-replicas{cards // c['tp']}"
        resident = c["weight_bytes"] + c["kv_bytes"] + c["workspace_bytes"]
        row = {"candidate": name, "tp": c["tp"], "replicas": cards // c["tp"],
               "prefill_ns": c["stage_ns"][0], "decode_ns": c["stage_ns"][1] if len(c["stage_ns"]) > 1 else None,
               "weight_bytes_per_card": c["weight_bytes"], "kv_bytes_per_card": c["kv_bytes"],
               "workspace_bytes_per_card": c["workspace_bytes"], "resident_bytes_per_card": resident,
               "fits": resident <= c["memory_bytes"]}
        if row["fits"]:
            done, tried, used = candidate_schedule(requests=requests, replicas=row["replicas"],
                                                   stage_ns=c["stage_ns"], fault_ns=fault_ns, recovery_ns=recovery_ns)
            finish = max(d["completion_ns"] for d in done)
            valid = sum(d["completion_ns"] <= deadline_ns for d in done)
            reservation, total = cost(cards=cards, finish_ns=finish, price_per_card_second=price_per_card_second,
                                      fault_used=used, recovery_fee=recovery_fee)
            abandoned = sum(sum(f for _, f in stage_flops[:a["completed_stages"]]) for a in tried if a["aborted"])
            row.update({"finish_ns": finish, "valid_requests": valid, "fault_used": used,
                        "reservation_cost": str(reservation), "recovery_fee_charged": str(recovery_fee if used else 0),
                        "total_cost": str(total), "cost_per_valid_request": _text(total / valid if valid else None),
                        "eligible": valid >= required, "abandoned_completed_matrix_flops": abandoned,
                        "abandoned_partial_stage_work_unknown": any(a["partial_stage_elapsed_ns"] is not None
                                                                    for a in tried)})
            per_request += [dict({"candidate": name}, **d) for d in done]
            attempts += [{"candidate": name, "request": a["request"], "replica": a["replica"], "attempt": a["attempt"],
                          "start_ns": a["start_ns"], "end_ns": a["end_ns"], "aborted": a["aborted"],
                          "completed_stages": a["completed_stages"],
                          "partial_stage_elapsed_ns": a["partial_stage_elapsed_ns"],
                          "completed_matrix_flops": sum(f for _, f in stage_flops[:a["completed_stages"]])}
                         for a in tried]
        else:
            row.update({"finish_ns": None, "valid_requests": None, "fault_used": None, "reservation_cost": None,
                        "recovery_fee_charged": None, "total_cost": None, "cost_per_valid_request": None,
                        "eligible": False, "abandoned_completed_matrix_flops": None,
                        "abandoned_partial_stage_work_unknown": None})
        rows.append(row)
    eligible = [r for r in rows if r["eligible"]]
    best = min((Fraction(r["cost_per_valid_request"]) for r in eligible), default=None)
    return {"cards": cards, "requests": requests, "deadline_ns": deadline_ns,
            "required_valid_requests": required,
            "request_matrix_flops": sum(f for _, f in stage_flops),
            "eligible": [r["candidate"] for r in eligible],
            "min_cost_per_valid_request": _text(best),
            "winners": [r["candidate"] for r in eligible if Fraction(r["cost_per_valid_request"]) == best],
            "stages": [{"stage": s, "matrix_flops": f} for s, f in stage_flops],
            "candidates": rows, "per_request": per_request, "attempts": attempts}


SUPERNODE_CONVENTIONS = [
    "Declared teaching inputs: stage times, the fault, the recovery time and fee, the card price; none is "
    "derived from FLOPs or peaks. N requests arrive at 0 and go round-robin to R = C / t replicas of TP t, "
    "each serving one request at a time: a prefill then G - 1 decode steps. Matrix FLOPs per stage are the "
    "ledger's (prefill batch 1 with the last-position head; decode step k at P + k - 1 tokens of history).",
    "One fault at F takes down replica 0 (it holds card 0) for the recovery time: its running attempt "
    "(start < F < end; a completion at F commits first) restarts from scratch after the recovery, its "
    "completed stages abandoned (FLOPs reported) and a stage cut inside of unknown work; an idle replica 0 "
    "starts its next request after the recovery. Other replicas are untouched.",
    "Valid: completion <= the deadline (arrival 0). Eligible: every card fits (TP rank weights + one "
    "request's KV at P + G - 1 tokens + workspace <= card memory) and at least ceil(m N) are valid. Cost = "
    "C x last completion x price per card-second (all cards reserved, idle and recovery included) + the "
    "recovery fee when the fault was used; winners: least cost per valid request among the eligible, ties kept.",
]

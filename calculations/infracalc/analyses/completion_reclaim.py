"""Finite credits held from submission until the completion is consumed by a periodic poll (the book's
chapter-7 completion-credit example). Declared times in integer ns.

n operations are offered at i tau (tau the minimum submit interval); each needs one of S slots
(credits), taken earliest-free first (ties: the lowest slot). A slot covers the transfer in flight
and the completion not yet consumed, and is free again when the completion is consumed:

    submit_i   = max(i tau, submit_{i-1} + tau, free time of the slot taken),
    complete_i = submit_i + L                          (L the fixed transfer latency),
    consume_i  = the first poll k P (k >= 1) at or after complete_i that is not before consume_{i-1}
                 and has consumed fewer than b completions (FIFO; polls are instantaneous).

A slot freed by a poll can be used by a submission at the same instant. Peaks are over half-open
lifetimes (releases before allocations at equal times): outstanding [submit, consume), in flight
[submit, complete), unconsumed completions [complete, consume). Waits: submission delay
submit_i - i tau, reclaim wait consume_i - complete_i (summed, they are operation time, not wall
clock). With a model, each operation carries BF16 [tokens, hidden] bytes; S slots reserve S of them.
"""

import heapq

from .training_pipeline import peak


def _poll_at_or_after(t, period):
    return max(period, -(-t // period) * period)


def completion_reclaim(*, operations, slots, submit_interval_ns, latency_ns, poll_interval_ns, poll_batch,
                       entry_bytes=64, payload_bytes=None):
    free = [(0, s) for s in range(slots)]
    last_submit, last_poll, used = -submit_interval_ns, 0, 0
    rows = []
    for i in range(operations):
        slot_free, slot = heapq.heappop(free)
        offered = i * submit_interval_ns
        submit = max(offered, slot_free, last_submit + submit_interval_ns)
        complete = submit + latency_ns
        consume = max(_poll_at_or_after(complete, poll_interval_ns), last_poll)
        if consume > last_poll:
            used = 0
        elif used == poll_batch:
            consume, used = consume + poll_interval_ns, 0
        used, last_poll, last_submit = used + 1, consume, submit
        heapq.heappush(free, (consume, slot))
        rows.append({"operation": i, "slot": slot, "offered_ns": offered, "submit_ns": submit, "complete_ns": complete,
                     "consumed_ns": consume, "submission_delay_ns": submit - offered, "reclaim_wait_ns": consume - complete})
    lives = {name: [(r[a], r[b], 1) for r in rows] for name, a, b in
             (("outstanding", "submit_ns", "consumed_ns"), ("in_flight", "submit_ns", "complete_ns"),
              ("unconsumed", "complete_ns", "consumed_ns"))}
    out = {}
    if payload_bytes is not None:
        out.update(payload_bytes_per_operation=payload_bytes, total_payload_bytes=payload_bytes * operations,
                   reserved_slot_payload_bytes=payload_bytes * slots)
    unconsumed = peak(lives["unconsumed"])[0]
    out.update(peak_outstanding=peak(lives["outstanding"])[0], peak_in_flight=peak(lives["in_flight"])[0],
               peak_unconsumed_completions=unconsumed, peak_retained_completion_bytes=unconsumed * entry_bytes,
               last_submit_ns=rows[-1]["submit_ns"], all_transfers_complete_ns=rows[-1]["complete_ns"],
               all_slots_reclaimed_ns=rows[-1]["consumed_ns"],
               total_submission_delay_ns=sum(r["submission_delay_ns"] for r in rows),
               total_reclaim_wait_ns=sum(r["reclaim_wait_ns"] for r in rows),
               max_submission_delay_ns=max(r["submission_delay_ns"] for r in rows), operations=rows)
    return out


COMPLETION_CONVENTIONS = [
    "One credit (slot) covers an operation from submission through the transfer and until its completion is "
    "consumed; a poll every P ns (the first at P) consumes at most b completions in FIFO order, instantly. Fixed "
    "latency, so completions arrive in submission order; transfers run in parallel (no shared bandwidth, no "
    "separate completion-queue capacity, no loss).",
    "Peaks are over half-open lifetimes, releases first at equal times; the summed waits are operation time, not "
    "wall clock. Intervals, latency, poll period and batch, and the 64-byte completion entry are declared "
    "teaching inputs, not a NIC's or queue pair's figures.",
]

"""A FIFO generation pipeline over P stages with declared stage, link and feedback times, and the
boundary buffers its activations occupy (the book's chapter-6 pipeline example). Integer ns.

G groups of r requests each take `steps` decode steps (one token per request per step). Jobs run in
one fixed order, step-major then group, identical at every stage and link; stages and boundary
links are independent serial resources. Job (s, g), from ready = when group g may start step s
(0 at s = 0, else its previous completion + the feedback lag):

    stage k:   start = max(input available, stage k free [, a free sender slot of boundary k]),
               end   = start + d_k,
    link k:    send start = max(end, link k free [, a free receiver slot of boundary k]),
               send end   = send start + t_k  = the input available at stage k + 1,
    completion = the last stage's end;  ready of step s + 1 = completion + feedback.

One activation is BF16 [r, hidden] = 2 r hidden bytes. Its sender buffer lives from the producer's
end (unbounded buffers), or from the producer's start when slots are finite (reserved before the
compute), to the send end; its receiver buffer from the send start to the consumer's end. With
finite slots, each boundary has that many sender and that many receiver slots, each taken earliest
free first and free again at its release (the producer or the transfer waits for one). Peaks are of
half-open lifetimes, releases first at equal times; reserved pool = 2 x boundaries x slots x size.
"""

import heapq

from .training_pipeline import peak


def fifo_pipeline(*, stage_ns, transfer_ns, groups, steps, feedback_ns, activation_bytes, slots=None):
    p, links = len(stage_ns), len(transfer_ns)
    stage_free, link_free, ready = [0] * p, [0] * links, [0] * groups
    used = min(slots or 0, steps * groups)   # a link moves steps x groups tensors: the other slots stay free
    senders = [[(0, s) for s in range(used)] for _ in range(links)]
    receivers = [[(0, s) for s in range(used)] for _ in range(links)]
    sender_life, receiver_life = [[] for _ in range(links)], [[] for _ in range(links)]
    completions = [[] for _ in range(groups)]
    ops, sender_wait, receiver_wait, transfers = [], 0, 0, 0
    for step in range(steps):
        for g in range(groups):
            available, incoming = ready[g], None
            for k, d in enumerate(stage_ns):
                base = max(available, stage_free[k])
                slot_free, slot = heapq.heappop(senders[k]) if slots and k < links else (0, None)
                start = max(base, slot_free)
                end = start + d
                sender_wait += start - base
                stage_free[k] = end
                ops.append({"step": step, "group": g, "stage": k, "ready_ns": available, "start_ns": start, "end_ns": end})
                if incoming is not None:
                    send_start, receiver_slot = incoming
                    receiver_life[k - 1].append((send_start, end, activation_bytes))
                    if slots:
                        heapq.heappush(receivers[k - 1], (end, receiver_slot))
                if k < links:
                    base_send = max(end, link_free[k])
                    free_at, receiver_slot = heapq.heappop(receivers[k]) if slots else (0, None)
                    send_start = max(base_send, free_at)
                    send_end = send_start + transfer_ns[k]
                    receiver_wait += send_start - base_send
                    sender_life[k].append((start if slots else end, send_end, activation_bytes))
                    if slots:
                        heapq.heappush(senders[k], (send_end, slot))
                    link_free[k], available, incoming = send_end, send_end, (send_start, receiver_slot)
                    transfers += 1
            completions[g].append(end)
            ready[g] = end + feedback_ns
    finish, jobs = max(c[-1] for c in completions), groups * steps
    gaps = [b - a for c in completions for a, b in zip(c, c[1:])]
    return {
        "activation_bytes": activation_bytes, "jobs": jobs, "finish_ns": finish,
        "first_completion_ns": min(c[0] for c in completions),
        "last_first_step_completion_ns": max(c[0] for c in completions),
        "max_inter_step_completion_ns": max(gaps) if gaps else None,
        "sender_buffer_wait_ns": sender_wait, "receiver_buffer_wait_ns": receiver_wait,
        "transfer_payload_bytes": transfers * activation_bytes,
        "reserved_boundary_pool_bytes": None if slots is None else 2 * links * slots * activation_bytes,
        "boundary_buffer_peak_bytes": peak([x for life in sender_life + receiver_life for x in life])[0],
        "boundaries": [{"boundary": k, "sender_peak_bytes": peak(sender_life[k])[0],
                        "receiver_peak_bytes": peak(receiver_life[k])[0],
                        "joint_peak_bytes": peak(sender_life[k] + receiver_life[k])[0]} for k in range(links)],
        "stages": [{"stage": k, "busy_ns": jobs * d, "idle_ns": finish - jobs * d} for k, d in enumerate(stage_ns)],
        "completions_ns": [{"group": g, "steps_ns": c} for g, c in enumerate(completions)],
        "operations": ops,
    }


FIFO_PIPELINE_CONVENTIONS = [
    "Declared stage, link and feedback times (not from FLOPs or peaks): one fixed FIFO job order, step-major then "
    "group, at every stage and link; stages and links are independent serial resources, compute and transfers "
    "overlap. A group's next step waits for its completion plus the feedback lag (no feedback resource). Not an "
    "optimal schedule; no prefill, so the first completion is not a time to first token.",
    "Boundary buffers hold BF16 [requests, hidden] activations (TP 1): the sender's from production (or, with "
    "finite slots, from the producer's start) to the send end, the receiver's from the send start to the "
    "consumer's end; finite slots constrain each boundary's sender and receiver pools apart. Peaks exclude "
    "weights, KV, intra-stage activations and scratch; summed buffer waits overlap and do not add to the finish.",
]

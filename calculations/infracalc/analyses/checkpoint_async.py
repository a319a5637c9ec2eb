"""Asynchronous checkpoints with finite snapshot buffers (`budget async-checkpoint`): when each
snapshot is captured, staged, uploaded and durable, the training pauses, and the latest snapshot a
failure can recover (the book's chapter-10 asynchronous-checkpoint timeline).

Save requests arrive at r_i = first + i x interval (i = 0 .. n-1), first in, first out, never
merged. A snapshot needs a free buffer slot (B slots; the earliest-freed, lowest-numbered first)
and the one staging path; training pauses from the request until staging ends:

    capture_i = max(r_i, staging free, slot free),   staged_i = capture_i + staging,   delay_i = capture_i - r_i
    upload_i  = [max(staged_i, writer free), + payload / upload bandwidth)   (one background writer)
    durable_i = upload end + durability delay;   the slot is held [capture_i, upload end)

The pause is the union of [r_i, staged_i); a failure at time f recovers the latest snapshot with
durable_i <= f (a durable event at f counts), losing f - capture_i of wall clock. The payload is
the model's 14 B per parameter (BF16 weights, FP32 master, Adam m and v; always reported as the
reference payload) or a declared size.
Declared teaching times and rates; exact rational seconds.
"""

from fractions import Fraction

from .training_pipeline import peak


def async_checkpoint(*, parameters, payload=None, snapshots, first, interval, staging, bandwidth, slots,
                     durability=0, failure):
    size = 14 * parameters if payload is None else payload
    service = Fraction(size, bandwidth)
    free = [Fraction(0)] * min(slots, snapshots)   # one buffer per snapshot at most: the others stay free
    stage_free = writer_free = Fraction(0)
    rows, held, pauses = [], [], []
    for i in range(snapshots):
        requested = first + i * interval
        slot = min(range(len(free)), key=lambda s: (free[s], s))
        capture = max(requested, stage_free, free[slot])
        staged = capture + staging
        start = max(staged, writer_free)
        end = start + service
        stage_free, writer_free, free[slot] = staged, end, end
        held.append((capture, end, size))
        pauses.append((requested, staged))
        rows.append({"snapshot": i, "slot": slot, **{k: str(v) for k, v in (
            ("requested_s", requested), ("capture_s", capture), ("staged_s", staged), ("upload_start_s", start),
            ("upload_end_s", end), ("durable_s", end + durability), ("capture_delay_s", capture - requested))}})
    union = []
    for a, b in pauses:
        if union and a <= union[-1][1]:
            union[-1] = (union[-1][0], max(b, union[-1][1]))
        else:
            union.append((a, b))
    done = [r for r in rows if Fraction(r["durable_s"]) <= failure]
    latest = max(done, key=lambda r: Fraction(r["capture_s"])) if done else None
    return {
        "parameters": parameters, "reference_payload_bytes": 14 * parameters, "payload_bytes": size,
        "payload_is_declared": payload is not None,
        "upload_s_exact": str(service), "requested_bytes_per_s_exact": str(Fraction(size) / interval),
        "upload_utilization_exact": str(service / interval), "upload_has_slack": service < interval,
        "staging_has_slack": staging < interval, "reserved_buffer_bytes": slots * size,
        "live_buffer_peak_bytes": peak(held)[0],
        "training_pause_s_exact": str(sum((b - a for a, b in union), Fraction(0))),
        "final_durable_s_exact": rows[-1]["durable_s"], "durable_at_failure": len(done),
        "latest_recoverable_snapshot": None if latest is None else latest["snapshot"],
        "recovery_capture_s_exact": None if latest is None else latest["capture_s"],
        "rollback_s_exact": None if latest is None else str(failure - Fraction(latest["capture_s"])),
        "live_buffers_at_failure": sum(a <= failure < b for a, b, _ in held),
        "snapshots": rows, "pauses": [{"start_s": str(a), "end_s": str(b)} for a, b in union],
    }


ASYNC_CHECKPOINT_CONVENTIONS = [
    "Requests at first + i x interval, FIFO, never merged; a snapshot waits for a free buffer slot (earliest freed, "
    "lowest numbered) and the one staging path; training pauses from the request until staging ends (the union of "
    "the pauses is reported); one background writer uploads payload / bandwidth; a slot is held from capture to the "
    "upload's end; durable = upload end + a declared delay.",
    "A failure at f recovers the latest snapshot durable at or before f, losing f - its capture time of wall clock "
    "(not lost work); payload = 14 B per parameter (BF16 weights, FP32 master, m, v) or declared. Teaching times.",
]

"""Producer-consumer handoffs through a finite number of buffer slots (the book's chapter-5 FIFO and
host-transfer examples). Every time is a declared teaching input; the schedules are exact.

FIFO in ticks (a consumer takes at the start of a tick, a producer publishes at its end, so a block
is readable from the tick after it is published; a take frees its slot in the same tick). Block i
is published at p_0 = first produce, p_i = p_(i-1) + produce interval, but with S slots not before
block i - S has been taken: p_i >= c_(i-S). It is taken at c_0 = first consume,
c_i = c_(i-1) + consume interval, and never before p_i + 1. Slots needed by the unbounded schedule =
the peak of published and not yet taken blocks (takes before publications within a tick); a
block is rows x head_dim BF16 values. Reorder (layout conversion) slots are reserved apart:

    required bytes = peak slots x block bytes + reorder slots x block bytes
    slots the budget leaves the FIFO = floor((budget - reorder bytes) / block bytes)

Host prepare -> host-to-device copy -> device consume of n blocks, one serial path per stage. A
block takes the host slot freed earliest (from its preparation's start to its copy's end) and the
device slot freed earliest (from its copy's start to its consumption's end), lower slot first on
a tie:

    prepare: max(preparer free, host slot free) + P
    copy:    max(prepared, copy engine free, device slot free) + bytes / bandwidth
    consume: max(copied, consumer free) + C

against serial n (P + X + C) and unbounded h + X + C + (n - 1) max(P, X, C).
"""

import heapq
from fractions import Fraction

from .persistent_tiles import live_peak
from .runtime_choices import exact

SLOT_CONVENTIONS = [
    "Declared teaching times (ticks, nanoseconds, bytes/s), not a device's cycles or measurements; exact "
    "fractions. Finite slots between a producer and a consumer; a slot is freed the moment its block is taken "
    "and reused at once. No copy-engine limits, contention or launch costs are modelled.",
]

FIFO_CONVENTIONS = SLOT_CONVENTIONS + [
    "FIFO in ticks: takes at the start of a tick, publications at its end (readable from the next tick); a "
    "full FIFO stalls the producer until block i - S is taken, and its later publications follow at the "
    "produce interval from there; takes keep the consume interval. Block = rows x head_dim BF16 values; "
    "reorder slots are reserved apart; no slot left after them = no bounded schedule (not a proof of deadlock).",
]

HOST_TRANSFER_CONVENTIONS = SLOT_CONVENTIONS + [
    "Host prepare, host-to-device copy and device consume each run one block at a time; a block holds a host "
    "slot from its preparation's start to its copy's end and a device slot from its copy's start to its "
    "consumption's end, taking the slot freed earliest. Block = tokens x hidden BF16 activations.",
]


def fifo(blocks, first_produce, produce_interval, first_consume, consume_interval, slots=None):
    produced, taken = [], []
    for i in range(blocks):
        p = first_produce if i == 0 else produced[-1] + produce_interval
        if slots is not None and i >= slots:
            p = max(p, taken[i - slots])
        c = first_consume if i == 0 else taken[-1] + consume_interval
        produced.append(p)
        taken.append(max(c, p + 1))
    events = sorted([(t, -1) for t in taken] + [(t, 1) for t in produced])
    live = peak = 0
    for _, change in events:
        live += change
        peak = max(peak, live)
    return {"publish_ticks": produced, "take_ticks": taken, "peak_slots": peak, "last_take_tick": taken[-1]}


def stream_buffer(*, block_bytes, blocks, first_produce, produce_interval, first_consume, consume_interval,
                  budget_bytes, reorder_slots):
    timing = (blocks, first_produce, produce_interval, first_consume, consume_interval)
    free = fifo(*timing)
    reorder = reorder_slots * block_bytes
    slots = max(0, (budget_bytes - reorder) // block_bytes)
    bounded = fifo(*timing, slots=slots) if slots else None
    required = free["peak_slots"] * block_bytes + reorder
    return {
        "block_bytes": block_bytes, "payload_bytes": blocks * block_bytes, "reorder_bytes": reorder,
        "unbounded_peak_slots": free["peak_slots"], "required_bytes": required,
        "unbounded_fits": required <= budget_bytes, "fifo_slots": slots,
        "unbounded_last_take_tick": free["last_take_tick"],
        "bounded_last_take_tick": bounded["last_take_tick"] if bounded else None,
        "bounded_peak_bytes": bounded["peak_slots"] * block_bytes + reorder if bounded else None,
        "producer_delay_ticks": bounded["publish_ticks"][-1] - free["publish_ticks"][-1] if bounded else None,
        "unbounded_ticks": {"publish": free["publish_ticks"], "take": free["take_ticks"]},
        "bounded_ticks": {"publish": bounded["publish_ticks"], "take": bounded["take_ticks"]} if bounded else None,
    }


def host_transfer(*, block_bytes, blocks, host_slots, device_slots, prepare_ns, consume_ns, bandwidth):
    copy = Fraction(block_bytes * 10**9, bandwidth)
    # each block takes one slot of each pool: slots past the blocks' count are never taken
    host = [(Fraction(0), s) for s in range(min(host_slots, blocks))]
    device = [(Fraction(0), s) for s in range(min(device_slots, blocks))]
    preparer = engine = consumer = Fraction(0)
    rows, host_life, device_life = [], [], []
    for b in range(blocks):
        host_free, hs = heapq.heappop(host)
        p0 = max(preparer, host_free)
        preparer = p0 + prepare_ns
        device_free, ds = heapq.heappop(device)
        d0 = max(preparer, engine, device_free)
        engine = d0 + copy
        c0 = max(engine, consumer)
        consumer = c0 + consume_ns
        heapq.heappush(host, (engine, hs))
        heapq.heappush(device, (consumer, ds))
        host_life.append((p0, engine, block_bytes))
        device_life.append((d0, consumer, block_bytes))
        rows.append({"block": b, "host_slot": hs, "device_slot": ds, "prepare_start_ns": exact(p0),
                     "copy_start_ns": exact(d0), "copy_end_ns": exact(engine), "consume_start_ns": exact(c0),
                     "consume_end_ns": exact(consumer)})
    serial = blocks * (prepare_ns + copy + consume_ns)
    unbounded = prepare_ns + copy + consume_ns + (blocks - 1) * max(prepare_ns, copy, consume_ns)
    return {
        "block_bytes": block_bytes, "h2d_bytes": blocks * block_bytes, "copy_ns": exact(copy),
        "serial_ns": exact(serial), "unbounded_pipeline_ns": exact(unbounded), "slot_bound_finish_ns": exact(consumer),
        "host_pool_bytes": host_slots * block_bytes, "device_pool_bytes": device_slots * block_bytes,
        "host_live_peak_bytes": live_peak(host_life), "device_live_peak_bytes": live_peak(device_life),
        "speedup": exact(serial / consumer), "schedule": rows,
    }

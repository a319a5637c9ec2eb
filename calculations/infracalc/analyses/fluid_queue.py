"""A fluid FIFO queue fed by a piecewise-constant arrival rate and served at a fixed capacity (the book's
chapter-7 periodic communication demand and feedback-delay examples). Exact rationals throughout.

Arrivals are a list of intervals [a, b) (ns) of constant rate r (bytes/s); the link serves at c bytes/s.
On an interval the queue moves on a straight line of net slope s = (r - c) / 10^9 bytes/ns, clipped at
zero (nothing is sent that has not arrived) and at a finite buffer B (the excess is dropped):

    q(t) = min(B, max(0, q(a) + s (t - a))),
    drain time  a + q(a) / (-s)      when s < 0 and q(a) > 0,
    fill time   a + (B - q(a)) / s   when s > 0 and q(a) < B.

Each interval is cut at its drain or fill time, so on every piece q is linear and

    arrived = r d / 10^9,   dropped = max(0, q(a) + s d - B),   served = q(a) + arrived - q(b) - dropped,
    area    = (q(a) + q(b)) d / 2   (byte ns),   excess demand = max(0, s) d.

Over a window W: mean queue = area / W, average offered rate = arrived 10^9 / W, compatibility
= 1 - excess / (c W / 10^9) (may be negative: not a probability), virtual wait of the peak queue
= peak 10^9 / c ns, drain after the window with arrivals stopped = final queue 10^9 / c ns. Initial
queue + arrived = served + dropped + final queue.

Periodic demand: job j sends at r_j during [k P_j + o_j, k P_j + o_j + on_j) for every integer k
(o_j taken mod P_j, so a pulse that straddles the window's start counts), clipped to [0, W); the
window defaults to the least common multiple of the periods. Feedback: the offered rate until the
feedback time f, the reduced rate for the declared time after it.
"""

from fractions import Fraction
from math import lcm

NS = 10**9
MAX_PULSES = 100_000


def periodic_pulses(jobs, window_ns):
    """Change points {t: rate delta} of the jobs' (period, on, offset, rate) pulses clipped to [0, W)."""
    if sum(window_ns // period + 2 for period, _, _, _ in jobs) > MAX_PULSES:
        raise ValueError(f"more than {MAX_PULSES:,} pulses in the window: give a shorter --window")
    changes = {0: 0, window_ns: 0}
    for period, on, offset, rate in jobs:
        first = offset % period - period           # the pulse that may straddle t = 0
        for start in range(first, window_ns, period):
            a, b = max(0, start), min(window_ns, start + on)
            if a < b:
                changes[a] = changes.get(a, 0) + rate
                changes[b] = changes.get(b, 0) - rate
    return changes


def intervals(changes):
    """[(a, b, rate)] of constant rate between consecutive change points."""
    points, rate, out = sorted(changes), 0, []
    for a, b in zip(points, points[1:]):
        rate += changes[a]
        out.append((a, b, rate))
    return out


def _pieces(a, b, q, slope, buffer):
    """The interval's cut points: its ends and the drain or fill time inside it."""
    cuts = [Fraction(a), Fraction(b)]
    if slope < 0 and q > 0:
        t = a + q / -slope
    elif slope > 0 and buffer is not None and q < buffer:
        t = a + (buffer - q) / slope
    else:
        t = None
    if t is not None and a < t < b:
        cuts.insert(1, t)
    return cuts


def fluid_queue(*, arrivals, capacity, initial_bytes=0, buffer_bytes=None):
    """arrivals: [(start_ns, end_ns, rate bytes/s)] contiguous from 0; capacity in bytes/s."""
    q = peak = Fraction(initial_bytes)
    total = {"arrived": Fraction(0), "served": Fraction(0), "dropped": Fraction(0), "excess": Fraction(0),
             "area": Fraction(0)}
    rows, last_drain = [], None
    for a, b, rate in arrivals:
        slope = Fraction(rate - capacity, NS)
        cuts = _pieces(a, b, q, slope, buffer_bytes)
        for t0, t1 in zip(cuts, cuts[1:]):
            d, before = t1 - t0, q
            level = max(Fraction(0), before + slope * d)
            dropped = max(Fraction(0), level - buffer_bytes) if buffer_bytes is not None else Fraction(0)
            q = level - dropped
            arrived = Fraction(rate, NS) * d
            served = before + arrived - q - dropped
            for key, value in (("arrived", arrived), ("served", served), ("dropped", dropped),
                               ("excess", max(Fraction(0), slope) * d), ("area", (before + q) * d / 2)):
                total[key] += value
            peak = max(peak, q)
            if before > 0 and q == 0:
                last_drain = t1
            rows.append({"start_ns": str(t0), "end_ns": str(t1), "arrival_bytes_per_s": rate,
                         "queue_start_bytes": str(before), "queue_end_bytes": str(q), "arrived_bytes": str(arrived),
                         "served_bytes": str(served), "dropped_bytes": str(dropped)})
    window = arrivals[-1][1]
    return {
        "window_ns": window,
        "capacity_bytes_per_s": capacity,
        "peak_offered_bytes_per_s": max(rate for _, _, rate in arrivals),
        "average_offered_bytes_per_s": str(total["arrived"] * NS / window),
        "arrived_bytes": str(total["arrived"]),
        "served_bytes": str(total["served"]),
        "excess_demand_bytes": str(total["excess"]),
        "dropped_bytes": str(total["dropped"]),
        "peak_queue_bytes": str(peak),
        "final_queue_bytes": str(q),
        "queue_area_byte_ns": str(total["area"]),
        "mean_queue_bytes": str(total["area"] / window),
        "compatibility": str(1 - total["excess"] / Fraction(capacity * window, NS)),
        "last_drain_ns": None if last_drain is None else str(last_drain),
        "drain_after_window_ns": str(q * NS / capacity),
        "peak_queue_wait_ns": str(peak * NS / capacity),
        "segments": rows,
    }


def periodic_queue(*, jobs, capacity, window_ns=None, initial_bytes=0, buffer_bytes=None):
    """jobs: [(period_ns, on_ns, offset_ns, rate bytes/s)]."""
    window_ns = window_ns or lcm(*(period for period, _, _, _ in jobs))
    return fluid_queue(arrivals=intervals(periodic_pulses(jobs, window_ns)), capacity=capacity,
                       initial_bytes=initial_bytes, buffer_bytes=buffer_bytes)


def feedback_queue(*, offered, reduced, capacity, feedback_ns, after_ns, initial_bytes=0, buffer_bytes=None):
    """The offered rate until the feedback time, then the reduced rate for after_ns."""
    out = fluid_queue(arrivals=[(0, feedback_ns, offered), (feedback_ns, feedback_ns + after_ns, reduced)],
                      capacity=capacity, initial_bytes=initial_bytes, buffer_bytes=buffer_bytes)
    at_feedback = next(r["queue_end_bytes"] for r in out["segments"] if Fraction(r["end_ns"]) == feedback_ns)
    unbounded = max(Fraction(0), initial_bytes + Fraction((offered - capacity) * feedback_ns, NS))
    head = {"unbounded_queue_at_feedback_bytes": str(unbounded), "queue_at_feedback_bytes": at_feedback,
            "reduced_rate_below_capacity": reduced < capacity}
    return dict(head, **out)


FLUID_CONVENTIONS = [
    "Fluid FIFO queue: q' = arrival - capacity while q > 0 (served at full capacity when backlogged, never "
    "above what has arrived), clipped at the buffer (the excess is dropped); exact rationals, each constant-rate "
    "interval cut at its drain or fill time. Initial queue + arrived = served + dropped + final queue.",
    "Excess demand = integral of max(0, arrival - capacity) (differs from the peak queue, which drains); "
    "compatibility = 1 - excess / (capacity x window), may be negative, not a probability. Peak queue wait = "
    "peak / capacity (a fluid FIFO's virtual wait), drain after the window = final queue / capacity with "
    "arrivals stopped. Times in ns, bytes and rates exact as fractions.",
    "Rates, pulses, feedback time and buffer are declared teaching inputs: no congestion control (DCQCN, PFC, "
    "ECN), no packet-level queue, no retransmission or job dependency changes a sending time.",
]

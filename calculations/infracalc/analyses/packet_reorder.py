"""One message striped over paths, delivered in order from a reorder buffer, with declared losses
retransmitted once (the book's chapter-7 multipath example). Exact fractions of ns.

A payload of P bytes (BF16 [tokens, hidden]) is cut into n = ceil(P / m) packets; packet i takes
path i mod k. Each path sends serially at r bytes/s, originals first in sequence order:

    start = max(path free, ready),   end = start + size / r,   arrival = end + the path's delay.

A declared lost original never arrives; it is resent once (successfully) on its path, ready a
declared recovery delay after its original's end (resends in ready order, then sequence). The
receiver holds every out-of-order packet; at each arrival instant it first admits all packets
arriving then, then releases the contiguous prefix. Retained bytes after each release give the
peak and the area (byte ns); completion = the last in-order delivery. Suffix replay = the bytes from
the first lost packet to the end (a go-back-N comparison, not a timed protocol).
"""

from fractions import Fraction

from ..splits import ceil_div

NS = 10**9


def packet_reorder(*, payload_bytes, packet_bytes, path_delays_ns, path_rate, lost=(), recovery_ns=0, detail=True):
    """detail=False leaves out the per-packet transmissions and receive events (the totals only)."""
    # Times are kept as integers in ticks of 1 / path_rate ns (every figure below is a whole number of them:
    # a packet's serialization is size x 10^9 ticks), and printed as exact fractions of ns.
    n = ceil_div(payload_bytes, packet_bytes)
    sizes = [min(packet_bytes, payload_bytes - i * packet_bytes) for i in range(n)]
    k = len(path_delays_ns)
    delays = [d * path_rate for d in path_delays_ns]
    lost = set(lost)
    free = [0] * k
    ends, arrivals, sends = [], [], []

    def ns(ticks):
        return str(Fraction(ticks, path_rate))

    def send(i, ready, resend):
        path = i % k
        start = max(free[path], ready)
        end = free[path] = start + sizes[i] * NS
        dropped = not resend and i in lost
        if not dropped:
            arrivals.append((end + delays[path], i))
        if detail:
            sends.append({"packet": i, "path": path, "resend": resend, "lost": dropped, "start_ns": ns(start),
                          "end_ns": ns(end), "arrival_ns": None if dropped else ns(end + delays[path])})
        return end

    for i in range(n):
        ends.append(send(i, 0, False))
    recovery = recovery_ns * path_rate
    for i in sorted(lost, key=lambda i: (ends[i] + recovery, i)):
        send(i, ends[i] + recovery, True)
    at = {}
    for a, i in arrivals:
        at.setdefault(a, []).append(i)
    pending, events, delivered = set(), [], []
    nxt, retained, peak, peak_packets, area, last = 0, 0, 0, 0, 0, 0
    for t in sorted(at):
        area += retained * (t - last)
        pending.update(at[t])
        retained += sum(sizes[i] for i in at[t])
        released = []
        while nxt in pending:
            pending.remove(nxt)
            retained -= sizes[nxt]
            released.append(nxt)
            nxt += 1
        delivered += [t] * len(released)
        peak, peak_packets, last = max(peak, retained), max(peak_packets, len(pending)), t
        if detail:
            events.append({"time_ns": ns(t), "arrived": sorted(at[t]), "released": released,
                           "retained_bytes": retained})
    resent = sum(sizes[i] for i in lost)
    return {
        "payload_bytes": payload_bytes, "packets": n, "retransmitted_bytes": resent, "sent_bytes": payload_bytes + resent,
        "suffix_replay_bytes": sum(sizes[min(lost):]) if lost else 0,
        "peak_retained_bytes": peak, "peak_retained_packets": peak_packets, "retained_area_byte_ns": ns(area),
        "first_delivery_ns": ns(delivered[0]), "completion_ns": ns(delivered[-1]),
        "receive_events": events, "transmissions": sends,
    }


PACKET_REORDER_CONVENTIONS = [
    "Declared packet size, path rates and delays (not a NIC's): packets round-robin over independent serial "
    "paths, originals before resends; payload bytes only (no headers, ACKs or coding). Declared losses are resent "
    "once, successfully, a declared recovery delay after the original's end (not an ACK or timeout protocol).",
    "Unbounded reorder buffer: at each arrival instant the arrivals are admitted, then the contiguous prefix is "
    "released; the peak excludes ingress staging and is payload, not protocol state. Suffix replay is a byte "
    "comparison only. No randomness, congestion control, finite window or buffer overflow.",
]

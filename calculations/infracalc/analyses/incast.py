"""Incast: N - 1 senders at rate B into one egress port of rate E through a free buffer Q, against the
distance of the feedback that stops them (the book's chapter-7 incast example). Exact rationals.

    excess          X = (N - 1) B - E                       (bytes/s; none when X <= 0: no feedback needed)
    allowed delay   T = Q / X                               (the backlog grows at X until the feedback acts)
    one-hop pause   d1 = 2 L p + MTU / B                    (the pause travels L m upstream at p ns/m, the data
                                                             already on the cable travels back, one MTU in
                                                             serialization at the sender's rate)
    end to end      d2 = the declared RTT
    buffer needed   d X for each distance, fits when <= Q, and its fraction d X / Q

A fluid check replays one feedback at floor(T) ns: the senders at (N - 1) B, the rate dropped to 0 at the
feedback, the egress at E, the buffer Q (`fluid_queue.feedback_queue`): its drops and peak queue.

Worked case: N = 3, B = E = 1 GB/s, Q = 1000 B: X = 1 GB/s, T = 1000 ns; a pause over 10 m at 5 ns/m with
a 100 B MTU takes 2 x 50 + 100 = 200 ns and needs 200 B (1/5 of Q); an RTT of 2 us needs 2000 B (2 Q,
does not fit). The fluid check at 1000 ns peaks at 1000 B and drops nothing.
"""

from fractions import Fraction

NS = 10**9


def one_hop_feedback_ns(*, cable_m, ns_per_m, mtu_bytes, sender_rate):
    """(d1, propagation each way, serialization): 2 L p + MTU / B in ns."""
    propagation = cable_m * ns_per_m
    serialization = Fraction(mtu_bytes * NS, sender_rate)
    return 2 * propagation + serialization, propagation, serialization


def allowed_feedback_ns(*, buffer_bytes, excess):
    """T = Q / X in ns (X > 0)."""
    return Fraction(buffer_bytes * NS, excess)


def buffer_needed(*, feedback_ns, excess):
    """d X in bytes: what arrives beyond the egress while the feedback travels."""
    return Fraction(feedback_ns) * excess / NS


def _fluid_check(*, offered, egress, feedback_ns, buffer_bytes):
    from .fluid_queue import feedback_queue

    out = feedback_queue(offered=offered, reduced=0, capacity=egress, feedback_ns=feedback_ns,
                         after_ns=max(1, feedback_ns), initial_bytes=0, buffer_bytes=buffer_bytes)
    return {"fluid_feedback_ns": feedback_ns, "fluid_dropped_bytes": out["dropped_bytes"],
            "fluid_peak_queue_bytes": out["peak_queue_bytes"]}


def incast(*, groups, sender_rate, egress_rate, buffer_bytes, cable_m, ns_per_m, mtu_bytes, rtt_ns):
    """groups: the receiver-group sizes N (N - 1 senders each); rates in bytes/s, times in ns."""
    d1, propagation, serialization = one_hop_feedback_ns(cable_m=cable_m, ns_per_m=ns_per_m, mtu_bytes=mtu_bytes,
                                                         sender_rate=sender_rate)
    distances = (("one_hop", d1), ("end_to_end", Fraction(rtt_ns)))
    rows = []
    for n in groups:
        offered = (n - 1) * sender_rate
        excess = offered - egress_rate
        row = {"group": n, "senders": n - 1, "offered_bytes_per_s": offered, "excess_bytes_per_s": excess}
        if excess <= 0:   # the egress keeps up: no backlog, no feedback needed
            row.update({"allowed_feedback_ns": None, "allowed_feedback_ns_float": None})
            row.update({f"{name}_{key}": None for name, _ in distances
                        for key in ("buffer_bytes", "fits", "buffer_fraction")})
            row.update({"fluid_feedback_ns": None, "fluid_dropped_bytes": None, "fluid_peak_queue_bytes": None})
            rows.append(row)
            continue
        allowed = allowed_feedback_ns(buffer_bytes=buffer_bytes, excess=excess)
        row.update({"allowed_feedback_ns": str(allowed), "allowed_feedback_ns_float": float(allowed)})
        for name, d in distances:
            need = buffer_needed(feedback_ns=d, excess=excess)
            row.update({f"{name}_buffer_bytes": str(need), f"{name}_fits": need <= buffer_bytes,
                        f"{name}_buffer_fraction": str(need / buffer_bytes)})
        floor_ns = int(allowed)
        if floor_ns >= 1:
            row.update(_fluid_check(offered=offered, egress=egress_rate, feedback_ns=floor_ns,
                                    buffer_bytes=buffer_bytes))
        else:
            row.update({"fluid_feedback_ns": None, "fluid_dropped_bytes": None, "fluid_peak_queue_bytes": None})
        rows.append(row)
    return {"buffer_bytes": buffer_bytes, "sender_bytes_per_s": sender_rate, "egress_bytes_per_s": egress_rate,
            "one_hop_feedback_ns": str(d1), "one_hop_propagation_ns": propagation,
            "one_hop_serialization_ns": str(serialization), "end_to_end_feedback_ns": rtt_ns,
            "groups": rows}


INCAST_CONVENTIONS = [
    "Fluid incast: N - 1 senders at B into one egress of E; before the feedback acts the backlog grows at "
    "X = (N - 1) B - E, so a free buffer Q allows a feedback delay of Q / X. No packets, no ECN marking "
    "probability, one egress port and one priority.",
    "Feedback distances: one-hop pause = 2 x cable length x ns per metre (the pause upstream, the data in "
    "flight back) + one MTU at the sender's rate; end to end = the declared RTT. Switch processing and "
    "queueing are not included. Buffer needed = distance x X, a lower bound per port and priority (real "
    "switches reserve headroom per port and priority).",
    "Fluid check: one feedback at floor(Q / X) ns (rate to 0 at the feedback, the `feedback-queue` model): "
    "it confirms no drop and shows the peak; a self-consistency check, not a protocol simulation.",
]

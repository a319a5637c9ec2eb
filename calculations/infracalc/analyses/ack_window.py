"""Image requests over a finite ACK-window teaching protocol (the book's chapter-12 finite ACK
window and consecutive requests). Not TCP or QUIC: a declared, deterministic protocol.

Links: two serial FIFO links (client-to-server at U bits/s, server-to-client at D), each message
occupying its link 8 bytes / rate from max(now, link free) and arriving a declared one-way delay
after its serialization. Files are cut into segments of S payload bytes; a data message is
payload + a declared header, an ACK a declared size.

Sender: a direction of a connection holds a congestion window w (initial w_0, cap W) and the
unique unacknowledged payload it has admitted; a transfer admits its next segment while
outstanding + payload <= w and the segment ends within the highest cumulative prefix the ACKs
have reported + a fixed receive window R. Each new ACK of a segment releases its payload and grows
w by min(payload, g), capped at W (duplicates release nothing). Every transmission starts a timer
of a fixed RTO at its serialization end; one declared first transmission may be dropped and is
retransmitted once at its timeout (any other timeout is refused: outside the finite contract).

Receiver: every arrival (duplicates too) is acknowledged at once with the contiguous prefix
received; the file is complete when the prefix covers it. The server starts the model when the
upload is complete (not when its last ACK arrives) and the download a declared model time later.

Order: at each instant ACK arrivals, then data arrivals, then starts and handshake messages, then
timers (each kind in the order scheduled); only then do the transfers admit new segments, in
request order. A request opens a connection with a declared sequence of handshake messages, each
sent when the previous one arrives (`fresh`: every request a new connection with the full
handshake; `ticket`: a new connection with the first two messages; `reuse_reset` and `reuse_warm`:
the first request's connection is reused without a handshake, its windows reset to w_0 or kept).
The next request is submitted a think time after the previous response is complete
(`complete_received`) or after its last ACK (`quiet`). Times are exact: integers of a common unit.
"""

import heapq
from fractions import Fraction
from math import gcd

from ..splits import ceil_div

ACK, DATA, START, TIMER = 0, 1, 2, 3      # priorities at one instant (handshake messages share START's)
STRATEGIES = ("fresh", "ticket", "reuse_reset", "reuse_warm")


class _Transfer:
    def __init__(self, request, name, size, link, drop, packets):
        self.request, self.name, self.size, self.link, self.drop, self.count = request, name, size, link, drop, packets
        self.reverse = "s2c" if link == "c2s" else "c2s"
        self.active, self.next, self.outstanding = False, 0, 0
        self.acked, self.received, self.attempts = set(), set(), {}
        self.sender_prefix = self.receiver_prefix = self.receiver_next = self.unique = self.peak_reorder = 0
        self.start = self.all_received = self.all_acked = self.last_ack = None
        self.data_bytes = self.ack_bytes = self.retransmitted_bytes = 0


def _time_unit(rates, times):
    """The common denominator L of every duration (8 bytes / rate and the declared times)."""
    unit = 1
    for rate in rates:
        unit = unit * (rate // gcd(rate, 8)) // gcd(unit, rate // gcd(rate, 8))
    for t in times:
        unit = unit * t.denominator // gcd(unit, t.denominator)
    return unit


def segments(input_bytes, output_bytes, segment_bytes):
    """Segments per direction of one request: ceil(bytes / MSS) each way."""
    return {"upload": ceil_div(input_bytes, segment_bytes), "download": ceil_div(output_bytes, segment_bytes)}


def ack_window(*, input_bytes, output_bytes, segment_bytes, upload_bits_per_s, download_bits_per_s, forward_s,
               reverse_s, initial_window, max_window, receive_window, growth, header_bytes, ack_bytes, rto_s, model_s,
               handshake=(), requests=1, strategy="fresh", submit_on="complete_received", think_s=Fraction(0),
               start_s=Fraction(0), drop=None, loss_request=1, initial_windows=None):
    """handshake: [(direction 'c2s'|'s2c', bytes)]; drop: ('upload'|'download', segment) of request loss_request;
    initial_windows: {'upload': w_0, 'download': w_0} (default initial_window both ways)."""
    rates = {"c2s": upload_bits_per_s, "s2c": download_bits_per_s}
    L = _time_unit(rates.values(), (forward_s, reverse_s, rto_s, model_s, think_s, start_s))
    tick = lambda t: int(t * L)  # noqa: E731  (exact: L is a common denominator)
    delay, rto, model, think = {"c2s": tick(forward_s), "s2c": tick(reverse_s)}, tick(rto_s), tick(model_s), tick(think_s)
    w0 = initial_windows or {"upload": initial_window, "download": initial_window}
    packets = segments(input_bytes, output_bytes, segment_bytes)
    link_free, link_bytes, link_busy = {"c2s": 0, "s2c": 0}, {"c2s": 0, "s2c": 0}, {"c2s": 0, "s2c": 0}
    queue, order, now = [], [0], 0
    connections, reqs, transfers = {}, {}, []
    state = {"recoveries": 0, "last_ack": 0, "handshake_bytes": 0}

    def schedule(t, priority, *event):
        order[0] += 1
        heapq.heappush(queue, (t, priority, order[0], event))

    def send(direction, size):
        """Serialize on a link; the arrival time."""
        start = max(now, link_free[direction])
        busy = 8 * size * L // rates[direction]
        link_free[direction] = start + busy
        link_bytes[direction] += size
        link_busy[direction] += busy
        return start + busy + delay[direction]

    def payload(t, p):
        return min(segment_bytes, t.size - p * segment_bytes)

    def transmit(t, p, retransmit=False):
        t.attempts[p] = t.attempts.get(p, 0) + 1
        size = payload(t, p) + header_bytes
        arrival = send(t.link, size)
        t.data_bytes += size
        if retransmit:
            t.retransmitted_bytes += size
        if not (t.drop == p and t.attempts[p] == 1):
            schedule(arrival, DATA, "data", t, p)
        schedule(link_free[t.link] + rto, TIMER, "timer", t, p, t.attempts[p])

    def window(t):
        return connections[reqs[t.request]["connection"]][t.name]

    def pump(t):
        while t.active and t.next < t.count:
            p, w = t.next, window(t)
            length = payload(t, p)
            if w["outstanding"] + length > w["cwnd"] or p * segment_bytes + length > t.sender_prefix + receive_window:
                return
            t.outstanding += length
            w["outstanding"] += length
            t.next += 1
            transmit(t, p)

    def submit(rid):
        new = strategy in ("fresh", "ticket") or rid == 1
        cid = rid if strategy in ("fresh", "ticket") else 1
        if new:
            connections[cid] = {name: {"cwnd": w0[name], "outstanding": 0} for name in w0}
        elif strategy == "reuse_reset":
            for name in w0:
                connections[cid][name]["cwnd"] = w0[name]
        pair = []
        for name, size, link in (("upload", input_bytes, "c2s"), ("download", output_bytes, "s2c")):
            lost = drop[1] if drop and drop[0] == name and rid == loss_request else None
            pair.append(_Transfer(rid, name, size, link, lost, packets[name]))
        transfers.extend(pair)
        reqs[rid] = {"connection": cid, "submit": now, "ready": None, "next_sent": False, "quiet": None,
                     "pair": pair, "messages": (list(handshake[:2]) if strategy == "ticket" else list(handshake)) if new
                     else [], "initial_cwnd": {name: connections[cid][name]["cwnd"] for name in w0}}
        if reqs[rid]["messages"]:
            schedule(now, START, "handshake", rid, 0)
        else:
            reqs[rid]["ready"] = now
            schedule(now, START, "start", pair[0])

    def maybe_next(rid):
        r = reqs[rid]
        up, down = r["pair"]
        if up.all_acked is not None and down.all_acked is not None:
            r["quiet"] = max(up.last_ack, down.last_ack)
        end = down.all_received if submit_on == "complete_received" else r["quiet"]
        if end is not None and not r["next_sent"] and rid < requests:
            r["next_sent"] = True
            schedule(end + think, START, "submit", rid + 1)

    schedule(tick(start_s), START, "submit", 1)
    while queue:
        now = queue[0][0]
        while queue and queue[0][0] == now:
            kind, *data = heapq.heappop(queue)[3]
            if kind == "submit":
                submit(data[0])
            elif kind == "handshake":
                rid, i = data
                direction, size = reqs[rid]["messages"][i]
                arrival = send(direction, size)
                state["handshake_bytes"] += size
                if i + 1 < len(reqs[rid]["messages"]):
                    schedule(arrival, START, "handshake", rid, i + 1)
                else:
                    reqs[rid]["ready"] = arrival
                    schedule(arrival, START, "start", reqs[rid]["pair"][0])
            elif kind == "start":
                data[0].active, data[0].start = True, now
            elif kind == "data":
                t, p = data
                if p not in t.received:
                    t.received.add(p)
                    t.unique += payload(t, p)
                    while t.receiver_next in t.received:
                        t.receiver_prefix += payload(t, t.receiver_next)
                        t.receiver_next += 1
                    t.peak_reorder = max(t.peak_reorder, t.unique - t.receiver_prefix)
                schedule(send(t.reverse, ack_bytes), ACK, "ack", t, p, t.receiver_prefix)
                t.ack_bytes += ack_bytes
                if t.receiver_prefix == t.size and t.all_received is None:
                    t.all_received = now
                    if t.name == "upload":
                        schedule(now + model, START, "start", reqs[t.request]["pair"][1])
                    maybe_next(t.request)
            elif kind == "ack":
                t, p, prefix = data
                if p not in t.acked:
                    t.acked.add(p)
                    w = window(t)
                    t.outstanding -= payload(t, p)
                    w["outstanding"] -= payload(t, p)
                    w["cwnd"] = min(max_window, w["cwnd"] + min(payload(t, p), growth))
                t.sender_prefix = max(t.sender_prefix, prefix)
                t.last_ack = state["last_ack"] = now
                if len(t.acked) == t.count and t.all_acked is None:
                    t.all_acked = now
                maybe_next(t.request)
            else:
                t, p, attempt = data
                if p in t.acked or attempt != t.attempts[p]:
                    continue
                if state["recoveries"] or p != t.drop or attempt != 1:
                    raise ValueError(f"a timeout of {t.name} segment {p} (attempt {attempt}) outside the declared loss: "
                                     f"raise the RTO or change the rates or windows")
                state["recoveries"] += 1
                transmit(t, p, retransmit=True)
        for t in transfers:
            pump(t)
    if any(t.all_received is None or t.all_acked is None or t.outstanding for t in transfers):
        raise ValueError("the transfer stalled before every segment was received and acknowledged")
    return _record(reqs, transfers, state, L, rates, link_bytes, link_busy, link_free, input_bytes, output_bytes,
                   forward_s, reverse_s, model_s, start_s)


def _record(reqs, transfers, state, L, rates, link_bytes, link_busy, link_free, input_bytes, output_bytes, forward_s,
            reverse_s, model_s, start_s):
    s = lambda ticks: str(Fraction(ticks, L))  # noqa: E731
    rows = []
    for rid, r in reqs.items():
        up, down = r["pair"]
        rows.append({"request": rid, "connection": r["connection"], "submit_s_exact": s(r["submit"]),
                     "ready_s_exact": s(r["ready"]), "complete_received_s_exact": s(down.all_received),
                     "last_ack_s_exact": s(r["quiet"]), "response_s_exact": s(down.all_received - r["submit"]),
                     "model_start_s_exact": s(up.all_received), "initial_cwnd_upload": r["initial_cwnd"]["upload"],
                     "initial_cwnd_download": r["initial_cwnd"]["download"]})
    last = reqs[max(reqs)]["pair"][1]
    return {
        "requests": rows,
        "transfers": [{"request": t.request, "transfer": t.name, "packets": t.count,
                       "start_s_exact": s(t.start), "complete_received_s_exact": s(t.all_received),
                       "all_acked_s_exact": s(t.all_acked), "last_ack_s_exact": s(t.last_ack),
                       "data_wire_bytes": t.data_bytes, "ack_wire_bytes": t.ack_bytes,
                       "retransmission_wire_bytes": t.retransmitted_bytes, "peak_reorder_bytes": t.peak_reorder}
                      for t in transfers],
        "links": [{"link": d, "wire_bytes": link_bytes[d], "busy_s_exact": s(link_busy[d]),
                   "free_at_s_exact": s(link_free[d])} for d in ("c2s", "s2c")],
        "complete_final_image_s_exact": s(last.all_received),
        "last_ack_s_exact": s(state["last_ack"]),
        "recoveries": state["recoveries"],
        "handshake_wire_bytes": state["handshake_bytes"],
        "payload_only_baseline_s_exact": str(start_s + Fraction(8 * input_bytes, rates["c2s"]) + forward_s + model_s
                                             + Fraction(8 * output_bytes, rates["s2c"]) + reverse_s),
    }


ACK_WINDOW_CONVENTIONS = [
    "A declared teaching protocol, not TCP or QUIC: two serial FIFO links (payload + header per data segment, a "
    "declared ACK size, handshake messages), a one-way delay after each serialization; a sender admits a segment "
    "while its connection direction's unique outstanding payload fits the window and the segment ends within the "
    "ACKed prefix + the receive window; each new ACK grows the window by min(payload, growth) up to its cap; a fixed "
    "RTO from each serialization end retransmits the one declared lost segment once.",
    "At each instant ACK arrivals, data arrivals, starts and handshake messages, then timers are handled (each in "
    "scheduled order), then transfers admit new segments. The model starts when the upload is complete, the "
    "download a declared model time later; the next request is submitted a think time after the response is "
    "complete or after its last ACK. Exact times.",
]

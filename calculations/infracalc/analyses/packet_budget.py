"""A host's packet-processing budget at line rate: packets per second and cores (the book's
chapter-1 SmartNIC case).

A line of R bits/s, filled to a declared utilization u, carries packets whose classes are
shares p_i of the packet count, each of frame f_i bytes (Ethernet frame with FCS) plus a per-packet
wire overhead o (8 B preamble/SFD + 12 B inter-packet gap = 20 B) and an encapsulation e:

    wire_i = f_i + e + o,     mean wire = sum p_i wire_i,
    packets/s  P = (R / 8) u / mean wire          (shares are of packets, not of bytes),
    class i    P p_i packets/s,  frame bytes/s P sum p_i f_i,  wire bytes/s P mean wire.

A core forwarding r packets/s (a declared figure: the thesis' 10 and 20 Mpps of simple
forwarding) with work multipliers w_i (mean w = sum p_i w_i) and a retained share h of the host
work (1 = all on the host, 0 = fully offloaded) is busy

    busy = P w h / r  core-seconds per second,   provisioned = busy / target utilization,
    dedicated cores = ceil(provisioned).

Every figure is an exact fraction of the declared inputs; linear multicore scaling is assumed
(a budget, not a benchmark). 64 B frames at 40 Gb/s: 84 B on the wire, 1,250,000,000 / 21 =
59.52 Mpps, 125/21 = 5.95 cores at 10 Mpps (6 dedicated), 125/42 at 20 Mpps (3).
"""

from fractions import Fraction

WIRE_OVERHEAD_BYTES = 20   # preamble + SFD (8 B) and the minimum inter-packet gap (12 B), IEEE 802.3


def _ceil(x):
    return -(-x.numerator // x.denominator)


def packet_budget(*, line_bits_per_s, classes, core_rates, utilization=Fraction(1), wire_overhead_bytes=WIRE_OVERHEAD_BYTES,
                  encapsulation_bytes=0, target_utilization=Fraction(1), retained=Fraction(1)):
    """classes: (frame bytes, packet share, work multiplier) with shares summing to 1; core_rates in packets/s."""
    wire = [f + encapsulation_bytes + wire_overhead_bytes for f, _, _ in classes]
    mean_wire = sum(p * w for (_, p, _), w in zip(classes, wire))
    mean_frame = sum(p * f for f, p, _ in classes)
    mean_work = sum(p * m for _, p, m in classes)
    pps = Fraction(line_bits_per_s, 8) * utilization / mean_wire
    cores = []
    for rate in core_rates:
        busy = pps * mean_work * retained / rate
        provisioned = busy / target_utilization
        cores.append({"core_packets_per_s": str(rate), "busy_cores_exact": str(busy), "busy_cores": float(busy),
                      "provisioned_cores_exact": str(provisioned), "dedicated_cores": _ceil(provisioned)})
    return {
        "classes": [{"frame_bytes": f, "wire_bytes": w, "packet_share": str(p), "work_multiplier": str(m),
                     "packets_per_s_exact": str(pps * p), "packets_per_s": float(pps * p)}
                    for (f, p, m), w in zip(classes, wire)],
        "mean_wire_bytes_exact": str(mean_wire),
        "mean_work_multiplier_exact": str(mean_work),
        "packets_per_s_exact": str(pps),
        "packets_per_s": float(pps),
        "frame_bytes_per_s_exact": str(pps * mean_frame),
        "wire_bytes_per_s_exact": str(pps * mean_wire),
        "cores": cores,
        "dedicated_cores": [c["dedicated_cores"] for c in cores],
    }


PACKET_CONVENTIONS = [
    "Packets/s = line bits/s / 8 x utilization / mean wire bytes, wire bytes = frame (with FCS) + encapsulation "
    "+ per-packet overhead (default 20 B: preamble/SFD 8 + inter-packet gap 12); class shares are of the packet "
    "count, so the mean is of wire bytes per packet, not of each class's line rate.",
    "Cores: busy = packets/s x mean work multiplier x retained host share / the declared per-core packet rate "
    "(core-seconds per second), provisioned = busy / target utilization, dedicated = its ceiling; linear "
    "multicore scaling assumed. Exact fractions of the declared figures; a budget, not a benchmark.",
]

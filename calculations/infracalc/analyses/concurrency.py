"""Memory concurrency by Little's law: outstanding transactions x latency -> bandwidth.

An interface of bandwidth B serves transactions of s bytes, each taking latency L from issue
to completion. With n independent transactions in flight, Little's law (throughput = work in
flight / time in the system) bounds the delivered bandwidth by n s / L; a serialized issue
interval tau (one transaction at a time at the source, or a non-pipelined service) bounds it by
s / tau. The delivered bandwidth is at most

    min(B, n s / L, s / tau)

and the window that would let the interface run at B is B L bytes: ceil(B L / s)
transactions. A payload P (here a request's KV cache, from the ledger) then takes at least
P / that bound, and never less than one latency L. These are bounds of an interface model
with declared L, s and n (not measurements): the book's chapter 1, 4 and 7 window examples.
"""

from fractions import Fraction

from ..splits import ceil_div


def memory_window(*, payload_bytes, bandwidth, latency_ns, transaction_bytes, transactions, active=None,
                  service_interval_ns=None):
    """The bounds above, exact as fractions, bandwidths in bytes/s and times in seconds."""
    active = transactions if active is None else active
    latency = Fraction(latency_ns, 10 ** 9)
    bounds = {"interface": Fraction(bandwidth),
              "transaction_window": active * transaction_bytes / latency}
    if service_interval_ns is not None:
        bounds["serial_service"] = Fraction(transaction_bytes * 10 ** 9, service_interval_ns)
    effective = min(bounds.values())
    limiters = [k for k, v in bounds.items() if v == effective]
    required_window = Fraction(bandwidth) * latency
    service = payload_bytes / effective
    return {
        "payload_bytes": payload_bytes,
        "allocated_window_bytes": transactions * transaction_bytes,
        "outstanding_window_bytes": active * transaction_bytes,
        "bounds_bytes_per_s": {k: float(v) for k, v in bounds.items()},
        "effective_bandwidth_bytes_per_s": float(effective),
        "limiters": limiters,
        "utilization": float(effective / bandwidth),
        "required_window_bytes": float(required_window),
        "required_transactions": -(-required_window.numerator // (required_window.denominator
                                                                   * transaction_bytes)),
        "interface_service_s": float(Fraction(payload_bytes, bandwidth)),
        "service_lower_bound_s": float(max(service, latency)),
        "transfers": ceil_div(payload_bytes, transaction_bytes),
    }

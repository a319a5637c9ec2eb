"""Reading an immutable KV snapshot remotely each time against staging one local copy (the book's
chapter-7 remote-state example). Declared rates and times, exact fractions of ns.

The snapshot is P bytes (`kv`'s cache of one request at the declared length). A remote read goes
through a transaction window (Little's law, as `budget window`): N transactions of m bytes in flight,
latency L, link bandwidth B_r, so

    remote rate  R = min(B_r, N m / L),   remote read = s_r + max(L, P / R),
    local read   = s_l + P / B_l,
    staging      = s_b + P / B_b + P / B_l     (bulk start, network copy, then the local write: serial),
    direct total = n x remote read,            staged total = staging + n x local read   (n reads),

the snapshot fits when P <= the local bytes available, and the stage is chosen only if it fits and
is strictly faster. Staging pays off strictly after max(1, floor(staging / (remote - local)) + 1)
reads (`runtime_choices.amortized_calls`). Network bytes: n P direct, P staged (one side counted);
local bytes written P and read n P. The window needed for B_r: ceil(B_r L / m) transactions.
"""

from fractions import Fraction

from .runtime_choices import amortized_calls, exact

NS = 10**9


def remote_state(*, payload_bytes, reuses, remote_bandwidth, latency_ns, transaction_bytes, transactions,
                 remote_startup_ns, bulk_bandwidth, bulk_startup_ns, local_bandwidth, local_startup_ns,
                 local_available_bytes=None):
    p = payload_bytes
    rate = min(Fraction(remote_bandwidth), Fraction(transactions * transaction_bytes * NS, latency_ns))
    remote = remote_startup_ns + max(Fraction(latency_ns), p * NS / rate)
    local = local_startup_ns + Fraction(p * NS, local_bandwidth)
    network, write = Fraction(p * NS, bulk_bandwidth), Fraction(p * NS, local_bandwidth)
    setup = bulk_startup_ns + network + write
    direct, staged = reuses * remote, setup + reuses * local
    fits = local_available_bytes is None or p <= local_available_bytes
    stage = fits and staged < direct
    window = Fraction(remote_bandwidth * latency_ns, NS)
    return {
        "snapshot_bytes": p, "reuses": reuses,
        "remote_rate_bytes_per_s": exact(rate),
        "window_transactions_for_link": -(-window.numerator // (window.denominator * transaction_bytes)),
        "remote_read_ns": exact(remote), "local_read_ns": exact(local),
        "stage_network_ns": exact(network), "stage_local_write_ns": exact(write), "stage_setup_ns": exact(setup),
        "direct_total_ns": exact(direct), "staged_total_ns": exact(staged),
        "direct_network_bytes": reuses * p, "staged_network_bytes": p,
        "staged_local_write_bytes": p, "staged_local_read_bytes": reuses * p,
        "fits_local_capacity": fits,
        "strict_reuses_to_amortize": amortized_calls(setup, remote - local)[1],
        "selected": "stage" if stage else "direct",
        "selected_total_ns": exact(staged if stage else direct),
    }


REMOTE_STATE_CONVENTIONS = [
    "An immutable snapshot of one request's KV (the whole model's cache at the declared length, `kv`'s bytes) "
    "read n times: remotely through a transaction window, rate min(link, N m / L), each read at least one "
    "latency plus a declared start; or staged once (bulk start, network copy and the local write, serial: DMA "
    "overlap is not assumed) and read locally n times. Staging is chosen only when the whole snapshot fits "
    "the declared available local bytes and is strictly faster.",
    "Rates, latencies and starts are declared teaching inputs, not a NIC's or memory's figures; no publication, "
    "synchronization, eviction or partial caching. Network bytes count the payload once (not both ends).",
]

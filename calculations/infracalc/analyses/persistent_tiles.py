"""An operator barrier against tile readiness on two declared workers (the book's chapter-5
persistent-kernel example): one dense layer's up projection [M,H] x [H,F] feeding its activation.

Declared: a matrix rate R (FLOP/s), an activation rate E (elements/s), a host launch L, and per
device task a dispatch d and a completion publication e (both on the task's own worker).

    barrier (two kernels, each launched from the host, the second after the whole first):
        2L + 2MHF / R + MF / E
    persistent (one launch; per tile of m rows a matrix task then an activation task):
        matrix task i starts when the matrix worker is free (L for the first) and is ready after
        d + e + 2mHF / R; activation task i starts at max(its tile ready, the activation worker
        free) and ends d + e + mF / E later; the finish is the last activation task's end.

Tiles of `tile_rows` rows (the last one shorter); each tile's BF16 intermediate (2mF bytes) lives
from its matrix task's start to its activation task's end; the live peak is the largest sum over
overlapping lifetimes (an end and a start at the same instant do not overlap). No slot budget,
polling, contention or memory traffic is modelled.
"""

from fractions import Fraction

from .runtime_choices import exact

PERSISTENT_CONVENTIONS = [
    "One dense layer's up projection [M,H] x [H,F] into its activation, on a matrix worker and an activation "
    "worker with declared rates (FLOP/s, elements/s) that run in parallel; every cost is a declared teaching "
    "input, exact fractions of nanoseconds. Barrier: two host launches, the activation kernel after the whole "
    "projection: 2L + 2MHF/R + MF/E.",
    "Persistent: one launch L, then per tile of rows a matrix task and an activation task, each paying its "
    "dispatch and completion publication on its own worker; a tile's activation starts when the tile is ready "
    "and the activation worker is free. A tile's BF16 intermediate (2mF B) lives from its matrix task's start to "
    "its activation's end; the peak is over overlapping lifetimes (no slot budget, polling or contention).",
]


def live_peak(lifetimes):
    """Largest sum of sizes alive at once; (start, end, size), half-open [start, end)."""
    events = sorted([(end, 0, -size) for start, end, size in lifetimes] +
                    [(start, 1, size) for start, end, size in lifetimes])
    live = peak = 0
    for _, _, change in events:
        live += change
        peak = max(peak, live)
    return peak


def persistent_tiles(*, hidden, inter, tokens, tile_rows, matrix_rate, activation_rate, launch_ns, dispatch_ns,
                     publish_ns):
    h, f = hidden, inter
    task = dispatch_ns + publish_ns
    barrier = 2 * launch_ns + Fraction(2 * tokens * h * f * 10**9, matrix_rate) + Fraction(tokens * f * 10**9,
                                                                                          activation_rate)
    matrix_free = act_free = Fraction(launch_ns)
    tiles, lifetimes = [], []
    for start in range(0, tokens, tile_rows):
        m = min(tile_rows, tokens - start)
        begin = matrix_free
        ready = begin + task + Fraction(2 * m * h * f * 10**9, matrix_rate)
        act_start = max(act_free, ready)
        done = act_start + task + Fraction(m * f * 10**9, activation_rate)
        matrix_free, act_free = ready, done
        lifetimes.append((begin, done, 2 * m * f))
        tiles.append({"tile": len(tiles), "rows": m, "matrix_start_ns": exact(begin), "ready_ns": exact(ready),
                      "activation_start_ns": exact(act_start), "done_ns": exact(done)})
    n = len(tiles)
    return {
        "tiles": n, "matrix_flops": 2 * tokens * h * f, "activation_elements": tokens * f,
        "device_tasks": 2 * n, "barrier_host_launches": 2, "persistent_host_launches": 1,
        "dispatch_total_ns": 2 * n * dispatch_ns, "publish_total_ns": 2 * n * publish_ns,
        "intermediate_bytes": 2 * tokens * f, "intermediate_live_peak_bytes": live_peak(lifetimes),
        "barrier_finish_ns": exact(barrier), "persistent_finish_ns": exact(act_free),
        "speedup": exact(barrier / act_free),
        "schedule": tiles,
    }

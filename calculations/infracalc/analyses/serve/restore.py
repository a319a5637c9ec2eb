"""Keep, offload or drop a request's KV snapshot until its known next use (the book's
chapter-8 KV restore group).

A snapshot of S bytes (the cache of the request's N tokens) is next needed at time T (ns after
now). Three policies, times exact rationals of ns:

- keep: ready at T, no stall, nothing released.
- offload and prefetch: copy to the host now (O = startup + S / B_off), free the device copy when
  it ends, and prefetch as late as possible: the prefetch (D = startup + S / B_restore, after the
  offload: the directions are serial) starts at p = max(O, T - D) and reserves the whole snapshot
  at its start. Ready at p + D, stall max(0, p + D - T), the device bytes free for p - O
  (S (p - O) byte-ns), 2 S bytes moved; feasible only when the host holds S.
- drop and recompute: free now, replay the prefill as late as possible: a declared replay of R ns
  starts at r = max(0, T - R) and reserves the snapshot at its start. Ready at r + R, stall
  max(0, r + R - T), free for r (S r byte-ns); the replay's matrix FLOPs are the ledger's
  backbone pass over the N tokens (`forward --tokens N --logits none`).

Keep and recompute assume the device room is there when they need it; contention for the links,
the room or the host memory is not modelled.
"""

from fractions import Fraction

RESTORE_CONVENTION = (
    "KV restore (analyses/serve/restore.py): a snapshot of S bytes next used at T ns; keep: ready at T. "
    "Offload + prefetch: O = startup + S / B_off, prefetch D = startup + S / B_restore from p = max(O, T - D) "
    "(serial directions, the snapshot reserved at p): ready p + D, free for p - O, feasible when the host "
    "holds S. Drop + recompute: a declared replay of R ns from r = max(0, T - R): ready r + R, free for r. "
    "Stall = max(0, ready - T); released byte-ns = S x the free interval; exact rationals of ns.")


def transfer_ns(nbytes, bytes_per_s, startup_ns):
    """startup + bytes / bandwidth, in ns."""
    return startup_ns + Fraction(nbytes * 10**9, bytes_per_s)


def policies(*, snapshot, next_use, offload_bw, restore_bw, startup, recompute, host_capacity, replay_flops):
    """(the three policy rows, the summary's timing figures) of the module docstring."""
    o = transfer_ns(snapshot, offload_bw, startup)
    d = transfer_ns(snapshot, restore_bw, startup)
    p = max(o, next_use - d)
    r = max(0, next_use - recompute)

    def row(policy, feasible, ready, free, moved, flops):
        return {"policy": policy, "feasible": feasible, "ready_ns": Fraction(ready),
                "stall_ns": Fraction(max(0, ready - next_use)), "kv_free_interval_ns": Fraction(free),
                "released_byte_ns": snapshot * Fraction(free), "transfer_bytes": moved, "replayed_matrix_flops": flops}

    rows = [row("keep", True, next_use, 0, 0, 0),
            row("offload_prefetch", host_capacity >= snapshot, p + d, p - o, 2 * snapshot, 0),
            row("drop_recompute", True, r + recompute, r, 0, replay_flops)]
    summary = {"offload_ns": o, "restore_ns": d, "prefetch_start_ns": p,
               "offload_return_stall_ns": rows[1]["stall_ns"], "recompute_start_ns": r,
               "recompute_stall_ns": rows[2]["stall_ns"], "host_snapshot_fits": host_capacity >= snapshot}
    return rows, summary

"""Training input supply with checkpoint contention (`budget input-supply`): pre-tokenized samples
packed into fixed-length packs, read, prepared, copied to the device and consumed, while
checkpoint snapshots and writes share the device and (optionally) the storage (the book's
chapter-10 input-supply timeline).

Packing is next-fit: samples in order fill a pack of L tokens until the next would not fit (no
splitting or dropping); the pack keeps its samples' stored bytes and is sent as L x 21 wire bytes
(token ids and labels int64, validity bool, segment ids int32). Per pack i, on serial resources:

    R_i storage: stored / storage rate, after R_{i-1} and H_{i-h} (a free host slot, h slots)
    P_i cpu:     its samples' preparation + packing, after R_i and P_{i-1}
    H_i h2d:     wire / h2d rate, after P_i, H_{i-1} and C_{i-d} (a free device slot, d slots)
    C_i device:  the consume time, after H_i, C_{i-1} and the snapshot S_{i-1} if there is one
    S_i device:  after every k-th pack, a snapshot of the declared time, after C_i and the write of the
                 snapshot s slots earlier; W_i writes 14 B per parameter at the storage rate, after S_i
                 and W of the previous snapshot, on the shared storage (or its own, when not shared).

Events run by earliest possible start, reads winning ties (list scheduling). Host slots hold a pack's
stored + wire bytes from read start to H2D end, device slots its wire bytes from H2D start to consume
end, snapshot slots the payload from snapshot start to write end. Declared teaching rates and times.
"""

from fractions import Fraction
from math import lcm

from .training_pipeline import list_schedule, peak

WIRE_BYTES_PER_TOKEN = 8 + 8 + 1 + 4
ORDER = {"R": 0, "P": 1, "H": 2, "C": 3, "S": 4, "W": 5}


def pack(samples, tokens):
    """[[sample index]] by next-fit into packs of `tokens`."""
    from ..errors import UserError

    packs, current, used = [], [], 0
    for i, (n, _, _) in enumerate(samples):
        if n > tokens:
            raise UserError(f"sample {i} has {n} tokens, more than a pack's {tokens}")
        if used + n > tokens:
            packs.append(current)
            current, used = [], 0
        current.append(i)
        used += n
    return packs + [current]


def input_supply(*, samples, pack_tokens, host_slots, device_slots, storage_rate, h2d_rate, packing, consume,
                 every, snapshot, snapshot_slots, shared_storage, parameters):
    """samples: [(tokens, stored bytes, preparation seconds)]; times exact seconds, rates bytes/s."""
    groups = pack(samples, pack_tokens)
    n = len(groups)
    wire = pack_tokens * WIRE_BYTES_PER_TOKEN
    stored = [sum(samples[j][1] for j in g) for g in groups]
    prep = [sum(Fraction(samples[j][2]) for j in g) + packing for g in groups]
    ckpt = 14 * parameters
    snaps = [i for i in range(n) if every and (i + 1) % every == 0]
    nodes = {}
    for i in range(n):
        nodes[("R", i, 0)] = (Fraction(stored[i], storage_rate), "storage",
                              tuple([("R", i - 1, 0)] * (i > 0) + [("H", i - host_slots, 0)] * (i >= host_slots)))
        nodes[("P", i, 0)] = (prep[i], "cpu", (("R", i, 0),) + (("P", i - 1, 0),) * (i > 0))
        nodes[("H", i, 0)] = (Fraction(wire, h2d_rate), "h2d", (("P", i, 0),) + (("H", i - 1, 0),) * (i > 0)
                              + (("C", i - device_slots, 0),) * (i >= device_slots))
        nodes[("C", i, 0)] = (consume, "device", (("H", i, 0),) + (("C", i - 1, 0),) * (i > 0)
                              + (("S", i - 1, 0),) * (i - 1 in snaps))
    for k, i in enumerate(snaps):
        reuse = (("W", snaps[k - snapshot_slots], 0),) if k >= snapshot_slots else ()   # a free snapshot slot
        nodes[("S", i, 0)] = (snapshot, "device", (("C", i, 0),) + reuse)
        nodes[("W", i, 0)] = (Fraction(ckpt, storage_rate), "storage" if shared_storage else "checkpoint storage",
                              (("S", i, 0),) + ((("W", snaps[k - 1], 0),) if k else ()))
    t = list_schedule(nodes, ORDER)
    train_end = max(t[("C", i, 0)][1] for i in range(n))
    host = [(t[("R", i, 0)][0], t[("H", i, 0)][1], stored[i] + wire) for i in range(n)]
    device = [(t[("H", i, 0)][0], t[("C", i, 0)][1], wire) for i in range(n)]
    snap = [(t[("S", i, 0)][0], t[("W", i, 0)][1], ckpt) for i in snaps]
    compute = n * consume
    snap_before = sum((t[("S", i, 0)][1] - t[("S", i, 0)][0] for i in snaps if t[("S", i, 0)][1] <= train_end),
                      Fraction(0))
    rate = Fraction(len(samples)) / compute

    def buffer(intervals):
        return {"peak_bytes": peak(intervals)[0] if intervals else 0,
                "byte_seconds_exact": str(sum((b - a) * size for a, b, size in intervals))}

    return {
        "samples": len(samples), "valid_tokens": sum(s[0] for s in samples),
        "padding_tokens": n * pack_tokens - sum(s[0] for s in samples), "packs": n,
        "input_storage_bytes": sum(stored), "h2d_bytes": n * wire, "checkpoint_parameters": parameters,
        "checkpoint_bytes_each": ckpt, "checkpoint_write_bytes": len(snaps) * ckpt,
        "cpu_seconds_exact": str(sum(prep)), "training_end_s_exact": str(train_end),
        "all_durable_s_exact": str(max(e for _, e in t.values())),
        "device_compute_s_exact": str(compute), "snapshot_before_training_end_s_exact": str(snap_before),
        "device_wait_s_exact": str(train_end - compute - snap_before),
        "target_samples_per_s_exact": str(rate),
        "target_input_bytes_per_s_exact": str(Fraction(sum(stored)) / compute),
        "target_h2d_bytes_per_s_exact": str(Fraction(n * wire) / compute),
        "host_buffer": buffer(host), "device_buffer": buffer(device), "snapshot_buffer": buffer(snap),
        "packs_detail": [{"pack": i, "samples": groups[i], "valid_tokens": sum(samples[j][0] for j in groups[i]),
                          "stored_bytes": stored[i], "wire_bytes": wire} for i in range(n)],
        "events": [{"event": f"{k[0]}{k[1]}", "resource": nodes[k][1], "start_s_exact": str(a), "end_s_exact": str(b)}
                   for k, (a, b) in sorted(t.items(), key=lambda kv: (kv[1][0], ORDER[kv[0][0]], kv[0][1]))],
    }


INPUT_SUPPLY_CONVENTIONS = [
    "Next-fit packing of pre-tokenized samples into L-token packs (no splitting or dropping), L x 21 wire bytes (ids "
    "and labels int64, validity bool, segment ids int32). Per pack: storage read, CPU preparation + packing, H2D, "
    "device consume; host and device slots bound the packs in flight; a snapshot after every K-th pack stalls the "
    "next consume and its 14 B-per-parameter write (after the previous write) shares the storage unless separate.",
    "Earliest possible start, reads winning ties; nonpreemptive whole writes. Host slots hold stored + wire bytes "
    "from read start to H2D end, device slots wire bytes from H2D start to consume end, snapshot slots the payload "
    "to write end. Target rates: samples, input bytes and H2D bytes over the device's consume time. Declared rates.",
]


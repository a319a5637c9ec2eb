"""One MoE layer's routed experts as grouped GEMMs on EP ranks: tile padding, the busiest rank,
expert replicas and when copying one pays back (the book's chapter-6 `grouped-experts` and
chapter-9 `replica-payback` groups).

Routing gives m_e token-expert assignments per expert e (balanced: the N k assignments dealt
round-robin, divmod(N k, E), the remainder to the first experts; concentrated: experts
0..k-1 take N each). Expert e lives on rank e // (E / R) (contiguous) or e mod R (striped);
a replica adds a copy on another rank, and an expert's m_e rows are split over its copies by
divmod, the remainder to the earlier copies (the original first). Each copy holding m > 0
rows runs three GEMMs, gate and up [m, h] x [h, f] and down [m, f] x [f, h]; of one [m, K] x
[K, N] with tiles tm x tk x tn:

    valid FLOPs   = 2 m K N
    padded FLOPs  = 2 ceil(m/tm) tm  ceil(K/tk) tk  ceil(N/tn) tn      (every tile run in full)
    tile traffic  = m K b ceil(N/tn) + K N b ceil(m/tm) + m N b        (output-stationary: the
                    input re-read per column of tiles, the weight per row of tiles, the output
                    written once; boundary tiles move only their valid elements; b = bytes of the
                    compute format)

A rank's work is the sum over its copies; the layer waits for the busiest rank. A replica
holds 3 h f b more bytes on its rank whether or not it is used.

Payback (declared rates): a rank serves its batch in max(padded FLOPs / compute rate, tile
traffic / interface bandwidth); a batch takes the busiest rank's time. Copying the replicas
costs setup = replica bytes / copy bandwidth + copies x copy startup, once, before the
batches; the saving per batch is baseline - replicated; it pays back strictly after
floor(setup / saving) + 1 batches (none when the saving is not positive); over B batches the
replicated deployment is chosen when every rank's extra bytes fit its budget and
setup + B replicated < B baseline.
"""

from fractions import Fraction

from ...errors import UserError
from ..tiles import gemm_tile
from ...summation import plain_sum

EXPERTS_CONVENTION = (
    "Grouped experts (one MoE layer): m_e assignments per expert by the routing (balanced: N k dealt "
    "round-robin; concentrated: experts 0..k-1 take N each); experts placed contiguous (e // (E/R)) or "
    "striped (e mod R), replicas splitting m_e by divmod (remainder to the earlier copy); per copy three "
    "GEMMs (gate, up [m,h]x[h,f], down [m,f]x[f,h]): valid 2mKN, padded 2 ceil(m/tm)tm ceil(K/tk)tk "
    "ceil(N/tn)tn, tile traffic mKb ceil(N/tn) + KNb ceil(m/tm) + mNb (output-stationary); the layer "
    "waits for the busiest rank.")

PAYBACK_CONVENTION = (
    "Replica payback (declared rates): a rank's batch takes max(padded FLOPs / compute rate, tile "
    "traffic / interface bandwidth), a batch the busiest rank's; setup = replica bytes / copy "
    "bandwidth + copies x startup, before the batches; pays back strictly after floor(setup / saving) "
    "+ 1 batches; replicated is chosen when every rank's extra bytes fit the budget and setup + B x "
    "replicated < B x baseline.")


def moe_block(arch):
    """The first MoE block of the architecture (its routed experts' geometry)."""
    for layer in arch.layers:
        for block in layer.blocks:
            if getattr(block, "experts", 0) and getattr(block, "expert_inter", 0):
                return block
    raise UserError(f"{arch.id} has no routed experts: grouped experts need an MoE model")


def histogram(routing, experts, top_k, tokens):
    """Assignments per expert under a deterministic routing model."""
    if routing == "concentrated":
        return [tokens] * top_k + [0] * (experts - top_k)
    if routing == "balanced":
        q, r = divmod(tokens * top_k, experts)
        return [q + (e < r) for e in range(experts)]
    raise UserError(f"grouped experts need a per-expert count: --routing balanced or concentrated, "
                    f"not '{routing}'")


def gemm(m, k, n, tile, b):
    """(valid FLOPs, padded FLOPs, tile traffic bytes) of one [m, k] x [k, n] GEMM (the kernel
    view's output-stationary tile, analyses/tiles.gemm_tile)."""
    t = gemm_tile(m, k, n, tile, a_bytes=b, b_bytes=b, c_bytes=b)
    return t["valid_matrix_flops"], t["padded_matrix_flops"], t["next_level_bytes"]


def grouped(hist, hidden, inter, ranks, placement, tile, b, replicas=()):
    """Per-rank totals and the layer's summary."""
    experts = len(hist)
    if experts % ranks:
        raise UserError(f"{ranks} ranks do not divide the {experts} experts")
    owners = {e: [e // (experts // ranks) if placement == "contiguous" else e % ranks] for e in range(experts)}
    extra = [0] * ranks
    for e, r in replicas:
        if e >= experts or r >= ranks:
            raise UserError(f"replica {e}:{r} is outside experts 0..{experts - 1} or ranks 0..{ranks - 1}")
        if r in owners[e]:
            raise UserError(f"expert {e} already has a copy on rank {r}")
        owners[e].append(r)
        extra[r] += 3 * hidden * inter * b
    rows = [{"rank": r, "active_copies": 0, "rows": 0, "valid_flops": 0, "padded_flops": 0,
             "tile_traffic_bytes": 0} for r in range(ranks)]
    rerouted = 0
    for e, m in enumerate(hist):
        q, rem = divmod(m, len(owners[e]))
        for i, r in enumerate(owners[e]):
            part = q + (i < rem)
            if i:
                rerouted += part
            if not part:
                continue
            row = rows[r]
            row["active_copies"] += 1
            row["rows"] += part
            for k, n in ((hidden, inter), (hidden, inter), (inter, hidden)):
                v, p, t = gemm(part, k, n, tile, b)
                row["valid_flops"] += v
                row["padded_flops"] += p
                row["tile_traffic_bytes"] += t
    valid = plain_sum(r["valid_flops"] for r in rows)
    padded = plain_sum(r["padded_flops"] for r in rows)
    return {"experts": experts, "active_experts": plain_sum(1 for m in hist if m), "assignments": plain_sum(hist),
            "valid_flops": valid, "padded_flops": padded,
            "padding_ratio": Fraction(padded, valid) if valid else None,
            "busiest_rank_valid_flops": max(r["valid_flops"] for r in rows),
            "busiest_rank_padded_flops": max(r["padded_flops"] for r in rows),
            "replicas": len(replicas), "rerouted_assignments": rerouted,
            "replica_bytes": plain_sum(extra), "replica_bytes_per_rank": extra, "ranks": rows}


def batch_ns(summary, compute_flops_per_s, interface_bytes_per_s):
    """The busiest rank's max(padded FLOPs / compute, tile traffic / interface), exact ns."""
    return max(max(Fraction(r["padded_flops"] * 10**9, compute_flops_per_s),
                   Fraction(r["tile_traffic_bytes"] * 10**9, interface_bytes_per_s)) for r in summary["ranks"])


def payback(base, repl, batches, compute, interface, copy_bw, startup_ns, budget):
    """The replica payback record (exact rationals in ns)."""
    old_b, new_b = batch_ns(base, compute, interface), batch_ns(repl, compute, interface)
    setup = Fraction(repl["replica_bytes"] * 10**9, copy_bw) + repl["replicas"] * startup_ns
    saving = old_b - new_b
    strict = int(setup // saving) + 1 if saving > 0 else None
    feasible = all(n <= budget for n in repl["replica_bytes_per_rank"])
    old, new = batches * old_b, setup + batches * new_b
    return {"batches": batches, "baseline_batch_ns": old_b, "replicated_batch_ns": new_b, "setup_ns": setup,
            "saving_per_batch_ns": saving, "strict_payback_batches": strict,
            "feasible_payback_batches": strict if feasible else None, "capacity_feasible": feasible,
            "baseline_window_ns": old, "replicated_window_ns": new,
            "selected": "replicated" if feasible and new < old else "baseline"}


LOCALITY_CONVENTION = (
    "Expert locality (declared rates): experts 0..K-1 are resident on the device, the rest in host "
    "memory; for the n remote experts hit, with T token-expert tasks, W = n x 3 h f b weight bytes and "
    "F = T x 6 h f FLOPs: run them on the CPU = 2 T h b activation bytes (there and back) / link + 2 n "
    "x startup + max(F / CPU rate, W / host memory bandwidth); copy them to the device = W / link + n x "
    "startup + max(F / device rate, W / device memory bandwidth); exact rationals of ns.")


def locality(hist, resident, hidden, inter, b, cpu_flops, host_bw, dev_flops, dev_bw, link_bw, startup_ns):
    """The non-resident experts of one layer: run on the CPU against copied to the device."""
    remote = [m for e, m in enumerate(hist) if e >= resident and m]
    n, tasks = len(remote), plain_sum(remote)
    weights, flops = n * 3 * hidden * inter * b, tasks * 6 * hidden * inter
    activations = 2 * tasks * hidden * b

    def ns(amount, rate):
        return Fraction(amount * 10**9, rate)

    cpu = ns(activations, link_bw) + 2 * n * startup_ns + max(ns(flops, cpu_flops), ns(weights, host_bw))
    copy = ns(weights, link_bw) + n * startup_ns + max(ns(flops, dev_flops), ns(weights, dev_bw))
    return {"resident_experts": resident, "remote_experts": n, "remote_tasks": tasks, "remote_weight_bytes": weights,
            "remote_matrix_flops": flops, "activation_roundtrip_bytes": activations, "cpu_ns": cpu,
            "copy_to_device_ns": copy, "resident_ns": max(ns(flops, dev_flops), ns(weights, dev_bw)),
            "faster": "cpu" if cpu < copy else "copy-to-device" if copy < cpu else "equal"}

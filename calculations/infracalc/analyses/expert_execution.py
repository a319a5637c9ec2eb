"""Same-cohort expert execution on TP x EP (x PP) ranks (`budget expert-execution`): the book's
chapter-6 eight-rank Qwen3-235B execution, with the route table declared.

Ranks: stage s, expert owner o (E / EP contiguous experts), tensor rank t; rank = (s EP + o) TP + t.
Every rank of a stage already holds the cohort's R = requests x tokens hidden rows (attention is
replicated), so no token is dispatched. Per MoE layer, with n_o assignments and a_o distinct tokens
on owner o, hidden h, expert width f, wire bytes per row w = h x element bytes + row metadata:

    expert matrices   6 n_o h (f / TP) FLOPs on each of the TP ranks of owner o
    tp_reduce         TP - 1 messages of a_o rows, tensor t -> tensor 0 of owner o (a_o > 0)
    ep_reduce         one message of a_o rows, owner o -> owner 0 (o >= 1, a_o > 0)
    ep_broadcast      EP - 1 messages of R rows, owner 0 -> owner o
    tp_broadcast      EP (TP - 1) messages of R rows, tensor 0 -> tensor t
    after a stage's last layer (not the last stage): pp_transfer, R rows to the next stage's first
                      rank, and pp_replicate, TP EP - 1 messages of R rows from it.

A message of n rows takes startup + n w / link. A phase's conditional bound is the largest summed
service at any one source or destination (full duplex); the pp phases add all their messages. The
expert phase is the busiest rank's FLOPs / the declared rank rate; the cohort's bound is the sum of
all phases over the layers (barriers between phases). Worked case (TP 2, EP 4, 16 tokens, top-8 of
128, balanced routes, 4096 wide, 8,208 B rows): per layer 16 + 12 + 48 + 64 = 140 rows, 1,149,120 B;
94 layers 108,017,280 B.
"""

from collections import Counter
from fractions import Fraction

from ..errors import UserError
from .routing_metadata import moe_geometry

PHASES = ("tp_reduce", "ep_reduce", "ep_broadcast", "tp_broadcast", "pp_transfer", "pp_replicate")


def routes(policy, *, requests, tokens, experts, top_k, declared=None):
    """Experts of every cohort row (request-major), the same in every layer: balanced gives row i the
    ids (i k + j) mod E, hot gives every row 0..k-1 (the book's synthetic tables); declared maps each
    position to its ids (every request alike)."""
    if declared is not None:
        if sorted(declared) != list(range(tokens)):
            raise UserError(f"--route must declare every position 0..{tokens - 1} exactly once")
        for p, ids in declared.items():
            if len(ids) != top_k or len(set(ids)) != top_k or not all(0 <= i < experts for i in ids):
                raise UserError(f"--route {p}: needs {top_k} distinct expert ids in 0..{experts - 1}")
        return [declared[p] for _ in range(requests) for p in range(tokens)]
    rows = requests * tokens
    if policy == "hot":
        return [list(range(top_k)) for _ in range(rows)]
    return [[(i * top_k + j) % experts for j in range(top_k)] for i in range(rows)]


def expert_execution(arch, *, tp, ep, pp=1, requests=1, tokens, policy="balanced", declared=None,
                     element_bytes=2, metadata_bytes=16, link=100 * 10**9, startup_s=Fraction(1, 10**6),
                     rank_flops=100 * 10**12):
    layers, experts, top_k, hashed, _ = moe_geometry(arch)
    if len(layers) != len(arch.layers):
        raise UserError(f"{arch.id} has dense layers: the execution model covers all-MoE stacks only")
    moe = next(b for b in arch.layers[0].blocks if hasattr(b, "expert_inter"))
    h, f = moe.hidden, moe.expert_inter
    if experts % ep or f % tp or len(layers) % pp:
        raise UserError(f"EP {ep} must divide {experts} experts, TP {tp} the width {f}, PP {pp} the "
                        f"{len(layers)} layers")
    table = routes(policy, requests=requests, tokens=tokens, experts=experts, top_k=top_k, declared=declared)
    r, per, row_bytes = len(table), experts // ep, h * element_bytes + metadata_bytes
    count, active = Counter(), [set() for _ in range(ep)]
    for token, ids in enumerate(table):
        for e in ids:
            count[e // per] += 1
            active[e // per].add(token)
    a = [len(s) for s in active]

    def rank(s, o, t):
        return (s * ep + o) * tp + t

    def svc(n):
        return startup_s + Fraction(n * row_bytes, link)

    ranks = tp * ep * pp
    flops, sent, received = [0] * ranks, [0] * ranks, [0] * ranks
    phase = {p: {"messages": 0, "rows": 0, "bound_s": Fraction(0)} for p in ("expert_matrices",) + PHASES}
    per_stage = len(layers) // pp

    def send(name, src, dst, n):
        sent[src] += n * row_bytes
        received[dst] += n * row_bytes
        phase[name]["messages"] += 1
        phase[name]["rows"] += n

    for layer in range(len(layers)):
        s = layer // per_stage
        for o in range(ep):
            for t in range(tp):
                flops[rank(s, o, t)] += 6 * count[o] * h * (f // tp)
                if t and a[o]:
                    send("tp_reduce", rank(s, o, t), rank(s, o, 0), a[o])
            if o and a[o]:
                send("ep_reduce", rank(s, o, 0), rank(s, 0, 0), a[o])
            if o:
                send("ep_broadcast", rank(s, 0, 0), rank(s, o, 0), r)
            for t in range(1, tp):
                send("tp_broadcast", rank(s, o, 0), rank(s, o, t), r)
        bounds = {"expert_matrices": Fraction(6 * max(count[o] for o in range(ep)) * h * (f // tp), rank_flops),
                  "tp_reduce": max([(tp - 1) * svc(n) for n in a if n and tp > 1], default=0),
                  "ep_reduce": sum(svc(n) for n in a[1:] if n),
                  "ep_broadcast": (ep - 1) * svc(r), "tp_broadcast": (tp - 1) * svc(r) if tp > 1 else 0}
        if (layer + 1) % per_stage == 0 and s + 1 < pp:
            first = rank(s + 1, 0, 0)
            send("pp_transfer", rank(s, 0, 0), first, r)
            for target in range(first + 1, first + tp * ep):
                send("pp_replicate", first, target, r)
            bounds["pp_transfer"], bounds["pp_replicate"] = svc(r), (tp * ep - 1) * svc(r)
        for name, b in bounds.items():
            phase[name]["bound_s"] += b
    total_bound = sum(p["bound_s"] for p in phase.values())
    busiest = max(flops)
    return {
        "model": arch.id, "moe_layers": len(layers), "hidden": h, "expert_inter": f, "routed_experts": experts,
        "top_k": top_k, "cohort_rows": r, "row_wire_bytes": row_bytes,
        "assignments": len(layers) * r * top_k,
        "expert_matrix_flops": sum(flops),
        "unique_expert_matrix_flops": len(layers) * 6 * r * top_k * h * f,
        "busiest_expert_compute_ranks": [i for i, x in enumerate(flops) if x == busiest],
        "dispatch_wire_bytes": 0,
        "total_wire_bytes": sum(sent),
        "phase_barrier_bound_s_exact": str(total_bound),
        "phase_barrier_bound_s": float(total_bound),
        "phases": [{"phase": name, "messages": p["messages"], "rows": p["rows"], "wire_bytes": p["rows"] * row_bytes,
                    "bound_s_exact": str(p["bound_s"])} for name, p in phase.items()],
        "ranks": [{"rank": i, "stage": i // (tp * ep), "expert_owner": i // tp % ep, "tensor_rank": i % tp,
                   "expert_matrix_flops": flops[i], "sent_wire_bytes": sent[i], "received_wire_bytes": received[i]}
                  for i in range(ranks)],
    }


EXPERT_EXECUTION_CONVENTIONS = [
    "Same cohort on every rank of a stage (replicated attention outputs): no token dispatch. Rank = (stage x EP + "
    "owner) x TP + tensor rank; owner o holds experts [o E/EP, (o+1) E/EP), each split TP ways along its width "
    "(the book's 'TP t, EP e' on t e ranks). Expert FLOPs 6 n h (f / TP) per owner's n assignments and tensor rank.",
    "Per MoE layer: TP partial sums to tensor 0 (a_o rows), EP partials to owner 0 (a_o rows, owners >= 1 with "
    "work), then EP and TP broadcasts of all R rows; a stage boundary adds one transfer and TP x EP - 1 "
    "replications of R rows. A row's wire bytes are h x element bytes + declared metadata; a message takes the "
    "declared startup + bytes / link.",
    "Conditional bound: per layer and phase the largest summed service at one source or destination (full duplex; "
    "pp phases add all their messages), the expert phase the busiest rank's FLOPs / the declared rate; summed over "
    "phases and layers. Declared teaching rates, not a measured runtime; attention, router and head not included. "
    "Capacity: `parallel` with the same layout (weights + requests x KV + reserve).",
]

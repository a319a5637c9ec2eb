"""On-chip schedules of one attention head in declared teaching ticks (the book's chapter-4 input
slots and matrix-vector handoff examples). Every rate is declared work per tick, not a device's
clock or peak; each service time is rounded up to whole ticks on its own.

Input slots of one QK^T tile (tm queries x tn keys) split along the head dimension d into
c = d / tk chunks. A chunk's input (its Q and K columns, 2 (tm + tn) tk BF16 bytes) is issued on
one load server (load = ceil(bytes / input rate)), completes after a latency, and waits in a slot
until the matrix server has consumed it (compute = ceil(2 tm tn tk / matrix rate)):

    issue_i   = max(load server free, end of chunk i - S's compute, [compute free: synchronous])
    ready_i   = issue_i + load + latency [+ register staging: synchronous]
    compute_i = max(ready_i, compute free) .. + compute

Synchronous staging passes the bytes through registers (in and out: ceil(2 bytes / register
rate) more ticks) and issues the next load only after the compute; the asynchronous path copies
straight into the slot. Slots of S x chunk bytes are screened against a declared capacity; the
FP32 accumulator (4 tm tn) and register staging are other tiers, not screened.

Matrix-vector handoff of a materialized causal softmax: L positions in row groups of r rows; per
group QK^T [r, d] x [d, L] on the matrix server, its FP32 scores (4 r L bytes) handed to the vector
server, softmax there (3 r L - r scalar operations, r (L - 1) comparisons, r L exponentials and r L
divisions, each class at its own rate, serially), the BF16 probabilities (2 r L) handed back, PV
on the matrix server. A staged path serves each crossing twice on one handoff server (write and
read), a direct path once. With S slots group i's QK^T waits for group i - S's PV (a slot holds a
group's scores and probabilities from its QK^T to its PV). Scheduled by the declared-task-graph
list scheduler (analyses/task_graph.py): the groups' tasks are listed in group order, so ties on a
server go to the earlier group.
"""

from ..splits import ceil_div
from .task_graph import list_schedule, task

HANDOFF_CONVENTIONS = [
    "Declared teaching ticks: every rate is work per tick (bytes, FLOPs, operations), not a device's clock, "
    "peak or measurement; each service time is rounded up to whole ticks on its own. No launch, bank "
    "conflicts, synchronisation, output store or instruction legality is modelled.",
]

INPUT_SLOT_CONVENTIONS = HANDOFF_CONVENTIONS + [
    "One QK^T tile (tm x tn, FP32 accumulator) split along the head dimension into chunks of tk; a chunk's "
    "BF16 Q and K columns are issued on one load server, complete after the latency and hold a slot from "
    "issue to the end of their compute. Synchronous: register staging in and out, the next issue after the "
    "compute; asynchronous: straight into the slot. Only the slots' bytes are screened against the capacity.",
]

MATRIX_VECTOR_CONVENTIONS = HANDOFF_CONVENTIONS + [
    "One head, the full causal score matrix materialized (masked entries computed and set to -inf): per row "
    "group QK^T and PV on one matrix server, softmax's scalar, comparison, exponential and division classes "
    "serially on one vector server, FP32 scores and BF16 probabilities crossing on one handoff server (staged: "
    "write and read, direct: once). A slot holds a group's scores and probabilities from its QK^T to its PV; "
    "list scheduling of the task graph (earliest start, input order on ties), not an optimal schedule.",
]



def input_schedule(load, compute, chunks, latency, slots, register=0, synchronous=False):
    rows, load_free, compute_free = [], 0, 0
    for i in range(chunks):
        slot_free = rows[i - slots]["compute_end"] if i >= slots else 0
        issue = max(load_free, slot_free, compute_free if synchronous else 0)
        ready = issue + load + latency + (register if synchronous else 0)
        start = max(ready, compute_free)
        rows.append({"chunk": i, "slot": i % slots, "issue": issue, "loaded": issue + load, "ready": ready,
                     "compute_start": start, "compute_end": start + compute})
        load_free, compute_free = issue + load, start + compute
    return {"finish_tick": compute_free, "chunks": rows}


def attention_input(*, head_dim, tile, latency, input_rate, matrix_rate, register_rate, capacity, slot_counts):
    tm, tk, tn = tile
    chunks = head_dim // tk
    chunk_bytes = 2 * (tm + tn) * tk
    load, compute = ceil_div(chunk_bytes, input_rate), ceil_div(2 * tm * tn * tk, matrix_rate)
    register = ceil_div(2 * chunk_bytes, register_rate)
    rows = []
    for mode in ("synchronous register stage", "asynchronous direct to buffer"):
        sync = mode.startswith("synchronous")
        for s in slot_counts:
            run = input_schedule(load, compute, chunks, latency, s, register, sync)
            fits = s * chunk_bytes <= capacity
            rows.append({"mode": mode, "slots": s, "slot_bytes": s * chunk_bytes, "fits": fits,
                         "register_interface_bytes": 2 * chunk_bytes * chunks if sync else 0,
                         "accumulator_bytes": 4 * tm * tn, "finish_tick": run["finish_tick"],
                         "capacity_qualified_finish_tick": run["finish_tick"] if fits else None})
    free = input_schedule(load, compute, chunks, latency, chunks)["finish_tick"]
    asynchronous = [r for r in rows if r["mode"].startswith("asynchronous")]
    return {
        "chunks": chunks, "chunk_input_bytes": chunk_bytes, "chunk_matrix_flops": 2 * tm * tn * tk,
        "load_ticks": load, "compute_ticks": compute, "register_ticks": register,
        "unbounded_finish_tick": free,
        "fewest_listed_slots_reaching_it": next((r["slots"] for r in asynchronous if r["finish_tick"] == free), None),
        "fastest_fitting_async_tick": min((r["finish_tick"] for r in asynchronous if r["fits"]), default=None),
        "rows": rows,
    }


def matrix_vector(*, head_dim, length, group_rows, slots, direct, rates, capacity):
    """rates: matrix (FLOPs/tick), scalar, compare, exp, div (operations/tick), link (bytes/tick)."""
    d, r, hops = head_dim, group_rows, 1 if direct else 2
    groups = length // r
    scores, probs = 4 * r * length, 2 * r * length
    qk = 2 * r * length * d
    softmax = (ceil_div(3 * r * length - r, rates["scalar"]) + ceil_div(r * (length - 1), rates["compare"])
               + ceil_div(r * length, rates["exp"]) + ceil_div(r * length, rates["div"]))
    tasks = []
    for i in range(groups):
        g = f"g{i}"
        deps = [f"g{i - slots}.pv"] if i >= slots else []
        tasks += [task(g + ".qk", ceil_div(qk, rates["matrix"]), "matrix", deps),
                  task(g + ".scores", ceil_div(hops * scores, rates["link"]), "handoff", [g + ".qk"]),
                  task(g + ".softmax", softmax, "vector", [g + ".scores"]),
                  task(g + ".probabilities", ceil_div(hops * probs, rates["link"]), "handoff", [g + ".softmax"]),
                  task(g + ".pv", ceil_div(qk, rates["matrix"]), "matrix", [g + ".probabilities"])]
    run = list_schedule(tasks)
    ends = {t["task"]: t for t in run["schedule"]}
    reserved = slots * (scores + probs)
    fits = reserved <= capacity
    return {
        "groups": groups, "score_bytes_per_slot": scores, "probability_bytes_per_slot": probs,
        "reserved_bytes": reserved, "fits": fits, "matrix_flops": 2 * qk * groups,
        "crossing_bytes": groups * (scores + probs), "served_handoff_bytes": hops * groups * (scores + probs),
        "finish_tick": run["finish_ns"], "capacity_qualified_finish_tick": run["finish_ns"] if fits else None,
        "first_vector_start_tick": min(t["start_ns"] for t in run["schedule"] if t["resource"] == "vector"),
        "group_work": [{"group": i, "qk_flops": qk, "pv_flops": qk, "scalar_ops": 3 * r * length - r,
                        "comparisons": r * (length - 1), "exponentials": r * length, "divisions": r * length,
                        "masked_scores": sum(length - row - 1 for row in range(i * r, (i + 1) * r)),
                        "slot": i % slots, "slot_taken_tick": ends[f"g{i}.qk"]["start_ns"],
                        "slot_released_tick": ends[f"g{i}.pv"]["end_ns"]} for i in range(groups)],
        "schedule": [{"task": t["task"], "resource": t["resource"], "start_tick": t["start_ns"],
                      "end_tick": t["end_ns"]} for t in run["schedule"]],
    }

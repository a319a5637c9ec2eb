"""List scheduling of a declared task graph on serial resources (the book's chapter-5 request
DAG and two-micro-batch overlap examples).

Each task has a declared duration, the tasks it depends on and at most one resource; a resource
runs one task at a time, without preemption (no resource: unconstrained). Repeatedly, among the
tasks whose dependencies are all scheduled:

    start(t) = max(end of each dependency, end of the last task scheduled on t's resource), 0 if none

and the task with the earliest start is scheduled next (ties: the first in input order). Its
critical predecessor is the dependency or resource predecessor whose end sets its start (the first
listed on a tie, dependencies before the resource). The finish is the latest end; the critical path
follows critical predecessors back from the task that ends last (the first scheduled on a tie).
Serial work = the sum of all durations (the cost Amdahl's law applies to, not the wall clock).

Two micro-batches of a layer's FFN (N = a memory or communication phase, C = compute; declared
times, not derived from FLOPs or bytes): full = N then C; split serial = N0, C0, N1, C1 in a
chain; split ideal = N0 -> C0 and N0 -> N1 on their own resources, C1 after C0 and N1; paired =
N0, then C0 and N1 together as one joint window J (declared contention), then C1. The paired
split beats the full batch only if J < full - N0 - C1.
"""

from fractions import Fraction

TASK_GRAPH_CONVENTIONS = [
    "Declared task graph, integer nanoseconds: a task starts when its dependencies have ended and the last "
    "task on its resource has ended (a resource runs one task at a time, no preemption; no resource = "
    "unconstrained); the earliest-starting ready task is scheduled next, ties in input order. Not an "
    "optimal schedule; no queueing, launch or external work outside the graph.",
    "Critical path: from the task that ends last, back through each task's critical predecessor (the "
    "dependency or resource predecessor whose end sets its start). Serial work = the sum of durations "
    "(Amdahl's law applies to it, not to the overlapped wall clock). Frozen old path = the changed durations "
    "summed over the baseline's critical path (not a finish time).",
]


def task(name, duration, resource=None, deps=()):
    return {"task": name, "duration_ns": duration, "resource": resource, "deps": tuple(deps)}


def list_schedule(tasks):
    """Scheduled rows (task, resource, start, end, critical predecessor), the finish and the critical path.

    The rule of the module docstring, in O(n log n): the ready tasks sit in a heap by (start, input
    order) with a start that can only be too early (a resource's last end only grows), so the task
    popped is scheduled when its start, worked out again, is unchanged, and pushed back otherwise."""
    import heapq

    index = {t["task"]: i for i, t in enumerate(tasks)}
    waiting = [len(t["deps"]) for t in tasks]
    dependents = [[] for _ in tasks]
    for i, t in enumerate(tasks):
        for d in t["deps"]:
            dependents[index[d]].append(i)
    done, last_on = {}, {}

    def start_of(t):
        before = list(t["deps"]) + ([last_on[t["resource"]]] if t["resource"] in last_on else [])
        critical = max(before, key=lambda d: done[d]["end_ns"]) if before else None
        return (done[critical]["end_ns"] if critical else 0), critical

    ready = [(0, i) for i, t in enumerate(tasks) if not t["deps"]]
    while ready:
        key, i = heapq.heappop(ready)
        t = tasks[i]
        start, critical = start_of(t)
        if start != key:
            heapq.heappush(ready, (start, i))
            continue
        done[t["task"]] = {"task": t["task"], "resource": t["resource"], "start_ns": start,
                           "end_ns": start + t["duration_ns"], "critical_predecessor": critical}
        if t["resource"] is not None:
            last_on[t["resource"]] = t["task"]
        for j in dependents[i]:
            waiting[j] -= 1
            if not waiting[j]:
                heapq.heappush(ready, (start_of(tasks[j])[0], j))
    if len(done) != len(tasks):
        raise ValueError("the task graph has a dependency cycle")
    rows = list(done.values())
    cursor, path = max(rows, key=lambda r: r["end_ns"])["task"], []
    while cursor is not None:
        path.append(cursor)
        cursor = done[cursor]["critical_predecessor"]
    return {"finish_ns": max(r["end_ns"] for r in rows), "critical_path": path[::-1],
            "serial_work_ns": sum(t["duration_ns"] for t in tasks), "schedule": rows}


def request_dag(tasks, *, durations=None, resources=None):
    """The graph as declared and with changed durations / resources, scheduled both ways."""
    durations, resources = durations or {}, resources or {}
    changed = [dict(t, duration_ns=durations.get(t["task"], t["duration_ns"]),
                    resource=resources.get(t["task"], t["resource"])) for t in tasks]
    before, after = list_schedule(tasks), list_schedule(changed)
    old_path = set(before["critical_path"])
    return {
        "baseline_finish_ns": before["finish_ns"], "changed_finish_ns": after["finish_ns"],
        "request_speedup_exact": str(Fraction(before["finish_ns"], after["finish_ns"])) if after["finish_ns"] else None,
        "baseline_critical_path": " -> ".join(before["critical_path"]),
        "changed_critical_path": " -> ".join(after["critical_path"]),
        "serial_work_before_ns": before["serial_work_ns"], "serial_work_after_ns": after["serial_work_ns"],
        "frozen_old_path_ns": sum(t["duration_ns"] for t in changed if t["task"] in old_path),
        "baseline_schedule": before["schedule"], "changed_schedule": after["schedule"],
    }


def microbatch_overlap(*, full, split_n, split_c, joint_window):
    """Finish of the full batch and of the split's serial, ideal and paired schedules."""
    (n, c), (n0, n1), (c0, c1) = full, split_n, split_c
    graphs = {
        "full": [task("N", n, "N"), task("C", c, "C", ["N"])],
        "split_serial": [task("N0", n0, "N"), task("C0", c0, "C", ["N0"]), task("N1", n1, "N", ["C0"]),
                         task("C1", c1, "C", ["N1"])],
        "split_ideal": [task("N0", n0, "N"), task("C0", c0, "C", ["N0"]), task("N1", n1, "N", ["N0"]),
                        task("C1", c1, "C", ["C0", "N1"])],
        "split_paired": [task("N0", n0, "N"), task("C0+N1", joint_window, "joint window", ["N0"]),
                         task("C1", c1, "C", ["C0+N1"])],
    }
    runs = {name: list_schedule(g) for name, g in graphs.items()}
    full_finish = runs["full"]["finish_ns"]
    threshold = full_finish - n0 - c1
    return {
        "full_finish_ns": full_finish, "split_serial_finish_ns": runs["split_serial"]["finish_ns"],
        "split_ideal_finish_ns": runs["split_ideal"]["finish_ns"],
        "split_paired_finish_ns": runs["split_paired"]["finish_ns"],
        "split_compute_increase_ns": c0 + c1 - c,
        "joint_window_strict_bound_ns": threshold, "a_positive_window_can_win": threshold > 0,
        "paired_beats_full": runs["split_paired"]["finish_ns"] < full_finish,
        "schedules": [dict(r, graph=name) for name, run in runs.items() for r in run["schedule"]],
    }

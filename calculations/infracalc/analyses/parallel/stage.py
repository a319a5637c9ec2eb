"""The one stage evaluation: what one device of a pipeline stage costs in one phase
(`evaluate`), which the `parallel` record, the batch sweep and the search all read; they
differ only in how much of it `stage_record` turns into dicts.

Phases: "prefill" (one pass of the micro-batch's prompts on the slowest CP rank),
"first" and "last" (the first and the last decode step) and "decode" (all G - 1 decode
steps, summed in closed form; their collectives recur once per step)."""

from ... import comm
from ...record import Record
from . import communication as comms
from .costs import decode_cost, prefill_cost
from .plan import stage_kinds, stages
from ...summation import plain_sum


class StageFigures(Record):
    """One device of a stage in one phase, for a micro-batch: its operator-sum roofline
    (`Cost`, summed over the runs), the collectives of one run and their seconds on their
    tiers, and the stage time (roofline + communication, or the larger with --overlap)."""
    cost: object          # costs.Cost
    collectives: tuple    # ((Collective with count 1, runs in one pass), ...): communication.stage_collectives
    times: tuple          # seconds of each collective's runs in one pass (comm_time)
    runs: int             # passes the collectives recur: G - 1 in "decode", else 1
    comm_s: float         # plain_sum(times) x runs
    time_s: float

    @property
    def roofline_s(self):
        return self.cost.time_s

    @property
    def exposed_comm_s(self):
        return self.time_s - self.cost.time_s


def evaluate(plan, lay, stage, phase, b):
    """StageFigures of one device of `stage` in `phase` for a micro-batch of b requests
    (memoized per stage kind: identical stages are costed once)."""
    def make():
        runs, tokens, kind = 1, 1, "decode"
        if phase == "prefill":
            cost, tokens = prefill_cost(plan, lay, stage, b)
            kind = "prefill"
        else:
            cost = decode_cost(plan, lay, stage, b, "total" if phase == "decode" else phase)
            runs = plan.steps if phase == "decode" else 1
        cs = comms.stage_collectives(plan, lay, stage, kind, b, tokens_per_rank=tokens)
        times = tuple([comms.comm_time(plan, c, n) for c, n in cs])
        comm_s = plain_sum(times) * runs
        return StageFigures(cost=cost, collectives=cs, times=times, runs=runs, comm_s=comm_s,
                            time_s=comms.stage_time(plan, cost.time_s, comm_s))
    return plan.memo(("stage", lay.tp, lay.ep, lay.cp, lay.sp, comms.comm_tiers(plan, lay),
                      plan.kind_id(lay, stage), phase, b), make)


def stage_figures(plan, lay, phase, b):
    """[(Stage, StageFigures)] of every stage in order, each kind evaluated once."""
    ids, firsts = stage_kinds(plan, lay)
    figs = {k: evaluate(plan, lay, st, phase, b) for k, st in firsts}
    return [(st, figs[k]) for st, k in zip(stages(plan, lay), ids)]


def stage_times(plan, lay, phase, b):
    """Every stage's time in `phase`, in stage order: what a search ranks by."""
    ids, firsts = stage_kinds(plan, lay)
    if len(firsts) == 1:
        return [evaluate(plan, lay, firsts[0][1], phase, b).time_s] * len(ids)
    t = {k: evaluate(plan, lay, st, phase, b).time_s for k, st in firsts}
    return [t[k] for k in ids]


def ideal_s(r, cost):
    """The least time of a stage's work on its device: max(matrix FLOPs / matrix peak, vector
    FLOPs / vector peak, (weight bytes read + KV bytes read and written) / bandwidth). The three
    units may run in parallel, operators may fuse (activations never leave the chip) and the
    weights and cache must be read at least once per pass (they exceed on-chip memory)."""
    f = cost.field
    return max(f("matrix_flops") / r.matrix_flops_per_s, f("vector_flops") / r.vector_flops_per_s,
               (f("weight_read") + f("kv_read") + f("kv_write")) / r.bytes_per_s)


def lower_bound_s(plan, fig):
    """(ideal s, fastest communication s, their max): the stage's lower bound (LOWER_BOUND),
    its work's least time with communication hidden under it up to that time."""
    ideal = ideal_s(plan.r, fig.cost)
    fastest = plain_sum(comms.comm_time_fastest(plan, c, n) for c, n in fig.collectives) * fig.runs
    return ideal, fastest, max(ideal, fastest)


def collective_rows(plan, cs, times=None, runs=1):
    """The record rows of collectives (seconds from `times`, else comm_time), x runs passes."""
    times = times if times is not None else [comms.comm_time(plan, c) for c in cs]
    rows = [{"name": c.name, "dim": c.dim, "kind": c.kind, "bytes_per_run": c.bytes, "runs": c.count,
             "group": c.group, "tier": c.tier,
             "wire_bytes_per_run": round(comm.wire_bytes(c, comms.algorithm_for(plan, c))), "time_s": t}
            for c, t in zip(cs, times)]
    if runs != 1:
        for row in rows:
            row.update(passes=runs, time_s=row["time_s"] * runs)
    return rows


def stage_record(plan, stage, fig, detail=True):
    """One stage's phase record: roofline split, work, collectives, exposed communication and
    (detail) the lower bound; without detail the times only."""
    c = fig.cost
    if not detail:
        return {"stage": stage.index, "roofline_s": c.time_s, "comm_s": fig.comm_s,
                "exposed_comm_s": fig.exposed_comm_s, "time_s": fig.time_s}
    f = c.field
    ideal, fastest, bound = lower_bound_s(plan, fig)
    return {"stage": stage.index, "roofline_s": c.time_s, "compute_bound_s": c.compute_s, "weights_s": c.weights_s,
            "kv_s": c.kv_s, "activations_s": c.act_s, "comm_s": fig.comm_s, "exposed_comm_s": fig.exposed_comm_s,
            "time_s": fig.time_s, "matrix_flops": f("matrix_flops"), "vector_flops": f("vector_flops"),
            "weight_bytes_read": f("weight_read"), "kv_bytes_read": f("kv_read"),
            "kv_bytes_written": f("kv_write"), "act_bytes_moved": f("act_read") + f("act_write"),
            "ideal_s": ideal, "comm_fastest_s": fastest, "lower_bound_s": bound,
            "collectives": collective_rows(plan, comms.merged_collectives(fig.collectives), fig.times, fig.runs)}


def stage_records(plan, lay, phase, b, detail=True):
    """stage_record of every stage in order, made once per stage kind (a deep pipeline has
    few kinds): stages of one kind get a copy of their kind's record with their index."""
    ids, firsts = stage_kinds(plan, lay)
    recs = {k: stage_record(plan, st, evaluate(plan, lay, st, phase, b), detail) for k, st in firsts}
    return [recs[k] if recs[k]["stage"] == st.index else dict(recs[k], stage=st.index)
            for st, k in zip(stages(plan, lay), ids)]

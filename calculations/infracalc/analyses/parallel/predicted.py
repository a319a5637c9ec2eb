"""The predicted figure of one `parallel` layout, per stage and phase: the stage's shard at the
achievable rates (efficiency.predict, as `forward` and `decode` predict a pass) plus its
collectives as NCCL runs them (efficiency.collective, with the fitted residual), none of them
overlapped (TensorRT-LLM does not overlap the TP all-reduces with the GEMMs: the serving
prediction's rule), composed into TTFT and TPOT by the pipeline formulas the estimate uses.

Per stage and phase, for a micro-batch of b requests:

    predicted = sum over the shard's ledger rows of predict.op_time (decode steps: piece_times,
                every step's rows, in closed form)
              + sum over its collectives of runs x efficiency.collective.seconds

The work is the estimate's (`costs`: the same units, layer counts, CP ranks and decode-step
sums), only at other rates; so on one device it is `decode`'s predicted TTFT and TPOT exactly."""

from ... import ledger
from ...arch import Layer
from ...summation import plain_sum
from ..efficiency import predict
from .communication import transfer
from .costs import decode_terms, history_free, pieces, prefill_ranks, top_unit, unit
from .pipeline import latency, micro_batches, prefill_pipeline, step_pipeline
from .plan import stage_kinds
from .stage import evaluate
from ... import layout as placement
from ...splits import ceil_div

DEFINITION = (
    "Predicted (a third figure, not a bound; efficiency.predict and efficiency.collective): per stage the "
    "shard's operators at the achievable rates (measured matmul and HBM fractions, fused-attention "
    "throughput, a fixed cost per kernel), the decode steps summed exactly, plus every collective as NCCL "
    "runs it (its algorithm and protocol for the size, the fitted residual), none overlapped; composed into "
    "TTFT and TPOT as the estimate is. A batch of b requests decoding together, not a continuous-batching "
    "steady state (that is the serving section's predicted figure).")


def rates(plan):
    """The plan's achievable Rates, or None when the device has no prediction."""
    got = plan.memo(("predicted rates",), lambda: predict.achievable(plan.device, plan.w.compute_dtype) or False)
    return got or None


def unit_s(plan, a, w, spec):
    """costs.unit_cost's work of architecture `a` at the achievable rates: spec ("pass",) ->
    (seconds of one pass,); ("steps", lo, hi) -> (the steps lo..hi summed, the step at lo, the
    step at hi), by the same branches (one block at a time over decode steps, a history-free
    block as one step x the steps)."""
    def make():
        p = rates(plan)
        if not a.layers and not any(b.tensors() or b.ops(w) for b in a.top_blocks()):
            return (0.0,) * (1 if spec[0] == "pass" else 3)
        if a.layers and spec[0] == "steps" and len(a.layers[0].blocks) > 1:
            parts = [unit_s(plan, unit(plan, Layer(blocks=(b,))), w, spec) for b in a.layers[0].blocks]
            return tuple([plain_sum(part[i] for part in parts) for i in range(3)])
        if a.layers and spec[0] == "steps" and history_free(plan, a.layers[0].blocks[0], w):
            one = unit_s(plan, a, w if not w.history else w.replace(history=0), ("pass",))[0]
            return (one * (spec[2] - spec[1] + 1), one, one)
        if spec[0] == "pass":
            return (predict.pass_time(ledger.operators(a, w), p),)
        if not a.layers:
            one = unit_s(plan, a, w.replace(history=0), ("pass",))[0]
            return (one * (spec[2] - spec[1] + 1), one, one)
        pcs = pieces(plan, a, w, spec[1], spec[2])
        return (plain_sum(predict.piece_times(pcs, p)), plain_sum(predict.piece_times(pcs.first_step(), p)),
                plain_sum(predict.piece_times(pcs.last_step(), p)))
    return plan.memo(("predicted unit", a, w, spec), make)


def stage_work_s(plan, lay, stage, w, spec, i=0):
    """unit_s(...)[i] of one device of `stage`: its top blocks' + count x each distinct layer's."""
    total = unit_s(plan, top_unit(plan, lay, stage), w, spec)[i]
    for layer, count, _ in placement.device_layers(plan.arch, lay, stage):
        total += count * unit_s(plan, unit(plan, layer), w, spec)[i]
    return total


def prefill_s(plan, lay, stage, b):
    """The prefill of b prompts on the slowest CP rank (costs.prefill_ranks' candidates)."""
    return max(stage_work_s(plan, lay, stage, plan.workload(plan.wp, batch=b, logits="last", tokens=tokens,
                                                            history=history), ("pass",))
               for tokens, history in prefill_ranks(plan, lay.cp))


def decode_s(plan, lay, stage, b, which="total"):
    """costs.decode_cost's steps at the achievable rates (the same weighted sum,
    costs.decode_terms: under CP, cp x the rank's steps less the ends)."""
    w, spec, terms = decode_terms(plan, lay, b, which)
    (i, k), rest = terms[0], terms[1:]
    total = k * stage_work_s(plan, lay, stage, w, spec, i)
    for i, k in rest:   # cp x the sum - x first - y last, left to right
        total += k * stage_work_s(plan, lay, stage, w, spec, i)
    return total


def collective_s(plan, c, runs):
    """`runs` runs of collective `c` as NCCL runs it on the plan's links."""
    from ..efficiency import collective

    return runs * collective.seconds(c, plan.links.get("up"), plan.links.get("out"), plan.device.id)


def stage_s(plan, lay, stage, phase, b):
    """(work s, communication s) of one device of `stage` in `phase` for a micro-batch of b."""
    fig = evaluate(plan, lay, stage, phase, b)
    comm = plain_sum(collective_s(plan, c, n) for c, n in fig.collectives) * fig.runs
    work = (prefill_s(plan, lay, stage, b) if phase == "prefill" else
            decode_s(plan, lay, stage, b, "total" if phase == "decode" else phase))
    return work, comm


def phases(plan, lay, batch, ph):
    """Per phase of `ph` (pipeline.phases' record): every stage's predicted (work, comm) and the
    pipeline composition of their sums with the predicted boundary transfer; None without rates."""
    if rates(plan) is None:
        return None
    m = micro_batches(lay, batch)
    b = batch // m
    ids, firsts = stage_kinds(plan, lay)
    c = ceil_div(plan.P, lay.cp)
    out = {"micro_batches": m}
    for name in ("prefill", "first", "last", "decode"):
        if name not in ph:
            continue
        per_kind = {k: stage_s(plan, lay, st, name, b) for k, st in firsts}
        times = [per_kind[k] for k in ids]
        runs = plan.steps if name == "decode" else 1
        xc = transfer(plan, lay, b * c if name == "prefill" else b)[0]
        xs = plain_sum(collective_s(plan, x, x.count) for x in xc) * runs
        totals = [w + cm for w, cm in times]
        comp = (prefill_pipeline(totals, xs, m, lay.pp) if name == "prefill" else
                step_pipeline(totals, xs, m, lay.pp))
        out[name] = dict(comp, stages=times, transfer_s=xs)
    return out


def annotate(plan, lay, batch, ph, lat):
    """Adds each stage record's `predicted_s`, `predicted_comm_s` and `predicted_efficiency`
    (lower bound / predicted) to `ph`, and the predicted TTFT, TPOT and tokens/s to `lat`
    (the estimate's latency record); nothing without a prediction on the device."""
    pred = phases(plan, lay, batch, ph)
    if pred is None:
        return
    for name, p in pred.items():
        if name == "micro_batches":
            continue
        for rec, (work, comm) in zip(ph[name]["stages"], p["stages"]):
            rec["predicted_s"] = work + comm
            rec["predicted_comm_s"] = comm
            if "lower_bound_s" in rec:
                rec["predicted_efficiency"] = rec["lower_bound_s"] / (work + comm) if work + comm else None
        ph[name]["predicted_transfer_s"] = p["transfer_s"]
    got = latency(plan, lay, batch, pred)
    lat.update({f"predicted_{k}": got[k] for k in (
        "ttft_s", "ttft_first_micro_batch_s", "tpot_first_s", "tpot_mean_s", "tpot_last_s", "generation_s",
        "decode_tokens_per_s_per_request", "decode_tokens_per_s_replica", "decode_tokens_per_s_cluster",
        "decode_tokens_per_s_per_device", "tokens_per_s_cluster", "tokens_per_s_per_device")})

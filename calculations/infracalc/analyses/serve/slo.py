"""SLO sizing: the fewest devices whose best layout meets a TTFT and a TPOT limit.

Device counts are tried in increasing order (every count up to 16, whole 8-device
servers up to 64, then 96, 128, 192, 256, ...: 2^k and 1.5 x 2^k of them) up to
--max-devices; at each count,
`parallel`'s layout search (every layout the model admits, the best batch per
replica whose mean TPOT is within the limit, ranked by decode tokens/s per
device) gives the candidates, and a candidate meets the TTFT limit when one
prompt's prefill on it (batch 1: a server admitting prompts as they come) is
within it. The first count with a candidate is the answer, with its best
layout; every smaller count is listed with the reason it fails. All figures
are `parallel`'s estimate (operator-sum roofline plus exposed communication);
the chosen layout's lower bounds are shown beside. A count that fails on memory
fails exactly (weights and reserve exceed the devices); one that fails on time
fails under the estimate.
"""

from .. import parallel
from ..parallel import search as layouts

SLO_PREDICTED = (
    "SLO by the predicted figure (--slo-figure predicted, the default): among the layouts the "
    "estimate admits at a count, each at its estimate batch B, the largest batch b <= B of the "
    "search's list whose predicted TPOT and TTFT meet the limits; the answer is the best by "
    "predicted output tokens/s per device (its estimate and lower bounds at b meet the limits too); "
    "a count whose candidates the prediction does not model at all (EP under a skewed routing "
    "model only) is judged by "
    "the estimate, said so; a count the estimate rejects is not tried.")

SLO_CONVENTION = (
    "SLO sizing: device counts 1, 2, ..., 16, 24, 32, ..., 64, then 96, 128, 192, 256, ... (2^k and "
    "1.5 x 2^k), up to --max-devices; at each count a first pass at batch 1 drops the layouts "
    "over --tpot-limit there (the mean TPOT grows with the batch); then, where one is left, "
    "count `parallel --search` (every admitted layout; per layout the best batch per replica, "
    "pp micro-batches of 1, 4, 16, ... requests, whose mean TPOT is within --tpot-limit) and the "
    "TTFT of one prompt's prefill on the layout (batch 1) against --ttft-limit; the answer is the "
    "first count with a layout meeting both, the best by decode tokens/s per device; figures are "
    "the estimate (operator-sum roofline plus exposed communication), queueing not included.")


def device_counts(max_devices):
    """Every count 1 .. 16, whole servers of 8 up to 64 (24, 32, ..., 64), then 2^k and
    1.5 x 2^k servers' worth (96, 128, 192, 256, ...), up to max_devices (and max_devices)."""
    counts = list(range(1, 17)) + list(range(24, 65, 8))
    k = 64
    while k < max_devices:
        counts += [k * 3 // 2, k * 2]
        k *= 2
    out = sorted({n for n in counts if n <= max_devices} | {max_devices})
    return out


def _ttft(plan, lay):
    return layouts.score(plan, lay, 1, "ttft")[0]


def _failure(rejected, best_ttft, ttft_limit):
    """Why no layout of a count meets the limits: the TTFT the best admitted layout reaches,
    else the reason most layouts were rejected."""
    if best_ttft is not None:
        lay, t = best_ttft
        return f"TTFT {t:.4g} s > {ttft_limit:.4g} s even on the fastest layout ({lay.label()})"
    if not rejected:
        return "no layout of this many devices"
    top = rejected[0]
    text = f"{top['reason']} ({top['layouts']} of the layouts, e.g. {top['example']})"
    if top["least_shortfall_bytes"]:
        text += f"; short by {top['least_shortfall_bytes']:,} B at best"
    return text


def _predicted_choice(plan, n, ranked, ttft_limit, tpot_limit, memo):
    """The best candidate by the predicted figure: among the layouts the estimate admits (each at
    its estimate batch B), per layout the prediction models, the largest batch b <= B of the
    search's list whose predicted TPOT is within the limit, kept when its predicted TTFT is
    too; ranked by predicted output tokens/s per device (the estimate batch's lower bounds and
    estimate meet the limits, so every figure of the answer does). Only when the prediction models
    none of the candidates (EP under a skewed routing model) is the estimate's best taken, said so; {'meets': False,
    ...} when modelled candidates exist and none meets the predicted limits; None when no layout
    meets the TTFT limit (the caller reports why)."""
    from ..efficiency.serving import predicted_at_batch

    best, modelled, fallback = None, 0, None
    for value, _, lay, batch, lat in ranked:
        ttft = _ttft(plan, lay)
        if ttft_limit is not None and ttft > ttft_limit:
            continue
        chosen = None
        p = None
        for b in reversed(_batches_upto(lay, batch)):   # the predicted TPOT grows with the batch:
            key = (lay.replace(dp=1), b)                 # the first within the limit is the largest
            if key not in memo:   # a replica's prediction: the same for every dp
                memo[key] = predicted_at_batch(plan.arch, plan.wd, plan.device, lay, plan.P, plan.G, b)
            p = memo[key]
            if p is None or (ttft_limit is not None and p["ttft_s"] > ttft_limit):
                break   # not modelled, or the prompt alone (the same at every batch) is over the limit
            if tpot_limit is None or p["tpot_s"] <= tpot_limit:
                chosen = (b, p)
                break
        if p is None:
            if fallback is None:   # the estimate's best of the layouts the prediction does not model
                fallback = {"devices": n, "meets": True, "judged_by": "estimate (not modelled by the prediction)",
                            "layout": lay.label(), "layout_record": lay, "batch_per_replica": batch,
                            "ttft_s": ttft, "tpot_s": lat["tpot_mean_s"],
                            "decode_tokens_per_s_per_device": lat["decode_tokens_per_s_per_device"]}
            continue
        modelled += 1
        if chosen and (best is None or chosen[1]["output_tokens_per_s_per_device"]
                       > best[2][1]["output_tokens_per_s_per_device"]):
            best = (lay, ttft, chosen)
    if best is None:
        if fallback is not None and not modelled:
            return fallback
        if not modelled:
            return None
        return {"devices": n, "meets": False, "judged_by": "predicted",
                "why": "the estimate admits layouts, but none meets the limits under the predicted figure"}
    lay, ttft, (b, p) = best
    _, lat, _ = layouts.score(plan, lay, b, "throughput")
    return {"devices": n, "meets": True, "judged_by": "predicted", "layout": lay.label(), "layout_record": lay,
            "_predicted": p,
            "batch_per_replica": b, "ttft_s": ttft, "tpot_s": lat["tpot_mean_s"],
            "decode_tokens_per_s_per_device": lat["decode_tokens_per_s_per_device"]}


def _batches_upto(lay, batch):
    """The search's batches of a layout (pp micro-batches of 1, 4, 16, ... requests) up to `batch`
    (the estimate's choice, itself one of them)."""
    return layouts.search_batches(batch, None, lay.pp)


def count_row(plan, n, ttft_limit, tpot_limit, figure="estimate", memo=None):
    """One device count: the best layout meeting both limits, or why none does. A first pass at
    batch 1 (one score per layout: the mean TPOT grows with the batch, so a layout over the
    limit at batch 1 is over it at every batch) keeps the layouts that can meet the TPOT and
    TTFT limits; only when one can does the throughput search run over the batches."""
    ranked, rejected, total = layouts.search(plan, n, objective="tpot", tpot_limit=tpot_limit, batch=1)
    fastest, feasible = None, False
    for value, _, lay, batch, lat in ranked:
        ttft = _ttft(plan, lay)
        if ttft_limit is None or ttft <= ttft_limit:
            feasible = True
            break
        if fastest is None or ttft < fastest[1]:
            fastest = (lay, ttft)
    if not feasible:
        return {"devices": n, "meets": False, "layouts_considered": total,
                "layouts_meeting_tpot": len(ranked), "why": _failure(rejected, fastest, ttft_limit)}
    ranked, rejected, total = layouts.search(plan, n, objective="throughput", tpot_limit=tpot_limit)
    if figure == "predicted":
        memo = {} if memo is None else memo
        row = _predicted_choice(plan, n, ranked, ttft_limit, tpot_limit, memo)
        if row is not None:
            return dict(row, layouts_considered=total, layouts_meeting_tpot=len(ranked))
    fastest = None
    for value, _, lay, batch, lat in ranked:
        ttft = _ttft(plan, lay)
        if ttft_limit is None or ttft <= ttft_limit:
            return {"devices": n, "meets": True, "layout": lay.label(), "layout_record": lay,
                    "batch_per_replica": batch, "ttft_s": ttft, "tpot_s": lat["tpot_mean_s"],
                    "decode_tokens_per_s_per_device": lat["decode_tokens_per_s_per_device"],
                    "layouts_considered": total, "layouts_meeting_tpot": len(ranked)}
        if fastest is None or ttft < fastest[1]:
            fastest = (lay, ttft)
    return {"devices": n, "meets": False, "layouts_considered": total,
            "layouts_meeting_tpot": len(ranked), "why": _failure(rejected, fastest, ttft_limit)}


def size(plan, ttft_limit, tpot_limit, max_devices, figure="estimate"):
    """(answer row or None, every row tried in order)."""
    rows, memo = [], {}
    for n in device_counts(max_devices):
        row = count_row(plan, n, ttft_limit, tpot_limit, figure, memo)
        rows.append(row)
        if row["meets"]:
            return row, rows
    return None, rows


def chosen_bounds(plan, row):
    """The lower bounds of the chosen layout at its batch (TPOT) and at batch 1 (TTFT)."""
    lay, b = row["layout_record"], row["batch_per_replica"]
    at_b = parallel.latency_bound(plan, lay, b, parallel.phases(plan, lay, b))
    at_1 = parallel.latency_bound(plan, lay, 1, parallel.phases(plan, lay, 1))
    return {"ttft_s": at_1["ttft_s"], "tpot_s": at_b["tpot_mean_s"],
            "decode_tokens_per_s_per_device": at_b["decode_tokens_per_s_per_device"]}


NOT_MODELLED = "not modelled for this layout"
PREDICTED_CONVENTION = (
    "SLO predicted (a third figure, neither estimate nor bound: what a well-tuned engine "
    "achieves, efficiency.serving): at the answer's layout and batch per replica, TPOT = one "
    "steady-state iteration (the batch's decodes plus their share of chunked prefills, one read "
    "of the weights, operators at achievable rates, TP all-reduces exposed, host time per "
    "iteration, GPU work per request and per prompt token), TTFT = one prompt's prefill alone "
    "plus its per-token work and one iteration's host time, output tokens/s per device from that TPOT; the answer is chosen by --slo-figure; "
    "under pipeline parallelism pp micro-batches in flight (pp x the slowest stage's time for "
    "b / pp requests per iteration; TTFT through every stage); under attention data "
    "parallelism with EP the all-to-alls (beside the replica's TP all-reduces); under context "
    "parallelism one CP rank's share of each request's cache and prompt, with the merges of its "
    "partial attention and the K/V ring passes; EP under a skewed routing model: 'not modelled "
    "for this layout'.")


def chosen_predicted(plan, row):
    """The predicted TTFT, TPOT and output tokens/s per device of the chosen layout at its batch
    (efficiency.serving.predicted_at_batch), all None with `predicted_status` where the
    prediction does not cover the layout."""
    from ..efficiency.serving import predicted_at_batch

    p = row.get("_predicted") or predicted_at_batch(plan.arch, plan.wd, plan.device, row["layout_record"],
                                                    plan.P, plan.G, row["batch_per_replica"])
    return {"predicted_ttft_s": p and p["ttft_s"], "predicted_tpot_s": p and p["tpot_s"],
            "predicted_output_tokens_per_s_per_device": p and p["output_tokens_per_s_per_device"],
            "predicted_status": "predicted" if p else NOT_MODELLED}

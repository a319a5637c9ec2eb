"""Pipeline composition: stages into a micro-batch's pass, the TTFT and the decode cycle."""

import math

from ...splits import ceil_div
from ...errors import UserError
from .conventions import LOWER_BOUND
from .communication import transfer
from .stage import collective_rows, stage_records, stage_times
from ...summation import plain_sum


def micro_batches(lay, batch):
    """m: the layout's --micro-batches when set (> 1), else gcd(B, pp); it must divide B."""
    m = lay.micro_batches if lay.micro_batches > 1 else math.gcd(batch, lay.pp)
    if batch % m:
        raise UserError(f"--micro-batches {m} does not divide the batch {batch}")
    return m


def compose(stage_times, transfer_s, m, pp):
    """(one micro-batch's pass L = sum of stage times + (pp - 1) transfers, the slowest
    stage, m x slowest): what every pipeline figure below is made of."""
    slowest = max(stage_times)
    return plain_sum(stage_times) + (pp - 1) * transfer_s, slowest, m * slowest


def prefill_pipeline(stage_times, transfer_s, m, pp):
    """The prefill of m micro-batches: its last micro-batch leaves the last stage after
    L + (m - 1) x slowest (the TTFT of the batch); the first after L."""
    L, slowest, full = compose(stage_times, transfer_s, m, pp)
    return {"pass_s": L, "slowest_stage_s": slowest, "ttft_first_s": L, "ttft_s": L + full - slowest,
            "bubble_fraction": 1 - full / (L + full - slowest) if L else 0.0}


def step_pipeline(stage_times, transfer_s, m, pp):
    """A decode step: each micro-batch must leave the last stage before its next token enters
    the first, so a step recurs every cycle = max(L, m x slowest) (the TPOT); the slowest
    stage idles 1 - m x slowest / cycle of it (the bubble)."""
    L, slowest, full = compose(stage_times, transfer_s, m, pp)
    cycle = max(L, full)
    return {"pass_s": L, "slowest_stage_s": slowest, "cycle_s": cycle,
            "bubble_fraction": 1 - full / cycle if cycle else 0.0}


PREFILL_KEYS = ("pass_s", "ttft_first_s", "ttft_s", "bubble_fraction")
STEP_KEYS = ("pass_s", "cycle_s", "bubble_fraction")
BOUND_KEYS = {"prefill": ("pass_s", "slowest_stage_s", "ttft_first_s", "ttft_s"),
              "step": ("pass_s", "slowest_stage_s", "cycle_s")}


def _pick(d, keys):
    return {k: d[k] for k in keys}


def phases_bound(ph, lay):
    """The lower bound of each phase's pipeline composition (LOWER_BOUND): stage times
    lower_bound_s, boundary transfers not charged (hidden under other micro-batches' work)."""
    out = {}
    for name, p in ph.items():
        if not isinstance(p, dict) or "stages" not in p:
            continue
        times = [s["lower_bound_s"] for s in p["stages"]]
        if name == "prefill":
            out[name] = _pick(prefill_pipeline(times, 0.0, ph["micro_batches"], lay.pp), BOUND_KEYS["prefill"])
        else:
            out[name] = _pick(step_pipeline(times, 0.0, ph["micro_batches"], lay.pp), BOUND_KEYS["step"])
    return out


def latency_bound(plan, lay, batch, ph):
    """Lower bounds on TTFT and TPOT and upper bounds on tokens/s (LOWER_BOUND), beside
    `latency`'s estimate, by the same formulas; needs `phases(..., detail=True)`."""
    b = phases_bound(ph, lay)
    return dict(latency(plan, lay, batch, b), phases=b, definition=LOWER_BOUND)


def check_cp(plan, lay):
    """ceil(P/cp), the prompt tokens per CP rank; UserError when the split leaves a rank none
    or (zig-zag) the prompt does not cut into 2 cp chunks."""
    c = ceil_div(plan.P, lay.cp)
    if plan.P - (lay.cp - 1) * c < 1:
        raise UserError(f"--cp {lay.cp} leaves the last rank no prompt token of {plan.P} "
                        f"(ceil(P/cp) = {c} tokens per rank)")
    if plan.cp_split == "zigzag" and lay.cp > 1 and plan.P % (2 * lay.cp):
        raise UserError(f"--cp-split zigzag cuts the prompt into 2 x cp = {2 * lay.cp} equal chunks; "
                        f"--input-len {plan.P} does not divide (try {2 * lay.cp * ceil_div(plan.P, 2 * lay.cp)})")
    return c


def phases(plan, lay, batch, detail=True, want=("prefill", "first", "last", "decode")):
    """Per phase: every stage's record (`stage.stage_record`, `detail` or times only) and the
    pipeline composition (one layout, one batch)."""
    m = micro_batches(lay, batch)
    b = batch // m
    out = {"micro_batches": m, "micro_batch": b}
    c = check_cp(plan, lay)
    if "prefill" in want:
        recs = stage_records(plan, lay, "prefill", b, detail)
        xc, xs = transfer(plan, lay, b * c)
        out["prefill"] = dict(stages=recs, transfer=collective_rows(plan, xc), transfer_s=xs, **_pick(
            prefill_pipeline([s["time_s"] for s in recs], xs, m, lay.pp), PREFILL_KEYS))
    if not plan.steps:
        return out
    xc, xs = transfer(plan, lay, b)
    for name in ("first", "last", "decode"):
        if name in want:
            runs = plan.steps if name == "decode" else 1
            recs = stage_records(plan, lay, name, b, detail)
            out[name] = dict(stages=recs, transfer=collective_rows(plan, xc, runs=runs), transfer_s=xs * runs,
                             **_pick(step_pipeline([s["time_s"] for s in recs], xs * runs, m, lay.pp), STEP_KEYS))
    return out


def ranked_phase(plan, lay, batch, phase, times=stage_times):
    """The pipeline figures `latency` reads of the one phase a search ranks by ("prefill"
    or "decode"), by `phases`' formulas from the same stage evaluation, without records
    (`times`: bound.stage_time_bounds gives a lower bound on each figure instead)."""
    m = micro_batches(lay, batch)
    b = batch // m
    out = {"micro_batches": m, "micro_batch": b}
    c = check_cp(plan, lay)
    if phase == "prefill":
        xs = transfer(plan, lay, b * c)[1]
        out["prefill"] = prefill_pipeline(times(plan, lay, "prefill", b), xs, m, lay.pp)
    elif plan.steps:
        xs = transfer(plan, lay, b)[1]
        out["decode"] = step_pipeline(times(plan, lay, "decode", b), xs * plan.steps, m, lay.pp)
    return out


def latency(plan, lay, batch, ph):
    """TTFT, TPOT and tokens/s per replica, cluster and device."""
    steps, dp, n = plan.steps, lay.dp, lay.devices
    ttft = ph["prefill"]["ttft_s"] if "prefill" in ph else None
    dec = ph["decode"]["cycle_s"] if "decode" in ph else 0.0
    rate = batch * steps / dec if steps and dec else None
    total = (ttft or 0.0) + dec
    e2e = batch * plan.G / total if total and ttft is not None else None
    return {
        "ttft_s": ttft,
        "ttft_first_micro_batch_s": ph["prefill"]["ttft_first_s"] if "prefill" in ph else None,
        "tpot_first_s": ph["first"]["cycle_s"] if "first" in ph else None,
        "tpot_mean_s": dec / steps if steps else None,
        "tpot_last_s": ph["last"]["cycle_s"] if "last" in ph else None,
        "decode_s": dec,
        "generation_s": total if ttft is not None else None,
        "decode_tokens_per_s_per_request": steps / dec if steps and dec else None,
        "decode_tokens_per_s_replica": rate,
        "decode_tokens_per_s_cluster": rate * dp if rate else None,
        "decode_tokens_per_s_per_device": rate * dp / n if rate else None,
        "tokens_per_s_cluster": e2e * dp if e2e else None,
        "tokens_per_s_per_device": e2e * dp / n if e2e else None,
    }

"""Pipeline composition: stages into a micro-batch's pass, the TTFT and the decode cycle."""

import math

from ...collectives import ceil_div
from ...errors import UserError
from .conventions import LOWER_BOUND
from .stage import _collective_rows, stage_phases


def micro_batches(lay, batch):
    """m: the layout's --micro-batches when set (> 1), else gcd(B, pp); it must divide B."""
    m = lay.micro_batches if lay.micro_batches > 1 else math.gcd(batch, lay.pp)
    if batch % m:
        raise UserError(f"--micro-batches {m} does not divide the batch {batch}")
    return m


def phases_bound(ph, lay):
    """The lower bound of each phase's pipeline composition (LOWER_BOUND): stage times
    lower_bound_s, boundary transfers not charged (hidden under other micro-batches' work)."""
    out = {}
    for name, p in ph.items():
        if not isinstance(p, dict) or "stages" not in p:
            continue
        times = [s["lower_bound_s"] for s in p["stages"]]
        L, slowest, full = _pipeline(times, 0.0, ph["micro_batches"], lay.pp)
        out[name] = ({"pass_s": L, "slowest_stage_s": slowest, "ttft_first_s": L, "ttft_s": L + full - slowest}
                     if name == "prefill" else {"pass_s": L, "slowest_stage_s": slowest, "cycle_s": max(L, full)})
    return out


def latency_bound(plan, lay, batch, ph):
    """Lower bounds on TTFT and TPOT and upper bounds on tokens/s (LOWER_BOUND), beside
    `latency`'s estimate, by the same formulas; needs `phases(..., detail=True)`."""
    b = phases_bound(ph, lay)
    return dict(latency(plan, lay, batch, b), phases=b, definition=LOWER_BOUND)


def _pipeline(stage_times, transfer_s, m, pp):
    """(one micro-batch's pass L, slowest stage, m x slowest)."""
    slowest = max(stage_times)
    return sum(stage_times) + (pp - 1) * transfer_s, slowest, m * slowest


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
    """Per phase: every stage's record and the pipeline composition (one layout, one batch)."""
    m = micro_batches(lay, batch)
    b = batch // m
    sts = plan.stages(lay)
    out = {"micro_batches": m, "micro_batch": b}
    c = check_cp(plan, lay)
    if "prefill" in want:
        recs = stage_phases(plan, lay, sts, "prefill", b, detail)
        xc, xs = plan.transfer(lay, b * c)
        L, slowest, full = _pipeline([s["time_s"] for s in recs], xs, m, lay.pp)
        out["prefill"] = {"stages": recs, "transfer": _collective_rows(plan, xc),
                          "transfer_s": xs, "pass_s": L, "ttft_first_s": L, "ttft_s": L + full - slowest,
                          "bubble_fraction": 1 - full / (L + full - slowest) if L else 0.0}
    if not plan.steps:
        return out
    xc, xs = plan.transfer(lay, b)

    def step_phase(recs, runs):
        L, slowest, full = _pipeline([s["time_s"] for s in recs], xs * runs, m, lay.pp)
        cycle = max(L, full)
        transfer = _collective_rows(plan, xc)
        if runs != 1:
            for row in transfer:
                row.update(passes=runs, time_s=row["time_s"] * runs)
        return {"stages": recs, "transfer": transfer,
                "transfer_s": xs * runs, "pass_s": L, "cycle_s": cycle,
                "bubble_fraction": 1 - full / cycle if cycle else 0.0}

    for name in ("first", "last", "decode"):
        if name in want:
            out[name] = step_phase(stage_phases(plan, lay, sts, name, b, detail),
                                   plan.steps if name == "decode" else 1)
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

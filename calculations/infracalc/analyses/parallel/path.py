"""The communication path of one micro-batch pass (`parallel --comm-path`): every collective
the pass charges, in pipeline order, as one serial list with its bytes and its alpha-beta time
split into startup and bandwidth.

For each collective run by the devices of a stage (tp x cp of them in one replica), n ranks
per group, S bytes per run (nccl-tests' S), r runs:

    bytes sent by the replica = devices x sent(c) x r,  sent(c) = the mean bytes one rank sends
    per run: all-reduce 2(n-1)/n S, all-gather / reduce-scatter / all-to-all / broadcast
    (n-1)/n S, point-to-point S (every device of the sending stage sends its own);
    time = r x `comm.run_s` (the estimate's charge); bandwidth = r x `comm.bandwidth_s` (the same
    run with every alpha zero); startup = time - bandwidth.

The path's serial time is the sum over the list (no overlap: the book's "serial communication
path"). With `token_feedback` the sampled tokens' int32 IDs (4 B per request of the micro-batch)
return for the next pass: the last stage's rank 0 sends them to the first stage's rank 0 when
pp > 1 (one point-to-point send, one sender), and the first stage's TP group broadcasts them
along a binomial tree (ceil(log2 tp) rounds of 4 B per request; (tp - 1) x 4 B per request
sent). The estimate's TTFT and TPOT do not charge the feedback.

Worked case (Qwen3-8B, tp 8, one token, 2 us and 50 GB/s): a TP all-reduce of S = 8,192 B
sends 8 x 2 x 7/8 x 8,192 = 114,688 B and takes 14 x 2 us + 14,336 B / 50 GB/s = 28.28672 us;
the token broadcast sends 7 x 4 = 28 B in 3 x (2 us + 4 B / 50 GB/s) = 6.00024 us."""

from fractions import Fraction

from ... import comm
from ...errors import UserError
from ...splits import ceil_div
from ...summation import plain_sum
from . import communication as comms
from .plan import stages
from .stage import evaluate

TOKEN_ID_BYTES = 4   # int32 token IDs (the book's selected_token_id_bytes)
PATH_CONVENTION = (
    "Communication path (--comm-path): every collective of one micro-batch pass in pipeline order, summed "
    "serially (no overlap); bytes sent by the replica = the devices of a stage x the mean bytes a rank "
    "sends per run (all-reduce 2(n-1)/n S, all-gather, reduce-scatter, all-to-all and broadcast (n-1)/n S, "
    "point-to-point S) x runs; time as the estimate charges it, bandwidth = the same runs with every alpha "
    "zero, startup = time - bandwidth. --token-feedback adds the sampled tokens' int32 IDs returning to the "
    "first stage (last stage's rank 0 to first stage's rank 0 when pp > 1; a binomial broadcast over the "
    "first stage's TP ranks, ceil(log2 tp) rounds), which TTFT and TPOT do not charge.")


def sent_fraction(kind, n):
    """The mean bytes one rank of n sends per run, as a fraction of S (module docstring)."""
    if kind == "all_reduce":
        return Fraction(2 * (n - 1), n)
    if kind == "p2p":
        return Fraction(1)
    return Fraction(n - 1, n)


def item(plan, c, runs, where, senders, time_s=None, bandwidth_s=None):
    """One collective of the path: `runs` runs of c by `senders` devices of the replica."""
    t = comms.comm_time(plan, c, runs) if time_s is None else time_s
    bw = comm.bandwidth_s(c, plan.links, plan.algorithm) * runs if bandwidth_s is None else bandwidth_s
    return {"where": where, "name": c.name, "kind": c.kind, "group": c.group, "tier": c.tier,
            "bytes_per_run": c.bytes, "runs": runs, "senders": senders,
            "bytes_sent": round(senders * sent_fraction(c.kind, c.group) * c.bytes * runs),
            "startup_s": t - bw, "bandwidth_s": bw, "time_s": t}


def feedback(plan, lay, b):
    """The sampled tokens' IDs back to the first stage (module docstring): [item, ...]."""
    s = TOKEN_ID_BYTES * b
    out = []
    if lay.pp > 1:
        span = (lay.pp - 1) * lay.group_stride("pp") + 1
        c = comm.Collective("token IDs to the first stage (rank 0 to rank 0)", "p2p", s, 2,
                            comm.tier(span, plan.device), dim="pp")
        out.append(item(plan, c, 1, "feedback", senders=1, time_s=comm.run_s(c, plan.links, "ring"),
                        bandwidth_s=comm.bandwidth_s(c, plan.links, "ring")))
    if lay.tp > 1:
        ts = comms.tiers(plan, lay)
        c = comm.Collective("token IDs broadcast over the first stage's TP (binomial)",
                            "broadcast", s, lay.tp, ts[0], dim="tp", local=ts[4])
        up = plan.links.get("up")
        link = up if c.tier == "up" else plan.links.get("out")
        if link is None:
            raise comm.MissingLink(c.tier, c.name)
        bw = comm.time_s(c, comm.without_alpha(link), "binomial", up=comm.without_alpha(up))
        out.append(item(plan, c, 1, "feedback", senders=lay.tp, time_s=comm.time_s(c, link, "binomial", up=up),
                        bandwidth_s=bw))
    return out


def phase_path(plan, lay, phase, b, crossing_tokens, token_feedback):
    """The path of one micro-batch pass of `phase` ("prefill" or "first"): every stage's
    collectives, each boundary's transfer after its stage, then the feedback."""
    devices = lay.tp * lay.cp
    xc, _ = comms.transfer(plan, lay, crossing_tokens)
    items = []
    for st in stages(plan, lay):
        fig = evaluate(plan, lay, st, phase, b)
        items += [item(plan, c, n, f"stage {st.index}", devices) for c, n in fig.collectives]
        if st.index < lay.pp - 1:
            items += [item(plan, c, c.count, f"boundary {st.index}-{st.index + 1}", devices) for c in xc]
    if token_feedback:
        items += feedback(plan, lay, b)
    total = lambda key: plain_sum(x[key] for x in items)
    return {"operations": sum(x["runs"] for x in items if x["bytes_per_run"]),
            "bytes_sent_per_replica": sum(x["bytes_sent"] for x in items),
            "bytes_sent_cluster": sum(x["bytes_sent"] for x in items) * lay.dp,
            "startup_s": total("startup_s"), "bandwidth_s": total("bandwidth_s"), "serial_s": total("time_s"),
            "items": items}


def path_record(plan, lay, ph, token_feedback=False):
    """{phase: phase_path} for the prefill and (with decode steps) the first decode step."""
    if token_feedback and lay.cp > 1:
        raise UserError("--token-feedback is modelled for TP and PP layouts; drop --cp")
    b = ph["micro_batch"]
    out = {"prefill": phase_path(plan, lay, "prefill", b, b * ceil_div(plan.P, lay.cp), token_feedback)}
    if plan.steps:
        out["first"] = phase_path(plan, lay, "first", b, b, token_feedback)
    out["token_feedback"] = token_feedback
    return out


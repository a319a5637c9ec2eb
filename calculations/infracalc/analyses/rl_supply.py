"""One RL batch's service demand on declared resource pools (the book's chapter-3 RL supply scenarios):
the cycle's matrix work from the ledger, each stage's work over a declared effective rate of the pool it
occupies, and the serial and ideal-pipeline bounds. Exact fractions of seconds.

The cycle: Q prompts x S samples = C candidates of P prompt and G output tokens; A of them accepted (a
declared count). Matrix work per stage (the ledger's, `rl_stage_flops` in cli/budget_cost.py):

    rollout prefill  = forward(batch C, P tokens, last-position head)
    rollout decode   = sum_{k=1}^{G-1} forward(batch C, 1 token, P + k - 1 history)
    reference (teacher) scoring = passes x forward(batch C, P + G - 1 tokens, head on all)
    policy update    = epochs x train(A sequences of P + G - 1): forward + backward matrix FLOPs

A matrix stage on pool p takes W / (r x s_p) (r its declared effective rate when it holds the whole pool,
s_p a declared pool speedup, default 1). Verification of the C candidates on V workers of t seconds
each: a steady demand C t / (V s_p), an isolated batch ceil(C / V) t / s_p (finite rounds). Weight sync:
R rollout replicas x the policy's BF16 weight bytes over the declared link bytes/s.

    pool demand D_p = sum of its stages' steady demands,   interval >= max_p D_p (ideal pipeline),
    serial = sum of every stage's isolated time,   A / serial and A / max_p D_p accepted samples/s.

The pipeline bound assumes unbounded buffering and overlapping batches across pools; an on-policy batch
that waits for the new weights cannot reach it. Worked case: two stages of 10^12 FLOPs on one pool at
10^12 FLOPs/s and a sync of 10^9 B at 10^9 B/s: the pool's demand is 2 s, the serial time 3 s.
"""

from fractions import Fraction

from ..splits import ceil_div

MATRIX_STAGES = ("rollout_prefill", "rollout_decode", "reference_scoring", "teacher_scoring", "policy_update")


def _seconds(value):
    return {"seconds": float(value), "seconds_exact": str(value)}


def rl_supply(*, stage_flops, rates, verifier, sync_bytes, sync, candidates, accepted, speedups):
    """stage_flops {stage: FLOPs}; rates {stage: (pool, FLOPs/s)}; verifier (pool, seconds per candidate,
    workers); sync (pool, bytes/s); speedups {pool: factor}. Rates, times and factors exact (Fraction)."""
    rows = []

    def add(stage, pool, steady, isolated):
        s = speedups.get(pool, 1)
        rows.append({"stage": stage, "pool": pool, "speedup": str(s), "steady": steady / s, "isolated": isolated / s})

    for stage in MATRIX_STAGES:
        pool, rate = rates[stage]
        add(stage, pool, Fraction(stage_flops[stage]) / rate, Fraction(stage_flops[stage]) / rate)
    pool, per_candidate, workers = verifier
    add("verification", pool, Fraction(candidates) * per_candidate / workers, ceil_div(candidates, workers) * per_candidate)
    add("weight_sync", sync[0], Fraction(sync_bytes) / sync[1], Fraction(sync_bytes) / sync[1])
    unused = set(speedups) - {r["pool"] for r in rows}
    if unused:
        raise ValueError(f"a speedup names a pool no stage uses: {', '.join(sorted(unused))}")
    pools = {}
    for r in rows:
        pools[r["pool"]] = pools.get(r["pool"], 0) + r["steady"]
    interval = max(pools.values())
    serial = sum(r["isolated"] for r in rows)
    return {
        "generated_samples": candidates, "accepted_samples": accepted,
        **{f"{k}_matrix_flops": stage_flops[k] for k in MATRIX_STAGES},
        "weight_sync_bytes": sync_bytes,
        "serial_batch_s": float(serial), "serial_batch_s_exact": str(serial),
        "ideal_pipeline_interval_s": float(interval), "ideal_pipeline_interval_s_exact": str(interval),
        "limiting_pools": [p for p, v in pools.items() if v == interval],
        "serial_accepted_per_s": float(accepted / serial),
        "pipeline_accepted_per_s_upper": float(accepted / interval),
        "stages": [{"stage": r["stage"], "pool": r["pool"], "speedup": r["speedup"],
                    "steady_s": float(r["steady"]), "steady_s_exact": str(r["steady"]),
                    "isolated_s": float(r["isolated"]), "isolated_s_exact": str(r["isolated"])} for r in rows],
        "pools": [{"pool": p, "demand_s": float(v), "demand_s_exact": str(v)} for p, v in pools.items()],
    }


RL_SUPPLY_CONVENTIONS = [
    "Declared supply: each stage's effective matrix rate is its aggregate rate when it holds the whole pool "
    "(in the ledger's effective FLOPs: no padding, no sparse peak), the verifier's workers and seconds per "
    "candidate, the sync link's bytes/s and pool speedups are inputs, not device figures or measurements.",
    "Matrix work from the ledger: rollout prefill (batch C, P tokens, last head) and G - 1 decode steps; "
    "scoring passes over P + G - 1 tokens with the head on all positions; the update's forward + backward "
    "matrix FLOPs of the A accepted sequences per epoch; no loss, KL, advantage, optimizer or reward work. "
    "Weight sync: rollout replicas x the BF16 policy weights (independent unicast).",
    "Stages on one pool add; serial = the sum of every stage's isolated time (verification in ceil(C / V) "
    "rounds); the ideal pipeline interval max(pool demand) assumes unbounded buffers and overlapping batches "
    "(an on-policy batch waiting for new weights does not reach it). No cycle time is predicted.",
]

"""Fitting efficiency.serving's three constants, leave one publication out within an engine.

The predicted iteration is linear in the constants:

    iteration = GPU work at zero kernel cost + kernel_s x kernels + host_fixed_s
                + sequence_layer_s x N x layers + prefill_token_layer_s x prefill tokens x layers

so each serving case is reduced once to (publication, N x layers, GPU seconds, kernels, measured
iteration = the iteration time that reproduces the measured throughput at N, family, engine,
prefill tokens of the iteration x layers), and
a fit is a search over GRID minimising, averaged over the serving families (one device, several
devices: the accuracy target holds per family, so neither family's cases outvote the other's),
median |error| + 0.3 x p90 |error| (error = predicted / measured throughput - 1).

The constants are the engine's: a serving engine's scheduler, sampler and attention kernels set
them, and the corpus holds two (validate_predict.engine: TensorRT-LLM, and vLLM). `leave_one_out`
fits once per publication on the other publications of the same engine; "all" is the fit on every
TensorRT-LLM case, the product default (the concurrency rule the prediction runs is
trtllm-bench's).
"""

import statistics
from ...summation import plain_sum

# kernel_s is searched over 0-4 us only, the range of a kernel's launch gap and tail under
# CUDA graphs (a larger figure would stand in for work the ledger does not model);
# sequence_layer_s over 0-1.2 us in steps of 0.05 us; prefill_token_layer_s over 0-0.3 us in steps
# of 0.02 us.
GRID = tuple((k * 1e-6, f * 1e-3, q * 5e-8, t / 5e7) for k in range(5)
             for f in (0, 1, 2, 4, 6, 8, 10, 12, 16, 20, 24)
             for q in range(25) for t in range(16))
DEFAULT_ENGINE = "TensorRT-LLM"


def sample(case):
    """(publication, N x layers, GPU seconds at zero kernel cost, kernels, measured iteration, family,
    engine, prefill tokens x layers) of a serving case, or None when it has no prediction or is
    latency-limited (an MLPerf Server case: its concurrency depends on the constants, so the iteration is not linear in them)."""
    from ..validate import _layout, _model
    from ..validate_predict import engine, family, publication, serving_prediction, tpot_limit

    if tpot_limit(case) is not None:
        return None
    zero = (0.0, 0.0, 0.0, 0.0)
    value, rec = serving_prediction(case, zero)
    if value is None:
        return None
    # the prediction at zero constants is all GPU work: scale the iteration to the measurement
    measured_iteration = rec["iteration_s"] * value / case["measured"]["value"]
    arch = _model(case)
    assert _layout(case, arch).pp == 1   # a TP shard keeps every layer (PP has no prediction)
    layers = len(arch.layers)
    return (publication(case), rec["concurrency"] * layers, rec["gpu_s"], rec["kernels"],
            measured_iteration, family(case), engine(case), rec["prefill_tokens"] * layers)


def errors(samples, constants):
    k, f, q, t = constants
    return [meas / (gpu + k * kern + f + q * seq + t * pre) - 1
            for _, seq, gpu, kern, meas, _, _, pre in samples]


def score(errs):
    a = sorted(abs(e) for e in errs)
    return statistics.median(a) + 0.3 * a[int(0.9 * (len(a) - 1))]


def family_score(samples, constants):
    """The mean over the samples' families of each family's score."""
    fams = sorted({s[5] for s in samples})
    return plain_sum(score(errors([s for s in samples if s[5] == f], constants)) for f in fams) / len(fams)


def fit(samples):
    """The GRID point with the best family_score on `samples` (the first on a tie)."""
    return min(GRID, key=lambda c: family_score(samples, c))


def leave_one_out(samples):
    """{"all": fit on every sample of the default engine, publication: fit on the samples of every
    other publication of the same engine}."""
    out = {"all": fit([s for s in samples if s[6] == DEFAULT_ENGINE])}
    for pub, eng in sorted({(s[0], s[6]) for s in samples}):
        out[pub] = fit([s for s in samples if s[0] != pub and s[6] == eng])
    return out

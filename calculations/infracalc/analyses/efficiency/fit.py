"""Fitting efficiency.serving's constants, leave one publication out within an engine.

The predicted iteration is linear in the constants:

    iteration = GPU work at zero kernel cost + kernel_s x kernels + host_fixed_s
                + sequence_layer_s x N x layers + prefill_token_layer_s x prefill tokens x layers
                + sequence_host_s x N

at least the engine's measured host step of N requests (efficiency.serving.host_floor_s, which no
constant moves), so each serving case is reduced once to (publication, N x layers, GPU seconds,
kernels, measured iteration = the iteration time that reproduces the measured throughput at N,
family, engine, prefill tokens of the iteration x layers, configuration, N, host step seconds), and
a fit is a search over the
engine's grid (GRIDS: four free constants per engine, its per-sequence work in the form its
scheduler runs it, efficiency.serving)
minimising, averaged over the serving families (one device, several devices: the accuracy target
holds per family, so neither family's cases outvote the other's), the score of the family's
configurations: median + 0.3 x p90 over its configurations of each configuration's median
|error| (error = predicted / measured throughput - 1).

A configuration is one publication's model, device, weight format and device count: the unit in
which a publication measures (a table column of nine or ten ISL/OSL pairs), which shares the
settings a publication does not print (the KV-cache fraction it lowered on out-of-memory, the
engine's build limits), so its cases' errors move together. Counting each configuration once, by
its median, keeps one configuration whose unpublished setting departs from the engine's default
(TensorRT-LLM 0.14's Llama 3.1 70B on one H100, whose cache is far smaller than the default
fraction of its free memory gives) from steering the constants of every other case, as its six
cases did when every case counted.

The constants are the engine's: a serving engine's scheduler, sampler and attention kernels set
them, and the corpus holds two (validate_predict.engine: TensorRT-LLM, and vLLM). `leave_one_out`
fits once per publication on the other publications of the same engine; "all" is the fit on every
TensorRT-LLM case, the product default (the concurrency rule the prediction runs is
trtllm-bench's). All fits share one pass over GRID (each point's errors computed once for every
sample and each configuration's median once, then scored per fit).
"""

import statistics
from operator import itemgetter

from ...summation import plain_sum

# kernel_s is searched over 0-4 us only, the range of a kernel's launch gap and tail under
# CUDA graphs (a larger figure would stand in for work the ledger does not model);
# host_fixed_s over 0-24 ms, in steps of 0.5 ms up to 8 ms (where every fit lands; the objective's
# optimum is converged at that step: steps of 0.25 ms, or of 0.5 us for kernel_s, 0.025 us for
# sequence_layer_s or 0.01 us for prefill_token_layer_s, give the same validate figures), then
# 10-24 ms; prefill_token_layer_s over 0-0.3 us in steps of 0.02 us; the
# per-sequence work in the engine's form: TensorRT-LLM's on the GPU per layer (sequence_layer_s,
# 0-1.2 us in steps of 0.05 us; its scheduler is C++, and its per-request time grows with depth),
# vLLM's on the host per request (sequence_host_s, 0-38.4 us in steps of 1.6 us: the per-layer
# range times 32 layers; its scheduler walks every request in Python each step, a cost that does
# not grow with depth).
HOSTS = tuple(i / 2 for i in range(17)) + (10, 12, 16, 20, 24)   # ms
GRID = tuple((k * 1e-6, f * 1e-3, q * 5e-8, t / 5e7, 0.0) for k in range(5) for f in HOSTS
             for q in range(25) for t in range(16))
VLLM_GRID = tuple((k * 1e-6, f * 1e-3, 0.0, t / 5e7, h * 1.6e-6) for k in range(5) for f in HOSTS
                  for h in range(25) for t in range(16))
GRIDS = {"TensorRT-LLM": GRID, "vLLM": VLLM_GRID}
DEFAULT_ENGINE = "TensorRT-LLM"


def sample(case):
    """(publication, N x layers, GPU seconds at zero kernel cost, kernels, measured iteration, family,
    engine, prefill tokens x layers, configuration, N, host step seconds) of a serving case, or None when it has no prediction or is
    latency-limited (an MLPerf Server case: its concurrency depends on the constants, so the iteration is not linear in them)."""
    from ..validate import _layout, _model
    from ..validate_predict import engine, family, publication, serving_prediction, tpot_limit

    if tpot_limit(case) is not None:
        return None
    zero = (0.0, 0.0, 0.0, 0.0, 0.0)
    value, rec = serving_prediction(case, zero)
    if value is None:
        return None
    # the prediction at zero constants is all GPU work: scale the iteration to the measurement
    measured_iteration = rec["iteration_s"] * value / case["measured"]["value"]
    arch = _model(case)
    assert _layout(case, arch).pp == 1   # a TP shard keeps every layer (PP has no prediction)
    layers = len(arch.layers)
    s = case["setup"]
    return (publication(case), rec["concurrency"] * layers, rec["gpu_s"], rec["kernels"],
            measured_iteration, family(case), engine(case), rec["prefill_tokens"] * layers,
            (publication(case), s["model"], s["device"], s["weight_dtype"], s["devices"]), rec["concurrency"],
            rec.get("host_step_s", 0.0))


def errors(samples, constants):
    """predicted / measured throughput - 1 per sample (measured iteration / predicted iteration - 1);
    `constants` of four (no per-request host term) or five; a sample without N (its tenth item)
    has no per-request host term, one without a host step (its eleventh) no floor."""
    k, f, q, t = constants[:4]
    return _errors_from(samples, _fixed_part(samples, k, f, q), t, constants[4] if len(constants) > 4 else 0.0,
                        host_steps(samples))


def _fixed_part(samples, k, f, q):
    """Each sample's predicted iteration before its prefill and per-request terms: GPU seconds +
    k x kernels + f + q x N x layers (added in this order, as `errors` adds them)."""
    return [s[2] + k * s[3] + f + q * s[1] for s in samples]


def host_steps(samples):
    """((index, host step seconds), ...) of the samples whose iteration has a host step's floor."""
    return tuple((i, s[10]) for i, s in enumerate(samples) if len(s) > 10 and s[10])


def _errors_from(samples, fixed, t, h, steps=()):
    """errors() from the samples' _fixed_part: + t x prefill tokens x layers (+ h x N); the
    iteration at least the host step of the samples `steps` names (`host_steps`)."""
    if not h:
        errs = [s[4] / (b + t * s[7]) - 1 for s, b in zip(samples, fixed)]
    else:
        errs = [s[4] / (b + t * s[7] + h * s[9]) - 1 for s, b in zip(samples, fixed)]
    for i, floor in steps:
        s = samples[i]
        if fixed[i] + t * s[7] + (h * s[9] if h else 0.0) < floor:
            errs[i] = s[4] / floor - 1
    return errs


def _configuration(s, i):
    """A sample's configuration (its ninth item); a sample without one is its own."""
    return s[8] if len(s) > 8 else ("sample", i)


def _plan(samples, indices):
    """[family's configurations as lists of sample indices], one entry per family of `indices`."""
    fams = {}
    for i in indices:
        fams.setdefault(samples[i][5], {}).setdefault(_configuration(samples[i], i), []).append(i)
    return [list(groups.values()) for _, groups in sorted(fams.items())]


def score(medians):
    """median + 0.3 x p90 (the nearest rank below) of the configurations' median |errors|."""
    a = sorted(medians)
    return statistics.median(a) + 0.3 * a[int(0.9 * (len(a) - 1))]


def _plan_score(plan, abs_errors):
    return plain_sum(score([statistics.median([abs_errors[i] for i in g]) for g in groups])
                     for groups in plan) / len(plan)


def family_score(samples, constants):
    """The mean over the samples' families of each family's score."""
    errs = [abs(e) for e in errors(samples, constants)]
    return _plan_score(_plan(samples, range(len(samples))), errs)


def _gather(indices):
    """A function of a list giving the tuple of its items at `indices` (operator.itemgetter: the
    values gathered in C; the fit gathers ~10^6 groups)."""
    if len(indices) == 1:
        i = indices[0]
        return lambda values: (values[i],)
    return itemgetter(*indices)


def _median_of(values):
    """statistics.median's value (the middle of the sorted values, or the mean of the two middle
    ones), without its checks."""
    a = sorted(values)
    m = len(a) // 2
    return a[m] if len(a) % 2 else (a[m - 1] + a[m]) / 2


def _fits(samples, subsets, grid=GRID):
    """{key: the `grid` point with the best family_score on the samples `subsets[key]` (indices)},
    the first point on a tie; one pass over the grid, each point's errors computed only on the
    samples some subset uses."""
    used = sorted({i for idx in subsets.values() for i in idx})
    local = {i: j for j, i in enumerate(used)}
    mine = [samples[i] for i in used]
    plans = {key: _plan(mine, [local[i] for i in idx]) for key, idx in subsets.items()}
    # A configuration's median is the same in every subset that holds it (a subset leaves out
    # whole publications): computed once per grid point, each plan scored from the medians.
    groups = {}
    numbered = {key: [[groups.setdefault(tuple(g), len(groups)) for g in fam] for fam in plan]
                for key, plan in plans.items()}
    members = [_gather(g) for g in groups]
    # score() of each family, its median and p90 read from the sorted medians at fixed places
    families = {key: [(_gather(fam), len(fam) // 2, len(fam) % 2, int(0.9 * (len(fam) - 1))) for fam in plan]
                for key, plan in numbered.items()}
    best = {key: (None, None) for key in subsets}
    prefix = fixed = None
    steps = host_steps(mine)
    for c in grid:
        if c[:3] != prefix:   # the grid's last constants vary fastest: the fixed part is shared
            prefix = c[:3]
            fixed = _fixed_part(mine, *prefix)
        errs = list(map(abs, _errors_from(mine, fixed, c[3], c[4] if len(c) > 4 else 0.0, steps)))
        medians = [_median_of(g(errs)) for g in members]
        for key, plan in families.items():
            total = 0   # plain_sum over the families, left to right
            for fam, m, odd, p90 in plan:
                a = sorted(fam(medians))
                total = total + ((a[m] if odd else (a[m - 1] + a[m]) / 2) + 0.3 * a[p90])
            sc = total / len(plan)
            if best[key][0] is None or sc < best[key][0]:
                best[key] = (sc, c)
    return {key: c for key, (_, c) in best.items()}


def fit(samples, grid=GRID):
    """The `grid` point with the best family_score on `samples` (the first on a tie)."""
    return _fits(samples, {"fit": range(len(samples))}, grid)["fit"]


def leave_one_out(samples):
    """{"all": fit on every sample of the default engine, publication: fit on the samples of every
    other publication of the same engine}, each engine on its own grid (GRIDS; an engine without
    one takes GRID)."""
    by_engine = {DEFAULT_ENGINE: {"all": [i for i, s in enumerate(samples) if s[6] == DEFAULT_ENGINE]}}
    for pub, eng in sorted({(s[0], s[6]) for s in samples}):
        by_engine.setdefault(eng, {})[pub] = [i for i, s in enumerate(samples) if s[0] != pub and s[6] == eng]
    got = {}
    for eng, subsets in by_engine.items():
        got.update(_fits(samples, subsets, GRIDS.get(eng, GRID)))
    return {"all": got["all"], **{k: got[k] for k in sorted(got) if k != "all"}}

"""Fitting efficiency.serving's constants, leave one publication out within an engine.

The predicted iteration is linear in the constants c = (kernel_s, host_fixed_s, sequence_layer_s,
prefill_token_layer_s, sequence_host_s):

    L(c) = GPU work at zero kernel cost + kernel_s x kernels + host_fixed_s
           + sequence_layer_s x N x layers + prefill_token_layer_s x prefill tokens x layers
           + sequence_host_s x N

and the iteration is max(L, the engine's measured host step F of N requests: efficiency.serving.
host_floor_s, which no constant moves). Each serving case is reduced once to (publication, N x
layers, GPU seconds, kernels, measured iteration M = the iteration time that reproduces the
measured throughput at N, family, engine, prefill tokens of the iteration x layers,
configuration, N, host step seconds F).

The fit minimises a weighted sum of each case's absolute relative error of the iteration,

    minimise  sum_i w_i |L_i(c) / M_i - 1|   over the box  0 <= kernel_s <= 4 us, every other >= 0,

with w_i = 1 / (families x configurations of its family x cases of its configuration): each
serving family (one device, several devices) weighs the same, each configuration the same
within its family, each case the same within its configuration. The error is the iteration's,
not the throughput's (e = M / L - 1 = 1 / (1 + r) - 1 for r = L / M - 1): r is linear in c, so the
objective is convex, its optimum a single basin that moves continuously when cases change; |r|
and |e| agree to first order, and |r| weighs an optimistic throughput error a little less than a
pessimistic one of the same size (e = +25% is r = -20%; e = -20% is r = +25%). A case whose host
step is shorter than its measurement (every case today) is measured GPU-bound, so its L is fitted
to M; one whose host step is at least M has error max(L, F) / M - 1 = (F - M) / M + max(0, L - F) / M,
also convex (a hinge; `_rows`).

|r| is smoothed to sqrt(r^2 + DELTA^2) (DELTA = 0.1%: within 0.1 point of |r| everywhere), which
makes the objective strictly convex, so its minimiser is unique and continuous in the samples,
and is solved by majorize-minimize (iteratively reweighted least squares: each step the exact
box-constrained minimum of the quadratic that touches the objective at the current point, which
never raises it), `solve`. The constants are rounded to RESOLUTION.

A configuration is one publication's model, device, weight format and device count: the unit in
which a publication measures (a table column of nine or ten ISL/OSL pairs), which shares the
settings a publication does not print (the KV-cache fraction it lowered on out-of-memory, the
engine's build limits), so its cases' errors move together; weighting each configuration once
keeps one whose unpublished setting departs from the engine's default (TensorRT-LLM 0.14's Llama
3.1 70B on one H100) from steering the constants of every other case.

The constants are the engine's: a serving engine's scheduler, sampler and attention kernels set
them, and the corpus holds two (validate_predict.engine: TensorRT-LLM, and vLLM), each with its
per-sequence work in the form its scheduler runs it (FREE: TensorRT-LLM's on the GPU per layer,
vLLM's on the host per request). `leave_one_out` fits once per publication on the other
publications of the same engine; "all" is the fit on every TensorRT-LLM case, the product default
(the concurrency rule the prediction runs is trtllm-bench's).
"""

import math

from ...summation import plain_sum

# Box of each constant (each >= 0): kernel_s 0-4 us, the range of a kernel's launch gap and tail
# under CUDA graphs (a larger figure would stand in for work the ledger does not model);
# host_fixed_s 0-24 ms, sequence_layer_s 0-1.2 us, prefill_token_layer_s 0-0.3 us, sequence_host_s
# 0-38.4 us (the per-layer range times 32 layers): the ranges the grid search before 2026-12-03
# searched. The vLLM fits rest on the host and per-request edges (three Offline configurations
# cannot pin four constants; unbounded, they take 110-170 ms of host time per iteration).
UPPER = (4e-6, 24e-3, 1.2e-6, 0.3e-6, 38.4e-6)
# The constants each engine fits (the others stay 0): TensorRT-LLM's per-sequence work on the GPU
# per layer (its scheduler is C++, and its per-request time grows with depth), vLLM's on the host
# per request (its scheduler walks every request in Python each step, a cost that does not grow
# with depth).
FREE = {"TensorRT-LLM": (0, 1, 2, 3), "vLLM": (0, 1, 3, 4)}
DEFAULT_ENGINE = "TensorRT-LLM"
# Units the solver works in (us, ms, us, us, us: every variable of order one) and the rounding of
# the fitted constants (0.01 us, 1 us, 0.001 us, 0.0001 us, 0.01 us).
UNITS = (1e-6, 1e-3, 1e-6, 1e-6, 1e-6)
RESOLUTION = (1e-8, 1e-6, 1e-9, 1e-10, 1e-8)
DELTA = 1e-3
TOLERANCE = 1e-9      # a step moving no variable by more than this (in UNITS) ends the solve
MAX_STEPS = 5000


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


def weights(samples, indices):
    """{index: w}: 1 / (families x configurations of its family x cases of its configuration)."""
    fams = {}
    for i in indices:
        fams.setdefault(samples[i][5], {}).setdefault(_configuration(samples[i], i), []).append(i)
    w = {}
    for groups in fams.values():
        for g in groups.values():
            for i in g:
                w[i] = 1 / (len(fams) * len(groups) * len(g))
    return w


def _rows(samples, indices, free):
    """(absolute rows, linear rows) of the objective, each row (weight, a, x): the term
    weight x |a + x . z| or weight x (a + x . z), z the free constants in UNITS. A case is
    r = L / M - 1 = (GPU - M) / M + sum_j x_j c_j / M; one whose host step F is at least M is
    (F - M) / M + max(0, L - F) / M, the hinge written |u| / 2 + u / 2 for u = (L - F) / M (the
    constant (F - M) / M dropped)."""
    absolute, linear = [], []
    for i, w in sorted(weights(samples, indices).items()):
        s = samples[i]
        m = s[4]
        per = (s[3], 1.0, s[1], s[7], s[9] if len(s) > 9 else 0.0)
        x = tuple(per[j] * UNITS[j] / m for j in free)
        floor = s[10] if len(s) > 10 else 0.0
        if floor >= m:
            a = (s[2] - floor) / m
            absolute.append((w / 2, a, x))
            linear.append((w / 2, a, x))
        else:
            absolute.append((w, s[2] / m - 1, x))
    return absolute, linear


def _solve_linear(h, b):
    """x with h x = b (Gaussian elimination, partial pivoting), or None when h is singular."""
    n = len(b)
    a = [list(row) + [b[i]] for i, row in enumerate(h)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(a[r][c]))
        if abs(a[p][c]) < 1e-300:
            return None
        a[c], a[p] = a[p], a[c]
        for r in range(c + 1, n):
            f = a[r][c] / a[c][c]
            for k in range(c, n + 1):
                a[r][k] -= f * a[c][k]
    x = [0.0] * n
    for c in range(n - 1, -1, -1):
        x[c] = (a[c][n] - plain_sum(a[c][k] * x[k] for k in range(c + 1, n))) / a[c][c]
    return x


def box_qp(h, b, upper):
    """argmin 1/2 z' h z + b' z over 0 <= z_j <= upper[j] (None: no upper bound), h positive
    definite: the best feasible point over every choice of each variable free, at 0 or at its upper
    bound (the optimum is one of them: with its active bounds fixed, its free variables solve the
    reduced equations)."""
    n = len(b)
    best = (None, None)
    for choice in _choices(upper):
        fixed = {j: v for j, v in enumerate(choice) if v is not None}
        free = [j for j in range(n) if j not in fixed]
        z = [fixed.get(j, 0.0) for j in range(n)]
        if free:
            rhs = [-b[i] - plain_sum(h[i][j] * v for j, v in fixed.items()) for i in free]
            got = _solve_linear([[h[i][j] for j in free] for i in free], rhs)
            if got is None:
                continue
            for j, v in zip(free, got):
                z[j] = v
        if any(v < 0 or (upper[j] is not None and v > upper[j]) for j, v in enumerate(z)):
            continue
        value = plain_sum(0.5 * z[i] * h[i][j] * z[j] for i in range(n) for j in range(n)) + plain_sum(
            b[i] * z[i] for i in range(n))
        if best[0] is None or value < best[0]:
            best = (value, z)
    return best[1]


def _choices(upper):
    """Each variable's status: None (free), 0.0, or its upper bound when it has one."""
    out = [()]
    for u in upper:
        options = (None, 0.0) if u is None else (None, 0.0, u)
        out = [c + (o,) for c in out for o in options]
    return out


def objective(absolute, linear, z):
    """sum w sqrt(r^2 + DELTA^2) over the absolute rows + sum w r over the linear rows."""
    def r(a, x):
        return a + plain_sum(xj * zj for xj, zj in zip(x, z))
    return (plain_sum(w * math.sqrt(r(a, x) ** 2 + DELTA ** 2) for w, a, x in absolute)
            + plain_sum(w * r(a, x) for w, a, x in linear))


def solve(absolute, linear, upper):
    """The minimiser z of `objective` over the box, by majorize-minimize: at z0 each smoothed term
    w sqrt(r^2 + d^2) lies below w (r^2 + s0^2) / (2 s0), s0 = sqrt(r0^2 + d^2), with equality at
    z0, so the box minimum of the quadratic sum never raises the objective; repeated until no
    variable moves by TOLERANCE."""
    n = len(upper)
    z = [0.0] * n
    for _ in range(MAX_STEPS):
        h = [[0.0] * n for _ in range(n)]
        b = [0.0] * n
        for w, a, x in absolute:
            r = a + plain_sum(xj * zj for xj, zj in zip(x, z))
            u = w / math.sqrt(r * r + DELTA * DELTA)
            for i in range(n):
                b[i] += u * a * x[i]
                for j in range(i, n):
                    h[i][j] += u * x[i] * x[j]
        for w, _, x in linear:
            for i in range(n):
                b[i] += w * x[i]
        for i in range(n):
            for j in range(i):
                h[i][j] = h[j][i]
        new = box_qp(h, b, upper)
        moved = max(abs(p - q) for p, q in zip(new, z))
        z = new
        if moved < TOLERANCE:
            return z
    raise RuntimeError(f"the serving fit did not converge in {MAX_STEPS} steps")


def fit(samples, engine=DEFAULT_ENGINE, indices=None):
    """The constants (five, those `engine` does not fit 0) minimising the objective on `samples`
    (or those at `indices`), each rounded to RESOLUTION."""
    free = FREE[engine]
    absolute, linear = _rows(samples, range(len(samples)) if indices is None else indices, free)
    z = solve(absolute, linear, [None if UPPER[j] is None else UPPER[j] / UNITS[j] for j in free])
    c = [0.0] * 5
    for j, v in zip(free, z):
        c[j] = round(v * UNITS[j] / RESOLUTION[j]) * RESOLUTION[j]
        c[j] = float(f"{c[j]:.6g}")   # the decimal the rounding names (no 3.0000000000000004e-07)
    return tuple(c)


def leave_one_out(samples):
    """{"all": fit on every sample of the default engine, publication: fit on the samples of every
    other publication of the same engine}, each engine with its own free constants (FREE)."""
    got = {"all": fit(samples, DEFAULT_ENGINE, [i for i, s in enumerate(samples) if s[6] == DEFAULT_ENGINE])}
    for pub, eng in sorted({(s[0], s[6]) for s in samples}):
        got[pub] = fit(samples, eng, [i for i, s in enumerate(samples) if s[0] != pub and s[6] == eng])
    return got

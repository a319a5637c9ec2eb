"""Closed-form sums over decode steps: cost grows with linear pieces, not tokens.

A decode step adds one token (T = 1) to each of B requests that hold H cached
tokens. Every ledger quantity of a block is linear in H on the pieces that
`Block.history_breakpoints` delimits (a sliding window W, for instance, makes
the keys a query sees min(H + 1, W): linear, then flat). On a piece of n
consecutive histories a, a+1, ..., a+n-1 any such quantity f sums exactly, in
integers, as the arithmetic series

    sum_{j=0}^{n-1} f(a + j) = n * f(a) + (f(a+1) - f(a)) * n * (n-1) / 2,

so only the values at a and a + 1 are built, whatever the number of steps
(one more at the piece's end checks the linearity the block promises).

The ledger's rows are its blocks' rows (times their layer count), so each block
is summed over its own pieces: an MLP over one piece, a window over two, a
ratio-4 compressor over the two pieces of its period of 4, whatever the other
blocks do. Each operator therefore carries its own `Run`s, and the steps'
common pieces (where the per-step totals are linear, the union of every
block's breakpoints) are kept only as spans, for the ideal bound.

Roofline times are not linear: an operator's per-step bound is
max(c(H), m(H)). Its compute time c and memory time m are both linear in H on
a piece, so c - m changes sign at most once there; the piece is split at that
step. Each operator's FIELDS are summed, in exact integers, over its
compute-bound steps and over its memory-bound steps, and each sum is turned
into seconds once: a summed time is the time of two exact sums, whatever the
pieces (so it equals a step-by-step loop that sums the same integers).

Chunked attention (chunk C) starts new pieces every C steps, so a long decode
has about 2G/C of them, too many to list (G goes up to 10^15). Those pieces
repeat: the pieces of period k are the pieces of period 0 shifted by kC, and
every quantity at H + kC is its value at H plus k times a fixed drift
(`Block.history_period`). So a block's range is first cut into segments at its
breakpoints without a period and where its drift changes; in a segment, the
breakpoints of one period are listed and its K whole periods become one Run
per piece of a period, with `repeats` K and a `drift`; they sum as a double
arithmetic series, K * S(0) + n * drift * K(K-1)/2, and the bound split runs
over the (repeat, step) lattice, where compute minus memory time is linear in
both. Nothing lists breakpoints over more than a few periods, so the cost is a
handful of block evaluations whatever G is.
"""

import math
from collections import namedtuple
from operator import add, attrgetter, sub

from .. import ledger
from ..memo import remember
from ..record import Record
from ..summation import plain_sum

FIELDS = ("matrix_flops", "rect_flops", "vector_flops", "weight_read", "act_read",
          "kv_read", "act_write", "kv_write")

_vector = attrgetter(*FIELDS)   # an operator row's FIELDS values, as a tuple
_ZEROS = (0,) * len(FIELDS)


def series(v0, d, n):
    """sum_{j=0}^{n-1} (v0 + j*d), field by field, in exact integers."""
    tri = n * (n - 1) // 2
    return tuple([n * a + b * tri for a, b in zip(v0, d)])


def shifted(v0, d, j):
    """v0 + j*d, field by field."""
    return tuple([a + j * b for a, b in zip(v0, d)])


def _blocks(arch):
    """The distinct blocks of `arch` (its top blocks and its layers'), first seen first: what the
    plans gather breakpoints, periods and segments from, as sets (a block that many layers share
    counts once); computed once per architecture (an immutable record)."""
    d = arch.__dict__
    blocks = d.get("_distinct_blocks")
    if blocks is None:
        seen = dict.fromkeys(arch.top_blocks())
        for layer, _, _ in arch.layer_groups():
            seen.update(dict.fromkeys(layer.blocks))
        blocks = d["_distinct_blocks"] = tuple(seen)
    return blocks


def _period(blocks):
    periods = [p for p in (b.history_period() for b in blocks) if p]
    return math.lcm(*periods) if periods else None


def period(arch):
    """The least common multiple of the blocks' history periods, or None."""
    return _period(_blocks(arch))


def breakpoints(arch, lo, hi, blocks=None):
    """Histories in (lo, hi] where some block's per-step cost starts a new linear piece.

    A block with a history period lists about 2 (hi - lo) / period points: call
    this on ranges of a few periods only (decode_pieces does)."""
    points = set()
    for block in _blocks(arch) if blocks is None else blocks:
        points.update(h for h in block.history_breakpoints(lo, hi) if lo < h <= hi)
    return sorted(points)


def _pieces(blocks, lo, hi):
    starts = [lo] + breakpoints(None, lo, hi, blocks)
    ends = [s - 1 for s in starts[1:]] + [hi]
    return list(zip(starts, ends))


def pieces(arch, lo, hi):
    """[(first, last)] histories of each linear piece covering lo..hi (a short range)."""
    return _pieces(_blocks(arch), lo, hi)


def _segments(blocks, lo, hi):
    once = [b for b in blocks if not b.history_period()]
    cuts = set(breakpoints(None, lo, hi, once))
    cuts.update(h for b in blocks if b.history_period() for h in b.history_segments(lo, hi) if lo < h <= hi)
    starts = [lo] + sorted(cuts)
    return list(zip(starts, [s - 1 for s in starts[1:]] + [hi]))


def segments(arch, lo, hi):
    """lo..hi cut at the breakpoints of the blocks without a period (a window's
    end, the first history of a recurrent state) and where a periodic block's drift
    changes (Block.history_segments): a few points, whatever hi."""
    return _segments(_blocks(arch), lo, hi)


# A segment is summed as repeats when it holds at least this many periods
# (fewer: its pieces are listed, about 2 per period).
MIN_REPEATS = 3


def _periodic_layout(blocks, lo, hi, p):
    a0 = max(lo, p)
    if a0 > hi:
        return None
    near = breakpoints(None, a0 - 1, min(a0 + p - 1, hi), blocks)
    a = near[0] if near else a0
    k = (hi - a + 1) // p
    return (a, k) if k >= MIN_REPEATS else None


def periodic_layout(arch, lo, hi, p):
    """(a, K): the K >= MIN_REPEATS whole periods a .. a + K p - 1 of the segment
    lo..hi to sum as repeats, or None when it is too short.

    A block's breakpoints recur every period from history P on (history_period),
    so a is the first piece start at or after max(lo, P): a breakpoint when one
    lies within a period of it (the pieces then tile each period exactly), else
    max(lo, P) itself."""
    return _periodic_layout(_blocks(arch), lo, hi, p)


def _plan(blocks, lo, hi):
    p = _period(blocks)
    out = []
    for s, e in _segments(blocks, lo, hi):
        run = _periodic_layout(blocks, s, e, p) if p else None
        if run is None:
            out.append((_pieces(blocks, s, e), 1, 0))
            continue
        a, k = run
        if a > s:
            out.append((_pieces(blocks, s, a - 1), 1, 0))
        spans = _pieces(blocks, a, a + p - 1)
        if _pieces(blocks, a + p, a + 2 * p - 1) != [(x + p, y + p) for x, y in spans]:
            raise AssertionError(f"breakpoints after history {a + p} are not those after {a} shifted by "
                                 f"{p}: a block's history_period is wrong")
        out.append((spans, k, p))
        if a + k * p <= e:
            out.append((_pieces(blocks, a + k * p, e), 1, 0))
    return out


def plan(arch, lo, hi):
    """Histories lo..hi as [(spans, repeats, period)]: `spans` are linear pieces
    (first, last); with repeats K > 1 they tile one period, and K - 1 copies
    shifted by `period`, 2 `period`, ... follow. Within each segment (see
    `segments`) the whole periods of `period(arch)` are one such entry, so no
    breakpoint is listed over more than a few periods: the plan is short
    whatever hi - lo."""
    return _plan(_blocks(arch), lo, hi)


def linear_sum(arch, lo, hi, f):
    """sum_{h=lo}^{hi} f(h) in exact integers, for an integer f that is linear in h
    on every piece of `plan` and gains a fixed drift from h to h + period (a
    block's per-step cost, the cache a request holds): an arithmetic series per
    piece, a double one over repeats, from a few values of f. Fails loudly if f
    is not linear or periodic where the blocks say it is (a bug in a block)."""
    return _linear_sum(_blocks(arch), lo, hi, f)


def block_sum(arch, lo, hi, f):
    """sum_{h=lo}^{hi} of sum over the layers' blocks of f(block, h), each distinct
    block's f summed over its own plan (linear_sum with that block's breakpoints and
    period alone) times the number of layers holding it: exact, and a ratio-4
    block's sum costs its own few pieces, not those of every block together."""
    counts = {}
    for layer, count, _ in arch.layer_groups():
        for block in layer.blocks:
            counts[block] = counts.get(block, 0) + count
    return plain_sum(count * _linear_sum([block], lo, hi, lambda h: f(block, h)) for block, count in counts.items())


def _linear_sum(blocks, lo, hi, f):
    total = 0
    for spans, k, p in _plan(blocks, lo, hi):
        for a, b in spans:
            n = b - a + 1
            f0 = f(a)
            d = f(a + 1) - f0 if n > 1 else 0
            if n > 2 and f(b) != f0 + (n - 1) * d:
                raise AssertionError(f"not linear on histories {a}..{b}: a block misses a history breakpoint")
            piece = n * f0 + d * (n * (n - 1) // 2)
            if k > 1:
                drift = f(a + p) - f0
                if f(a + (k - 1) * p) != f0 + (k - 1) * drift or n > 1 and f(a + p + 1) - f(a + p) != d:
                    raise AssertionError(f"values at history {a} + K x {p} are not those at {a} plus K "
                                         "drifts: a block's history_period is wrong")
                piece = k * piece + n * drift * (k * (k - 1) // 2)
            total += piece
    return total


class Run(namedtuple("Run", "first steps start delta repeats period drift",
                     defaults=(_ZEROS, 1, 0, _ZEROS))):
    """One operator on the steps with histories first + k*period + j (j < steps,
    k < repeats): its FIELDS there are start + j*delta + k*drift, exactly."""
    __slots__ = ()

    @property
    def total_steps(self):
        return self.steps * self.repeats

    @property
    def last(self):
        """The history of the run's last step."""
        return self.first + (self.repeats - 1) * self.period + self.steps - 1

    def at(self, h):
        """FIELDS at history h, or None when no step of the run has it."""
        j = h - self.first
        k = 0
        if self.repeats > 1:
            k, j = divmod(j, self.period)
            if not 0 <= k < self.repeats:
                return None
        if not 0 <= j < self.steps:
            return None
        v = shifted(self.start, self.delta, j) if j else self.start
        return shifted(v, self.drift, k) if k else v

    def summed(self):
        """FIELDS summed over every step of every repeat."""
        return repeated_series(self.start, self.delta, self.drift, self.steps, self.repeats)

    def split(self, compute_s, memory_s):
        """The steps split by bound: [(compute_bound, count, summed values)]. A run
        without increment or drift (the same every step: a projection, an MLP) has
        one bound on every step (split_repeated's answer, without its search)."""
        v0 = self.start
        if self.delta == _ZEROS and self.drift == _ZEROS:
            n = self.steps * self.repeats
            return [(compute_s(v0) - memory_s(v0) > 0, n, tuple([n * x for x in v0]) if n > 1 else v0)]
        return split_repeated(v0, self.delta, self.drift, self.steps, self.repeats, compute_s, memory_s)

    def times(self, k):
        """This run of k identical layers (every FIELDS value times k)."""
        if k == 1:
            return self
        return Run(self.first, self.steps, tuple([k * x for x in self.start]),
                   tuple([k * x for x in self.delta]) if self.delta != _ZEROS else _ZEROS, self.repeats,
                   self.period, tuple([k * x for x in self.drift]) if self.drift != _ZEROS else _ZEROS)


def constant(runs):
    """(FIELDS, steps) when an operator's runs are one run without increment or drift
    (its values the same on every step), else None."""
    if len(runs) == 1:
        run = runs[0]
        if run.delta == _ZEROS and run.drift == _ZEROS:
            return run.start, run.steps * run.repeats
    return None


def bound_sums(runs, compute_s, memory_s):
    """(FIELDS summed over the compute-bound steps, over the memory-bound steps, the
    number of compute-bound steps) of one operator's runs, in exact integers: what its
    summed time is computed from, whatever the pieces."""
    on_compute = on_memory = None
    steps = 0
    for run in runs:
        for is_compute, count, v in run.split(compute_s, memory_s):
            if is_compute:
                on_compute = v if on_compute is None else tuple(map(add, on_compute, v))
                steps += count
            else:
                on_memory = v if on_memory is None else tuple(map(add, on_memory, v))
    return on_compute or _ZEROS, on_memory or _ZEROS, steps


class Steps(Record):
    """Decode steps at histories first .. first + count - 1 (or one pass: count 1),
    summed per operator: `runs[i]` are operator i's Runs, in history order, cut at
    its own block's breakpoints and periods; `spans` (plan's entries) are where
    the per-step totals are linear (every block's breakpoints together)."""
    first: int
    count: int
    ops: tuple       # ledger rows at the first step (names, layers, shapes)
    end_ops: tuple   # ledger rows at the last step; () when not built
    runs: tuple
    spans: tuple

    def starts(self):
        """Per operator: its FIELDS at the first step."""
        return tuple(runs[0].start for runs in self.runs)

    def first_step(self):
        """The first step alone."""
        if self.count == 1:
            return self
        return Steps(self.first, 1, self.ops, self.ops, tuple((Run(self.first, 1, v),) for v in self.starts()),
                     (([(self.first, self.first)], 1, 0),))

    def last_step(self):
        """The last step alone: its ledger rows when they were built, else the ops'
        values there from their runs' linear forms."""
        h = self.first + self.count - 1
        if self.count == 1:
            return self
        if self.end_ops:
            return single(self.end_ops, h)
        return Steps(h, 1, self.ops, (), tuple((Run(h, 1, runs[-1].at(h)),) for runs in self.runs),
                     (([(h, h)], 1, 0),))

    def extended(self, lo, hi):
        """Histories lo..hi of steps whose every operator is one linear run over all
        histories (no breakpoint, no period), from these steps' runs; the end rows
        are not built."""
        runs = []
        for (run,) in self.runs:
            assert run.repeats == 1
            runs.append((Run(lo, hi - lo + 1, shifted(run.start, run.delta, lo - run.first), run.delta),))
        return Steps(lo, hi - lo + 1, self.ops, (), tuple(runs), (([(lo, hi)], 1, 0),))

    def _total_parts(self):
        """(the FIELDS of the operators with one run and neither increment nor drift,
        summed; the other operators grouped by their pieces, each group's runs summed),
        kept on the instance (immutable)."""
        hit = self.__dict__.get("_parts")
        if hit is not None:
            return hit
        steady, groups = [], {}
        for runs in self.runs:
            if len(runs) == 1 and runs[0].delta == _ZEROS and runs[0].drift == _ZEROS:
                steady.append(runs[0].start)
                continue
            key = tuple((r.first, r.steps, r.repeats, r.period) for r in runs)
            hit = groups.get(key)
            groups[key] = runs if hit is None else tuple(
                r._replace(start=tuple(map(add, r.start, q.start)), delta=tuple(map(add, r.delta, q.delta)),
                           drift=tuple(map(add, r.drift, q.drift)))
                for r, q in zip(hit, runs))
        constant = tuple(map(sum, zip(*steady))) if steady else _ZEROS
        parts = self.__dict__["_parts"] = (constant, tuple(groups.values()))
        return parts

    def total_range(self, f):
        """(lowest, highest) bounds of f over the per-step totals, for f linear in FIELDS
        (no constant term): each operator group's extremes over its runs' corners
        (first and last step, first and last repeat) added up, so the true range lies
        within; and the sum of the magnitudes (the scale of rounding in f)."""
        constant, groups = self._total_parts()
        c = f(constant)
        low = high = c
        scale = abs(c)
        for runs in groups:
            ends = []
            for run in runs:
                v = f(run.start)
                j = (run.steps - 1) * f(run.delta)
                k = (run.repeats - 1) * f(run.drift) if run.repeats > 1 else 0.0
                ends += [v + min(j, 0.0) + min(k, 0.0), v + max(j, 0.0) + max(k, 0.0)]
            low, high = low + min(ends), high + max(ends)
            scale += max(map(abs, ends))
        return low, high, scale

    def total_runs(self):
        """The per-step totals over the operators as one Run per common piece of
        `spans` (the union of every operator's pieces, where the totals are linear)."""
        if self.count == 1:
            return [Run(self.first, 1, tuple(map(sum, zip(*self.starts()))) if self.runs else _ZEROS)]
        constant, groups = self._total_parts()
        summed = [[runs, 0] for runs in groups]   # each group's runs and the run last used

        def at(group, h):
            """(the group's run holding history h, its values there); the search starts at
            the run last used (the spans ask in increasing order; a period's runs interleave)."""
            runs, i = group
            n = len(runs)
            for j in range(n):
                run = runs[(i + j) % n]
                v = run.at(h)
                if v is not None:
                    group[1] = (i + j) % n
                    return run, v
            raise AssertionError(f"no run holds history {h}")

        out = []
        for spans, k, p in self.spans:
            for a, b in spans:
                v0, d, drift = list(constant), [0] * len(FIELDS), [0] * len(FIELDS)
                for group in summed:
                    run, v = at(group, a)
                    v0 = [x + y for x, y in zip(v0, v)]
                    if b > a:   # a..b lies on one linear piece of every run: its increment
                        d = [x + y for x, y in zip(d, run.delta)]
                    if k > 1:
                        i = group[1]
                        later = at(group, a + p)[1]
                        drift = [x + y - z for x, y, z in zip(drift, later, v)]
                        group[1] = i
                out.append(Run(a, b - a + 1, tuple(v0), tuple(d), k, p if k > 1 else 0, tuple(drift)))
        return out


def single(ops, first=0):
    """One pass (a ledger's rows) as one step."""
    ops = tuple(ops)
    return Steps(first, 1, ops, ops, tuple((Run(first, 1, _vector(op)),) for op in ops), (([(first, first)], 1, 0),))


def _values(block, w, history):
    """FIELDS of each of `block`'s ops (one instance) in the decode step at `history`."""
    key = (w, history)
    wh = _AT.get(key) or remember(_AT, _AT_KEPT, key, w.replace(history=history))
    return tuple([_vector(op) for op in ledger._raw_ops(block, wh, wh.without_history())])


# w.replace(history=h) by (w, h): the blocks of one step share one workload record
# (and its cached hash, the key of their memoized rows).
_AT = {}
_AT_KEPT = 256


def steps_totals(arch, w, lo, hi):
    """FIELDS summed over every operator and every decode step at histories lo..hi
    (summed_totals of decode_pieces), from each distinct block's runs times the
    layers holding it, without the ledger rows."""
    w = w.replace(tokens=1)
    counts = {}
    for block, count, _, _ in ledger.parts(arch):
        counts[block] = counts.get(block, 0) + count
    total = _ZEROS
    for block, count in counts.items():
        for runs in _block_runs(block, w, lo, hi, False):
            for run in runs:
                total = tuple(t + count * v for t, v in zip(total, run.summed()))
    return total


def _block_runs(block, w, lo, hi, check):
    """Per op of `block` (one instance): its Runs over the steps lo..hi, from the
    block's own plan (its breakpoints and period alone), memoized by (block, w, lo,
    hi) (a block recurs over many layer groups). Builds the block's rows at the
    first two histories of each piece (and of its second period); with `check`
    also at its last history and at its last period, and fails loudly if the block
    is not linear or periodic where its history_breakpoints / history_period say."""
    key = (block, w if block.reads_mla else w.without_mla(), lo, hi)
    hit = _RUNS.get(key)
    if hit is not None and (hit[0] or not check):
        return hit[1]
    return remember(_RUNS, _RUNS_KEPT, key, (check, _build_runs(block, w, lo, hi, check)))[1]


# _block_runs by (block, workload, lo, hi) -> (checked, runs); a checked result also
# answers an unchecked request.
_RUNS = {}
_RUNS_KEPT = 512


def _build_runs(block, w, lo, hi, check):
    if block.history_independent:
        return tuple((Run(lo, hi - lo + 1, v),) for v in _values(block, w, lo))
    memo = {}

    def at(h):
        v = memo.get(h)
        if v is None:
            v = memo[h] = _values(block, w, h)
        return v

    def linear(a, b):
        """(starts, deltas) per op on a .. b, checked at b."""
        s = at(a)
        if b == a:
            return s, tuple(_ZEROS for _ in s)
        d = tuple(tuple(map(sub, q, v)) for v, q in zip(s, at(a + 1)))
        if check and b > a + 1 and at(b) != tuple(shifted(v, x, b - a) for v, x in zip(s, d)):
            raise AssertionError(f"{block.label or type(block).__name__} is not linear in the history on "
                                 f"{a}..{b}: a block misses a history breakpoint")
        return s, d

    if not block.history_period() and not any(lo < h <= hi for h in block.history_breakpoints(lo, hi)):
        s, d = linear(lo, hi)   # one linear piece (full attention): the plan's answer, directly
        return tuple((Run(lo, hi - lo + 1, v, x),) for v, x in zip(s, d))
    ops = None
    for spans, k, p in _plan([block], lo, hi):
        for a, b in spans:
            s, d = linear(a, b)
            if k > 1:
                s2, d2 = linear(a + p, b + p)
                if d2 != d:
                    raise AssertionError(f"per-step increments change between histories {a} and {a + p}: "
                                         "a block's history_period is wrong")
                drift = tuple(tuple(map(sub, t, v)) for v, t in zip(s, s2))
                if check and at(a + (k - 1) * p) != tuple(shifted(v, x, k - 1) for v, x in zip(s, drift)):
                    raise AssertionError(f"costs at history {a + (k - 1) * p} are not those at {a} plus "
                                         f"{k - 1} periods of drift: a block's history_period is wrong")
                runs = [Run(a, b - a + 1, v, x, k, p, y) for v, x, y in zip(s, d, drift)]
            else:
                runs = [Run(a, b - a + 1, v, x) for v, x in zip(s, d)]
            if ops is None:
                ops = [[] for _ in runs]
            if len(runs) != len(ops):
                raise AssertionError(f"the ledger's operator rows change at history {a}")
            for mine, run in zip(ops, runs):
                mine.append(run)
    return tuple(tuple(r) for r in ops or ())


def decode_pieces(arch, w, lo, hi, check=True):
    """The steps with histories lo..hi (one new token per request each) as Steps:
    each operator summed over its own block's pieces (_block_runs), the ledger
    rows at lo (and, with `check`, at hi) for the labels. The cost is flat in hi - lo."""
    key = (arch, w, lo, hi)
    hit = _PIECES.get(key)
    if hit is not None and (hit[0] or not check):
        return hit[1]
    w = w.replace(tokens=1)
    ops = tuple(ledger.operators(arch, w.replace(history=lo)))
    end = ops if hi == lo else tuple(ledger.operators(arch, w.replace(history=hi))) if check else ()
    if end:
        _same_rows(ops, end, hi)
    runs, n = [], hi - lo + 1
    free = w.without_history()
    for block, count, _, _ in ledger.parts(arch):
        if block.history_independent:   # the same rows at every step: the ledger's at lo
            at = len(runs)
            runs.extend((Run(lo, n, _vector(op)),) for op in ops[at:at + len(ledger._raw_ops(block, w, free))])
        else:
            runs.extend(tuple(r.times(count) for r in op) for op in _block_runs(block, w, lo, hi, check))
    if len(runs) != len(ops) or check and any(_vector(op) != r[0].start for op, r in zip(ops, runs)):
        raise AssertionError("the blocks' rows are not the ledger's rows")
    # the totals' common pieces: lo..hi itself when every operator is one linear run
    one = all(len(r) == 1 and r[0].repeats == 1 for r in runs)
    out = Steps(lo, n, ops, end, tuple(runs), (([(lo, hi)], 1, 0),) if one else tuple(plan(arch, lo, hi)))
    remember(_PIECES, _PIECES_KEPT, key, (check, out))
    return out


# decode_pieces by (arch, workload, lo, hi) -> (checked, steps): a decode asks again
# for its batch-1 steps (the serving bound's request work). Steps are immutable; a
# checked result also answers an unchecked request.
_PIECES = {}
_PIECES_KEPT = 64


def _same_rows(ops, other, history):
    if [(o.name, o.layers) for o in ops] != [(o.name, o.layers) for o in other]:
        raise AssertionError(f"the ledger's operator rows change at history {history}")


def summed_ops(steps):
    """The ledger summed over every step: one Op row per operator, its FIELDS the
    sums of its runs (repeated_series: K n start + K n(n-1)/2 delta + n K(K-1)/2 drift)."""
    if steps.count == 1 and steps.end_ops is steps.ops:   # one pass: its own rows
        return list(steps.ops)
    rows = []
    for i, (op, runs) in enumerate(zip(steps.ops, steps.runs)):
        total = runs[0].summed()
        for run in runs[1:]:
            total = tuple(map(add, total, run.summed()))
        end = steps.end_ops[i].shape if steps.end_ops else "..."
        values = op._field_dict()   # op.replace(shape=..., **FIELDS totals), without its name checks
        values.update(zip(FIELDS, total))
        values["shape"] = op.shape if end == op.shape else f"{op.shape} ... {end}"
        rows.append(type(op)._from_fields(values))
    return rows


def summed_totals(steps):
    """FIELDS summed over every operator and every step: the steady operators' sum times
    the steps, plus each other group's runs summed (Steps._total_parts)."""
    constant, groups = steps._total_parts()
    total = tuple([steps.count * x for x in constant])
    for runs in groups:
        for run in runs:
            total = tuple(map(add, total, run.summed()))
    return total


def split_by_bound(v0, d, n, compute_s, memory_s):
    """Split steps j = 0..n-1 of a linear quantity v0 + j*d where its bound flips.

    compute_s(v) and memory_s(v) are linear in v (no constant term), so
    diff(j) = compute_s(v_j) - memory_s(v_j) is linear in j and changes sign at
    most once. Returns [(compute_bound, count, summed values)], each part
    summed in closed form; the bound is "compute" when compute time > memory time.
    """
    diff0 = compute_s(v0) - memory_s(v0)
    if n == 1:
        return [(diff0 > 0, 1, v0)]
    slope = compute_s(d) - memory_s(d)

    def is_compute(j):
        return diff0 + slope * j > 0

    start = is_compute(0)
    if is_compute(n - 1) == start:
        return [(start, n, series(v0, d, n))]
    k = min(max(int(-diff0 / slope), 1), n - 1)   # first step of the other bound, then exact
    while k > 1 and is_compute(k - 1) != start:
        k -= 1
    while k < n - 1 and is_compute(k) == start:
        k += 1
    return [(start, k, series(v0, d, k)), (not start, n - k, series(shifted(v0, d, k), d, n - k))]


def repeated_series(v0, d, drift, n, repeats):
    """sum over k < repeats, j < n of v0 + j*d + k*drift, in exact integers."""
    total = series(v0, d, n)
    if repeats == 1:
        return total
    tri = repeats * (repeats - 1) // 2
    return tuple(repeats * t + n * b * tri for t, b in zip(total, drift))


def split_repeated(v0, d, drift, n, repeats, compute_s, memory_s):
    """split_by_bound over the lattice of repeats k < K and steps j < n.

    diff(k, j) = compute - memory time is linear in k and j. A repeat is wholly
    memory-, mixed or wholly compute-bound by the signs at its corners j = 0 and
    j = n - 1, and as k grows these classes come in one order (their corner
    lines share the slope in k), so bisection finds the runs of whole repeats,
    each summed in closed form; only the mixed repeats (about
    |d diff / d j| * n / |d diff / d k| + 1 of them) are split one by one.
    With no drift in diff (a chunked layer's operators: their cost depends on
    H mod C only) every repeat splits at the same step; for an operator linear
    in H throughout (full attention) the drift is P times the step increment,
    so at most about n / P + 1 <= 2 repeats are mixed: either way the work is
    flat in the number of repeats.
    """
    if repeats == 1:
        return split_by_bound(v0, d, n, compute_s, memory_s)
    diff0 = compute_s(v0) - memory_s(v0)
    a = compute_s(d) - memory_s(d)
    b = compute_s(drift) - memory_s(drift)
    if b == 0:   # every repeat splits at the same step (a chunked layer: no drift at all)
        parts, j = [], 0
        for is_compute, count, _ in split_by_bound(v0, d, n, compute_s, memory_s):
            parts.append((is_compute, count * repeats,
                          repeated_series(shifted(v0, d, j), d, drift, count, repeats)))
            j += count
        return parts

    def rank(k):
        """0, 1, 2: the class of repeat k in its order along k."""
        lo_c, hi_c = diff0 + b * k > 0, diff0 + a * (n - 1) + b * k > 0
        cls = 1 if lo_c != hi_c else (2 if lo_c else 0)   # 0 memory, 1 mixed, 2 compute
        return cls if b >= 0 else 2 - cls

    def first_at_least(r):
        lo, hi = 0, repeats
        while lo < hi:
            mid = (lo + hi) // 2
            if rank(mid) >= r:
                hi = mid
            else:
                lo = mid + 1
        return lo

    m1, m2 = first_at_least(1), first_at_least(2)
    parts = []
    for k0, k1, r in ((0, m1, 0), (m1, m2, 1), (m2, repeats, 2)):
        if k0 >= k1:
            continue
        if r == 1:
            for k in range(k0, k1):
                parts += split_by_bound(shifted(v0, drift, k), d, n, compute_s, memory_s)
            continue
        is_compute = (r == 2) == (b >= 0)
        parts.append((is_compute, (k1 - k0) * n,
                      repeated_series(shifted(v0, drift, k0), d, drift, n, k1 - k0)))
    return parts

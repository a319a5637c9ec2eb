"""Closed-form sums over decode steps: cost grows with linear pieces, not tokens.

A decode step adds one token (T = 1) to each of B requests that hold H cached
tokens. Every ledger quantity of a block is linear in H on the pieces that
`Block.history_breakpoints` delimits (a sliding window W, for instance, makes
the keys a query sees min(H + 1, W): linear, then flat). On a piece of n
consecutive histories a, a+1, ..., a+n-1 any such quantity f sums exactly, in
integers, as the arithmetic series

    sum_{j=0}^{n-1} f(a + j) = n * f(a) + (f(a+1) - f(a)) * n * (n-1) / 2,

so only the ledgers at a and a + 1 are built, whatever the number of steps
(one more at the piece's end checks the linearity the block promises).

Roofline times are not linear: an operator's per-step bound is
max(c(H), m(H)). Its compute time c and memory time m are both linear in H on
a piece, so c - m changes sign at most once there; the piece is split at that
step and each part is summed with its own bound, which makes the summed time
equal to the sum of the per-step bounds (up to floating-point rounding).

Chunked attention (chunk C) starts new pieces every C steps, so a long decode
has about 2G/C of them, too many to list (G goes up to 10^15). Those pieces
repeat: the pieces of period k are the pieces of period 0 shifted by kC, and
every quantity at H + kC is its value at H plus k times a fixed drift
(`Block.history_period`). So the range is first cut into segments at the few
breakpoints of the blocks without a period; in a segment, the breakpoints of
one period are listed and its K whole periods become one Piece per piece of a
period, with `repeats` K and `drifts`; they sum as a double arithmetic series,
K * S(0) + n * drift * K(K-1)/2, and the bound split runs over the
(repeat, step) lattice, where compute minus memory time is linear in both.
Nothing lists breakpoints over more than a few periods, so the cost is a
handful of ledgers whatever G is.
"""

import math
from operator import add, attrgetter, sub

from .. import ledger
from ..memo import remember
from ..record import Record

FIELDS = ("matrix_flops", "rect_flops", "vector_flops", "weight_read", "act_read",
          "kv_read", "act_write", "kv_write")

_vector = attrgetter(*FIELDS)   # an operator row's FIELDS values, as a tuple
_ZEROS = (0,) * len(FIELDS)


def series(v0, d, n):
    """sum_{j=0}^{n-1} (v0 + j*d), field by field, in exact integers."""
    tri = n * (n - 1) // 2
    return tuple(n * a + b * tri for a, b in zip(v0, d))


def shifted(v0, d, j):
    """v0 + j*d, field by field."""
    return tuple(a + j * b for a, b in zip(v0, d))


def _blocks(arch):
    blocks = list(arch.top_blocks())
    for layer, _, _ in arch.layer_groups():
        blocks.extend(layer.blocks)
    return blocks


def period(arch):
    """The least common multiple of the blocks' history periods, or None."""
    periods = [p for p in (b.history_period() for b in _blocks(arch)) if p]
    return math.lcm(*periods) if periods else None


def breakpoints(arch, lo, hi, blocks=None):
    """Histories in (lo, hi] where some block's per-step cost starts a new linear piece.

    A block with a history period lists about 2 (hi - lo) / period points: call
    this on ranges of a few periods only (decode_pieces does)."""
    points = set()
    for block in _blocks(arch) if blocks is None else blocks:
        points.update(h for h in block.history_breakpoints(lo, hi) if lo < h <= hi)
    return sorted(points)


def pieces(arch, lo, hi):
    """[(first, last)] histories of each linear piece covering lo..hi (a short range)."""
    starts = [lo] + breakpoints(arch, lo, hi)
    ends = [s - 1 for s in starts[1:]] + [hi]
    return list(zip(starts, ends))


class Piece(Record):
    """Decode steps with histories first..first+steps-1 on which every operator is
    linear, repeated `repeats` times every `period` histories (step j of repeat k
    has history first + k*period + j)."""
    first: int
    steps: int      # steps per repeat
    ops: tuple      # ledger rows of the step at `first` (names, layers, shapes)
    starts: tuple   # per operator: its FIELDS values at the first step
    deltas: tuple   # per operator: the per-step increment of each FIELDS value
    end_ops: tuple = ()   # ledger rows of the last step, when they were built
    repeats: int = 1
    period: int = 0
    drifts: tuple = ()    # per operator: the per-repeat increment of each FIELDS value

    @property
    def total_steps(self):
        return self.steps * self.repeats

    def values(self, i, j=0, k=0):
        """FIELDS of operator i at step j of repeat k."""
        v = shifted(self.starts[i], self.deltas[i], j) if j else self.starts[i]
        return shifted(v, self.drifts[i], k) if k else v

    def step(self, j, k=0):
        """Step j of repeat k alone, as a one-step piece (exact, from the linear form)."""
        zeros = (0,) * len(FIELDS)
        if j == 0 and k == 0:
            ops = end = self.ops
        elif j == self.steps - 1 and k == self.repeats - 1 and self.end_ops:
            ops = end = self.end_ops
        else:
            ops, end = self.ops, ()   # shape labels of step j were not built
        return Piece(self.first + k * self.period + j, 1, ops,
                     tuple(self.values(i, j, k) for i in range(len(ops))), tuple(zeros for _ in ops), end)

    def last_step(self):
        return self.step(self.steps - 1, self.repeats - 1)

    def summed(self, i):
        """FIELDS of operator i summed over every step of every repeat."""
        return repeated_series(self.starts[i], self.deltas[i], self.drifts[i] if self.drifts else None,
                               self.steps, self.repeats)

    def split(self, i, compute_s, memory_s):
        """Operator i's steps split by bound: [(compute_bound, count, summed values)].
        An operator without increment or drift (the same every step: a projection,
        an MLP) has one bound on every step (split_repeated's answer, without its search)."""
        v0 = self.starts[i]
        if self.deltas[i] == _ZEROS and (not self.drifts or self.drifts[i] == _ZEROS):
            n = self.steps * self.repeats
            return [(compute_s(v0) - memory_s(v0) > 0, n, tuple(n * x for x in v0) if n > 1 else v0)]
        return split_repeated(self.starts[i], self.deltas[i], self.drifts[i] if self.drifts else None,
                              self.steps, self.repeats, compute_s, memory_s)

    def totals(self):
        """(starts, deltas, drifts) summed over the operators."""
        def add(rows):
            return tuple(map(sum, zip(*rows))) if rows else ()
        return add(self.starts), add(self.deltas), add(self.drifts)


def single(ops, first=0):
    """One pass (a ledger's rows) as a one-step piece."""
    zeros = (0,) * len(FIELDS)
    return Piece(first, 1, tuple(ops), tuple(_vector(op) for op in ops), tuple(zeros for _ in ops), tuple(ops))


def _step_ops(arch, w, history):
    return tuple(ledger.operators(arch, w.replace(tokens=1, history=history)))


def segments(arch, lo, hi):
    """lo..hi cut at the breakpoints of the blocks without a period (a window's
    end, the first history of a recurrent state) and where a periodic block's drift
    changes (Block.history_segments): a few points, whatever hi."""
    blocks = _blocks(arch)
    once = [b for b in blocks if not b.history_period()]
    cuts = set(breakpoints(arch, lo, hi, once))
    cuts.update(h for b in blocks if b.history_period() for h in b.history_segments(lo, hi) if lo < h <= hi)
    starts = [lo] + sorted(cuts)
    return list(zip(starts, [s - 1 for s in starts[1:]] + [hi]))


# A segment is summed as repeats when it holds at least this many periods
# (fewer: its pieces are listed, about 2 per period).
MIN_REPEATS = 3


def periodic_layout(arch, lo, hi, p):
    """(a, K): the K >= MIN_REPEATS whole periods a .. a + K p - 1 of the segment
    lo..hi to sum as repeats, or None when it is too short.

    A block's breakpoints recur every period from history P on (history_period),
    so a is the first piece start at or after max(lo, P): a breakpoint when one
    lies within a period of it (the pieces then tile each period exactly), else
    max(lo, P) itself."""
    a0 = max(lo, p)
    if a0 > hi:
        return None
    near = breakpoints(arch, a0 - 1, min(a0 + p - 1, hi))
    a = near[0] if near else a0
    k = (hi - a + 1) // p
    return (a, k) if k >= MIN_REPEATS else None


def plan(arch, lo, hi):
    """Histories lo..hi as [(spans, repeats, period)]: `spans` are linear pieces
    (first, last); with repeats K > 1 they tile one period, and K - 1 copies
    shifted by `period`, 2 `period`, ... follow. Within each segment (see
    `segments`) the whole periods of `period(arch)` are one such entry, so no
    breakpoint is listed over more than a few periods: the plan is short
    whatever hi - lo."""
    p = period(arch)
    out = []
    for s, e in segments(arch, lo, hi):
        run = periodic_layout(arch, s, e, p) if p else None
        if run is None:
            out.append((pieces(arch, s, e), 1, 0))
            continue
        a, k = run
        if a > s:
            out.append((pieces(arch, s, a - 1), 1, 0))
        spans = pieces(arch, a, a + p - 1)
        if pieces(arch, a + p, a + 2 * p - 1) != [(x + p, y + p) for x, y in spans]:
            raise AssertionError(f"breakpoints after history {a + p} are not those after {a} shifted by "
                                 f"{p}: a block's history_period is wrong")
        out.append((spans, k, p))
        if a + k * p <= e:
            out.append((pieces(arch, a + k * p, e), 1, 0))
    return out


def linear_sum(arch, lo, hi, f):
    """sum_{h=lo}^{hi} f(h) in exact integers, for an integer f that is linear in h
    on every piece of `plan` and gains a fixed drift from h to h + period (a
    block's per-step cost, the cache a request holds): an arithmetic series per
    piece, a double one over repeats, from a few values of f. Fails loudly if f
    is not linear or periodic where the blocks say it is (a bug in a block)."""
    total = 0
    for spans, k, p in plan(arch, lo, hi):
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


def decode_pieces(arch, w, lo, hi, check=True):
    """The steps with histories lo..hi (one new token per request each) as linear pieces.

    Builds the ledgers at the first two histories of each piece; with `check`,
    also the last one, and fails loudly if a block is not linear where its
    `history_breakpoints` says it is (a bug in that block, not a user error).
    The repeated entries of `plan` become one repeated Piece per piece of a
    period (from the ledgers of the first two periods; with `check`, also the
    last), so the cost is flat in hi - lo.
    """
    key = (arch, w, lo, hi)
    hit = _PIECES.get(key)
    if hit is not None and (hit[0] or not check):
        return list(hit[1])
    out, reps = [], ()
    for spans, k, p in plan(arch, lo, hi):
        if k > 1:
            reps = _repeated_pieces(arch, w, spans, p, k, check)
            out += reps
            continue
        tail = _tail_pieces(reps, spans)
        out += tail + _linear_pieces(arch, w, spans[len(tail):], check)
        reps = ()
    remember(_PIECES, _PIECES_KEPT, key, (check, tuple(out)))
    return out


# decode_pieces by (arch, workload, lo, hi) -> (checked, pieces): a decode asks again
# for its batch-1 steps (the serving bound's request work). Pieces are immutable; a
# checked result also answers an unchecked request.
_PIECES = {}
_PIECES_KEPT = 64


def _repeated_pieces(arch, w, spans, p, k, check):
    """The pieces of `spans` (one period) and their k - 1 shifted copies, as repeated Pieces."""
    once = _linear_pieces(arch, w, spans, check)
    again = _linear_pieces(arch, w, [(x + p, y + p) for x, y in spans], False)
    reps = []
    for x, y in zip(once, again):
        _same_rows(x.ops, y.ops, y.first)
        if x.deltas != y.deltas:
            raise AssertionError(f"per-step increments change between histories {x.first} and {y.first}: "
                                 "a block's history_period is wrong")
        drifts = tuple(tuple(map(sub, t, s)) for s, t in zip(x.starts, y.starts))
        reps.append(x.replace(repeats=k, period=p, drifts=drifts, end_ops=()))
    if check:
        shift = (k - 1) * p
        for rep, last in zip(reps, _linear_pieces(arch, w, [(x + shift, y + shift) for x, y in spans], False)):
            if last.deltas != rep.deltas or any(last.starts[j] != rep.values(j, 0, k - 1)
                                                for j in range(len(rep.ops))):
                raise AssertionError(f"costs at history {last.first} are not those at {rep.first} plus "
                                     f"{k - 1} periods of drift: a block's history_period is wrong")
    return reps


def _tail_pieces(reps, spans):
    """The leading pieces of `spans` that are pieces of the repeated run `reps`
    continued one more period (the histories after its K whole periods, where the
    segment ends within a period), taken from their linear form: starts plus K
    drifts, the same increments (the periodic contract). The last span is left
    to be built (its end labels the summed rows; with check, it is verified)."""
    if not reps:
        return []
    shift = reps[0].repeats * reps[0].period
    out = []
    for rep, (a, b) in zip(reps, spans[:-1]):
        if (a, b) != (rep.first + shift, rep.first + shift + rep.steps - 1):
            break
        k = rep.repeats
        out.append(Piece(a, rep.steps, rep.ops, tuple(rep.values(i, 0, k) for i in range(len(rep.ops))),
                         rep.deltas))
    return out


def _linear_pieces(arch, w, spans, check):
    out = []
    for a, b in spans:
        n = b - a + 1
        ops = _step_ops(arch, w, a)
        starts = tuple(_vector(op) for op in ops)
        if n == 1:
            deltas = tuple((0,) * len(FIELDS) for _ in ops)
        else:
            nxt = _step_ops(arch, w, a + 1)
            _same_rows(ops, nxt, a + 1)
            deltas = tuple(tuple(map(sub, _vector(q), s)) for s, q in zip(starts, nxt))
        piece = Piece(a, n, ops, starts, deltas, ops if n == 1 else (nxt if n == 2 else ()))
        if check and n > 2:
            last = _step_ops(arch, w, b)
            _same_rows(ops, last, b)
            for i, op in enumerate(last):
                if _vector(op) != piece.values(i, n - 1):
                    raise AssertionError(f"{op.name} (layers {op.layers}) is not linear in the history "
                                         f"on {a}..{b}: a block misses a history breakpoint")
            piece = piece.replace(end_ops=last)
        out.append(piece)
    return out


def _same_rows(ops, other, history):
    if [(o.name, o.layers) for o in ops] != [(o.name, o.layers) for o in other]:
        raise AssertionError(f"the ledger's operator rows change at history {history}")


def summed_ops(pcs):
    """The ledger summed over every step of the pieces: one Op row per operator.

    A piece adds repeated_series(start, delta, drift, n, K) = K n start + K n(n-1)/2
    delta + n K(K-1)/2 drift per operator: three coefficients per piece, shared by
    its operators."""
    first, last = pcs[0], pcs[-1]
    coefs = [(p.repeats * p.steps, p.repeats * (p.steps * (p.steps - 1) // 2),
              p.steps * (p.repeats * (p.repeats - 1) // 2) if p.drifts else 0) for p in pcs]
    rows = []
    for i, op in enumerate(first.ops):
        total = (0,) * len(FIELDS)
        for p, (a, b, c) in zip(pcs, coefs):
            if c:
                total = tuple(t + a * x + b * y + c * z
                              for t, x, y, z in zip(total, p.starts[i], p.deltas[i], p.drifts[i]))
            else:
                total = tuple(t + a * x + b * y for t, x, y in zip(total, p.starts[i], p.deltas[i]))
        end = last.end_ops[i].shape if last.end_ops else "..."
        shape = op.shape if end == op.shape else f"{op.shape} ... {end}"
        rows.append(op.replace(shape=shape, **dict(zip(FIELDS, total))))
    return rows


def summed_totals(pcs):
    """FIELDS summed over every operator and every step of the pieces: the sums of
    summed_ops' columns, from each piece's operator totals (linearity)."""
    total = (0,) * len(FIELDS)
    for p in pcs:
        v0, d, drift = p.totals()
        total = tuple(map(add, total, repeated_series(v0, d, drift or None, p.steps, p.repeats)))
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

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
"""

from .. import ledger
from ..record import Record

FIELDS = ("matrix_flops", "rect_flops", "vector_flops", "weight_read", "act_read",
          "kv_read", "act_write", "kv_write")


def _vector(op):
    return tuple(getattr(op, f) for f in FIELDS)


def series(v0, d, n):
    """sum_{j=0}^{n-1} (v0 + j*d), field by field, in exact integers."""
    tri = n * (n - 1) // 2
    return tuple(n * a + b * tri for a, b in zip(v0, d))


def shifted(v0, d, j):
    """v0 + j*d, field by field."""
    return tuple(a + j * b for a, b in zip(v0, d))


def breakpoints(arch, lo, hi):
    """Histories in (lo, hi] where some block's per-step cost starts a new linear piece."""
    blocks = list(arch.top_blocks())
    for layer, _, _ in arch.layer_groups():
        blocks.extend(layer.blocks)
    points = set()
    for block in blocks:
        points.update(h for h in block.history_breakpoints(lo, hi) if lo < h <= hi)
    return sorted(points)


def pieces(arch, lo, hi):
    """[(first, last)] histories of each linear piece covering lo..hi."""
    starts = [lo] + breakpoints(arch, lo, hi)
    ends = [s - 1 for s in starts[1:]] + [hi]
    return list(zip(starts, ends))


class Piece(Record):
    """Decode steps with histories first..first+steps-1 on which every operator is linear."""
    first: int
    steps: int
    ops: tuple      # ledger rows of the step at `first` (names, layers, shapes)
    starts: tuple   # per operator: its FIELDS values at the first step
    deltas: tuple   # per operator: the per-step increment of each FIELDS value
    end_ops: tuple = ()   # ledger rows of the last step, when they were built

    def values(self, i, j=0):
        """FIELDS of operator i at step j of the piece."""
        return shifted(self.starts[i], self.deltas[i], j) if j else self.starts[i]

    def step(self, j):
        """Step j alone, as a one-step piece (exact, from the linear form)."""
        zeros = (0,) * len(FIELDS)
        if j == 0:
            ops = end = self.ops
        elif j == self.steps - 1 and self.end_ops:
            ops = end = self.end_ops
        else:
            ops, end = self.ops, ()   # shape labels of step j were not built
        return Piece(self.first + j, 1, ops, tuple(self.values(i, j) for i in range(len(ops))),
                     tuple(zeros for _ in ops), end)


def single(ops, first=0):
    """One pass (a ledger's rows) as a one-step piece."""
    zeros = (0,) * len(FIELDS)
    return Piece(first, 1, tuple(ops), tuple(_vector(op) for op in ops), tuple(zeros for _ in ops), tuple(ops))


def _step_ops(arch, w, history):
    return tuple(ledger.operators(arch, w.replace(tokens=1, history=history)))


def decode_pieces(arch, w, lo, hi, check=True):
    """The steps with histories lo..hi (one new token per request each) as linear pieces.

    Builds the ledgers at the first two histories of each piece; with `check`,
    also the last one, and fails loudly if a block is not linear where its
    `history_breakpoints` says it is (a bug in that block, not a user error).
    """
    out = []
    for a, b in pieces(arch, lo, hi):
        n = b - a + 1
        ops = _step_ops(arch, w, a)
        starts = tuple(_vector(op) for op in ops)
        if n == 1:
            deltas = tuple((0,) * len(FIELDS) for _ in ops)
        else:
            nxt = _step_ops(arch, w, a + 1)
            _same_rows(ops, nxt, a + 1)
            deltas = tuple(tuple(y - x for x, y in zip(s, _vector(q))) for s, q in zip(starts, nxt))
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
    """The ledger summed over every step of the pieces: one Op row per operator."""
    first, last = pcs[0], pcs[-1]
    rows = []
    for i, op in enumerate(first.ops):
        total = [0] * len(FIELDS)
        for p in pcs:
            total = [t + s for t, s in zip(total, series(p.starts[i], p.deltas[i], p.steps))]
        end = last.end_ops[i].shape if last.end_ops else "..."
        shape = op.shape if end == op.shape else f"{op.shape} ... {end}"
        rows.append(op.replace(shape=shape, **dict(zip(FIELDS, total))))
    return rows


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

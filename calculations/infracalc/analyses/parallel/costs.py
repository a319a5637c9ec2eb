"""Per-part costs: the roofline cost (`Cost`) of a layer shard, the top blocks and one
device of a stage, in one pass or over the decode steps (summed in closed form).

A part is costed from its ledger (`ledger.operators`) or, over decode steps, from its
linear pieces (`decode_sum`); a stage's cost is its top blocks' plus count x each
distinct layer's, so a search over thousands of layouts builds each (tp, ep) shard's
ledgers once per workload."""

from collections import namedtuple
from operator import add

from ... import layout as placement
from ... import ledger
from ...arch import Block, Layer
from ...splits import ceil_div
from .. import decode_sum
from ..decode import account

WORK_ZERO = (0,) * len(decode_sum.FIELDS)
_AT = {name: i for i, name in enumerate(decode_sum.FIELDS)}


class Cost(namedtuple("Cost", "compute_s weights_s kv_s act_s work")):
    """Operator-sum roofline seconds of some work, split by what bounds each operator
    (its FLOPs at peak; its weight, KV or activation bytes at the bandwidth), and the work
    itself: decode_sum.FIELDS totals (integers)."""
    __slots__ = ()

    @property
    def time_s(self):
        return self.compute_s + self.weights_s + self.kv_s + self.act_s

    def plus(self, other):
        return Cost(self.compute_s + other.compute_s, self.weights_s + other.weights_s, self.kv_s + other.kv_s,
                    self.act_s + other.act_s, tuple(map(add, self.work, other.work)))

    def times(self, k):
        return Cost(k * self.compute_s, k * self.weights_s, k * self.kv_s, k * self.act_s,
                    tuple([k * a for a in self.work]))

    def field(self, name):
        """One decode_sum.FIELDS total of the work."""
        return self.work[_AT[name]]


ZERO = Cost(0.0, 0.0, 0.0, 0.0, WORK_ZERO)


def pieces_cost(steps, r):
    """The Cost of decode steps (decode_sum.Steps): their Account and their summed work."""
    acc = account(steps, r)
    return Cost(acc.compute_s, acc.weights_s, acc.kv_s, acc.act_s, decode_sum.summed_totals(steps))


def top_unit(plan, lay, stage):
    """The embedding, final norm and head shards one device of `stage` holds, as an
    architecture without layers."""
    def make():
        emb, norm, head = placement.top_shards(plan.arch, lay, stage)
        return plan.arch.replace(id=f"{plan.arch.id} [top blocks]", embedding=emb, layers=(), final_norm=norm,
                                 head=head, parts=(), notes=())
    return plan.memo(("top unit", lay.tp, stage.has_embedding, stage.has_head), make)


def unit(plan, layer):
    """A one-layer architecture: the unit whose ledgers a stage's cost sums."""
    return plan.memo(("unit", layer), lambda: plan.arch.replace(
        id=f"{plan.arch.id} [one layer]", embedding=Block(), layers=(layer,), final_norm=Block(), head=Block(),
        parts=(), notes=()))


def history_free(plan, block, w):
    """True when no operator of `block` changes with the history (MLP, MoE, norms): one
    linear piece over every history (no breakpoint, no period) whose ledger at history 0
    equals the one at history 1. A block declaring Block.history_independent is."""
    if block.history_independent:
        return True

    def make():
        if block.history_period() or block.history_breakpoints(0, 1 << 62):
            return False   # not one linear piece over every history
        one = lambda h: [decode_sum._vector(op) for op in block.ops(w.replace(tokens=1, history=h))]
        return one(0) == one(1)
    return plan.memo(("history free", block, w.replace(batch=1)), make)


def unit_cost(plan, a, w, spec):
    """Costs of architecture `a`: spec ("pass",) -> (one pass of w,); ("steps", lo, hi) ->
    (decode steps at histories lo..hi summed in closed form, the step at lo, the step at
    hi), all from the same linear pieces (w.tokens = 1).

    Over decode steps a layer of several blocks costs the sum of its blocks' costs (ledger
    rows come from blocks alone, and each cost is a sum over rows), each block costed once
    per workload: the attention shard of a TP degree is shared by every EP degree, and a
    block whose rows do not change with the history costs (steps) x one step, so its
    ledger is built once for every CP degree."""
    def make():
        if not a.layers and not any(b.tensors() or b.ops(w) for b in a.top_blocks()):
            return (ZERO,) * (1 if spec[0] == "pass" else 3)
        if a.layers and spec[0] == "steps" and len(a.layers[0].blocks) > 1:
            total = None
            for block in a.layers[0].blocks:
                part = unit_cost(plan, unit(plan, Layer(blocks=(block,))), w, spec)
                total = part if total is None else tuple(t.plus(u) for t, u in zip(total, part))
            return total
        if a.layers and spec[0] == "steps" and history_free(plan, a.layers[0].blocks[0], w):
            one = unit_cost(plan, a, w if not w.history else w.replace(history=0), ("pass",))[0]
            return (one.times(spec[2] - spec[1] + 1), one, one)
        if spec[0] == "pass":
            return (pieces_cost(decode_sum.single(ledger.operators(a, w)), plan.r),)
        if not a.layers:   # embedding, final norm and head: the same work at every history
            one = unit_cost(plan, a, w.replace(history=0), ("pass",))[0]
            return (one.times(spec[2] - spec[1] + 1), one, one)
        pcs = pieces(plan, a, w, spec[1], spec[2])
        return (pieces_cost(pcs, plan.r), pieces_cost(pcs.first_step(), plan.r),
                pieces_cost(pcs.last_step(), plan.r))
    return plan.memo(("cost", a, w, spec), make)


def pieces(plan, a, w, lo, hi):
    """decode_sum.decode_pieces(a, w, lo, hi). When no block of `a` starts a new linear
    piece in (0, hi] (full attention), the steps lo..hi lie on the piece that starts at
    history 0, so they are that piece shifted by lo steps: its two ledgers are built once
    per (unit, workload), whatever the range (each CP degree has its own)."""
    if decode_sum.period(a) or decode_sum.breakpoints(a, 0, hi):
        return decode_sum.decode_pieces(a, w, lo, hi, check=False)
    base = plan.memo(("piece at 0", a, w), lambda: decode_sum.decode_pieces(a, w, 0, 1, check=False))
    return base.extended(lo, hi)


def stage_cost(plan, lay, stage, w, spec, *, i=0):
    """unit_cost(...)[i] of one device of `stage`: its top blocks' + count x each distinct
    layer's (i: 0 the pass or the summed steps, 1 the first step, 2 the last). Not memoized:
    `stage.evaluate`, its one caller, is (a memo here saved nothing, by instruction count)."""
    total = unit_cost(plan, top_unit(plan, lay, stage), w, spec)[i]
    for layer, count, _ in placement.device_layers(plan.arch, lay, stage):
        total = total.plus(unit_cost(plan, unit(plan, layer), w, spec)[i].times(count))
    return total


def prefill_ranks(plan, cp):
    """[(tokens, history)] of the CP ranks that may bound the prefill. Contiguous split,
    c = ceil(P/cp): the last rank (its P - (cp-1) c tokens after (cp-1) c) or, when it
    holds fewer, the one before it (c tokens after (cp-2) c). Zig-zag split (2 cp chunks
    of h = P/(2cp), rank r holding chunks r and 2cp-1-r): every rank alike, one pass of
    c = 2h tokens after (cp-1) h, which has the causal pairs of its two chunks,
    h (r h) + h (2cp-1-r) h + h (h+1) = 2h (cp-1) h + 2h (2h+1)/2 = P (P+1) / (2 cp)
    per head: 1/cp of the prompt's, exactly (full attention)."""
    P = plan.P
    if plan.cp_split == "zigzag" and cp > 1:
        h = P // (2 * cp)
        return [(2 * h, (cp - 1) * h)]
    c = ceil_div(P, cp)
    last = P - (cp - 1) * c
    return [(last, (cp - 1) * c)] + ([(c, (cp - 2) * c)] if last < c else [])


def prefill_cost(plan, lay, stage, b):
    """(Cost, tokens per rank) of the prefill of b prompts on the slowest CP rank
    (`prefill_ranks`), whichever of its candidates takes longer."""
    options = [(stage_cost(plan, lay, stage, plan.workload(plan.wp, batch=b, logits="last", tokens=tokens,
                                                           history=history), ("pass",)), tokens)
               for tokens, history in prefill_ranks(plan, lay.cp)]
    return max(options, key=lambda o: o[0].time_s)


def decode_terms(plan, lay, b, which="total"):
    """(workload, spec, terms): the decode steps as a weighted sum of a stage's unit figures
    (index 0 the steps summed over lo'..hi', 1 the first step, 2 the last), terms ((index,
    weight), ...), for "total" (all G - 1 steps), "first" or "last". Under CP a step at history
    h costs the step at h' = ceil(h/cp) (each rank holds at most that many); each h' in lo'..hi'
    stands for cp histories except at the ends: sum = cp x S(lo'..hi') - x step(lo') -
    y step(hi'), x = lo - cp (lo' - 1) - 1, y = cp hi' - hi (exact). decode_cost and the
    predicted figure's decode_s both read it."""
    cp, lo, hi = lay.cp, plan.P, plan.P + plan.steps - 1
    lo2, hi2 = ceil_div(lo, cp), ceil_div(hi, cp)
    w = plan.workload(plan.wd, batch=b, tokens=1, history=0)
    spec = ("steps", lo2, hi2)
    if which != "total":
        return w, spec, ((1 if which == "first" else 2, 1),)
    if cp == 1:
        return w, spec, ((0, 1),)
    x, y = lo - cp * (lo2 - 1) - 1, cp * hi2 - hi
    return w, spec, ((0, cp), (1, -x), (2, -y))


def decode_cost(plan, lay, stage, b, which="total"):
    """The Cost of all G - 1 decode steps summed ("total"), of the first step or of the last
    (`decode_terms`: under CP, cp x the rank's steps less the ends)."""
    w, spec, terms = decode_terms(plan, lay, b, which)
    (i, k), rest = terms[0], terms[1:]
    total = stage_cost(plan, lay, stage, w, spec, i=i)
    if not rest:
        return total
    (i1, k1), (i2, k2) = rest
    first, last = stage_cost(plan, lay, stage, w, spec, i=i1), stage_cost(plan, lay, stage, w, spec, i=i2)
    return total.times(k).plus(first.times(k1).plus(last.times(k2)))

"""Per-part costs: the roofline cost vectors of a layer shard, the top blocks and a stage's
device in one pass or over the decode steps (summed in closed form)."""

from ... import ledger
from ...arch import Layer
from ...collectives import ceil_div
from .. import decode_sum
from ..decode import account

# Cost vector: (compute-bound s, weights s, KV s, activations s) then decode_sum.FIELDS.
_NACC = 4
ZERO = {True: (0.0,) * _NACC + (0,) * len(decode_sum.FIELDS), False: (0.0,) * _NACC}


def _add(a, b):
    return tuple(x + y for x, y in zip(a, b))


def _scale(a, k):
    return tuple(k * x for x in a)


def _time(cost):
    return cost[0] + cost[1] + cost[2] + cost[3]


def _cost(pcs, r, with_work=True):
    """Cost vector of linear pieces: their Account and (with_work) their summed work."""
    acc = account(pcs, r)
    if not with_work:
        return (acc.compute_s, acc.weights_s, acc.kv_s, acc.act_s)
    work = [0] * len(decode_sum.FIELDS)
    for p in pcs:
        for i in range(len(p.ops)):
            work = [a + b for a, b in zip(work, p.summed(i))]
    return (acc.compute_s, acc.weights_s, acc.kv_s, acc.act_s, *work)


class PartCosts:
    """The per-part cost methods of `Plan` (plan.py), memoized in its cache."""

    def history_free(self, block, w):
        """True when no operator of `block` changes with the history (MLP, MoE, norms): one
        linear piece over every history (no breakpoint, no period) whose ledger at history 0
        equals the one at history 1 (memoized per block and workload). A block declaring
        Block.history_independent is (its rows are the same at every history)."""
        if block.history_independent:
            return True

        def make():
            if block.history_period() or block.history_breakpoints(0, 1 << 62):
                return False   # not one linear piece over every history
            one = lambda h: [decode_sum._vector(op) for op in block.ops(w.replace(tokens=1, history=h))]
            return one(0) == one(1)
        return self.memo(("history free", block, w), lambda: self.memo(
            ("history free at batch 1", block, w.replace(batch=1)), make))

    def unit_cost(self, a, w, spec, work=True):
        """Cost vectors of architecture `a`: spec ("pass",) -> (one pass of w,); ("steps", lo,
        hi) -> (decode steps at histories lo..hi summed in closed form, the step at lo, the
        step at hi), all from the same linear pieces (w.tokens = 1).

        A layer of several blocks costs the sum of its blocks' costs (ledger rows come from
        blocks alone, and each cost is a sum over rows), each block costed once per
        workload: the attention shard of a TP degree is shared by every EP degree, and a
        block whose rows do not change with the history costs (steps) x one step, so its
        ledger is built once for every CP degree."""
        def make():
            if not a.layers and not any(b.tensors() or b.ops(w) for b in a.top_blocks()):
                return (ZERO[work],) * (1 if spec[0] == "pass" else 3)
            if a.layers and spec[0] == "steps" and len(a.layers[0].blocks) > 1:
                total = None
                for block in a.layers[0].blocks:
                    one = self.memo(("block unit", block), lambda: self.unit(Layer(blocks=(block,))))
                    part = self.unit_cost(one, w, spec, work)
                    total = part if total is None else tuple(_add(t, u) for t, u in zip(total, part))
                return total
            if a.layers and spec[0] == "steps" and self.history_free(a.layers[0].blocks[0], w):
                one = self.unit_cost(a, w if not w.history else w.replace(history=0), ("pass",), work)[0]
                return (_scale(one, spec[2] - spec[1] + 1), one, one)
            if spec[0] == "pass":
                return (_cost([decode_sum.single(ledger.operators(a, w))], self.r, work),)
            if not a.layers:   # embedding, final norm and head: the same work at every history
                one = self.unit_cost(a, w.replace(history=0), ("pass",), work)[0]
                return (_scale(one, spec[2] - spec[1] + 1), one, one)
            pcs = self.pieces(a, w, spec[1], spec[2])
            return (_cost(pcs, self.r, work), _cost([pcs[0].step(0)], self.r, work),
                    _cost([pcs[-1].last_step()], self.r, work))
        return self.memo(("cost", a, w, spec, work), make)

    def pieces(self, a, w, lo, hi):
        """decode_sum.decode_pieces(a, w, lo, hi). When no block of `a` starts a new linear
        piece in (0, hi] (full attention), the steps lo..hi lie on the piece that starts at
        history 0, so they are that piece shifted by lo steps: its two ledgers are built once
        per (unit, workload), whatever the range (each CP degree has its own)."""
        if decode_sum.period(a) or decode_sum.breakpoints(a, 0, hi):
            return decode_sum.decode_pieces(a, w, lo, hi, check=False)
        base = self.memo(("piece at 0", a, w), lambda: decode_sum.decode_pieces(a, w, 0, 1, check=False)[0])
        starts = tuple(base.values(i, lo) for i in range(len(base.ops)))
        return [base.replace(first=lo, steps=hi - lo + 1, starts=starts, end_ops=())]

    def stage_cost(self, lay, stage, w, spec, work=True):
        """Cost vectors (as unit_cost) of one device of `stage`: count x each distinct layer's
        costs + its top blocks'."""
        def make():
            total = self.unit_cost(self.top_unit(lay, stage), w, spec, work)
            for layer, count in self.kind(lay, stage)[0]:
                unit = self.unit_cost(self.unit(layer), w, spec, work)
                if work:
                    total = tuple(_add(t, _scale(u, count)) for t, u in zip(total, unit))
                else:   # 4-vectors (no work counts): the same sums, written out
                    total = tuple((t[0] + count * u[0], t[1] + count * u[1], t[2] + count * u[2],
                                   t[3] + count * u[3]) for t, u in zip(total, unit))
            return total
        return self.memo(("stage cost", lay.tp, self.kind_id(lay, stage), w, spec, work), make)

    def prefill_ranks(self, cp):
        """[(tokens, history)] of the CP ranks that may bound the prefill. Contiguous split,
        c = ceil(P/cp): the last rank (its P - (cp-1) c tokens after (cp-1) c) or, when it
        holds fewer, the one before it (c tokens after (cp-2) c). Zig-zag split (2 cp chunks
        of h = P/(2cp), rank r holding chunks r and 2cp-1-r): every rank alike, one pass of
        c = 2h tokens after (cp-1) h, which has the causal pairs of its two chunks,
        h (r h) + h (2cp-1-r) h + h (h+1) = 2h (cp-1) h + 2h (2h+1)/2 = P (P+1) / (2 cp)
        per head: 1/cp of the prompt's, exactly (full attention)."""
        P = self.P
        if self.cp_split == "zigzag" and cp > 1:
            h = P // (2 * cp)
            return [(2 * h, (cp - 1) * h)]
        c = ceil_div(P, cp)
        last = P - (cp - 1) * c
        return [(last, (cp - 1) * c)] + ([(c, (cp - 2) * c)] if last < c else [])

    def prefill_cost(self, lay, stage, b, work=True):
        """(cost, tokens per rank) of the prefill of b prompts on the slowest CP rank
        (`prefill_ranks`), whichever of its candidates takes longer."""
        options = [(self.stage_cost(lay, stage, self.workload(self.wp, batch=b, logits="last", tokens=tokens,
                                                              history=history), ("pass",), work)[0], tokens)
                   for tokens, history in self.prefill_ranks(lay.cp)]
        return max(options, key=lambda o: _time(o[0]))

    def decode_cost(self, lay, stage, b, work=True):
        """(all G - 1 decode steps summed, the first step, the last step). Under CP a step at
        history h costs the step at h' = ceil(h/cp) (each rank holds at most that many); each
        h' in lo'..hi' stands for cp histories except at the ends:
        sum = cp x S(lo'..hi') - x step(lo') - y step(hi'), x = lo - cp (lo' - 1) - 1,
        y = cp hi' - hi (exact)."""
        cp, lo, hi = lay.cp, self.P, self.P + self.steps - 1
        lo2, hi2 = ceil_div(lo, cp), ceil_div(hi, cp)
        w = self._decode_w.get(b)
        if w is None:
            w = self._decode_w[b] = self.workload(self.wd, batch=b, tokens=1, history=0)
        total, first, last = self.stage_cost(lay, stage, w, ("steps", lo2, hi2), work)
        if cp > 1:
            x, y = lo - cp * (lo2 - 1) - 1, cp * hi2 - hi
            total = _add(_scale(total, cp), _add(_scale(first, -x), _scale(last, -y)))
        return total, first, last

"""One engine iteration of a serving system, priced from the ledger.

A request of P input and G output tokens costs, whatever the scheduler does,
its prefill pass (P tokens at batch 1) and its G - 1 decode steps (histories
P .. P + G - 2, batch 1, summed in closed form by decode_sum): its *own work*,
per operator, with the weight reads left out. With a prefix cache holding the
first C prompt tokens, the prefill rows are those of P - C tokens after C
cached ones (with a hit rate h, h x those + (1 - h) x a cold prefill of P: the expected
request's rows, exact in expectation since the work is linear in them). An iteration adds the weights it
reads once (shared by every token it carries: the ledger's weight bytes of a
pass over n tokens, n = the tokens the iteration carries; MoE: the experts n
tokens touch under --routing). A scheduler in steady state is then a mix of
these parts per iteration:

    work(iteration) = prefills x prefill rows + decodes x decode rows / (G - 1)
                      + weight rows(n tokens)

where `prefills` is the (mean) number of whole prompts and `decodes` the (mean)
number of decode tokens the iteration carries. Every ledger quantity but the
weights is linear in the batch, so the mean iteration's work is exact in
expectation (attention pairs are conserved when a prompt is split into chunks).

Two times per iteration, from that work on a device's roof:

- lower bound: max(matrix FLOPs / matrix peak, vector FLOPs / vector peak,
  (weights read + KV read + KV written) / bandwidth) -- units in parallel,
  operators fused, activations on chip (the lower bound `parallel` prints);
- estimate: the operator-sum roofline, sum over operators of
  max(FLOPs at peak, bytes / bandwidth) of each operator's mean work
  (activations counted), as `decode` and `forward` estimate a pass.
"""

import math

from ... import ledger
from .. import decode_sum
from ..decode import step_histories
from ...summation import plain_sum

FIELDS = decode_sum.FIELDS
_MF, _RECT, _VF, _WR, _AR, _KR, _AW, _KW = range(len(FIELDS))


def _key(op):
    return (op.name, op.layers)


def _rows(ops, drop_weights=True):
    """{(name, layers): FIELDS vector} of operator rows (weight reads dropped)."""
    out = {}
    for op in ops:
        v = [getattr(op, f) for f in FIELDS]
        if drop_weights:
            v[_WR] = 0
        k = _key(op)
        out[k] = [a + b for a, b in zip(out[k], v)] if k in out else v
    return out


class Parts:
    """One request's own work (prefill rows, decode rows summed over its G - 1 steps)
    and the weight rows of a pass over n tokens (memoized per n), for one architecture
    (a whole model or one device's shard) and workload."""

    def __init__(self, arch, w, input_len, output_len, prefill_w=None, cached=0, hit=1.0):
        self.arch, self.P, self.G, self.cached, self.hit = arch, input_len, output_len, cached, hit
        self.prefill_w = prefill_w
        self.one = w.replace(batch=1, tokens=1, history=0, logits="last")
        # a prompt whose first `cached` tokens are in a prefix cache prefills the rest after them
        pw = (prefill_w or self.one).replace(batch=1, tokens=input_len - cached, history=cached,
                                            logits="last")
        self.prefill = _rows(ledger.operators(arch, pw))
        if cached and hit < 1:   # a fraction `hit` of the prompts finds the prefix: the expected rows
            cold = _rows(ledger.operators(arch, pw.replace(tokens=input_len, history=0)))
            zero = [0] * len(FIELDS)
            self.prefill = {k: [hit * a + (1 - hit) * b for a, b in zip(self.prefill.get(k, zero), cold.get(k, zero))]
                            for k in dict.fromkeys([*self.prefill, *cold])}
        lo, hi = step_histories(input_len, output_len)
        self.decode = {}
        if output_len > 1:
            pcs = decode_sum.decode_pieces(arch, self.one, lo, hi, check=False)
            self.decode = _rows(decode_sum.summed_ops(pcs))
        self._weights = {}

    @property
    def new_tokens(self):
        """Prompt tokens a request prefills: P - C (C in the prefix cache), in expectation
        P - h C when a fraction h of the prompts finds it."""
        return self.P - self.cached if self.hit == 1 else self.P - self.hit * self.cached

    def _weight_ledger(self, n):
        hit = self._weights.get(n)
        if hit is None:
            ops = ledger.operators(self.arch, self.one.replace(batch=n, history=self.P))
            hit = self._weights[n] = {_key(op): op.weight_read for op in ops}
        return hit

    def weights(self, tokens):
        """Weight rows of a pass carrying `tokens` tokens (at least 1). Without experts a pass
        reads every weight once plus one embedding row per token (while the tokens do not
        exceed the vocabulary): affine in n, so the rows at n follow exactly from those at 1
        and 2; an MoE pass's experts touched are the ledger's own at n."""
        n = max(math.ceil(tokens), 1)
        if n > 2 and self.arch.active_params == self.arch.params and n <= self.arch.vocab_size:
            one, two = self._weight_ledger(1), self._weight_ledger(2)
            return {k: one[k] + (n - 1) * (two[k] - one[k]) for k in one}
        return self._weight_ledger(n)

    def mix(self, prefills, decodes, weight_tokens):
        """{key: FIELDS} of an iteration carrying `prefills` whole prompts' worth of
        prefill work and `decodes` decode tokens, reading the weights of a pass over
        `weight_tokens` tokens once."""
        steps = max(self.G - 1, 1)
        out = {}
        for rows, k in ((self.prefill, prefills), (self.decode, decodes / steps)):
            if not k:
                continue
            for key, v in rows.items():
                acc = out.get(key)
                scaled = [k * x for x in v]
                out[key] = scaled if acc is None else [a + b for a, b in zip(acc, scaled)]
        for key, wr in self.weights(weight_tokens).items():
            v = out.setdefault(key, [0] * len(FIELDS))
            v[_WR] += wr
        return out


def totals(rows):
    """FIELDS summed over the operators of a mix."""
    return [plain_sum(col) for col in zip(*rows.values())] if rows else [0] * len(FIELDS)


def lower_bound_s(rows, r):
    """max(matrix FLOPs / matrix peak, vector FLOPs / vector peak, unique bytes / bandwidth)."""
    t = totals(rows)
    return max(r.compute_s(t[_MF], 0), r.compute_s(0, t[_VF]),
               (t[_WR] + t[_KR] + t[_KW]) / r.bytes_per_s)


def estimate_s(rows, r):
    """Sum over operators of max(FLOPs at peak, bytes moved / bandwidth)."""
    total = 0.0
    for v in rows.values():
        c = r.compute_s(v[_MF], v[_VF])
        m = (v[_WR] + v[_AR] + v[_KR] + v[_AW] + v[_KW]) / r.bytes_per_s
        total += c if c > m else m
    return total


def times(rows, r):
    """(lower bound, estimate) of one iteration's work."""
    return lower_bound_s(rows, r), estimate_s(rows, r)


def work_record(rows):
    """The iteration's work as JSON fields (mean values: real numbers)."""
    t = totals(rows)
    return {"matrix_flops": t[_MF], "vector_flops": t[_VF], "weight_bytes_read": t[_WR],
            "kv_bytes_read": t[_KR], "kv_bytes_written": t[_KW], "act_bytes_moved": t[_AR] + t[_AW]}

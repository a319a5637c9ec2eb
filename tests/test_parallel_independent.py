"""The search's and the record's figures against an independent, cache-free computation.

For each layout the expected figures are derived here from first principles: every device's
shard (`layout.shard`, an ordinary architecture) gets its ordinary ledger (`ledger.build`) at
each workload, each operator costs max(FLOPs at peak, bytes at bandwidth) (`op_bound`), decode
steps are summed ONE BY ONE (no closed form), and the communication is written out from the
README's convention with nccl-tests' ring formulas on the link figures (no collectives module):

  all-reduce of S bytes over n ranks: 2 (n-1)/n S / bw + 2 (n-1) alpha
  all-gather:                           (n-1)/n S / bw +   (n-1) alpha
  point-to-point:                               S / bw +         alpha

TP without SP: 2 all-reduces of [tokens, hidden] per layer, the embedding's all-reduce, the
head's all-gather of [requests, padded vocabulary]; a PP boundary: the 1/tp slice sent, then
an all-gather of [tokens, hidden] over TP at the receiver; CP: a prefill ring pass of the
rank's K/V, cp - 1 sends per layer, and in decode one all-reduce of [requests, hidden] per
layer. Pipeline: L = sum of stage times + (pp - 1) transfers; TTFT = L + (m - 1) x slowest;
the decode steps summed take max(sum over stages + (pp - 1) transfers, m x slowest)."""

import math
import unittest

from support import load_model  # noqa: F401  (sets the path)

from infracalc import comm, ledger
from infracalc import layout as placement
from infracalc.analyses import parallel as P
from infracalc.analyses.parallel import search as S
from infracalc.analyses.roofline import op_bound, roof
from infracalc.layout import Layout
from infracalc.load.hardware import load_device
from infracalc.workload import Workload

H100 = load_device("h100-sxm")
UP = comm.links(H100)["up"]            # every group below fits one 8-GPU NVLink domain
BW, ALPHA = UP.bytes_per_s, UP.alpha_s
ACT = 2                                # bf16 activations


def all_reduce(s, n):
    return 2 * (n - 1) / n * s / BW + 2 * (n - 1) * ALPHA if n > 1 else 0.0


def all_gather(s, n):
    return (n - 1) / n * s / BW + (n - 1) * ALPHA if n > 1 else 0.0


def p2p(s):
    return s / BW + ALPHA


class Independent:
    """Expected figures of one model, layout and batch, from scratch."""

    def __init__(self, model, lay, batch, P_, G):
        self.arch, self.lay, self.P, self.G = load_model(model), lay, P_, G
        self.m = math.gcd(batch, lay.pp)
        self.b = batch // self.m
        self.batch = batch
        self.r = roof(H100, Workload().compute_dtype, 1.0, 1.0)
        self.stages = placement.stages(self.arch, lay)

    def roofline(self, stage, **w):
        shard = placement.shard(self.arch, self.lay, stage)
        ops = ledger.build(shard, Workload(logits="last", **w)).ops
        return sum(op_bound(op, self.r)[2] for op in ops)

    def comm(self, stage, tokens, prefill):
        a, tp, cp = self.arch, self.lay.tp, self.lay.cp
        s = tokens * a.hidden_size * ACT
        t = 2 * stage.layers * all_reduce(s, tp)
        if stage.has_embedding:
            t += all_reduce(s, tp)
        if stage.has_head and tp > 1:
            vocab = tp * -(-a.vocab_size // tp)
            t += all_gather(self.b * vocab * ACT, tp)
        if cp > 1 and prefill:   # K and V of the rank's 8 / tp KV heads x head_dim 128, bf16 (Llama-3.1-8B)
            kv = 2 * (8 // tp) * 128 * 2
            t += stage.layers * (cp - 1) * p2p(tokens * kv)
        elif cp > 1:
            t += stage.layers * all_reduce(self.b * a.hidden_size * ACT, cp)
        return t

    def transfer(self, tokens):
        if self.lay.pp == 1:
            return 0.0
        tp, hidden = self.lay.tp, self.arch.hidden_size
        return p2p(-(-tokens * hidden // tp) * ACT) + all_gather(tokens * hidden * ACT, tp)

    def ttft(self):
        cp = self.lay.cp
        c = -(-self.P // cp)
        tokens, history = self.P - (cp - 1) * c, (cp - 1) * c
        times = [self.roofline(st, batch=self.b, tokens=tokens, history=history)
                 + self.comm(st, self.b * tokens, True) for st in self.stages]
        L = sum(times) + (self.lay.pp - 1) * self.transfer(self.b * c)
        return L + (self.m - 1) * max(times)

    def decode_s(self):
        cp, steps = self.lay.cp, self.G - 1
        sums = [sum(self.roofline(st, batch=self.b, tokens=1, history=-(-h // cp)) + self.comm(st, self.b, False)
                    for h in range(self.P, self.P + steps)) for st in self.stages]
        L = sum(sums) + (self.lay.pp - 1) * self.transfer(self.b) * steps
        return max(L, self.m * max(sums))


LAYOUTS = (Layout(tp=2, pp=2, dp=2), Layout(tp=4, pp=2), Layout(tp=2, cp=2, dp=2), Layout(pp=4, dp=2),
           Layout(tp=2, pp=2, cp=2))   # a PP boundary under CP crosses b ceil(P/cp) prompt tokens


class SearchAndRecordEqualTheIndependentFigures(unittest.TestCase):
    def check(self, model, P_, G, batch):
        plan = P.Plan(load_model(model), Workload(), H100, P_, G)
        for lay in LAYOUTS:
            with self.subTest(layout=lay.label()):
                want = Independent(model, lay, batch, P_, G)
                ttft, decode = want.ttft(), want.decode_s()
                steps = G - 1
                full = P.parallel(plan, lay, batch)
                rec, ph = full["latency"], full["phases"]
                # the boundary transfers each phase states: b ceil(P/cp) prompt tokens in the prefill,
                # b tokens per decode step, G - 1 steps in the decode
                c = -(-P_ // lay.cp)
                for phase, tokens, passes in (("prefill", want.b * c, 1), ("first", want.b, 1),
                                              ("decode", want.b, steps)):
                    x = want.transfer(tokens) * passes
                    self.assertAlmostEqual(ph[phase]["transfer_s"], x, delta=x * 1e-12)
                self.assertAlmostEqual(rec["ttft_s"], ttft, delta=ttft * 1e-12)
                self.assertAlmostEqual(rec["decode_s"], decode, delta=decode * 1e-12)
                self.assertAlmostEqual(rec["tpot_mean_s"], decode / steps, delta=decode * 1e-12)
                e2e = lay.dp * batch * G / (ttft + decode)   # every token of G counted, the first too
                self.assertAlmostEqual(rec["tokens_per_s_cluster"], e2e, delta=e2e * 1e-12)
                rate = lay.dp * batch * steps / decode / lay.devices
                self.assertAlmostEqual(rec["decode_tokens_per_s_per_device"], rate, delta=rate * 1e-12)
                # the search ranks by the same figures (prefill: ttft; decode: tpot, throughput)
                self.assertAlmostEqual(S.score(plan, lay, batch, "ttft")[0], ttft, delta=ttft * 1e-12)
                self.assertAlmostEqual(S.score(plan, lay, batch, "tpot")[0], decode / steps,
                                       delta=decode * 1e-12)
                self.assertAlmostEqual(-S.score(plan, lay, batch, "throughput")[0], rate, delta=rate * 1e-12)

    def test_llama_8b(self):
        self.check("llama-3.1-8b", 2048, 9, 8)

    def test_llama_8b_odd_lengths(self):
        # a prompt that CP does not split evenly (ceil(P/cp)) and a batch pp does not divide into
        # pp micro-batches (m = gcd(B, pp) = 2 of 3 requests)
        self.check("llama-3.1-8b", 1001, 4, 6)


if __name__ == "__main__":
    unittest.main()

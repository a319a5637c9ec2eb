"""Exact tests of `train` formulas that only a stored result guarded before (issue 21): the
optimizer update's bytes, the vocab-parallel cross-entropy's three all-reduces, the pipeline's
boundary sends in both directions and ZeRO-3's per-micro-batch gathers. Every expected value
is written out here from the convention (docs, train_time's docstring) and the model's
published parameter count, not from the code under test."""

import unittest

from support import Workload, load_model  # noqa: F401  (sets the path)

from infracalc import layout as placement
from infracalc.analyses import train_time
from infracalc.layout import Layout
from infracalc.load.hardware import load_device

H100 = load_device("h100-sxm")
BW = 3_350_000_000_000          # H100 SXM memory bandwidth, B/s (calculations/hardware/h100-sxm.json)
LLAMA_8B_PARAMS = 8_030_261_248  # Llama-3.1-8B, the official checkpoint's tensors


def micro_batch(seq=4096):
    return Workload(batch=1, tokens=seq, logits="all")


class OptimizerUpdate(unittest.TestCase):
    """Per step each device reads and writes the AdamW states (12 B: fp32 master, momentum,
    variance), reads the bf16 gradient and writes the bf16 weight of every parameter it
    updates: (2 x 12 + 2 + 2) = 28 B per parameter at the memory bandwidth; ZeRO >= 1 splits
    the parameters updated over the DP group (ceil)."""

    def optimizer_s(self, zero):
        lay = Layout(dp=8, micro_batches=1)
        t = train_time.step_time(load_model("llama-3.1-8b"), micro_batch(), lay, H100, zero=zero)
        return t.stages[0].optimizer_s

    def test_without_zero_every_device_updates_every_parameter(self):
        self.assertAlmostEqual(self.optimizer_s(0), LLAMA_8B_PARAMS * 28 / BW, delta=1e-15)

    def test_zero_1_updates_one_dp_share(self):
        share = -(-LLAMA_8B_PARAMS // 8)   # 1,003,782,656
        self.assertEqual(share, 1_003_782_656)
        self.assertAlmostEqual(self.optimizer_s(1), share * 28 / BW, delta=1e-15)


class CrossEntropyAllReduces(unittest.TestCase):
    """Megatron's vocab-parallel cross-entropy: three all-reduces over TP of one fp32 per token
    (the row max, the sum of exponentials, the target logit), on the stage holding the head."""

    def test_three_fp32_all_reduces_per_token_on_the_head_stage_only(self):
        arch = load_model("llama-3.1-8b")
        lay = Layout(tp=2, pp=2, micro_batches=4)
        first, last = placement.stages(arch, lay)
        for st, want in ((first, []), (last, [("all_reduce", 4096 * 4, 3, 2, "forward")])):
            ce = [(c.kind, c.bytes, c.count, c.group, phase)
                  for c, phase in train_time.stage_collectives(arch, lay, st, train_flops_workload(), H100,
                                                               recompute="none", chunks=1)
                  if "cross-entropy" in c.name]
            self.assertEqual(ce, want, st.index)


class PipelineBoundary(unittest.TestCase):
    """A PP boundary per micro-batch: the sender's 1/tp slice of [tokens, hidden] in bf16,
    activations forward from every stage but the last, gradients backward from every stage but
    the first; without SP the receiver all-gathers [tokens, hidden] over TP."""

    def test_sends_in_both_directions(self):
        arch = load_model("llama-3.1-8b")   # hidden 4096
        lay = Layout(tp=2, pp=2, micro_batches=4)
        first, last = placement.stages(arch, lay)
        slice_bytes = 4096 * 4096 // 2 * 2
        full = 4096 * 4096 * 2

        def pp(st):
            return sorted((c.kind, c.bytes, c.count, phase)
                          for c, phase in train_time.stage_collectives(arch, lay, st, train_flops_workload(), H100,
                                                                       recompute="none", chunks=1)
                          if c.dim == "pp")
        self.assertEqual(pp(first), [("all_gather", full, 1, "backward"), ("p2p", slice_bytes, 1, "forward")])
        self.assertEqual(pp(last), [("all_gather", full, 1, "forward"), ("p2p", slice_bytes, 1, "backward")])


class ZeroThreeGathers(unittest.TestCase):
    """ZeRO-3 gathers the parameters before the forward and again before the backward of every
    micro-batch: 2 m all-gathers of the bf16 parameters per step (Rajbhandari et al. 2019)."""

    def test_two_gathers_per_micro_batch(self):
        lay = Layout(dp=8, micro_batches=3)
        t = train_time.step_time(load_model("llama-3.1-8b"), micro_batch(), lay, H100, zero=3)
        gathers = [tm.collective for tm in t.stages[0].dp_collectives if tm.collective.kind == "all_gather"]
        self.assertEqual([(c.bytes, c.count) for c in gathers], [(LLAMA_8B_PARAMS * 2, 2 * 3)])


class ZeroShareOverDpAndCp(unittest.TestCase):
    """ZeRO shards the optimizer over the DP x CP group (the CP ranks hold the same weights):
    with dp 4 and cp 2 each device updates ceil(P / 8) parameters."""

    def test_cp_ranks_split_the_update_too(self):
        lay = Layout(dp=4, cp=2, micro_batches=1)
        t = train_time.step_time(load_model("llama-3.1-8b"), micro_batch(), lay, H100, zero=1)
        self.assertAlmostEqual(t.stages[0].optimizer_s, -(-LLAMA_8B_PARAMS // 8) * 28 / BW, delta=1e-15)


class BackwardVectorFlops(unittest.TestCase):
    """The convention `train` states: a vector operator's backward is its forward vector FLOPs
    times norm 2, activation 2, softmax 1, RoPE 1, residual 1, bias (gemm) 1, other 1."""

    FACTORS = {"norm": 2, "activation": 2, "softmax": 1, "rope": 1, "residual": 1, "gemm": 1,
               "elementwise": 1, "routing": 1}

    def test_each_kind_of_a_dense_and_an_moe_model(self):
        from infracalc import ledger
        from infracalc.analyses import train_flops
        seen = set()
        for model in ("llama-3.1-8b", "qwen3-30b-a3b"):
            arch = load_model(model)
            w = train_flops_workload()
            for op in ledger.build(arch, w).ops:
                if op.kind in self.FACTORS and op.vector_flops:
                    back = train_flops.backward(op, w, arch.vocab_size)
                    self.assertEqual(back.vector_flops, self.FACTORS[op.kind] * op.vector_flops, op.name)
                    seen.add(op.kind)
        self.assertGreaterEqual(seen, {"norm", "activation", "softmax", "rope", "residual", "routing"})


def train_flops_workload():
    from infracalc.analyses import train_flops
    return train_flops.training_workload(micro_batch())


class SyncOfTheSlowestStage(unittest.TestCase):
    def test_the_step_waits_for_the_largest_stage_sync(self):
        # Once per step every stage syncs its gradients and updates its parameters; the step
        # ends when the last of them does: sync = max over stages of (exposed DP traffic +
        # optimizer update). Llama-3.1-8B, pp 4, dp 2, ZeRO-1: the first stage holds the
        # embedding and the last the head, so the stages' syncs differ and the max is not the min.
        from infracalc import comm
        from infracalc.analyses import train

        arch, dev = load_model("llama-3.1-8b"), load_device("h100-sxm")
        s, w = train.Setup(zero=1), Workload(batch=1, tokens=4096, logits="all")
        lay = Layout(pp=4, dp=2, micro_batches=8)
        t = train.step_of(arch, w, lay, dev, s, links=comm.links(dev), mem=train.stage_memory(arch, w, lay, s))
        per_stage = [st.dp_exposed_s + st.optimizer_s for st in t.stages]
        self.assertLess(min(per_stage), max(per_stage))
        self.assertEqual(t.sync_s, max(per_stage))
        self.assertEqual(t.step_s, t.pipeline_s + max(per_stage))


if __name__ == "__main__":
    unittest.main()

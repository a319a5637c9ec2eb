"""One convention for EP and PP traffic, shared by `parallel` and `train`
(collectives.moe_collectives, moe_keeps_tp_reduction, pp_boundary_collectives).

Expected values are derived by hand in the comments; the cross-command tests check that both
commands emit the very same collectives for the same tokens, and that the EP traffic a device
receives is exactly the routed work the layout library charges it (conservation)."""

import unittest

from support import Workload, load_model  # noqa: F401  (sets the path)

from infracalc import comm
from infracalc import layout as placement
from infracalc.analyses import parallel as P
from infracalc.analyses.parallel import communication
from infracalc.analyses import train_time
from infracalc.layout import Layout
from infracalc.load.hardware import load_device

H100 = load_device("h100-sxm")
QWEN = "qwen3-30b-a3b"   # 48 MoE layers, top-8 of 128 experts, hidden 2048, no shared expert


def rows(cs, dim):
    return sorted((c.name, c.kind, c.bytes, c.group, c.count) for c in cs if c.dim == dim)


class Formulas(unittest.TestCase):
    def test_ep_sends_the_tp_slice(self):
        # 4,096 tokens at tp 2, ep 8 (expert TP 1): each TP rank dispatches its 2,048 tokens' 8
        # copies of 2,048 bf16 values: S = 2048 x 8 x 2048 x 2 = 67,108,864 B, dispatch and combine.
        cs = comm.moe_collectives(4096, 8, 2048, 2, tp=2, ep=8, moe_layers=1, tier_ep="up", tier_tp="up", experts=128)
        self.assertEqual([(c.kind, c.bytes, c.group) for c in cs], [("all_to_all", 67_108_864, 8)] * 2)

    def test_expert_tp_gathers_the_received_copies(self):
        # tp 4, ep 2: expert TP 2. Each rank dispatches its 1,024 tokens: S = 1024 x 8 x 2048 x 2
        # = 33,554,432 B; the 2 ranks sharing an expert all-gather what they received (and
        # reduce-scatter the outputs): S = 2 x 33,554,432 = 67,108,864 B over 2 ranks.
        cs = comm.moe_collectives(4096, 8, 2048, 2, tp=4, ep=2, moe_layers=48, tier_ep="up", tier_tp="up", experts=128)
        self.assertEqual([(c.kind, c.bytes, c.group, c.count) for c in cs],
                         [("all_to_all", 33_554_432, 2, 48), ("all_to_all", 33_554_432, 2, 48),
                          ("all_gather", 67_108_864, 2, 48), ("reduce_scatter", 67_108_864, 2, 48)])

    def test_tp_reduction_after_moe(self):
        # Kept: no EP (experts TP-split like an MLP); shared experts (TP-split); no SP (the
        # all-reduce reassembles the routed slices). Dropped: EP with SP and no shared expert.
        keep = comm.moe_keeps_tp_reduction
        self.assertEqual([keep(8, 1, True, 0), keep(8, 8, True, 2048), keep(8, 8, False, 0), keep(8, 8, True, 0),
                          keep(1, 8, False, 0)], [True, True, True, False, False])

    def test_pp_boundary(self):
        # Llama-3.1-70B boundary, 2,048 tokens x 8,192 x 2 B = 33,554,432 B: at tp 8 each rank
        # sends 256 x 8192 x 2 = 4,194,304 B; without SP the receiver all-gathers the 33,554,432 B
        # over its 8 TP ranks; with SP (or tp 1) the send alone.
        cs = comm.pp_boundary_collectives(2048, 8192, 2, tp=8, sp=False, tier_pp="out", tier_tp="up")
        self.assertEqual([(c.kind, c.bytes, c.group, c.tier) for c in cs],
                         [("p2p", 4_194_304, 2, "out"), ("all_gather", 33_554_432, 8, "up")])
        boundary = lambda tp, sp: comm.pp_boundary_collectives(2048, 8192, 2, tp=tp, sp=sp, tier_pp="out",
                                                               tier_tp="up")
        self.assertEqual([c.bytes for c in boundary(8, True)], [4_194_304])
        self.assertEqual([c.bytes for c in boundary(1, False)], [33_554_432])


class SameInBothCommands(unittest.TestCase):
    def test_parallel_prefill_and_train_forward_emit_the_same_traffic(self):
        # One prompt of 2,048 tokens in parallel's prefill = one micro-batch of one 2,048-token
        # sequence in train's forward: identical EP collectives, and the same MLP reductions,
        # for every (tp, ep, sp); the PP boundary of stage 0 (tp 4, pp 2) likewise.
        arch = load_model(QWEN)
        w = Workload(batch=1, tokens=2048, logits="all")
        for tp, ep, sp, pp in ((1, 8, False, 1), (2, 8, True, 1), (4, 2, True, 1), (4, 2, False, 2),
                               (8, 8, True, 1)):
            lay = Layout(tp=tp, pp=pp, dp=max(1, ep // tp), ep=ep, sp=sp)
            placement.validate(arch, lay)
            plan = P.Plan(arch, Workload(), H100, 2048, 2)
            st = placement.stages(arch, lay)[0]
            ours = communication.merged_collectives(
                communication.stage_collectives(plan, lay, st, "prefill", 1, tokens_per_rank=2048))
            theirs = [c for c, phase in train_time.stage_collectives(arch, lay, st, w, H100, recompute="none",
                                                                     chunks=1)
                      if phase == "forward"]
            self.assertEqual(rows(ours, "ep"), rows(theirs, "ep"), (tp, ep, sp))
            mlp = lambda cs: sorted((c.kind, c.bytes, c.count) for c in cs if c.dim == "tp" and "MLP" in c.name)
            self.assertEqual(mlp(ours), mlp(theirs), (tp, ep, sp))
            self.assertEqual(mlp(ours) == [], tp == 1 or sp, (tp, ep, sp))   # no shared expert
            if pp > 1:
                sent = {(c.kind, c.bytes) for c in theirs if c.dim == "pp"}
                ours_pp = communication.transfer(plan, lay, 2048)[0]
                self.assertEqual(sent, {(c.kind, c.bytes) for c in ours_pp if c.kind == "p2p"})
                self.assertEqual(sent, {("p2p", 512 * 2048 * 2)})   # 2,048 / tp 4 tokens x 2,048 x 2 B

    def test_train_charges_the_shared_builders_layers_by_phase(self):
        # DeepSeek-V3 on one stage, tp 8, cp 2, ep 8 (one 4,096-token sequence per micro-batch,
        # 2,048 per CP rank): the 3 dense and 58 MoE layers' shards have the same naive K/V (128 / 8
        # = 16 heads x (192 + 128) x 2 B = 10,240 B per token), so ONE CP ring row of 2,048 x
        # 10,240 B = 20,971,520 B x (cp - 1) x 61 layers = 61 runs forward and in the recompute,
        # twice in the backward; the TP rows are the attention's and the MLP's all-reduce of
        # 2,048 x 7,168 x 2 B = 29,360,128 B x 61 each (without SP the MoE layers keep theirs).
        arch = load_model("deepseek-v3")
        lay = Layout(tp=8, cp=2, ep=8, dp=1)
        st = placement.stages(arch, lay)[0]
        cs = train_time.stage_collectives(arch, lay, st, Workload(batch=1, tokens=4096, logits="all"),
                                          load_device("h200"), recompute="full", chunks=1)
        cp = [(c.bytes, c.count, phase) for c, phase in cs if c.dim == "cp"]
        self.assertEqual(cp, [(20_971_520, 61, "forward"), (20_971_520, 122, "backward"),
                              (20_971_520, 61, "recompute")])
        tp = [(c.name, c.bytes, c.count, phase) for c, phase in cs if c.dim == "tp" and "after" in c.name]
        self.assertEqual(tp, [(f"TP all-reduce after {what}", 29_360_128, n, phase)
                              for phase in ("forward", "backward", "recompute")
                              for what, n in (("attention", 61), ("MLP", 61))])

    def test_received_copies_equal_the_routed_work(self):
        # Conservation: the copies a device holds after the dispatch (and the expert-TP gather)
        # are the routed copies its MoE shard computes, tokens x k / min(tp, ep) (blocks.moe).
        arch = load_model(QWEN)
        moe = next(b for b in arch.layers[0].blocks if hasattr(b, "experts"))
        for tp, ep in ((1, 8), (2, 8), (4, 2), (8, 8), (8, 4)):
            cs = comm.moe_collectives(4096, moe.top_k, moe.hidden, 2, tp=tp, ep=ep, moe_layers=1, tier_ep="up",
                                      tier_tp="up", experts=moe.experts)
            gathered = [c for c in cs if c.kind == "all_gather"]
            received = (gathered[0].bytes if gathered else cs[0].bytes) // (moe.hidden * 2)
            self.assertEqual(received, 4096 * moe.top_k // min(tp, ep), (tp, ep))
            shard = placement.shard_block(moe, tp, ep)
            gate = next(op for op in shard.ops(Workload(tokens=4096)) if op.name.endswith("experts.gate_proj"))
            self.assertEqual(gate.matrix_flops, 2 * received * moe.hidden * shard.expert_inter, (tp, ep))


if __name__ == "__main__":
    unittest.main()

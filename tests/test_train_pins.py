"""Training formulas the mutation check (scripts/mutation_check.py) found no unit test pinning:
each expected value is derived by hand in the comment beside it."""

import unittest

from support import load_model  # noqa: F401  (sets the path)

from infracalc import layout as placement
from infracalc.collectives import Collective
from infracalc.analyses import train_flops, train_memory, train_time
from infracalc.layout import Layout
from infracalc.load.hardware import load_device
from infracalc.workload import Workload

H100 = load_device("h100-sxm")


class BackwardReadsTheWeightsTwice(unittest.TestCase):
    def test_gemm_backward_on_two_cp_ranks(self):
        # A GEMM's backward runs dX = dY W^T and dW = X^T dY: 2 F FLOPs and 2 x its forward bytes,
        # of which the weights W are read twice (once per product) and, unlike the activations,
        # not split over the CP ranks. With 2 ranks one rank's backward takes
        # max(2 F / 2 / peak, (2 W + (2 bytes - 2 W) / 2) / bandwidth).
        arch = load_model("qwen3-8b")
        w = train_flops.training_workload(Workload(tokens=64))
        ops = [op for b in arch.layers[0].blocks for op in train_flops.recipe_block_ops(b, w)]
        gemm = next(op for op in ops if op.kind == "gemm")
        roofs = train_time.roofs_of(H100, w)
        r = roofs[0]
        terms = train_time.row_terms(gemm, w, 0, "none", False)
        self.assertEqual(terms[9], 2 * gemm.weight_read)
        wb, moved, f = gemm.weight_read, gemm.bytes_moved, gemm.matrix_flops
        want = max(2 * f / 2 / r.matrix_flops_per_s + gemm.vector_flops / 2 / r.vector_flops_per_s,
                   (2 * wb + (2 * moved - 2 * wb) / 2) / r.bytes_per_s)
        got = train_time.terms_pass([terms], roofs, 2).backward
        self.assertAlmostEqual(got, want, delta=want * 1e-12)
        self.assertGreater(wb, 0)   # not vacuous: the weights are read


class DualPipeRanks(unittest.TestCase):
    def test_rank_holds_stage_i_and_its_mirror(self):
        # DualPipe: rank i runs stage i forward and stage p - 1 - i in reverse, so it holds both
        # stages' parameters; 1F1B's rank holds its own stage only. pp = 4: rank 1 = stages 1 + 2.
        arch = load_model("qwen3-8b")
        lay = Layout(pp=4, micro_batches=8)
        sts = placement.stages(arch, lay)
        params = [train_memory.stage_params(arch, lay, st) for st in sts]
        for i in range(4):
            mirror = params[3 - i]
            self.assertEqual(train_time.rank_params(arch, lay, sts[i], "dualpipe"),
                             (params[i][0] + mirror[0], params[i][1] + mirror[1]))
            self.assertEqual(train_time.rank_params(arch, lay, sts[i], "1f1b"), params[i])
        self.assertNotEqual(params[2], params[3])   # not vacuous: the last stage holds the head


class ExpertDataParallelGroup(unittest.TestCase):
    def test_expert_dp(self):
        # EDP = TP x DP x CP / (expert TP x EP), expert TP = tp / ep when ep <= tp, else 1:
        cases = ((Layout(tp=2, dp=4, cp=2, ep=4), 2 * 4 * 2 // (1 * 4)),    # 4
                 (Layout(tp=4, dp=2, cp=2, ep=2), 4 * 2 * 2 // (2 * 2)),    # 4
                 (Layout(tp=8, ep=8), 1),
                 (Layout(tp=1, dp=16, cp=4, ep=8), 16 * 4 // 8))            # 8
        for lay, want in cases:
            self.assertEqual(train_memory.expert_dp(lay), want, lay.label())


class OverlapTp(unittest.TestCase):
    def test_tp_exposed_beyond_each_phase_compute(self):
        # --overlap-tp: a phase's TP collectives run under that phase's compute, so only
        # max(0, TP seconds - compute seconds) is exposed; every other collective is exposed whole.
        # compute F 1.0, B 2.0, R 0.5 s; TP F 1.5, B 1.0, R 0.7 s; a PP send of 0.25 s in F:
        #   exposed F = 0.25 + max(0, 1.5 - 1.0) = 0.75, B = max(0, 1.0 - 2.0) = 0, R = 0.7 - 0.5 = 0.2
        tp = Collective("TP all-reduce", "all_reduce", 1, 2, "up", dim="tp")
        pp = Collective("PP send", "p2p", 1, 2, "up", dim="pp")
        timed = [train_time.Timed(tp, "forward", 1.5), train_time.Timed(tp, "backward", 1.0),
                 train_time.Timed(tp, "recompute", 0.7), train_time.Timed(pp, "forward", 0.25)]
        compute = train_time.Pass(forward=1.0, backward=2.0, recompute=0.5)
        hidden = train_time._pass_of(timed, compute)
        self.assertEqual((hidden.forward, hidden.backward), (0.75, 0.0))
        self.assertAlmostEqual(hidden.recompute, 0.2, places=15)
        exposed = train_time._pass_of(timed)
        self.assertEqual((exposed.forward, exposed.backward, exposed.recompute), (1.75, 1.0, 0.7))


if __name__ == "__main__":
    unittest.main()

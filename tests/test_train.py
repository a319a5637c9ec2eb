"""`train` on a layout: step time, bubble formulas, collectives, MFU/HFU, search."""

import json
import unittest

from support import Workload, load_model, run_cli  # noqa: F401  (sets the path)

from infracalc.analyses import train, train_time
from infracalc.analyses.train_time import Pass
from infracalc.comm import links
from infracalc.layout import Layout
from infracalc.load.hardware import load_device


def ideal_device(peak=10**15):
    """An H100 whose only limit is a bf16 matrix peak of `peak` FLOP/s: memory
    and vector work take (almost) no time, so a step is its matrix FLOPs / peak."""
    return load_device("h100-sxm").replace(matrix_flops_per_s=(("bf16", peak),), vector_flops_per_s=10**30,
                                           memory_bandwidth_bytes_per_s=10**30)


def record(model, device, lay, setup=None, *, seq, micro_batch=1, global_batch):
    w = Workload(batch=micro_batch, tokens=seq, logits="all")
    m = train.micro_batches(global_batch, micro_batch, lay.dp)
    return train.train(load_model(model), w, device, lay.replace(micro_batches=m), setup or train.Setup(),
                       global_batch=global_batch, links=links(device))


class OneDevice(unittest.TestCase):
    def test_step_time_is_matrix_flops_over_peak(self):
        # Qwen3-8B, one sequence of 8,192 tokens (test_train_flops): model FLOPs
        # 431,367,993,163,776; nothing but the 1e15 FLOP/s matrix peak costs time:
        # step = 0.431367993163776 s; HFU = MFU = 1.
        rec = record("qwen3-8b", ideal_device(), Layout(), seq=8192, global_batch=1)
        self.assertAlmostEqual(rec["time"]["step_s"], 0.431367993163776, places=9)
        self.assertAlmostEqual(rec["throughput"]["mfu"], 1.0, places=6)

    def test_full_recompute_adds_one_forward_of_the_layers(self):
        # Head on 8,192 positions: 2 x 8192 x 4096 x 151,936 = 10,196,252,360,704 FLOPs;
        # the layers' forward = 143,789,331,054,592 - that = 133,593,078,693,888, run again:
        # hardware FLOPs 564,961,071,857,664 -> 0.564961071857664 s; MFU = 431.37 / 564.96.
        s = train.Setup(recompute="full")
        rec = record("qwen3-8b", ideal_device(), Layout(), s, seq=8192, global_batch=1)
        self.assertEqual(rec["throughput"]["hardware_flops_per_step"], 564_961_071_857_664)
        self.assertAlmostEqual(rec["time"]["step_s"], 0.564961071857664, places=9)
        self.assertAlmostEqual(rec["throughput"]["hfu"], 1.0, places=6)
        self.assertAlmostEqual(rec["throughput"]["mfu"], 431_367_993_163_776 / 564_961_071_857_664, places=6)

    def test_micro_batches_add_up(self):
        # 4 micro-batches of one sequence, no pipeline: 4 x the one-sequence step.
        rec = record("qwen3-8b", ideal_device(), Layout(), seq=8192, global_batch=4)
        self.assertEqual(rec["time"]["micro_batches"], 4)
        self.assertAlmostEqual(rec["time"]["step_s"], 4 * 0.431367993163776, places=8)


class Collectives(unittest.TestCase):
    def test_dp_gradient_all_reduce(self):
        # Qwen3-8B (8,190,735,360 params) on 8 H100s, dp 8, ZeRO 0: one all-reduce of
        # 16,381,470,720 bf16 gradient bytes over NVLink (450 GB/s, alpha 0.6 us):
        # 1.75 x S / 450e9 + 14 x 0.6e-6 = 0.0637057194667 + 0.0000084 = 0.0637141194667 s.
        rec = record("qwen3-8b", load_device("h100-sxm"), Layout(dp=8), seq=4096, global_batch=8)
        (c,) = [c for c in rec["time"]["collectives"] if c["dim"] == "dp"]
        self.assertEqual((c["kind"], c["bytes"], c["group"], c["tier"]), ("all_reduce", 16_381_470_720, 8, "up"))
        self.assertAlmostEqual(c["time_s"], 0.0637141194667, places=12)
        self.assertAlmostEqual(rec["time"]["breakdown"]["dp_sync_exposed_s"], c["time_s"], places=12)

    def test_tp_all_reduces_forward_and_backward(self):
        # Llama-3.1-70B at tp 8 (no SP), 4,096 tokens: after attention and after the MLP one
        # all-reduce of 4096 x 8192 x 2 = 67,108,864 B per layer, 80 layers, in the forward and
        # again in the backward: one run 1.75 x 67,108,864 / 450e9 + 14 x 0.6e-6 s.
        rec = record("llama-3.1-70b", load_device("h100-sxm"), Layout(tp=8), seq=4096, global_batch=1)
        one = 1.75 * 67_108_864 / 450e9 + 14 * 0.6e-6
        rows = [c for c in rec["time"]["collectives"] if c["name"].startswith("TP all-reduce after")]
        self.assertEqual(sorted((c["phase"], c["count"], c["bytes"]) for c in rows),
                         [("backward", 80, 67_108_864)] * 2 + [("forward", 80, 67_108_864)] * 2)
        for c in rows:
            self.assertAlmostEqual(c["time_s"], 80 * one, places=12)
        stage = rec["time"]["stages"][0]
        self.assertAlmostEqual(stage["backward_comm_s"], 2 * 80 * one, places=12)

    def test_ep_all_to_all_four_per_moe_layer(self):
        # Qwen3-30B-A3B (48 MoE layers) at ep 8: dispatch and combine forward and backward.
        rec = record("qwen3-30b-a3b", load_device("h100-sxm"), Layout(dp=8, ep=8), seq=2048, global_batch=8)
        ep = [c for c in rec["time"]["collectives"] if c["dim"] == "ep"]
        self.assertEqual(len(ep), 4)
        self.assertEqual({c["count"] for c in ep}, {48})
        self.assertEqual({c["bytes"] for c in ep}, {2048 * 8 * 2048 * 2})   # tokens x k x hidden x 2 B


    def test_pp_sends_the_tp_slice_across_nodes(self):
        # GPT-3 175B at tp 8, pp 16, dp 12 on A100s: a stage boundary carries 2,048 x 12,288 x 2 B
        # / 8 = 6,291,456 B per rank (Narayanan et al.'s scatter/gather); neighbouring stages are
        # tp x dp = 96 ranks apart, so over the 25 GB/s NIC: S / 25e9 + 2.7 us = 254.3658 us.
        # The slowest stage is the last (15, the head's): it sends its gradients back once per
        # chunk it holds, v, and its activations forward v - 1 times (under interleaving its
        # first v - 1 chunks feed the first stage's next ones; the head's chunk feeds nobody), and
        # receives v - 1 gradients (none for the head's chunk) and v activations. Without SP the
        # receiving stage all-gathers the slices over its TP group (NVLink): S = 2,048 x 12,288 x 2
        # = 50,331,648 B; with SP the activations stay split and nothing is gathered.
        dev = load_device("a100-sxm-80gb")
        for schedule, v in (("1f1b", 1), ("interleaved", 2)):
            for sp in (False, True):
                rec = record("gpt3-175b", dev, Layout(tp=8, pp=16, dp=12, sp=sp),
                             train.Setup(schedule=schedule, chunks=v), seq=2048, global_batch=1536)
                self.assertEqual(rec["time"]["bottleneck_stage"], 15)
                pp = [c for c in rec["time"]["collectives"] if c["dim"] == "pp"]
                want = {(6_291_456, "out", v, "p2p", "backward"), (6_291_456, "out", v - 1, "p2p", "forward")}
                if not sp:
                    want |= {(50_331_648, "up", v, "all_gather", "forward"),
                             (50_331_648, "up", v - 1, "all_gather", "backward")}
                want = {c for c in want if c[2]}   # a collective of no runs is not listed
                self.assertEqual({(c["bytes"], c["tier"], c["count"], c["kind"], c["phase"]) for c in pp}, want)
                send = next(c for c in pp if c["kind"] == "p2p" and c["phase"] == "backward")
                self.assertAlmostEqual(send["time_s"], v * (6_291_456 / 25e9 + 2.7e-6), places=12)

    def test_boundary_runs(self):
        # v chunks per stage; the chunk at the model's end in that direction does not cross
        from infracalc.analyses.train_time import boundary_runs
        self.assertEqual([boundary_runs(v, end) for v in (1, 2, 5) for end in (False, True)], [1, 0, 2, 1, 5, 4])

    def test_zero3_gathers_every_micro_batch(self):
        # ZeRO-3: the two parameter all-gathers (forward, backward) run for each of the m = 4 micro-batches.
        rec = record("qwen3-8b", load_device("h100-sxm"), Layout(dp=8), train.Setup(zero=3), seq=2048,
                     global_batch=32)
        (gather,) = [c for c in rec["time"]["collectives"] if c["name"].startswith("ZeRO-3")]
        self.assertEqual((gather["count"], gather["bytes"]), (8, 16_381_470_720))


class Bubble(unittest.TestCase):
    t = Pass(forward=1.0, backward=2.0, weight_grad=1.0)

    def test_1f1b_and_interleaved(self):
        # Four equal stages, m = 8: 1F1B (p-1) t = 3 x 3 s (fraction 3/8); interleaved v = 2: half.
        times = [self.t] * 4
        self.assertAlmostEqual(train_time.bubble("1f1b", times, 0, pp=4, micro_batches=8, chunks=1)[0], 9.0)
        self.assertAlmostEqual(train_time.bubble("interleaved", times, 0, pp=4, micro_batches=8, chunks=2)[0], 4.5)
        self.assertAlmostEqual(9.0 / (8 * 3.0), 3 / 8)

    def test_zero_bubble_and_dualpipe(self):
        # F = 1, B = 2 (of which W = 1): ZB-H1 (p-1)(F + B - 2W) = 3 x 1 = 3;
        # DualPipe (p/2 - 1)(F&B + B - 3W) with F&B = F + B: 1 x (3 + 2 - 3) = 2.
        times = [self.t] * 4
        self.assertAlmostEqual(train_time.bubble("zero-bubble", times, 0, pp=4, micro_batches=8, chunks=1)[0], 3.0)
        self.assertAlmostEqual(train_time.bubble("dualpipe", times, 0, pp=4, micro_batches=8, chunks=1)[0], 2.0)

    def test_uneven_stages_pay_the_slowest(self):
        # Stage times 3, 3, 6: m x 6 + (3 + 3) (the first micro-batch crosses every stage).
        times = [self.t, self.t, self.t.times(2)]
        self.assertAlmostEqual(train_time.bubble("1f1b", times, 2, pp=3, micro_batches=5, chunks=1)[0], 6.0)

    def test_pipeline_bubble_in_a_step(self):
        # GPT-3 175B, pp 8 (12 layers per stage), m = 16: bubble / (m t_slowest) <= (p - 1)/m, with
        # equality only for equal stages (the first and last add the embedding and the head).
        rec = record("gpt3-175b", load_device("a100-sxm-80gb"), Layout(pp=8, tp=8), seq=2048,
                     global_batch=16)
        self.assertLessEqual(rec["time"]["bubble_fraction"], 7 / 16)
        self.assertGreater(rec["time"]["bubble_fraction"], 0.95 * 7 / 16)


class Invariants(unittest.TestCase):
    def test_more_dp_never_increases_memory_under_zero(self):
        arch, w = load_model("qwen3-0.6b"), Workload(tokens=2048, logits="all")
        for zero in (1, 2, 3):
            totals = []
            for dp in (1, 2, 4, 8, 16):
                mem = train.stage_memory(arch, w, Layout(dp=dp, micro_batches=1), train.Setup(zero=zero))
                totals.append(mem[0].total)
            self.assertEqual(totals, sorted(totals, reverse=True), zero)
            self.assertLess(totals[-1], totals[0])

    def test_dualpipe_holds_two_stages_of_parameters(self):
        arch, w = load_model("qwen3-0.6b"), Workload(tokens=2048, logits="all")
        lay = Layout(pp=4, micro_batches=8)
        one = train.stage_memory(arch, w, lay, train.Setup())
        two = train.stage_memory(arch, w, lay, train.Setup(schedule="dualpipe"))
        # rank i runs stage i forward and stage 3 - i in reverse, each as 1F1B keeps it
        for i, b in enumerate(two):
            a, r = one[i], one[3 - i]
            self.assertEqual(b.states.total, a.states.total + r.states.total)
            self.assertEqual(b.activation_bytes, a.activation_bytes + r.activation_bytes)
            self.assertEqual(a.in_flight[0] + r.in_flight[0], 5)   # p + 1 micro-batches of layers

    def test_states_floor_is_the_states_part_of_every_recipe_change(self):
        # would_fit skips a change whose model states alone exceed the device: the floor must be
        # the largest rank's states under that ZeRO stage exactly (recompute does not change them)
        # and so never above the rank's total (activations, gathers and buffers are >= 0).
        arch, w = load_model("qwen3-30b-a3b"), Workload(tokens=2048, logits="all")
        for lay, schedule in ((Layout(dp=4, ep=4, micro_batches=2), "1f1b"),
                              (Layout(tp=2, pp=3, dp=2, micro_batches=4), "1f1b"),
                              (Layout(pp=4, dp=2, micro_batches=8), "dualpipe")):
            s = train.Setup(schedule=schedule)
            mem = train.stage_memory(arch, w, lay, s)
            for zero in (0, 1, 2, 3):
                for recompute in ("none", "selective", "full"):
                    got = train.stage_memory(arch, w, lay, s.replace(zero=zero, recompute=recompute))
                    floor = train.states_floor(mem, lay, s, zero)
                    self.assertEqual(floor, max(m.states.total for m in got), (lay, schedule, zero))
                    self.assertLessEqual(floor, max(m.total for m in got))

    def test_would_fit_lists_what_the_full_evaluation_lists(self):
        # A capacity between the changes' needs: some fit, some are refused by the floor, some by
        # their full memory; the answer equals evaluating every change.
        arch, w = load_model("qwen3-8b"), Workload(tokens=4096, logits="all")
        lay, s = Layout(dp=8, micro_batches=1), train.Setup()
        changes = [("--zero 1", {"zero": 1}), ("--zero 2", {"zero": 2}), ("--zero 3", {"zero": 3}),
                   ("--recompute selective", {"recompute": "selective"}),
                   ("--recompute full", {"recompute": "full", "recompute_modules": ()})]
        changes += [(f"--zero {z} --recompute {r}", {"zero": z, "recompute": r,
                                                     **({"recompute_modules": ()} if r == "full" else {})})
                    for r in ("selective", "full") for z in (1, 2, 3)]
        needs = [max(m.total for m in train.stage_memory(arch, w, lay, s.replace(**c))) for _, c in changes]
        mem = train.stage_memory(arch, w, lay, s)
        for capacity in sorted(set(needs)):
            expected = [{"options": o, "needs_bytes": n} for (o, _), n in zip(changes, needs) if n <= capacity][:3]
            self.assertEqual(train.would_fit(arch, w, lay, s, capacity, mem=mem), expected, capacity)
        floors = [train.states_floor(mem, lay, s, c.get("zero", 0)) for _, c in changes]
        self.assertTrue(any(f < n for f, n in zip(floors, needs)))   # not vacuous: the floor is below

    def test_layer_pass_is_its_rows_summed_in_order(self):
        # layer_pass reuses each block's per-row seconds across the layers sharing it; the sums
        # must still be the rows' in row order, bit for bit (the figures are printed rounded).
        from infracalc.analyses.train_time import block_terms, layer_pass, roofs_of, terms_pass

        arch, w = load_model("kimi-k2"), train.train_flops.training_workload(Workload(tokens=512))
        roofs = roofs_of(load_device("h100-sxm"), w, 0.7, 0.8)
        for layer, _, _ in arch.layer_groups():
            for cp, sp_tp, recompute in ((1, 1, "none"), (2, 4, "selective")):
                terms = [t for b in layer.blocks for t in block_terms(b, w, recompute, False)]
                got = layer_pass(layer, w, roofs, cp=cp, recompute=recompute, flash=False, sp_tp=sp_tp)
                self.assertEqual(got, terms_pass(terms, roofs, cp, sp_tp))

    def test_overlap_never_increases_time(self):
        dev = load_device("h100-sxm")
        for lay, zero in ((Layout(dp=8), 0), (Layout(dp=4, tp=2), 1), (Layout(dp=8), 3), (Layout(dp=2, pp=4), 2)):
            kw = dict(seq=2048, global_batch=16)
            plain = record("llama-3.1-8b", dev, lay, train.Setup(zero=zero), **kw)["time"]["step_s"]
            over = record("llama-3.1-8b", dev, lay, train.Setup(zero=zero, overlap_dp=True), **kw)["time"]["step_s"]
            self.assertLessEqual(over, plain, (lay, zero))

    def test_mfu_at_most_hfu(self):
        dev = load_device("h100-sxm")
        for recompute in ("none", "selective", "full"):
            th = record("llama-3.1-8b", dev, Layout(tp=2, dp=4, sp=True), train.Setup(recompute=recompute),
                        seq=4096, global_batch=8)["throughput"]
            self.assertLessEqual(th["mfu"], th["hfu"])
            self.assertLess(th["hfu"], 1.0)


class Command(unittest.TestCase):
    def test_search_counts_every_layout(self):
        status, out, err = run_cli("train", "--model", "llama-3.1-8b", "--devices", "64", "--seq", "4096",
                                   "--global-batch", "256", "--zero", "1", "--search", "--top", "50",
                                   "--format", "json")
        self.assertEqual((status, err), (0, ""))
        rec = json.loads(out)
        # 64 = 2^6 split as tp x pp x dp (cp = 1): C(8, 2) = 28 ordered triples; llama has no experts.
        self.assertEqual(rec["layouts_considered"], 28)
        self.assertEqual(rec["layouts_admitted"] + sum(r["layouts"] for r in rec["rejected"]), 28)
        steps = [r["step_s"] for r in rec["top"]]
        self.assertEqual(steps, sorted(steps))
        self.assertTrue(rec["top"])   # not vacuous
        self.assertTrue(all(r["headroom_bytes"] >= 0 for r in rec["top"]))

    def test_ep_dispatcher(self):
        # GB200, EP 8 inside the NVL72 domain: NCCL's all-to-all at its measured 383.43 GB/s is slower
        # than HybridEP's stand-in (topo.h's 721.8 GB/s x the residual); the estimate is the same
        base = ("train", "--model", "qwen3-30b-a3b", "--device", "gb200", "--devices", "8", "--ep", "8",
                "--seq", "4096", "--global-batch", "64", "--zero", "1", "--format", "json")
        recs = {}
        for d in ("alltoall", "hybridep"):
            status, out, err = run_cli(*base, "--ep-dispatcher", d)
            self.assertEqual((status, err), (0, ""))
            recs[d] = json.loads(out)
        a, h = recs["alltoall"], recs["hybridep"]
        self.assertEqual(a["time"]["step_s"], h["time"]["step_s"])
        self.assertGreater(a["time"]["predicted_step_s"], h["time"]["predicted_step_s"])
        self.assertNotIn("ep_dispatcher", a["inputs"])    # the default is the convention line's
        self.assertEqual(h["inputs"]["ep_dispatcher"], "hybridep")
        self.assertTrue(any("HybridEP" in c for c in h["conventions"]))
        self.assertTrue(any("NCCL all-to-all" in c for c in a["conventions"]))

    def test_a_layout_that_does_not_fit_is_a_result(self):
        status, out, err = run_cli("train", "--model", "llama-3.1-70b", "--devices", "8", "--seq", "4096",
                                   "--format", "json")
        self.assertEqual((status, err), (0, ""))
        mem = json.loads(out)["memory"]
        self.assertFalse(mem["fits"])
        self.assertGreater(mem["shortfall_bytes"], 0)

    def test_errors(self):
        base = ("train", "--model", "gpt3-175b", "--seq", "2048")
        for argv, needle in (
                (("--devices", "12", "--tp", "8"), "not a multiple"),
                (("--devices", "16", "--tp", "8", "--dp", "4"), "differs"),
                (("--devices", "64", "--search", "--tp", "8", "--global-batch", "64"), "chooses"),
                (("--devices", "64", "--search"), "--global-batch"),
                (("--pp", "2", "--pp-layers", "1,95", "--schedule", "interleaved", "--global-batch", "2"),
                 "fewer than the v = 2 chunks"),
                (("--pp", "2", "--pp-layers", "48,47"), "sums to 95"),
                (("--pp", "3", "--schedule", "dualpipe"), "even"),
                (("--pp", "4", "--schedule", "interleaved", "--global-batch", "6"), "multiple of pp"),
                (("--train-tokens", "1.5"), "whole number"),
                (("--tp", "7"), "valid TP"),
                (("--global-batch", "3", "--dp", "2"), "not a multiple"),
                (("--virtual-stages", "2",), "interleaved"),
                (("--cp", "3"), "zig-zag")):
            status, out, err = run_cli(*base, *argv)
            self.assertEqual(status, 2, argv)
            self.assertIn(needle, err, argv)
            self.assertEqual(len(err.strip().splitlines()), 1, argv)


class SequenceParallelCompute(unittest.TestCase):
    def test_sp_splits_the_sequence_region_work(self):
        # Llama-3.1-8B, tp 8, one sequence of 8,192 tokens on an H100 (3.35e12 B/s, 67e12
        # vector FLOP/s). Without SP every TP rank runs each layer's two RMSNorms and two
        # residual adds on all 8,192 x 4,096 values; with SP on 1/8 of them (Korthikanti et
        # al. 2022 section 4.2.2). All four are memory-bound either way:
        #   norm: 2 x 33,554,432 B in + out + 8,192 B weight = 134,225,920 B -> SP 16,785,408 B
        #   residual: 3 x 67,108,864 B = 201,326,592 B -> SP 25,165,824 B
        # per layer 2 x 117,440,512 + 2 x 176,160,768 = 587,202,560 B less; x 32 layers
        # = 18,790,481,920 B / 3.35e12 = 5.609099 ms less forward compute. SP left it unchanged.
        def stage(sp):
            lay = Layout(tp=8, sp=sp)
            return record("llama-3.1-8b", load_device("h100-sxm"), lay, seq=8192,
                          global_batch=1)["time"]["stages"][0]
        plain, sp = stage(False), stage(True)
        self.assertAlmostEqual(plain["forward_compute_s"] - sp["forward_compute_s"],
                               18_790_481_920 / 3.35e12, places=9)
        self.assertLess(sp["backward_compute_s"], plain["backward_compute_s"])


class UnknownPeaks(unittest.TestCase):
    def test_memory_time_is_not_called_compute(self):
        # Apple M3 Ultra publishes neither a matrix nor a vector peak: every FLOP takes 0 s, so
        # the "Compute" row is the operators' memory time (819 GB/s) and the model FLOP/s drawn
        # from the step are overstated. The output said neither. An H100 has both peaks.
        args = ("train", "--model", "qwen3-0.6b", "--seq", "1024", "--global-batch", "2")
        _, out, _ = run_cli(*args, "--device", "apple-m3-ultra", "--format", "json")
        rec = json.loads(out)
        self.assertEqual(rec["time"]["unknown_peaks"], ["matrix", "vector"])
        self.assertIsNone(rec["throughput"]["mfu"])
        self.assertTrue(any(c.startswith("Matrix and vector peak unknown") for c in rec["conventions"]))
        _, md, _ = run_cli(*args, "--device", "apple-m3-ultra", "--full")
        self.assertIn("peak unknown: memory time of those operators |", md)
        self.assertIn("**Step (understated: compute partly unknown)**", md)
        self.assertIn("(overstated: the step time leaves out the FLOPs with no published peak)", md)
        self.assertIn("(step time x 1 device x dense peak unknown)", md)   # not "1 devices"
        # TPU v5e publishes its bf16 matrix peak (197 TFLOP/s) but no vector peak.
        _, out, _ = run_cli(*args, "--device", "tpu-v5e", "--format", "json")
        self.assertEqual(json.loads(out)["time"]["unknown_peaks"], ["vector"])
        _, out, _ = run_cli(*args, "--device", "h100-sxm", "--format", "json")
        rec = json.loads(out)
        self.assertEqual(rec["time"]["unknown_peaks"], [])
        self.assertFalse(any("peak unknown" in c for c in rec["conventions"]))
        _, out, _ = run_cli(*args, "--device", "apple-m3-ultra", "--devices", "2", "--search", "--format", "json")
        self.assertEqual(json.loads(out)["unknown_peaks"], ["matrix", "vector"])


if __name__ == "__main__":
    unittest.main()


class UnevenStages(unittest.TestCase):
    def test_pp_layers_every_schedule(self):
        # Llama 3.1 405B (126 layers) in 16 stages, the first and last one layer short (Megatron's
        # uneven first/last stages): 7 + 14 x 8 + 7 = 126; interleaved with v = 4 runs (every
        # stage holds at least 4 layers), and the stages hold the layers given.
        import json
        from support import run_cli
        sizes = "7," + "8," * 14 + "7"
        for schedule in ("1f1b", "interleaved", "zero-bubble", "dualpipe"):
            extra = ("--virtual-stages", "4") if schedule == "interleaved" else ()
            status, out, err = run_cli("train", "--model", "llama-3.1-405b", "--device", "h100-sxm", "--devices",
                                       "2048", "--tp", "8", "--pp", "16", "--seq", "8192", "--global-batch", "2048",
                                       "--schedule", schedule, *extra, "--pp-layers", sizes, "--zero", "1",
                                       "--recompute", "full", "--format", "json")
            with self.subTest(schedule=schedule):
                self.assertEqual(status, 0, err)
                stages = json.loads(out)["memory"]["stages"]
                self.assertEqual([s["layers"] for s in stages][:3], ["0-6", "7-14", "15-22"])
                self.assertEqual(stages[-1]["layers"], "119-125")


class Mxfp8Recipe(unittest.TestCase):
    def test_mxfp8_activations_run_at_the_fp8_peak_with_scales(self):
        # MXFP8 (E4M3 + one E8M0 byte per 32 values) computes at the FP8 peak: the same lower
        # bound; its activations carry 1/32 more bytes than FP8's where they are kept in the
        # activation format, so the memory grows by less than 1/32.
        import json
        from support import run_cli

        def run(act):
            status, out, err = run_cli("train", "--model", "llama-3.1-8b", "--device", "b200", "--devices", "8",
                                       "--seq", "8192", "--global-batch", "8", "--act-dtype", act, "--format", "json")
            self.assertEqual(status, 0, err)
            return json.loads(out)
        fp8, mx = run("fp8"), run("mxfp8")
        self.assertEqual(mx["lower_bound"]["step_s"], fp8["lower_bound"]["step_s"])
        a, b = (r["memory"]["stages"][0]["activations_bytes"] for r in (fp8, mx))
        self.assertGreater(b, a)
        self.assertLess(b, a * (1 + 1 / 32))


class DualPipeInFlight(unittest.TestCase):
    def test_head_and_logits_once_layers_p_plus_one(self):
        # DualPipe (DeepSeek-V3 report, Table 2): p + 1 micro-batches of layer activations on every
        # rank (rank i keeps p - i of its forward stage and i + 1 of its reverse one), but the head,
        # loss and fp32 logits sit on the last stage of a direction, which runs a micro-batch's
        # backward right after its forward: one in flight, as 1F1B's last stage.
        import json
        from support import run_cli
        status, out, err = run_cli("train", "--model", "qwen3-8b", "--device", "h100-sxm", "--devices", "4",
                                   "--pp", "4", "--seq", "4096", "--global-batch", "16", "--schedule", "dualpipe",
                                   "--format", "json")
        self.assertEqual(status, 0, err)
        stages = json.loads(out)["memory"]["stages"]
        last, first = stages[-1], stages[0]
        # the last rank: stage 3 forward (1 micro-batch, head and logits once) and stage 0 in reverse
        # (its 1F1B position 0: 4 micro-batches, with the embedding's); 36 layers, 9 per stage
        self.assertEqual(last["micro_batches_in_flight"], 1)
        self.assertGreater(last["embedding_head_loss_activations_bytes"], 0)
        self.assertEqual(last["layer_activations_bytes"], first["layer_activations_bytes"])
        self.assertEqual(last["reverse_stage_activations_bytes"],
                         4 * (first["layer_activations_bytes"] + first["embedding_head_loss_activations_bytes"]))
        self.assertEqual(last["activations_bytes"],
                         5 * last["layer_activations_bytes"] + last["embedding_head_loss_activations_bytes"]
                         + 4 * first["embedding_head_loss_activations_bytes"])

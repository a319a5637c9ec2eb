"""`train` acceptance (issue 9): the figures of points 1 and 3 that no other test fixed by hand.

Each expected value is derived in its comment from the model's shapes and the device data
(H100 SXM: NVLink 450 GB/s per direction, alpha 0.6 us), not read back from the tool.
"""

import unittest

from support import Workload, load_model, run_cli  # noqa: F401  (sets the path)

from infracalc.analyses import train, train_flops
from infracalc.comm import links
from infracalc.layout import Layout
from infracalc.load.hardware import load_device

# Qwen3-8B, one sequence of 8,192 tokens: model FLOPs 431,367,993,163,776 (test_train_flops)
QWEN_STEP_FLOPS = 431_367_993_163_776


def ideal_device(peak=10**15):
    """An H100 whose only limit is a bf16 matrix peak: a step is its matrix FLOPs / peak."""
    return load_device("h100-sxm").replace(matrix_flops_per_s=(("bf16", peak),), vector_flops_per_s=10**30,
                                           memory_bandwidth_bytes_per_s=10**30)


def run(model, device, lay, setup=None, *, seq, global_batch, micro_batch=1, train_tokens=None, **link_kw):
    w = Workload(batch=micro_batch, tokens=seq, logits="all")
    m = train.micro_batches(global_batch, micro_batch, lay.dp)
    return train.train(load_model(model), w, device, lay.replace(micro_batches=m), setup or train.Setup(),
                       global_batch=global_batch, links=links(device, **link_kw), train_tokens=train_tokens)


class TrainingTime(unittest.TestCase):
    def test_steps_days_and_device_hours(self):
        # Qwen3-8B on the 10^15 FLOP/s ideal device, one 8,192-token sequence per step: step =
        # 0.431367993163776 s. 1B tokens: ceil(10^9 / 8,192) = 122,071 steps (122,070 x 8,192 =
        # 999,997,440 < 10^9); time = 122,071 x 0.431367993163776 = 52,657.0725... s
        # = 0.609457... days; one device: device-hours = time / 3,600 = 14.62696... h.
        t = run("qwen3-8b", ideal_device(), Layout(), seq=8192, global_batch=1,
                train_tokens=10**9)["throughput"]["train"]
        self.assertEqual((t["tokens"], t["steps"]), (10**9, 122_071))
        seconds = 122_071 * QWEN_STEP_FLOPS / 10**15
        self.assertAlmostEqual(t["time_s"], seconds, places=4)
        self.assertAlmostEqual(t["days"], seconds / 86_400, places=6)
        self.assertAlmostEqual(t["device_hours"], seconds / 3_600, places=5)

    def test_device_hours_count_every_device(self):
        # 8 devices (dp 8): device-hours = steps x step time x 8 / 3,600 whatever the step time is.
        rec = run("qwen3-0.6b", load_device("h100-sxm"), Layout(dp=8), seq=2048, global_batch=64,
                  train_tokens=10**9)
        t = rec["throughput"]["train"]
        self.assertEqual(t["steps"], -(-10**9 // (64 * 2048)))        # 7,630 steps of 131,072 tokens
        self.assertAlmostEqual(t["device_hours"], t["steps"] * rec["time"]["step_s"] * 8 / 3600, places=5)

    def test_cli_reads_a_suffixed_budget(self):
        status, out, err = run_cli("train", "--model", "qwen3-0.6b", "--seq", "2048", "--train-tokens", "2.5T",
                                   "--format", "json")
        import json
        self.assertEqual((status, err), (0, ""))
        t = json.loads(out)["throughput"]["train"]
        self.assertEqual((t["tokens"], t["steps"]), (2_500_000_000_000, -(-2_500_000_000_000 // 2048)))


class Efficiencies(unittest.TestCase):
    def test_compute_efficiency_divides_the_peak(self):
        # Only the matrix peak costs time: at efficiency 0.5 the step doubles, 0.862735986327552 s,
        # and MFU is measured against the published peak: 0.5.
        rec = run("qwen3-8b", ideal_device(), Layout(), train.Setup(compute_efficiency=0.5), seq=8192,
                  global_batch=1)
        self.assertAlmostEqual(rec["time"]["step_s"], 2 * QWEN_STEP_FLOPS / 10**15, places=9)
        self.assertAlmostEqual(rec["throughput"]["mfu"], 0.5, places=6)

    def test_comm_efficiency_divides_the_link_bandwidth(self):
        # Qwen3-8B on 8 H100s, dp 8, ZeRO 0: the all-reduce of 16,381,470,720 B of bf16 gradients at
        # half of NVLink's 450 GB/s: 1.75 x S / 225e9 + 14 x 0.6 us = 0.127411438933 + 0.0000084 s.
        rec = run("qwen3-8b", load_device("h100-sxm"), Layout(dp=8), seq=4096, global_batch=8,
                  comm_efficiency=0.5)
        (c,) = [c for c in rec["time"]["collectives"] if c["dim"] == "dp"]
        self.assertEqual(c["bytes"], 16_381_470_720)
        self.assertAlmostEqual(c["time_s"], 1.75 * 16_381_470_720 / 225e9 + 14 * 0.6e-6, places=12)
        self.assertEqual(rec["inputs"]["links"]["up"]["efficiency"], 0.5)


class ContextParallelRing(unittest.TestCase):
    def test_kv_ring_bytes_and_passes(self):
        # Llama-3.1-8B (8 KV heads of 128, 32 layers), tp 2 + SP, one 8,192-token sequence. Each CP
        # rank holds 8,192 / cp tokens of K and V for its 8 / 2 = 4 KV heads, bf16:
        #   cp 2: 4,096 x 4 x 128 x 2 (K, V) x 2 B = 8,388,608 B, passed cp - 1 = 1 time per layer;
        #   cp 4: 2,048 x 4 x 128 x 2 x 2 B = 4,194,304 B, 3 times per layer.
        # Forward 32 (cp - 1) runs; backward twice that (K/V again, dK/dV back); each run
        # S / 450e9 + 0.6 us on NVLink (all 8 ranks in one node).
        for cp, size in ((2, 8_388_608), (4, 4_194_304)):
            rec = run("llama-3.1-8b", load_device("h100-sxm"), Layout(tp=2, cp=cp, sp=True), seq=8192,
                      global_batch=1)
            ring = {c["phase"]: c for c in rec["time"]["collectives"] if c["dim"] == "cp"}
            self.assertEqual(sorted(ring), ["backward", "forward"])
            one = size / 450e9 + 0.6e-6
            for phase, runs in (("forward", 32 * (cp - 1)), ("backward", 64 * (cp - 1))):
                c = ring[phase]
                self.assertEqual((c["kind"], c["bytes"], c["group"], c["tier"], c["count"]),
                                 ("p2p", size, cp, "up", runs), (cp, phase))
                self.assertAlmostEqual(c["time_s"], runs * one, places=12)


class MoeClosedForms(unittest.TestCase):
    def test_6nd_uses_the_active_parameters(self):
        # Qwen3-30B-A3B: 30,532,122,624 parameters; a token uses 8 of the 128 experts of each of the
        # 48 layers, each expert 3 x 768 x 2,048 = 4,718,592: active = 30,532,122,624
        # - 48 x 120 x 4,718,592 = 3,353,032,704 (the card's "3.3B activated").
        # 6ND on 4,096 tokens: 6 x 3,353,032,704 x 4,096 = 82,404,131,733,504; the all-parameter
        # row 6 x 30,532,122,624 x 4,096 = 750,357,445,607,424.
        arch = load_model("qwen3-30b-a3b")
        self.assertEqual(arch.active_params, 30_532_122_624 - 48 * 120 * 3 * 768 * 2048)
        st = train_flops.step(arch, Workload(tokens=4096, logits="all"))
        rows = {c.name: c for c in train_flops.conventions(arch, st, 1, 4096)}
        self.assertEqual(rows["6ND"].flops, 82_404_131_733_504)
        self.assertEqual(rows["6ND, all parameters"].flops, 750_357_445_607_424)
        self.assertAlmostEqual(rows["6ND"].ratio, 82_404_131_733_504 / st.model_flops)


class CsvRows(unittest.TestCase):
    def test_one_row_per_stage_with_its_memory_and_times(self):
        # Llama-3.1-70B (80 layers) on 64 H100s, tp 8 + SP, pp 4 interleaved, dp 2: four stages of 20
        # layers; each row is that stage's memory per device and one micro-batch's times, as in JSON.
        import csv
        import io
        import json
        argv = ("train", "--model", "llama-3.1-70b", "--devices", "64", "--tp", "8", "--pp", "4", "--sp",
                "--schedule", "interleaved", "--seq", "8192", "--global-batch", "512")
        _, out, _ = run_cli(*argv, "--format", "json")
        status, text, err = run_cli(*argv, "--format", "csv")
        self.assertEqual((status, err), (0, ""))
        rec, rows = json.loads(out), list(csv.DictReader(io.StringIO(text)))
        self.assertEqual([(r["stage"], r["layers"]) for r in rows],
                         [("0", "0-19"), ("1", "20-39"), ("2", "40-59"), ("3", "60-79")])
        for r, mem, t in zip(rows, rec["memory"]["stages"], rec["time"]["stages"]):
            parts = ("weights_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes")
            self.assertEqual(int(r["total_bytes"]), sum(int(r[k]) for k in parts))
            self.assertEqual(int(r["total_bytes"]), mem["total_bytes"])
            self.assertEqual(float(r["micro_batch_s"]), t["micro_batch_s"])
            self.assertEqual(float(r["step_s"]), rec["time"]["step_s"])
            self.assertEqual(float(r["mfu"]), rec["throughput"]["mfu"])
        # 1F1B-interleaved in flight, v = 2: stage i holds p + (p - 1)/v - i = 5.5, 4.5, 3.5, 2.5
        self.assertEqual([float(r["micro_batches_in_flight"]) for r in rows], [5.5, 4.5, 3.5, 2.5])

    def test_a_stage_that_does_not_fit_shows_its_shortfall(self):
        import csv
        import io
        status, text, _ = run_cli("train", "--model", "llama-3.1-70b", "--devices", "8", "--seq", "4096",
                                  "--format", "csv")
        (row,) = list(csv.DictReader(io.StringIO(text)))
        self.assertEqual((status, row["fits"]), (0, "False"))
        # 70,553,706,496 parameters x 16 B of model states alone exceed 80 GB
        self.assertLess(int(row["headroom_bytes"]), 0)
        self.assertGreaterEqual(int(row["total_bytes"]), 16 * 70_553_706_496)


class BindingStage(unittest.TestCase):
    def test_the_fullest_stage_binds_and_its_shortfall_is_reported(self):
        # Llama-3.1-70B, tp 2, pp 4 on 8 H100s (85,520,809,984 B physical). Stage 0 = layers 0-19 and
        # the embedding. Per layer q, o 8,192^2, k, v 8,192 x 1,024, MLP 3 x 8,192 x 28,672 = 855,638,016
        # matrix parameters, halved by TP, + two norms of 8,192 replicated = 427,835,392; x 20 =
        # 8,556,707,840; the embedding 128,256 x 8,192 / 2 = 525,336,576: 9,082,044,416 parameters,
        # 16 B each (bf16 weights and grads, AdamW fp32 x 3) = 145,312,710,656 B of model states.
        import json
        status, out, err = run_cli("train", "--model", "llama-3.1-70b", "--devices", "8", "--tp", "2", "--pp", "4",
                                   "--seq", "4096", "--global-batch", "8", "--format", "json")
        self.assertEqual((status, err), (0, ""))
        mem = json.loads(out)["memory"]
        st = mem["stages"]
        self.assertEqual((st[0]["layers"], st[0]["params"]), ("0-19", 9_082_044_416))
        self.assertEqual(st[0]["weights_bytes"] + st[0]["grads_bytes"] + st[0]["optimizer_bytes"],
                         16 * 9_082_044_416)
        # 1F1B, m = 8: stage i holds p - i = 4, 3, 2, 1 micro-batches of the same layer activations
        self.assertEqual([s["micro_batches_in_flight"] for s in st], [4, 3, 2, 1])
        totals = [s["total_bytes"] for s in st]
        self.assertEqual(mem["binding_stage"], totals.index(max(totals)))
        self.assertEqual(mem["binding_stage"], 0)
        self.assertEqual(mem["shortfall_bytes"], max(totals) - 85_520_809_984)
        self.assertFalse(mem["fits"])

    def test_tokens_per_second(self):
        # Ideal device, Qwen3-8B, one 8,192-token sequence per step of 0.431367993163776 s:
        # 8,192 / 0.431367993163776 = 18,990.8 tokens/s, the whole cluster of one device.
        th = run("qwen3-8b", ideal_device(), Layout(), seq=8192, global_batch=1)["throughput"]
        self.assertAlmostEqual(th["tokens_per_s_per_device"], 8192 * 10**15 / QWEN_STEP_FLOPS, places=5)
        self.assertAlmostEqual(th["tokens_per_s_cluster"], th["tokens_per_s_per_device"], places=5)
        # dp 4: the cluster's rate is 4 x the device's, both tokens per step / step time
        rec = run("qwen3-0.6b", load_device("h100-sxm"), Layout(dp=4), seq=2048, global_batch=8)
        th, step = rec["throughput"], rec["time"]["step_s"]
        self.assertAlmostEqual(th["tokens_per_s_cluster"], 8 * 2048 / step, places=4)
        self.assertAlmostEqual(th["tokens_per_s_per_device"], 8 * 2048 / step / 4, places=4)


class OverlappedGradientSync(unittest.TestCase):
    def test_overlap_hides_the_reduction_under_one_backward(self):
        # Qwen3-0.6B on 8 H100s, dp 8, ZeRO 0: the gradient all-reduce runs under one micro-batch's
        # backward; what sticks out is exposed: max(0, all-reduce - backward). ZeRO 1: the
        # reduce-scatter under the backward and the parameter all-gather under one forward.
        dev = load_device("h100-sxm")
        for zero in (0, 1):
            kw = dict(seq=1024, global_batch=16)
            plain = run("qwen3-0.6b", dev, Layout(dp=8), train.Setup(zero=zero), **kw)["time"]
            over = run("qwen3-0.6b", dev, Layout(dp=8), train.Setup(zero=zero, overlap_dp=True), **kw)["time"]
            st = over["stages"][0]
            hidden = {"all_gather": st["forward_compute_s"]}
            want = sum(max(0.0, c["time_s"] - hidden.get(c["kind"], st["backward_compute_s"]))
                       for c in over["collectives"] if c["dim"] == "dp")
            self.assertAlmostEqual(over["breakdown"]["dp_sync_exposed_s"], want, places=12)
            self.assertAlmostEqual(plain["breakdown"]["dp_sync_exposed_s"],
                                   sum(c["time_s"] for c in plain["collectives"] if c["dim"] == "dp"), places=12)
            self.assertGreater(want, 0)     # the sync outlasts one backward of this small model
            self.assertLess(over["step_s"], plain["step_s"])


if __name__ == "__main__":
    unittest.main()


class LinkOptions(unittest.TestCase):
    def test_train_takes_the_same_link_options_as_parallel(self):
        # one definition (cli/common.add_link_options): units accepted, negative refused
        base = ("train", "--model", "llama-3.1-8b", "--devices", "8", "--seq", "4096", "--global-batch", "64",
                "--format", "json")
        code, with_units, _ = run_cli(*base, "--alpha-up", "0.6us", "--link-bw-up", "450GB/s")
        self.assertEqual(code, 0)
        code, plain, _ = run_cli(*base, "--alpha-up", "6e-7s", "--link-bw-up", "450e9")
        self.assertEqual(code, 0)
        self.assertEqual(with_units, plain)
        # a time without its unit is refused, the fix in the message (0.6 would be 0.6 s)
        code, out, err = run_cli(*base, "--alpha-up", "0.6")
        self.assertEqual((code, out), (2, ""))
        self.assertIn("needs a unit, got '0.6': write 0.6ms or 0.6s", err)
        code, out, err = run_cli(*base, "--alpha-up", "-1")
        self.assertEqual((code, out, err.count("\n")), (2, "", 1))
        self.assertIn("--alpha-up", err)

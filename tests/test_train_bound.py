"""`train`'s lower bound on the step time and `validate`'s training-step cases:
hand-derived values, the bound never above the estimate, CI failing on a beaten bound."""

import json
import os
import shutil
import tempfile
import unittest

from support import Workload, load_model  # noqa: F401  (sets the path)

from infracalc.analyses import train, validate
from infracalc.comm import links
from infracalc.layout import Layout
from infracalc.load.hardware import load_device

NEMO_8B = "nemo2407-pretrain-llama3-8b-fp8-h100-sxm-x8"


def write_case(directory, case):
    with open(os.path.join(directory, case["id"] + ".json"), "w") as f:
        json.dump(case, f)


def record(model, device, lay, setup=None, *, seq, global_batch, act="bf16"):
    from infracalc.dtypes import dtype
    w = Workload(batch=1, tokens=seq, logits="all", act_dtype=dtype(act), kv_dtype=dtype(act))
    m = train.micro_batches(global_batch, 1, lay.dp)
    return train.train(load_model(model), w, device, lay.replace(micro_batches=m), setup or train.Setup(),
                       global_batch=global_batch, links=links(device))


class LowerBound(unittest.TestCase):
    def test_llama_8b_nemo_layout_by_hand(self):
        # Llama-3.1-8B, one sequence of 8,192 tokens, head on every position, causal:
        # GEMMs 2 x 218,103,808 params/layer x 32 layers + head 2 x 4096 x 128,256 =
        # 15,009,316,864 FLOPs/token x 8192 = 122,956,323,749,888; attention 33,558,528
        # causal pairs x 32 heads x 512 x 32 layers = 17,594,333,528,064; forward
        # 140,550,657,277,952, model FLOPs 3x = 421,651,971,833,856 per sequence.
        # 128 sequences on 8 devices: 6,746,431,549,341,696 per device at the H100's
        # fp8 peak 1,979 TFLOP/s = 3.409010... s (compute-bound).
        # Memory: 2 x 32 micro-batches x 16,060,522,496 weight bytes = 1,027,873,439,744;
        # 8,030,261,248 params x (2 x 12 + 2 + 2) B / 8 = 28,105,914,368; at 3.35 TB/s 0.3152 s.
        rec = record("llama-3.1-8b", load_device("h100-sxm"), Layout(dp=4, cp=2), seq=8192,
                     global_batch=128, act="fp8")
        b = rec["lower_bound"]
        self.assertEqual(b["model_flops_per_device"], 6_746_431_549_341_696)
        self.assertEqual(b["weight_read_bytes_per_device"], 1_027_873_439_744)
        self.assertEqual(b["optimizer_update_bytes_per_device"], 28_105_914_368)
        self.assertEqual(b["bound"], "compute")
        self.assertAlmostEqual(b["step_s"], 6_746_431_549_341_696 / 1979e12, places=9)
        self.assertAlmostEqual(b["memory_s"], (1_027_873_439_744 + 28_105_914_368) / 3.35e12, places=9)
        self.assertAlmostEqual(b["tokens_per_s_per_device"], 128 * 8192 / 8 / (6_746_431_549_341_696 / 1979e12),
                               places=4)

    def test_nvfp4_runs_the_linear_rows_at_the_fp4_peak(self):
        # The same Llama-3.1-8B step (6,746,431,549,341,696 model FLOPs per device, above) on a
        # GB300 in NVFP4: the bound takes every model FLOP at the FP4 peak 15,000 TFLOP/s =
        # 0.449762... s (compute-bound: the 1,027,873,439,744 + 28,105,914,368 B at 8 TB/s take
        # 0.132 s). The estimate's decoder linear rows run at that peak too (attention, the head and
        # the rest stay at BF16's in both formats): their 2 x 218,103,808 x 32 x 8,192 forward FLOPs
        # per sequence, 3x with the backward, on one CP rank of two = 171,523,814,572,032 per
        # micro-batch, save at most 171,523,814,572,032 x (1/5e15 - 1/15e15) = 22.870 ms against
        # FP8 (less where a row turns memory-bound).
        gb300 = load_device("gb300")
        rec = record("llama-3.1-8b", gb300, Layout(dp=4, cp=2), seq=8192, global_batch=128, act="nvfp4")
        b = rec["lower_bound"]
        self.assertEqual(b["model_flops_per_device"], 6_746_431_549_341_696)
        self.assertEqual(b["bound"], "compute")
        self.assertAlmostEqual(b["step_s"], 6_746_431_549_341_696 / 15000e12, places=9)
        fp8 = record("llama-3.1-8b", gb300, Layout(dp=4, cp=2), seq=8192, global_batch=128, act="fp8")
        saved = fp8["time"]["micro_batch_s"] - rec["time"]["micro_batch_s"]
        most = 171_523_814_572_032 * (1 / 5e15 - 1 / 15e15)
        self.assertLessEqual(saved, most * (1 + 1e-9))
        self.assertGreater(saved, 0.95 * most)
        # sub-byte formats other than NVFP4 stay refused
        from support import run_cli
        status, _, err = run_cli("train", "--model", "qwen3-8b", "--seq", "16", "--act-dtype", "mxfp4")
        self.assertEqual(status, 2)
        self.assertIn("nvfp4, got mxfp4", err)

    def test_memory_bound_by_hand(self):
        # Qwen3-8B (8,190,735,360 params), one device, one sequence, a matrix peak of
        # 10^30: memory decides: 2 x 16,381,470,720 + 8,190,735,360 x 28 =
        # 262,103,531,520 B at 3.35 TB/s.
        dev = load_device("h100-sxm").replace(matrix_flops_per_s=(("bf16", 10**30),))
        b = record("qwen3-8b", dev, Layout(), seq=8192, global_batch=1)["lower_bound"]
        self.assertEqual(b["bound"], "memory")
        self.assertEqual(b["weight_read_bytes_per_device"] + b["optimizer_update_bytes_per_device"],
                         262_103_531_520)
        self.assertAlmostEqual(b["step_s"], 262_103_531_520 / 3.35e12, places=12)

    def test_equals_the_estimate_when_only_the_peak_costs(self):
        # One device whose only limit is 1e15 FLOP/s: the estimate is the model FLOPs / peak
        # (test_train), and so is the bound: 0.431367993163776 s.
        dev = load_device("h100-sxm").replace(matrix_flops_per_s=(("bf16", 10**15),), vector_flops_per_s=10**30,
                                              memory_bandwidth_bytes_per_s=10**30)
        rec = record("qwen3-8b", dev, Layout(), seq=8192, global_batch=1)
        self.assertAlmostEqual(rec["lower_bound"]["step_s"], 0.431367993163776, places=12)
        self.assertAlmostEqual(rec["time"]["step_s"], rec["lower_bound"]["step_s"], places=9)

    def test_never_above_the_estimate(self):
        h100 = load_device("h100-sxm")
        for model, lay, s in (("llama-3.1-8b", Layout(dp=8), None),
                              ("llama-3.1-8b", Layout(tp=2, pp=2, dp=2, sp=True), train.Setup(recompute="full")),
                              ("llama-3.1-8b", Layout(pp=4, dp=2), train.Setup(schedule="interleaved", chunks=2)),
                              ("qwen3-30b-a3b", Layout(dp=8, ep=8), train.Setup(zero=1))):
            with self.subTest(model=model, layout=lay.label()):
                rec = record(model, h100, lay, s, seq=4096, global_batch=16)
                self.assertLessEqual(rec["lower_bound"]["step_s"], rec["time"]["step_s"])
                self.assertGreater(rec["lower_bound"]["step_s"], 0)


class TrainingCases(unittest.TestCase):
    def test_nemo_8b_case(self):
        # measured 12,036 tokens/s/GPU against the bound 1,048,576 / 3.409010 s / 8.
        row = validate.validate(NEMO_8B)["cases"][0]
        bound = 128 * 8192 / 8 / (6_746_431_549_341_696 / 1979e12)
        self.assertAlmostEqual(row["bound"], bound, places=4)
        self.assertAlmostEqual(row["ratio"], 12036 / bound, places=9)
        self.assertEqual(row["status"], "ok")

    def test_every_training_case_is_evaluated_and_within_its_bound(self):
        for path in validate.case_paths():
            case = validate.load_case(path)
            if case["kind"] != "training-step":
                continue
            with self.subTest(case=case["id"]):
                row = validate.evaluate(case)
                self.assertIsNone(row["not_evaluated"])
                self.assertLess(row["ratio"], 1)

    def test_megatron_flops_unit_gives_the_same_efficiency(self):
        # GPT3-175B on 128 H100s (NeMo): 726 tokens/s/GPU is a step of 256 x 2048 tokens in
        # 524,288 / (726 x 128) s. Megatron's eq. 3 for B 256, s 2048, l 96, h 12288, V 50257:
        # 4 (24 B s l h^2 + 4 B s^2 l h) + 6 B s h V; the same step as FLOP/s per GPU is
        # eq3 x 726 x 128 / 524,288 / 128. Compared with eq3 / bound time / 128 it must give
        # the same ratio as the tokens/s figure.
        cid = "nemo2407-pretrain-gpt3-175b-fp8-h100-sxm-x128"
        with open(os.path.join(validate.VALIDATION_DIR, cid + ".json")) as f:
            case = json.load(f)
        B, s, l, h, V = 256, 2048, 96, 12288, 50257
        eq3 = 4 * (24 * B * s * l * h * h + 4 * B * s * s * l * h) + 6 * B * s * h * V
        self.assertEqual(eq3, 751_792_007_499_743_232)   # 1.434e12 FLOPs per token
        tokens_row = validate.validate(cid)["cases"][0]
        with tempfile.TemporaryDirectory() as tmp:
            case["measured"] = {"value": eq3 * 726 / (B * s), "unit": "megatron_eq3_flops_per_s_per_device"}
            write_case(tmp, case)
            shutil.copy(os.path.join(validate.VALIDATION_DIR, case["setup"]["model"]), tmp)
            row = validate.validate(directory=tmp)["cases"][0]
        self.assertAlmostEqual(row["ratio"], tokens_row["ratio"], places=12)

    def test_a_beaten_bound_fails_and_a_step_time_is_compared_inverted(self):
        with open(os.path.join(validate.VALIDATION_DIR, NEMO_8B + ".json")) as f:
            case = json.load(f)
        with tempfile.TemporaryDirectory() as tmp:
            case["measured"]["value"] = 40000     # above the 38,448.7 bound
            write_case(tmp, case)
            rec = validate.validate(directory=tmp)
            self.assertEqual(rec["failures"], [NEMO_8B])
            self.assertEqual(rec["cases"][0]["status"], "EXCEEDS BOUND")
        with tempfile.TemporaryDirectory() as tmp:
            case["measured"] = {"value": 6.82, "unit": "step_time_s"}   # 2x the 3.409 s bound
            write_case(tmp, case)
            row = validate.validate(directory=tmp)["cases"][0]
            self.assertAlmostEqual(row["ratio"], (6_746_431_549_341_696 / 1979e12) / 6.82, places=9)
            self.assertEqual(row["status"], "ok")


if __name__ == "__main__":
    unittest.main()

"""The planner's questions print the predicted figure on their first screen, beside the bound
(issue 18): the verdict block of `decode`, `parallel` and `train` carries it, and the
per-operator tables of `forward` and `decode` show bound / predicted per operator."""

import unittest

from support import run_cli  # noqa: F401  (sets the path)

from infracalc.render import decode as decode_render  # noqa: E402
from infracalc.render import parallel as parallel_render  # noqa: E402

FIRST_SCREEN = 40


def first_block(out):
    """The verdict block: the lines from the bold headline to the first blank line after it."""
    lines = out.splitlines()[:FIRST_SCREEN]
    start = next(i for i, x in enumerate(lines) if x.startswith("**"))
    end = lines.index("", start)
    return "\n".join(lines[start:end])


class DecodeStream(unittest.TestCase):
    def test_stream_line_has_the_prediction_beside_the_bound(self):
        code, out, err = run_cli("decode", "--model", "qwen3-8b", "--device", "h100-sxm", "--input-len", "1024",
                                 "--output-len", "128", "--batch", "8")
        self.assertEqual(code, 0, err)
        block = " ".join(first_block(out).split())
        self.assertRegex(block, r"Serving a stream \(continuous batching\): at most [\d,.]+ output tokens/s "
                                r"\([a-z]+-bound, [\d,.]+ requests in flight\), [\d,.]+ predicted "
                                r"\(a well-tuned engine at [\d,]+ requests in flight\)")

    def test_text_of_a_prediction(self):
        p = {"output_tokens_per_s": 2826.14, "concurrency": 1207}
        self.assertEqual(decode_render.predicted_stream_text(p),
                         ", 2,826.1 predicted (a well-tuned engine at 1,207 requests in flight)")
        self.assertEqual(decode_render.predicted_stream_text(None), "")


class ParallelStream(unittest.TestCase):
    def test_stream_line_has_the_prediction_beside_the_bound(self):
        code, out, err = run_cli("parallel", "--model", "qwen3-8b", "--device", "h100-sxm", "--tp", "2",
                                 "--input-len", "1024", "--output-len", "128")
        self.assertEqual(code, 0, err)
        block = " ".join(first_block(out).split())
        self.assertRegex(block, r"Serving a stream \(continuous batching\): at most [\d,.]+ output tokens/s per "
                                r"device \(upper bound\), [\d,.]+ predicted \(a well-tuned engine at [\d,]+ "
                                r"requests in flight per replica\)")

    def test_line_reads_the_records_per_device_figures(self):
        s = {"output_tokens_per_s_per_device": 1254.04,
             "predicted": {"output_tokens_per_s_per_device": 458.12, "concurrency": 276}}
        self.assertEqual(parallel_render._stream_line(s), [
            "Serving a stream (continuous batching): at most 1,254.0 output tokens/s per device (upper bound), "
            "458.1 predicted (a well-tuned engine at 276 requests in flight per replica)"])
        self.assertEqual(parallel_render._stream_line(dict(s, predicted=None)), [
            "Serving a stream (continuous batching): at most 1,254.0 output tokens/s per device (upper bound)"])
        self.assertEqual(parallel_render._stream_line(None), [])


class OperatorEfficiency(unittest.TestCase):
    """forward's and decode's operator tables print bound / predicted, the record's
    predicted_efficiency (time_s / predicted_time_s), to two decimals."""

    def _column(self, out, name):
        lines = out.splitlines()
        at = next(i for i, x in enumerate(lines) if x.startswith("| operator ") and "bound / predicted" in x)
        head = [c.strip() for c in lines[at].strip("|").split("|")]
        col = head.index("bound / predicted")
        row = next(x for x in lines[at + 2:] if x.startswith(f"| {name} "))
        return row.strip("|").split("|")[col].strip()

    def test_forward(self):
        import json
        args = ("forward", "--model", "qwen3-8b", "--device", "h100-sxm", "--tokens", "2048", "--full")
        code, out, err = run_cli(*args)
        self.assertEqual(code, 0, err)
        code, js, err = run_cli(*args[:-1], "--format", "json")
        op = next(o for o in json.loads(js)["operators"] if o["name"] == "gate_proj")
        self.assertAlmostEqual(op["predicted_efficiency"], op["time_s"] / op["predicted_time_s"])
        self.assertEqual(self._column(out, "gate_proj"), f"{op['predicted_efficiency']:.2f}")

    def test_decode(self):
        import json
        args = ("decode", "--model", "qwen3-8b", "--device", "h100-sxm", "--input-len", "1024",
                "--output-len", "64", "--batch", "4", "--full")
        code, out, err = run_cli(*args)
        self.assertEqual(code, 0, err)
        code, js, err = run_cli(*args[:-1], "--format", "json")
        rec = json.loads(js)
        op = next(o for o in rec["operators"] if o["name"] == "down_proj")
        self.assertEqual(self._column(out, "down_proj"), f"{op['predicted_efficiency']:.2f}")
        self.assertIn("- Predicted at achievable fractions: matrix ", out)


class TrainPerPart(unittest.TestCase):
    """train's predicted step per part and per stage: the StepTime at achievable rates
    (efficiency.training.predicted_step, called here on its own) times the fitted factor, in
    JSON, Markdown (beside the estimate, with estimate / predicted) and CSV."""

    ARGS = ("train", "--model", "qwen3-8b", "--device", "h100-sxm", "--devices", "16", "--pp", "2",
            "--seq", "4096", "--global-batch", "64", "--zero", "1")

    def test_parts_are_the_factor_times_the_step_at_achievable_rates(self):
        import json
        from infracalc.analyses.efficiency.training import FITTED
        code, out, err = run_cli(*self.ARGS, "--format", "json")
        self.assertEqual(code, 0, err)
        rec = json.loads(out)
        pred, est = rec["predicted"], rec["time"]
        self.assertAlmostEqual(sum(pred["breakdown"].values()), pred["step_s"], places=9)
        # every part is k x the part at achievable rates, k = the fitted factor; the estimate's
        # compute over the predicted compute is therefore (MAMF fraction) / factor on a compute-bound step
        from infracalc.analyses.efficiency import matmul
        frac = matmul.matmul_fraction("h100-sxm", "bf16", 989.5e12)[0]
        ratio = est["breakdown"]["compute_s"] / pred["breakdown"]["compute_s"]
        self.assertLess(ratio, 1.0)
        self.assertGreater(ratio, frac / FITTED["all"] * 0.9)
        self.assertLessEqual(ratio, frac / FITTED["all"] * 1.0000001 / 0.9)
        self.assertEqual([s["stage"] for s in pred["stages"]], [0, 1])
        for p, e in zip(pred["stages"], est["stages"]):
            self.assertGreater(p["micro_batch_s"], e["micro_batch_s"])

    def test_markdown_and_csv_carry_them(self):
        import csv
        import io
        import json
        code, js, err = run_cli(*self.ARGS, "--format", "json")
        pred = json.loads(js)["predicted"]
        code, out, err = run_cli(*self.ARGS, "--full")
        self.assertEqual(code, 0, err)
        self.assertIn("| part | time | share | predicted | estimate / predicted |", out)
        self.assertIn(f"**{self._s(pred['step_s'])}**", out)
        self.assertIn("| stage | fwd compute | bwd compute | recompute | fwd comm | bwd comm | recompute comm | "
                      "micro-batch | predicted | estimate / predicted |", out)
        code, out, err = run_cli(*self.ARGS, "--format", "csv")
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual([float(r["predicted_micro_batch_s"]) for r in rows],
                         [s["micro_batch_s"] for s in pred["stages"]])
        self.assertEqual({float(r["predicted_step_s"]) for r in rows}, {pred["step_s"]})
        self.assertTrue(all(float(r["lower_bound_step_s"]) > 0 for r in rows))

    @staticmethod
    def _s(x):
        from infracalc.render import units as u
        return u.seconds(x)


class ServeSchedulers(unittest.TestCase):
    """`serve` without an SLO: the tuned engine's predicted steady state on the first screen,
    the same figure `decode` prints for one device (its serving section's)."""

    def test_one_device_is_decodes_steady_state(self):
        import json
        common = ("--model", "qwen3-8b", "--device", "h100-sxm", "--input-len", "2048", "--output-len", "256")
        code, out, err = run_cli("serve", *common, "--format", "json")
        self.assertEqual(code, 0, err)
        p = json.loads(out)["predicted"]
        code, out, err = run_cli("decode", *common, "--format", "json")
        d = json.loads(out)["serving"]["predicted"]
        self.assertEqual(p["concurrency"], d["concurrency"])
        self.assertAlmostEqual(p["output_tokens_per_s_cluster"], d["output_tokens_per_s"], delta=1e-9)
        self.assertAlmostEqual(p["requests_per_s"] * 256, p["output_tokens_per_s_cluster"], delta=1e-9)
        code, out, err = run_cli("serve", *common)
        block = " ".join(first_block(out).split())
        self.assertIn(f"Predicted (a well-tuned engine, not a bound): {p['requests_per_s']:,.3f} requests/s, "
                      f"{p['output_tokens_per_s_cluster']:,.3f} output tokens/s at {p['concurrency']:,} requests "
                      "in flight", block)

    def test_none_with_a_prefix_cache(self):
        import json
        code, out, err = run_cli("serve", "--model", "qwen3-8b", "--device", "h100-sxm", "--input-len", "2048",
                                 "--output-len", "256", "--cached-prefix", "1024", "--format", "json")
        self.assertEqual(code, 0, err)
        self.assertIsNone(json.loads(out)["predicted"])


class ValidateRecipes(unittest.TestCase):
    """validate states, per training publisher, the overlaps its recipe runs (issue 18 item 5:
    'stated per recipe'), as the predictor takes them (validate_predict.predict_training: a
    flag the recipe leaves out is off)."""

    CASES = {"NVIDIA": "nemo2407-pretrain-llama3-70b-fp8-h100-sxm-x64",
             "PyTorch (Meta)": "torchtitan-llama3-8b-bf16-a100-x64",
             "DeepSeek": "deepseek-v3-report-pretrain-h800-x2048"}

    def test_table_and_record(self):
        import json
        from infracalc.analyses.validate_predict import TRAINING_RECIPES
        self.assertEqual(sorted(self.CASES), sorted(TRAINING_RECIPES))
        recs = {}
        for name, case in self.CASES.items():   # one case each: validate states its publisher's recipe
            code, out, err = run_cli("validate", "--case", case, "--format", "json")
            self.assertEqual(code, 0, err)
            (recs[name],) = json.loads(out)["training_recipes"]
            self.assertEqual(recs[name]["publisher"], name)
        self.assertEqual((recs["NVIDIA"]["overlap_tp"], recs["NVIDIA"]["overlap_pp"]), (True, True))
        self.assertEqual((recs["PyTorch (Meta)"]["zero"], recs["PyTorch (Meta)"]["overlap_tp"]), (3, False))
        self.assertEqual((recs["DeepSeek"]["overlap_ep"], recs["DeepSeek"]["schedule"]), (True, "dualpipe"))
        self.assertFalse(recs["DeepSeek"]["overlap_pp"])   # absent from its recipe: off, as predicted
        code, out, err = run_cli("validate", "--case", self.CASES["NVIDIA"], "--full")
        self.assertIn("## Training recipes the prediction runs, per publisher", out)
        self.assertIn("| NVIDIA | 1 | on | on | off | on | none |", out)


class PredictionOptionErrors(unittest.TestCase):
    """An option only another question reads is refused, one line, exit 2, never silently ignored."""

    CASES = (
        (("serve", "--model", "qwen3-8b", "--input-len", "2048", "--output-len", "256", "--slo-figure", "estimate"),
         "--slo-figure is read only with one of --ttft-limit, --tpot-limit"),
        (("serve", "--model", "qwen3-8b", "--input-len", "2048", "--output-len", "256", "--max-devices", "8"),
         "--max-devices is read only with one of --ttft-limit, --tpot-limit"),
        (("parallel", "--model", "qwen3-8b", "--input-len", "128", "--output-len", "8", "--objective", "predicted"),
         "--objective applies to --search"),
        (("parallel", "--model", "qwen3-8b", "--input-len", "128", "--output-len", "8", "--top", "3"),
         "--top applies to --search"),
        (("train", "--model", "qwen3-8b", "--seq", "1024", "--objective", "predicted"),
         "--objective applies to --search"),
        (("train", "--model", "qwen3-8b", "--seq", "1024", "--cp-values", "1,2"), "--cp-values applies to --search"),
        (("train", "--model", "qwen3-8b", "--seq", "1024", "--ep-dispatcher", "deepep"),
         "--ep-dispatcher: qwen3-8b has no routed experts"),
        (("train", "--model", "qwen3-8b", "--seq", "1024", "--ep-dispatcher", "deep"),
         "invalid choice: 'deep' (choose from 'alltoall', 'hybridep', 'deepep')"),
    )

    def test_refused(self):
        for argv, text in self.CASES:
            with self.subTest(argv=" ".join(argv)):
                code, out, err = run_cli(*argv)
                self.assertEqual(code, 2)
                self.assertEqual(out, "")
                self.assertIn(text, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)

    def test_search_defaults_unchanged(self):
        import json
        code, out, err = run_cli("train", "--model", "qwen3-8b", "--device", "h100-sxm", "--devices", "8",
                                 "--seq", "1024", "--global-batch", "64", "--search", "--format", "json")
        self.assertEqual(code, 0, err)
        rec = json.loads(out)
        self.assertEqual((rec["inputs"]["objective"], len(rec["top"]) <= 10), ("step", True))


class ServeCsv(unittest.TestCase):
    """serve --format csv: the schedulers (estimate, bound and a predicted row) or the SLO sizing
    (the predicted figures per count); other questions refuse it in one line."""

    def test_schedulers(self):
        import csv
        import io
        import json
        common = ("serve", "--model", "qwen3-8b", "--device", "h100-sxm", "--input-len", "2048", "--output-len", "256")
        code, out, err = run_cli(*common, "--format", "csv")
        self.assertEqual(code, 0, err)
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual([(r["policy"], r["figure"]) for r in rows][-1], ("tuned engine", "predicted"))
        pred = json.loads(run_cli(*common, "--format", "json")[1])["predicted"]
        self.assertEqual(float(rows[-1]["output_tokens_per_s"]), pred["output_tokens_per_s_cluster"])
        self.assertEqual({r["figure"] for r in rows}, {"estimate", "lower_bound", "predicted"})

    def test_sizing(self):
        import csv
        import io
        code, out, err = run_cli("serve", "--model", "qwen3-8b", "--device", "h100-sxm", "--input-len", "2048",
                                 "--output-len", "256", "--tpot-limit", "50ms", "--format", "csv")
        self.assertEqual(code, 0, err)
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertIn("predicted_tpot_s", rows[0])
        self.assertTrue(float(rows[-1]["predicted_tpot_s"]) <= 0.05)

    def test_other_questions_refuse(self):
        code, out, err = run_cli("serve", "--model", "qwen3-8b", "--device", "h100-sxm", "--input-len", "2048",
                                 "--output-len", "256", "--draft-model", "qwen3-0.6b", "--acceptance", "0.8",
                                 "--format", "csv")
        self.assertEqual((code, out), (2, ""))
        self.assertIn("--format csv: this serve question has no table form", err)


class KernelCommands(unittest.TestCase):
    """gemm and attention print the predicted kernel time beside the time bound (they printed none)."""

    def test_gemm_against_deepgemm(self):
        # deepseek-ai/DeepGEMM README, normal dense GEMMs on H800 (FP8): M 64, N 7168, K 16384 at
        # 336 TFLOPS = 2 x 64 x 7168 x 16384 / 336e12 = 44.74 us; the prediction streams the FP8
        # weights at FlashMLA's 3,000 GB/s plus one kernel (tests/test_efficiency.DeepGemmTable)
        import json
        code, out, err = run_cli("gemm", "--m", "64", "--k", "16384", "--n", "7168", "--device", "h800",
                                 "--compute-dtype", "fp8", "--input-dtype", "fp8", "--weight-dtype", "fp8",
                                 "--format", "json")
        self.assertEqual(code, 0, err)
        d = json.loads(out)["devices"][0]
        self.assertAlmostEqual(d["predicted_time_s"] / (2 * 64 * 7168 * 16384 / 336e12), 1.0, delta=0.05)
        # by hand: memory-bound (15.03 GFLOP at 0.7087 x 1979 TFLOP/s = 10.7 us < the stream), FP8 bytes
        # 16384 x 7168 weights + 64 x 16384 in + 64 x 7168 out = 118,947,840 B at 3,000 GB/s = 39.64928 us,
        # plus one kernel's fixed cost
        self.assertAlmostEqual(d["predicted_time_s"], 118_947_840 / 3000e9 + d["prediction"]["kernel_s"], places=15)
        self.assertEqual(16384 * 7168 + 64 * 16384 + 64 * 7168, 118_947_840)
        self.assertGreaterEqual(d["predicted_time_s"], d["time_s"])
        self.assertAlmostEqual(d["predicted_efficiency"], d["time_s"] / d["predicted_time_s"])
        self.assertEqual(d["prediction"]["fractions"][1]["rate"], "hbm")

    def test_attention_and_unknown_devices(self):
        import json
        code, out, err = run_cli("attention", "--queries", "4096", "--keys", "4096", "--heads", "16",
                                 "--head-dim", "128", "--device", "h100-sxm", "--device", "apple-m4-max",
                                 "--format", "json")
        self.assertEqual(code, 0, err)
        h100, apple = json.loads(out)["devices"]
        self.assertGreater(h100["predicted_time_s"], h100["time_s"])
        self.assertIsNone(apple.get("predicted_time_s"))
        code, out, err = run_cli("attention", "--queries", "4096", "--keys", "4096", "--heads", "16",
                                 "--head-dim", "128", "--device", "h100-sxm", "--full")
        self.assertIn("| predicted | bound / predicted |", out)


class ParallelSearchFirstScreen(unittest.TestCase):
    def test_throughput_search_shows_the_best_layouts_prediction(self):
        import json
        args = ("parallel", "--model", "qwen3-8b", "--device", "h100-sxm", "--devices", "4", "--search",
                "--input-len", "1024", "--output-len", "128")
        rec = json.loads(run_cli(*args, "--format", "json")[1])
        p = rec["best_predicted"]
        # the same figure `parallel` prints for that one layout (its serving section's)
        lay = rec["top"][0]["layout"]
        one = json.loads(run_cli("parallel", "--model", "qwen3-8b", "--device", "h100-sxm", "--tp", str(lay["tp"]),
                                 "--pp", str(lay["pp"]), "--dp", str(lay["dp"]), "--input-len", "1024",
                                 "--output-len", "128", "--format", "json")[1])["serving"]["predicted"]
        self.assertAlmostEqual(p["output_tokens_per_s_per_device"], one["output_tokens_per_s_per_device"])
        code, out, err = run_cli(*args)
        self.assertIn(f"{p['output_tokens_per_s_per_device']:,.1f} output tokens/s per device at "
                      f"{p['concurrency']:,} requests in flight", " ".join(first_block(out).split()))


class DecodeSweep(unittest.TestCase):
    def test_rows_equal_decode_at_each_batch(self):
        import json
        common = ("--model", "qwen3-8b", "--device", "h100-sxm", "--input-len", "1024", "--output-len", "64")
        rows = json.loads(run_cli("decode", *common, "--batch-sweep", "--format", "json")[1])["rows"]
        for r in (rows[0], rows[3], rows[-1]):
            with self.subTest(batch=r["batch"]):
                one = json.loads(run_cli("decode", *common, "--batch", str(r["batch"]), "--format", "json")[1])
                self.assertAlmostEqual(r["predicted_tpot_mean_s"], one["latency"]["predicted_tpot_mean_s"],
                                       delta=1e-12)
                self.assertAlmostEqual(r["predicted_decode_tokens_per_s_aggregate"],
                                       r["batch"] / r["predicted_tpot_mean_s"])
        code, out, err = run_cli("decode", *common, "--batch-sweep")
        self.assertIn(f"{rows[-1]['predicted_decode_tokens_per_s_aggregate']:,.1f} predicted", first_block(out))


if __name__ == "__main__":
    unittest.main()

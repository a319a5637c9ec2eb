"""The output contract of `forward`, `models` and `hardware` on every bundled
model: JSON with a schema version, the inputs echoed, finite numbers and
integer exact quantities; a Markdown header naming model, device, formats and
conventions; CSV with one row per operator; byte-identical reruns; --output
writing the file and printing nothing; a snapshot directory as --model."""

import csv
import io
import json
import os
import shutil
import tempfile
import unittest

from support import CALC

from infracalc.load.models import bundled_ids
from test_input_validation import run

EXACT_SUFFIXES = ("_bytes", "_flops", "params")


def strict_json(text):
    """json.loads that refuses NaN and Infinity (Python's parser accepts them)."""
    def refuse(name):
        raise AssertionError(f"{name} in JSON output")
    return json.loads(text, parse_constant=refuse)


def leaves(value, key=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v, key)
    else:
        yield key, value


class ForwardOnEveryModel(unittest.TestCase):
    ARGS = ("--batch", "2", "--tokens", "3", "--history", "5", "--logits", "all", "--device", "tpu-v5e",
            "--kv-dtype", "fp8", "--weight-dtype", "int4-g128")

    def render(self, model, fmt):
        status, out, err = run("forward", "--model", model, *self.ARGS, "--format", fmt)
        self.assertEqual((status, err), (0, ""), model)
        return out

    def test_every_bundled_model(self):
        for model in bundled_ids():
            with self.subTest(model=model):
                rec = strict_json(self.render(model, "json"))
                self.assertEqual(rec["schema_version"], 1)
                self.assertEqual((rec["model"]["id"], rec["device"]["id"]), (model, "tpu-v5e"))
                i = rec["inputs"]
                self.assertEqual((i["batch"], i["tokens"], i["history"], i["logits"], i["kv_dtype"],
                                  i["weight_dtype"]), (2, 3, 5, "all", "fp8", "int4-g128"))
                parts = rec["model"].pop("parts_not_counted", [])   # params may be unknown (None)
                self.assertTrue(all(p["params"] is None or type(p["params"]) is int for p in parts))
                for key, value in leaves(rec):
                    if key.endswith(EXACT_SUFFIXES):
                        self.assertIs(type(value), int, key)
                    if key.endswith("predicted_time_s"):   # no prediction without both peaks
                        self.assertIs(value, None, key)
                    elif key.endswith("time_s") and not key.endswith("compute_time_s"):
                        self.assertIsInstance(value, float, key)
                # a compute time is unknown (null, as in gemm) exactly where the bound says so:
                # the TPU v5e publishes no vector peak
                for o in rec["operators"]:
                    self.assertEqual(o["compute_time_s"] is None,
                                     o["bound"] == "memory; compute unknown", o["name"])
                rows = list(csv.DictReader(io.StringIO(self.render(model, "csv"))))
                self.assertEqual([r["name"] for r in rows], [o["name"] for o in rec["operators"]])
                md = self.render(model, "md")
                for fragment in (f"# forward: {model} on tpu-v5e", "weights int4", "KV cache fp8",
                                 "activations bf16", "## Conventions", "A multiply-add is 2 FLOPs"):
                    self.assertIn(fragment, md)
                self.assertEqual(self.render(model, "md"), md)   # byte-identical rerun


class Header(unittest.TestCase):
    def workload_line(self, *argv):
        status, out, err = run("forward", *argv)
        self.assertEqual(status, 0, err)
        (line,) = [x for x in out.splitlines() if x.startswith("- Workload:")]
        return line

    def test_names_the_options_that_change_the_figures(self):
        line = self.workload_line("--model", "deepseek-v3", "--routing", "balanced", "--mla", "naive")
        self.assertIn("MoE routing `balanced`; MLA path `naive`", line)
        self.assertIn("1 new token per request", line)
        line = self.workload_line("--model", "qwen3-next-80b-a3b", "--tokens", "2", "--delta-form", "recurrent")
        self.assertIn("MoE routing `uniform`; linear-attention form `recurrent`", line)
        line = self.workload_line("--model", "qwen3-8b", "--tokens", "2")
        self.assertIn("2 new tokens per request", line)
        for option in ("routing", "MLA", "DeltaNet"):
            self.assertNotIn(option, line)


    def test_context_beyond_the_model_maximum_is_noted(self):
        # Qwen3-8B: max_position_embeddings 40,960; history 40,959 + 1 token fits, 40,960 + 1 not.
        for history, noted in (("40959", False), ("40960", True)):
            status, out, _ = run("forward", "--model", "qwen3-8b", "--history", history, "--format", "json")
            rec = json.loads(out)
            self.assertEqual("notes" in rec, noted, history)
            if noted:
                self.assertIn("40,961 per request exceeds the model's maximum context", rec["notes"][0])
        status, out, _ = run("forward", "--model", "qwen3-8b", "--history", "40960")
        self.assertIn("- Note: history + tokens = 40,961", out)


class Files(unittest.TestCase):
    def test_output_writes_the_file_and_prints_nothing(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        for argv in (["forward", "--model", "qwen3-0.6b"], ["models"], ["hardware"]):
            for fmt in ("md", "json", "csv"):
                with self.subTest(argv=argv[0], fmt=fmt):
                    path = os.path.join(folder, f"{argv[0]}.{fmt}")
                    status, out, err = run(*argv, "--format", fmt, "--output", path)
                    self.assertEqual((status, out, err), (0, "", ""))
                    with open(path, encoding="utf-8") as f:
                        self.assertEqual(f.read(), run(*argv, "--format", fmt)[1])

    def test_unwritable_output_is_one_line(self):
        status, out, err = run("hardware", "--output", os.path.join(CALC, "no-such-dir", "x.md"))
        self.assertEqual((status, out), (2, ""))
        self.assertEqual(len(err.splitlines()), 1)
        self.assertIn("cannot write --output", err)

    def test_snapshot_directory_as_model(self):
        # A Hugging Face snapshot directory holds config.json; the directory names the model.
        folder = os.path.join(tempfile.mkdtemp(), "Qwen3-0.6B")
        os.mkdir(folder)
        self.addCleanup(shutil.rmtree, os.path.dirname(folder))
        shutil.copy(os.path.join(CALC, "models", "qwen3-0.6b.json"), os.path.join(folder, "config.json"))
        status, out, err = run("models", "--model", folder, "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["model"]["id"], "Qwen3-0.6B")
        self.assertEqual(json.loads(out)["model"]["params"], 596_049_920)
        status, out, err = run("models", "--model", os.path.dirname(folder))
        self.assertEqual(status, 2)
        self.assertIn("is a directory without a config.json", err)


class HumanUnits(unittest.TestCase):
    def test_thousands_separators(self):
        # Binary units run up to 1,023.999 before the next prefix (1,002 MiB is a Llama-3.1-8B
        # head: 4096 x 128,256 x 2 B = 1,050,673,152 B = 1,002 x 2^20); seconds grow unbounded.
        from infracalc.render import units as u
        self.assertEqual(u.nbytes(4096 * 128_256 * 2), "1,002.000 MiB")
        self.assertEqual(u.nbytes(1023 * 2**40), "1,023.000 TiB")
        self.assertEqual(u.seconds(12_345.5), "12,345.500 s")
        self.assertEqual(u.flops(2 * 10**21), "2,000.000 EFLOP")
        self.assertEqual(u.nbytes(512), "512.000 B")


if __name__ == "__main__":
    unittest.main()

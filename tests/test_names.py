"""The names users already type: vLLM/SGLang/Megatron-LM flags, Hugging Face dtype names and
model ids, a local Hugging Face cache, device family names; and the papercuts: no prefix
matching, --version, the format from --output's extension, --devices from the layout,
--scenario files, reproduce never writing inside an installed package."""

import json
import os
import tempfile
import unittest
from unittest import mock

from support import ROOT, run_cli


def same(test, a, b):
    """Two argument vectors give the same successful output."""
    sa, oa, ea = run_cli(*a)
    sb, ob, eb = run_cli(*b)
    test.assertEqual((sa, ea), (0, ""), a)
    test.assertEqual((sb, eb), (0, ""), b)
    test.assertEqual(oa, ob)


KV = ("kv", "--model", "llama-3.1-8b", "--format", "json")
PAR = ("parallel", "--model", "llama-3.1-8b", "--input-len", "128", "--output-len", "8", "--format", "json")
TRAIN = ("train", "--model", "qwen3-0.6b", "--devices", "8", "--format", "json")


class FlagAliases(unittest.TestCase):
    def test_vllm_flags(self):
        same(self, KV + ("--tensor-parallel-size", "2", "--pipeline-parallel-size", "2",
                         "--max-model-len", "32K", "--kv-cache-dtype", "fp8_e4m3"),
             KV + ("--tp", "2", "--pp", "2", "--context", "32768", "--kv-dtype", "fp8"))
        same(self, PAR + ("-tp", "2", "-dp", "2"), PAR + ("--tp", "2", "--dp", "2", "--devices", "4"))
        same(self, PAR + ("--data-parallel-size", "2",), PAR + ("--dp", "2"))

    def test_sglang_flags(self):
        same(self, KV + ("--tp-size", "2", "--context-length", "8192"), KV + ("--tp", "2", "--context", "8192"))

    def test_megatron_flags(self):
        same(self, TRAIN + ("--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2",
                            "--sequence-parallel", "--seq-length", "2048", "--micro-batch-size", "1",
                            "--global-batch-size", "16", "--recompute-granularity", "full"),
             TRAIN + ("--tp", "2", "--pp", "2", "--sp", "--seq", "2048", "--micro-batch", "1",
                      "--global-batch", "16", "--recompute", "full"))

    def test_gpu_memory_utilization_is_the_reserve(self):
        # vLLM's 0.9 of memory for weights, activations and cache leaves a 10% reserve
        same(self, KV + ("--context", "8192", "--gpu-memory-utilization", "0.85"),
             KV + ("--context", "8192", "--reserve", "15%"))
        same(self, KV + ("--context", "8192", "--mem-fraction-static", "0.9"),
             KV + ("--context", "8192", "--reserve", "10%"))
        status, _, err = run_cli(*KV, "--context", "8", "--gpu-memory-utilization", "0.9", "--reserve", "1GiB")
        self.assertEqual(status, 2)
        self.assertIn("keep one", err)

    def test_dtype_and_quantization(self):
        dec = ("decode", "--model", "qwen3-8b", "--input-len", "128", "--output-len", "4", "--format", "json")
        same(self, dec + ("--dtype", "bfloat16"), dec + ("--act-dtype", "bf16", "--weight-dtype", "bf16"))
        same(self, dec + ("--dtype", "float16"), dec + ("--act-dtype", "fp16", "--weight-dtype", "fp16"))
        same(self, dec + ("--dtype", "auto"), dec)
        # vLLM's fp8 method is W8A8; its cache keeps the model format unless --kv-cache-dtype
        same(self, dec + ("--quantization", "fp8"),
             dec + ("--weight-dtype", "fp8", "--act-dtype", "fp8", "--kv-dtype", "bf16"))
        for method in ("awq", "gptq"):
            status, out, err = run_cli(*dec, "--quantization", method)
            self.assertEqual((status, out), (2, ""))
            self.assertIn("--weight-dtype int4-g128-fp16", err)

    def test_no_prefix_matching(self):
        # --comp must not silently mean --compute-efficiency
        status, out, err = run_cli("forward", "--model", "qwen3-8b", "--comp", "0.5")
        self.assertEqual((status, out), (2, ""))
        self.assertIn("unrecognized arguments: --comp 0.5; did you mean --compute-efficiency?", err)
        # an engine's flag the command has no equivalent for names what it maps to
        status, out, err = run_cli("decode", "--model", "qwen3-8b", "--input-len", "8", "--output-len", "8",
                                   "--max-model-len", "32K")
        self.assertEqual((status, out), (2, ""))
        self.assertIn("(--max-model-len is --context here, which `decode` does not take)", err)

    def test_help_lists_the_aliases(self):
        status, out, _ = run_cli("kv", "--help")
        self.assertEqual(status, 0)
        for alias in ("--tensor-parallel-size", "--max-model-len", "--kv-cache-dtype", "--gpu-memory-utilization"):
            self.assertIn(alias, out)


class Names(unittest.TestCase):
    def test_hf_dtype_names(self):
        from infracalc.dtypes import dtype
        for name, ours in (("bfloat16", "bf16"), ("float16", "fp16"), ("half", "fp16"), ("float32", "fp32"),
                           ("fp8_e4m3", "fp8"), ("fp8_e5m2", "fp8"), ("BF16", "bf16"), ("INT4-G128", "int4-g128")):
            self.assertEqual(dtype(name).name, ours)

    def test_hf_ids_and_casings_of_bundled_models(self):
        base = ("models", "--format", "json", "--model")
        for spelling in ("meta-llama/Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B", "Llama-3.1-8B",
                         "LLAMA-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct"):
            with self.subTest(spelling=spelling):
                same(self, base + (spelling,), base + ("llama-3.1-8b",))
        same(self, base + ("Qwen/Qwen3-235B-A22B",), base + ("qwen3-235b-a22b",))

    def test_unknown_hf_id_says_where_it_looked(self):
        with tempfile.TemporaryDirectory() as cache, mock.patch.dict(os.environ, {"HF_HUB_CACHE": cache}):
            status, out, err = run_cli("models", "--model", "Qwen/Qwen3-4B")
        self.assertEqual((status, out), (2, ""))
        self.assertIn("not bundled and not in the local Hugging Face cache", err)
        self.assertIn("did you mean qwen/qwen3-8b", err)

    def test_local_hf_cache(self):
        # a repository in the hub cache layout: models--OWNER--NAME/{refs/main, snapshots/REV/config.json}
        with open(os.path.join(ROOT, "calculations", "models", "qwen3-8b.json")) as f:
            config = f.read()
        with tempfile.TemporaryDirectory() as cache:
            repo = os.path.join(cache, "models--Someone--Tiny-Qwen")
            os.makedirs(os.path.join(repo, "refs"))
            os.makedirs(os.path.join(repo, "snapshots", "abc123"))
            with open(os.path.join(repo, "refs", "main"), "w") as f:
                f.write("abc123")
            with open(os.path.join(repo, "snapshots", "abc123", "config.json"), "w") as f:
                f.write(config)
            with mock.patch.dict(os.environ, {"HF_HUB_CACHE": cache}):
                status, by_id, err = run_cli("models", "--model", "Someone/Tiny-Qwen", "--format", "json")
                self.assertEqual(status, 0, err)
                status, by_dir, err = run_cli("models", "--model", repo, "--format", "json")
                self.assertEqual(status, 0, err)
        ours = json.loads(run_cli("models", "--model", "qwen3-8b", "--format", "json")[1])["summary"]
        for out in (by_id, by_dir):   # named by its repository, counted as the bundled config
            self.assertEqual(json.loads(out)["summary"], dict(ours, id="Someone/Tiny-Qwen"))

    def test_device_family_names(self):
        same(self, ("hardware", "--device", "h100", "--format", "json"),
             ("hardware", "--device", "h100-sxm", "--format", "json"))
        same(self, ("hardware", "--device", "H200", "--format", "json"),
             ("hardware", "--device", "h200", "--format", "json"))
        status, out, _ = run_cli("forward", "--model", "qwen3-8b", "--device", "h100")
        self.assertIn("NVIDIA H100 SXM5 80GB (`h100-sxm`)", out)   # the part used is stated


class Papercuts(unittest.TestCase):
    def test_version(self):
        import infracalc
        for flag in ("--version", "-V"):
            self.assertEqual(run_cli(flag), (0, f"infra-calc {infracalc.__version__}\n", ""))

    def test_version_has_one_source(self):
        with open(os.path.join(ROOT, "pyproject.toml")) as f:
            text = f.read()
        self.assertIn('dynamic = ["version"]', text)
        self.assertIn('version = {attr = "infracalc.__version__"}', text)

    def test_format_from_the_output_extension(self):
        with tempfile.TemporaryDirectory() as d:
            for ext, check in ((".json", json.loads), (".csv", lambda t: t.split(",")[0]),
                               (".md", lambda t: t.startswith("#") or self.fail(t))):
                path = os.path.join(d, "out" + ext)
                status, _, err = run_cli("models", "--output", path)
                self.assertEqual(status, 0, err)
                with open(path) as f:
                    check(f.read())
            path = os.path.join(d, "forced.json")
            run_cli("models", "--output", path, "--format", "md")   # --format says otherwise
            with open(path) as f:
                self.assertTrue(f.read().startswith("#"))

    def test_devices_default_to_the_layout(self):
        same(self, PAR + ("--tp", "2", "--pp", "2"), PAR + ("--tp", "2", "--pp", "2", "--devices", "4"))
        status, _, err = run_cli(*PAR, "--search")
        self.assertEqual(status, 2)
        self.assertIn("--search needs --devices N", err)

    def test_scenario_file(self):
        plan = {"command": "kv", "model": "llama-3.1-8b", "--tp": 2, "max_model_len": "32K",
                "kv-dtype": "fp8", "page-size": None, "format": "json"}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(plan, f)
        self.addCleanup(os.remove, f.name)
        same(self, ("kv", "--scenario", f.name), KV + ("--tp", "2", "--context", "32768", "--kv-dtype", "fp8"))
        # the command line overrides the file
        same(self, ("kv", "--scenario", f.name, "--tp", "1"), KV + ("--context", "32768", "--kv-dtype", "fp8"))
        status, _, err = run_cli("decode", "--scenario", f.name)
        self.assertEqual(status, 2)
        self.assertIn("the scenario is for 'kv', not 'decode'", err)

    def test_reproduce_never_writes_inside_an_installed_package(self):
        with mock.patch("infracalc.paths.installed", return_value=True):
            status, out, err = run_cli("reproduce", "--only", "models")
            self.assertEqual((status, out), (2, ""))
            self.assertIn("give --out DIR", err)
            with tempfile.TemporaryDirectory() as d:
                status, out, err = run_cli("reproduce", "--only", "models", "--out", d)
                self.assertEqual(status, 0, err)
                with open(os.path.join(ROOT, "calculations", "results", "models.md")) as f, \
                        open(os.path.join(d, "models.md")) as g:
                    self.assertEqual(f.read(), g.read())


if __name__ == "__main__":
    unittest.main()


class WeightBytesPerFormat(unittest.TestCase):
    def test_models_lists_weight_bytes_per_format(self):
        rec = json.loads(run_cli("models", "--format", "json")[1])
        q = next(m for m in rec["models"] if m["id"] == "qwen3-8b")
        # bf16: 8,190,735,360 params x 2 B; int8-g128: the book's 8-bit figure, 9,544,230,912 B
        # (8.888758 GiB: embedding, head and norms bf16, 108,527,616 B of scales; docs/counting.md)
        self.assertEqual(q["weight_bytes"]["bf16"], 16_381_470_720)
        self.assertEqual(q["weight_bytes"]["int8-g128"], 9_544_230_912)
        status, out, _ = run_cli("models")
        self.assertIn("## Weight bytes per format", out)

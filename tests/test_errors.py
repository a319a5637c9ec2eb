"""Bad input: one line on stderr, exit status 2, no traceback.

The messages are checked through main() in this process (an exception escaping it, a traceback
for the user, fails the test); ProcessBoundary runs a few of them as a process of their own, so
that the contract is checked where the user sees it: exit status, stderr, no traceback."""

import unittest

from support import cli, run_cli, write_config


class Errors(unittest.TestCase):
    invoke = staticmethod(run_cli)   # (status, stdout, stderr) of one command line

    def assertUsageError(self, args, *fragments):
        status, out, err = self.invoke(*args)
        self.assertEqual(status, 2, err)
        self.assertEqual(out, "")
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertNotIn("Traceback", err)
        for fragment in fragments:
            self.assertIn(fragment, err)
        return err

    def test_unknown_model_suggests(self):
        self.assertUsageError(["forward", "--model", "qwen3-7b"], "unknown model 'qwen3-7b'", "qwen3-8b")

    def test_unknown_device_suggests(self):
        # (`h100` itself is the SXM part: tests/test_names.py)
        self.assertUsageError(["forward", "--model", "qwen3-8b", "--device", "h100-sxm4"],
                              "unknown device 'h100-sxm4'", "h100-sxm")

    def test_unknown_id_among_many_choices(self):
        # 213 validation cases, 192 scenarios: a close id is suggested; with none close the
        # line gives their number and how to list them (it listed every id: 17,000 characters)
        self.assertUsageError(["validate", "--case", "trtllm-llama31-8b-fp8-h100-1000-1000"],
                              "did you mean", "trtllm-llama31-8b-fp8-h100-sxm-1000-1000")
        for args, listing in ((["validate", "--case", "nope"], "`validate --format csv` lists them"),
                              (["reproduce", "--only", "zzzqqq"], "`reproduce --list` lists them")):
            err = self.assertUsageError(args, listing, "is close")
            self.assertLess(len(err), 160, err)

    def test_unknown_command(self):
        self.assertUsageError(["forwrd"], "unknown command 'forwrd'", "forward")

    def test_non_positive_and_non_integer_sizes(self):
        for flag, value in (("--batch", "0"), ("--tokens", "-3"), ("--tokens", "1.5"),
                            ("--batch", "eight"), ("--history", "-1")):
            with self.subTest(flag=flag, value=value):
                self.assertUsageError(["forward", "--model", "qwen3-8b", flag, value], flag, value)

    def test_unknown_dtype(self):
        self.assertUsageError(["forward", "--model", "qwen3-8b", "--weight-dtype", "fp9"],
                              "unknown dtype 'fp9'")

    def test_block_scaled_kv_cache(self):
        self.assertUsageError(["forward", "--model", "qwen3-8b", "--kv-dtype", "fp8-block128"],
                              "--kv-dtype fp8-block128", "use fp8")

    def test_dtype_the_device_lacks(self):
        self.assertUsageError(["forward", "--model", "qwen3-8b", "--act-dtype", "fp8",
                               "--device", "a100-sxm-80gb"], "no fp8 matrix peak", "bf16")

    def test_malformed_json(self):
        path = write_config(self, '{"model_type": "llama", "hidden_size": 8,')
        self.assertUsageError(["forward", "--model", path], "malformed JSON", "line 1")

    def test_missing_field(self):
        path = write_config(self, {"model_type": "llama", "hidden_size": 8, "num_attention_heads": 2,
                                   "num_hidden_layers": 2, "vocab_size": 10, "max_position_embeddings": 8})
        self.assertUsageError(["forward", "--model", path], "missing required field 'intermediate_size'")

    def test_bad_field_type(self):
        path = write_config(self, {"model_type": "llama", "hidden_size": "8"})
        self.assertUsageError(["models", "--model", path], "hidden_size", "integer")

    def test_unsupported_model_type(self):
        path = write_config(self, {"model_type": "rwkv", "hidden_size": 8})
        self.assertUsageError(["forward", "--model", path], "unsupported model_type 'rwkv'")

    def test_missing_model_file(self):
        self.assertUsageError(["forward", "--model", "/nonexistent/config.json"], "not found")

    def test_bad_device_file(self):
        path = write_config(self, {"id": "x", "matrix_flops_per_s": {"bf16": 1}})
        self.assertUsageError(["forward", "--model", "qwen3-8b", "--device", path], "vector_flops_per_s")


    def test_session_options_refuse_a_model_or_mode_they_do_not_apply_to(self):
        # forward --kda-count / --reference-path / --schedule, kv --conv-state, decode --tensor-shapes,
        # parallel --token-feedback / --comm-path, and their unknown choices
        fwd = ["forward", "--model", "qwen3-8b", "--tokens", "16"]
        self.assertUsageError(fwd + ["--kda-count", "recurrent-baseline"], "--kda-count", "no KDA")
        self.assertUsageError(fwd + ["--reference-path"], "--reference-path", "qwen3_5_moe")
        self.assertUsageError(fwd + ["--schedule", "ced"], "--schedule ced", "no CED")
        self.assertUsageError(fwd + ["--scalar-count", "books"], "--scalar-count", "'book'")
        kv = ["kv", "--model", "qwen3-8b", "--device", "h100-sxm", "--context", "8192"]
        self.assertUsageError(kv + ["--conv-state", "kernel"], "--conv-state", "Gated DeltaNet")
        self.assertUsageError(kv + ["--screen", "80GiB,,141GB"], "--screen")
        self.assertUsageError(kv + ["--screen", "0"], "--screen")
        self.assertUsageError(kv + ["--weights", "every"], "--weights", "'all'")
        par = ["parallel", "--model", "qwen3-8b", "--device", "h100-sxm", "--input-len", "1024", "--output-len", "128"]
        self.assertUsageError(par + ["--token-feedback"], "--token-feedback applies with --comm-path")
        self.assertUsageError(par + ["--comm-path", "--search"], "--comm-path applies to one layout")
        self.assertUsageError(par + ["--logits-dtype", "fp8"], "--logits-dtype", "'fp32'")
        self.assertUsageError(par + ["--pp-send", "replicate"], "--pp-send", "'replicated'")
        self.assertUsageError(["train", "--model", "qwen3-8b", "--device", "h100-sxm", "--seq", "4096",
                               "--hc-contractions", "matrix"], "--hc-contractions")


class ProcessBoundary(unittest.TestCase):
    """Errors of each origin (a bad id, a size argparse refuses, a malformed file, a refused
    option combination) in a process of their own (calc.py): status 2, one line, no traceback."""

    invoke = staticmethod(cli)
    assertUsageError = Errors.assertUsageError

    def test_each_origin(self):
        self.assertUsageError(["forward", "--model", "qwen3-7b"], "unknown model 'qwen3-7b'", "qwen3-8b")
        self.assertUsageError(["forward", "--model", "qwen3-8b", "--tokens", "1.5"], "--tokens", "1.5")
        path = write_config(self, '{"model_type": "llama", "hidden_size": 8,')
        self.assertUsageError(["forward", "--model", path], "malformed JSON", "line 1")
        self.assertUsageError(["parallel", "--model", "qwen3-8b", "--device", "h100-sxm", "--input-len", "1024",
                               "--output-len", "128", "--comm-path", "--search"], "--comm-path applies to one layout")


if __name__ == "__main__":
    unittest.main()

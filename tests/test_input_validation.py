"""Malformed configs, device files, histograms and extreme sizes: each is one
line on stderr and exit status 2 (never a traceback), and the largest accepted
sizes still give exact, finite results."""

import json
import unittest

from support import ROOT, run_cli as run, write_config




def bundled(kind, name):
    """A bundled model config or device file as a dict."""
    with open(f"{ROOT}/calculations/{kind}/{name}.json", encoding="utf-8") as f:
        return json.load(f)


QWEN3_8B = bundled("models", "qwen3-8b")
H100 = bundled("hardware", "h100-sxm")




class Rejected(unittest.TestCase):
    def assertRejected(self, argv, *fragments):
        status, out, err = run(*argv)
        self.assertEqual(status, 2, err)
        self.assertEqual(out, "")
        self.assertEqual(len(err.splitlines()), 1, err)
        for fragment in fragments:
            self.assertIn(fragment, err)

    def model(self, **changes):
        data = dict(QWEN3_8B)
        data.update(changes)
        return write_config(self, data)

    def device(self, **changes):
        data = json.loads(json.dumps(H100))
        data.update(changes)
        return write_config(self, data)

    def test_config_fields_of_the_wrong_json_type(self):
        cases = [
            (self.model(hidden_act=["silu"]), "'hidden_act'", "must be a string"),
            (self.model(model_type=["qwen3"]), "'model_type'", "must be a string"),
            (self.model(partial_rotary_factor=2.0), "'partial_rotary_factor'", "from 0 to 1"),
            (self.model(partial_rotary_factor=-0.5), "'partial_rotary_factor'", "from 0 to 1"),
            (write_config(self, '{"model_type": "qwen3", "hidden_size": NaN}'), "NaN is not a JSON number"),
            (write_config(self, {"model_type": "gemma3"}), "missing required field 'text_config'"),
        ]
        for path, *fragments in cases:
            with self.subTest(fragments[0]):
                self.assertRejected(["forward", "--model", path], *fragments)

    def test_unreadable_files(self):
        path = write_config(self, "")
        with open(path, "wb") as f:
            f.write(b'{"model_type": "\xff"}')
        self.assertRejected(["forward", "--model", path], "not UTF-8 text (byte 16")
        self.assertRejected(["forward", "--model", "qwen3-30b-a3b", "--routing", "/no/such/loads.json"],
                            "routing file not found: '/no/such/loads.json'")

    def test_layer_index_lists(self):
        moe = bundled("models", "qwen3-30b-a3b")
        for bad in ("0,1", [48], [True], 3):
            with self.subTest(bad=bad):
                path = write_config(self, dict(moe, mlp_only_layers=bad))
                self.assertRejected(["models", "--model", path], "'mlp_only_layers'", "0 to 47")

    def test_layer_types(self):
        # One validation shared by Gemma 3, GPT-OSS, Llama 4 and Qwen3-Next: a wrong length is
        # a malformed field; an unknown kind is an unmodelled architecture, named by index.
        for model, kinds in (("gpt-oss-20b", ("sliding_attention", "full_attention")),
                             ("qwen3-next-80b-a3b", ("linear_attention", "full_attention"))):
            data = bundled("models", model)
            n = data["num_hidden_layers"]
            with self.subTest(model=model):
                short = write_config(self, dict(data, layer_types=[kinds[0]] * (n - 1)))
                self.assertRejected(["models", "--model", short], f"must be a list of {n} entries")
                odd = write_config(self, dict(data, layer_types=[kinds[0]] * (n - 1) + ["mamba"]))
                self.assertRejected(["models", "--model", odd], f"layer_types[{n - 1}] 'mamba'",
                                    "not modelled", kinds[1])

    def test_sizes_beyond_any_config(self):
        # Bounded so that no count overflows a float time (and one record per layer fits).
        self.assertRejected(["forward", "--model", self.model(hidden_size=10**40)],
                            "'hidden_size'", "from 1 to 2,147,483,647")
        self.assertRejected(["forward", "--model", self.model(num_hidden_layers=10**9)],
                            "'num_hidden_layers'", "from 1 to 65,536")

    def test_device_files(self):
        vector = {"fp16": 10**14}
        cases = [
            (self.device(id=["x"]), "'id'", "non-empty string"),
            (self.device(vector_flops_per_s=vector), "unknown format 'fp16'", "fp32"),
            (self.device(matrix_flops_per_s={"bfloat16": 10**15}), "unknown format 'bfloat16'", "bf16"),
            (self.device(matrix_flops_per_s={"bf16": 9.89e14}), "'bf16'", "positive integer"),
            (self.device(memory_bandwidth_bytes_per_s=10**400), "'memory_bandwidth_bytes_per_s'", "10^30"),
            (self.device(matrix_flops_per_s={}), "'matrix_flops_per_s'", "at least one peak"),
        ]
        nomem = json.loads(json.dumps(H100))
        del nomem["memory_bytes"]
        cases.append((write_config(self, nomem), "missing required field 'memory_bytes'"))
        for path, *fragments in cases:
            with self.subTest(fragments[0]):
                self.assertRejected(["forward", "--model", "qwen3-8b", "--device", path], *fragments)
                self.assertRejected(["hardware", "--device", path], *fragments)

    def test_routing_histograms_that_are_not_finite(self):
        for text in ("[NaN" + ", 1" * 127 + "]", "[Infinity" + ", 1" * 127 + "]",
                     json.dumps([1e308, 1e308] + [1] * 126)):   # the sum overflows to inf
            with self.subTest(text=text[:12]):
                path = write_config(self, text)
                self.assertRejected(["forward", "--model", "qwen3-30b-a3b", "--routing", path], path)

    def test_numbers_beyond_the_bounds(self):
        self.assertRejected(["forward", "--model", "qwen3-8b", "--tokens", str(10**15 + 1)],
                            "--tokens", "up to 10^15")
        self.assertRejected(["forward", "--model", "qwen3-8b", "--memory-efficiency", "1e-320"],
                            "--memory-efficiency", "1e-6")


class Qwen2SlidingWindow(unittest.TestCase):
    """use_sliding_window: layer i is windowed when i >= max_window_layers (transformers
    Qwen2Config.layer_types). A tiny Qwen2: 4 layers, 1 KV head x 4, window 2."""

    CFG = {"model_type": "qwen2", "hidden_size": 8, "num_attention_heads": 2, "num_key_value_heads": 1,
           "intermediate_size": 16, "num_hidden_layers": 4, "vocab_size": 10,
           "max_position_embeddings": 64, "use_sliding_window": True, "sliding_window": 2}

    def attention(self, **changes):
        status, out, err = run("models", "--model", write_config(self, dict(self.CFG, **changes)),
                               "--format", "json")
        self.assertEqual(status, 0, err)
        rec = json.loads(out)
        return rec["model"]["attention"], rec["summary"]["kv_bytes_per_token_bf16"], rec["model"].get("notes", [])

    def test_windowed_layers_follow_max_window_layers(self):
        # KV per token and layer at bf16: 2 (K, V) * 1 head * 4 * 2 B = 16 B, 4 layers: 64 B.
        self.assertEqual(self.attention(max_window_layers=4)[:2], ("MQA full", 64))
        kinds, _, notes = self.attention(max_window_layers=1)
        self.assertEqual(kinds, "1x MQA full + 3x MQA window 2")
        self.assertIn("layers 1-3 use the 2-key window", notes[0])
        self.assertIn("no layer is windowed", self.attention(max_window_layers=4)[2][0])
        self.assertEqual(self.attention(max_window_layers=0)[0], "MQA window 2")
        self.assertEqual(self.attention()[0], "MQA full")   # default max_window_layers 28 >= 4 layers
        self.assertEqual(self.attention(use_sliding_window=False, max_window_layers=0)[0], "MQA full")


class Extremes(unittest.TestCase):
    def test_largest_workload_is_exact_and_finite(self):
        # Qwen3-8B, one request of T = 10^15 new tokens: causal attention pairs per head
        # T(T+1)/2; QK^T and PV 2 * 128 FLOPs per pair each, 32 heads, 36 layers:
        # 2 * 2 * 128 * 32 * 36 * T(T+1)/2 = 294,912 * (T^2 + T).
        t = 10**15
        status, out, err = run("forward", "--model", "qwen3-8b", "--tokens", str(t), "--format", "json",
                               "--compute-efficiency", "1e-6", "--memory-efficiency", "1e-6")
        self.assertEqual(status, 0, err)
        totals = json.loads(out)["totals"]   # json.loads refuses nothing, so check finiteness
        self.assertEqual(totals["attention_flops_causal"], 294_912 * (t * t + t))
        self.assertLess(totals["roofline_time_s"], float("inf"))

    def test_largest_config_renders_in_every_format(self):
        # Every dimension at its bound: counts reach ~2^200, times stay finite.
        big = 2**31 - 1
        data = bundled("models", "qwen3-30b-a3b")
        data.update(hidden_size=big, intermediate_size=big, moe_intermediate_size=big, num_experts=big,
                    num_experts_per_tok=big, num_attention_heads=big, num_key_value_heads=big,
                    head_dim=big, vocab_size=big, num_hidden_layers=4)
        path = write_config(self, data)
        for fmt in ("md", "json", "csv"):
            with self.subTest(fmt=fmt):
                status, out, err = run("forward", "--model", path, "--batch", str(10**15),
                                       "--tokens", str(10**15), "--history", str(10**15),
                                       "--logits", "all", "--format", fmt)
                self.assertEqual((status, err), (0, ""))
                self.assertNotIn("inf", out.replace("info", ""))


if __name__ == "__main__":
    unittest.main()

"""The device files' host link (PCIe generation x lanes): loaded, validated, and the default of
`serve --offload-ffn-layers/--offload-kv`; unknown for a device whose file has none."""

import json
import os
import tempfile
import unittest

from support import run_cli
from infracalc.load.hardware import load_device


class HostLink(unittest.TestCase):
    def test_bundled_figures(self):
        # PCIe x16 per direction: Gen4 16 GT/s x 16 lanes / 8 = 32 GB/s, Gen5 32 GT/s x 16 / 8 = 64 GB/s
        for dev, gbps in (("h100-pcie", 64), ("h100-nvl", 64), ("l40s", 32), ("rtx-4090", 32), ("rtx-5090", 64),
                          ("h100-sxm", 64), ("h200", 64), ("a100-sxm-80gb", 32), ("b200", 64), ("mi300x", 64),
                          ("mi325x", 64), ("mi355x", 64), ("rtx-3090", 32), ("rtx-pro-6000", 64),
                          ("v100-sxm2", 16)):
            with self.subTest(dev=dev):
                self.assertEqual(load_device(dev).host_link.bytes_per_s, gbps * 10**9)
        # GB200: NVLink-C2C, 900 GB/s both directions between Grace and the two GPUs = 450 per direction
        self.assertEqual(load_device("gb200").host_link.bytes_per_s, 450 * 10**9)
        for dev in ("h800", "h20", "b300", "gaudi3", "tpu-v5e"):   # no source read names it: unknown
            with self.subTest(dev=dev):
                self.assertIsNone(load_device(dev).host_link)

    def test_misspelt_field_is_refused(self):
        with open(os.path.join(os.path.dirname(__file__), "..", "calculations", "hardware", "l40s.json")) as f:
            data = json.load(f)
        data["host_link"]["bytes_per_second"] = 1
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bad.json")
            with open(path, "w") as f:
                json.dump(data, f)
            code, _, err = run_cli("serve", "--model", "qwen3-8b", "--device", path, "--offload-kv", "0.5",
                                   "--input-len", "1024", "--output-len", "8")
        self.assertEqual(code, 2)
        self.assertIn("host_link", err)

    def test_default_is_the_device_link_and_the_override_wins(self):
        args = ("serve", "--model", "qwen3-8b", "--offload-ffn-layers", "3:36:4", "--layer-ns", "1000000",
                "--format", "json")
        _, out, _ = run_cli(*args, "--device", "l40s")
        offload = json.loads(out)["offload"]
        # Qwen3-8B FFN of one layer: 3 x 4096 x 12288 x 2 B = 301,989,888 B; layers 3, 7, ..., 35 = 9
        # of them: 2,717,908,992 B per pass, over 32 GB/s (the L40S's PCIe Gen4 x16) = 84,934,656 ns
        self.assertEqual(offload["link_bytes_per_pass"], 9 * 3 * 4096 * 12288 * 2)
        self.assertEqual(offload["link_ns_per_pass"], 84934656)
        _, out, _ = run_cli(*args, "--device", "l40s", "--host-link-bw", "pcie5")
        self.assertEqual(json.loads(out)["offload"]["link_ns_per_pass"], 84934656 // 2)

    def test_unknown_link_names_the_device(self):
        code, _, err = run_cli("serve", "--model", "qwen3-8b", "--device", "h800", "--offload-kv", "0.5",
                               "--input-len", "1024", "--output-len", "8")
        self.assertEqual(code, 2)
        self.assertIn("device 'h800' has no host link", err)


if __name__ == "__main__":
    unittest.main()

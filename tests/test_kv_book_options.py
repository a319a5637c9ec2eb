"""`kv --conv-state kernel`, `--weights all` and `--screen`: the book's Qwen3.6-35B-A3B capacity
screen (bojieli/ai-infra-book:calculations/results/qwen36-capacity-*.md), by hand.

Qwen3.6-35B-A3B: 30 Gated DeltaNet layers (32 value heads of 128 x 128, FP32 recurrent state;
conv over 8,192 channels, kernel 4, BF16) and 10 full-attention layers (2 KV heads x 256, BF16):
KV 10 x 2 x 2 x 256 x 2 = 20,480 B per token; recurrent 30 x 32 x 128 x 128 x 4 = 62,914,560 B
per request; conv 30 x 8,192 x 2 = 491,520 B per kept position and request."""

import json
import unittest

import support  # noqa: F401
from support import run_cli

TEXT_WEIGHTS = 69_321_221_376   # every base text tensor, BF16
PARTS = {"mtp": 2 * 844_640_768, "vision": 2 * 446_571_248}   # 1,689,281,536 and 893,142,496 B
SCREEN = ("--screen", "24GB,32GB,80GB,96GB,96GB")


def kv(*extra, context="32768", batch="1"):
    status, out, err = run_cli("kv", "--model", "qwen3.6-35b-a3b", "--context", context, "--batch", batch,
                               "--memory-bytes", "80GB", "--reserve", "2GiB", *extra, "--format", "json")
    assert status == 0, err
    return json.loads(out)


class ConvState(unittest.TestCase):
    def test_default_keeps_kernel_minus_one(self):
        s = kv()["sizing"]
        self.assertEqual(s["state_parts_per_request"], {"recurrent": 62_914_560, "conv": 3 * 491_520})
        self.assertEqual(s["state_bytes_per_request"], 62_914_560 + 1_474_560)

    def test_kernel_keeps_all_four(self):
        s = kv("--conv-state", "kernel")["sizing"]
        self.assertEqual(s["state_parts_per_request"], {"recurrent": 62_914_560, "conv": 4 * 491_520})
        self.assertEqual(s["state_bytes_per_request"], 64_880_640)


class Screen(unittest.TestCase):
    def test_b1_n32768_on_five_devices(self):
        # need = weights + 20,480 x 32,768 + 62,914,560 + 1,966,080 + 2 GiB = 72,204,674,304 B
        need = TEXT_WEIGHTS + 20_480 * 32_768 + 62_914_560 + 1_966_080 + 2**31
        sc = kv("--conv-state", "kernel", *SCREEN)["screen"]
        self.assertEqual(need, 72_204_674_304)
        self.assertEqual([d["memory_left_bytes_at_batch"] for d in sc["devices"]],
                         [m - need for m in (24 * 10**9, 32 * 10**9, 80 * 10**9, 96 * 10**9, 96 * 10**9)])
        self.assertEqual([d["fits"] for d in sc["devices"]], [False, False, True, True, True])

    def test_b32_terms(self):
        sc = kv("--conv-state", "kernel", *SCREEN, batch="32")["screen"]
        self.assertEqual(sc["terms_at_batch"], {"weights": TEXT_WEIGHTS, "cache": 32 * 20_480 * 32_768,
                                                "recurrent_state": 32 * 62_914_560, "conv_state": 32 * 1_966_080})
        self.assertEqual(sc["devices"][3]["memory_left_bytes_at_batch"], 980_278_016)   # the book's 96 GB figure

    def test_all_weights(self):
        rec = kv("--conv-state", "kernel", "--weights", "all", *SCREEN, context="8192")
        self.assertEqual(rec["weights"]["parts"], PARTS)
        self.assertEqual(rec["capacity"]["stages"][0]["weight_bytes"], 71_903_645_408)   # + 2,582,424,032
        self.assertEqual(rec["screen"]["devices"][2]["memory_left_bytes_at_batch"], 5_716_218_144)

    def test_all_weights_needs_one_device(self):
        status, _, err = run_cli("kv", "--model", "qwen3.6-35b-a3b", "--context", "8192", "--tp", "2",
                                 "--weights", "all")
        self.assertEqual(status, 2)
        self.assertIn("--weights all", err)



class Refusals(unittest.TestCase):
    def test_conv_state_needs_a_gated_deltanet(self):
        status, _, err = run_cli("kv", "--model", "qwen3-8b", "--context", "10", "--conv-state", "kernel")
        self.assertEqual(status, 2)
        self.assertIn("--conv-state", err)


if __name__ == "__main__":
    unittest.main()

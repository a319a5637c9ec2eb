"""`validate` on multi-device serving cases: `parallel`'s serving bound per layout."""

import json
import os
import tempfile
import unittest

import support  # noqa: F401  (sets the path)

from infracalc.analyses import validate

ONE = "trtllm-llama31-8b-fp8-h100-sxm-128-2048"        # one H100, a case of the corpus
TP2 = "trtllm-llama33-70b-fp8-h100-sxm-tp2-2048-128"


def case(cid):
    with open(os.path.join(validate.VALIDATION_DIR, cid + ".json")) as f:
        return json.load(f)


def run(*cases):
    """validate over the given case dicts, written to a scratch corpus."""
    with tempfile.TemporaryDirectory() as tmp:
        for c in cases:
            with open(os.path.join(tmp, c["id"] + ".json"), "w") as f:
                json.dump(c, f)
        return validate.validate(directory=tmp)


class MultiDevice(unittest.TestCase):
    def test_data_parallel_replicas_multiply_the_one_device_bound(self):
        # dp replicas share nothing and no communication is charged: the bound of
        # 2 devices at dp 2 is exactly twice the one-device serving bound (conservation).
        one = case(ONE)
        two = dict(one, id="two", setup=dict(one["setup"], devices=2, layout={"tp": 1, "pp": 1, "dp": 2}))
        rows = {r["id"]: r for r in run(one, two)["cases"]}
        self.assertAlmostEqual(rows["two"]["bound"], 2 * rows[ONE]["bound"], places=6)
        self.assertEqual(rows["two"]["concurrency"], 2 * rows[ONE]["concurrency"])
        self.assertAlmostEqual(rows["two"]["ratio"], rows[ONE]["ratio"] / 2, places=12)   # same figure, twice the bound

    def test_tensor_parallel_shard_by_hand(self):
        # Llama-3.1-70B (= 3.3 70B) FP8 at TP 2, P = 2,048, G = 128, on an H100 whose memory
        # bandwidth and vector peak are unlimited: a request's time is its matrix FLOPs on one
        # TP rank at the FP8 peak (1,979 TFLOP/s), whatever the concurrency.
        # GEMMs per token per rank: 2 x (8192 x 4096 + 2 x 8192 x 512 + 4096 x 8192
        # + 3 x 8192 x 14336) x 80 layers = 68,451,041,280; tokens through the layers
        # P + G - 1 = 2,175. Head (vocab-parallel, 64,128 rows per rank) 2 x 8192 x 64,128 =
        # 1,050,673,152 on G = 128 positions (the prompt's last, then each decode step).
        # Attention: 2,048 x 2,049 / 2 prefill pairs + sum_{i=0}^{126} (2,048 + i + 1) decode
        # pairs = 2,366,400, x 4 x 128 FLOPs x 32 heads per rank x 80 layers =
        # 3,101,687,808,000. Total 152,117,188,755,456 FLOPs -> 76.866 ms per request ->
        # 128 / that = 1,665.2424 output tokens/s for the replica (dp 1).
        from infracalc.load.hardware import load_device

        ideal = load_device("h100-sxm").replace(vector_flops_per_s=10**30, memory_bandwidth_bytes_per_s=10**30)
        real = validate._device
        validate._device = lambda _id: ideal
        try:
            row = run(case(TP2))["cases"][0]
        finally:
            validate._device = real
        self.assertAlmostEqual(row["bound"], 128 / (152_117_188_755_456 / 1979e12), places=6)
        self.assertEqual(row["bound_kind"], "compute")

    def test_units_agree(self):
        # requests/s = output tokens/s / G; total tokens/s = requests/s x (P + G): the same ratio.
        c = case(TP2)
        out = run(c)["cases"][0]
        P, G = c["setup"]["input_len"], c["setup"]["output_len"]
        req = dict(c, measured={"value": c["measured"]["value"] / G, "unit": "requests_per_s"})
        tot = dict(c, measured={"value": c["measured"]["value"] * (P + G) / G, "unit": "total_tokens_per_s"})
        for other in (req, tot):
            row = run(other)["cases"][0]
            self.assertAlmostEqual(row["ratio"], out["ratio"], places=12)

    def test_every_multi_device_case_is_evaluated_within_its_bound(self):
        for path in validate.case_paths():
            c = validate.load_case(path)
            if c["kind"] != "serving-throughput" or c["setup"]["devices"] == 1:
                continue
            with self.subTest(case=c["id"]):
                row = validate.evaluate(c)
                self.assertIsNone(row["not_evaluated"])
                self.assertLess(row["ratio"], 1)

    def test_a_beaten_multi_device_bound_fails(self):
        c = case(TP2)
        row = run(c)["cases"][0]
        c["measured"] = {"value": row["bound"] * 1.01, "unit": "output_tokens_per_s"}
        rec = run(c)
        self.assertEqual(rec["failures"], [TP2])


if __name__ == "__main__":
    unittest.main()

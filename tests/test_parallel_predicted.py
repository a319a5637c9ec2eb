"""`parallel`'s predicted figure per stage and phase (analyses/parallel/predicted.py): the
stage's shard at the achievable rates plus its collectives as NCCL runs them. Checked against
`decode`'s prediction, a separate path (the whole model's ledger and decode pieces): on one
device the two must agree exactly; under TP the per-stage figure is the shard's work plus
the NCCL seconds of its collectives; never below the stage's lower bound."""

import json
import unittest

from support import run_cli  # noqa: F401  (sets the path)


def _json(*args):
    code, out, err = run_cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


class OneDeviceIsDecode(unittest.TestCase):
    def test_ttft_and_tpot_equal_decodes(self):
        # dense GQA, MoE, MLA and sliding-window models: the unit sums, the decode-step pieces
        # and the history-free blocks must add up to the whole model's rows
        for model in ("qwen3-8b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-20b"):
            with self.subTest(model=model):
                common = ("--model", model, "--device", "h200", "--input-len", "1024", "--output-len", "64",
                          "--batch", "4")
                par = _json("parallel", *common)["latency"]
                dec = _json("decode", *common)["latency"]
                self.assertAlmostEqual(par["predicted_ttft_s"], dec["predicted_ttft_s"], delta=1e-12)
                self.assertAlmostEqual(par["predicted_tpot_mean_s"], dec["predicted_tpot_mean_s"], delta=1e-12)


class TensorParallel(unittest.TestCase):
    def setUp(self):
        self.rec = _json("parallel", "--model", "qwen3-8b", "--device", "h100-sxm", "--tp", "4", "--input-len",
                         "2048", "--output-len", "64", "--batch", "8")

    def test_never_below_the_bound_and_above_the_work(self):
        for name, phase in self.rec["phases"].items():
            for s in phase["stages"]:
                with self.subTest(phase=name, stage=s["stage"]):
                    self.assertGreaterEqual(s["predicted_s"], s["lower_bound_s"])
                    self.assertAlmostEqual(s["predicted_efficiency"], s["lower_bound_s"] / s["predicted_s"])
                    self.assertGreater(s["predicted_comm_s"], 0.0)

    def test_comm_is_nccls_seconds_of_the_stage_collectives(self):
        # the prefill's collectives as the record lists them (TP all-reduces in one NVLink domain),
        # each priced by efficiency.collective on the device's links, summed over their runs
        from infracalc import comm
        from infracalc.analyses.efficiency import collective
        from infracalc.collectives import Collective
        from infracalc.load.hardware import load_device
        pre = self.rec["phases"]["prefill"]["stages"][0]
        dev = self.rec["device"]["id"]
        links = comm.links(load_device(dev))
        total = 0.0
        for c in pre["collectives"]:
            self.assertEqual(c["tier"], "up")
            one = Collective(name=c["name"], dim=c["dim"], kind=c["kind"], bytes=c["bytes_per_run"], group=c["group"],
                             tier=c["tier"])
            total += c["runs"] * collective.seconds(one, links.get("up"), links.get("out"), dev)
        self.assertAlmostEqual(pre["predicted_comm_s"], total, delta=1e-12)
        self.assertGreater(total, 0.0)

    def test_first_screen(self):
        code, out, err = run_cli("parallel", "--model", "qwen3-8b", "--device", "h100-sxm", "--tp", "4",
                                 "--input-len", "2048", "--output-len", "64", "--batch", "8")
        lat = self.rec["latency"]
        from infracalc.render import units as u
        head = out.split("\n\n")[1]
        self.assertIn(f"{u.seconds(lat['predicted_ttft_s'])} predicted", head)
        self.assertIn(f"{u.seconds(lat['predicted_tpot_mean_s'])} predicted", head)
        self.assertIn(f"{lat['predicted_decode_tokens_per_s_per_device']:,.1f} predicted", head)


class NoPrediction(unittest.TestCase):
    def test_device_without_peaks_has_none(self):
        rec = _json("parallel", "--model", "qwen3-8b", "--device", "apple-m4-max", "--input-len", "128",
                    "--output-len", "8")
        self.assertNotIn("predicted_ttft_s", rec["latency"])
        self.assertNotIn("predicted_s", rec["phases"]["prefill"]["stages"][0])


class Sweep(unittest.TestCase):
    def test_rows_equal_the_one_layout_record(self):
        common = ("--model", "qwen3-8b", "--device", "h100-sxm", "--tp", "2", "--input-len", "1024",
                  "--output-len", "64")
        rows = _json("parallel", *common, "--batch-sweep")["rows"]
        for r in (rows[0], rows[3]):
            with self.subTest(batch=r["batch"]):
                lat = _json("parallel", *common, "--batch", str(r["batch"]))["latency"]
                for k in ("ttft_s", "tpot_mean_s", "decode_tokens_per_s_per_device"):
                    self.assertAlmostEqual(r[f"predicted_{k}"], lat[f"predicted_{k}"], delta=1e-12 * lat[f"predicted_{k}"])


if __name__ == "__main__":
    unittest.main()

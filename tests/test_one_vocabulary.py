"""`parallel` and `train` speak one vocabulary: the same device record, the same link record,
the same search keys and rejection record shape (issue 21)."""

import json
import os
import unittest

from support import CALC, run_cli, write_config  # noqa: F401  (sets the path)

from infracalc import comm
from infracalc.collectives import Collective
from infracalc.errors import MissingLink
from infracalc.load.hardware import load_device


def _json(*argv):
    status, out, err = run_cli(*argv, "--format", "json")
    assert status == 0, err
    return json.loads(out)


class OneVocabulary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.par = _json("parallel", "--model", "qwen3-8b", "--device", "h100-sxm", "--tp", "2", "--dp", "2",
                        "--input-len", "128", "--output-len", "8")
        cls.train = _json("train", "--model", "qwen3-8b", "--device", "h100-sxm", "--devices", "4", "--tp", "2",
                          "--seq", "128", "--global-batch", "4")
        cls.psearch = _json("parallel", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--devices", "8", "--search",
                            "--input-len", "128", "--output-len", "8")
        cls.tsearch = _json("train", "--model", "qwen3-8b", "--device", "h100-sxm", "--devices", "16", "--search",
                            "--seq", "128", "--global-batch", "16")

    def test_one_device_record(self):
        # the same device at the same compute format and efficiencies: the same record, key for key
        self.assertEqual(self.par["device"], self.train["device"])
        self.assertEqual(self.train["device"], self.tsearch["device"])
        self.assertEqual(self.train["device"]["memory_bandwidth_bytes_per_s"], 3_350_000_000_000)

    def test_one_link_record(self):
        self.assertEqual(self.par["links"], self.train["inputs"]["links"])
        self.assertEqual(self.psearch["links"], self.tsearch["inputs"]["links"])
        self.assertEqual(sorted(self.par["links"]["up"]), sorted(
            ["name", "bytes_per_s", "alpha_s", "efficiency", "topology", "domain_size", "in_network_reduce",
             "assumptions"]))

    def test_one_search_vocabulary(self):
        for rec in (self.psearch, self.tsearch):
            self.assertTrue(rec["top"])   # not vacuous
            self.assertTrue(rec["rejected"])
            self.assertGreater(rec["layouts_admitted"], 0)
            self.assertLessEqual(rec["layouts_admitted"], rec["layouts_considered"])
            for r in rec["rejected"]:
                self.assertEqual(list(r), ["reason", "layouts", "example", "least_shortfall_bytes"])


class MissingTier(unittest.TestCase):
    """A collective over a tier the device lacks is the typed MissingLink, which both searches
    count under one canonical reason (the tier's, not the collective's name): no text parsed."""

    def test_typed_error(self):
        links = {"up": comm.links(load_device("h100-sxm"))["up"], "out": None}
        errors = []
        for name in ("DP gradient all-reduce", "TP all-reduce after MLP"):
            with self.assertRaises(MissingLink) as e:
                comm.run_s(Collective(name, "all_reduce", 1 << 20, 16, "out", local=8), links, "ring")
            errors.append(e.exception)
        self.assertEqual([e.tier for e in errors], ["out", "out"])
        self.assertEqual(errors[0].reason, errors[1].reason)
        self.assertNotEqual(str(errors[0]), str(errors[1]))   # the message names the collective

    def test_both_searches_count_it_alike(self):
        with open(os.path.join(CALC, "hardware", "h100-sxm.json"), encoding="utf-8") as f:
            data = json.load(f)
        del data["scale_out"]   # one 8-GPU NVLink domain, no NIC
        path = write_config(self, data)
        want = "a collective crosses the scale-out tier, but the device has no such link; give --link-bw-out"
        for argv in (("parallel", "--model", "qwen3-8b", "--device", path, "--devices", "16", "--search",
                      "--input-len", "128", "--output-len", "8"),
                     ("train", "--model", "qwen3-8b", "--device", path, "--devices", "16", "--search",
                      "--seq", "128", "--global-batch", "16")):
            rec = _json(*argv)
            reasons = {r["reason"]: r["layouts"] for r in rec["rejected"]}
            self.assertIn(want, reasons, argv[0])
            self.assertGreater(reasons[want], 0)
            self.assertTrue(rec["top"])   # the layouts inside one domain are still ranked


if __name__ == "__main__":
    unittest.main()

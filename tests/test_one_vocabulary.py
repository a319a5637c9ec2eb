"""`parallel` and `train` speak one vocabulary: the same device record, the same link record,
the same search keys and rejection record shape (issue 21)."""

import json
import unittest

from support import run_cli  # noqa: F401  (sets the path)


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


if __name__ == "__main__":
    unittest.main()

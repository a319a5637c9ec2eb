"""Wording of rendered reports: counts read '1 replica' / '8 replicas' (one helper,
render/units.count, used by every renderer)."""

import re
import unittest

from support import run_cli  # noqa: F401  (sets the path)

from infracalc.render import units as u  # noqa: E402


class Plurals(unittest.TestCase):
    def test_count_helper(self):
        self.assertEqual(u.count(1, "replica"), "1 replica")
        self.assertEqual(u.count(8, "replica"), "8 replicas")
        self.assertEqual(u.count(0, "request"), "0 requests")
        self.assertEqual(u.count(1, "micro-batch", "micro-batches"), "1 micro-batch")
        self.assertEqual(u.count(1024, "device"), "1,024 devices")

    def test_parallel_one_replica_one_device(self):
        code, out, err = run_cli("parallel", "--model", "qwen3-8b", "--device", "h100-sxm", "--devices", "1",
                                 "--input-len", "128", "--output-len", "2")
        self.assertEqual(code, 0, err)
        self.assertIn("cluster (1 replica)", out)
        self.assertIn("per device (1 device)", out)
        self.assertIn("on 1 device (tp 1", out)
        self.assertIn("TPOT, mean over 1 step |", out)
        self.assertEqual(re.findall(r"(?<![\d,])1 (?:replicas|devices|requests|steps)\b", out), [])

    def test_parallel_eight_replicas(self):
        code, out, err = run_cli("parallel", "--model", "qwen3-8b", "--device", "h100-sxm", "--devices", "8",
                                 "--dp", "8", "--input-len", "128", "--output-len", "2")
        self.assertEqual(code, 0, err)
        self.assertIn("cluster (8 replicas)", out)
        self.assertIn("per device (8 devices)", out)


if __name__ == "__main__":
    unittest.main()

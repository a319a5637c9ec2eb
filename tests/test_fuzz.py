"""A small fixed-seed sample of the fuzzer (tests/fuzz.py): every vector meets the
error contract (status 0 with valid output, or status 2 with one stderr line)."""

import unittest

import fuzz


class FixedSeedSample(unittest.TestCase):
    def test_contract_holds(self):
        seen = {}
        clean, failures = fuzz.run(seed=2026, count=200, limit_s=3.0, seen=seen)
        self.assertEqual(failures, [])
        self.assertEqual(clean, 200)
        # The sample is not stuck in argument parsing: every command is drawn, and the
        # ones that compute both give results and refuse input.
        self.assertEqual(set(seen), set(fuzz.cli.COMMANDS))
        for name in ("forward", "decode", "kv", "models"):
            self.assertEqual(seen[name], {0, 2}, name)


if __name__ == "__main__":
    unittest.main()

"""A small fixed-seed sample of the fuzzer (tests/fuzz.py): every vector meets the
error contract (status 0 with valid output, or status 2 with one stderr line)."""

import unittest

import fuzz


class FixedSeedSample(unittest.TestCase):
    def test_contract_holds(self):
        # Samples of 200 vectors from seeds 2026, 2027, ... until the commands' coverage below
        # is met (the draw shifts whenever a command or option is added, so no one seed keeps
        # it): every vector of every sample meets the contract. 10 s of wall time per call:
        # a hang is caught, a loaded 2-core machine is not (the command budgets are
        # scripts/bench.py's to check).
        seen = {}

        def covered():
            return (set(seen) == set(fuzz.cli.COMMANDS)
                    and all(seen[name] == {0, 2} for name in ("forward", "decode", "kv", "models")))

        for seed in range(2026, 2036):
            clean, failures = fuzz.run(seed=seed, count=200, limit_s=10.0, seen=seen)
            self.assertEqual(failures, [], seed)
            self.assertEqual(clean, 200)
            if covered():
                break
        # The sample is not stuck in argument parsing: every command is drawn, and the
        # ones that compute both give results and refuse input.
        self.assertTrue(covered(), seen)


class BeyondArguments(unittest.TestCase):
    """Fixed-seed samples of the fuzzer's other parts (issue 22.10): mutated validation case
    files (nested fields), the working directory, and signals during writes."""

    def test_mutated_case_files_never_crash_validate(self):
        clean, failures = fuzz.fuzz_cases(seed=7, count=120)
        self.assertEqual(failures, [])
        self.assertEqual(clean, 120)

    def test_outputs_do_not_depend_on_the_working_directory(self):
        clean, failures = fuzz.cwd_independent(seed=7, count=30)
        self.assertEqual(failures, [])

    def test_signals_during_writes_leave_no_temporary_file(self):
        clean, failures = fuzz.signal_writes(seed=7, count=4)
        self.assertEqual(failures, [])

    def test_nested_device_mutations_reach_every_link_field(self):
        from infracalc.load.hardware import LINK_SCHEMA
        self.assertEqual(set(fuzz.LINK_FIELDS), set(LINK_SCHEMA))


class Contract(unittest.TestCase):
    """What fuzz.breach calls a breach (each case a bug an earlier version had)."""

    def test_markdown_with_a_control_character(self):
        self.assertIsNone(fuzz.breach(["train"], 0, "# train: a\\x1b on b\n", "", 0.1, None, 1.0))
        self.assertIn("control character", fuzz.breach(["train"], 0, "# train: a\x1b on b\n", "", 0.1, None, 1.0))
        self.assertIn("control character", fuzz.breach(["train", "--format", "md"], 0, "a\rb\n", "", 0.1, None, 1.0))
        self.assertIsNone(fuzz.breach(["train", "--format", "json"], 0, '{"id": "a\\u001b"}\n', "", 0.1, None, 1.0))

    def test_failed_call_leaving_a_new_file(self):
        import os
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            plot, out = os.path.join(d, "p.svg"), os.path.join(d, "no", "x.md")
            argv = ["parallel", "--plot", plot, "--output", out]
            fresh = fuzz.new_files(argv)
            self.assertEqual(fresh, [plot, out])
            err = "infra-calc: error: cannot write --output\n"
            self.assertIsNone(fuzz.breach(argv, 2, "", err, 0.1, None, 1.0, fresh))
            open(plot, "w").close()
            self.assertIn("wrote", fuzz.breach(argv, 2, "", err, 0.1, None, 1.0, fresh))
            self.assertEqual(fuzz.new_files(argv), [out])


if __name__ == "__main__":
    unittest.main()

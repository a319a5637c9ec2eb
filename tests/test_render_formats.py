"""`reproduce` renders every stored format of a scenario from one computed record
(cli.render_formats) and reuses one argument parser per subcommand: both must give exactly
the text of one separate run per format."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402,F401  (puts calculations/ on sys.path)

from infracalc import cli  # noqa: E402

CASES = (
    ["forward", "--model", "qwen3-8b", "--tokens", "16"],
    ["gemm", "--m", "8", "--k", "16", "--n", "32", "--tile", "4x4x4", "--tile-capacity", "1KiB"],
    ["budget", "fusion", "--model", "qwen3-8b", "--tokens", "2"],
    ["train", "--model", "qwen3-8b", "--seq", "64", "--supervised-tokens", "8"],
)


class RenderFormats(unittest.TestCase):
    def test_one_record_every_format(self):
        for argv in CASES:
            texts = cli.render_formats(argv, ("md", "json", "csv"))
            for fmt in ("md", "json", "csv"):
                self.assertEqual(texts[fmt], cli.render(argv + ["--format", fmt]), (argv, fmt))

    def test_cached_parser_keeps_no_state(self):
        # An option given in one parse must not leak into the next parse of the same command.
        first = cli.render(["gemm", "--m", "8", "--k", "16", "--n", "32", "--tile", "4x4x4",
                            "--tile-capacity", "1KiB", "--format", "json"])
        second = cli.render(["gemm", "--m", "8", "--k", "16", "--n", "32", "--format", "json"])
        self.assertIn('"tiles"', first)
        self.assertNotIn('"tiles"', second)


if __name__ == "__main__":
    unittest.main()

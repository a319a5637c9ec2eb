"""`budget reshard`: read ranges of a row-major checkpoint loaded on a new rank count; values by hand."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.checkpoint_reshard import ranges  # noqa: E402


def plan(*extra, model="qwen3-8b"):
    status, out, err = run_cli("budget", "reshard", "--model", model, *extra, "--format", "json")
    assert status == 0, err
    return json.loads(out)["result"]


class Reshard(unittest.TestCase):
    def test_quotient_and_remainder(self):
        # 10 rows of 3 over 4 ranks: 3, 3, 2, 2 rows = elements [0,9) [9,18) [18,24) [24,30)
        self.assertEqual(ranges(10, 3, 4, "rows"), [(0, 9), (9, 18), (18, 24), (24, 30)])
        # flat: 30 elements over 4: 8, 8, 7, 7
        self.assertEqual(ranges(10, 3, 4, "flat"), [(0, 8), (8, 16), (16, 23), (23, 30)])

    def test_four_to_eight_rows(self):
        # Qwen3-8B gate 12288 x 4096, 14 B per parameter: 704,643,072 B; each of 4 source row blocks (3072 rows) feeds
        # two targets (1536 rows): 2 reads per source and state, 8 x 4 states = 32 reads from 4 x 4 = 16 files
        r = plan("--source-parts", "4", "--target-parts", "8")
        self.assertEqual((r["logical_bytes"], r["requested_read_bytes"], r["read_ranges"], r["source_files"]),
                         (704643072, 704643072, 32, 16))
        second = r["reads"][1]   # target 1 reads rows 1536-3071 of source 0: offset 1536 x 4096 x 2 B
        self.assertEqual((second["source_file"], second["source_offset_bytes"], second["target_offset_bytes"]),
                         ("weight_bf16.rank0.bin", 1536 * 4096 * 2, 0))

    def test_flat_source_crosses_rows(self):
        # 7 flat source ranks of 50,331,648 elements: 7,190,236 for the first 3 (remainder 3), 7,190,235 after; target
        # 0 (rows 0-2457, 2458 x 4096 = 10,067,968 elements) reads all of source 0 and 2,877,732 elements of source 1
        r = plan("--source-parts", "7", "--source-layout", "flat", "--target-parts", "5")
        first, second = r["reads"][:2]
        self.assertEqual((first["element_end"], second["element_end"]), (7190236, 10067968))
        self.assertEqual(second["target_offset_bytes"], 7190236 * 2)
        self.assertEqual((r["read_ranges"], r["source_files"]), (44, 28))
        # the second read, elements [7,190,236, 10,067,968) of 4,096-wide rows: 7,190,236 = 1,755 x 4,096 + 1,756, so it
        # starts at (1755, 1756); its last element 10,067,967 = 2,457 x 4,096 + 4,095 ends row 2457
        self.assertEqual((second["first_coordinate"], second["last_coordinate"]), ([1755, 1756], [2457, 4095]))
        self.assertEqual(first["first_coordinate"], [0, 0])
        self.assertEqual(sum(r["target_payload_bytes"]), r["logical_bytes"])

    def test_weights_only_and_moe(self):
        r = plan("--source-parts", "4", "--target-parts", "8", "--weights-only")
        self.assertEqual((r["logical_bytes"], r["read_ranges"], r["source_files"]), (100663296, 8, 4))
        # Qwen3-235B-A22B: one expert's gate, 1536 x 4096 x 14 = 88,080,384 B
        self.assertEqual(plan("--source-parts", "4", "--target-parts", "8", model="qwen3-235b-a22b")["logical_bytes"],
                         88080384)


if __name__ == "__main__":
    unittest.main()

"""`budget zero-state`: persistent Adam state per rank under ZeRO 0-3 and the three shard roundings;
expected values derived by hand in the comments (the book's training-state figures:
bojieli/ai-infra-book calculations/results/README.md, table "全参数Adam／ZeRO持久状态")."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402

from infracalc.analyses.zero_state import physical_tensors, shard_elements, zero_stages  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402


def state(*argv):
    status, out, err = run_cli("budget", "zero-state", *argv, "--format", "json")
    assert status == 0, err
    return json.loads(out)["result"]


class ByHand(unittest.TestCase):
    # Two tensors of 5 elements, P = 10, on N = 4 ranks, BF16 gradients (16 B per parameter).
    TENSORS = [(5, 1), (5, 1)]

    def test_roundings(self):
        # flat: ceil(10/4) = 3 elements (2 of padding over the 4 ranks); per-tensor: ceil(5/4) + ceil(5/4) = 4.
        self.assertEqual(shard_elements(self.TENSORS, 4, "flat"), 3)
        self.assertEqual(shard_elements(self.TENSORS, 4, "per-tensor"), 4)
        # Stage 3 per rank: flat 16 x 3 = 48 B (padding 2 x 16 = 32 B over the cluster), per-tensor 16 x 4 = 64 B;
        # bytes: ceil(20/4) + ceil(20/4) + ceil(120/4) = 5 + 5 + 30 = 40 B (no element padding).
        flat = zero_stages(tensors=self.TENSORS, ranks=4, grad_bytes=2, rule="flat")
        self.assertEqual((flat["zero3_per_rank_bytes"], flat["stages"][3]["padding_bytes"]), (48, 32))
        self.assertEqual(zero_stages(tensors=self.TENSORS, ranks=4, grad_bytes=2, rule="per-tensor")
                         ["zero3_per_rank_bytes"], 64)
        self.assertEqual(zero_stages(tensors=self.TENSORS, ranks=4, grad_bytes=2, rule="bytes")
                         ["zero3_per_rank_bytes"], 40)

    def test_stages_and_fit(self):
        # flat, FP32 gradients (18 B per parameter): stage 0 = 18 x 10 = 180 B; stage 1 = 2 x 10 + 4 x 10 +
        # 3 x 4 x 3 = 96 B; stage 2 = 20 + 4 x 3 + 36 = 68 B; stage 3 = 18 x 3 = 54 B. Capacity 68: stages 2 and 3;
        # with 1 B live beside them only stage 3.
        r = zero_stages(tensors=self.TENSORS, ranks=4, grad_bytes=4, rule="flat", capacity_bytes=68)
        self.assertEqual([s["per_rank_bytes"] for s in r["stages"]], [180, 96, 68, 54])
        self.assertEqual(r["stages_fitting"], [2, 3])
        self.assertEqual(zero_stages(tensors=self.TENSORS, ranks=4, grad_bytes=4, rule="flat", extra_live_bytes=1,
                                     capacity_bytes=68)["stages_fitting"], [3])
        # Stage 0 replicates everything: cluster 4 x 180 = 720 B = 180 unique + 540 replicated (weights 20 x 3,
        # gradients 40 x 3, master, m, v 40 x 3 each); at stage 1 the three FP32 states pad (3 x 4 - 10) x 4 = 8 B each.
        self.assertEqual([c["replicated_extra_bytes"] for c in r["components"] if c["zero_stage"] == 0],
                         [60, 120, 120, 120, 120])
        self.assertEqual([c["padding_bytes"] for c in r["components"] if c["zero_stage"] == 1], [0, 0, 8, 8, 8])

    def test_stacked_experts_are_physical_tensors(self):
        # Qwen3-235B-A22B: 94 layers x 128 experts x 3 projections of 1536 x 4096 = 6,291,456 elements each.
        tensors = physical_tensors(load_model("qwen3-235b-a22b"))
        self.assertEqual(sum(c for n, c in tensors if n == 1536 * 4096), 94 * 128 * 3)


class Book(unittest.TestCase):
    def test_seven_ranks(self):
        # Qwen3-8B, P = 8,190,735,360 on 7 ranks: flat ceil(P/7) = 1,170,105,052 elements x 16 B = 18,721,680,832 B
        # (the book's training-state-flat-seven); per-tensor 18,721,685,472 B (-tensor-seven); train's rounding
        # 2 ceil(2P/7) + ceil(12P/7) = 2 x 2,340,210,103 + 14,041,260,618 = 18,721,680,824 B. At 24 GiB only stage 3
        # fits (stage 2: 2P + 14P/7 = 4P = 32.8 GB).
        for rule, expected in (("flat", 18_721_680_832), ("per-tensor", 18_721_685_472), ("bytes", 18_721_680_824)):
            r = state("--model", "qwen3-8b", "--ranks", "7", "--shard", rule, "--capacity", "24GiB")
            self.assertEqual((r["zero3_per_rank_bytes"], r["stages_fitting"]), (expected, [3]))

    def test_qwen235_sixty_four_ranks(self):
        # 235,093,634,560 x 16 B = 3,761,498,152,960 B unsharded; / 64 = 58,773,408,640 B per rank at stage 3.
        r = state("--model", "qwen3-235b-a22b", "--ranks", "64", "--shard", "flat")
        self.assertEqual((r["parameters"], r["unsharded_bytes"], r["zero3_per_rank_bytes"]),
                         (235_093_634_560, 3_761_498_152_960, 58_773_408_640))
        self.assertIsNone(r["stages_fitting"])


if __name__ == "__main__":
    unittest.main()

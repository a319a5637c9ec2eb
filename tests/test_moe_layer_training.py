"""`budget moe-layer-training`: one MoE layer's fixed-selection training ledger; expected values derived by
hand in the comments (the book's v4-moe-training files, bojieli/ai-infra-book:calculations/results/)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402

from infracalc.analyses.moe_layer_training import histogram, moe_layer_training  # noqa: E402


def tiny(**kw):
    # r = 2 rows of width h = 4, E = 4 experts of width f = 2, top-2 (a = 4), a shared expert of width S = 2.
    args = dict(rows=2, hidden=4, expert_width=2, shared_width=2, experts=4, top_k=2, hashed=False, vocab=0,
                routing="balanced")
    args.update(kw)
    return moe_layer_training(**args)


class ByHand(unittest.TestCase):
    def test_histograms(self):
        # balanced: row 0 -> experts 0, 1; row 1 -> 2, 3. concentrated: both rows -> experts 0, 1.
        self.assertEqual(histogram(2, 4, 2, "balanced"), [1, 1, 1, 1])
        self.assertEqual(histogram(2, 4, 2, "concentrated"), [2, 2, 0, 0])
        self.assertEqual(histogram(3, 4, 2, "balanced"), [2, 2, 1, 1])      # row 2 -> 4 mod 4, 5 mod 4

    def test_histogram_closed_form_is_the_assignment_loop(self):
        # the closed form (floor(a / E) + [x < a mod E]; r on experts j < k) against the declared selection,
        # walked assignment by assignment; and a batch of 10^15 rows answers without walking them
        def walk(rows, experts, top_k, routing):
            counts = [0] * experts
            for i in range(rows):
                for j in range(top_k):
                    counts[(i * top_k + j) % experts if routing == "balanced" else j] += 1
            return counts
        for rows in range(25):
            for experts, top_k in ((1, 1), (4, 2), (8, 3), (16, 6)):
                for routing in ("balanced", "concentrated"):
                    self.assertEqual(histogram(rows, experts, top_k, routing), walk(rows, experts, top_k, routing))
        self.assertEqual(histogram(10**15, 256, 6, "balanced")[:2], [23437500000000, 23437500000000])

    def test_matrix_and_scalar(self):
        r = tiny()
        # Per expert of 1 row: 6 x 1 x 4 x 2 = 48 forward, 96 backward; router 2 x 2 x 4 x 4 = 64 / 128;
        # shared 6 x 2 x 4 x 2 = 96; totals 64 + 6 (a f + r S) h = 64 + 6 x 12 x 4 = 352, backward 704.
        self.assertEqual([x["forward_matrix_flops"] for x in r["experts"]], [48, 48, 48, 48])
        self.assertEqual((r["totals"]["forward_matrix_flops"], r["totals"]["backward_matrix_flops"]), (352, 704))
        # F = a f + r S = 8 + 4 = 12: SiLU and product 24, route weight a f = 8, accumulation (a + r) h = 24;
        # backward SwiGLU 72, route adjoint a (3f - 1) = 20, branches and scatter (2a + 3r) h = 56;
        # router r (3k - 1) + r E = 10 + 8 = 18 forward, r (5k - 1 + 3E) = 2 x 21 = 42 backward.
        s = r["scalar"]
        self.assertEqual((s["forward_silu_and_product_flops"], s["forward_route_weight_product_flops"],
                          s["forward_output_accumulation_flops"]), (24, 8, 24))
        self.assertEqual((s["backward_swiglu_flops"], s["backward_route_weight_flops"],
                          s["backward_input_branches_and_scatter_flops"]), (72, 20, 56))
        self.assertEqual((r["totals"]["forward_scalar_flops"], r["totals"]["backward_scalar_flops"]),
                         (18 + 56, 42 + 148))

    def test_hash_layer_and_saved(self):
        # A hash layer: no r E selection scores forward (10), no top-k rows, a lookups, int32 ids (4 B each),
        # no bias, a vocab x k table (7 x 2 = 14 entries).
        r = tiny(hashed=True, vocab=7)
        self.assertEqual((r["router"]["forward_scalar_flops"], r["nonflop"]["topk_selection_rows"],
                          r["nonflop"]["hash_lookup_entries"]), (10, 0, 4))
        self.assertEqual((r["parameters"]["selection_bias"], r["parameters"]["hash_table_int32_entries"]), (0, 14))
        # Saved: X 4rh = 32, ids 4a = 16, slots 16a = 64, logits and scores 4rE = 32 each, probabilities and
        # weights 4a = 16 each, denominator 4r = 8, gate/sigmoid/up 12F = 144, product 4F = 48, routed down input
        # 4af = 32, masks 2F = 24: 464 B.
        self.assertEqual(r["saved_total_bytes"], 464)


class Book(unittest.TestCase):
    def test_flash_layer(self):
        # One DeepSeek-V4-Flash top-k layer, 2 x 32 = 64 rows (the book's v4-moe-training-batch2): forward
        # 2 x 64 x 4096 x 256 + 6 x (384 + 64) x 4096 x 2048 = 22,682,796,032 matrix FLOPs, the FP32 save set
        # 20,852,992 B; the router's scalar 64 x (17 + 256) = 17,472 forward.
        status, out, err = run_cli("budget", "moe-layer-training", "--model", "deepseek-v4-flash", "--batch", "2",
                                   "--tokens", "32", "--format", "json")
        self.assertEqual(status, 0, err)
        r = json.loads(out)["result"]
        self.assertEqual((r["layer"], r["totals"]["forward_matrix_flops"], r["saved_total_bytes"],
                          r["router"]["forward_scalar_flops"]), (3, 22_682_796_032, 20_852_992, 17_472))

    def test_matrix_work_is_train_ledgers(self):
        # The same layer's router, routed and shared rows of `train --seq 128` (layers 3-42 share one block,
        # 40 of them) sum to this ledger's forward and backward matrix FLOPs: one count, two views.
        status, out, _ = run_cli("train", "--model", "deepseek-v4-flash", "--seq", "128", "--format", "json")
        rows = [o for o in json.loads(out)["operators_per_micro_batch"] if o["layers"] == "3-42"
                and (o["name"] == "router" or o["name"].startswith(("experts.", "shared.")))]
        status, out, _ = run_cli("budget", "moe-layer-training", "--model", "deepseek-v4-flash", "--format", "json")
        t = json.loads(out)["result"]["totals"]
        self.assertEqual((sum(o["forward_matrix_flops"] for o in rows), sum(o["backward_matrix_flops"] for o in rows)),
                         (40 * t["forward_matrix_flops"], 40 * t["backward_matrix_flops"]))


if __name__ == "__main__":
    unittest.main()

"""The tile view of `gemm` and `attention` (analyses/tiles.py): every expected value derived by hand
in its comment, from the formulas in the module docstring (and docs/gemm.md, docs/attention.md)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses import tiles  # noqa: E402

BF16 = dict(a_bytes=2, b_bytes=2, c_bytes=2)


class GemmTile(unittest.TestCase):
    def test_output_stationary_by_hand(self):
        # M=1024, K=4096, N=12288 (Qwen3-8B's up projection), tile 128x32x128:
        # bm = 8, bk = 128, bn = 96; A read 2*1024*4096*96 = 805,306,368; B read 2*4096*12288*8 =
        # 805,306,368; C write 2*1024*12288 = 25,165,824; sum 1,635,778,560 (the book's figure).
        # Working: 1*(2*128*32 + 2*32*128) + 4*128*128 = 16,384 + 65,536 = 81,920.
        r = tiles.gemm_tile(1024, 4096, 12288, (128, 32, 128), **BF16)
        self.assertEqual((r["m_blocks"], r["k_blocks"], r["n_blocks"]), (8, 128, 96))
        self.assertEqual(r["a_read_bytes"], 805_306_368)
        self.assertEqual(r["b_read_bytes"], 805_306_368)
        self.assertEqual(r["c_write_bytes"], 25_165_824)
        self.assertEqual(r["partial_store_bytes"], 0)
        self.assertEqual(r["next_level_bytes"], 1_635_778_560)
        self.assertEqual(r["working_bytes"], 81_920)

    def test_k_outer_partials(self):
        # k-outer stores and reloads FP32 partials after each of the bk-1 = 127 nonfinal K tiles:
        # 4*1024*12288*127 = 6,392,119,296 each way; total 1,635,778,560 + 2*6,392,119,296 = 14,420,017,152.
        r = tiles.gemm_tile(1024, 4096, 12288, (128, 32, 128), schedule="k-outer", **BF16)
        self.assertEqual(r["partial_store_bytes"], 6_392_119_296)
        self.assertEqual(r["next_level_bytes"], 14_420_017_152)

    def test_tail_and_padding(self):
        # M=1025: bm = 9; A 2*1025*4096*96 = 806,092,800; B 2*4096*12288*9 = 905,969,664; C 2*1025*12288 =
        # 25,190,400; sum 1,737,252,864. Padded work 2 * (9*128*96 = 110,592 tiles) * (128*32*128 = 524,288)
        # = 115,964,116,992 > valid 2*1025*4096*12288 = 103,179,878,400.
        r = tiles.gemm_tile(1025, 4096, 12288, (128, 32, 128), **BF16)
        self.assertEqual(r["next_level_bytes"], 1_737_252_864)
        self.assertEqual(r["padded_matrix_flops"], 115_964_116_992)
        self.assertEqual(r["valid_matrix_flops"], 103_179_878_400)

    def test_element_sizes(self):
        # fp8 input and weight, fp32 output, tile 2x2x2 on M=K=N=4: bm=bk=bn=2: A 1*16*2 = 32,
        # B 1*16*2 = 32, C 4*16 = 64; working 2*(1*4 + 1*4) + 4*4 = 32 (double buffered).
        r = tiles.gemm_tile(4, 4, 4, (2, 2, 2), a_bytes=1, b_bytes=1, c_bytes=4, buffers=2)
        self.assertEqual(r["next_level_bytes"], 128)
        self.assertEqual(r["working_bytes"], 32)

    def test_capacity_choice(self):
        # Capacity 24,576: 32x32x32 (working 2*32*32 + 2*32*32 + 4*32*32 = 8,192) and 64x32x64 (4,096 + 4,096
        # + 16,384 = 24,576) fit, 128x32x128 (81,920) does not; the best is 64x32x64 (bm = 16, bn = 192):
        # A 2*1024*4096*192 = 1,610,612,736 + B 2*4096*12288*16 = 1,610,612,736 + C 25,165,824 = 3,246,391,296.
        t = tiles.gemm_tiles(1024, 4096, 12288, [(32, 32, 32), (64, 32, 64), (128, 32, 128)], 24_576, **BF16)
        self.assertEqual(t["fitting_candidates"], 2)
        self.assertEqual(t["best_tile"], [64, 32, 64])
        self.assertEqual(t["best_next_level_bytes"], 3_246_391_296)
        self.assertEqual(t["one_read_write_bytes"], 2 * (1024 * 4096 + 4096 * 12288 + 1024 * 12288))
        none = tiles.gemm_tiles(1024, 4096, 12288, [(128, 32, 128)], 100, **BF16)
        self.assertIsNone(none["best_tile"])

    def test_command(self):
        code, out, _ = run_cli("gemm", "--m", "1024", "--k", "4096", "--n", "12288", "--tile", "128x32x128",
                               "--tile-capacity", "80KiB", "--format", "json")
        self.assertEqual(code, 0)
        self.assertEqual(json.loads(out)["tiles"]["best_next_level_bytes"], 1_635_778_560)
        for bad in (("--tile", "128x32"), ("--tile", "128x32x128"), ("--tile-capacity", "1KiB"),
                    ("--tile", "1x1x1", "--tile-capacity", "1", "--weight-dtype", "int4-g128")):
            code, _, err = run_cli("gemm", "--m", "4", "--k", "4", "--n", "4", *bad)
            self.assertEqual(code, 2, bad)
            self.assertEqual(len(err.strip().splitlines()), 1, err)


class AttentionTile(unittest.TestCase):
    def test_full_scan_by_hand(self):
        # One head, T = K = 8192, d = 128, BF16, capacity 131,072, KV block b = 1, one slot:
        # fixed 2*1*128 = 256; per query 2*128 + 4*1 + 4*128 + 12 = 784; a = floor(130,816/784) = 166;
        # query blocks ceil(8192/166) = 50, each reads K and V of all 8192 keys: 2*2*8192*128 = 4,194,304;
        # KV 209,715,200; Q + O 2*2*8192*128 = 4,194,304; interface 213,909,504 (the book's figure).
        r = tiles.attention_tile(8192, 8192, 128, 1, 131_072, causal=False, q_bytes=2, kv_bytes=2)
        self.assertEqual(r["query_block"], 166)
        self.assertEqual(r["query_blocks"], 50)
        self.assertEqual(r["kv_block_visits"], 50 * 8192)
        self.assertEqual(r["interface_bytes"], 213_909_504)
        self.assertEqual(r["working_bytes"], 166 * 784 + 256)
        # every row updates its state once per KV block: 8192 * 8192; rescales (8192*8192 - 8192) * 128
        self.assertEqual(r["row_state_updates"], 8192 * 8192)
        self.assertEqual(r["old_output_rescales"], (8192 * 8192 - 8192) * 128)

    def test_causal_by_hand(self):
        # Causal, b = 1, a = 166: block j (1..49) ends at 166 j and reads 166 j keys, the last ends at 8192:
        # covered keys 166*(1+...+49) + 8192 = 211,542; KV 2*2*128*211,542 = 108,309,504; + Q/O 4,194,304
        # = 112,503,808 (the book's figure); valid 4*128*8192*8193/2 = 17,181,966,336.
        r = tiles.attention_tile(8192, 8192, 128, 1, 131_072, causal=True, q_bytes=2, kv_bytes=2)
        self.assertEqual(r["interface_bytes"], 112_503_808)
        self.assertEqual(r["valid_matrix_flops"], 17_181_966_336)
        # row updates with b = 1: sum of i for i = 1..8192 = 33,558,528
        self.assertEqual(r["row_state_updates"], 33_558_528)

    def test_causal_with_history_and_blocks(self):
        # T = 3 queries, K = 5 keys (history 2), d = 1, b = 2, capacity large: a = 3, one query block
        # [0,3) sees keys 0..4: ceil(5/2) = 3 blocks, covered min(5, 6) = 5; KV 2*2*5*1 = 20;
        # pairs 3*2 + 3*4/2 = 12, valid 4*12 = 48; visited-tile 4*3*5 = 60; padded 4*3*2*3 = 72;
        # row updates ceil(3/2) + ceil(4/2) + ceil(5/2) = 2 + 2 + 3 = 7 (closed form S(5) - S(2) = 9 - 2).
        r = tiles.attention_tile(3, 5, 1, 2, 10**6, causal=True, q_bytes=2, kv_bytes=2)
        self.assertEqual(r["kv_read_bytes"], 20)
        self.assertEqual(r["valid_matrix_flops"], 48)
        self.assertEqual(r["visited_tile_matrix_flops"], 60)
        self.assertEqual(r["padded_matrix_flops"], 72)
        self.assertEqual(r["row_state_updates"], 7)
        self.assertEqual(r["old_output_rescales"], 4)

    def test_two_slots_and_no_fit(self):
        # Two slots double the K/V tile: b = 64: fixed 2*64*128*2 = 32,768; per query 768 + 256 + 12 = 1036;
        # a = floor(98,304/1036) = 94. Capacity 16,384 at b = 64 one slot: fixed 16,384, no query row fits.
        r = tiles.attention_tile(8192, 8192, 128, 64, 131_072, causal=False, q_bytes=2, kv_bytes=2, slots=2)
        self.assertEqual(r["query_block"], 94)
        t = tiles.attention_tiles(129, 129, 128, [1, 64, 128], 16_384, causal=True, q_bytes=2, kv_bytes=2)
        self.assertEqual(t["fitting_candidates"], 1)
        # b = 1: a = floor(16,128/784) = 20; covered 20+40+...+120 + 129 = 549 keys; 2*2*128*549 + 4*129*128
        self.assertEqual(t["best_interface_bytes"], 4 * 128 * 549 + 4 * 129 * 128)

    def test_command(self):
        code, out, _ = run_cli("attention", "--queries", "8192", "--keys", "8192", "--heads", "1",
                               "--head-dim", "128", "--no-causal", "--kv-block", "1", "--kv-block", "64",
                               "--tile-capacity", "128KiB", "--format", "json")
        self.assertEqual(code, 0)
        t = json.loads(out)["tiles"]
        self.assertEqual((t["best_kv_block"], t["best_interface_bytes"]), (1, 213_909_504))
        code, _, err = run_cli("attention", "--queries", "4", "--keys", "4", "--heads", "1", "--head-dim", "8",
                               "--kv-block", "2")
        self.assertEqual(code, 2)
        self.assertIn("--tile-capacity", err)


if __name__ == "__main__":
    unittest.main()

"""`budget bank`, `budget rmsnorm`, `budget quant-gemm`: the chapter-5 kernel-view budgets; every
expected value derived by hand in its comment."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.bank_mapping import bank_budget  # noqa: E402
from infracalc.analyses.quant_gemm import quant_gemm  # noqa: E402
from infracalc.analyses.split_reduction import split_rmsnorm  # noqa: E402


budget = budget_result


class BankService(unittest.TestCase):
    def test_column_at_stride_32_hits_one_bank(self):
        # lane i reads word 32 i: 32 i mod 32 = 0 for every lane -> bank 0 serves 32 requests, one a round: 32
        # rounds; the tile is 32 rows x 32 words x 4 B = 4,096 B, no padding; 32 lanes x 4 B = 128 B requested.
        r = budget("bank", "--access", "column")
        self.assertEqual((r["allocated_tile_bytes"], r["lane_requested_bytes"], r["service_rounds"]), (4096, 128, 32))
        self.assertEqual((r["banks_touched"], r["padding_bytes"]), (1, 0))

    def test_padding_one_word_spreads_the_column(self):
        # stride 33: word 33 i is in bank (33 i) mod 32 = i -> 32 banks, 1 round; 32 x 33 x 4 = 4,224 B allocated,
        # 32 x 1 x 4 = 128 B of padding.
        r = bank_budget(access="column", stride_words=33)
        self.assertEqual((r["allocated_tile_bytes"], r["padding_bytes"], r["service_rounds"]), (4224, 128, 1))
        self.assertEqual(r["banks_touched"], 32)

    def test_row_is_conflict_free(self):
        # words 0..31 -> banks 0..31, one each
        self.assertEqual(bank_budget(access="row", stride_words=32)["service_rounds"], 1)

    def test_same_word_counts_lanes_unless_broadcast(self):
        # 32 lanes on word 0: bank 0 serves 32 requests (32 rounds); with broadcast one distinct word: 1 round
        self.assertEqual(bank_budget(access="same-word", stride_words=32)["service_rounds"], 32)
        r = bank_budget(access="same-word", stride_words=32, broadcast=True)
        self.assertEqual((r["service_rounds"], r["served_word_bytes"], r["distinct_requested_bytes"]), (1, 4, 4))

    def test_ports_divide_the_rounds(self):
        # 32 requests on bank 0, 2 ports: ceil(32 / 2) = 16; 3 ports: ceil(32 / 3) = 11
        self.assertEqual(bank_budget(access="column", stride_words=32, ports=2)["service_rounds"], 16)
        self.assertEqual(bank_budget(access="column", stride_words=32, ports=3)["service_rounds"], 11)

    def test_stride_sharing_a_factor_with_the_banks(self):
        # stride 48 = 16 x 3: 48 i mod 32 = 16 (i mod 2) -> banks 0 and 16, 16 lanes each: 16 rounds
        r = bank_budget(access="column", stride_words=48)
        self.assertEqual((r["banks_touched"], r["service_rounds"]), (2, 16))

    def test_stride_below_the_row_is_an_error(self):
        status, _, err = run_cli("budget", "bank", "--access", "column", "--stride-words", "31")
        self.assertEqual(status, 2)
        self.assertIn("below the 32 words", err)


class SplitRMSNorm(unittest.TestCase):
    def test_one_row_eight_parts(self):
        # D = 4,096 BF16: fused 3 x 2 x 4,096 = 24,576 B. Split: pass 1 reads x 8,192 and writes 8 x 4 = 32 B of
        # partials; pass 2 reads 32 and writes a 4 B inverse; pass 3 reads x 8,192, 8 inverse reads 32, gamma
        # 8,192, writes y 8,192: 8,192 + 32 + 32 + 4 + 8,192 + 32 + 8,192 + 8,192 = 32,868 -> extra 8,292.
        r = budget("rmsnorm", "--model", "qwen3-8b", "--rows", "1", "--splits", "8")
        self.assertEqual((r["width"], r["partial_buffer_bytes"], r["inverse_buffer_bytes"]), (4096, 32, 4))
        self.assertEqual((r["fused_interface_bytes"], r["split_interface_bytes"], r["additional_interface_bytes"]),
                         (24576, 32868, 8292))
        # adds: local 4,096 - 8 = 4,088, merge 7; scalar FLOPs 4 x 4,096 + 1 = 16,385; largest part 512 x 4 B
        self.assertEqual((r["local_reduction_adds"], r["merge_reduction_adds"], r["scalar_flops"]), (4088, 7, 16385))
        self.assertEqual((r["first_pass_groups"], r["second_pass_groups"], r["split_largest_part_fp32_bytes"]),
                         (8, 1, 2048))

    def test_rows_scale_everything(self):
        # M = 1,024: partials 1,024 x 8 x 4 = 32,768; extra 1,024 x 8,292 = 8,491,008
        r = split_rmsnorm(rows=1024, width=4096, splits=8)
        self.assertEqual((r["partial_buffer_bytes"], r["additional_interface_bytes"]), (32768, 8491008))

    def test_wide_row_and_uneven_parts(self):
        # D = 16 x 4,096 = 65,536: extra = 2 x 65,536 + 12 x 8 + 4 = 131,172
        r = budget("rmsnorm", "--model", "qwen3-8b", "--rows", "1", "--splits", "8", "--width-multiplier", "16")
        self.assertEqual((r["width"], r["additional_interface_bytes"]), (65536, 131172))
        # 7 parts of 4,096 (585 or 586 wide): partials 28 B, extra 8,192 + 84 + 4 = 8,280, largest 586 x 4 = 2,344
        r = split_rmsnorm(rows=1, width=4096, splits=7)
        self.assertEqual((r["partial_buffer_bytes"], r["additional_interface_bytes"]), (28, 8280))
        self.assertEqual(r["split_largest_part_fp32_bytes"], 2344)


class QuantGemm(unittest.TestCase):
    def test_qwen235_expert_at_128_tiles(self):
        # M = 4,096, K = 4,096 (hidden), N = 1,536 (moe_intermediate_size); bm = 32, bn = 12.
        # A16 = 2 M K = 33,554,432, A8 = 16,777,216, W = K N = 6,291,456, C = 2 M N = 12,582,912.
        # separate: A16 + A8 + 12 A8 + 32 W + C = 33,554,432 + 16,777,216 + 201,326,592 + 201,326,592 + 12,582,912
        #         = 465,567,744 (444 MiB); full-row fused: A16 + 12 A16 + 32 W + C = 650,117,120 (620 MiB);
        # prefix: 12 A16 + 32 W + C = 616,562,688 (588 MiB). Scales: 4 M = 16,384 written, 4 M x 12 = 196,608 read.
        r = budget("quant-gemm", "--model", "qwen3-235b-a22b", "--tokens", "4096", "--tile", "128x128x128")
        self.assertEqual((r["k"], r["n"], r["m_blocks"], r["n_blocks"], r["output_tiles"]), (4096, 1536, 32, 12, 384))
        self.assertEqual([d["main_bytes"] for d in r["designs"]], [465567744, 650117120, 616562688])
        self.assertEqual([(d["scale_write_bytes"], d["scale_read_bytes"]) for d in r["designs"]],
                         [(16384, 196608)] * 2 + [(0, 0)])
        self.assertEqual(r["full_scale_fusion_extra_main_bytes"], 650117120 - 465567744)

    def test_one_column_block_makes_fusion_free(self):
        # tn = N: bn = 1, so separate = A16 + 2 A8 + 32 W + C = full-row fused = 2 A16 + 32 W + C (268 MiB)
        r = quant_gemm(m=4096, k=4096, n=1536, tile=(128, 128, 1536))
        self.assertEqual([d["main_bytes"] for d in r["designs"]], [268 << 20, 268 << 20, 236 << 20])

    def test_tails_are_not_read_but_padded_work_is_counted(self):
        # M = 4,097, tn = 127: bm = 33, bn = 13; separate = 33,562,624 + 16,781,312 + 13 x 16,781,312
        # + 33 x 6,291,456 + 12,585,984 = 488,705,024; padded FLOPs 2 x (33 x 128) x (32 x 128) x (13 x 127)
        # = 57,129,566,208 against 2 x 4,097 x 4,096 x 1,536 = 51,552,190,464.
        r = quant_gemm(m=4097, k=4096, n=1536, tile=(128, 128, 127))
        self.assertEqual(r["separate_main_bytes"], 488705024)
        self.assertEqual((r["padded_matrix_flops"], r["valid_matrix_flops"]), (57129566208, 51552190464))
        self.assertEqual(r["designs"][0]["scale_read_bytes"], 4 * 4097 * 13)

    def test_dense_model_is_an_error(self):
        status, _, err = run_cli("budget", "quant-gemm", "--model", "qwen3-8b", "--tokens", "16", "--tile", "8x8x8")
        self.assertEqual(status, 2)
        self.assertIn("no MoE layer", err)


if __name__ == "__main__":
    unittest.main()

"""`budget attention-input` and `budget matrix-vector`: one attention head's on-chip schedules in
declared ticks; every expected value derived by hand in its comment."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.attention_handoff import attention_input, input_schedule, matrix_vector  # noqa: E402
from infracalc.analyses.sm_balance import tile_balance  # noqa: E402

RATES = {"matrix": 8192, "scalar": 128, "exp": 16, "div": 16, "compare": 128, "link": 128}


budget = budget_result


class InputSlots(unittest.TestCase):
    def test_book_tile(self):
        # d = 128 in chunks of 32: 4 chunks of 2 x (128 + 128) x 32 = 16,384 B; load 16,384 / 256 = 64 ticks,
        # compute 2 x 128 x 128 x 32 / 8192 = 128, register staging 2 x 16,384 / 256 = 128.
        # Synchronous: each chunk 64 + 128 latency + 128 staging + 128 compute = 448, serial: 4 x 448 = 1,792.
        # Asynchronous, one slot: 64 + 128 + 128 = 320 each: 1,280; two slots: chunk 1 issued at 64, ready 256,
        # waits for compute (320), chunk 2 reuses slot 0 at 320: 192 + 4 x 128 + 2 x 64 = 768; unbounded
        # 192 + 4 x 128 = 704, reached with 4 slots.
        r = budget("attention-input", "--model", "qwen3-8b")
        self.assertEqual((r["chunks"], r["chunk_input_bytes"], r["load_ticks"], r["compute_ticks"], r["register_ticks"]),
                         (4, 16384, 64, 128, 128))
        self.assertEqual([x["finish_tick"] for x in r["rows"]], [1792] * 4 + [1280, 768, 704, 704])
        self.assertEqual((r["unbounded_finish_tick"], r["fewest_listed_slots_reaching_it"]), (704, 4))
        self.assertEqual([x["fits"] for x in r["rows"][4:]], [True, True, True, False])   # 8 x 16 KiB > 64 KiB

    def test_capacity_screen_picks_the_fastest_fitting(self):
        # 16 KiB capacity: only one slot fits, so the fastest fitting asynchronous finish is 1,280, not 704
        r = attention_input(head_dim=128, tile=(128, 32, 128), latency=128, input_rate=256, matrix_rate=8192,
                            register_rate=256, capacity=16384, slot_counts=(1, 2, 4, 8))
        self.assertEqual((r["fastest_fitting_async_tick"], r["unbounded_finish_tick"]), (1280, 704))

    def test_slot_reuse_waits_for_the_compute(self):
        # one slot, load 10, latency 5, compute 20: chunk 1 issues at chunk 0's compute end (35)
        r = input_schedule(10, 20, 2, 5, 1)
        self.assertEqual([(c["issue"], c["compute_end"]) for c in r["chunks"]], [(0, 35), (35, 70)])


class MatrixVector(unittest.TestCase):
    def test_one_group_staged(self):
        # L = 128, r = 128, d = 128: QK^T 2 x 128 x 128 x 128 = 4,194,304 FLOPs -> 512 ticks; scores 4 x 128 x 128 =
        # 65,536 B staged twice / 128 = 1,024; softmax ceil(49,024/128) + ceil(16,256/128) + 16,384/16 + 16,384/16
        # = 383 + 127 + 1,024 + 1,024 = 2,558; probabilities 2 x 32,768 / 128 = 512; PV 512: 5,118 in a chain.
        r = matrix_vector(head_dim=128, length=128, group_rows=128, slots=1, direct=False, rates=RATES, capacity=98304)
        self.assertEqual((r["finish_tick"], r["first_vector_start_tick"], r["served_handoff_bytes"]), (5118, 1536, 196608))
        # direct: each crossing served once: 512 + 512 + 2,558 + 256 + 512 = 4,350
        r = matrix_vector(head_dim=128, length=128, group_rows=128, slots=1, direct=True, rates=RATES, capacity=98304)
        self.assertEqual(r["finish_tick"], 4350)

    def test_row_groups_overlap_with_slots(self):
        # 4 groups of 32 rows, QK 128 ticks, scores 256 (staged), softmax 96 + 32 + 256 + 256 = 640,
        # probabilities 128, PV 128. One slot: 4 x 1,280 = 5,120. Two slots: the vector server is the bottleneck
        # from 384: 384 + 4 x 640 + 128 + 128 = 3,200.
        self.assertEqual(matrix_vector(head_dim=128, length=128, group_rows=32, slots=1, direct=False, rates=RATES,
                                       capacity=98304)["finish_tick"], 5120)
        r = budget("matrix-vector", "--model", "qwen3-8b", "--slots", "2")
        self.assertEqual((r["finish_tick"], r["reserved_bytes"], r["fits"]), (3200, 2 * (16384 + 8192), True))
        # group 0 holds its slot from its QK^T (0) to its PV end (1,280); masked scores of rows 0..31: sum of 127 - i
        g = r["group_work"][0]
        self.assertEqual((g["slot_taken_tick"], g["slot_released_tick"], g["masked_scores"]), (0, 1280, 3568))

    def test_capacity(self):
        r = matrix_vector(head_dim=128, length=128, group_rows=32, slots=4, direct=False, rates=RATES, capacity=65536)
        self.assertEqual((r["fits"], r["capacity_qualified_finish_tick"]), (False, None))


class SMBalance(unittest.TestCase):
    RATES = {"matrix": 8192, "exp": 16, "smem": 128}

    def test_square_tile(self):
        # 128 x 128, d = 128: 4 x 128^3 = 8,388,608 FLOPs / 8,192 = 1,024 cycles; 16,384 exponentials / 16 = 1,024;
        # shared memory: one QK^T output tile reads Q and K (2 x 128 x 128 x 2 B = 65,536) and one PV tile reads V
        # (128 x 128 x 2 = 32,768): 98,304 B / 128 = 768 cycles; bound 1,024, matrix and exp tied.
        r = tile_balance(128, 128, 128, rates=self.RATES, supply={"matrix": 1, "exp": 1, "smem": 1})
        self.assertEqual((r["matrix_cycles"], r["exp_cycles"], r["smem_cycles"]), (1024, 1024, 768))
        self.assertEqual((r["bound_cycles"], r["limited_by"]), (1024, "matrix, exp"))

    def test_doubling_moves_the_bottleneck(self):
        # matrix and exp doubled: 512, 512, smem still 768 -> bound 768 on shared memory (3/4 of the baseline)
        r = tile_balance(128, 128, 128, rates=self.RATES, supply={"matrix": 2, "exp": 2, "smem": 1})
        self.assertEqual((r["bound_cycles"], r["limited_by"]), (768, "smem"))
        # 256 x 128: two QK^T and two PV output tiles, each PV tile reads all N = 128 rows of V: 4 x 32,768 +
        # 2 x 32,768 = 196,608 B; unique Q, K, V 2 x (256 + 2 x 128) x 128 = 131,072 B
        r = tile_balance(256, 128, 128, rates=self.RATES, supply={"matrix": 1, "exp": 1, "smem": 1})
        self.assertEqual((r["smem_read_bytes"], r["unique_qkv_bytes"], r["smem_cycles"]), (196608, 131072, 1536))
        # 128 x 256: one PV tile reads N = 256 rows of V: 2 x 65,536 + 65,536 = 196,608 B as well
        r = tile_balance(128, 256, 128, rates=self.RATES, supply={"matrix": 1, "exp": 1, "smem": 1})
        self.assertEqual((r["qk_output_tiles"], r["pv_output_tiles"], r["smem_read_bytes"]), (2, 1, 196608))

    def test_wider_head(self):
        # d = 256: one QK^T output tile reads Q and K of 2 x 128 x 256 x 2 = 131,072 B; PV has two 128-wide output
        # tiles, each reading V's 128 rows x 128 columns: 2 x 32,768; total 196,608 B
        r = tile_balance(128, 128, 256, rates=self.RATES, supply={"matrix": 1, "exp": 1, "smem": 1})
        self.assertEqual((r["pv_output_tiles"], r["smem_read_bytes"], r["matrix_flops"]), (2, 196608, 16777216))

    def test_book_table(self):
        # the book's 16 rows: bounds per tile for supplies 1:1:1, 2:1:1, 2:2:1, 2:2:2
        r = budget("sm-balance", "--model", "qwen3-8b")
        self.assertEqual([x["bound_cycles"] for x in r["rows"]],
                         [1024, 1024, 768, 512, 2048, 2048, 1536, 1024, 2048, 2048, 1536, 1024, 4096, 4096, 3072, 2048])


if __name__ == "__main__":
    unittest.main()

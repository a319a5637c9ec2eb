"""`budget persistent`, `budget stream-buffer`, `budget host-transfer`: producer-consumer schedules
with declared costs; every expected value derived by hand in its comment."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.persistent_tiles import live_peak, persistent_tiles  # noqa: E402
from infracalc.analyses.slot_pipelines import fifo, host_transfer, stream_buffer  # noqa: E402

QWEN8 = {"hidden": 4096, "inter": 12288}
TEACHING = {"matrix_rate": 200 * 10**12, "activation_rate": 20 * 10**9, "launch_ns": 5000, "dispatch_ns": 500,
            "publish_ns": 200}


budget = budget_result


class Persistent(unittest.TestCase):
    def test_barrier_and_tiles(self):
        # 512 rows: matrix 2 x 512 x 4,096 x 12,288 = 51,539,607,552 FLOPs / 200 T = 257,698.03776 ns; activation
        # 512 x 12,288 = 6,291,456 elements / 20 G = 314,572.8 ns; barrier 2 x 5,000 + both = 582,270.83776 ns.
        # 8 tiles of 64: matrix task 700 + 32,212.25472, activation task 700 + 39,321.6 (the slower worker):
        # 5,000 + 32,912.25472 + 8 x 40,021.6 = 358,085.05472 ns.
        r = persistent_tiles(**QWEN8, tokens=512, tile_rows=64, **TEACHING)
        self.assertEqual(Fraction(r["barrier_finish_ns"]), Fraction("582270.83776"))
        self.assertEqual(Fraction(r["persistent_finish_ns"]), Fraction("358085.05472"))
        self.assertEqual((r["tiles"], r["device_tasks"], r["dispatch_total_ns"]), (8, 16, 8000))
        # tile i lives from 5,000 + 32,912.25 i to 5,000 + 32,912.25 + 40,021.6 (i + 1): four overlap at most
        self.assertEqual(r["intermediate_live_peak_bytes"], 4 * 2 * 64 * 12288)

    def test_slow_dispatch_and_tail(self):
        # dispatch 50 us: task cost 50,200; activation-bound: 5,000 + 50,200 + 32,212.25472 + 8 x (50,200 + 39,321.6)
        # = 803,585.05472 ns; barrier unchanged
        r = budget("persistent", "--model", "qwen3-8b", "--tokens", "512", "--tile-rows", "64", "--dispatch", "50us")
        self.assertEqual(Fraction(r["persistent_finish_ns"]), Fraction("803585.05472"))
        self.assertEqual(r["intermediate_live_peak_bytes"], 3 * 2 * 64 * 12288)
        # 513 rows: 9 tiles, the last of 1 row; barrier 10,000 + 513 x (503.31648 + 614.4) = 583,388.55424
        r = persistent_tiles(**QWEN8, tokens=513, tile_rows=64, **TEACHING)
        self.assertEqual((r["tiles"], r["schedule"][-1]["rows"]), (9, 1))
        self.assertEqual(Fraction(r["barrier_finish_ns"]), Fraction("583388.55424"))
        self.assertEqual(Fraction(r["persistent_finish_ns"]), Fraction("359399.45472"))

    def test_one_tile_is_the_barrier_less_one_launch(self):
        # one tile: 5,000 + 700 + 257,698.03776 + 700 + 314,572.8 = 578,670.83776 = barrier - 5,000 + 1,400
        r = persistent_tiles(**QWEN8, tokens=512, tile_rows=512, **TEACHING)
        self.assertEqual(Fraction(r["persistent_finish_ns"]), Fraction(r["barrier_finish_ns"]) - 5000 + 1400)

    def test_live_peak_is_half_open(self):
        # [0, 2) and [2, 3) never overlap; [1, 3) overlaps both
        self.assertEqual(live_peak([(0, 2, 5), (2, 3, 7)]), 7)
        self.assertEqual(live_peak([(0, 2, 5), (2, 3, 7), (1, 3, 1)]), 8)


class StreamBuffer(unittest.TestCase):
    def test_book_fifo(self):
        # publications 4, 5, 6, 7, 8; takes 5, 7, 9, 11, 13 (interval 2); live: 1 at 4, 1 at 5 (take then publish),
        # 2 at 6, 2 at 7, 3 at 8 -> 3 slots of 64 x 128 x 2 = 16,384 B + 2 reorder slots = 81,920 > 65,536.
        # 2 slots left: block 4 waits for block 2's take at 9, still taken at 13.
        r = budget("stream-buffer", "--model", "qwen3-8b")
        self.assertEqual((r["block_bytes"], r["unbounded_peak_slots"], r["required_bytes"]), (16384, 3, 81920))
        self.assertEqual((r["unbounded_fits"], r["fifo_slots"], r["bounded_last_take_tick"]), (False, 2, 13))
        self.assertEqual((r["bounded_ticks"]["publish"], r["producer_delay_ticks"]), ([4, 5, 6, 7, 9], 1))

    def test_slow_producer_and_one_slot(self):
        # produce every 3 ticks: 4, 7, 10, 13, 16; takes 5, max(7, 8) = 8, 11, 14, 17: one slot live at a time
        f = fifo(5, 4, 3, 5, 2)
        self.assertEqual((f["take_ticks"], f["peak_slots"]), ([5, 8, 11, 14, 17], 1))
        # one slot: publications 4, 5, 7, 9, 11 (each after the previous take), takes 5, 7, 9, 11, 13
        f = fifo(5, 4, 1, 5, 2, slots=1)
        self.assertEqual((f["publish_ticks"], f["take_ticks"]), ([4, 5, 7, 9, 11], [5, 7, 9, 11, 13]))

    def test_no_slot_left(self):
        # 32,768 B all taken by the two reorder slots: no bounded schedule
        r = stream_buffer(block_bytes=16384, blocks=5, first_produce=4, produce_interval=1, first_consume=5,
                          consume_interval=2, budget_bytes=32768, reorder_slots=2)
        self.assertEqual((r["fifo_slots"], r["bounded_last_take_tick"]), (0, None))


class HostTransfer(unittest.TestCase):
    def test_double_slots(self):
        # block 8,192 x 4,096 x 2 = 64 MiB at 24 GiB/s: X = 1/384 s = 7,812,500/3 ns; serial 8 (1 + 2.6042 + 4) ms
        # = 60.8333 ms; consumption (4 ms) binds: 1 + 2.6042 + 8 x 4 = 35.6042 ms = 106,812,500/3 ns.
        r = budget("host-transfer", "--model", "qwen3-8b")
        self.assertEqual((r["h2d_bytes"], r["copy_ns"]), (8 * 64 * 2**20, "7812500/3"))
        self.assertEqual((Fraction(r["serial_ns"]), Fraction(r["slot_bound_finish_ns"])),
                         (Fraction(182500000, 3), Fraction(106812500, 3)))

    def test_one_device_slot_serializes_copy_and_consume(self):
        # one device slot: block i+1's copy waits for block i's consumption: 1 + 8 x (2.6042 + 4) = 53.8333 ms
        r = host_transfer(block_bytes=64 * 2**20, blocks=8, host_slots=2, device_slots=1, prepare_ns=10**6,
                          consume_ns=4 * 10**6, bandwidth=24 * 2**30)
        self.assertEqual(Fraction(r["slot_bound_finish_ns"]), 10**6 + 8 * (Fraction(7812500, 3) + 4 * 10**6))
        self.assertEqual((r["device_live_peak_bytes"], r["host_live_peak_bytes"]), (64 * 2**20, 2 * 64 * 2**20))

    def test_half_bandwidth(self):
        # 12 GiB/s: X = 15,625,000/3 ns; serial 8 x (1 + 5.2083 + 4) = 81.6667 ms; copy binds:
        # 1 + 8 x 5.2083 + 4 = 46.6667 ms
        r = host_transfer(block_bytes=64 * 2**20, blocks=8, host_slots=2, device_slots=2, prepare_ns=10**6,
                          consume_ns=4 * 10**6, bandwidth=12 * 2**30)
        self.assertEqual(Fraction(r["slot_bound_finish_ns"]), 5 * 10**6 + 8 * Fraction(15625000, 3))
        self.assertEqual(Fraction(r["serial_ns"]), 8 * (5 * 10**6 + Fraction(15625000, 3)))


    def test_slots_past_the_blocks_are_never_taken(self):
        # 8 blocks take at most 8 slots of each pool: 10^6 slots schedule as 8 do,
        # only the pools' reserved bytes grow
        kw = dict(block_bytes=64 * 2**20, blocks=8, prepare_ns=10**6, consume_ns=4 * 10**6, bandwidth=24 * 2**30)
        few, many = host_transfer(host_slots=8, device_slots=8, **kw), host_transfer(host_slots=10**6, device_slots=10**6, **kw)
        self.assertEqual(few["schedule"], many["schedule"])
        self.assertEqual(many["host_pool_bytes"], 10**6 * 64 * 2**20)


if __name__ == "__main__":
    unittest.main()

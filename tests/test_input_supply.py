"""`budget input-supply`: packing, the read / prepare / H2D / consume events and checkpoint contention;
values derived by hand (the book's training-supply-* event lists give the same)."""

import os
import sys
import unittest
from fractions import Fraction as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402,F401  (puts calculations/ on sys.path)

from infracalc.analyses.input_supply import input_supply, pack  # noqa: E402

US = F(1, 10**6)


def run(samples, **kw):
    args = dict(pack_tokens=512, host_slots=2, device_slots=2, storage_rate=2 * 10**9, h2d_rate=12 * 10**9,
                packing=100 * US, consume=2000 * US, every=0, snapshot=1000 * US, snapshot_slots=1,
                shared_storage=True, parameters=8190735360)
    args.update(kw)
    r = input_supply(samples=samples, **args)
    return r, {e["event"]: (F(e["start_s_exact"]), F(e["end_s_exact"])) for e in r["events"]}


BOOK = [(128, 512, 164 * US), (256, 1024, 228 * US), (192, 768, 196 * US), (320, 1280, 260 * US),
        (64, 256, 132 * US), (448, 1792, 324 * US), (256, 1024, 228 * US), (256, 1024, 228 * US)]


class InputSupply(unittest.TestCase):
    def test_next_fit(self):
        # 128 + 256 = 384, + 192 > 512: a new pack; 192 + 320 = 512; 64 + 448; 256 + 256
        self.assertEqual(pack(BOOK, 512), [[0, 1], [2, 3], [4, 5], [6, 7]])

    def test_first_pack_by_hand(self):
        # R0: 1536 B / 2e9 = 768 ns; P0: 164 + 228 + 100 us = 492 us, ends 492.768 us; H0: 512 x 21 = 10,752 B / 12e9
        # = 896 ns; C0 from 493.664 us for 2 ms: the device waits 493.664 us for its first pack
        r, e = run(BOOK)
        self.assertEqual(e["R0"], (0, F(768, 10**9)))
        self.assertEqual(e["P0"][1], F(492768, 10**9))
        self.assertEqual(e["C0"][0], F(493664, 10**9))
        self.assertEqual(r["device_wait_s_exact"], str(F(493664, 10**9)))
        # four packs consumed back to back: training ends 493.664 us + 8 ms
        self.assertEqual(r["training_end_s_exact"], str(F(493664, 10**9) + F(8, 1000)))

    def test_snapshot_stalls_and_write_blocks_reads(self):
        # a snapshot after every 2nd pack: S1 after C1 (1 ms), C2 after it; W1 writes 14 x 8,190,735,360 B at 2 GB/s
        # = 57.335 s on the shared storage; with one host slot, the next read R4 waits for W1 to end
        r, e = run([(512, 8192, 100 * US)] * 12, host_slots=1, device_slots=1, every=2, snapshot_slots=8)
        self.assertEqual(e["C2"][0], e["S1"][1])
        self.assertEqual(e["W1"][1] - e["W1"][0], F(114670295040, 2 * 10**9))
        self.assertEqual(e["R4"][0], e["W1"][1])
        # a read and a write ready at the same instant: the read goes first
        self.assertEqual(e["W3"][0], e["R4"][1])
        # separate write storage: reads never wait for writes
        r2, e2 = run([(512, 8192, 100 * US)] * 12, host_slots=1, device_slots=1, every=2, snapshot_slots=8,
                     shared_storage=False)
        self.assertLess(e2["R4"][0], e2["W1"][1])

    def test_snapshot_slot_waits_for_its_write(self):
        # one snapshot slot: S3 waits for W1's end
        r, e = run(BOOK, every=2)
        self.assertEqual(e["S3"][0], e["W1"][1])
        self.assertEqual(r["snapshot_buffer"]["peak_bytes"], 114670295040)

    def test_cpu_bound_host_buffers(self):
        # 100 ms preparation per pack: two host slots hold 2 x (8192 + 10,752) = 37,888 B
        r, e = run([(512, 8192, F(1, 10))] * 12)
        self.assertEqual(r["host_buffer"]["peak_bytes"], 37888)
        self.assertEqual(e["P1"][0], e["P0"][1])


if __name__ == "__main__":
    unittest.main()

"""`budget sm-occupancy`: resident blocks of one GEMM tile's kernel on a compute-capability-9.0 SM, Little's-law
latency hiding and the MMA count; values derived by hand in the comments."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.sm_occupancy import block_resources, residency  # noqa: E402

BASE = ["sm-occupancy", "--tile", "128x128x64", "--threads", "256", "--sms", "132", "--load-bytes", "16",
        "--mma", "16x8x16"]


class SmOccupancy(unittest.TestCase):
    def test_block_resources(self):
        # operands 2 (128 x 64 + 64 x 128) = 32,768 B; the FP32 accumulator 4 x 128 x 128 = 65,536 B
        self.assertEqual(block_resources(tile=(128, 128, 64), threads=256, registers=128, accumulator_in_shared=True,
                                         extra_shared_bytes=0), (98304, 128))
        # in registers: 128 x 128 / 256 = 64 more per thread, shared keeps the operands only
        self.assertEqual(block_resources(tile=(128, 128, 64), threads=256, registers=64, accumulator_in_shared=False,
                                         extra_shared_bytes=100), (32868, 128))

    def test_residency(self):
        # threads 64 x 32 // 256 = 8; registers 65,536 // (256 x 128) = 2; shared 233,472 // 99,328 = 2; blocks 32
        by, blocks, binding = residency(threads=256, registers_per_thread=128, shared_per_block=98304, warp_size=32)
        self.assertEqual(by, {"threads": 8, "registers": 2, "shared_memory": 2, "blocks": 32})
        self.assertEqual((blocks, binding), (2, ["registers", "shared_memory"]))
        # 64 threads at 32 registers: threads allow 32, registers 32, shared 233,472 // 2,048 = 114, blocks 32
        by, blocks, binding = residency(threads=64, registers_per_thread=32, shared_per_block=1024, warp_size=32)
        self.assertEqual((blocks, binding), (32, ["threads", "registers", "blocks"]))
        # the 1 KiB reserved per block counts: 233,472 // (116,000 + 1,024) = 1 (without it 2)
        self.assertEqual(residency(threads=128, registers_per_thread=32, shared_per_block=116000,
                                   warp_size=32)[0]["shared_memory"], 1)

    def test_latency_hiding_and_mma(self):
        r = budget_result(*BASE, "--registers", "128", "--accumulator", "shared", "--latency", "600ns",
                          "--loads-per-warp", "4")
        # 3.35e12 B/s x 600 ns = 2,010,000 B over 132 SMs; 16 warps x 4 x 32 x 16 = 32,768 B available
        self.assertEqual(Fraction(r["needed_bytes_in_flight_per_sm"]), Fraction(2010000, 132))
        self.assertEqual((r["available_bytes_in_flight_per_sm"], r["covers_latency"]), (32768, True))
        self.assertEqual(r["min_resident_warps_to_cover"], 8)   # ceil(15,227.27 / 2,048)
        self.assertEqual(Fraction(r["occupancy"]), Fraction(1, 4))
        # (128 / 16)(128 / 8)(64 / 16) = 512 instructions of 2 x 16 x 8 x 16 = 4,096 FLOPs = 2 x 128 x 128 x 64
        self.assertEqual((r["mma_instructions_per_tile"], r["tile_flops"]), (512, 2097152))
        slow = budget_result(*BASE, "--registers", "128", "--accumulator", "shared", "--latency", "1000ns",
                             "--loads-per-warp", "2")
        # 3,350,000 / 132 = 25,378.79 B needed, 16 x 2 x 32 x 16 = 16,384 available
        self.assertEqual((slow["available_bytes_in_flight_per_sm"], slow["covers_latency"]), (16384, False))

    def test_exactly_covered(self):
        # 32.768 GB/s x 1 us on 1 SM = 32,768 B needed = 16 warps x 4 x 32 x 16 available: covered (>=)
        r = budget_result(*[a if a != "132" else "1" for a in BASE], "--registers", "128", "--accumulator", "shared",
                          "--latency", "1us", "--loads-per-warp", "4", "--memory-bandwidth", "32.768GB/s")
        self.assertEqual((Fraction(r["needed_bytes_in_flight_per_sm"]), r["covers_latency"]), (32768, True))

    def test_errors(self):
        status, _, err = run_cli("budget", *BASE[:-2], "--mma", "16x8x24", "--registers", "128", "--accumulator",
                                 "shared", "--latency", "600ns", "--loads-per-warp", "4")
        self.assertEqual(status, 2)
        self.assertIn("whole number of --mma", err)
        status, _, err = run_cli("budget", *BASE, "--registers", "200", "--accumulator", "registers", "--latency",
                                 "600ns", "--loads-per-warp", "4")
        self.assertEqual(status, 2)
        self.assertIn("exceed the architectural 255", err)


if __name__ == "__main__":
    unittest.main()

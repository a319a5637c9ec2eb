"""`serve --kv-restore`: keep, offload + prefetch, drop + recompute of one snapshot, by hand."""

import json
import unittest
from fractions import Fraction as F

from support import run_cli
from infracalc.analyses.serve.restore import policies, transfer_ns


def run(next_use, host=1000, recompute=50):
    # S = 100 B at 10 B/ns (10^10 B/s) with a 5 ns startup: each copy takes 5 + 10 = 15 ns
    return policies(snapshot=100, next_use=next_use, offload_bw=10**10, restore_bw=10**10, startup=5,
                    recompute=recompute, host_capacity=host, replay_flops=7)


class ByHand(unittest.TestCase):
    def test_transfer(self):
        self.assertEqual(transfer_ns(150994944, 25 * 10**9, 10000), F(151244944, 25))

    def test_long_window(self):
        # T = 100: prefetch starts at 100 - 15 = 85, ready 100, free 85 - 15 = 70 ns (7,000 byte-ns);
        # the replay of 50 starts at 50, free 50 ns (5,000 byte-ns)
        rows, s = run(100)
        keep, off, drop = rows
        self.assertEqual((keep["ready_ns"], keep["stall_ns"], keep["released_byte_ns"]), (100, 0, 0))
        self.assertEqual((off["ready_ns"], off["stall_ns"], off["kv_free_interval_ns"], off["released_byte_ns"]),
                         (100, 0, 70, 7000))
        self.assertEqual(off["transfer_bytes"], 200)
        self.assertEqual((drop["ready_ns"], drop["stall_ns"], drop["kv_free_interval_ns"], drop["released_byte_ns"]),
                         (100, 0, 50, 5000))
        self.assertEqual((s["prefetch_start_ns"], s["recompute_start_ns"]), (85, 50))

    def test_short_window(self):
        # T = 20: the prefetch cannot start before the offload ends (15): ready 30, stall 10, nothing freed;
        # the replay starts now: ready 50, stall 30
        rows, s = run(20)
        self.assertEqual((rows[1]["ready_ns"], rows[1]["stall_ns"], rows[1]["kv_free_interval_ns"]), (30, 10, 0))
        self.assertEqual((rows[2]["ready_ns"], rows[2]["stall_ns"]), (50, 30))
        self.assertEqual((s["offload_return_stall_ns"], s["recompute_stall_ns"]), (10, 30))

    def test_host_capacity(self):
        rows, s = run(100, host=99)
        self.assertFalse(rows[1]["feasible"])
        self.assertFalse(s["host_snapshot_fits"])
        self.assertEqual(rows[1]["ready_ns"], 100)   # its times are still given

    def test_invariants(self):
        for t in range(0, 120, 7):
            rows, _ = run(t)
            for r in rows:
                self.assertGreaterEqual(r["ready_ns"], t)
                self.assertEqual(r["stall_ns"], r["ready_ns"] - t)
                self.assertEqual(r["released_byte_ns"], 100 * r["kv_free_interval_ns"])


class Command(unittest.TestCase):
    ARGS = ("serve", "--model", "qwen3-8b", "--input-len", "1024", "--offload-bw", "25GB/s", "--transfer-startup-ns",
            "10000", "--recompute-ns", "50000000", "--host-capacity", "256MiB", "--format", "json")

    def test_book_short_window(self):
        status, out, _ = run_cli(*self.ARGS, "--kv-restore", "5000000")
        self.assertEqual(status, 0)
        k = json.loads(out)["kv_restore"]
        self.assertEqual(k["kv_snapshot_bytes"], 1024 * 147456)          # Qwen3-8B: 36 x 2 x 8 x 128 x 2 B per token
        self.assertEqual(k["offload_return_stall_ns_exact"], "177489888/25")   # 2 x 151244944/25 - 5 ms
        self.assertEqual(k["recompute_stall_ns_exact"], "45000000")

    def test_refusals(self):
        status, _, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "1024", "--kv-restore", "5")
        self.assertEqual(status, 2)
        self.assertIn("--offload-bw", err)
        status, _, err = run_cli("serve", "--model", "qwen3-8b", "--input-len", "8", "--output-len", "4",
                                 "--recompute-ns", "5")
        self.assertEqual(status, 2)
        self.assertIn("--kv-restore", err)


if __name__ == "__main__":
    unittest.main()

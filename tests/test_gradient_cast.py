"""`budget cast`: casting one gradient BF16 -> FP32 on the CPU or the GPU; values derived by hand."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)


def cast(*extra, model="qwen3-8b", link="32GB/s", cpu="100GB/s", gpu="1500GB/s", gpu_budget="256MiB"):
    status, out, err = run_cli("budget", "cast", "--model", model, "--link-bw", link, "--cpu-cast-rate", cpu,
                               "--gpu-cast-rate", gpu, "--gpu-budget", gpu_budget, "--host-budget", "512MiB",
                               *extra, "--format", "json")
    assert status == 0, err
    return json.loads(out)["result"]


class GradientCast(unittest.TestCase):
    def test_cpu_path_by_hand(self):
        # Qwen3-8B gate 12288 x 4096 = 50,331,648 elements: BF16 100,663,296 B at 32 GB/s = 0.003145728 s, then the
        # cast of 6N = 301,989,888 B at 100 GB/s = 0.00301989888 s: ready 0.00616562688 s = 301056/48828125
        r = cast()
        cpu, gpu = r["paths"]
        self.assertEqual((r["gate_shape"], r["cast_read_write_bytes"]), ([12288, 4096], 301989888))
        self.assertEqual(cpu["ready_s_exact"], "301056/48828125")
        # gpu path: 301,989,888 / 1.5e12 + 201,326,592 / 3.2e10 = 1585152/244140625 s
        self.assertEqual(gpu["ready_s_exact"], "1585152/244140625")
        # equal time: 2N / (x_cpu - x_gpu) = 100,663,296 / (301,989,888 (1/1e11 - 1/1.5e12)) = 250000000000/7 B/s
        self.assertEqual(r["equal_time_link_bytes_per_s_exact"], "250000000000/7")
        self.assertEqual((r["fastest"], r["fastest_fitting"]), (["cpu"], ["cpu"]))

    def test_buffer_peaks(self):
        # cpu path: the host holds BF16 staging and the FP32 output together during the cast, 2N + 4N = 301,989,888;
        # the GPU only the common source (no extra); gpu path: GPU FP32 staging 201,326,592 extra, 301,989,888 with
        # the source, host the FP32 output alone
        cpu, gpu = cast()["paths"]
        self.assertEqual((cpu["gpu_extra_peak_bytes"], cpu["gpu_peak_with_source_bytes"], cpu["host_peak_bytes"]),
                         (0, 100663296, 301989888))
        self.assertEqual((gpu["gpu_extra_peak_bytes"], gpu["gpu_peak_with_source_bytes"], gpu["host_peak_bytes"]),
                         (201326592, 301989888, 201326592))

    def test_budget_decides_above_the_crossover(self):
        # 300 GB/s > 250e9 / 7: the gpu path is faster; one byte short of its 201,326,592 B staging it no longer fits
        r = cast(link="300GB/s", gpu_budget="201326591")
        self.assertEqual((r["fastest"], r["fastest_fitting"], r["paths"][1]["fits"]), (["gpu"], ["cpu"], False))

    def test_equal_paths_keep_both(self):
        # casts 6N / 6e9 and 6N / 12e9 differ by 2N / 4e9, the copy difference at 4 GB/s: a tie, both kept
        r = cast(link="4GB/s", cpu="6GB/s", gpu="12GB/s")
        self.assertEqual((r["equal_time_link_bytes_per_s_exact"], r["fastest"]), ("4000000000", ["cpu", "gpu"]))

    def test_moe_casts_one_expert(self):
        # Qwen3-235B-A22B: one routed expert's gate 1536 x 4096 = 6,291,456 elements
        r = cast(model="qwen3-235b-a22b")
        self.assertEqual((r["gate_shape"], r["bf16_bytes"]), ([1536, 4096], 12582912))

    def test_startups_add_once_per_step(self):
        a, b = cast(), cast("--copy-startup", "1ms", "--cpu-cast-startup", "2ms")
        self.assertAlmostEqual(b["paths"][0]["ready_s"] - a["paths"][0]["ready_s"], 0.003, places=12)
        self.assertAlmostEqual(b["paths"][1]["ready_s"] - a["paths"][1]["ready_s"], 0.001, places=12)


if __name__ == "__main__":
    unittest.main()

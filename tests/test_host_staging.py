"""`budget staging`: a ring all-reduce staged through host buffers on a declared PCIe/NUMA host (the book's
chapter-6 example); expected values derived by hand."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.host_staging import edge_path, host_staging  # noqa: E402

G = 10**9
S = 2 * 1024 * 4096            # BF16 [1024, 4096]: 8 MiB per rank
HOST = dict(message_bytes=S, numa=("A", "A", "B", "B"), pcie=12 * G, dram=40 * G, link=8 * G)


def busy(r, name):
    return Fraction(next(x for x in r["resources"] if x["resource"] == name)["busy_ns"])


class HostStaging(unittest.TestCase):
    def test_all_buffers_on_node_a(self):
        # 6 rounds of 2 MiB per edge. Buffers on A: edges 1>2 and 2>3 cross A->B, 2>3 and 3>0 cross B->A:
        # 2 x 6 x 2 MiB = 24 MiB each way at 8 GB/s = 3.145728 ms; DRAM A serves all 4 edges twice:
        # 8 x 12 MiB = 96 MiB at 40 GB/s = 2.5165824 ms; each PCIe direction 12 MiB at 12 GB/s = 1.048576 ms.
        r = host_staging(**HOST, ring=(0, 1, 2, 3), buffer_node="A")
        self.assertEqual(r["logical_send_bytes"], str(48 * 2**20))
        self.assertEqual((busy(r, "A_to_B"), busy(r, "dram_A"), busy(r, "gpu0_to_host")),
                         (3145728, Fraction(25165824, 10), 1048576))
        self.assertEqual((r["aggregate_lower_ns"], r["round_sum_lower_ns"]), ("3145728", "3145728"))

    def test_sender_local_buffers(self):
        # Grouped ring, buffer on the sender's node: only 1>2 (A->B) and 3>0 (B->A) cross, once each: 12 MiB
        # per direction, 1.572864 ms. Alternating ring 0,2,1,3: every edge crosses, 24 MiB each way: 3.145728 ms.
        self.assertEqual(host_staging(**HOST, ring=(0, 1, 2, 3), buffer_node=None)["aggregate_lower_ns"], "1572864")
        self.assertEqual(host_staging(**HOST, ring=(0, 2, 1, 3), buffer_node=None)["aggregate_lower_ns"], "3145728")

    def test_paths(self):
        self.assertEqual(edge_path(2, 3, ("A", "A", "B", "B"), "A"),
                         ["gpu2_to_host", "B_to_A", "dram_A", "dram_A", "A_to_B", "gpu3_from_host"])
        self.assertEqual(edge_path(0, 1, ("A", "A", "B", "B")), ["gpu0_to_host", "dram_A", "dram_A", "gpu1_from_host"])
        # sender-local: the buffer is on the sender's node A, the crossing comes after the DRAM
        self.assertEqual(edge_path(1, 2, ("A", "A", "B", "B")),
                         ["gpu1_to_host", "dram_A", "dram_A", "A_to_B", "gpu2_from_host"])

    def test_startup_per_round(self):
        r = host_staging(**HOST, ring=(0, 1, 2, 3), buffer_node=None, startup_ns=1000)
        self.assertEqual(r["round_sum_with_startup_ns"], str(1572864 + 6 * 1000))

    def test_errors(self):
        base = ("budget", "staging", "--model", "qwen3-8b", "--tokens", "1024", "--pcie", "12GB/s", "--dram", "40GB/s",
                "--intersocket", "8GB/s")
        for extra in (("--ring", "0,1,1,3"), ("--buffer", "C"), ("--gpu-numa", "A,B", "--ring", "0,1,2")):
            status, _, err = run_cli(*base, *extra)
            self.assertEqual(status, 2, err)


if __name__ == "__main__":
    unittest.main()

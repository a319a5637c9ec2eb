"""`budget kda-chunk`: the KDA block algorithm's work and the chunk kernel's buffers; expected values
derived by hand in the comments."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.kda_chunk import block_work, chunk_sizes, kda_chunk  # noqa: E402


class BlockWork(unittest.TestCase):
    def test_one_chunk_of_64(self):
        # c = 64, d = 128: L = 2016, K = 2080; K K^T 2 x 2016 x 128 = 516,096; W and U 2 x 2016 x 256 = 1,032,192;
        # three state products 2 x 64 x 128 x 128 = 2,097,152 each; causal QK and PV 2 x 2080 x 128 = 532,480 each:
        # 8,904,704 in all (the forward-kimi-k3 row's per-chunk figure).
        m, s, e = block_work(64, 128, 128)
        self.assertEqual((m["lower_kk"], m["solve_w_u"], m["causal_qk"]), (516096, 1032192, 532480))
        self.assertEqual(sum(m.values()), 8904704)
        # scalar: 63 x 128 + 8192 + (16384 + 8192) + (2 x 2016 x 128 + 2016) + 2 x 2080 x 128 + 3 x 8192 + 32768 + 16384
        # = 1,165,152; exponentials (128 + 2016 + 2080 + 1) x 128 = 540,800.
        self.assertEqual((sum(s.values()), e), (1165152, 540800))

    def test_single_token_chunk(self):
        # c = 1: no lower pairs; one causal pair: 256 + 256; states 3 x 32,768.
        m, _, _ = block_work(1, 128, 128)
        self.assertEqual(sum(m.values()), 3 * 32768 + 512)

    def test_tail(self):
        self.assertEqual(chunk_sizes(65, 64), [(64, 1), (1, 1)])
        self.assertEqual(chunk_sizes(128, 64), [(64, 2)])


class Buffers(unittest.TestCase):
    def test_book_t8192(self):
        # T 8192, C 64, 96 heads of 128: h_chunks 128 x 96 x 128 x 128 x 2 B = 384 MiB; before cleanup:
        # g_cumsum 384 + Aqk, Akk 96 + 96 + w, u, kg 3 x 192 + h 384 + final 6 + v_new, output 2 x 192 = 1,926 MiB;
        # the intra set: 384 + 96 + 96 + Akkd 48 + 576 = 1,200 MiB.
        r = kda_chunk(batch=1, tokens=8192, chunk=64, heads=96, d=128, layers=69)
        mib = 2**20
        self.assertEqual(r["per_layer_chunk_state_bytes"], 384 * mib)
        self.assertEqual([x["bytes"] for x in r["live_sets"]], [1200 * mib, 1926 * mib])
        # 69 final states of 96 x 128 x 128 x 4 B = 6 MiB each.
        self.assertEqual(r["all_final_states_bytes"], 69 * 6 * mib)

    def test_command_reads_the_model(self):
        status, out, err = run_cli("budget", "kda-chunk", "--model", "kimi-k3", "--tokens", "65", "--format", "json")
        self.assertEqual(status, 0, err)
        r = json.loads(out)["result"]
        # (8,904,704 + 98,816) x 96 heads x 69 layers = 59,639,316,480.
        self.assertEqual((r["kda_layers"], r["block_matrix_flops"]), (69, 59639316480))

    def test_refusals(self):
        for argv, text in ((["--model", "qwen3-8b"], "no KDA"), (["--model", "kimi-k3", "--chunk", "16"], "32 and 64")):
            status, _, err = run_cli("budget", "kda-chunk", "--tokens", "8", *argv)
            self.assertEqual(status, 2, argv)
            self.assertIn(text, err)


if __name__ == "__main__":
    unittest.main()

"""`budget growing-kv`: a decode's growing KV history on remote replicas, closed forms in the step count
(the book's chapter-6 example); expected values derived by hand."""

import os
import sys
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.growing_kv import growing_kv, step_commit  # noqa: E402

U = 147456                     # Qwen3-8B: 36 layers x 8 KV heads x 128 x (K, V) x 2 B per position
F = 36 * 4 * 32 * 128          # QK and PV: 4 heads head_dim FLOPs per position pair and layer
BOOK = dict(kv_per_position=U, attention_flops_per_pair=F, state_bytes=0, batch=1, prompt=8192, steps=128, copies=2,
            remote_all=True, bandwidth=40 * 10**9, startup_ns=5000, tail_budget_bytes=2**30)


def steps_one_by_one(kw):
    """The same skeleton summed message by message (the closed form's independent check)."""
    s, b, u, p = Fraction(kw["startup_ns"], 10**9), kw["bandwidth"], kw["batch"] * kw["kv_per_position"], kw["prompt"]
    send = lambda x: s + Fraction(x, b) if x else Fraction(0)  # noqa: E731
    t = sum(send(p * u) for _ in range(kw["copies"]))
    for n in range(kw["steps"]):
        t += send(((p + n) if kw["remote_all"] else p) * u)
        if kw["remote_all"]:
            t += sum(send(u) for _ in range(kw["copies"]))
    return t


class GrowingKv(unittest.TestCase):
    def test_two_replicas_by_hand(self):
        # Initial copy 2 x (5 us + 1,207,959,552 / 40e9) = 0.0604079776 s; step 0 reads 8,192 positions
        # (0.0302039888 s + 5 us) and sends 147,456 B to each replica: commits at 0.0906293392 s.
        r = growing_kv(**BOOK)
        self.assertEqual(Fraction(r["initial_copy_s"]), Fraction(604079776, 10**10))
        self.assertEqual(Fraction(r["first_step_commit_s"]), Fraction(906293392, 10**10))
        self.assertEqual(r["communication_skeleton_s"], "1237095413/312500000")
        # reads: sum over 128 steps of (8192 + n) positions = 128 x 8192 + 8128 = 1,056,704 positions
        self.assertEqual(r["remote_prior_read_bytes"], 1056704 * U)
        self.assertEqual(r["full_attention_qk_pv_flops"], F * (128 * 8193 + 8128))

    def test_closed_form_equals_the_message_sum(self):
        for kw in (BOOK, dict(BOOK, copies=1), dict(BOOK, remote_all=False), dict(BOOK, steps=1, prompt=3, batch=4),
                   dict(BOOK, steps=0)):
            self.assertEqual(Fraction(growing_kv(**kw)["communication_skeleton_s"]), steps_one_by_one(kw), kw)
        kw = dict(BOOK, steps=5)
        self.assertEqual(Fraction(growing_kv(**kw)["last_step_commit_s"]), steps_one_by_one(kw))

    def test_prefix_placement(self):
        # Remote prefix: the 8,192-position prompt is read each step; the new positions are local (the tail grows
        # to 128 positions), the local prior reads are 0 + 1 + ... + 127 = 8,128 positions; no appends.
        r = growing_kv(**dict(BOOK, remote_all=False, copies=1, tail_budget_bytes=2**20))
        self.assertEqual((r["remote_prior_read_bytes"], r["local_prior_read_bytes"]), (128 * 8192 * U, 8128 * U))
        self.assertEqual((r["append_replica_network_bytes"], r["local_tail_final_bytes"], r["local_tail_fits"]),
                         (0, 128 * U, False))

    def test_command(self):
        status, _, err = run_cli("budget", "growing-kv", "--model", "qwen3.6-35b-a3b", "--prompt", "8192", "--steps", "1",
                                 "--bandwidth", "40GB/s")
        self.assertEqual(status, 0, err)
        status, _, err = run_cli("budget", "growing-kv", "--model", "qwen3-8b", "--prompt", "1", "--steps", "1",
                                 "--bandwidth", "0")
        self.assertEqual(status, 2, err)


if __name__ == "__main__":
    unittest.main()

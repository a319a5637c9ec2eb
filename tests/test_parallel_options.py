"""`parallel`'s options that select a stated variant of issue 8's conventions (EP dedup, ...):
exact figures derived by hand in the comments, and the error contract of each option."""

import json
import unittest
from fractions import Fraction

from support import run_cli  # noqa: F401  (sets the path)

QWEN_EP8 = ("parallel", "--model", "qwen3-30b-a3b", "--devices", "8", "--dp", "8", "--ep", "8",
            "--input-len", "1024", "--output-len", "2", "--format", "json")


def collectives(rec, phase):
    return {c["name"]: c for c in rec["phases"][phase]["stages"][0]["collectives"]}


class EpDedup(unittest.TestCase):
    def test_qwen3_30b_a3b_ep8_one_copy_per_destination_rank(self):
        # Qwen3-30B-A3B: 128 experts, top-8, hidden 2048, bf16; ep 8 holds m = 16 experts per rank.
        # A rank is missed by a token when its 8 experts all come from the other 112:
        # C(112, 8) / C(128, 8) = prod_{i<8} (112 - i) / (128 - i) = 1,440,882,009 / 4,332,432,280
        # (0.33258); expected destination ranks 8 x (1 - that) = 5.33936. Per token
        # S = 2048 x 2 B x 5.33936 = 21,870.006 B -> 21,871 B for a decode step at batch 1
        # (per copy: 8 x 4,096 = 32,768 B); the prefill of 1,024 tokens: 22,394,886 B.
        miss = Fraction(1)
        for i in range(8):
            miss *= Fraction(112 - i, 128 - i)
        self.assertEqual(miss, Fraction(1_440_882_009, 4_332_432_280))
        per_token = 2048 * 2 * 8 * (1 - miss)
        status, out, err = run_cli(*QWEN_EP8, "--ep-dedup")
        self.assertEqual((status, err), (0, ""))
        rec = json.loads(out)
        self.assertIs(rec["inputs"]["ep_dedup"], True)
        for phase, tokens, expect in (("first", 1, 21_871), ("prefill", 1024, 22_394_886)):
            self.assertEqual(-(-tokens * per_token.numerator // per_token.denominator), expect)
            cs = collectives(rec, phase)
            for kind in ("dispatch", "combine"):
                c = cs[f"EP {kind} all-to-all (one copy per destination rank)"]
                self.assertEqual((c["bytes_per_run"], c["runs"], c["group"]), (expect, 48, 8), (phase, kind))
        # without the option: one copy per expert, 32,768 B per token
        _, out, _ = run_cli(*QWEN_EP8)
        plain = json.loads(out)
        self.assertNotIn("ep_dedup", plain["inputs"])
        self.assertEqual(collectives(plain, "first")["EP dispatch all-to-all"]["bytes_per_run"], 32_768)
        # less traffic, never more time
        self.assertLess(rec["latency"]["tpot_mean_s"], plain["latency"]["tpot_mean_s"])

    def test_markdown_states_it_and_search_takes_it(self):
        status, out, err = run_cli(*QWEN_EP8[:-2], "--ep-dedup")
        self.assertEqual((status, err), (0, ""))
        self.assertIn("one copy per destination rank (--ep-dedup)", out)
        status, out, err = run_cli("parallel", "--model", "qwen3-30b-a3b", "--devices", "8", "--search",
                                   "--input-len", "256", "--output-len", "4", "--ep-dedup", "--format", "json")
        self.assertEqual((status, err), (0, ""))
        self.assertIs(json.loads(out)["inputs"]["ep_dedup"], True)

    def test_errors(self):
        for extra, text in ((("--model", "llama-3.1-8b"), "--ep-dedup: llama-3.1-8b has no routed experts"),
                            (("--routing", "concentrated"), "uniform routing only; drop --routing concentrated")):
            argv = list(QWEN_EP8[:-2]) + ["--ep-dedup"]
            if extra[0] == "--model":
                argv[2], argv[7:9] = extra[1], ["--dp", "8"]
                argv = argv[:7] + argv[9:]   # no --ep on a dense model
            else:
                argv += extra
            status, out, err = run_cli(*argv)
            self.assertEqual(status, 2, err)
            self.assertEqual(err.count("\n"), 1, err)
            self.assertIn(text, err)


LLAMA_CP2 = ("parallel", "--model", "llama-3.1-70b", "--devices", "16", "--tp", "8", "--cp", "2",
             "--input-len", "2048", "--output-len", "4", "--format", "json")


def prefill_matrix_flops(*argv):
    status, out, err = run_cli(*argv)
    assert (status, err) == (0, ""), err
    rec = json.loads(out)
    return rec, rec["phases"]["prefill"]["stages"][0]["matrix_flops"]


class CpZigzag(unittest.TestCase):
    def test_llama_70b_tp8_cp2_each_rank_does_half_the_causal_work(self):
        # P = 2048 over cp 2. Contiguous: the last rank runs 1,024 tokens after 1,024, per head
        # 1,024 x 1,024 + 1,024 x 1,025 / 2 causal pairs. Zig-zag (chunks of 512; rank 0 holds
        # chunks 0 and 3, rank 1 chunks 1 and 2): 512 x 512 x 3 + 512 x 513 = P (P + 1) / 4 pairs,
        # 1,024 x 512 fewer than the last contiguous rank. Each pair costs 2 x 2 x 128 FLOPs (QK^T
        # and PV), 8 heads per device at tp 8, 80 layers:
        # 524,288 x 512 x 8 x 80 = 171,798,691,840 matrix FLOPs less.
        _, contiguous = prefill_matrix_flops(*LLAMA_CP2)
        rec, zigzag = prefill_matrix_flops(*LLAMA_CP2, "--cp-split", "zigzag")
        self.assertEqual(rec["inputs"]["cp_split"], "zigzag")
        self.assertEqual(contiguous - zigzag, 171_798_691_840)
        # Balanced: the two ranks together do the whole prompt's matrix work at cp 1, plus the
        # head's one row of logits that each rank is charged (2 x 8192 x 16,032 = 262,668,288).
        _, whole = prefill_matrix_flops("parallel", "--model", "llama-3.1-70b", "--devices", "8", "--tp", "8",
                                        "--input-len", "2048", "--output-len", "4", "--format", "json")
        self.assertEqual(2 * zigzag, whole + 262_668_288)
        self.assertTrue(any("--cp-split zigzag" in c for c in rec["conventions"]))

    def test_errors(self):
        for argv, text in (
                (LLAMA_CP2[:9] + ("--input-len", "2047", "--output-len", "4"), "2 x cp = 4 equal chunks; "
                 "--input-len 2047 does not divide (try 2048)"),
                (("parallel", "--model", "gemma-3-27b") + LLAMA_CP2[3:-2], "windowed or chunked attention"),
                (("parallel", "--model", "llama-3.1-70b", "--devices", "8", "--tp", "8", "--input-len", "64",
                  "--output-len", "2"), "--cp-split applies with --cp > 1"),
                (("parallel", "--model", "llama-3.1-70b", "--devices", "8", "--search", "--input-len", "64",
                  "--output-len", "2"), "drop --cp-split")):
            status, out, err = run_cli(*argv, "--cp-split", "zigzag")
            self.assertEqual(status, 2, (argv, err))
            self.assertEqual(err.count("\n"), 1, err)
            self.assertIn(text, err)


class RankOrder(unittest.TestCase):
    BASE = ("parallel", "--model", "llama-3.1-8b", "--devices", "16", "--tp", "4", "--pp", "2",
            "--input-len", "512", "--output-len", "4", "--format", "json")

    def transfer(self, *extra):
        status, out, err = run_cli(*self.BASE, *extra)
        self.assertEqual((status, err), (0, ""))
        rec = json.loads(out)
        send = rec["phases"]["prefill"]["transfer"][0]
        return rec, send

    def test_pp_inside_the_domain(self):
        # Llama-3.1-8B, tp 4 pp 2 dp 2 on 16 H100s (scale-up domains of 8). Default order
        # tp-cp-ep-dp-pp: pp stride 4 x 2 = 8, the two stages 8 ranks apart (span 9) cross the NIC.
        # tp-pp-cp-dp: pp stride 4, span 5: the stages share a domain. The boundary send of a
        # 512-token prompt is its 1/tp slice: 512 x 4096 x 2 B / 4 = 1,048,576 B, a point-to-point:
        # out 1,048,576 / 50e9 + 2.7 us = 23.67152 us; up 1,048,576 / 450e9 + 0.6 us = 2.930169 us.
        rec, send = self.transfer()
        self.assertEqual((rec["layout"]["order"], send["bytes_per_run"], send["tier"]),
                         ("tp-cp-ep-dp-pp", 1_048_576, "out"))
        self.assertAlmostEqual(send["time_s"], 1_048_576 / 50e9 + 2.7e-6, delta=1e-15)
        rec, send = self.transfer("--rank-order", "tp-pp-cp-dp")
        groups = {g["dim"]: (g["stride"], g["span"]) for g in rec["layout"]["groups"]}
        self.assertEqual((rec["layout"]["order"], groups["pp"], groups["dp"], send["tier"]),
                         ("tp-pp-cp-dp", (4, 5), (8, 9), "up"))
        self.assertAlmostEqual(send["time_s"], 1_048_576 / 450e9 + 0.6e-6, delta=1e-15)

    def test_errors(self):
        for argv, text in ((self.BASE + ("--rank-order", "pp-tp-cp-dp"), "must list tp first"),
                           (self.BASE + ("--rank-order", "tp-pp-dp"), "must list tp first"),
                           (("parallel", "--model", "llama-3.1-8b", "--devices", "8", "--search", "--input-len",
                             "64", "--output-len", "2", "--rank-order", "tp-pp-cp-dp"), "drop --rank-order")):
            status, out, err = run_cli(*argv)
            self.assertEqual(status, 2, (argv, err))
            self.assertEqual(err.count("\n"), 1, err)
            self.assertIn(text, err)


if __name__ == "__main__":
    unittest.main()

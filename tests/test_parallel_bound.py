"""`parallel`'s lower bound beside its estimate (analyses/parallel LOWER_BOUND, ESTIMATE).

The bound is a promise: no schedule, fusion, overlap or collective algorithm can beat it, so it
must never exceed the estimate of the same layout and batch, whatever the options; and its
figures are checked exactly by hand on a memory-bound decode step."""

import unittest

from support import load_model  # noqa: F401  (sets the path)

from infracalc.analyses import parallel as P
from infracalc.analyses.parallel import search as S
from infracalc.layout import Layout
from infracalc.load.hardware import load_device
from infracalc.workload import Workload

H100 = load_device("h100-sxm")


def plan(model="llama-3.1-70b", input_len=2048, output_len=2, **kw):
    return P.Plan(load_model(model), Workload(), H100, input_len, output_len, **kw)


class ByHand(unittest.TestCase):
    def test_llama_70b_tp8_decode_step_is_its_weight_and_cache_reads(self):
        # One device of Llama-3.1-70B at tp 8, batch 1, history 2048 (test_parallel's figures):
        # weights read 17,378,082,816 B, KV read 83,927,040 B and written 40,960 B: 17,462,050,816 B
        # at 3.35e12 B/s = 5.2125525 ms. Its matrix work, ~2 x 8.7e9 FLOPs at 989.5e12, is ~18 us,
        # its all-reduces ~11 us at alpha 0: both hidden. One stage, one micro-batch: TPOT = that.
        rec = P.parallel(plan(link_options={"alpha_up": 0.0}), Layout(tp=8), 1)
        st = rec["phases"]["first"]["stages"][0]
        self.assertEqual(st["ideal_s"], 17_462_050_816 / 3.35e12)
        self.assertEqual(st["lower_bound_s"], st["ideal_s"])
        self.assertEqual(rec["lower_bound"]["tpot_first_s"], 17_462_050_816 / 3.35e12)
        self.assertAlmostEqual(rec["lower_bound"]["decode_tokens_per_s_per_device"],
                               3.35e12 / 17_462_050_816 / 8, delta=1e-9)
        self.assertLess(rec["lower_bound"]["tpot_first_s"], rec["latency"]["tpot_first_s"])

    def test_communication_beyond_the_work_counts_at_the_fastest_algorithm(self):
        # A 1 kB/s scale-up link: communication dwarfs the work, so the stage's bound is the
        # collectives' time with the fastest algorithm, never more than the ring estimate's.
        rec = P.parallel(plan(link_options={"link_bw_up": 1e3}), Layout(tp=8), 1)
        st = rec["phases"]["first"]["stages"][0]
        self.assertGreater(st["comm_fastest_s"], st["ideal_s"])
        self.assertEqual(st["lower_bound_s"], st["comm_fastest_s"])
        self.assertLessEqual(st["comm_fastest_s"], st["comm_s"])


class NeverAboveTheEstimate(unittest.TestCase):
    def test_every_figure_across_layouts_and_options(self):
        cases = [("llama-3.1-70b", Layout(tp=4, pp=2), 8, {}),
                 ("llama-3.1-70b", Layout(tp=2, pp=2, cp=2), 4, {"overlap": True}),
                 ("llama-3.1-70b", Layout(tp=8), 16, {"algorithm": "best"}),
                 ("qwen3-30b-a3b", Layout(tp=2, dp=4, ep=8), 32, {}),
                 ("qwen3-30b-a3b", Layout(tp=4, pp=2, ep=2, sp=True), 8, {"overlap": True})]
        for model, lay, batch, kw in cases:
            rec = P.parallel(plan(model, 512, 16, **kw), lay, batch)
            est, lb = rec["latency"], rec["lower_bound"]
            with self.subTest(model=model, layout=lay.label(), **kw):
                for key in ("ttft_s", "ttft_first_micro_batch_s", "tpot_first_s", "tpot_mean_s", "tpot_last_s",
                            "generation_s"):
                    self.assertLessEqual(lb[key], est[key] * (1 + 1e-12), key)
                for key in ("decode_tokens_per_s_per_device", "tokens_per_s_cluster"):
                    self.assertGreaterEqual(lb[key] * (1 + 1e-12), est[key], key)
                for name in ("prefill", "first", "last", "decode"):
                    for s in rec["phases"][name]["stages"]:
                        self.assertLessEqual(s["lower_bound_s"], s["time_s"] * (1 + 1e-12), (name, s["stage"]))
                        self.assertLessEqual(s["ideal_s"], s["roofline_s"] * (1 + 1e-12), (name, s["stage"]))

    def test_search_reports_the_bound_of_each_top_layout(self):
        rec = S.search_record(plan(output_len=64), 8, top=5)
        self.assertEqual(len(rec["definitions"]), 2)
        for t in rec["top"]:
            self.assertGreaterEqual(t["lower_bound"]["decode_tokens_per_s_per_device"],
                                    t["latency"]["decode_tokens_per_s_per_device"])
            self.assertLessEqual(t["lower_bound"]["tpot_mean_s"], t["latency"]["tpot_mean_s"])


if __name__ == "__main__":
    unittest.main()

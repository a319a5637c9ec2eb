"""`budget pipeline`: GPipe / 1F1B event times from declared stage durations and the activation buffers
each stage reserves; every expected value derived by hand in its comment or read from the book's event
lists (bojieli/ai-infra-book calculations/results/training-pipeline-*)."""

import os
import sys
import unittest
from fractions import Fraction as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses import training_pipeline as tp  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402

QWEN8 = load_model("qwen3-8b")
MS = F(1, 1000)


def step(schedule, m, fw=(10 * MS,) * 4, bw=(20 * MS,) * 4, link_time=MS, link="independent", acts="save",
         update=MS, setup=F(0), gemm="none"):
    return tp.pipeline(arch=QWEN8, schedule=schedule, link=link, stages=4, microbatches=m, microbatch_size=1,
                       tokens=128, forward=fw, backward=bw, act=(link_time,) * 3, grad=(link_time,) * 3,
                       update=(update,) * 4, setup=setup, activations=acts, gemm_inputs=gemm)


def times(schedule, m, **kw):
    """{event: (start, end)} in seconds; the schedule runs on integer milliseconds (its ticks)."""
    p = 4
    fw, bw = kw.get("fw", (10 * MS,) * p), kw.get("bw", (20 * MS,) * p)
    a = kw.get("a", (MS,) * (p - 1))
    ms = lambda values: tuple(int(x * 1000) for x in values)   # noqa: E731
    t = tp.list_schedule(tp._nodes(schedule=schedule, link=kw.get("link", "independent"), stages=p,
                                   microbatches=m, forward=ms(fw), backward=ms(bw), act=ms(a), grad=ms(kw.get("g", a)),
                                   update=(1,) * p, setup=0))
    return {k: (start * MS, end * MS) for k, (start, end) in t.items()}


def budget(*argv):
    return budget_result("pipeline", *argv)


class SavedObjects(unittest.TestCase):
    def test_qwen3_8b_layer_at_128_tokens(self):
        # T = 128, h = 4096, n_q = 32, n_kv = 8, d = 128, I = 12288 (the config): norms 2 (128 x 4096 + 128) =
        # 1,048,832; q norm 128 x 32 x 128 + 128 x 32 = 528,384; k norm 131,072 + 1,024 = 132,096; causal
        # probabilities 32 x 128 x 129 / 2 = 264,192; SwiGLU 3 x 128 x 12288 = 4,718,592: 6,692,096 elements,
        # x 4 B = 26,768,384 B (the book's saved_objects of one layer).
        self.assertEqual(tp.layer_saved_elements(QWEN8.layers[0], 128), 6692096)
        # recompute-silu keeps gate and up only: 6,692,096 - 128 x 12288 = 5,119,232
        self.assertEqual(tp.layer_saved_elements(QWEN8.layers[0], 128, "recompute-silu"), 5119232)

    def test_stage_bytes(self):
        # 9 layers x 26,768,384 = 240,915,456 B; the last stage adds the final norm 128 x 4096 + 128 and the
        # softmax 128 x 151,936: 19,972,224 elements, 79,888,896 B -> 320,804,352 (the book's stage 3).
        r = step("gpipe", 1)
        self.assertEqual([s["saved_bytes_per_microbatch"] for s in r["stage_rows"]], [240915456] * 3 + [320804352])
        # messages: BF16 128 x 4096 x 2 = 1,048,576; FP32 gradients 2,097,152; 3 boundaries x M each way
        self.assertEqual((r["activation_bytes_per_message"], r["gradient_bytes_per_message"]), (1048576, 2097152))
        self.assertEqual((r["forward_messages"], r["transfer_payload_bytes"]), (3, 3 * (1048576 + 2097152)))

    def test_microbatch_size_scales_bytes(self):
        r = tp.pipeline(arch=QWEN8, schedule="gpipe", link="independent", stages=4, microbatches=1, microbatch_size=3,
                        tokens=128, forward=(MS,) * 4, backward=(MS,) * 4, act=(0,) * 3, grad=(0,) * 3,
                        update=(0,) * 4, setup=F(0))
        self.assertEqual(r["stage_rows"][0]["saved_bytes_per_microbatch"], 3 * 240915456)
        self.assertEqual(r["gradient_bytes_per_message"], 3 * 2097152)

    def test_unmodelled_layers_are_refused(self):
        status, _, err = run_cli("budget", "pipeline", "--model", "qwen3-30b-a3b", "--schedule", "gpipe",
                                 "--stages", "4", "--microbatches", "2", "--seq", "128", "--forward-times", "1ms",
                                 "--backward-times", "2ms", "--activation-times", "0s", "--gradient-times", "0s")
        self.assertEqual(status, 2)
        self.assertIn("MoE", err)


class Orders(unittest.TestCase):
    def test_1f1b_warmup_pairs_cooldown(self):
        # stage 0 of 4, M = 4: w = 3 warm-up forwards, one F/B pair, three cool-down backwards
        self.assertEqual(tp.stage_order("1f1b", 0, 4, 4),
                         [("F", 0), ("F", 1), ("F", 2), ("F", 3), ("B", 0), ("B", 1), ("B", 2), ("B", 3)])
        self.assertEqual(tp.stage_order("1f1b", 3, 4, 3), [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2), ("B", 2)])
        # fewer micro-batches than the warm-up: w = min(P - 1 - s, M)
        self.assertEqual(tp.stage_order("1f1b", 0, 4, 1), [("F", 0), ("B", 0)])

    def test_gpipe_reverse_backwards(self):
        self.assertEqual(tp.stage_order("gpipe", 2, 4, 3), [("F", 0), ("F", 1), ("F", 2), ("B", 2), ("B", 1), ("B", 0)])


class Schedule(unittest.TestCase):
    def test_gpipe_m4_by_hand(self):
        # Forwards: stage s's F(m) ends at 0.01 (m + 1) + 0.011 s; F(3,3) ends 0.04 + 0.033 = 0.073. Backwards in
        # reverse: B(3,3) 0.073-0.093, B(3,0) ends 0.153; each stage adds 0.001 + 0.02: B(0,0) ends 0.216; the
        # updates take 0.001 more: 0.217. Without transfers 0.07 + 0.08 + 0.06 + 0.001 = 0.211.
        r = step("gpipe", 4)
        self.assertEqual((r["gradient_ready_s"], r["step_makespan_s"], r["zero_transfer_makespan_s"]),
                         (0.216, 0.217, 0.211))
        self.assertAlmostEqual(r["exposed_transfer_s"], 0.006, places=15)
        # idle 0.216 - 4 x 0.03 = 0.096 on every stage; bubble 0.384 / (4 x 0.216)
        self.assertEqual([s["idle_s"] for s in r["stage_rows"]], [0.096] * 4)
        self.assertAlmostEqual(r["bubble_fraction"], 0.384 / 0.864, places=15)

    def test_gpipe_flow_shop_closed_form(self):
        # links no slower than their producers (a_s <= F_s, g_s <= B_{s+1}), uneven stages:
        # setup + sum(F + B) + sum(a + g) + (M - 1)(max F + max B)
        fw, bw = (7 * MS, 13 * MS, 5 * MS, 9 * MS), (11 * MS, 30 * MS, 8 * MS, 17 * MS)
        a, g = (2 * MS, 5 * MS, 1 * MS), (3 * MS, 1 * MS, 17 * MS)
        for m in (1, 2, 5, 9):
            t = times("gpipe", m, fw=fw, bw=bw, a=a, g=g)
            ready = max(e for k, (_, e) in t.items() if k[0] == "B")
            self.assertEqual(ready, sum(fw + bw + a + g) + (m - 1) * (max(fw) + max(bw)), m)

    def test_a_queued_link_sends_the_lowest_microbatch_first(self):
        # stage 3's gradient link (40 ms) is slower than its backward (17 ms): at 0.169 s G(3,3) and G(3,2) both
        # wait and G(3,2) goes first although GPipe's stage 2 needs micro-batch 3 first (the book's tie rule)
        fw, bw = (7 * MS, 13 * MS, 5 * MS, 9 * MS), (11 * MS, 30 * MS, 8 * MS, 17 * MS)
        t = times("gpipe", 5, fw=fw, bw=bw, a=(2 * MS, 15 * MS, MS), g=(3 * MS, MS, 40 * MS))
        self.assertEqual((t[("G", 3, 2)][0], t[("G", 3, 3)][0]), (169 * MS, 289 * MS))

    def test_zero_transfer_closed_form(self):
        # equal stages, free links: (M + P - 1)(F + B) + U for both schedules; bubble (P - 1) / (M + P - 1)
        for schedule in ("gpipe", "1f1b"):
            for m in (1, 4, 8, 16):
                r = step(schedule, m, link_time=F(0), update=F(0))
                self.assertAlmostEqual(r["gradient_ready_s"], (m + 3) * 0.03, places=12)
                self.assertAlmostEqual(r["bubble_fraction"], 3 / (m + 3), places=12)

    def test_1f1b_events_match_the_books_list(self):
        # training-pipeline-1f1b-m4.json, stage 3's timeline: F(3,1) starts 0.063 (A(2,1) released), B(3,0) ends
        # 0.063 (G(3,0) sent 0.063-0.064), B(3,1) ends 0.093, A(2,2) 0.094-0.095, F(3,2) starts 0.095, B(3,2)
        # ends 0.125, F(3,3) starts 0.127, B(3,3) ends 0.157; the step's gradients are ready at 0.220 s
        t = times("1f1b", 4)
        self.assertEqual((t[("F", 3, 1)][0], t[("B", 3, 0)][1], t[("B", 3, 1)][1]), (63 * MS, 63 * MS, 93 * MS))
        self.assertEqual((t[("A", 2, 2)], t[("F", 3, 2)][0], t[("B", 3, 2)][1]), ((94 * MS, 95 * MS), 95 * MS, 125 * MS))
        self.assertEqual((t[("F", 3, 3)][0], t[("B", 3, 3)][1]), (127 * MS, 157 * MS))
        self.assertEqual(step("1f1b", 4)["gradient_ready_s"], 0.22)

    def test_slow_stage_events_match_the_books_list(self):
        # training-pipeline-gpipe-slow-stage.md, activation_intervals: A:1:7 send on stage 1 from 0.291 to
        # 0.292, G:2:6 received on stage 1 from 0.374 to 0.425 (B(1,6) starts when B(1,7) ends), G:2:3 from 0.434
        # to 0.635; the stage-1 bottleneck (F 35 ms, B 70 ms) sets gradient ready 0.936 s
        fw, bw = (10 * MS, 35 * MS, 10 * MS, 10 * MS), (20 * MS, 70 * MS, 20 * MS, 20 * MS)
        t = times("gpipe", 8, fw=fw, bw=bw)
        self.assertEqual((t[("F", 1, 7)][1], t[("A", 1, 7)][1]), (291 * MS, 292 * MS))
        self.assertEqual((t[("G", 2, 6)][0], t[("B", 1, 6)][0]), (374 * MS, 425 * MS))
        self.assertEqual((t[("G", 2, 3)][0], t[("B", 1, 3)][0]), (434 * MS, 635 * MS))
        self.assertEqual(max(e for k, (_, e) in t.items() if k[0] == "B"), 936 * MS)

    def test_shared_link_sends_activations_first(self):
        # one half-duplex link for every message: equal starts go to activations before gradients (the book's
        # tie order); the book's 1F1B M = 8 with 20 ms messages: gradients ready 1.02 s, GPipe 1.06 s
        self.assertAlmostEqual(step("1f1b", 8, link_time=20 * MS, link="shared")["gradient_ready_s"], 1.02, places=12)
        self.assertAlmostEqual(step("gpipe", 8, link_time=20 * MS, link="shared")["gradient_ready_s"], 1.06, places=12)

    def test_setup_delays_everything(self):
        a, b = step("1f1b", 4), step("1f1b", 4, setup=5 * MS)
        self.assertAlmostEqual(b["gradient_ready_s"] - a["gradient_ready_s"], 0.005, places=15)
        self.assertEqual([s["idle_s"] for s in a["stage_rows"]], [s["idle_s"] for s in b["stage_rows"]])


class Buffers(unittest.TestCase):
    def test_release_before_allocation(self):
        self.assertEqual(tp.peak([(0, 1, 5), (1, 2, 7)]), (7, 1))
        self.assertEqual(tp.peak([(0, 2, 5), (1, 3, 7), (2, 2, 100)]), (12, 1))

    def test_gpipe_holds_every_microbatch(self):
        # GPipe stage 0 at M = 4: all four saved sets (963,661,824) live when G(1,3) arrives (one FP32 gradient
        # buffer, 2,097,152): 965,758,976; the last stage holds 4 x 320,804,352 = 1,283,217,408 (book's peaks)
        self.assertEqual([s["peak_reserved_bytes"] for s in step("gpipe", 4)["stage_rows"]],
                         [965758976] * 3 + [1283217408])

    def test_1f1b_holds_warmup_plus_one(self):
        # 1F1B stage s holds P - s saved sets: 4 x 240,915,456 + 2,097,152 = 965,758,976 on stage 0, 3 sets +
        # one gradient 724,843,520 + 1,048,576 activation = 725,892,096 on stage 1, 2 sets + both buffers on 2,
        # one set + one gradient 322,901,504 on 3 (the book's 1F1B M = 4 peaks)
        self.assertEqual([s["peak_reserved_bytes"] for s in step("1f1b", 4)["stage_rows"]],
                         [965758976, 725892096, 484976640, 322901504])

    def test_exact_tie_at_a_buffer_boundary(self):
        # 1F1B M = 16, stage 0: A(0,10)'s send buffer ends at 0.325 s exactly when G(1,7)'s receive buffer starts;
        # [start, end) holds them one after the other: the peak stays 965,758,976 (binary floating point puts the
        # end 1e-16 s later and counts both, 966,807,552: the book's figure)
        t = times("1f1b", 16)
        self.assertEqual((t[("A", 0, 10)][1], t[("G", 1, 7)][0]), (325 * MS, 325 * MS))
        self.assertEqual(step("1f1b", 16)["stage_rows"][0]["peak_reserved_bytes"], 965758976)

    def test_recompute_workspace(self):
        # recompute-silu: 9 x 20,476,928 = 184,292,352 B saved on stages 0-2 and a workspace of two FP32 128 x 12288
        # vectors, 12,582,912 B, over each backward; GPipe M = 8 stage 0: 8 x 184,292,352 + 12,582,912 + one
        # gradient 2,097,152 = 1,489,018,880 (the book's peak)
        r = step("gpipe", 8, bw=(25 * MS,) * 4, acts="recompute-silu")
        self.assertEqual(r["recompute_workspace_bytes"], 12582912)
        self.assertEqual(r["stage_rows"][0]["saved_bytes_per_microbatch"], 184292352)
        self.assertEqual(r["stage_rows"][0]["peak_reserved_bytes"], 1489018880)


class GemmInputs(unittest.TestCase):
    def test_layer_inputs_by_hand(self):
        # Qwen3-8B at T = 128: weighted norm outputs 2 x 128 x 4096 = 1,048,576; Q and context 2 x 128 x 32 x 128 =
        # 1,048,576; K and V 2 x 128 x 8 x 128 = 262,144; a u 128 x 12288 = 1,572,864: 3,932,160 elements, 7 identities
        self.assertEqual(tp.gemm_input_elements(QWEN8.layers[0], 128, "save"), (3932160, 7, 0, 0))
        # recompute-products keeps Q, K, V, context (1,310,720) and rebuilds 2 x 524,288 + 1,572,864 = 2,621,440
        self.assertEqual(tp.gemm_input_elements(QWEN8.layers[0], 128, "recompute-products"), (1310720, 7, 2621440, 1572864))

    def test_saved_inputs_raise_the_1f1b_peaks(self):
        # save: 9 x 3,932,160 x 4 = 141,557,760 B more per micro-batch (the last stage + 128 x 4096 x 4 = 2,097,152 for
        # the head's input); 1F1B M = 4 holds 4, 3, 2, 1 sets: 965,758,976 + 4 x 141,557,760 = 1,531,990,016, ...,
        # 322,901,504 + 143,654,912 = 466,556,416 (the book's pipeline-gemm-save-1f1b); 36 x 7 + 1 = 253 identities
        r = step("1f1b", 4, gemm="save")
        self.assertEqual([x["gemm_input_bytes_per_microbatch"] for x in r["stage_rows"]], [141557760] * 3 + [143654912])
        self.assertEqual([x["peak_reserved_bytes"] for x in r["stage_rows"]],
                         [1531990016, 1150565376, 768092160, 466556416])
        self.assertEqual(r["gemm_input_identities"], 253)

    def test_rebuilt_products_hold_one_buffer_over_backward(self):
        # recompute-products: 9 x 1,310,720 x 4 = 47,185,920 B more per set and a 128 x 12288 x 4 = 6,291,456 B product
        # buffer over each backward: stage 0 at B(0,0)'s start holds 4 sets and the buffer, 963,661,824 + 188,743,680 +
        # 6,291,456 = 1,158,696,960 (the book's pipeline-gemm-recompute-products); rebuilt 36 x 2,621,440 + 524,288
        r = step("1f1b", 4, gemm="recompute-products")
        self.assertEqual((r["recompute_workspace_bytes"], r["rebuilt_product_flops_per_microbatch"]), (6291456, 94896128))
        self.assertEqual([x["peak_reserved_bytes"] for x in r["stage_rows"]], [1158696960, 871644160, 583542784, 375330304])
        # with recompute-silu the two-vector workspace (12,582,912) and the product buffer are both held:
        # 4 x (184,292,352 + 47,185,920) + 18,874,368 = 944,787,456 (the book's -silu file)
        r = step("1f1b", 4, gemm="recompute-products", acts="recompute-silu")
        self.assertEqual([x["peak_reserved_bytes"] for x in r["stage_rows"]], [944787456, 714357760, 482879488, 331290112])


class Cli(unittest.TestCase):
    BASE = ("--model", "qwen3-8b", "--stages", "4", "--microbatches", "4", "--seq", "128",
            "--backward-times", "20ms", "--activation-times", "1ms", "--gradient-times", "1ms", "--update-times", "1ms")

    def test_one_value_or_per_stage(self):
        a = budget("--schedule", "gpipe", "--forward-times", "10ms", *self.BASE)
        b = budget("--schedule", "gpipe", "--forward-times", "10ms,10ms,10ms,10ms", *self.BASE)
        self.assertEqual(a, b)
        self.assertEqual(a["gradient_ready_s"], 0.216)

    def test_errors(self):
        for extra, text in ((("--forward-times", "10ms,10ms"), "one value or 4"),
                            (("--forward-times", "10"), "'10' has no unit")):
            status, _, err = run_cli("budget", "pipeline", "--schedule", "1f1b", *extra, *self.BASE)
            self.assertEqual(status, 2)
            self.assertIn(text, err)
        status, _, err = run_cli("budget", "pipeline", "--schedule", "1f1b", "--forward-times", "1ms",
                                 *[x if x != "4" else "5" for x in self.BASE])
        self.assertEqual(status, 2)
        self.assertIn("equal stages", err)


if __name__ == "__main__":
    unittest.main()

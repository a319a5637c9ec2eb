"""Figures of the book *深入理解 AI Infra* recomputed by the commands.

Every expected value is copied from the book's public repository
(bojieli/ai-infra-book), file named in the comment beside it; GiB = 2^30 and
TFLOPs = 10^12 as the book prints them, compared at the book's printed digits.
The scenarios are those of calculations/results/book/scenarios.json, whose
README maps every book result group to them.
"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.cli import render  # noqa: E402

GIB = 2 ** 30
INDEX = "bojieli/ai-infra-book:calculations/results/README.md"


def result(*argv):
    return json.loads(render(list(argv) + ["--format", "json"]))


def gib(n, digits):
    return f"{n / GIB:.{digits}f}"


class ModelLedger(unittest.TestCase):
    def test_qwen3_8b_decode_b64_s8192(self):
        # INDEX, table 1, row qwen3-8b-decode-b64-s8192:
        # matrix TFLOPs 1.277991846, weights 15.256433487 GiB, KV at end 72.008789062 GiB,
        # new KV 0.008789062 GiB
        t = result("forward", "--model", "qwen3-8b", "--batch", "64", "--history", "8192",
                   "--tokens", "1")["totals"]
        self.assertEqual(f"{t['matrix_flops'] / 1e12:.9f}", "1.277991846")
        self.assertEqual(gib(t["weight_bytes"], 9), "15.256433487")
        self.assertEqual(gib(t["kv_bytes_resident_after"], 9), "72.008789062")
        self.assertEqual(gib(t["kv_bytes_written"], 9), "0.008789062")
        # bojieli/ai-infra-book:calculations/results/qwen3-8b-decode-b64-s8192.md:
        # weight_read_once_per_operator_bytes 15,137,335,296
        self.assertEqual(t["weight_bytes_read"], 15_137_335_296)

    def test_llama70_prefill_all_head_512(self):
        # INDEX, table 1, row llama70-prefill-all-head-512: 71.514024051 TFLOPs, 131.416519165 GiB
        t = result("forward", "--model", "llama-3.1-70b", "--tokens", "512", "--logits", "all")["totals"]
        self.assertEqual(f"{t['matrix_flops'] / 1e12:.9f}", "71.514024051")
        self.assertEqual(gib(t["weight_bytes"], 9), "131.416519165")

    def test_moe_routing_concentrated(self):
        # INDEX, table 2, row qwen3-235b-a22b-decode-b64-s8192-concentrated:
        # 512 dispatches and 8 experts per layer, expert matrix 1.816771166 TFLOPs,
        # expert weight load 26.437500000 GiB
        ops = result("forward", "--model", "qwen3-235b-a22b", "--batch", "64", "--history", "8192",
                     "--tokens", "1", "--routing", "concentrated")["operators"]
        experts = [o for o in ops if o["name"].startswith("experts.") and o["matrix_flops"]]
        self.assertEqual(len(experts), 3)
        self.assertTrue(experts[0]["shape"].startswith("512 routed x"))
        self.assertIn("8/128 experts read", experts[0]["shape"])
        self.assertEqual(f"{sum(o['matrix_flops'] for o in experts) / 1e12:.9f}", "1.816771166")
        self.assertEqual(gib(sum(o["weight_bytes_read"] for o in experts), 9), "26.437500000")


class DeepSeekV3(unittest.TestCase):
    def test_base_forward_prefill(self):
        # INDEX, table "DeepSeek V3 基础逻辑前向", rows v3-forward-prefill and -eager:
        # 671026419200 parameters, 767753388556288 matrix FLOPs (eager 935408443588608),
        # 40936407040 resident KV bytes
        t = result("forward", "--model", "deepseek-v3", "--mla", "naive", "--weight-dtype", "bf16",
                   "--routing", "balanced", "--tokens", "8192", "--logits", "all")["totals"]
        self.assertEqual(t["params"], 671_026_419_200)
        self.assertEqual(t["matrix_flops"], 767_753_388_556_288)
        self.assertEqual(t["kv_bytes_resident_after"], 40_936_407_040)
        eager = t["matrix_flops"] - t["attention_flops_causal"] + t["attention_flops_rectangular"]
        self.assertEqual(eager, 935_408_443_588_608)


class Capacity(unittest.TestCase):
    def test_qwen3_8b_n8192_grid(self):
        # bojieli/ai-infra-book:calculations/results/capacity-qwen3-8b-n8192.md:
        # workspace 2 GiB; max concurrency at 24/48/80 GB: 16-bit 4, 24, 50; 8-bit 10, 30, 56;
        # 4-bit 13, 32, 59; eight_bit_scheme_bytes 9,544,230,912; four_bit_scheme_bytes
        # 6,071,347,200; bf16_kv_bytes_per_request 1,207,959,552
        for fmt, expected, weights in (("bf16", [4, 24, 50], 16_381_470_720),
                                       ("int8-g128", [10, 30, 56], 9_544_230_912),
                                       ("int4-g128", [13, 32, 59], 6_071_347_200)):
            got = []
            for cap in ("24GB", "48GB", "80GB"):
                r = result("kv", "--model", "qwen3-8b", "--context", "8192", "--weight-dtype", fmt,
                           "--memory-bytes", cap, "--reserve", "2GiB")
                got.append(r["capacity"]["max_requests"])
            self.assertEqual(got, expected, fmt)
            self.assertEqual(r["capacity"]["stages"][0]["weight_bytes"], weights, fmt)
        self.assertEqual(r["sizing"]["bytes_per_request"], 1_207_959_552)

    def test_llama70_tail_group(self):
        # INDEX, llama70-capacity-tail-group: 8-bit 67.803543 GiB, 4-bit 35.928543 GiB (the
        # book's "group1000 tail group": one BF16 scale per 1000 values of a row, the last
        # group short, i.e. ceil(in / 1000) scales per row). By hand against group 128:
        # per layer 75,776 rows of 8,192 inputs (q, k, v, o, gate, up) keep 64 - 9 = 55 fewer
        # scales and 8,192 rows of 28,672 (down) 224 - 29 = 195 fewer: 5,765,120 scales x 2 B
        # x 80 layers = 922,419,200 B less than int8-g128's 73,725,919,232 (int4: 39,500,398,592).
        # 80 GB, 2 GiB workspace, 8K context: 1 and 14 requests, as at group 128 (the counts the
        # book's chapter 2 prints for llama70-capacity-8k; 8K BF16 KV is 2,684,354,560 B a request).
        for fmt, printed, g128, fits in (("int8-g1000", "67.803543", 73_725_919_232, 1),
                                         ("int4-g1000", "35.928543", 39_500_398_592, 14)):
            r = result("kv", "--model", "llama-3.1-70b", "--context", "8192", "--weight-dtype", fmt,
                       "--memory-bytes", "80GB", "--reserve", "2GiB")
            weights = r["capacity"]["stages"][0]["weight_bytes"]
            self.assertEqual(weights, g128 - 922_419_200, fmt)
            self.assertEqual(gib(weights, 6), printed, fmt)
            self.assertEqual(r["capacity"]["max_requests"], fits, fmt)

    def test_kv_codec_q8_0_q4_0(self):
        # bojieli/ai-infra-book:calculations/results/kv-codec-book.md (Qwen3-8B, 8192 tokens):
        # Q8_0 history 641,728,512 B, append 78,336 B; Q4_0 339,738,624 B and 41,472 B
        for fmt, history, append in (("int8-g32-fp16", 641_728_512, 78_336),
                                     ("int4-g32-fp16", 339_738_624, 41_472)):
            r = result("kv", "--model", "qwen3-8b", "--context", "8192", "--kv-dtype", fmt)
            self.assertEqual((r["sizing"]["bytes_per_request"], r["sizing"]["bytes_per_token"]),
                             (history, append), fmt)

    def test_kv_page_bytes(self):
        # INDEX, table "KV分页与分支", column "页 bytes": 2,359,296 for the Qwen3-8B rows
        # (kv-pages-branches, -aligned, -release, -capacity-two/-three/-retry) and 3,080,192 for
        # kv-pages-qwen235 and -capacity-qwen235: pages of 16 tokens x 147,456 and 192,512 B per
        # token (36 x 2 x 8 x 128 x 2 and 94 x 2 x 4 x 128 x 2). Under TP 2 a device holds half
        # the KV heads, so its page is half as large (conservation over the group).
        for model, page in (("qwen3-8b", 2_359_296), ("qwen3-235b-a22b", 3_080_192)):
            c = result("kv", "--model", model, "--context", "8192", "--page-size", "16")["capacity"]
            self.assertEqual(c["page_bytes_per_device"], page, model)
            self.assertEqual(c["page_bytes_per_device"], 16 * c["kv_bytes_per_token_per_device"], model)
            tp2 = result("kv", "--model", model, "--context", "8192", "--page-size", "16", "--tp", "2")
            self.assertEqual(2 * tp2["capacity"]["page_bytes_per_device"], page, model)
        self.assertNotIn("page_bytes_per_device",
                         result("kv", "--model", "qwen3-8b", "--context", "8192")["capacity"])

    def test_q_projection_roofline(self):
        # INDEX, table "真实 Q 投影": 256x4096x4096, AI 227.555556 FLOP/B; RTX 4090 compute
        # 51.997183 us, memory 37.449143 us (compute-bound); B200 memory 4.718592 us (memory-bound)
        r = result("gemm", "--m", "256", "--k", "4096", "--n", "4096", "--device", "rtx-4090",
                   "--device", "b200")
        self.assertEqual(f"{r['work']['arithmetic_intensity_flops_per_byte']:.6f}", "227.555556")
        rtx, b200 = r["devices"]
        self.assertEqual((f"{rtx['compute_time_s'] * 1e6:.6f}", f"{rtx['memory_time_s'] * 1e6:.6f}",
                          rtx["bound"]), ("51.997183", "37.449143", "compute"))
        self.assertEqual((f"{b200['time_s'] * 1e6:.6f}", b200["bound"]), ("4.718592", "memory"))

    def test_q_projection_apple_m2_max(self):
        # INDEX, "真实 Q 投影", projection-qwen3-8b-m2-max-38gpu-96gb-b1 / -b256: compute 未知
        # (unknown), memory 83.927040 / 94.371840 us. By hand at 400 GB/s: (8,192 + 33,554,432
        # + 8,192) B / 400e9 and 37,748,736 B / 400e9. The book leaves the roofline unknown;
        # ours is the memory time, a lower bound, named 'memory; compute unknown'.
        for m, memory_us in ((1, "83.927040"), (256, "94.371840")):
            d = result("gemm", "--m", str(m), "--k", "4096", "--n", "4096",
                       "--device", "apple-m2-max")["devices"][0]
            self.assertEqual(f"{d['memory_time_s'] * 1e6:.6f}", memory_us)
            self.assertIsNone(d["compute_time_s"])
            self.assertEqual((d["time_s"], d["bound"]), (d["memory_time_s"], "memory; compute unknown"))

    def test_q_projection_ascend_950dt(self):
        # INDEX, "真实 Q 投影", projection-qwen3-8b-ascend-950dt-max-spec-b1 / -b256: compute 未知,
        # memory 8.392704 / 9.437184 us. By hand at 4,000 GB/s (Ascend 950 white paper Table 3-1):
        # 33,570,816 B / 4e12 = 8.392704 us and 37,748,736 B / 4e12 = 9.437184 us.
        for m, memory_us in ((1, "8.392704"), (256, "9.437184")):
            d = result("gemm", "--m", str(m), "--k", "4096", "--n", "4096",
                       "--device", "ascend-950dt")["devices"][0]
            self.assertEqual(f"{d['memory_time_s'] * 1e6:.6f}", memory_us)
            self.assertIsNone(d["compute_time_s"])
            self.assertEqual(d["bound"], "memory; compute unknown")

    def test_batch_reuse_h100_2k(self):
        # bojieli/ai-infra-book:calculations/results/batch-reuse-h100-2k.md:
        # declared_capacity_max_batch 210 (80 GB label, workspace 0, history 2048 + the new token)
        r = result("kv", "--model", "qwen3-8b", "--context", "2049", "--memory-bytes", "80GB",
                   "--reserve", "0")
        self.assertEqual(r["capacity"]["max_requests"], 210)
        # same file, batch 4 row: matrix FLOPs 65378975744, prior KV read 1207959552,
        # total declared traffic 16345393152 (weights with one embedding row per request,
        # KV read, KV written), memory-bound
        t = result("forward", "--model", "qwen3-8b", "--batch", "4", "--history", "2048", "--tokens", "1",
                   "--new-kv", "on-chip", "--device", "h100-sxm")["totals"]
        self.assertEqual((t["matrix_flops"], t["kv_bytes_read"], t["unique_bytes"], t["ideal_bound"]),
                         (65_378_975_744, 1_207_959_552, 16_345_393_152, "memory"))


class Placement(unittest.TestCase):
    def test_dense_tp_pp_placement(self):
        # INDEX, table "Dense 逐卡 TP/PP/DP" (one request of history 8192 + 1 token per replica,
        # 24 GB cards, 2 GiB workspace): placement-qwen8-tp2-pp4-dp1 15.257008 GiB of physical
        # weights, 4.337569 GiB on the fullest card; placement-qwen8-tp16-pp1-dp1 (KV heads
        # replicated) 15.827545 and 3.129864 GiB.
        for tp, pp, physical, fullest in ((2, 4, "15.257008", "4.337569"), (16, 1, "15.827545", "3.129864")):
            r = result("kv", "--model", "qwen3-8b", "--context", "8193", "--tp", str(tp), "--pp", str(pp),
                       "--memory-bytes", "24GB", "--reserve", "2GiB")
            stages = r["capacity"]["stages"]
            self.assertEqual(len(stages), pp)
            total = tp * sum(s["weight_bytes"] for s in stages)   # even splits: equal TP ranks
            card = max(s["weight_bytes"] + s["kv_bytes_per_request"] for s in stages) + 2 ** 31
            self.assertEqual((gib(total, 6), gib(card, 6)), (physical, fullest))
            self.assertTrue(r["capacity"]["fits_one_request"])


class Ring(unittest.TestCase):
    def test_qwen3_8b_tp8_ring_all_reduce(self):
        # INDEX, table "Qwen Dense ring", row ring-qwen3-8b-t1-p8: message 8192 B per rank,
        # 14336 B sent per rank, 28.286720 us per all-reduce, 2.036644 ms for the 2L = 72
        # (links of 2 us and 50 GB/s: 14 x 2 us + 14336 B / 50 GB/s = 28.28672 us by hand)
        r = result("parallel", "--model", "qwen3-8b", "--devices", "8", "--tp", "8", "--input-len", "1",
                   "--output-len", "1", "--alpha-up", "2us", "--link-bw-up", "50GB/s", "--algorithm", "ring")
        cs = {c["name"]: c for c in r["phases"]["prefill"]["stages"][0]["collectives"]}
        a, m = cs["TP all-reduce after attention"], cs["TP all-reduce after MLP"]
        self.assertEqual((a["bytes_per_run"], a["wire_bytes_per_run"], a["runs"] + m["runs"]), (8192, 14336, 72))
        self.assertEqual(f"{a['time_s'] / a['runs'] * 1e6:.6f}", "28.286720")
        self.assertEqual(f"{(a['time_s'] + m['time_s']) * 1e3:.6f}", "2.036644")



def collectives(r, stage=0):
    return {c["name"]: c for c in r["phases"]["prefill"]["stages"][stage]["collectives"]}


class BinomialTree(unittest.TestCase):
    """--algorithm binomial: the book's unsegmented binomial all-reduce, 2 ceil(log2 p) (alpha + M/B)."""

    def test_qwen3_tp8_rows(self):
        # INDEX, table "未分段 binomial tree", row tree-qwen3-8b-t8192-p8: 6 rounds, group sends
        # 939524096 B, busiest rank 201326592 B, 8065.063680 us per all-reduce
        # (by hand: 6 x (2 us + 67108864 B / 50 GB/s) = 6 x 1344.17728 us)
        r = result("parallel", "--model", "qwen3-8b", "--devices", "8", "--tp", "8", "--input-len", "8192",
                   "--output-len", "1", "--alpha-up", "2us", "--link-bw-up", "50GB/s", "--algorithm", "binomial")
        a = collectives(r)["TP all-reduce after attention"]
        self.assertEqual((a["wire_bytes_per_run"], 2 * (a["group"] - 1) * a["bytes_per_run"]),
                         (201_326_592, 939_524_096))
        self.assertEqual(f"{a['time_s'] / a['runs'] * 1e6:.6f}", "8065.063680")
        # row tree-qwen3-32b-t1-p8-h100 (the ring group's solved link, 0.822 us and 450 GB/s): 5.068533 us
        r = result("parallel", "--model", "qwen3-32b", "--devices", "8", "--tp", "8", "--input-len", "1",
                   "--output-len", "1", "--alpha-up", "0.822us", "--link-bw-up", "450GB/s", "--algorithm", "binomial")
        a = collectives(r)["TP all-reduce after MLP"]
        self.assertEqual((a["wire_bytes_per_run"], f"{a['time_s'] / a['runs'] * 1e6:.6f}"), (30_720, "5.068533"))
        # the other collectives stay rings: the head's logits all-gather equals --algorithm ring's
        ring = result("parallel", "--model", "qwen3-32b", "--devices", "8", "--tp", "8", "--input-len", "1",
                      "--output-len", "1", "--alpha-up", "0.822us", "--link-bw-up", "450GB/s")
        name = "TP head logits all-gather (vocab-parallel)"
        self.assertEqual(collectives(r, -1)[name], collectives(ring, -1)[name])

    def test_five_ranks_at_comm_level(self):
        # row tree-qwen3-8b-t1-p5 (no Qwen3 TP layout has 5 ranks): 6 rounds, 65536 B sent by the
        # group, 24576 B by the busiest rank, 12.983040 us
        from infracalc import comm
        link = comm.Link("up", "book link", 50_000_000_000, 2e-6)
        c = comm.Collective("all-reduce", "all_reduce", 8192, 5, "up")
        self.assertEqual((2 * comm.binomial_rounds(5), 2 * 4 * c.bytes, comm.wire_bytes(c, "binomial")),
                         (6, 65_536, 24_576))
        self.assertEqual(f"{comm.time_s(c, link, 'binomial') * 1e6:.6f}", "12.983040")


class MoEAllToAll(unittest.TestCase):
    def test_qwen235_balanced_and_hotspot(self):
        # INDEX, table "MoE assignment all-to-all": t64-balanced dispatch 29360128 B, busiest receiver
        # 3670016 B, 87.400320 us; t64-hotspot (every assignment to rank 0) 29360128, 29360128 B,
        # 601.202560 us. By hand: 7/8 x 4194304 B / 50 GB/s + 7 x 2 us = 87.40032 us; the hotspot
        # multiplies the bandwidth term by 8.
        for routing, receiver, us in (("balanced", 3_670_016, "87.400320"), ("concentrated", 29_360_128, "601.202560")):
            r = result("parallel", "--model", "qwen3-235b-a22b", "--devices", "8", "--ep", "8", "--batch", "64",
                       "--input-len", "1", "--output-len", "1", "--routing", routing, "--alpha-up", "2us",
                       "--link-bw-up", "50GB/s")
            d = collectives(r)["EP dispatch all-to-all"]
            skew = 1 if routing == "balanced" else 8
            with self.subTest(routing=routing):
                self.assertEqual((8 * d["wire_bytes_per_run"], d["wire_bytes_per_run"] * skew),
                                 (29_360_128, receiver))
                self.assertEqual(f"{d['time_s'] / d['runs'] * 1e6:.6f}", us)


class DenseCommunicationPath(unittest.TestCase):
    def test_tp2_pp4_reconciled(self):
        # INDEX, table "Dense 完整基础通信路径", row dense-comm-qwen8-tp2-pp4-t1: 1852936 B per
        # replica, 0.322529 ms serial. The book gathers the logits in FP32 (ours BF16: the gather
        # once more) and adds the token ID's feedback: 4 B last -> first stage (one startup) and a
        # 1-round broadcast over the 2 TP ranks (bojieli/ai-infra-book:calculations/results/
        # dense-comm-qwen8-tp1-pp8-t1.md and -tp8-pp1-t1.md list these operations).
        r = result("parallel", "--model", "qwen3-8b", "--devices", "8", "--tp", "2", "--pp", "4", "--input-len", "1",
                   "--output-len", "1", "--alpha-up", "2us", "--link-bw-up", "50GB/s")
        # Our PP convention (collectives.pp_boundary_collectives): each TP rank sends its 1/tp
        # slice (4,096 B) and the receiver all-gathers the 8,192 B over its 2 TP ranks: the same
        # tp x 8,192 B per boundary as the book's whole-tensor send from each TP rank, and one
        # more startup, the all-gather's (n - 1) alpha = 2 us per boundary, subtracted below.
        ph, tp, pp = r["phases"]["prefill"], 2, 4
        cs = [c for s in ph["stages"] for c in s["collectives"]]
        send, gather_x = sorted(ph["transfer"], key=lambda c: c["kind"] != "p2p")
        self.assertEqual((send["bytes_per_run"], gather_x["kind"], gather_x["bytes_per_run"]),
                         (4096, "all_gather", 8192))
        boundary = tp * send["wire_bytes_per_run"] + gather_x["group"] * gather_x["wire_bytes_per_run"]
        ours = sum(c["group"] * c["wire_bytes_per_run"] * c["runs"] for c in cs) + (pp - 1) * boundary
        seconds = sum(c["time_s"] for c in cs) + (pp - 1) * (sum(c["time_s"] for c in ph["transfer"]) - 2e-6)
        gather = next(c for c in cs if "logits" in c["name"])
        fp32_extra = gather["group"] * gather["wire_bytes_per_run"]
        token_s = 2 * (2e-6 + 4 / 50e9)
        self.assertEqual(ours + fp32_extra + 4 * (tp - 1) + 4, 1_852_936)
        extra_s = gather["wire_bytes_per_run"] / 50e9 + token_s
        self.assertEqual(f"{(seconds + extra_s) * 1e3:.6f}", "0.322529")


class Qwen235Placement(unittest.TestCase):
    def test_ep8_and_tp2_ep2_pp2(self):
        # bojieli/ai-infra-book:calculations/results/qwen235-placement-ep8-expert-partition.md
        # (80e9 B cards, 2 GiB workspace, 8192 tokens): rank 0 BF16 weights 72768576512 B, KV per
        # request 1577058304 B, 3 requests; physical weights 582148612096 B.
        # ...-tp2-ep2-pp2-80gb-8192.md, 8-bit: rank 0 31204810240 B, 118 requests, physical
        # 249638514688 B; the book's TP 2 x EP 2 is our --tp 2 --ep 4 (same bytes per card).
        for layout, fmt, weights, kv, fit, physical in (
                (("--ep", "8"), "bf16", 72_768_576_512, 1_577_058_304, 3, 582_148_612_096),
                (("--tp", "2", "--ep", "4", "--pp", "2"), "int8-g128", 31_204_810_240, 394_264_576, 118,
                 249_638_514_688)):
            r = result("parallel", "--model", "qwen3-235b-a22b", "--devices", "8", *layout, "--input-len", "8192",
                       "--output-len", "1", "--memory-convention", "label", "--reserve", "2GiB",
                       "--weight-dtype", fmt)
            m, lay = r["memory"], r["layout"]
            first = m["stages"][0]
            per_stage = lay["devices"] // lay["pp"]
            with self.subTest(layout=layout):
                self.assertEqual((first["weight_bytes"], first["cache_bytes_per_request"], m["max_requests_per_replica"]),
                                 (weights, kv, fit))
                self.assertEqual(per_stage * sum(s["weight_bytes"] for s in m["stages"]), physical)


    def test_declared_budgets_with_memory_bytes(self):
        # bojieli/ai-infra-book:calculations/results/qwen235-placement-tp2-ep4-pp1-48gb-8192.md
        # (48e9 B cards, 2 GiB workspace): 8-bit rank 0 weights 33579031552 B, KV per request
        # 788529152 B, 15 requests; physical 268632252416 B. By hand: (48e9 - 2^31 - 33579031552)
        # / 788529152 = 12273484800 / 788529152 = 15.56 -> 15.
        # ...-tp4-ep2-pp1-24gb-32768.md: 4-bit rank 0 16223558656 B, KV 1577058304 B, 3 requests,
        # physical 129788469248 B; 8-bit 31254895616 B, 0 requests.
        for layout, budget, ctx, fmt, weights, kv, fit, physical in (
                (("--tp", "2", "--ep", "8"), "48GB", "8192", "int8-g128", 33_579_031_552, 788_529_152, 15,
                 268_632_252_416),
                (("--tp", "4", "--ep", "8"), "24GB", "32768", "int4-g128", 16_223_558_656, 1_577_058_304, 3,
                 129_788_469_248),
                (("--tp", "4", "--ep", "8"), "24GB", "32768", "int8-g128", 31_254_895_616, 1_577_058_304, 0,
                 250_039_164_928)):
            r = result("parallel", "--model", "qwen3-235b-a22b", "--devices", "8", *layout, "--input-len", ctx,
                       "--output-len", "1", "--memory-bytes", budget, "--reserve", "2GiB", "--weight-dtype", fmt)
            m = r["memory"]
            first = m["stages"][0]
            with self.subTest(layout=layout, fmt=fmt):
                self.assertEqual(m["memory_convention"], "declared")
                self.assertEqual(first["memory_bytes"], int(budget[:2]) * 10 ** 9)
                self.assertEqual((first["weight_bytes"], first["cache_bytes_per_request"],
                                  m["max_requests_per_replica"]), (weights, kv, fit))
                self.assertEqual(8 * first["weight_bytes"], physical)

    def test_memory_bytes_excludes_memory_convention(self):
        status, _, err = run_cli("parallel", "--model", "qwen3-8b", "--devices", "1", "--input-len", "8",
                                 "--output-len", "1", "--memory-bytes", "48GB", "--memory-convention", "label")
        self.assertEqual(status, 2)
        self.assertIn("not allowed with argument", err)


class DenseQuantizedPlacement(unittest.TestCase):
    def test_book_files(self):
        # bojieli/ai-infra-book:calculations/results/dense-quant-qwen3-8b-tp2-pp4-24gb-8192.md: per rank
        # payload + scale bytes (rank 0: BF16 2358923776 + 0, 8-bit 1490702848 + 13565952, 4-bit
        # 1056592384 + 13565952; rank 2: 8-bit 868372992 + 13565952), KV 150994944 B per request,
        # replica max requests 129 / 134 / 137, physical 16382087168 / 9544847360 / 6071963648 B.
        # ...-deepseek-r1-distill-llama-70b-tp1-pp8-80gb-32768.md (Llama-3.1-70B geometry): rank 0
        # 19214434304, 10658054144 + 133693440, 6379864064 + 133693440; KV 1342177280; 43 / 49 / 53;
        # physical 141107412992 / 73725919232 / 39500398592.
        cases = (("qwen3-8b", "2", "4", "24GB", "8192", 150_994_944,
                  ((2_358_923_776, 129, 16_382_087_168), (1_504_268_800, 134, 9_544_847_360),
                   (1_070_158_336, 137, 6_071_963_648))),
                 ("llama-3.1-70b", "1", "8", "80GB", "32768", 1_342_177_280,
                  ((19_214_434_304, 43, 141_107_412_992), (10_791_747_584, 49, 73_725_919_232),
                   (6_513_557_504, 53, 39_500_398_592))))
        for model, tp, pp, budget, ctx, kv, rows in cases:
            for fmt, (rank0, fit, physical) in zip(("bf16", "int8-g128", "int4-g128"), rows):
                c = result("kv", "--model", model, "--context", ctx, "--tp", tp, "--pp", pp, "--memory-bytes",
                           budget, "--reserve", "2GiB", "--weight-dtype", fmt)["capacity"]
                with self.subTest(model=model, fmt=fmt):
                    self.assertEqual(c["stages"][0]["weight_bytes"], rank0)
                    self.assertEqual(c["kv_bytes_per_request_per_device"], kv)
                    self.assertEqual(c["max_requests"], fit)
                    self.assertEqual(int(tp) * sum(s["weight_bytes"] for s in c["stages"]), physical)
        c = result("kv", "--model", "qwen3-8b", "--context", "8192", "--tp", "2", "--pp", "4", "--memory-bytes",
                   "24GB", "--reserve", "2GiB", "--weight-dtype", "int8-g128")["capacity"]
        self.assertEqual(c["stages"][2]["weight_bytes"], 868_372_992 + 13_565_952)


class RLCycle(unittest.TestCase):
    def test_cycle_matrix_flops(self):
        # INDEX, table "RL 同一候选／有效样本批次" (P = 1024 prompt tokens, G = 256 outputs, 32
        # candidates, 16 accepted): cycle matrix TFLOPs rl-qwen8-base 2181.558727, -low-acceptance
        # (64 candidates) 3410.701494, -teacher-update (one teacher pass, two update epochs)
        # 3768.918661, -compact (head on the G supervised rows only) 2079.695777, rl-qwen235-base
        # 6420.684167. Components, from bojieli/ai-infra-book:calculations/results/rl-qwen8-base.md:
        # rollout prefill 465142911336448, rollout decode (255 steps) 129055881953280, reference
        # scoring (P + G - 1 = 1279 positions, head on all) 634943973621760, policy update
        # 952415960432640 (= 3 x the scoring work of 16 sequences).
        def parts(model, *routing):
            prefill = result("forward", "--model", model, "--batch", "32", "--tokens", "1024",
                             *routing)["totals"]["matrix_flops"]
            dec = result("decode", "--model", model, "--batch", "32", "--input-len", "1024", "--output-len",
                         "256", *routing)["decode"]
            score = result("forward", "--model", model, "--batch", "32", "--tokens", "1279", "--logits", "all",
                           *routing)["totals"]["matrix_flops"]
            update = result("train", "--model", model, "--seq", "1279",
                            "--global-batch", "16")["flops_per_step"]["model_flops"]
            return prefill, dec["linear_flops"] + dec["attention_flops_causal"], score, update

        prefill, decode, score, update = parts("qwen3-8b")
        self.assertEqual((prefill, decode, score, update), (465_142_911_336_448, 129_055_881_953_280,
                                                            634_943_973_621_760, 952_415_960_432_640))
        tf = lambda x: f"{x / 1e12:.6f}"  # noqa: E731
        self.assertEqual(tf(prefill + decode + score + update), "2181.558727")
        self.assertEqual(tf(2 * (prefill + decode + score) + update), "3410.701494")
        self.assertEqual(tf(prefill + decode + 2 * score + 2 * update), "3768.918661")
        # compact: the head skips the 1023 unsupervised rows of 32 scoring and 3 x 16 update passes
        head = result("gemm", "--m", "1023", "--k", "4096", "--n", "151936")["work"]["matrix_flops"]
        self.assertEqual(tf(prefill + decode + score + update - (32 + 3 * 16) * head), "2079.695777")
        self.assertEqual(tf(sum(parts("qwen3-235b-a22b", "--routing", "balanced"))), "6420.684167")


class WeightHandoff(unittest.TestCase):
    def test_selective_egress(self):
        # INDEX, table "权重交接": weight-handoff-book full 470187269120 B, largest rank 44381527040 B,
        # selective egress 710104432640 B (EP 16, each rank its 8 experts and every non-expert
        # weight); -replicas (4 EP groups) 2840417730560 B; -qwen8 16381470720 B all three.
        for devices, egress in (("16", 710_104_432_640), ("64", 2_840_417_730_560)):
            r = result("parallel", "--model", "qwen3-235b-a22b", "--devices", devices, "--ep", "16",
                       "--input-len", "1", "--output-len", "1")
            rank = r["memory"]["stages"][0]["weight_bytes"]
            self.assertEqual(rank, 44_381_527_040)
            self.assertEqual(int(devices) * rank, egress)


class StorageGeneration(unittest.TestCase):
    def test_weights_vs_kv(self):
        # bojieli/ai-infra-book:calculations/results/storage-generation-qwen8-235.md: resident weight
        # GB, weight/KV interface payload GB, declared total budget GB (+ 2 GiB workspace); H100 payload
        # service 4.879082 ms for qwen3-8b-b1-h8191-w16 (3.35 TB/s).
        for model, b, h, fmt, routing, resident, payload, budget in (
                ("qwen3-8b", 1, 8191, "bf16", (), "16.381471", "16.344926", "19.736914"),
                ("qwen3-235b-a22b", 8, 8191, "bf16", ("--routing", "balanced"), "470.187269", "254.464286",
                 "484.951219"),
                ("qwen3-235b-a22b", 8, 8191, "int4-g128", ("--routing", "concentrated"), "123.142036",
                 "24.737406", "137.905987"),
                ("qwen3-235b-a22b", 32, 32767, "int8-g128", ("--routing", "concentrated"), "240.041483",
                 "224.437231", "444.052430")):
            t = result("forward", "--model", model, "--batch", str(b), "--history", str(h), "--tokens", "1",
                       "--weight-dtype", fmt, *routing)["totals"]
            gb = lambda x: f"{x / 1e9:.6f}"  # noqa: E731
            with self.subTest(model=model, b=b, fmt=fmt):
                self.assertEqual(gb(t["weight_bytes"]), resident)
                self.assertEqual(gb(t["unique_bytes"]), payload)
                self.assertEqual(gb(t["weight_bytes"] + t["kv_bytes_resident_after"] + 2 ** 31), budget)
        t = result("forward", "--model", "qwen3-8b", "--history", "8191", "--tokens", "1")["totals"]
        self.assertEqual(f"{t['unique_bytes'] / 3.35e12 * 1e3:.6f}", "4.879082")


class DeclaredDeviceFigures(unittest.TestCase):
    def test_the_books_h100_peak(self):
        # INDEX, table "真实 Q 投影": projection-qwen3-8b-h100-sxm-b1 compute 0.033914 us,
        # -b256 8.681963 us, projection-qwen3-32b-h100-sxm-prefill-8192 694.557072 us: the H100 at
        # 989.4 TFLOP/s. By hand: 2 x 8192 x 5120 x 8192 = 687194767360 FLOPs / 989.4e12 = 694.557072 us.
        for m, k, n, us in (("1", "4096", "4096", "0.033914"), ("256", "4096", "4096", "8.681963"),
                            ("8192", "5120", "8192", "694.557072")):
            d = result("gemm", "--m", m, "--k", k, "--n", n, "--matrix-peak", "bf16=989.4T")["devices"][0]
            self.assertEqual(d["matrix_flops_per_s"], 989_400_000_000_000)
            self.assertEqual(f"{d['compute_time_s'] * 1e6:.6f}", us)
            self.assertIn("(declared: bf16 peak 989.4 TFLOP/s)", d["name"])

    def test_declared_bandwidth_and_refusals(self):
        # qwen3-8b, one decode step at history 8191: 16344926208 B; at a declared 4.0 TB/s the
        # memory term is 16344926208 / 4e12 = 4.086231552 ms.
        r = result("forward", "--model", "qwen3-8b", "--history", "8191", "--tokens", "1",
                   "--memory-bandwidth", "4.0TB/s")
        self.assertEqual(r["device"]["memory_bandwidth_bytes_per_s"], 4_000_000_000_000)
        status, _, err = run_cli("gemm", "--m", "1", "--k", "2", "--n", "3", "--device", "h100-sxm",
                                 "--device", "h200", "--matrix-peak", "bf16=1T")
        self.assertEqual(status, 2)
        self.assertIn("give one --device", err)
        status, _, err = run_cli("gemm", "--m", "1", "--k", "2", "--n", "3", "--matrix-peak", "bf17=1T")
        self.assertEqual(status, 2)


class ChapterOneBudgets(unittest.TestCase):
    def test_decode_budget(self):
        # INDEX, table "70B 初步解码预算": decode-budget-base compute 0.141500 ms, memory 20.895522 ms,
        # fits, crossover 148; -b64-kv-capacity-fail 9.055994, 41.408799, False, None.
        for extra, row in ((("--weight-bits", "8"), ("0.141500", "20.895522", True, 148)),
                           (("--weight-bits", "8", "--batch", "64", "--kv-history-bytes", "1GiB"),
                            ("9.055994", "41.408799", False, None))):
            r = result("budget", "decode", "--params", "70B", *extra, "--matrix-peak", "bf16=989.4T")["result"]
            self.assertEqual((f"{r['compute_s'] * 1e3:.6f}", f"{r['memory_s'] * 1e3:.6f}", r["fits"],
                              r["crossover_batch"]), row)

    def test_basics_and_window(self):
        # INDEX, "第 1 章教学单位与容量": basics-70b-bf16-skewed 140 GB, 130.385160 GiB, total fits,
        # per-card does not, 2800.003000 ms; "独立访存窗口": window-qwen3-8b-n128 3907 transactions,
        # 32.768000 GB/s, 36.864000 ms; remote-window-serial 391, 2.560000, 471.859200.
        r = result("budget", "transfer", "--params", "70B", "--cards", "2", "--shards", "70000000000,0",
                   "--card-memory", "80GB", "--link-bw", "50GB/s", "--startup", "3us")["result"]
        self.assertEqual((r["weight_gb"], f"{r['weight_gib']:.6f}", r["aggregate_fits"], r["every_card_fits"],
                          f"{r['serial_transfer_s'] * 1e3:.6f}"), (140.0, "130.385160", True, False, "2800.003000"))
        for extra, row in ((("--bandwidth", "1TB/s", "--latency", "500ns", "--transaction-bytes", "128",
                             "--transactions", "128"), (3907, "32.768000", "36.864000")),
                           (("--bandwidth", "50GB/s", "--latency", "2us", "--transaction-bytes", "256",
                             "--transactions", "128", "--service-interval", "100ns"), (391, "2.560000", "471.859200"))):
            r = result("budget", "window", "--model", "qwen3-8b", "--context", "8192", *extra)["result"]
            self.assertEqual((r["required_transactions"], f"{r['effective_bandwidth_bytes_per_s'] / 1e9:.6f}",
                              f"{r['service_lower_bound_s'] * 1e3:.6f}"), row)

    def test_checkpoint_and_training_scale(self):
        # INDEX, "保存周期": checkpoint-interval-book c 6399012/390625 s, MTBF 28440 s, first order
        # 965.2865142296354 s, Poisson 954.3965630587674 s. bojieli/ai-infra-book:calculations/results/
        # dense-training-scale-book.md, h100-sxm 1T 3/10: 285.597501 days on 16,384 cards, 51992 cards
        # for 90 days, bound 315128807424 parameters.
        from fractions import Fraction
        r = result("budget", "checkpoint", "--model", "qwen3-8b", "--write-bandwidth", "8GB/s",
                   "--job-mtbf", "28440s")["result"]
        self.assertEqual(Fraction(r["save_cost_s"]).limit_denominator(10**7), Fraction(6399012, 390625))
        self.assertEqual((r["young_interval_s"], r["poisson_interval_s"]), (965.2865142296354, 954.3965630587674))
        r = result("budget", "training", "--params", "1T", "--train-tokens", "20T", "--efficiency", "3/10",
                   "--days", "90", "--cards", "16384", "--matrix-peak", "bf16=989.4T")["result"]
        row, bound = r["rows"][0], r["params_bounds"][0]
        self.assertEqual((f"{row['training_days_on_cards']:.6f}", row["compute_cards"], bound["params_bound"]),
                         ("285.597501", 51992, 315_128_807_424))


class ArchitectureVariants(unittest.TestCase):
    def test_edited_configs(self):
        # bojieli/ai-infra-book:calculations/results/architecture-decode.md (one request, history 8192, one
        # token; TP 2 on 24e9 B cards with 2 GiB workspace): L/H/FFN/KV heads, parameters, matrix FLOPs,
        # KV bytes per token, per-rank budget (weights + KV + workspace).
        rows = (("baseline", 8_190_735_360, 19_968_622_592, 147_456, 10_942_580_736),
                ("shallower-same-width", 8_178_051_072, 18_332_647_424, 98_304, 10_728_443_904),
                ("deeper-same-width", 8_165_670_912, 21_529_100_288, 196_608, 11_118_968_832),
                ("narrower-same-depth", 8_195_641_344, 19_081_641_984, 110_592, 10_796_398_592),
                ("shallower-wider", 8_209_296_384, 18_889_277_440, 98_304, 10_759_739_392),
                ("less-kv-more-ffn", 8_190_735_360, 19_968_622_592, 36_864, 10_489_540_608))
        configs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "calculations", "results",
                               "book", "configs")
        for name, params, flops, per_token, budget in rows:
            model = "qwen3-8b" if name == "baseline" else os.path.join(configs, f"qwen3-8b-{name}.json")
            r = result("forward", "--model", model, "--history", "8192", "--tokens", "1")
            c = result("kv", "--model", model, "--context", "8193", "--tp", "2", "--memory-bytes", "24GB",
                       "--reserve", "2GiB")["capacity"]["stages"][0]
            with self.subTest(variant=name):
                self.assertEqual((r["model"]["params"], r["totals"]["matrix_flops"], r["totals"]["kv_bytes_per_token"]),
                                 (params, flops, per_token))
                self.assertEqual(c["weight_bytes"] + c["kv_bytes_per_request"] + 2 ** 31, budget)


    def test_prefill_prefix_single_device(self):
        # bojieli/ai-infra-book:calculations/results/architecture-prefill.md, -prefix.md, -single-device.md:
        # matrix FLOPs at 8192 tokens and at 6144 + 2048, the TP-2 per-rank budget for 8,192 positions and the
        # one-device budget for 8,193 (weights + KV + 2 GiB workspace).
        rows = (("baseline", 133_594_323_353_600, 37_110_366_076_928, 10_942_507_008, 19_737_061_376),
                ("deeper-same-width", 139_779_881_566_208, 39_893_706_211_328, 11_118_870_528, 20_089_634_816),
                ("less-kv-more-ffn", 133_594_323_353_600, 37_110_366_076_928, 10_489_522_176, 18_830_981_120))
        configs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "calculations", "results",
                               "book", "configs")
        for name, prefill, prefix, tp2, one in rows:
            model = "qwen3-8b" if name == "baseline" else os.path.join(configs, f"qwen3-8b-{name}.json")
            budgets = []
            for extra in (("--context", "8192", "--tp", "2"), ("--context", "8193")):
                k = result("kv", "--model", model, *extra, "--memory-bytes", "24GB", "--reserve", "2GiB")["capacity"]
                budgets.append(k["stages"][0]["weight_bytes"] + k["stages"][0]["kv_bytes_per_request"] + 2 ** 31)
            with self.subTest(variant=name):
                self.assertEqual(result("forward", "--model", model, "--tokens", "8192")["totals"]["matrix_flops"],
                                 prefill)
                self.assertEqual(result("forward", "--model", model, "--history", "6144", "--tokens", "2048")
                                 ["totals"]["matrix_flops"], prefix)
                self.assertEqual(budgets, [tp2, one])


class ExpertGranularity(unittest.TestCase):
    def test_edited_qwen235_configs(self):
        # bojieli/ai-infra-book, chapter 2 (C13-expert-granularity): 16 tokens; 64/3072/k4 and 256/768/k16 keep
        # the expert work 454,192,791,552 FLOPs (16 x k x 94 x 6 x 4096 x width), 256/768/k8 halves it;
        # the router [E, 4096] x 94 makes the whole model 24,641,536 smaller / 49,283,072 larger.
        configs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "calculations", "results",
                               "book", "configs")
        base = 235_093_634_560
        for name, params, flops in (("baseline", base, 454_192_791_552),
                                    ("coarse64", base - 24_641_536, 454_192_791_552),
                                    ("fine256-k16", base + 49_283_072, 454_192_791_552),
                                    ("fine256-k8", base + 49_283_072, 227_096_395_776)):
            model = ("qwen3-235b-a22b" if name == "baseline"
                     else os.path.join(configs, f"qwen3-235b-a22b-granularity-{name}.json"))
            r = result("forward", "--model", model, "--tokens", "16")
            with self.subTest(variant=name):
                self.assertEqual(r["model"]["params"], params)
                self.assertEqual(sum(o["matrix_flops"] for o in r["operators"] if o["name"].startswith("experts.")),
                                 flops)


class TrainingNonMatrix(unittest.TestCase):
    def test_book_row_totals(self):
        # bojieli/ai-infra-book:calculations/results/training-nonmatrix-book.md (Qwen3-8B, 128 tokens): original
        # training matrix 5,826,907,471,872 FLOPs; parameter state 147,433,236,480 B (18 B per parameter);
        # AdamW reads 131,051,765,760 B, writes 98,288,824,320 B and the BF16 weights 16,381,470,720 B (30 P).
        r = result("train", "--model", "qwen3-8b", "--seq", "128", "--grad-dtype", "fp32")
        st = r["memory"]["stages"][0]
        self.assertEqual(r["flops_per_step"]["model_flops"], 5_826_907_471_872)
        self.assertEqual(st["weights_bytes"] + st["grads_bytes"] + st["optimizer_bytes"], 147_433_236_480)
        self.assertEqual(r["lower_bound"]["optimizer_update_bytes_per_device"],
                         131_051_765_760 + 98_288_824_320 + 16_381_470_720)


class TeacherCache(unittest.TestCase):
    def test_fp32_and_v4_flash_rows(self):
        # INDEX, table "教师最终hidden与全logits缓存": teacher-cache-fp32 hidden 134217728 B, logits
        # 4978638848 B, head 10196252360704 FLOPs; teacher-cache-v4-flash 67108864, 2118123520,
        # 8675833937920 (by hand: 8192 x 4096 x 2 B; 8192 x 129280 x 2 B; 2 x 8192 x 4096 x 129280).
        for argv, row in ((("--model", "qwen3-8b", "--act-dtype", "fp32", "--matrix-peak", "fp32=67T"),
                           (134_217_728, 4_978_638_848, 10_196_252_360_704)),
                          (("--model", "deepseek-v4-flash"), (67_108_864, 2_118_123_520, 8_675_833_937_920))):
            ops = {o["name"]: o for o in result("forward", *argv, "--tokens", "8192", "--logits", "all")["operators"]}
            self.assertEqual((ops["norm"]["act_bytes_written"], ops["lm_head"]["act_bytes_written"],
                              ops["lm_head"]["matrix_flops"]), row)


class V4MoeTraining(unittest.TestCase):
    def test_one_flash_moe_layer(self):
        # bojieli/ai-infra-book:calculations/results/v4-moe-training-balanced.md and -hash.md (one
        # DeepSeek-V4-Flash MoE layer, 128 rows, top-6 of 256): forward matrix 45,365,592,064 and
        # backward 90,731,184,128 FLOPs in both; router 1,048,576, routed experts 6,442,450,944, shared
        # 25,165,824 parameters, selection bias 256 (balanced) and a 775,680-element hash table (hash).
        # By hand: router 2*128*4096*256 = 268,435,456; routed 768 assignments * 3 * 2*4096*2048 =
        # 38,654,705,664; shared 3 * 2*128*4096*2048 = 6,442,450,944; the backward is dX + dW = 2x.
        ops = result("train", "--model", "deepseek-v4-flash", "--seq", "128")["operators_per_micro_batch"]
        moe = ("router", "experts.gate_proj", "experts.up_proj", "experts.down_proj",
               "shared.gate_proj", "shared.up_proj", "shared.down_proj")
        for layers, repeats in (("0-2", 3), ("3-42", 40)):  # layers 0-2 are hash-routed, 3-42 top-k
            rows = [o for o in ops if o["layers"] == layers and o["name"] in moe]
            with self.subTest(layers=layers):
                self.assertEqual(len(rows), len(moe))
                self.assertEqual(sum(o["forward_matrix_flops"] for o in rows), 45_365_592_064 * repeats)
                self.assertEqual(sum(o["backward_matrix_flops"] for o in rows), 90_731_184_128 * repeats)
        tensors = {t["tensor"]: t for t in result("models", "--model", "deepseek-v4-flash")["tensors"]}
        top_k, hashed = "layers.3,5,...,41.ffn.", "layers.2.ffn."
        self.assertEqual(tensors[top_k + "gate.weight"]["params_each"], 1_048_576)
        self.assertEqual(sum(tensors[top_k + f"experts.{m}.weight"]["params_each"]
                             for m in ("gate_proj", "up_proj", "down_proj")), 6_442_450_944)
        self.assertEqual(sum(tensors[top_k + f"shared_experts.{m}.weight"]["params_each"]
                             for m in ("gate_proj", "up_proj", "down_proj")), 25_165_824)
        self.assertEqual(tensors[top_k + "gate.e_score_correction_bias"]["params_each"], 256)
        self.assertNotIn(hashed + "gate.e_score_correction_bias", tensors)
        rows, k = tensors[hashed + "gate.tid2eid"]["shape"]
        self.assertEqual((tensors[hashed + "gate.tid2eid"]["params_each"], rows * k), (0, 775_680))


class V4TrainingSubgraphs(unittest.TestCase):
    """bojieli/ai-infra-book:calculations/results/v4-*.md|json (chapter 3, the V4 training
    sub-graphs and the online compressor): forward and backward (dX + dW) matrix FLOPs of one
    DeepSeek-V4-Flash sub-module, as sums of `train` rows (whole model for the router and the
    86 mHC mixes, one layer under --per-layer for the rest)."""

    def rows(self, *argv):
        return result("train", "--model", "deepseek-v4-flash", *argv)["operators_per_micro_batch"]

    def total(self, rows, names, layers=None):
        picked = [o for o in rows if o["name"] in names and layers in (None, o["layers"])]
        self.assertTrue(picked)
        return (sum(o["forward_matrix_flops"] for o in picked), sum(o["backward_matrix_flops"] for o in picked))

    def test_router_and_mhc_mixes(self):
        # v4-training-primitives-128: router score GEMMs over 3 hash + 40 top-k layers, 128 rows:
        # 43 x 2*128*4096*256 = 11,542,724,608, backward twice. v4-hc-training-one-row / -batch2:
        # mix_linear 2*R*16384*24 over 86 wrappers = 67,633,152 (R = 1) and 17,314,086,912 (R = 256).
        self.assertEqual(self.total(self.rows("--seq", "128"), ("router",)), (11_542_724_608, 23_085_449_216))
        mixes = ("hc_attn.mix", "hc_ffn.mix")
        self.assertEqual(self.total(self.rows("--seq", "1"), mixes), (67_633_152, 135_266_304))
        self.assertEqual(self.total(self.rows("--seq", "128", "--micro-batch", "2"), mixes),
                         (17_314_086_912, 34_628_173_824))

    def test_mhc_wrapper_under_matrix_contractions(self):
        # v4-hc-training-one-row / -128 / -batch2 (bojieli/ai-infra-book:calculations/src/infra_calc/
        # topics/v4_hc_training.py): mix_linear 2*R*24*16384 plus, per row and wrapper (m = 4,
        # D = 4096), pre_reduction 2mD = 32,768 and post_residual_mix 2m^2 D = 131,072; backward
        # 4*R*24*16384 + 6mD + 4m^2 D = 98,304 + 262,144 per row and wrapper. One row:
        # 67,633,152 + 86 x 163,840 = 81,723,392; 135,266,304 + 86 x 360,448 = 166,264,832.
        hc = ("hc_attn.mix", "hc_attn.pre", "hc_attn.post", "hc_ffn.mix", "hc_ffn.pre", "hc_ffn.post")
        for argv, rows_, fwd, bwd in ((("--seq", "1"), 1, 81_723_392, 166_264_832),
                                      (("--seq", "128"), 128, 10_460_594_176, 21_281_898_496),
                                      (("--seq", "128", "--micro-batch", "2"), 256, 20_921_188_352, 42_563_796_992)):
            with self.subTest(argv=argv):
                self.assertEqual(fwd, 86 * rows_ * (2 * 24 * 16384 + 32_768 + 131_072))
                self.assertEqual(bwd, 86 * rows_ * (4 * 24 * 16384 + 98_304 + 262_144))
                self.assertEqual(self.total(self.rows(*argv, "--hc-contractions", "matrix"), hc), (fwd, bwd))

    def test_one_layer_sub_modules(self):
        # By hand, one layer: the five projections at one token 2*(4096*1024 + 1024*32768 + 4096*512
        # + 8*4096*1024 + 8192*4096) = 213,909,504; the window-128 core at 2 x 129 tokens
        # 2 * 2*2*64*512 * (8256 + 128) = 2,197,815,296; the ratio-128 compressor at 256 tokens
        # 2 * 2*256*4096*512 = 2,147,483,648; the ratio-4 (overlap) compressor at 2 x 9 tokens
        # 2 * 2*18*4096*1024 = 301,989,888; each backward twice its forward.
        cases = ((("--seq", "1"), ("wq_a", "wq_b", "wkv", "wo_a", "wo_b"), "0-42", 213_909_504),
                 (("--seq", "129", "--micro-batch", "2"), ("attn_qk", "attn_pv"), "0-42", 2_197_815_296),
                 (("--seq", "256"), ("attn.compressor.wkv", "attn.compressor.wgate"), "3,5,...,41", 2_147_483_648),
                 (("--seq", "9", "--micro-batch", "2"), ("attn.compressor.wkv", "attn.compressor.wgate"),
                  "2,4,...,42", 301_989_888))
        for argv, names, layers, forward in cases:
            with self.subTest(argv=argv, names=names):
                self.assertEqual(self.total(self.rows(*argv, "--per-layer"), names, layers), (forward, 2 * forward))


class StageResources(unittest.TestCase):
    """bojieli/ai-infra-book:calculations/results/stage-resources-*.md (chapter 4): the work a
    stage bound divides, `compute_only_bounds.total_known_work`, and `capacity.comparison_bytes`."""

    def test_qwen3_8b_matrix_work_and_capacity(self):
        # b8-decode32k: linear 8 x 2 x (36 x (2 x 4096^2 + 2 x 1024 x 4096 + 3 x 12288 x 4096)
        # + 151936 x 4096) = 121,105,556,480 plus attention 8 x 36 x 32 heads x 32769 keys x 128
        # x 2 x 2 = 154,607,541,248: matrix_bf16 275,713,097,728; capacity = BF16 weights
        # 16,381,470,720 + KV 8 x 32769 x 147,456 = 55,037,356,032.
        r = result("forward", "--model", "qwen3-8b", "--batch", "8", "--tokens", "1", "--history", "32768")
        self.assertEqual((r["totals"]["matrix_flops"], r["memory"]["needs_bytes"]), (275_713_097_728, 55_037_356_032))

    def test_v4_flash_precision_buckets(self):
        # b1-prefill128: matrix_fp8 = the block-scaled FP8 linears (wq_a, wq_b, wkv, wo_b, indexer
        # wq_b, shared expert) + the routed experts (FP4, executed FP8): 2,792,265,613,312;
        # matrix_bf16 = attention (the index scores rectangular) + wo_a + indexer weights_proj:
        # 424,269,053,952; capacity = checkpoint storage + state after the pass: 156,034,420,956.
        r = result("forward", "--model", "deepseek-v4-flash", "--tokens", "128")
        fp8 = {"wq_a", "wq_b", "wkv", "wo_b", "indexer.wq_b", "shared.gate_proj", "shared.up_proj",
               "shared.down_proj", "experts.gate_proj", "experts.up_proj", "experts.down_proj"}
        ops = r["operators"]
        self.assertEqual(sum(o["matrix_flops"] for o in ops if o["name"] in fp8), 2_792_265_613_312)
        bf16 = sum(o["attention_flops_rectangular"] if o["name"] == "indexer.scores" else o["matrix_flops"]
                   for o in ops if o["category"] == "attention" or o["name"] in ("wo_a", "indexer.weights_proj"))
        self.assertEqual(bf16, 424_269_053_952)
        self.assertEqual(r["memory"]["needs_bytes"], 156_034_420_956)


class RequestH100(unittest.TestCase):
    """bojieli/ai-infra-book:calculations/results/request-h100-original.md, the "models" bridge:
    the four-model request's matrix work by H100 execution bucket, prefill + three decode steps."""

    def test_qwen_pv_bucket(self):
        # PV (FP32 P x BF16 V, no admitted rate) over the request: 36 layers x 32 heads x 128 x 2 x
        # (8256 causal pairs of the prefill + 129 + 130 + 131 keys of the decode steps) = 2,549,809,152;
        # the rest of the request's 1,829,869,322,240 matrix FLOPs is the BF16 bucket.
        pre = result("forward", "--model", "qwen3-8b", "--tokens", "128")["operators"]
        dec = result("decode", "--model", "qwen3-8b", "--input-len", "128", "--output-len", "4")
        pv = sum(o["matrix_flops"] for o in pre + dec["operators"] if o["name"] == "attn_pv")
        self.assertEqual(pv, 36 * 32 * 128 * 2 * (8256 + 129 + 130 + 131))
        self.assertEqual(dec["serving"]["request_matrix_flops"] - pv, 1_827_319_513_088)

    def test_v4_flash_buckets(self):
        # matrix_fp8 2,857,709,338,624 / bf16 435,428,524,032 / fp32 104,597,422,080: FP8 linears and
        # routed experts / attention (rectangular index), wo_a, indexer weights_proj / the FP32
        # linears (mHC mixes, compressors, router, head) of the prefill and the three decode steps.
        fp8 = {"wq_a", "wq_b", "wkv", "wo_b", "indexer.wq_b", "shared.gate_proj", "shared.up_proj",
               "shared.down_proj", "experts.gate_proj", "experts.up_proj", "experts.down_proj"}
        ops = (result("forward", "--model", "deepseek-v4-flash", "--tokens", "128")["operators"]
               + result("decode", "--model", "deepseek-v4-flash", "--input-len", "128", "--output-len", "4")["operators"])
        bf16 = ("wo_a", "indexer.weights_proj")
        self.assertEqual(sum(o["matrix_flops"] for o in ops if o["name"] in fp8), 2_857_709_338_624)
        self.assertEqual(sum(o["attention_flops_rectangular"] if o["name"] == "indexer.scores" else o["matrix_flops"]
                             for o in ops if o["category"] == "attention" or o["name"] in bf16), 435_428_524_032)
        self.assertEqual(sum(o["matrix_flops"] for o in ops if o["category"] != "attention"
                             and o["name"] not in fp8 and o["name"] not in bf16), 104_597_422_080)


class TrainingDeadline(unittest.TestCase):
    def test_task_flops_and_device_bounds(self):
        # bojieli/ai-infra-book:calculations/results/training-deadline-book.md: 10^11 tokens =
        # 12207031 sequences of 8192 + one of 2048; tail 96709443059712 FLOPs; task
        # 5265722561667444768768 FLOPs; H100 SXM at efficiency 3/10, 2/5, 1/2 in 30 days needs
        # 7, 6, 5 cards by compute and 2 by the 131051765760 B of persistent state (80 GB label).
        from fractions import Fraction
        full = result("train", "--model", "qwen3-8b", "--seq", "8192")
        tail = result("train", "--model", "qwen3-8b", "--seq", "2048")["flops_per_step"]["model_flops"]
        n, rest = divmod(10 ** 11, 8192)
        self.assertEqual((n, rest, tail), (12_207_031, 2048, 96_709_443_059_712))
        task = n * full["flops_per_step"]["model_flops"] + tail
        self.assertEqual(task, 5_265_722_561_667_444_768_768)
        h100 = result("hardware", "--device", "h100-sxm")["devices"][0]
        peak, label = h100["matrix_flops_per_s"]["bf16"], h100["memory_label_bytes"]
        cards = [-(-Fraction(task) // (2_592_000 * peak * e)) for e in (Fraction(3, 10), Fraction(2, 5), Fraction(1, 2))]
        self.assertEqual(cards, [7, 6, 5])
        self.assertEqual(-(-Training.states(full) // label), 2)

class GenerationCache(unittest.TestCase):
    def test_cache_sequence_qwen3_8b_b1(self):
        # bojieli/ai-infra-book:calculations/results/cache-sequence-qwen3-8b-b1.md (P 8192, G 1024):
        # decode_prior_history_read_payload_bytes 1,314,184,495,104; decode_append_write_bytes
        # 150,994,944; final_persistent_state_bytes 1,358,954,496; decode QK/PV FLOPs
        # 5,257,341,960,192. The book keeps the new K/V on chip (--new-kv on-chip).
        r = result("decode", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "1025",
                   "--new-kv", "on-chip")
        d = r["decode"]
        self.assertEqual(d["steps"], 1024)
        self.assertEqual(d["kv_bytes_read"], 1_314_184_495_104)
        self.assertEqual(d["kv_bytes_written"], 150_994_944)
        self.assertEqual(r["capacity"]["cache_bytes_per_request"], 1_358_954_496)
        self.assertEqual(d["attention_flops_causal"], 5_257_341_960_192)

    def test_kv_restore_recompute(self):
        # bojieli/ai-infra-book:calculations/results/kv-restore-book.md: kv_snapshot_bytes
        # 150,994,944; replay_backbone_matrix_flops 14,534,471,319,552 (1024 tokens, no lm_head)
        t = result("forward", "--model", "qwen3-8b", "--tokens", "1024", "--logits", "none")["totals"]
        self.assertEqual(t["matrix_flops"], 14_534_471_319_552)
        self.assertEqual(t["kv_bytes_written"], 150_994_944)


class NewKvOnChip(unittest.TestCase):
    """--new-kv on-chip: attention reads the prior history only; the new K/V are still written."""

    CASES = (("qwen3-8b", ()), ("mistral-7b-v0.1", ()), ("llama-4-scout", ()),
             ("deepseek-v2-lite", ("--mla", "naive")), ("deepseek-v2-lite", ("--mla", "absorbed")))

    def totals(self, model, extra, *argv):
        return result("forward", "--model", model, *extra, *argv)["totals"]

    def test_reread_minus_on_chip_is_the_new_kv(self):
        # Full attention, a sliding window (4096) crossed, chunked attention (8192) crossed,
        # and both MLA paths: every new key is among the keys touched, so the cache read
        # drops by exactly what kv_store writes (absorbed MLA reads the latent once, in attn_qk).
        for model, extra in self.CASES:
            for hist, tokens in ((0, 5), (5000, 3), (9000, 1)):
                argv = ("--batch", "2", "--history", str(hist), "--tokens", str(tokens))
                a = self.totals(model, extra, *argv)
                b = self.totals(model, extra, *argv, "--new-kv", "on-chip")
                with self.subTest(model=model, extra=extra, hist=hist):
                    self.assertEqual(a["kv_bytes_read"] - b["kv_bytes_read"], a["kv_bytes_written"])
                    self.assertEqual(a["kv_bytes_written"], b["kv_bytes_written"])
                    self.assertEqual(a["matrix_flops"], b["matrix_flops"])

    def test_decode_closed_form_sums_the_steps(self):
        # decode's closed form over steps with histories 4094..4098 (crossing mistral's
        # 4096 window) equals the sum of one-token forward passes under the same option.
        for model, extra in self.CASES[:3]:
            d = result("decode", "--model", model, *extra, "--input-len", "4094", "--output-len", "6",
                       "--batch", "3", "--new-kv", "on-chip")["decode"]
            steps = [self.totals(model, extra, "--batch", "3", "--history", str(h), "--tokens", "1",
                                 "--new-kv", "on-chip") for h in range(4094, 4099)]
            with self.subTest(model=model):
                self.assertEqual(d["kv_bytes_read"], sum(s["kv_bytes_read"] for s in steps))
                self.assertEqual(d["attention_flops_causal"],
                                 sum(s["attention_flops_causal"] for s in steps))


class Training(unittest.TestCase):
    def test_dense_training_ledger_and_adam_state(self):
        # INDEX, table "Dense 训练矩阵子账", row training-qwen3-8b-t8192: training matrix
        # 431.367993 TFLOPs, 6ND 402.591024 TFLOPs, parameter states 137.307901 GiB (FP32 grads)
        r = result("train", "--model", "qwen3-8b", "--seq", "8192", "--grad-dtype", "fp32")
        self.assertEqual(f"{r['flops_per_step']['model_flops'] / 1e12:.6f}", "431.367993")
        six = {c["name"]: c["flops"] for c in r["closed_forms"]}
        self.assertEqual(f"{six['6ND'] / 1e12:.6f}", "402.591024")
        self.assertEqual(gib(self.states(r), 6), "137.307901")
        # same table, row training-qwen3-235b-balanced: 1370.192546 TFLOPs, 6ND over all
        # 235,093,634,560 parameters 11555.322326 TFLOPs
        r = result("train", "--model", "qwen3-235b-a22b", "--seq", "8192", "--grad-dtype", "fp32")
        self.assertEqual(f"{r['flops_per_step']['model_flops'] / 1e12:.6f}", "1370.192546")
        six = {c["name"]: c["flops"] for c in r["closed_forms"]}
        self.assertEqual(f"{six['6ND, all parameters'] / 1e12:.6f}", "11555.322326")
        self.assertEqual(six["6ND"], 6 * r["model"]["active_params"] * 8192)
        # table "全参数Adam／ZeRO持久状态", row training-state-book: 8190735360 parameters,
        # 131051765760 B unsharded (BF16 grads), 16381470720 B per rank under ZeRO stage 3 on 8
        r = result("train", "--model", "qwen3-8b", "--seq", "8192")
        self.assertEqual((r["model"]["params"], self.states(r)), (8_190_735_360, 131_051_765_760))
        r = result("train", "--model", "qwen3-8b", "--seq", "8192", "--dp", "8", "--zero", "3")
        self.assertEqual(self.states(r), 16_381_470_720)

    @staticmethod
    def states(r):
        """Weights + gradients + optimizer states of the first (here the only) stage."""
        s = r["memory"]["stages"][0]
        return s["weights_bytes"] + s["grads_bytes"] + s["optimizer_bytes"]


class ReproduceSubdirectories(unittest.TestCase):
    """A scenario list in results/DIR/ writes into DIR/ and is checked there too."""

    def setUp(self):
        from infracalc.cli import reproduce

        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        root = self.dir.name
        os.mkdir(os.path.join(root, "sub"))
        for path, scenarios in (("scenarios.json", []),
                                ("sub/scenarios.json", [{"name": "dev", "formats": ["json"],
                                                         "args": ["hardware", "--device", "h100-sxm"]}])):
            with open(os.path.join(root, path), "w") as f:
                json.dump({"scenarios": scenarios}, f)
        saved = reproduce.RESULTS_DIR
        reproduce.RESULTS_DIR = root
        self.addCleanup(setattr, reproduce, "RESULTS_DIR", saved)

    def run_reproduce(self, *argv):
        return run_cli("reproduce", *argv)

    def test_writes_checks_and_flags_stale_files_per_directory(self):
        status, out, _ = self.run_reproduce()
        self.assertEqual(status, 0, out)
        self.assertTrue(os.path.isfile(os.path.join(self.dir.name, "sub", "dev.json")))
        status, out, _ = self.run_reproduce("--check", "--only", "sub/dev")
        self.assertEqual((status, out.splitlines()[-1]),
                         (0, "reproduce --check: all 1 stored results match (1 scenarios)"))
        for name in ("README.md", "stray.md"):   # prose is exempt, a stray result is not
            open(os.path.join(self.dir.name, "sub", name), "w").close()
        status, out, _ = self.run_reproduce("--check")
        self.assertEqual(status, 1)
        self.assertIn("STALE sub/stray.md: no scenario produces it", out)
        self.assertNotIn("README.md", out)

    def test_malformed_scenario_is_one_line_error(self):
        with open(os.path.join(self.dir.name, "sub", "scenarios.json"), "w") as f:
            json.dump({"scenarios": [{"args": ["hardware"]}]}, f)
        status, out, err = self.run_reproduce("--check")
        self.assertEqual((status, out), (2, ""))
        self.assertIn("every scenario needs a 'name' string and an 'args' list of strings", err)
        self.assertEqual(len(err.splitlines()), 1)


class FourModelRequest(unittest.TestCase):
    def test_default_request_matrix_tflops(self):
        # The book's chapter 2, section 2.6.5 (R22-four-model-request), for
        # results/request-four-models-book.md: no prefix, 128 input tokens, 4 returned, batch 1;
        # whole-request matrix TFLOPs qwen3-8b 1.829869, deepseek-v4-flash 3.397735,
        # deepseek-v4-pro 12.719961 (V4: linear + rectangular attention, the V4 rows' convention).
        for model, book, rect in (("qwen3-8b", "1.829869", False), ("deepseek-v4-flash", "3.397735", True),
                                  ("deepseek-v4-pro", "12.719961", True)):
            r = result("decode", "--model", model, "--input-len", "128", "--output-len", "4")
            attn = "attention_flops_rectangular" if rect else "attention_flops_causal"
            total = sum(r[p]["linear_flops"] + r[p][attn] for p in ("prefill", "decode"))
            if not rect:
                self.assertEqual(total, r["serving"]["request_matrix_flops"])
            self.assertEqual(f"{total / 1e12:.6f}", book, model)


if __name__ == "__main__":
    unittest.main()

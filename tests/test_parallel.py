"""Tests of `parallel`: exact per-device figures of a sharded decode step and its collectives
(derived by hand in the comments), the pipeline and data-parallel composition, the closed form
of context-parallel decode sums, invariants (DP scales throughput exactly, --overlap never adds
time, a pipeline's latency covers every stage), the search's enumeration and rejections, and
the error contract."""

import json
import unittest

from support import load_model, run_cli  # noqa: F401  (sets the path)

from infracalc.analyses import parallel as P  # noqa: E402
from infracalc.analyses.parallel import search as S  # noqa: E402
from infracalc.analyses.parallel import costs  # noqa: E402
from infracalc import layout as placement  # noqa: E402
from infracalc.layout import Layout  # noqa: E402
from infracalc.ledger import build  # noqa: E402
from infracalc.load.hardware import load_device  # noqa: E402
from infracalc.workload import Workload  # noqa: E402

H100 = load_device("h100-sxm")
BF16 = Workload()


def plan(model="llama-3.1-70b", input_len=2048, output_len=2, **kw):
    return P.Plan(load_model(model), BF16, H100, input_len, output_len, **kw)


class ExactFigures(unittest.TestCase):
    def test_llama_70b_tp8_decode_step_per_device(self):
        # One device of Llama-3.1-70B at tp 8 (per-device params from test_layout: layers
        # 8,557,690,880, head 16,032 x 8192 = 131,334,144, final norm 8,192). A decode step
        # at batch 1 reads every layer and the head shard once, the final norm, and one
        # embedding row of 8,192: 2 x (8,557,690,880 + 131,334,144 + 8,192 + 8,192) =
        # 17,378,082,816 B. KV: 8 KV heads / 8 = 1 per device, K and V of 128 in bf16 =
        # 512 B per token per layer; at history 2048 the query reads 2049 tokens:
        # 80 x 512 x 2049 = 83,927,040 B, and writes 80 x 512 = 40,960 B.
        rec = P.parallel(plan(link_options={"alpha_up": 0.0}), Layout(tp=8), 1)
        st = rec["phases"]["first"]["stages"][0]
        self.assertEqual(st["weight_bytes_read"], 17_378_082_816)
        self.assertEqual(st["kv_bytes_read"], 83_927_040)
        self.assertEqual(st["kv_bytes_written"], 40_960)
        self.assertEqual(rec["memory"]["stages"][0]["weight_bytes"], 17_640_734_720)

    def test_llama_70b_tp8_all_reduce_time_at_alpha_0(self):
        # Per decode step at batch 1: 2 x 80 layer all-reduces + the embedding's of
        # [1, 8192] bf16 = 16,384 B over 8 ranks, ring: 2 x 7/8 x S / 450e9 each; the head's
        # logits all-gather of 8 x 16,032 = 128,256 bf16 values = 256,512 B: 7/8 x S / 450e9.
        # Total (161 x 1.75 x 16,384 + 0.875 x 256,512) / 450e9 = 4,840,640 / 450e9 s.
        rec = P.parallel(plan(link_options={"alpha_up": 0.0}), Layout(tp=8), 1)
        st = rec["phases"]["first"]["stages"][0]
        byname = {c["name"]: c for c in st["collectives"]}
        ar = byname["TP all-reduce after attention"]
        self.assertEqual((ar["bytes_per_run"], ar["runs"], ar["group"], ar["tier"]), (16_384, 80, 8, "up"))
        self.assertAlmostEqual(ar["time_s"], 80 * 1.75 * 16_384 / 450e9, delta=1e-15)
        self.assertAlmostEqual(st["comm_s"], 4_840_640 / 450e9, delta=1e-15)
        # No overlap: the step is the roofline plus all of it.
        self.assertAlmostEqual(st["time_s"], st["roofline_s"] + 4_840_640 / 450e9, delta=1e-15)

    def test_moe_ep8_dispatch_bytes_per_token(self):
        # Qwen3-30B-A3B at ep 8 (8 devices, tp 1, dp 8): top-8 copies of hidden 2048 in bf16,
        # S = 8 x 2048 x 2 = 32,768 B per token; a copy leaves its rank with probability 7/8:
        # 28,672 B on the wire for the dispatch, the same for the combine, per MoE layer (48).
        rec = P.parallel(plan("qwen3-30b-a3b", 1024), Layout(dp=8, ep=8), 1)
        cs = {c["name"]: c for c in rec["phases"]["first"]["stages"][0]["collectives"]}
        for name in ("EP dispatch all-to-all", "EP combine all-to-all"):
            self.assertEqual((cs[name]["bytes_per_run"], cs[name]["wire_bytes_per_run"], cs[name]["runs"]),
                             (32_768, 28_672, 48))

    def test_sharded_prefill_conserves_matrix_flops(self):
        # tp 4 x pp 2: the 8 devices of a replica together do the whole model's matrix work
        # (heads, MLP columns and the vocab 128,256 = 4 x 32,064 split exactly).
        p = plan(input_len=512)
        rec = P.parallel(p, Layout(tp=4, pp=2), 2)
        per_device = sum(s["matrix_flops"] for s in rec["phases"]["prefill"]["stages"])
        whole = build(p.arch, BF16.replace(batch=1, tokens=512)).totals.matrix_flops
        self.assertEqual(4 * per_device, whole)   # 2 micro-batches of 1: each stage's pass is b = 1


class Composition(unittest.TestCase):
    def test_dp_replicas_scale_throughput_exactly(self):
        p = plan(output_len=64)
        one = P.parallel(p, Layout(tp=4), 8)["latency"]
        two = P.parallel(p, Layout(tp=4, dp=2), 8)["latency"]
        self.assertEqual(two["decode_tokens_per_s_cluster"], 2 * one["decode_tokens_per_s_cluster"])
        self.assertEqual(two["decode_tokens_per_s_per_device"], one["decode_tokens_per_s_per_device"])
        self.assertEqual(two["tpot_mean_s"], one["tpot_mean_s"])

    def test_overlap_never_increases_time(self):
        for lay in (Layout(tp=8), Layout(tp=4, pp=2), Layout(tp=2, cp=4), Layout(pp=4, dp=2)):
            plain = P.parallel(plan(output_len=32), lay, 4)
            hidden = P.parallel(plan(output_len=32, overlap=True), lay, 4)
            for phase in ("prefill", "first", "last", "decode"):
                for a, b in zip(plain["phases"][phase]["stages"], hidden["phases"][phase]["stages"]):
                    self.assertLessEqual(b["time_s"], a["time_s"])
                    self.assertGreaterEqual(b["time_s"], a["roofline_s"])
            for key in ("ttft_s", "tpot_mean_s", "generation_s"):
                self.assertLessEqual(hidden["latency"][key], plain["latency"][key], (lay, key))

    def test_pipeline_latency_covers_every_stage(self):
        rec = P.parallel(plan(output_len=16), Layout(tp=2, pp=4), 8)
        for phase in ("prefill", "first", "decode"):
            ph = rec["phases"][phase]
            self.assertGreaterEqual(ph["pass_s"], sum(s["roofline_s"] for s in ph["stages"]))
        # m = gcd(8, 4) = 4 micro-batches of 2; the decode cycle is at least 4 x the slowest stage.
        self.assertEqual(rec["layout"]["micro_batches"], 4)
        dec = rec["phases"]["first"]
        self.assertGreaterEqual(dec["cycle_s"], 4 * max(s["time_s"] for s in dec["stages"]) * (1 - 1e-12))

    def test_one_micro_batch_bubble(self):
        # pp 4 with one micro-batch: the slowest stage works one pass in L = about 4 of its own:
        # bubble about 3/4 (the stages differ only by the embedding and head shards).
        rec = P.parallel(plan(output_len=2), Layout(tp=2, pp=4), 1)
        self.assertAlmostEqual(rec["phases"]["first"]["bubble_fraction"], 0.75, delta=0.02)

    def test_cp_decode_sum_is_the_sum_of_its_steps(self):
        # Each rank holds ceil(h / cp) tokens at history h; the closed form
        # cp x S(lo'..hi') - x step(lo') - y step(hi') equals the step-by-step sum.
        p = plan(input_len=5, output_len=11)
        lay = Layout(tp=8, cp=3)
        st = placement.stages(p.arch, lay)[0]
        total = costs.decode_cost(p, lay, st, 2)
        w = p.wd.replace(batch=2, tokens=1)
        steps = [costs.stage_cost(p, lay, st, w.replace(history=-(-h // 3)), ("pass",)) for h in range(5, 15)]
        self.assertEqual(total.work, tuple(sum(s.work[i] for s in steps) for i in range(len(total.work))))
        for name in ("compute_s", "weights_s", "kv_s", "act_s"):
            expect = sum(getattr(s, name) for s in steps)
            self.assertAlmostEqual(getattr(total, name), expect, delta=abs(expect) * 1e-12)

    def test_search_fast_path_matches_the_record(self):
        # The search scores a layout without building collective lists; same times as the record.
        p = plan(output_len=64)
        for lay in (Layout(tp=4, pp=2), Layout(tp=2, cp=2, dp=2)):
            value, lat, _ = S.score(p, lay, 8, "throughput")
            full = P.parallel(p, lay, 8)["latency"]
            self.assertAlmostEqual(lat["tpot_mean_s"], full["tpot_mean_s"], delta=1e-15)
            self.assertAlmostEqual(-value, full["decode_tokens_per_s_per_device"], delta=1e-9)


class PlanIsImmutable(unittest.TestCase):
    def test_a_record_at_another_batch_leaves_the_plan_as_it_was(self):
        # DeepSeek-V3's --mla auto picks its paths at the plan's batch; a record at batch 64
        # uses a plan of its own (Plan.at_batch), so a search on the first plan afterwards gives
        # what a fresh plan gives (it once reported paths re-picked at 64 under "at batch 1").
        h200 = load_device("h200")
        make = lambda: P.Plan(load_model("deepseek-v3"), Workload(mla="auto"), h200, 1024, 16)
        used = make()
        P.parallel(used, Layout(tp=8), 64)
        self.assertEqual(used.batch, 1)
        after = S.search_record(used, 8, top=3)
        fresh = S.search_record(make(), 8, top=3)
        self.assertEqual(json.dumps(after), json.dumps(fresh))
        self.assertIsNot(used.at_batch(64), used)
        self.assertIs(used.at_batch(1), used)


class SearchBatches(unittest.TestCase):
    def test_search_batches_are_pp_times_powers_of_4(self):
        # pp micro-batches of b = 1, 4, 16, ... requests while b x pp fits the capacity;
        # 2^20 when memory does not bound it; a given batch alone.
        self.assertEqual(S.search_batches(100, None, 2), [2, 8, 32])
        self.assertEqual(S.search_batches(7, None, 8), [])
        self.assertEqual(S.search_batches(None, None, 1), [4 ** k for k in range(11)])
        self.assertEqual(S.search_batches(100, 12, 4), [12])

    def test_throughput_ranks_at_the_largest_batch_that_fits(self):
        # t(b)/b never grows with b, so the kept batch is the last of search_batches within the
        # capacity (no --tpot-limit here).
        p = plan(output_len=64)
        ranked, _, _ = S.search(p, 8)
        for value, _, lay, b, _ in ranked:
            _, cap = P.search_memory(p, lay)
            self.assertEqual(b, S.search_batches(cap, None, lay.pp)[-1], lay.label())


class Sweep(unittest.TestCase):
    def test_sweep_up_to_capacity(self):
        p = plan("qwen3-8b", 1024, 128)
        rec = P.sweep(p, Layout(tp=2, dp=4))
        cap = rec["memory"]["max_requests_per_replica"]
        batches = [r["batch"] for r in rec["rows"]]
        self.assertEqual(batches[-1], cap)
        self.assertEqual(batches[:-1], [2 ** k for k in range(len(batches) - 1)])
        for r in rec["rows"]:
            self.assertEqual(r["decode_tokens_per_s_cluster"], 4 * r["decode_tokens_per_s_replica"])
            self.assertEqual(r["decode_tokens_per_s_per_device"], r["decode_tokens_per_s_cluster"] / 8)


class Search(unittest.TestCase):
    def test_layouts_of_8_devices(self):
        # 8 = 2^3 over tp, pp, cp, dp: C(6, 3) = 20 layouts. Llama-3.1-70B's bf16 weights
        # (141 GB) do not fit one H100 with tp = pp = 1: the 4 layouts (cp, dp) = (1, 8),
        # (2, 4), (4, 2), (8, 1) are rejected for memory.
        rec = S.search_record(plan(output_len=64), 8, top=3)
        self.assertEqual(rec["layouts_considered"], 20)
        self.assertEqual(rec["layouts_admitted"], 16)
        self.assertEqual([(r["layouts"], r["reason"][:13]) for r in rec["rejected"]], [(4, "does not fit:")])
        values = [t["latency"]["decode_tokens_per_s_per_device"] for t in rec["top"]]
        self.assertEqual(values, sorted(values, reverse=True))
        again = S.search_record(plan(output_len=64), 8, top=3)
        self.assertEqual(json.dumps(rec), json.dumps(again))

    def test_tpot_limit_and_objectives(self):
        p = plan(output_len=64)
        rec = S.search_record(p, 8, objective="throughput", tpot_limit=0.015, top=20)
        self.assertTrue(rec["top"])   # not vacuous: some layout meets the limit
        self.assertTrue(all(t["latency"]["tpot_mean_s"] <= 0.015 for t in rec["top"]))
        ttft = S.search_record(p, 8, objective="ttft", top=20)["top"]
        values = [t["latency"]["ttft_s"] for t in ttft]
        self.assertEqual(values, sorted(values))


class UnknownPeaks(unittest.TestCase):
    def test_a_device_without_a_peak_says_so(self):
        # Apple M3 Ultra publishes no matrix or vector peak, TPU v5e no vector peak: those FLOPs
        # are charged 0 s, so the "compute-bound" column and every time leave them out. The
        # output printed 'compute-bound 0.000 us' with no word of it. An H100 has both peaks.
        base = ("parallel", "--model", "qwen3-0.6b", "--input-len", "64", "--output-len", "4", "--format", "json")
        for device, peaks in (("apple-m3-ultra", "matrix and vector"), ("tpu-v5e", "vector")):
            for extra in (("--devices", "1"), ("--devices", "1", "--batch-sweep"), ("--search", "--devices", "2")):
                status, out, err = run_cli(*base, "--device", device, *extra)
                self.assertEqual((status, err), (0, ""), (device, extra))
                notes = json.loads(out)["notes"]
                self.assertTrue(any(n.startswith(f"{peaks} peak unknown on {device}") for n in notes),
                                (device, extra, notes))
        _, out, _ = run_cli(*base, "--device", "h100-sxm", "--devices", "1")
        self.assertFalse(any("peak unknown" in n for n in json.loads(out)["notes"]))


class Errors(unittest.TestCase):
    def one_line(self, *argv):
        status, out, err = run_cli("parallel", *argv)
        self.assertEqual(status, 2, err)
        self.assertEqual(err.count("\n"), 1, err)
        return err

    def test_bad_inputs(self):
        base = ("--model", "llama-3.1-70b", "--input-len", "128", "--output-len", "8")
        self.assertIn("valid TP values", self.one_line(*base, "--devices", "6", "--tp", "3"))
        self.assertIn("not a multiple", self.one_line(*base, "--devices", "6", "--tp", "4"))
        self.assertIn("--devices is 8", self.one_line(*base, "--devices", "8", "--tp", "4", "--dp", "4"))
        self.assertIn("--tpot-limit applies", self.one_line(*base, "--devices", "8", "--tpot-limit", "50ms"))
        self.assertIn("drop --tp", self.one_line(*base, "--devices", "8", "--tp", "8", "--search"))
        self.assertIn("no routed experts", self.one_line(*base, "--devices", "8", "--ep", "2", "--dp", "8"))
        self.assertIn("does not divide the batch", self.one_line(*base, "--devices", "8", "--pp", "8",
                                                                  "--micro-batches", "3", "--batch", "4"))
        self.assertIn("must be a time", self.one_line(*base, "--devices", "8", "--search", "--tpot-limit", "fast"))
        self.assertIn("leaves the last rank", self.one_line("--model", "llama-3.1-8b", "--input-len", "5",
                                                            "--output-len", "2", "--devices", "4", "--cp", "4"))

    def test_a_layout_that_does_not_fit_is_a_result(self):
        status, out, err = run_cli("parallel", "--model", "llama-3.1-70b", "--devices", "1",
                                   "--input-len", "128", "--output-len", "8", "--format", "json")
        self.assertEqual(status, 0, err)
        rec = json.loads(out)
        self.assertFalse(rec["memory"]["fits"])
        self.assertGreater(rec["memory"]["shortfall_bytes"], 0)
        self.assertTrue(any(n.startswith("does not fit") for n in rec["notes"]))


if __name__ == "__main__":
    unittest.main()

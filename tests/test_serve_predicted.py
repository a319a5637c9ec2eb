"""`serve`'s SLO answer carries the prediction (efficiency.serving) beside estimate and bound."""

import json
import unittest

from support import load_model, run_cli
from infracalc.analyses.efficiency import serving
from infracalc.analyses.parallel import Plan
from infracalc.analyses.serve import slo
from infracalc.layout import Layout
from infracalc.load.hardware import load_device

SLO = ("serve", "--model", "meta-llama/Llama-3.1-70B", "--device", "h100", "--input-len", "2K",
       "--output-len", "256", "--tpot-limit", "50ms", "--ttft-limit", "2s")


class ServePredicted(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        status, out, err = run_cli(*SLO, "--format", "json")
        assert status == 0, err
        cls.rec = json.loads(out)
        status, cls.md, _ = run_cli(*SLO)
        assert status == 0

    def test_equals_efficiency_serving(self):
        """The answer's predicted figures are efficiency.serving's for the same layout and batch."""
        a = self.rec["sizing"]["answer"]
        self.assertEqual((a["layout"], a["batch_per_replica"]), ("tp2", 16))
        arch = load_model("meta-llama/Llama-3.1-70B")
        plan = Plan(arch, _workload(arch), load_device("h100"), 2048, 256)
        p = serving.predicted_at_batch(arch, plan.wd, plan.device, Layout(tp=2), 2048, 256, 16)
        self.assertEqual(a["predicted_ttft_s"], p["ttft_s"])
        self.assertEqual(a["predicted_tpot_s"], p["tpot_s"])
        self.assertEqual(a["predicted_output_tokens_per_s_per_device"], p["output_tokens_per_s_per_device"])
        self.assertEqual(a["predicted_status"], "predicted")

    def test_tpot_is_the_steady_state_iteration(self):
        """At the engine's own concurrency, predicted_at_batch's TPOT is predicted_layout's iteration
        and its throughput predicted_layout's per device: one model, not a copy."""
        arch = load_model("meta-llama/Llama-3.1-70B")
        plan = Plan(arch, _workload(arch), load_device("h100"), 2048, 256)
        lay = Layout(tp=2)
        whole = serving.predicted_layout(arch, plan.wd, plan.device, lay, 2048, 256)
        at = serving.predicted_at_batch(arch, plan.wd, plan.device, lay, 2048, 256, whole["concurrency"])
        self.assertEqual(at["tpot_s"], whole["iteration_s"])
        self.assertAlmostEqual(at["output_tokens_per_s_per_device"], whole["output_tokens_per_s_per_device"],
                               delta=1e-9 * whole["output_tokens_per_s_per_device"])

    def test_bound_below_predicted(self):
        a = self.rec["sizing"]["answer"]
        self.assertLessEqual(a["lower_bound"]["ttft_s"], a["predicted_ttft_s"])
        self.assertLessEqual(a["lower_bound"]["tpot_s"], a["predicted_tpot_s"])
        self.assertGreaterEqual(a["lower_bound"]["decode_tokens_per_s_per_device"],
                                a["predicted_output_tokens_per_s_per_device"] * 255 / 256)

    def test_first_screen(self):
        """The verdict block (before the model line) names the predicted figures."""
        head = self.md.split("- Model:")[0]
        self.assertIn(f"{self.rec['sizing']['answer']['predicted_tpot_s'] * 1e3:.3f} ms predicted", head)
        self.assertIn("output tokens/s per device predicted", head)
        self.assertIn("predicted TTFT", self.md)
        self.assertIn(slo.PREDICTED_CONVENTION.split(":")[0], self.md)

    def test_pipeline_at_its_own_concurrency_is_the_steady_state(self):
        """Under PP too, predicted_at_batch's TPOT at the engine's concurrency is predicted_layout's
        iteration: pp x the slowest stage's time for ceil(N / pp) requests, plus the host time."""
        arch = load_model("meta-llama/Llama-3.1-70B")
        plan = Plan(arch, _workload(arch), load_device("h100"), 2048, 256)
        lay = Layout(tp=2, pp=2)
        whole = serving.predicted_layout(arch, plan.wd, plan.device, lay, 2048, 256)
        at = serving.predicted_at_batch(arch, plan.wd, plan.device, lay, 2048, 256, whole["concurrency"])
        self.assertEqual(at["tpot_s"], whole["iteration_s"])
        self.assertEqual(whole["pipeline_micro_batches"], 2)

    def test_pipeline_iteration_by_its_formula(self):
        """pipelined: N = the smallest stage's concurrency; iteration = pp x max over stages of
        (GPU time of ceil(N / pp) requests + per-sequence work + the boundary send) + host."""
        import math
        from infracalc import layout as placement
        from infracalc.analyses.efficiency import predict

        arch = load_model("meta-llama/Llama-3.1-8B")
        device = load_device("h100")
        plan = Plan(arch, _workload(arch), device, 1000, 1000)
        lay = Layout(pp=4)
        k, host, q, t, h = serving.FITTED["all"]
        rates = predict.achievable(device, plan.wd.compute_dtype, k)
        shards = [placement.shard(arch, lay, st) for st in placement.stages(arch, lay)]
        n = min(serving.concurrency(sh, plan.wd, device.memory_bytes, 1000, 1000)[0] for sh in shards)
        per = math.ceil(n / 4)
        send = serving.pp_send_s(device, lay, arch.hidden_size)(per + per * 1000 / 999)
        worst = max(serving.iteration(sh, plan.wd, rates, per, 1000, 1000)[0]
                    + (q * per + t * per * 1000 / 999) * len(sh.layers) + send
                    for sh in shards)
        got = serving.predicted_layout(arch, plan.wd, device, lay, 1000, 1000)
        self.assertEqual(got["concurrency"], n)
        self.assertAlmostEqual(got["iteration_s"], 4 * worst + host + h * n, places=12)
        # one replica of 4 devices: its tokens/s per device is a quarter of the replica's
        self.assertAlmostEqual(got["output_tokens_per_s_per_device"], got["output_tokens_per_s"] / 4, places=9)
        # pipelining costs the weights once per micro-batch: never faster than the same cache on one
        # stage at peak, and a real figure below the replica's serving bound
        from infracalc.analyses.parallel import memory_record, serving_record
        bound = serving_record(plan, lay, memory_record(plan, lay, 1)["stages"])
        self.assertLessEqual(got["output_tokens_per_s_per_device"], bound["output_tokens_per_s_per_device"])

    def test_expert_parallel_inside_the_tp_group(self):
        """EP <= TP: each device holds experts / ep whole experts, the replica keeps its TP
        all-reduces; the same weight bytes per device as the TP split of every expert."""
        arch = load_model("Qwen/Qwen3-30B-A3B")
        plan = Plan(arch, _workload(arch), load_device("h100"), 2048, 256)
        tp = serving.predicted_layout(arch, plan.wd, plan.device, Layout(tp=4), 2048, 256)
        ep = serving.predicted_layout(arch, plan.wd, plan.device, Layout(tp=4, ep=4), 2048, 256)
        self.assertIsNotNone(ep)
        self.assertEqual(ep["kv_room_bytes"], tp["kv_room_bytes"])   # equal weights per device
        self.assertEqual(ep["concurrency"], tp["concurrency"])
        self.assertEqual(ep["exposed_collectives"], "TP all-reduces")

    def test_expert_parallel_beyond_a_multi_device_tp_group(self):
        """tp 2, ep 4 on 4 devices (two attention replicas of two TP ranks): each device runs its
        replica's requests' attention split two ways and 128 / 4 experts; per iteration the TP
        all-reduces of the replica (after attention and after the MLP, every layer, and the
        embedding's: `tp_comm`) plus per MoE layer a dispatch and a combine of ceil(tokens x 8 / 2)
        copies of 2,048 x 2 B per TP rank over the EP group; below the layout's serving bound."""
        import math
        from infracalc import comm
        from infracalc import layout as placement
        from infracalc.analyses.efficiency import collective
        from infracalc.analyses.parallel import memory_record, serving_record
        from infracalc.collectives import ep_collectives

        arch = load_model("Qwen/Qwen3-30B-A3B")
        device = load_device("h100")
        plan = Plan(arch, _workload(arch), device, 2048, 256)
        lay = Layout(tp=2, dp=2, ep=4)
        got = serving.predicted_layout(arch, plan.wd, device, lay, 2048, 256)
        self.assertIsNotNone(got)
        self.assertEqual(got["exposed_collectives"], "TP all-reduces and EP dispatch and combine all-to-alls")
        shard = placement.shard(arch, lay, placement.stages(arch, lay)[0])
        tokens = 1000
        dispatch, combine = ep_collectives(tokens, 8, 2048, 2, ep=4, moe_layers=48, tier="up", experts=128, share=2)
        self.assertEqual(dispatch.bytes, math.ceil(tokens * 8 / 2) * 2048 * 2)   # 8,192,000 B
        links = comm.links(device)
        want = (serving.tp_comm(device, 2, shard)(tokens)
                + sum(c.count * collective.predicted_s(c, links, device.id)[0] for c in (dispatch, combine)))
        self.assertAlmostEqual(serving.ep_comm(device, lay, shard)(tokens), want, places=12)
        self.assertGreater(serving.ep_comm(device, lay, shard)(tokens), serving.tp_comm(device, 2, shard)(tokens))
        bound = serving_record(plan, lay, memory_record(plan, lay, 1)["stages"])
        self.assertLess(got["output_tokens_per_s_per_device"], bound["output_tokens_per_s_per_device"])

    def test_attention_data_parallel_with_expert_parallelism(self):
        """tp 1, ep > 1: each device runs its own requests and experts / ep experts; the iteration adds
        each MoE layer's dispatch and combine as NCCL runs them (ep_collectives' bytes); the figure
        stays below the layout's serving bound."""
        from infracalc import comm
        from infracalc.analyses.efficiency import collective
        from infracalc.analyses.parallel import memory_record, serving_record
        from infracalc.collectives import ep_collectives
        from infracalc import layout as placement

        arch = load_model("Qwen/Qwen3-30B-A3B")
        device = load_device("h100")
        plan = Plan(arch, _workload(arch), device, 2048, 256)
        lay = Layout(dp=8, ep=8)
        got = serving.predicted_layout(arch, plan.wd, device, lay, 2048, 256)
        shard = placement.shard(arch, lay, placement.stages(arch, lay)[0])
        self.assertEqual(got["concurrency"], serving.concurrency(shard, plan.wd, device.memory_bytes, 2048, 256)[0])
        tokens = got["concurrency"] * (1 + 2048 / 255)
        cs = ep_collectives(round(tokens), 8, 2048, 2, ep=8, moe_layers=48, tier="up", experts=128)
        want = sum(c.count * collective.predicted_s(c, comm.links(device), device.id)[0] for c in cs)
        self.assertAlmostEqual(serving.ep_comm(device, lay, shard)(tokens), want, places=12)
        self.assertGreater(want, 0)
        bound = serving_record(plan, lay, memory_record(plan, lay, 1)["stages"])
        self.assertLess(got["output_tokens_per_s_per_device"], bound["output_tokens_per_s_per_device"])

    def test_cp_split_by_hand(self):
        # P 32,768, G 256, cp 2: decode history ceil((32,768 + 128) / 2) = 16,448; the balanced
        # (zig-zag) rank runs 16,384 prompt tokens after (2 - 1) x 32,768 / 4 = 8,192: its causal
        # pairs 16,384 x 8,192 + 16,384 x 16,385 / 2 = 268,443,648 = P (P + 1) / (2 cp)
        self.assertEqual(serving.cp_split(32768, 256, 2), (16448, 16384, 8192))
        self.assertEqual(16384 * 8192 + 16384 * 16385 // 2, 32768 * 32769 // 4)
        self.assertEqual(serving.cp_split(32768, 256, 1), (32768 + 128, 32768, 0))

    def test_context_parallel_prediction(self):
        """tp 4 x cp 2 on 8 H100s, Llama-3.1-70B at 32,768 / 256: each device holds half of every
        request's cache (so about twice tp 4's concurrency), and per iteration its TP all-reduces,
        per layer an all-reduce of [decode, 8,192] x 2 B over the CP pair and the ring pass of its
        prompt tokens' K/V (its TP rank's 2 of the 8 KV heads: 2 x 128 x 2 x 2 B = 1,024 B per token
        per layer, cp - 1 = 1 step); one prompt's TTFT is shorter than on tp 4 alone (half the
        prompt per rank)."""
        from infracalc import comm
        from infracalc import layout as placement
        from infracalc.analyses.efficiency import collective
        from infracalc.collectives import Collective

        arch = load_model("meta-llama/Llama-3.1-70B")
        device = load_device("h100")
        plan = Plan(arch, _workload(arch), device, 32768, 256)
        cp, tp = Layout(tp=4, cp=2), Layout(tp=4)
        got = serving.predicted_layout(arch, plan.wd, device, cp, 32768, 256)
        alone = serving.predicted_layout(arch, plan.wd, device, tp, 32768, 256)
        self.assertIsNotNone(got)
        self.assertEqual(got["exposed_collectives"],
                         "TP all-reduces and CP merges of the partial attention and K/V ring passes")
        self.assertGreaterEqual(got["concurrency"], 2 * alone["concurrency"] - 1)
        shard = placement.shard(arch, cp, placement.stages(arch, cp)[0])
        links = comm.links(device)
        tier = comm.tier(cp.group_span("cp"), device)
        one = lambda c: collective.predicted_s(c, links, device.id)[0]
        merge = Collective("m", "all_reduce", 10 * 8192 * 2, 2, tier, dim="cp")
        ring = Collective("r", "p2p", 1000 * 1024, 2, tier, dim="cp")
        want = serving.tp_comm(device, 4, shard)(1010) + 80 * (one(merge) + one(ring))
        fn = serving.cp_comm(device, cp, shard, plan.wd, serving.tp_comm(device, 4, shard))
        self.assertAlmostEqual(fn(1010, 10), want, places=12)
        a = serving.predicted_at_batch(arch, plan.wd, device, cp, 32768, 256, 1)
        b = serving.predicted_at_batch(arch, plan.wd, device, tp, 32768, 256, 1)
        self.assertLess(a["ttft_s"], b["ttft_s"])

    def test_not_modelled_layouts(self):
        """EP under a skewed routing model has no prediction (the busiest rank, not the mean share,
        sets the pace): stated, not guessed."""
        from infracalc.workload import Workload
        arch = load_model("Qwen/Qwen3-30B-A3B")
        plan = Plan(arch, Workload(batch=1, tokens=1, history=0, routing="concentrated"), load_device("h100"),
                    2048, 256)
        for lay in (Layout(dp=8, ep=8),):
            got = slo.chosen_predicted(plan, {"layout_record": lay, "batch_per_replica": 4})
            self.assertIsNone(got["predicted_tpot_s"])
            self.assertIsNone(got["predicted_ttft_s"])
            self.assertEqual(got["predicted_status"], "not modelled for this layout")

    def test_not_modelled_renders(self):
        from infracalc.render.serve import _predicted_rate
        self.assertEqual(_predicted_rate({"predicted_tpot_s": None, "predicted_status": slo.NOT_MODELLED}),
                         "predicted: not modelled for this layout")


def _workload(arch):
    from infracalc.workload import Workload
    return Workload(batch=1, tokens=1, history=0)


if __name__ == "__main__":
    unittest.main()

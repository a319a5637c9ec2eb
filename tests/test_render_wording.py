"""Wording of rendered reports: counts read '1 replica' / '8 replicas' (one helper,
render/units.count, used by every renderer)."""

import re
import unittest

from support import run_cli  # noqa: F401  (sets the path)

from infracalc.render import units as u  # noqa: E402


class Plurals(unittest.TestCase):
    def test_count_helper(self):
        self.assertEqual(u.count(1, "replica"), "1 replica")
        self.assertEqual(u.count(8, "replica"), "8 replicas")
        self.assertEqual(u.count(0, "request"), "0 requests")
        self.assertEqual(u.count(1, "micro-batch", "micro-batches"), "1 micro-batch")
        self.assertEqual(u.count(1024, "device"), "1,024 devices")

    def test_parallel_one_replica_one_device(self):
        code, out, err = run_cli("parallel", "--model", "qwen3-8b", "--device", "h100-sxm", "--devices", "1",
                                 "--input-len", "128", "--output-len", "2", "--full")
        self.assertEqual(code, 0, err)
        self.assertIn("cluster (1 replica)", out)
        self.assertIn("per device (1 device)", out)
        self.assertIn("on 1 device (tp 1", out)
        self.assertIn("TPOT, mean over 1 step |", out)
        self.assertEqual(re.findall(r"(?<![\d,])1 (?:replicas|devices|requests|steps)\b", out), [])

    def test_parallel_eight_replicas(self):
        code, out, err = run_cli("parallel", "--model", "qwen3-8b", "--device", "h100-sxm", "--devices", "8",
                                 "--dp", "8", "--input-len", "128", "--output-len", "2")
        self.assertEqual(code, 0, err)
        self.assertIn("cluster (8 replicas)", out)
        self.assertIn("per device (8 devices)", out)


class EmptySearch(unittest.TestCase):
    # Llama-3.1-70B's bf16 weights (141 GB) exceed one 80 GB H100: the only layout of one
    # device is rejected, and the report says so, with the reason, instead of a "Top 0 layouts"
    # heading.
    LINE = "No layout of 1 device is admitted: 1 layout: "

    def test_parallel_search_nothing_admitted(self):
        code, out, err = run_cli("parallel", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--devices", "1",
                                 "--search", "--input-len", "128", "--output-len", "2")
        self.assertEqual(code, 0, err)
        self.assertIn(self.LINE, out)
        self.assertNotIn("Top 0", out)
        self.assertIn("## Rejected layouts, by reason", out)

    def test_train_search_nothing_admitted(self):
        code, out, err = run_cli("train", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--devices", "1",
                                 "--search", "--seq", "128", "--global-batch", "8")
        self.assertEqual(code, 0, err)
        self.assertIn(self.LINE, out)
        self.assertNotIn("## Best layouts", out)


class SearchRejections(unittest.TestCase):
    def test_refused_tp_degrees_count_under_one_reason(self):
        # Qwen3-8B: 32 query heads, 8 KV heads; the valid TP degrees are the divisors of 32
        # that keep whole KV heads, {1, 2, 4, 8}, so of the 24-device layouts every one with tp in
        # {3, 6, 12, 24} is refused -- all counted under ONE reason (not one per tp value), the
        # wording `train --search` uses, with one of them as the example.
        from infracalc import layout as L
        from infracalc.analyses import parallel as P
        from infracalc.analyses.parallel import search as S
        from infracalc.load.hardware import load_device
        from infracalc.workload import Workload
        from support import load_model
        arch = load_model("qwen3-8b")
        bad_tp = [lay for lay in L.candidate_layouts(arch, 24) if lay.tp in (3, 6, 12, 24)]
        self.assertTrue(bad_tp)
        plan = P.Plan(arch, Workload(), load_device("h100-sxm"), 128, 2)
        _, rejected, _ = S.search(plan, 24, top=1)
        tp_rows = [r for r in rejected if "TP" in r["reason"] or "--tp" in r["reason"]]
        self.assertEqual([r["reason"] for r in tp_rows], ["TP does not split the attention heads into whole heads"])
        self.assertEqual(tp_rows[0]["layouts"], len(bad_tp))
        self.assertIn(tp_rows[0]["example"], [lay.label() for lay in bad_tp])
        _, train_rejected = L.enumerate_layouts(arch, 24, cps=(1, 2, 3, 4, 6, 8, 12, 24))
        self.assertIn(tp_rows[0]["reason"], train_rejected)
        self.assertEqual(train_rejected[tp_rows[0]["reason"]], len(bad_tp))


class UnknownVectorPeakPerOperator(unittest.TestCase):
    def test_tpu_bias_rows_say_vector_compute_unknown(self):
        # Qwen2.5-7B's q_proj at 4,096 tokens: 2 x 4,096 x 3,584 x 3,584 x 28 layers =
        # 2,946,347,565,056 matrix FLOPs and its bias 4,096 x 3,584 x 28 = 411,041,792 vector
        # FLOPs. TPU v5p publishes no vector peak: the row is compute-bound on its matrix
        # time alone and says the vector side is unknown; on an H100 (both peaks) plain compute.
        import json
        rows = {}
        for device in ("tpu-v5p", "h100-sxm"):
            code, out, err = run_cli("forward", "--model", "qwen2.5-7b", "--device", device, "--tokens", "4096",
                                     "--format", "json")
            self.assertEqual(code, 0, err)
            rec = json.loads(out)
            q = next(o for o in rec["operators"] if o["name"] == "q_proj")
            self.assertEqual((q["matrix_flops"], q["vector_flops"]), (2946347565056, 411041792))
            rows[device] = (q["bound"], rec)
        self.assertEqual(rows["tpu-v5p"][0], "compute; vector compute unknown")
        self.assertEqual(rows["h100-sxm"][0], "compute")
        # compute-bound operators' time still counts the row (bound starts with 'compute')
        rec = rows["tpu-v5p"][1]
        self.assertAlmostEqual(rec["totals"]["compute_bound_time_s"],
                               sum(o["time_s"] for o in rec["operators"] if o["bound"].startswith("compute")))


class TwoMacs(unittest.TestCase):
    def test_thunderbolt_is_the_scale_out_tier(self):
        # Two Mac Studios (M3 Ultra) joined by one Thunderbolt 5 cable: 80 Gb/s each way =
        # 10 GB/s per direction, alpha not published (the stated 1 us default). Qwen3-8B at tp 2,
        # prefill of 128 tokens: the embedding all-reduce moves S = 128 x 4096 x 2 B = 1,048,576 B;
        # ring over n = 2: 2(n-1)/n x S/B + 2(n-1) alpha = 104.8576 us + 2 us = 106.8576 us.
        import json
        code, out, err = run_cli("parallel", "--model", "qwen3-8b", "--device", "apple-m3-ultra", "--devices", "2",
                                 "--tp", "2", "--input-len", "128", "--output-len", "2", "--format", "json")
        self.assertEqual(code, 0, err)
        rec = json.loads(out)
        self.assertEqual(rec["links"]["up"]["domain_size"], 1)
        self.assertEqual(rec["links"]["out"]["bytes_per_s"], 10_000_000_000)
        emb = next(c for c in rec["phases"]["prefill"]["stages"][0]["collectives"]
                   if c["name"].startswith("TP embedding all-reduce"))
        self.assertEqual((emb["bytes_per_run"], emb["group"], emb["tier"]), (1048576, 2, "out"))
        self.assertAlmostEqual(emb["time_s"], 106.8576e-6, delta=1e-12)
        code, _, err = run_cli("train", "--model", "qwen3-0.6b", "--device", "apple-m4-max", "--devices", "2",
                               "--tp", "2", "--seq", "128")
        self.assertEqual(code, 0, err)


if __name__ == "__main__":
    unittest.main()

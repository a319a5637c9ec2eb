"""`parallel --search --objective predicted`: layouts ranked by the predicted figure
(efficiency.serving.predicted_layout), context-parallel ones included, the layouts it does not
model refused by name."""

import json
import unittest

import support  # noqa: F401  (import path)
from support import run_cli

from infracalc import layout as placement
from infracalc.analyses.efficiency.serving import predicted_layout
from infracalc.analyses.parallel.search import NOT_PREDICTED

ARGS = ("parallel", "--model", "llama-3.1-70b", "--devices", "8", "--search", "--input-len", "2048",
        "--output-len", "256", "--objective", "predicted")


class SearchByPredicted(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        status, out, err = run_cli(*ARGS, "--format", "json")
        assert status == 0, err
        cls.rec = json.loads(out)

    def test_ranked_by_the_predicted_figure(self):
        from support import load_model
        from infracalc.load.hardware import load_device
        from infracalc.workload import from_formats

        arch, dev = load_model("llama-3.1-70b"), load_device("h100-sxm")
        w = from_formats(arch, weight_dtype="bf16", act_dtype="bf16", kv_dtype="bf16", batch=1, tokens=1)
        top = self.rec["top"]
        self.assertGreaterEqual(len(top), 2)
        values = [t["predicted"]["output_tokens_per_s_per_device"] for t in top]
        self.assertEqual(values, sorted(values, reverse=True))
        from infracalc.analyses.parallel import Plan, memory_record, serving_record
        plan = Plan(arch, w, dev, 2048, 256)
        for t in top:
            lay = placement.Layout(**{d: t["layout"][d] for d in ("tp", "pp", "dp", "cp")})
            want = predicted_layout(arch, w, dev, lay, 2048, 256)
            self.assertAlmostEqual(t["predicted"]["output_tokens_per_s_per_device"],
                                   want["output_tokens_per_s_per_device"], places=9)
            # the predicted rate is a figure of a real engine: never above the layout's serving bound
            # (its replica's throughput at the memory's largest concurrency, at peak; under CP its CP
            # group's, pooled)
            bound = serving_record(plan, lay, memory_record(plan, lay, 1)["stages"])
            self.assertLessEqual(t["predicted"]["output_tokens_per_s_per_device"],
                                 bound["output_tokens_per_s_per_device"] * (1 + 1e-12))
        self.assertTrue(any(t["layout"]["pp"] > 1 for t in top))   # PP layouts are ranked too

    def test_context_parallel_layouts_are_ranked(self):
        # CP layouts are ranked by their predicted figure (the search prunes by
        # efficiency.serving.predicted_ceiling, so ranking them costs few exact figures): on 8 H100s
        # the admitted ones are the 16 of 20 that fit, CP degrees 2 and 4 among them (cp 8 alone
        # does not fit)
        self.assertNotIn(NOT_PREDICTED, {r["reason"] for r in self.rec["rejected"]})
        status, out, err = run_cli(*ARGS, "--top", "100", "--format", "json")
        self.assertEqual(status, 0, err)
        every = json.loads(out)
        self.assertEqual(every["layouts_admitted"], len(every["top"]))
        self.assertEqual({t["layout"]["cp"] for t in every["top"]}, {1, 2, 4})
        self.assertTrue(all(t["predicted"]["output_tokens_per_s_per_device"] > 0 for t in every["top"]))

    def test_expert_parallel_beyond_tp_is_ranked(self):
        # Qwen3-30B-A3B on 16 H100s: layouts with EP beyond a TP group of two or more devices get
        # a predicted figure (TP all-reduces and the EP all-to-alls); the figure never exceeds
        # the layout's serving bound
        from support import load_model
        from infracalc.load.hardware import load_device
        from infracalc.analyses.parallel import Plan, memory_record, serving_record
        from infracalc.workload import from_formats

        status, out, err = run_cli("parallel", "--model", "qwen3-30b-a3b", "--devices", "16", "--search",
                                   "--input-len", "2048", "--output-len", "256", "--objective", "predicted",
                                   "--top", "200", "--format", "json")
        self.assertEqual(status, 0, err)
        rec = json.loads(out)
        beyond = [t for t in rec["top"] if t["layout"]["tp"] > 1 and t["layout"]["ep"] > t["layout"]["tp"]]
        self.assertTrue(beyond)
        self.assertNotIn(NOT_PREDICTED, {r["reason"] for r in rec["rejected"]})
        arch, dev = load_model("qwen3-30b-a3b"), load_device("h100-sxm")
        w = from_formats(arch, weight_dtype="bf16", act_dtype="bf16", kv_dtype="bf16", batch=1, tokens=1)
        plan = Plan(arch, w, dev, 2048, 256)
        for t in beyond[:3]:
            L = t["layout"]
            lay = placement.Layout(tp=L["tp"], pp=L["pp"], dp=L["dp"], ep=L["ep"], cp=L["cp"])
            self.assertEqual(t["predicted"]["exposed_collectives"],
                             "TP all-reduces and EP dispatch and combine all-to-alls")
            bound = serving_record(plan, lay, memory_record(plan, lay, 1)["stages"])
            self.assertLessEqual(t["predicted"]["output_tokens_per_s_per_device"],
                                 bound["output_tokens_per_s_per_device"] * (1 + 1e-12))

    def test_first_screen_and_csv(self):
        status, md, _ = run_cli(*ARGS)
        self.assertEqual(status, 0)
        first = md.splitlines()[:10]
        self.assertTrue(any(line.startswith("- Predicted (ranked):") for line in first), first)
        status, csv, _ = run_cli(*ARGS, "--format", "csv")
        self.assertIn("predicted_output_tokens_per_s_per_device", csv.splitlines()[0])


if __name__ == "__main__":
    unittest.main()

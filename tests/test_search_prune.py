"""The pruned layout search (`search_top`) against the unpruned one, and its bound against
the exact figures.

`search_top` scores a layout exactly only while its bound (`score_bound`, from
`bound.stage_time_bounds`) could still beat the top-th exact value; a layout's bound must
never be better than its exact value, or the pruned top list would differ. Both are checked
here over dense, MoE and MLA models, every objective, --overlap and CP layouts: the top list
(values, layouts, batches, figures), the rejection records and the counts equal the
unpruned search's, which is written out below as the plain loop (every admitted layout
scored at every batch `best_batch` tries)."""

import importlib
import unittest

from support import load_model  # noqa: F401  (sets the path)

from infracalc import layout as placement
from infracalc.analyses import parallel as P
from infracalc.analyses import ranking
from infracalc.analyses.parallel import bound
from infracalc.load.hardware import load_device
from infracalc.workload import Workload

S = importlib.import_module("infracalc.analyses.parallel.search")

H100, H200 = load_device("h100-sxm"), load_device("h200")


def reference(plan, devices, objective, tpot_limit, batch):
    """The unpruned search: every layout admitted, scored by best_batch, ranked."""
    if objective != "throughput" and batch is None:
        batch = 1

    def scored(lay):
        best = S.best_batch(plan, lay, S.admitted_batches(plan, lay, batch), objective, tpot_limit)
        if best is None:
            raise ranking.Rejected(S.TPOT_REJECTED)
        return best

    rejections = ranking.Rejections()
    layouts = placement.candidate_layouts(plan.arch, devices)
    ranked = ranking.rank(layouts, scored, S._collective_span, rejections)
    return ranked, rejections.records(), len(layouts)


CASES = [   # (model, device, devices, P, G, objective, tpot_limit, batch, options)
    ("deepseek-v3", H200, 64, 2048, 1024, "throughput", None, None, {}),
    ("deepseek-v3", H200, 64, 2048, 1024, "ttft", None, None, {}),
    ("qwen3-30b-a3b", H100, 32, 2048, 1024, "throughput", None, None, {}),
    ("qwen3-30b-a3b", H100, 32, 2048, 1024, "throughput", None, None, {"overlap": True}),
    ("qwen3-30b-a3b", H100, 32, 1000, 77, "tpot", None, 4, {}),
    ("qwen3-30b-a3b", H100, 16, 4096, 64, "ttft", None, 8, {"cp_split": "zigzag"}),
    ("llama-3.1-70b", H100, 64, 2048, 256, "throughput", None, None, {}),
    ("llama-3.1-70b", H100, 64, 2047, 255, "ttft", None, 3, {"overlap": True}),
    ("llama-3.1-70b", H100, 32, 2048, 256, "throughput", 0.03, None, {}),
    ("qwen3-8b", H100, 16, 512, 128, "tpot", 0.004, 2, {}),
]


def plan_of(model, device, P_, G, options):
    return P.Plan(load_model(model), Workload(), device, P_, G, **options)


class PrunedSearchEqualsUnpruned(unittest.TestCase):
    def test_top_list_rejections_and_counts_equal(self):
        for model, device, n, P_, G, objective, limit, batch, options in CASES:
            ranked, rejected, total = reference(plan_of(model, device, P_, G, options), n, objective, limit, batch)
            with self.subTest(model=model, n=n, objective=objective, limit=limit, options=options):
                full = S.search(plan_of(model, device, P_, G, options), n, objective, limit, None, batch)
                self.assertEqual(full, (ranked, rejected, total))
            for top in (1, 3, 10):
                with self.subTest(model=model, n=n, objective=objective, limit=limit, options=options, top=top):
                    self.assertGreater(len(ranked), top)   # the top list is a real cut
                    got = S.search_top(plan_of(model, device, P_, G, options), n, objective, limit, top, batch)
                    self.assertEqual(got, (ranked[:top], rejected, total, len(ranked)))

    def test_the_pruned_search_scores_few_layouts_exactly(self):
        # Without a TPOT limit the exact score is asked only while a bound can beat the
        # top-th value: on DeepSeek-V3 over 64 devices far fewer than the admitted layouts.
        calls = []
        exact = S.score

        def counting(*args, **kwargs):
            if kwargs.get("times", P.stage_times) is P.stage_times and len(args) < 5:
                calls.append(args[1])
            return exact(*args, **kwargs)

        S.score = counting
        try:
            _, _, _, admitted = S.search_top(plan_of("deepseek-v3", H200, 2048, 1024, {}), 64, "throughput",
                                             None, 3, None)
        finally:
            S.score = exact
        self.assertGreater(admitted, 30)
        self.assertLess(len(calls), admitted // 3)
        self.assertGreaterEqual(len(calls), 3)


class BoundNeverAboveExact(unittest.TestCase):
    def test_stage_bounds_and_values(self):
        for model, device, n, P_, G, objective, _, batch, options in CASES:
            plan = plan_of(model, device, P_, G, options)
            checked = 0
            for lay in placement.candidate_layouts(plan.arch, n):
                try:
                    batches = S.admitted_batches(plan, lay, batch if objective == "throughput" or batch else 1)
                except Exception:   # refused: not scored by either path
                    continue
                for b in {batches[0], batches[-1]}:
                    m = P.micro_batches(lay, b)
                    for phase in ("prefill", "decode"):
                        lo = bound.stage_time_bounds(plan, lay, phase, b // m)
                        hi = P.stage_times(plan, lay, phase, b // m)
                        for x, y in zip(lo, hi):
                            self.assertLessEqual(x, y * (1 + 1e-12), (model, lay, phase, b))
                        self.assertTrue(all(x > 0 for x in lo), (model, lay, phase, b))   # not vacuous
                    for obj in ("throughput", "ttft", "tpot"):
                        self.assertLessEqual(S.score_bound(plan, lay, b, obj),
                                             S.score(plan, lay, b, obj)[0] + 1e-12 * abs(S.score(plan, lay, b, obj)[0]))
                    checked += 1
            self.assertGreater(checked, 5, model)


if __name__ == "__main__":
    unittest.main()

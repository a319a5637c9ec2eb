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

from support import Workload, load_model  # noqa: F401  (sets the path)

from infracalc import layout as placement
from infracalc.analyses import parallel as P
from infracalc.analyses import ranking
from infracalc.analyses.parallel import bound
from infracalc.load.hardware import load_device

S = importlib.import_module("infracalc.analyses.parallel.search")


def comm_tiers(lay, device):
    from infracalc.analyses import stage_comm
    return stage_comm.group_tiers(lay, device)

H100, H200 = load_device("h100-sxm"), load_device("h200")


def reference(plan, devices, objective, tpot_limit, batch):
    """The unpruned search: every layout admitted, scored by best_batch, ranked."""
    if objective not in ("throughput", "predicted") and batch is None:
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
    ("llama-3.1-70b", H100, 32, 2047, 255, "ttft", None, 1, {}),   # CP's last rank: fewer tokens, more pairs
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
                full = S.search(plan_of(model, device, P_, G, options), n, objective=objective, tpot_limit=limit,
                                top=None, batch=batch)
                self.assertEqual(full, (ranked, rejected, total))
            # One plan for the three cuts: the first computes the bounds and exact values cold,
            # the later two read the ones they share from its memo (pure functions of the plan)
            # and prune on their own top-th value; the plain loop and `search` keep fresh plans.
            pruned = plan_of(model, device, P_, G, options)
            for top in (1, 3, 10):
                with self.subTest(model=model, n=n, objective=objective, limit=limit, options=options, top=top):
                    self.assertGreater(len(ranked), top)   # the top list is a real cut
                    got = S.search_top(pruned, n, objective=objective, tpot_limit=limit, top=top, batch=batch)
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
            _, _, _, admitted = S.search_top(plan_of("deepseek-v3", H200, 2048, 1024, {}), 64, objective="throughput",
                                             tpot_limit=None, top=3, batch=None)
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
            for lay in placement.candidate_layouts(plan.arch, n)[::2]:
                try:
                    batches = S.admitted_batches(plan, lay, batch if objective == "throughput" or batch else 1)
                except Exception:   # refused: not scored by either path
                    continue
                for b in {batches[0], batches[-1]}:
                    m = P.micro_batches(lay, b)
                    for phase in ("prefill", "decode"):
                        weak = bound.comm_free_bounds(plan, lay, phase, b // m)
                        lo = bound.stage_time_bounds(plan, lay, phase, b // m)
                        hi = P.stage_times(plan, lay, phase, b // m)
                        for v, x, y in zip(weak, lo, hi):
                            self.assertLessEqual(x, y * (1 + 1e-12), (model, lay, phase, b))
                            self.assertLessEqual(v, x * (1 + 1e-12), (model, lay, phase, b))
                        self.assertTrue(all(x > 0 for x in lo), (model, lay, phase, b))   # not vacuous
                    for obj in ("throughput", "ttft", "tpot"):
                        weak, lo, exact = (S.score_bound(plan, lay, b, obj, bound.comm_free_bounds),
                                           S.score_bound(plan, lay, b, obj), S.score(plan, lay, b, obj)[0])
                        self.assertLessEqual(weak, lo + 1e-12 * abs(lo))
                        self.assertLessEqual(lo, exact + 1e-12 * abs(exact))
                    checked += 1
            self.assertGreater(checked, 5, model)


if __name__ == "__main__":
    unittest.main()


class TrainPrunedSearchEqualsUnpruned(unittest.TestCase):
    """train --search's top list with the step-time floor (`ranking.rank_top`) against every
    layout's step time (`comm.prunable` forced false), and the floor against the step time."""

    CASES = [   # (model, device, devices, seq, global batch, Setup fields)
        ("deepseek-v3", "h200", 256, 4096, 512, {"recompute": "full", "zero": 1}),
        ("qwen3-30b-a3b", "h100-sxm", 64, 4096, 256, {"recompute": "selective"}),
        ("qwen3-30b-a3b", "h100-sxm", 64, 4096, 256, {"schedule": "zero-bubble", "overlap_dp": True}),
        ("qwen3-30b-a3b", "h100-sxm", 32, 4096, 128, {"schedule": "dualpipe", "zero": 1}),
        ("llama-3.1-70b", "h100-sxm", 64, 8192, 256, {"schedule": "interleaved", "chunks": 2,
                                                      "recompute": "full"}),
        ("llama-3.1-8b", "h100-sxm", 64, 4096, 256, {"zero": 3}),
    ]

    OBJECTIVE = "step"

    def search(self, model, device, n, seq, gb, setup, top, prune=True):
        from infracalc import comm
        from infracalc.analyses import train

        dev = load_device(device)
        prunable = comm.prunable
        if not prune:
            comm.prunable = lambda links: False
        try:
            return train.search(load_model(model), Workload(batch=1, tokens=seq, logits="all"), dev,
                                train.Setup(**setup), devices=n, global_batch=gb, links=comm.links(dev), top=top,
                                objective=self.OBJECTIVE)
        finally:
            comm.prunable = prunable

    def test_records_equal(self):
        for model, device, n, seq, gb, setup in self.CASES:
            full = self.search(model, device, n, seq, gb, setup, 10 ** 6, prune=False)
            self.assertGreater(full["layouts_admitted"], 10, model)
            for top in (1, 10):
                with self.subTest(model=model, setup=setup, top=top):
                    want = dict(full, top=full["top"][:top], inputs=dict(full["inputs"], top=top))
                    self.assertEqual(self.search(model, device, n, seq, gb, setup, top), want)

    STRIDE, AT_LEAST = 3, 3   # every STRIDE-th candidate layout; more than AT_LEAST checked per case

    def floor_and_exact(self, arch, w, lay, dev, s, links, mem):
        """(the search's floor, the value it bounds) of one layout: the step time's here."""
        from infracalc.analyses import train, train_time
        return (train_time.step_floor(arch, w, lay, dev, **train.recipe_options(s, links, mem)),
                train.step_of(arch, w, lay, dev, s, links=links, mem=mem).step_s)

    def test_floor_never_above_the_step_time(self):
        from infracalc import comm
        from infracalc.analyses import train, train_time

        for model, device, n, seq, gb, setup in self.CASES:
            arch, dev, s = load_model(model), load_device(device), train.Setup(**setup)
            w, links = Workload(batch=1, tokens=seq, logits="all"), comm.links(load_device(device))
            checked = 0
            for lay in placement.candidate_layouts(arch, n)[::self.STRIDE]:
                m = train.micro_batches(gb, 1, lay.dp)
                if isinstance(m, str) or lay.cp > 1:
                    continue
                lay = lay.replace(micro_batches=m, sp=lay.tp > 1)
                try:
                    placement.validate(arch, lay)
                    train_time.check_schedule(arch, lay, s.schedule, s.chunks)
                except Exception:
                    continue
                floor, exact = self.floor_and_exact(arch, w, lay, dev, s, links, train.stage_memory(arch, w, lay, s))
                self.assertLessEqual(floor, exact * (1 + 1e-12), (model, lay, setup))
                self.assertGreater(floor, 0, (model, lay, setup))   # not vacuous
                checked += 1
            self.assertGreater(checked, self.AT_LEAST, (model, setup))

    def test_floor_charges_every_layer_collective_the_step_charges(self):
        # The floor's layer collectives (train_time.layer_comm_s x each layer's count) equal the
        # step's own per-micro-batch collectives less the top blocks' (the vocab-parallel
        # embedding's reduce-scatter and the loss's three all-reduces), with TP's, EP's and CP's
        # runs as stage_collectives charges them: TP and EP forward + backward (+ a full
        # recompute), CP forward + twice backward (+ any recompute); under overlap_tp no TP.
        from infracalc import comm
        from infracalc.analyses import train, train_flops, train_time
        from infracalc.layout import Layout

        arch, dev = load_model("qwen3-30b-a3b"), load_device("h100-sxm")
        links = comm.links(dev)
        w = Workload(batch=1, tokens=4096, logits="all")
        lay = Layout(tp=2, ep=4, dp=8, cp=2, micro_batches=4, sp=True)
        tw = train_flops.stored_workload(train_flops.training_workload(w))
        seen = set()
        for recompute in ("full", "selective", "none"):
            s = train.Setup(recompute=recompute)
            st = train.step_of(arch, w, lay, dev, s, links=links, mem=train.stage_memory(arch, w, lay, s)).stages[0]
            for overlap in (False, True):
                want = sum(t.seconds for t in st.collectives if "embedding" not in t.collective.name
                           and "cross-entropy" not in t.collective.name
                           and not (overlap and t.collective.dim == "tp"))
                tokens, traffic = train_time._traffic(arch, lay, tw, comm_tiers(lay, dev), ("", ""))
                got = sum(train_time.layer_comm_s(layer, lay, tokens, traffic, links=links,
                                                  recompute=s.recompute_spec, overlap_tp=overlap)
                          * count for layer, count, _ in placement.device_layers(arch, lay, placement.stages(
                              arch, lay)[0]))
                self.assertAlmostEqual(got, want, delta=want * 1e-12)
                seen.add(round(want, 12))
        self.assertEqual(len(seen), 6)   # each recipe and overlap charges a different amount

    def test_floor_composes_the_largest_stage_the_bubble_and_the_largest_update(self):
        # Llama-3.1-8B, pp 4 (8 layers per stage), 1F1B, ZeRO-1 over dp 2, m = 8: the floor is
        # m x max c + (sum c - max c) + max over stages of the optimizer update, c_s = 8 x one
        # layer's pass (every stage holds 8 equal layers), the updates as step_time charges them.
        from infracalc import comm
        from infracalc.analyses import train, train_time
        from infracalc.layout import Layout

        arch, dev = load_model("llama-3.1-8b"), load_device("h100-sxm")
        s, w = train.Setup(zero=1), Workload(batch=1, tokens=4096, logits="all")
        lay = Layout(pp=4, dp=2, micro_batches=8)
        mem = train.stage_memory(arch, w, lay, s)
        opts = train.recipe_options(s, comm.links(dev), mem)
        exact = train.step_of(arch, w, lay, dev, s, links=comm.links(dev), mem=mem)
        from infracalc.analyses.train_flops import training_workload

        tw = training_workload(w)
        c = 8 * train_time.layer_pass(arch.layers[0], tw, train_time.roofs_of(dev, tw, 1.0, 1.0), cp=1,
                                      recompute="none", flash=False,
                                      sp_tp=1).total
        want = 8 * c + (4 * c - c) + max(st.optimizer_s for st in exact.stages)
        self.assertAlmostEqual(train_time.step_floor(arch, w, lay, dev, **opts), want, delta=want * 1e-12)
        self.assertGreater(len({st.optimizer_s for st in exact.stages}), 1)   # the stages' updates differ


class PipelineComposition(unittest.TestCase):
    """The pipeline formulas the search, the record and the bounds compose (pipeline.py), by hand."""

    def test_prefill_and_step_by_hand(self):
        from infracalc.analyses.parallel import pipeline

        # Stages of 1, 2 and 3 s, a boundary transfer of 0.5 s, m = 4 micro-batches over pp = 3:
        # L = 1 + 2 + 3 + (3 - 1) x 0.5 = 7 s; the slowest 3 s, m x slowest 12 s. Prefill: the last
        # micro-batch leaves after L + (m - 1) x 3 = 16 s, the first after 7 s; the slowest stage
        # is busy 12 of those 16 s (bubble 1/4). A decode step recurs every max(L, 12) = 12 s, no
        # bubble; with m = 2 the pass bounds it: max(7, 6) = 7 s, bubble 1 - 6/7.
        pre = pipeline.prefill_pipeline([1.0, 2.0, 3.0], 0.5, 4, 3)
        self.assertEqual((pre["pass_s"], pre["ttft_first_s"], pre["ttft_s"], pre["slowest_stage_s"]),
                         (7.0, 7.0, 16.0, 3.0))
        self.assertAlmostEqual(pre["bubble_fraction"], 0.25, places=15)
        step = pipeline.step_pipeline([1.0, 2.0, 3.0], 0.5, 4, 3)
        self.assertEqual((step["pass_s"], step["cycle_s"], step["bubble_fraction"]), (7.0, 12.0, 0.0))
        step = pipeline.step_pipeline([1.0, 2.0, 3.0], 0.5, 2, 3)
        self.assertEqual(step["cycle_s"], 7.0)
        self.assertAlmostEqual(step["bubble_fraction"], 1 - 6 / 7, places=15)


class OverLimitSharedAcrossReplicas(unittest.TestCase):
    """`search.over_limit` is memoized on what its bound reads (tp, ep, cp, sp, pp, micro-batches,
    the stage split and the group tiers, not dp). Over many device counts: layouts with one key
    have one bound TPOT (each from a fresh plan, so no memo answers for another layout), the
    tiers are needed in the key (dp moves the PP neighbours off a server and changes the
    bound), and the memoized answer equals the fresh bound's at limits around each value."""

    def test_the_key_determines_the_bound(self):
        def key(lay, t):
            return (lay.tp, lay.ep, lay.cp, lay.sp, lay.pp, lay.micro_batches, lay.pp_layers, t)

        for model in ("llama-3.1-70b", "qwen3-30b-a3b"):
            shared, values, without_tiers = plan_of(model, H100, 2048, 256, {}), {}, {}
            for n in (8, 16, 24, 32, 64, 128):
                fresh = plan_of(model, H100, 2048, 256, {})   # no layout of another count in its memo
                for lay in placement.candidate_layouts(shared.arch, n):
                    try:
                        S.admitted_batches(shared, lay, 1)
                        tpot = P.latency(fresh, lay, 1, P.ranked_phase(fresh, lay, 1, "decode",
                                                                     bound.stage_time_bounds))["tpot_mean_s"]
                    except Exception:   # a layout the search rejects before or while scoring
                        continue
                    t = comm_tiers(lay, H100)
                    values.setdefault(key(lay, t), set()).add(tpot)
                    without_tiers.setdefault(key(lay, None), {})[tpot] = lay
                    for limit in (tpot * 0.999, tpot * (1 + 2 * ranking.PRUNE_MARGIN)):
                        self.assertEqual(S.over_limit(shared, lay, [1], limit),
                                         tpot > limit * (1 + ranking.PRUNE_MARGIN), (model, lay))
            self.assertTrue(all(len(v) == 1 for v in values.values()), model)
            split = [v for v in without_tiers.values() if len(v) > 1]
            self.assertTrue(split, model)
            for group in split:   # one limit between the two bounds: the two layouts answer differently
                (low, a), (high, b) = sorted(group.items())[:2]
                limit = (low + high) / 2 / (1 + ranking.PRUNE_MARGIN)
                if not low <= limit * (1 + ranking.PRUNE_MARGIN) < high:
                    continue
                self.assertEqual((S.over_limit(shared, a, [1], limit), S.over_limit(shared, b, [1], limit)),
                                 (False, True), (model, a, b))


class TrainPredictedPrunedSearchEqualsUnpruned(TrainPrunedSearchEqualsUnpruned):
    """train --search --objective predicted: the top list with the predicted step's floor
    (`efficiency.training.predicted_floor`) against every layout's predicted step, and the floor
    against the predicted step (MoE layers with their per-expert host cost and token permutations,
    an interleaved pipeline with its sends hidden: terms the floor leaves out)."""

    CASES = [
        ("qwen3-30b-a3b", "h100-sxm", 64, 4096, 256, {"recompute": "selective"}),
        ("llama-3.1-70b", "h100-sxm", 64, 8192, 256, {"schedule": "interleaved", "chunks": 2,
                                                      "recompute": "full"}),
    ]

    OBJECTIVE = "predicted"

    STRIDE, AT_LEAST = 2, 1

    def floor_and_exact(self, arch, w, lay, dev, s, links, mem):
        """(the predicted step's floor, the predicted step) of one layout."""
        from infracalc.analyses import train
        from infracalc.analyses.efficiency.training import predicted_floor, predicted_step
        opts = train.recipe_options(s, links, mem)
        return predicted_floor(arch, w, lay, dev, **opts), predicted_step(arch, w, lay, dev, **opts)[0]

"""Search speed (issue 8 section 5): a guard with a generous time bound, and the reuse that
makes it fast, checked exactly: a second search on the same plan builds no ledger at all."""

import time
import unittest

from support import load_model  # noqa: F401  (sets the path)

from infracalc import ledger
from infracalc.analyses import parallel as P
from infracalc.analyses.parallel import search as S
from infracalc.load.hardware import load_device
from infracalc.workload import Workload


class SearchSpeed(unittest.TestCase):
    def test_moe_search_is_fast_and_reuses_every_ledger(self):
        # Qwen3-30B-A3B over 32 H100s: 196 layouts (tp, pp, cp, dp and every EP dividing tp x dp),
        # several batches each. About 0.2 s of CPU on an idle machine; 3 s is a generous bound.
        plan = P.Plan(load_model("qwen3-30b-a3b"), Workload(), load_device("h100-sxm"), 2048, 1024)
        t0 = time.process_time()
        first = S.search(plan, 32)
        self.assertLess(time.process_time() - t0, 3.0)
        self.assertEqual(first[2], 196)
        built = []
        real = ledger.operators
        ledger.operators = lambda *a, **k: built.append(1) or real(*a, **k)
        try:
            again = S.search(plan, 32)
        finally:
            ledger.operators = real
        self.assertEqual(built, [])   # every block shard's ledger came from the plan's caches
        self.assertEqual([(r[0], r[2], r[3]) for r in again[0]], [(r[0], r[2], r[3]) for r in first[0]])

    def test_search_memory_equals_every_stages_rows(self):
        # DeepSeek-V3 on 64 H200s: 61 layers (3 dense, 58 MoE) split unevenly, so stages of one
        # layout differ in kind (embedding, dense layers, head, 1 more layer). For every layout
        # the search admits, its per-kind memory gives the binding stage and capacity of the
        # per-stage rows. (The search's times: test_parallel_independent.)
        from infracalc import layout as placement
        plan = P.Plan(load_model("deepseek-v3"), Workload(), load_device("h200"), 1024, 64)
        seen = 0
        for lay in placement.candidate_layouts(plan.arch, 64):
            try:
                placement.validate(plan.arch, lay)
            except Exception:
                continue
            rows, binding, cap = P.memory(plan, lay, 1)
            bind, fast_cap = P.search_memory(plan, lay)
            self.assertEqual((bind, fast_cap), (rows[binding], cap), lay.label())
            seen += 1
        self.assertGreater(seen, 50)

if __name__ == "__main__":
    unittest.main()

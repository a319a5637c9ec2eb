"""Rows reused across histories are the rows a fresh build gives.

The ledger reuses a block's rows across histories (decode steps, batch-sweep
probes) when it declares Block.history_independent, and an attention block
reuses its history-free part (arch.history_free_rows), so a wrong declaration
would silently freeze a quantity that should grow with the cache. Here, for
every distinct block of every bundled model (and its TP 2 / EP 2 shard where
it has one): a declaring block gives identical rows at histories 0, 1, 4,099
and 100,003 (past the bundled windows and chunks), and every block's rows at
each history with the memo warmed at the other histories equal its rows built
with the memo empty, for a decode step and for a multi-token pass, on every
MLA path.
"""

import os
import unittest

from support import CALC, Workload, load_model

from infracalc import arch as arch_module, ledger
from infracalc.errors import UserError

HISTORIES = (0, 1, 4099, 100003)
WORKLOADS = (Workload(batch=3, tokens=1), Workload(batch=2, tokens=5, logits="all", routing="concentrated"),
             Workload(batch=3, tokens=1, mla="naive"), Workload(batch=2, tokens=3, mla="expanded"))
MODELS = sorted(f[:-5] for f in os.listdir(os.path.join(CALC, "models")) if f.endswith(".json"))


def distinct_blocks(arch):
    """Every distinct block of `arch`, with its TP 2 and EP 2 shards where they exist."""
    blocks = list(arch.top_blocks()) + [b for layer, _, _ in arch.layer_groups() for b in layer.blocks]
    shards = []
    for b in blocks:
        for tp, ep in ((2, 1), (2, 2)):
            try:
                shards.append(b.shard(tp, ep))
            except UserError:   # not splittable that way (e.g. an odd head count)
                pass
    return list(dict.fromkeys(blocks + shards))


def rows_or_error(block, w):
    """block.ops(w), or the error it raises (GPT-2's learned positions end at 1,024)."""
    try:
        return block.ops(w)
    except UserError as e:
        return str(e)


class HistoryIndependence(unittest.TestCase):
    def test_every_declaring_block_of_every_model(self):
        self.assertGreaterEqual(len(MODELS), 28)
        for model in MODELS:
            arch = load_model(model)
            dependent = 0
            for block in distinct_blocks(arch):
                for w in WORKLOADS:
                    rows = [rows_or_error(block, w.replace(history=h)) for h in HISTORIES]
                    if block.history_independent:   # one linear piece: no breakpoint, no period
                        self.assertEqual(tuple(block.history_breakpoints(0, 1 << 62)), (), model)
                        self.assertIsNone(block.history_period(), model)
                        for h, other in zip(HISTORIES[1:], rows[1:]):
                            self.assertEqual(other, rows[0], f"{model}: {type(block).__name__} declares "
                                             f"history_independent but its rows differ at history {h}")
                    elif any(r != rows[0] for r in rows):
                        dependent += 1
            # the comparison sees the history: the attention (or state) blocks, which do
            # not declare it, differ
            self.assertGreater(dependent, 0, model)

    def test_blocks_that_do_not_read_the_mla_path_ignore_it(self):
        # Block.reads_mla: every other block's rows are the same under each MLA path (the
        # ledger shares them between the paths); an MLA block's differ, so the test sees it
        differs = 0
        for model in MODELS:
            for block in distinct_blocks(load_model(model)):
                for w in WORKLOADS:
                    w = w.replace(history=4099)
                    rows = [rows_or_error(block, w.replace(mla=p)) for p in ("absorbed", "expanded", "naive")]
                    if block.reads_mla:
                        differs += any(r != rows[0] for r in rows)
                    else:
                        self.assertEqual(rows[1:], rows[:1] * 2, f"{model}: {type(block).__name__} reads w.mla "
                                         "but does not declare reads_mla")
        self.assertGreater(differs, 0)

    def test_memoized_parts_equal_a_cold_build(self):
        for model in MODELS:
            for block in distinct_blocks(load_model(model)):
                for w in WORKLOADS:
                    cold = []
                    for h in HISTORIES:   # each history built with nothing memoized
                        arch_module._FREE_PARTS.clear()
                        cold.append(rows_or_error(block, w.replace(history=h)))
                    warm = [rows_or_error(block, w.replace(history=h)) for h in HISTORIES[::-1]][::-1]
                    self.assertEqual(warm, cold, f"{model}: {type(block).__name__}")

    def test_split_of_a_constant_operator_is_the_search(self):
        # Run.split answers an operator with no increment or drift directly; it must give
        # split_repeated's parts (Llama 4 Scout: repeated chunked pieces; MoE and norms constant)
        from infracalc.analyses import decode_sum
        from infracalc.analyses.roofline import Roof

        arch = load_model("llama-4-scout")
        pcs = decode_sum.decode_pieces(arch, Workload(batch=8), 1024, 100000, check=False)
        constant = 0
        for roof in (Roof(1e15, 1e14, 3e12), Roof(1e12, 1e11, 3e12)):   # memory- and compute-heavy
            def compute_s(v):
                return roof.compute_s(v[0], v[2])

            def memory_s(v):
                return sum(v[3:]) / roof.bytes_per_s

            for runs in pcs.runs:
                for run in runs:
                    constant += not any(run.delta) and not any(run.drift)
                    self.assertEqual(run.split(compute_s, memory_s), decode_sum.split_repeated(
                        run.start, run.delta, run.drift, run.steps, run.repeats, compute_s, memory_s))
        self.assertGreater(constant, 100)

    def test_who_declares_it(self):
        # what reads a cache or state, or checks a position, does not
        declared = {}
        for model in ("llama-4-scout", "deepseek-v3", "qwen3-next-80b-a3b", "gpt2"):
            for b in distinct_blocks(load_model(model)):
                declared[type(b).__name__] = b.history_independent
        self.assertEqual(declared, {
            "Embedding": True, "RMSNorm": True, "Residual": True, "LMHead": True, "GatedMLP": True,
            "MoE": True, "LayerNorm": True, "GPTMLP": True,
            "Attention": False, "GatedAttention": False, "MLA": False, "GatedDeltaNet": False,
            "GPTEmbedding": False})

    def test_reused_rows_equal_fresh_ones(self):
        # Rows of a step at history 777 after steps at 1 and 2 warmed the reuse, against the
        # same rows built with nothing kept (Qwen3-Next: hybrid attention, state, MoE).
        arch = load_model("qwen3-next-80b-a3b")
        w = Workload(batch=4, tokens=1)
        for h in (1, 2):
            ledger.build(arch, w.replace(history=h))
        reused = ledger.build(arch, w.replace(history=777))
        ledger._ROWS.clear()
        ledger._BLOCK_ROWS.clear()
        ledger._RAW.clear()
        fresh = ledger.build(arch, w.replace(history=777))
        self.assertEqual(reused.ops, fresh.ops)
        self.assertEqual(reused.totals, fresh.totals)


if __name__ == "__main__":
    unittest.main()

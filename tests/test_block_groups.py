"""The ledger's rows: one row group per block place over every layer holding it.

A block equal in several layers is expanded once and multiplied by the number of
layers holding it, whatever those layers differ in elsewhere (Architecture.block_groups).
The totals are checked against an independent sum that walks every layer one by one.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "calculations"))

from infracalc import layout, ledger  # noqa: E402
from infracalc.analyses.decode_sum import FIELDS  # noqa: E402
from infracalc.arch import block_groups  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.workload import Workload  # noqa: E402


def layer_by_layer(arch, w):
    """FIELDS summed over the top blocks once and over every layer's every block, one
    layer at a time (no grouping of any kind)."""
    total = [0] * len(FIELDS)
    blocks = [arch.embedding, arch.final_norm, arch.head]
    blocks += [b for layer in arch.layers for b in layer.blocks]
    for block in blocks:
        for op in block.ops(w):
            total = [t + getattr(op, f) for t, f in zip(total, FIELDS)]
    return total


def rows(ops, name):
    return [(o.layers, o.repeats) for o in ops if o.name == name]


class BlockGroups(unittest.TestCase):
    def test_totals_equal_a_layer_by_layer_walk(self):
        # Models whose layers differ (several layer groups): every block's rows times the
        # layers holding it sum to what a walk over all layers, one at a time, gives.
        for model in ("kimi-k3", "deepseek-v3", "deepseek-v4-flash", "gemma-3-27b", "qwen3.5-397b-a17b",
                      "llama-4-scout", "qwen3-8b"):
            arch = load_model(model)
            for w in (Workload(tokens=8), Workload(batch=4, tokens=1, history=1000)):
                with self.subTest(model=model, w=w):
                    ops, walk = ledger.operators(arch, w), layer_by_layer(arch, w)
                    self.assertEqual([ledger.sum_field(ops, f) for f in FIELDS], walk)
                    self.assertEqual(list(ledger.field_sums(arch, w, FIELDS)), walk)

    def test_repeats_count_every_layer_once(self):
        # Over the layers' rows, each layer index is listed by as many row groups as its
        # layer has block places (the counts and the indices agree).
        for model in ("kimi-k3", "deepseek-v3", "gemma-3-27b"):
            arch = load_model(model)
            groups = arch.block_groups()
            self.assertEqual(sum(count for _, count, _ in groups), sum(len(layer.blocks) for layer in arch.layers))
            for block, count, indices in groups:
                self.assertEqual(count, len(indices))
                self.assertEqual(list(indices), sorted(set(indices)))
                for i in indices:
                    self.assertIn(block, arch.layers[i].blocks)

    def test_deepseek_v3_attention_is_one_group_over_61_layers(self):
        # 3 dense layers (0-2) then 58 MoE layers (3-60): the MLA attention and its norms are
        # one row group over all 61; the dense MLP over 0-2, the routed experts over 3-60.
        ops = ledger.operators(load_model("deepseek-v3"), Workload(tokens=8))
        self.assertEqual(rows(ops, "q_a_proj"), [("0-60", 61)])
        self.assertEqual(rows(ops, "input_layernorm"), [("0-60", 61)])
        self.assertEqual(rows(ops, "gate_proj"), [("0-2", 3)])
        self.assertEqual(rows(ops, "router"), [("3-60", 58)])
        # a layer's two residual adds are two places (after attention, after the MLP)
        self.assertEqual(rows(ops, "residual_add"), [("0-60", 61), ("0-60", 61)])

    def test_kimi_k3_rows(self):
        # 93 layers, 69 KDA and 24 gated MLA (every fourth from layer 3, with 92), in 24
        # distinct layers (the attention-residual position differs): the KDA projections are
        # one group of 69 layers, the MLA ones one of 24; 111 rows, not one per layer group.
        ops = ledger.operators(load_model("kimi-k3"), Workload(tokens=8))
        self.assertEqual(rows(ops, "f_a_proj"), [("69 layers in 0-90", 69)])
        self.assertEqual(rows(ops, "q_a_proj"), [("24 layers in 3-92", 24)])
        self.assertEqual(rows(ops, "post_attention_layernorm"), [("0-92", 93)])
        self.assertEqual(len(ops), 111)

    def test_block_groups_by_hand(self):
        # Layers A = (n, x, r, r) at 0 and 2, B = (n, y, r, r) at 1: n over 0-2, x over 0 and 2,
        # y over 1, each residual place r over 0-2 (first seen first).
        from infracalc.arch import Layer
        from infracalc.blocks.basic import Residual, RMSNorm

        n, r = RMSNorm("n", 8), Residual(8)
        x, y = RMSNorm("x", 8), RMSNorm("y", 8)
        a, b = Layer((n, x, r, r)), Layer((n, y, r, r))
        got = block_groups([(a, 2, (0, 2)), (b, 1, (1,))])
        self.assertEqual(got, [(n, 3, (0, 1, 2)), (x, 2, (0, 2)), (r, 3, (0, 1, 2)), (r, 3, (0, 1, 2)),
                               (y, 1, (1,))])

    def test_device_rows_are_the_shard_ledger(self):
        # a pipeline stage's device rows (global labels) are the shard's ledger rows
        arch = load_model("kimi-k3")
        lay = layout.Layout(tp=8, ep=8, dp=8, pp=3)
        w = Workload(tokens=8)
        for stage in layout.stages(arch, lay):
            dev = layout.device_operators(arch, lay, stage, w)
            own = ledger.operators(layout.shard(arch, lay, stage), w)
            self.assertEqual([o.replace(layers="") for o in dev], [o.replace(layers="") for o in own])
            self.assertEqual(sum(o.repeats for o in dev), sum(o.repeats for o in own))


if __name__ == "__main__":
    unittest.main()

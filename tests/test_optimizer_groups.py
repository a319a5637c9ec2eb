"""`budget optimizer`: Muon / AdamW groups of a checkpoint and one update step's arithmetic; expected values
derived by hand in the comments (the book's v4-optimizer-* per-matrix references give the same)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses import optimizer_groups as og  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402


def groups(model, *extra):
    status, out, err = run_cli("budget", "optimizer", "--model", model, *extra, "--format", "json")
    assert status == 0, err
    return json.loads(out)["result"]


class MuonArithmetic(unittest.TestCase):
    def test_mhc_mixer_matrix(self):
        # 24 x 16384, m = 24, n = 16384, 10 steps: 10 (4 x 576 x 16384 + 2 x 13,824) = 377,763,840 matrix FLOPs;
        # scalars 11 x 393,216 + 10 (3 x 576 + 2 x 393,216) = 4,325,376 + 7,881,600 = 12,206,976
        self.assertEqual(og.muon_matrix(24, 16384, 10), (377763840, 12206976))

    def test_row_matrix_and_orientation(self):
        # a 1 x 128 row: 10 (4 x 128 + 2) = 5,140; 11 x 128 + 10 (3 + 256) = 3,998
        self.assertEqual(og.muon_matrix(1, 128, 10), (5140, 3998))
        # the smaller Gram: 4096 x 2048 is computed as 2048 x 4096
        self.assertEqual(og.muon_matrix(4096, 2048, 10), og.muon_matrix(2048, 4096, 10))
        self.assertEqual(og.muon_matrix(2048, 4096, 1)[0], 4 * 2048 ** 2 * 4096 + 2 * 2048 ** 3)


class Families(unittest.TestCase):
    def test_rules(self):
        self.assertEqual(og.family("embed.weight", (129280, 4096), "embedding", "unresolved", "unresolved"), "adamw")
        self.assertEqual(og.family("layers.0.attn_norm.weight", (4096,), "vector", "unresolved", "unresolved"), "adamw")
        self.assertEqual(og.family("layers.0.hc_attn_fn", (24, 16384), "vector", "unresolved", "unresolved"), "muon")
        self.assertEqual(og.family("layers.0.attn.attn_sink", (64,), "vector", "row-muon", "unresolved"), "muon")
        self.assertEqual(og.family("hc_head_fn", (4, 16384), "vector", "unresolved", "adamw"), "adamw")
        self.assertEqual(og.family("layers.3.ffn.gate.e_score_correction_bias", (256,), "vector", "adamw", "adamw"),
                         "external")
        self.assertIsNone(og.family("layers.0.ffn.gate.tid2eid", (129280, 6), "table", "adamw", "adamw"))

    def test_v4_flash_groups(self):
        r = groups("deepseek-v4-flash")
        # grouping conserves the checkpoint's parameters (tid2eid holds none)
        self.assertEqual(r["parameters"], load_model("deepseek-v4-flash").params)
        by = {(g["pattern"], tuple(g["tensor_shape"])): g for g in r["groups"]}
        # wo_a [8192, 4096] in 8 output groups of [1024, 4096]: 10 (4 x 1024^2 x 4096 + 2 x 1024^3) x 8 x 43
        wo_a = by[("layers.{i}.attn.wo_a.weight", (8192, 4096))]
        self.assertEqual((wo_a["matrix_shape"], wo_a["matrices_per_tensor"]), ([1024, 4096], 8))
        self.assertEqual(wo_a["matrix_flops"], 10 * (4 * 1024 ** 2 * 4096 + 2 * 1024 ** 3) * 8 * 43)
        # experts: 256 matrices per stacked tensor, 43 x 256 = 11,008 of 2048 x 4096 (the book's count)
        experts = by[("layers.{i}.ffn.experts.gate_proj.weight", (256, 2048, 4096))]
        self.assertEqual(experts["tensors"] * experts["matrices_per_tensor"], 11008)
        self.assertEqual(experts["matrix_flops"], 9455799998873600)
        # AdamW: 14 per parameter; the embedding 129,280 x 4096 = 529,530,880 -> 7,413,432,320
        self.assertEqual(by[("embed.weight", (129280, 4096))]["scalar_ops"], 7413432320)
        self.assertIsNone(by[("layers.{i}.attn.attn_sink", (64,))]["scalar_ops"])

    def test_declared_sink(self):
        # row-muon: 61 V4-Pro sinks of 128 -> 61 x 5,140 = 313,540 matrix FLOPs, 61 x 3,998 = 243,878 scalars
        r = groups("deepseek-v4-pro", "--sink", "row-muon", "--head-mixer", "adamw")
        sink = next(g for g in r["groups"] if g["pattern"] == "layers.{i}.attn.attn_sink")
        self.assertEqual((sink["matrix_flops"], sink["scalar_ops"], sink["matrix_shape"]), (313540, 243878, [1, 128]))
        head = next(g for g in r["groups"] if g["pattern"] == "hc_head_fn")
        self.assertEqual((head["family"], head["scalar_ops"]), ("adamw", 14 * 4 * 28672))


if __name__ == "__main__":
    unittest.main()

"""Exact collective sizes and times the mutation check (scripts/mutation_check.py) found no
unit test pinning: each expected value is derived by hand in the comment beside it."""

import unittest

from support import load_model  # noqa: F401  (sets the path)

from infracalc import comm
from infracalc.analyses import stage_comm
from infracalc.collectives import Collective, ep_collectives, tp_collectives
from infracalc.layout import Layout, stages
from infracalc.load.hardware import load_device

US = 1e-6


class Sizes(unittest.TestCase):
    def test_tp_buffer_takes_the_activation_bytes(self):
        # [3 tokens, 5 hidden] of 1-byte (fp8) activations: S = 15 B per all-reduce, one after the
        # attention and one after the MLP of each of 4 layers, and the embedding's one (4-byte: 60 B)
        for act in (1, 4):
            got = {(c.name, c.bytes, c.count) for c in
                   tp_collectives(3, 5, act, tp=2, sp=False, layers=4, tier="up")}
            self.assertEqual(got, {("TP embedding all-reduce (vocab-parallel)", 15 * act, 1),
                                   ("TP all-reduce after attention", 15 * act, 4),
                                   ("TP all-reduce after MLP", 15 * act, 4)})

    def test_ep_copies_are_whole(self):
        # 3 tokens x top-1 spread over a TP group of 2: one rank sends ceil(3/2) = 2 copies of
        # hidden 4 x 2 bytes = 16 B (not 1 copy: the compute split rounds up too)
        dispatch, combine = ep_collectives(3, 1, 4, 2, ep=2, moe_layers=1, tier="up", share=2)
        self.assertEqual((dispatch.bytes, combine.bytes), (16, 16))
        # 5 tokens x top-3 over 4 ranks: ceil(15/4) = 4 copies x 8 B = 32 B
        self.assertEqual(ep_collectives(5, 3, 4, 2, ep=2, moe_layers=1, tier="up", share=4)[0].bytes, 32)

    def test_head_gathers_the_padded_vocabulary(self):
        # GPT-2's 50,257-word vocabulary over TP 4: each rank holds ceil(50257/4) = 12,565 rows, so the
        # logits all-gather of 3 requests' last positions carries 3 x 4 x 12,565 x 2 B = 301,560 B
        arch = load_model("gpt2")
        lay = Layout(tp=4)
        (stage,) = stages(arch, lay)
        t = stage_comm.Traffic(hidden=arch.hidden_size, act_bytes=2, tiers=("up",) * 3 + (1, 1, 1),
                               kv_dtype=None, kv_path="naive")
        cs = stage_comm.top_collectives(arch, lay, stage, 3, t, head_tokens=3)
        (head,) = [c for c in cs if "head logits" in c.name]
        self.assertEqual(head.bytes, 3 * 4 * 12565 * 2)


class RingAcrossDomains(unittest.TestCase):
    def test_slow_scale_up_binds_the_ring(self):
        # 2 nodes x 8 H100 with the NVLink slowed to 100 GB/s: an all-gather of S = 2^30 over n = 16
        # ranks, g = 8 per node. Per byte of ring traffic the NICs take 1/(g B_o) = 1/(8 x 50e9) =
        # 2.5e-12 s and the links inside the node (g-1)/(g B_u) = 7/(8 x 100e9) = 8.75e-12 s: the
        # slower binds. t = (n-1)/n S x 8.75e-12 + (n-1) alpha_o = 15/16 x 2^30 x 8.75e-12 + 15 x 2.7 us
        links = comm.links(load_device("h100-sxm"), link_bw_up=100e9)
        c = Collective("ag", "all_gather", 1 << 30, 16, "out", local=8)
        t = comm.time_s(c, links["out"], "ring", up=links["up"])
        self.assertAlmostEqual(t / US, (15 / 16 * (1 << 30) * 8.75e-12 + 15 * 2.7e-6) / US, places=6)


if __name__ == "__main__":
    unittest.main()

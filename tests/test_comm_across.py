"""Collectives across scale-up domains: multi-rail rings, tree, two-level, NVLS-tree, SHARP,
all-to-all with concurrent sends, and the lower bound (infracalc.comm; docs/communication.md).

Every expected value is derived by hand in the comment beside it from the formula there.
"""

import unittest

import support  # noqa: F401  (puts calculations/ on sys.path)
from infracalc import comm
from infracalc.collectives import Collective, token_bytes
from infracalc.errors import UserError
from infracalc.layout import Layout
from infracalc.load.hardware import load_device

US = 1e-6
S = 1 << 30
H100 = comm.links(load_device("h100-sxm"))
H800 = comm.links(load_device("h800"))


def ar(n, local, size=S, tier="out"):
    return Collective("ar", "all_reduce", size, n, tier, local=local)


class TwoNodesEightRails(unittest.TestCase):
    """2 nodes x 8 H100, one 400 Gb/s NIC per GPU (8 rails per node): B_o = 50 GB/s per rank,
    B_u = 450 GB/s, alpha_o = 2.7 us, alpha_u = 0.6 us, g = 8, m = 2, n = 16."""

    def setUp(self):
        self.c = ar(16, 8)
        self.out, self.up = H100["out"], H100["up"]

    def test_multi_rail_ring(self):
        # 2(n-1)/n = 1.875; NIC share per byte 1/(8 x 50e9) = 2.5e-12 s beats NVLink's
        # 0.875/450e9 = 1.944e-12 s: 1.875 x 2^30 x 2.5e-12 = 5,033.16 us, + 30 x 2.7 = 81 us.
        t = comm.time_s(self.c, self.out, "ring", up=self.up)
        self.assertAlmostEqual(t / US, 1.875 * S * 2.5e-12 / US + 81, places=6)
        # busbw = S/t x 1.875 = 393.7 GB/s: the node's 8 NICs, not one (50 GB/s).
        self.assertAlmostEqual(comm.busbw(self.c, t) / 1e9, 393.7, delta=0.05)

    def test_flat_ring_is_one_nic(self):
        # g = 1 (the old model, e.g. a DP group with TP 8 inside the node): 1.875 S / 50e9 + 81 us.
        t = comm.time_s(ar(16, 1), self.out, "ring", up=self.up)
        self.assertAlmostEqual(t / US, 1.875 * S / 50e9 / US + 81, places=6)

    def test_tree_two_level_nvls_tree(self):
        # tree, m = 2 (t_m = 1): S max(1/400e9, 2/450e9) + 2 (1 x 2.7 + 7 x 0.6) us
        #   = 4,772.19 + 13.8 us: the chain's two sends per rank over NVLink bind, not the NICs.
        t = comm.time_s(self.c, self.out, "tree", up=self.up)
        self.assertAlmostEqual(t / US, 2 * S / 450e9 / US + 13.8, places=6)
        # two_level: 2 x 7/8 S / 450e9 + 2 x 1/2 x S / 400e9 + 2 x 7 x 0.6 + 2 x 1 x 2.7 us
        #   = 4,175.66 + 2,684.35 + 8.4 + 5.4 us.
        t = comm.time_s(self.c, self.out, "two_level", up=self.up)
        self.assertAlmostEqual(t / US, (1.75 * S / 450e9 + S / 400e9) / US + 13.8, places=6)
        # nvls_tree: max(S / (450e9 x 0.85), 1 x S / 400e9) + 25 + 2 x 1 x 2.7 us
        #   = 2,807.17 + 30.4 us: what the estimate picks on two nodes.
        t = comm.time_s(self.c, self.out, "nvls_tree", up=self.up)
        self.assertAlmostEqual(t / US, S / 382.5e9 / US + 30.4, places=6)
        self.assertEqual(comm.choose(self.c, self.out, up=self.up), ("nvls_tree", t))

    def test_bound(self):
        # max(2(m-1)/m S/(8 x 50e9), 1 x 15/16 S/(450e9 + 50e9)) + ceil(log2 2) x 2.7 us
        #   = max(2,684.35, 2,013.27) + 2.7 us (NVLS counts as in-network reduction: e = 1).
        t = comm.lower_bound_s(self.c, self.out, self.up)
        self.assertAlmostEqual(t / US, S / 400e9 / US + 2.7, places=6)
        # busbw 1.875 x S / (2,684.35 + 2.7 us) = 749.25 GB/s >= 430 GB/s measured (NVIDIA/nccl issue #1221).
        self.assertAlmostEqual(comm.busbw(self.c, t) / 1e9, 749.25, delta=0.01)
        self.assertEqual(comm.run_s(self.c, H100, "bound"), t)

    def test_four_nodes(self):
        # m = 4: ring 2 x 31/32 S / 400e9 + 62 x 2.7 us; bound max(1.5 S/400e9, 31/32 S/500e9)
        # + 2 x 2.7 us; NCCL measures 320-331 GB/s busbw there (NVIDIA/nccl issue #1221), bound
        # busbw 1.9375 x S / (4,026.53 + 5.4 us) = 515.97 GB/s.
        c = ar(32, 8)
        self.assertAlmostEqual(comm.time_s(c, self.out, "ring", up=self.up) / US,
                               1.9375 * S / 400e9 / US + 62 * 2.7, places=6)
        t = comm.lower_bound_s(c, self.out, self.up)
        self.assertAlmostEqual(t / US, 1.5 * S / 400e9 / US + 5.4, places=6)
        self.assertAlmostEqual(comm.busbw(c, t) / 1e9, 515.97, delta=0.01)

    def test_all_gather_bound(self):
        # all-gather of S over 16 ranks, 8 per node: max(1/2 S/400e9, 15/16 S/500e9) + 2.7 us
        #   = max(1,342.18, 2,013.27) + 2.7: the rank's own links bind here.
        c = Collective("ag", "all_gather", S, 16, "out", local=8)
        self.assertAlmostEqual(comm.lower_bound_s(c, self.out, self.up) / US,
                               15 / 16 * S / 500e9 / US + 2.7, places=6)

    def test_sharp_collnet(self):
        # With a reducing scale-out switch: collnet max(S/382.5e9, S/400e9) + 25 + 2 x 2.7 us;
        # the bound's inter-node term drops to S/(8 x 50e9) with r = 1 (m = 2: unchanged here),
        # and for m = 4 from 1.5 S/400e9 to S/400e9.
        out = self.out.replace(in_network_reduce=True)
        t = comm.time_s(self.c, out, "collnet", up=self.up)
        self.assertAlmostEqual(t / US, S / 382.5e9 / US + 30.4, places=6)
        c4 = ar(32, 8)
        self.assertAlmostEqual(comm.lower_bound_s(c4, out, self.up) / US,
                               max(S / 400e9, 31 / 32 * S / 500e9) / US + 5.4, places=6)

    def test_errors(self):
        with self.assertRaises(UserError):
            comm.time_s(ar(8, 1, tier="up"), self.up, "two_level")      # one domain
        with self.assertRaises(UserError):
            comm.time_s(ar(16, 8), self.out, "collnet", up=self.up)     # no SHARP in the data
        with self.assertRaises(UserError):
            Collective("ar", "all_reduce", S, 16, "out", local=17)     # more per domain than ranks


class TreeAcrossNodes(unittest.TestCase):
    """The double binary tree's NIC bytes: per direction a domain's NICs carry S on two domains
    (each tree one edge: S/2 up one tree, S/2 down the other), 2 S beyond (interior in one tree:
    2 x S/2 in from its children and S/2 up, then the reverse; a leaf in the other: S/2 each way)."""

    def test_one_rank_per_node(self):
        # g = 1 over 50 GB/s: m = 2, S/50e9 + 2 x 1 x 2.7 us = 21,474.84 + 5.4 us (the ring's
        # bandwidth term 2(n-1)/n S/B is the same S/50e9 at n = 2).
        out = H100["out"]
        t = comm.time_s(ar(2, 1), out, "tree", up=H100["up"])
        self.assertAlmostEqual(t / US, S / 50e9 / US + 5.4, places=6)
        # m = 4: 2 S/50e9 + 2 x 2 x 2.7 us = 42,949.67 + 10.8 us.
        t = comm.time_s(ar(4, 1), out, "tree", up=H100["up"])
        self.assertAlmostEqual(t / US, 2 * S / 50e9 / US + 10.8, places=6)
        # never below the bound (its floor is the ring's 2(m-1)/m S/B_o = 1.5 S/50e9 here)
        self.assertGreaterEqual(t, comm.lower_bound_s(ar(4, 1), out, H100["up"]))


class HostLinkCap(unittest.TestCase):
    """A rank's NIC traffic crosses its own PCIe host link (NVIDIA/nccl-tests issue #232: one H100
    per node, four 400 Gb/s NICs, busbw about 50 GB/s): B_o = min(NICs, host link)."""

    def test_four_nics_behind_one_pcie_gen5_x16(self):
        out = comm.links(load_device("h100-sxm"), link_bw_out=200e9)["out"]
        # min(200, 64) GB/s: PCIe Gen5 x16 per direction
        self.assertEqual(out.bytes_per_s, 64_000_000_000)
        self.assertEqual(out.host_bytes_per_s, 64_000_000_000)
        self.assertIn("capped at the PCIe Gen5 x16 host link's 64 GB/s", out.assumptions[-1])
        # the bound of the row: all-reduce of 32 MiB over 2 ranks, one per node: the floor
        # max(2(m-1)/m S/(g B_o), 2 (n-1)/n S/B_o) + 1 x 2.7 us = 2^25/64e9 + 2.7 us = 527.0 us
        # <= 808.2 us measured (it was 2^25/200e9 + 2.7 = 170.5 us before the cap)
        c = Collective("ar", "all_reduce", 1 << 25, 2, "out", local=1)
        self.assertAlmostEqual(comm.lower_bound_s(c, out, None) / US, (1 << 25) / 64e9 / US + 2.7, places=6)

    def test_one_nic_per_gpu_is_unchanged_and_l40s_is_capped(self):
        # H100: 50 GB/s of NIC under a 64 GB/s link: the NIC's figure, no note
        out = H100["out"]
        self.assertEqual((out.bytes_per_s, out.assumptions), (50_000_000_000, ()))
        # L40S: a 400 Gb/s NIC behind PCIe Gen4 x16 (32 GB/s)
        l40s = comm.links(load_device("l40s"))["out"]
        self.assertEqual(l40s.bytes_per_s, 32_000_000_000)
        # GB200's host link is NVLink-C2C, not PCIe: no cap, no host figure
        gb = comm.links(load_device("gb200"))["out"]
        self.assertEqual((gb.bytes_per_s, gb.host_bytes_per_s), (50_000_000_000, 0))


class ExpertParallelAllToAll(unittest.TestCase):
    """EP 64 on H800, 8 GPUs per node: B_u = 200 GB/s, B_o = 50 GB/s, alpha_o = 2.7 us."""

    def test_ep64_eight_per_node(self):
        c = Collective("a2a", "all_to_all", S, 64, "out", local=8)
        out, up = H800["out"], H800["up"]
        # direct: max(7/64 S/200e9, 56/64 S/50e9) + 2.7 us = 18,790.3 + 2.7 us; NVLink share 587.2 us.
        t = comm.time_s(c, out, "direct", up=up)
        self.assertAlmostEqual(t / US, 56 / 64 * S / 50e9 / US + 2.7, places=6)
        # ring (pairwise rounds): the same bytes, 63 x 2.7 us of latency.
        self.assertAlmostEqual(comm.time_s(c, out, "ring", up=up) / US, 56 / 64 * S / 50e9 / US + 63 * 2.7,
                               places=6)
        self.assertEqual(comm.lower_bound_s(c, out, up), t)
        # Before: the peers in the node went through the NIC too: 63/64 S / 50e9.
        flat = comm.time_s(c.replace(local=1), out, "direct", up=up)
        self.assertAlmostEqual(flat / US, 63 / 64 * S / 50e9 / US + 2.7, places=6)

    def test_inside_one_node_one_round(self):
        # EP 8 inside the node: 7/8 S / 200e9 + 0.6 us (one round), not 7 x 0.6 us.
        c = Collective("a2a", "all_to_all", 1 << 20, 8, "up")
        self.assertAlmostEqual(comm.time_s(c, H800["up"], "direct") / US, 7 / 8 * 2**20 / 200e9 / US + 0.6,
                               places=6)
        self.assertEqual(comm.choose(c, H800["up"])[0], "direct")

    def test_deepep_formats(self):
        # FP8 with one fp32 scale per 128 values: 7168 + 4 x 56 = 7,392 B; BF16 14,336 B.
        self.assertEqual(token_bytes(7168, "fp8", 2), 7392)
        self.assertEqual(token_bytes(7168, "bf16", 1), 14336)
        self.assertEqual(token_bytes(7168, "", 2), 14336)
        self.assertEqual(token_bytes(100, "fp8", 2), 100 + 4)    # ceil(100/128) = 1 scale
        cs = comm.ep_collectives(128, 8, 7168, 2, ep=256, moe_layers=58, tier="out", experts=256,
                                 dispatch_token_bytes=7392, combine_token_bytes=14336, local=8)
        # DeepEP's low-latency table setting: 128 tokens x 8 copies x 7,392 B = 7,569,408 B out,
        # x 14,336 B = 14,680,064 B back.
        self.assertEqual([c.bytes for c in cs], [7_569_408, 14_680_064])
        self.assertEqual({c.local for c in cs}, {8})


class RanksPerDomain(unittest.TestCase):
    def test_layout_groups(self):
        # 256 devices, 8 per domain. TP 8 DP 32: the DP group's members are 8 apart: one per node.
        lay = Layout(tp=8, dp=32)
        self.assertEqual(comm.ranks_per_domain(lay, "dp", 8), 1)
        self.assertEqual(comm.ranks_per_domain(lay, "tp", 8), 1)      # fits: unused
        # TP 1 DP 256: 8 consecutive DP ranks per node.
        self.assertEqual(comm.ranks_per_domain(Layout(dp=256), "dp", 8), 8)
        # TP 2 DP 128: stride 2, ceil(8/2) = 4 per node.
        self.assertEqual(comm.ranks_per_domain(Layout(tp=2, dp=128), "dp", 8), 4)
        # EP 64 over TP 1 DP 64: the EP group is 64 consecutive ranks: 8 per node.
        self.assertEqual(comm.ranks_per_domain(Layout(dp=64, ep=64), "ep", 8), 8)
        # EP 16 over TP 2 DP 8 CP 2 (order tp-cp-ep-dp-pp): tp blocks of 2 every dp stride 4:
        # 2 x ceil(8/4) = 4 per node.
        self.assertEqual(comm.ranks_per_domain(Layout(tp=2, dp=8, cp=2, ep=16), "ep", 8), 4)


if __name__ == "__main__":
    unittest.main()


class NodeDedup(unittest.TestCase):
    def test_node_share_by_hand(self):
        from fractions import Fraction
        from math import comb

        from infracalc.collectives import node_share
        # DeepSeek-V3 EP 64, 8 per node: 8 nodes of 32 experts; a token misses a node with
        # P = C(224, 8) / C(256, 8); remote nodes 7 (1 - P) over 8 x 56/64 = 7 off-node copies.
        p = Fraction(comb(224, 8), comb(256, 8))
        self.assertAlmostEqual(node_share(256, 8, 64, 8), float(7 * (1 - p) / 7), places=15)
        self.assertAlmostEqual(node_share(256, 8, 64, 8), 0.662, places=3)
        # One node: nothing crosses a NIC to deduplicate.
        self.assertEqual(node_share(256, 8, 8, 8), 1.0)

    def test_bound_uses_the_share(self):
        # EP 64 on H800, 8 per node, S = 2^30: bound = 0.662 x 56/64 S / 50e9 + 2.7 us, below the
        # per-copy direct time; the estimate (ring, direct) is unchanged.
        cs = comm.ep_collectives(128, 8, 7168, 1, ep=64, moe_layers=1, tier="out", experts=256, local=8)
        c = cs[0]
        self.assertAlmostEqual(c.nic_share, 0.6618, places=4)
        out, up = H800["out"], H800["up"]
        t = comm.lower_bound_s(c, out, up)
        self.assertAlmostEqual(t, c.nic_share * c.bytes * 56 / 64 / 50e9 + 2.7 * US, places=15)
        self.assertEqual(comm.time_s(c, out, "direct", up=up),
                         comm.time_s(c.replace(nic_share=1.0), out, "direct", up=up))

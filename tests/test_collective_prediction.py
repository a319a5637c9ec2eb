"""The predicted collective (analyses/efficiency/collective): NCCL's tuner model, every value
below derived by hand from NVIDIA/nccl v2.28.3 src/graph/tuning.cc and src/graph/topo.h."""

import unittest

import support  # noqa: F401  (import path)

from infracalc import comm
from infracalc.collectives import Collective
from infracalc.analyses.efficiency import collective as EC
from infracalc.errors import UserError
from infracalc.load.hardware import load_device

US = 1e-6


def ar(nbytes, n, tier="up", local=1):
    return Collective("t", "all_reduce", nbytes, n, tier, local=local)


class Latency(unittest.TestCase):
    def setUp(self):
        self.h100 = load_device("h100-sxm")
        self.up = comm.links(self.h100)["up"]

    def test_ring_inside_one_nvlink_node(self):
        c = ar(1 << 20, 8)
        # base + 2(n-1) steps x NVLink hw latency: LL 6.6 + 14 x 0.6, LL128 14 + 14 x 1.9,
        # Simple 8.4 + 14 x 3.4
        self.assertAlmostEqual(EC.latency_s(c, "ring", "LL", self.up), 15.0 * US, places=12)
        self.assertAlmostEqual(EC.latency_s(c, "ring", "LL128", self.up), 40.6 * US, places=12)
        self.assertAlmostEqual(EC.latency_s(c, "ring", "Simple", self.up), 56.0 * US, places=12)

    def test_tree_chain_and_nvls_inside(self):
        c = ar(1 << 20, 8)
        # one node: the tree is a chain, base 8.4 + 2 x 7 x 4.0 (Simple)
        self.assertAlmostEqual(EC.latency_s(c, "tree", "Simple", self.up), 64.4 * US, places=12)
        # NVLS: its NVLink hardware latency alone, 25 us
        self.assertAlmostEqual(EC.latency_s(c, "in_network", "Simple", self.up), 25.0 * US, places=12)

    def test_ring_across_two_nodes(self):
        c = ar(1 << 20, 16, tier="out", local=8)
        # 30 steps, 2 of them across: 8.4 + 28 x max(3.4, 1.0 x 3) + 2 x 14 (NET ring Simple)
        self.assertAlmostEqual(EC.latency_s(c, "ring", "Simple", self.up), 131.6 * US, places=12)
        # LL: intra max(0.6, 1.0) = 1.0: 6.6 + 28 x 1.0 + 2 x 2.7
        self.assertAlmostEqual(EC.latency_s(c, "ring", "LL", self.up), 40.0 * US, places=12)
        # one rank per node (ppn 1): the tree's NET figure, 6.6 + 0 + 2 x 5.0 for two nodes of one
        one = ar(1 << 20, 2, tier="out", local=1)
        self.assertAlmostEqual(EC.latency_s(one, "ring", "LL", None), 16.6 * US, places=12)

    def test_tree_across(self):
        c = ar(1 << 20, 32, tier="out", local=8)
        # m = 4 nodes: 8.4 + 2 (7 x 4.0 + floor(log2 4) x 14)
        self.assertAlmostEqual(EC.latency_s(c, "tree", "Simple", self.up), 8.4 * US + 2 * (28 + 28) * US,
                               places=12)


class Bandwidth(unittest.TestCase):
    def test_protocol_shares(self):
        self.assertEqual(EC.protocol_factor("ring", "LL", False), 0.5)
        self.assertEqual(EC.protocol_factor("ring", "LL128", False), 0.92)
        self.assertEqual(EC.protocol_factor("ring", "Simple", True), 1.0)
        self.assertAlmostEqual(EC.protocol_factor("tree", "LL128", False), 0.92 * 7 / 9, places=15)
        self.assertAlmostEqual(EC.protocol_factor("tree", "LL128", True), 0.92 * 120 / 128, places=15)
        self.assertAlmostEqual(EC.protocol_factor("tree", "LL", True), 0.92 / 3.8, places=15)
        self.assertEqual(EC.protocols("in_network"), ("Simple",))

    def test_nccl_link_figures(self):
        # topo.h: SM90 20.6 of NVLink 4's 25 GB/s, SM100 40.1 of NVLink 5's 50, SM80 20.0 of 25
        for dev, want in (("h100-sxm", 20.6 / 25), ("b200", 40.1 / 50), ("a100-sxm-80gb", 0.8)):
            d = load_device(dev)
            self.assertAlmostEqual(EC.link_efficiency(dev, comm.links(d)["up"])[0], want, places=12)
        mi = load_device("mi300x")
        self.assertEqual(EC.link_efficiency("mi300x", comm.links(mi)["up"])[0], 1.0)


class NicPath(unittest.TestCase):
    def test_nccl_pcie_figure(self):
        # topo.cc: PCIe width x per-lane code / 80 GB/s; Gen5 (32 GT/s) code 240: 16 x 240 / 80 = 48
        # GB/s; Gen4 code 120: 24 GB/s. The NIC path is min(port, that):
        # H100, B200: min(50, 48) / 50 = 0.96; A100: min(25, 24) / 25 = 0.96
        for dev in ("h100-sxm", "b200", "a100-sxm-80gb"):
            self.assertAlmostEqual(EC.link_efficiency(dev, comm.links(load_device(dev))["out"])[0], 0.96,
                                   places=12, msg=dev)
        # L40S (link capped at 32): 24 / 32 = 0.75; four NICs behind one H100 (capped at 64): 48 / 64
        self.assertAlmostEqual(EC.link_efficiency("l40s", comm.links(load_device("l40s"))["out"])[0], 0.75)
        four = comm.links(load_device("h100-sxm"), link_bw_out=200e9)["out"]
        self.assertAlmostEqual(EC.link_efficiency("h100-sxm", four)[0], 0.75, places=12)
        # no PCIe host link published (H800) or NVLink-C2C (GB200): the port's own figure
        for dev in ("h800", "gb200"):
            self.assertEqual(EC.link_efficiency(dev, comm.links(load_device(dev))["out"])[0], 1.0)

    def test_forced_tree_two_nodes_one_gpu(self):
        # nccl-tests issue #232's row: 32 MiB over 2 H100s, one per node, NCCL_ALGO=Tree, 4 NICs.
        # Tree/Simple: latency 8.4 + 2 (0 x 4.0 + floor(log2 2) x 14) = 36.4 us; bandwidth
        # S max(1/(1 x B)) at B = 48 GB/s (NCCL's PCIe figure) over the tree's 0.92:
        # 2^25 / (48e9 x 0.92) = 759.78 us, + 36.4 = 796.18 us at residual 1.
        links = comm.links(load_device("h100-sxm"), link_bw_out=200e9)
        c = ar(1 << 25, 2, tier="out", local=1)
        t, name, proto = EC.predicted_s(c, links, "h100-sxm", residual=1.0, forced="tree")
        self.assertEqual((name, proto), ("tree", "Simple"))
        self.assertAlmostEqual(t / US, (1 << 25) / (48e9 * 0.92) / US + 36.4, places=6)
        # unforced, the ring wins: 36.4 us (base 8.4 + 2 x 14) + 2^25 / 48e9 = 735.4 us
        t, name, proto = EC.predicted_s(c, links, "h100-sxm", residual=1.0)
        self.assertEqual((name, proto), ("ring", "Simple"))
        self.assertAlmostEqual(t / US, (1 << 25) / 48e9 / US + 36.4, places=6)
        # a forced algorithm that does not apply is refused
        with self.assertRaises(UserError):
            EC.predicted_s(c, links, "h100-sxm", forced="nvls")

    def test_case_field_nccl_algo(self):
        # the schema takes NCCL_ALGO's names in lower case, nothing else
        from infracalc.analyses import case_schema
        check, what = case_schema.SETUP_FIELDS["nccl_algo"]
        for name in ("ring", "tree", "nvls", "nvlstree", "collnet"):
            self.assertTrue(check(name), name)
        for bad in ("Tree", "in_network", "nvls_tree", 1, None):
            self.assertFalse(check(bad), bad)
        # the issue #232 case is predicted as the tree it forced, its bound from every algorithm
        from infracalc.analyses import validate as V
        import os
        row = V.evaluate(V.load_case(os.path.join(V.VALIDATION_DIR, "nccltests232-allreduce-h100-sxm-x2-4nics.json")))
        self.assertEqual(row["predicted_cause"], "NCCL model: tree/Simple")
        self.assertAlmostEqual(row["bound"], ((1 << 25) / 64e9 + 2.7e-6) * 1e6, places=6)


class Predicted(unittest.TestCase):
    def setUp(self):
        self.h100 = load_device("h100-sxm")
        self.links = comm.links(self.h100)

    def test_large_all_reduce_is_nvls_at_nccls_figures(self):
        s = 8 << 30
        t, name, proto = EC.predicted_s(ar(s, 8), self.links, "h100-sxm", residual=1.0)
        # NVLS: 25 us + S / (450 GB/s x nvlsEfficiency 0.85 x 20.6/25)
        self.assertEqual((name, proto), ("in_network", "Simple"))
        self.assertAlmostEqual(t, 25e-6 + s / (450e9 * 0.85 * 0.824), delta=1e-9)
        # the residual divides the bandwidth term only
        t2, _, _ = EC.predicted_s(ar(s, 8), self.links, "h100-sxm", residual=0.5)
        self.assertAlmostEqual(t2, 25e-6 + 2 * s / (450e9 * 0.85 * 0.824), delta=1e-9)

    def test_small_all_reduce_is_ring_ll(self):
        s = 1024
        t, name, proto = EC.predicted_s(ar(s, 8), self.links, "h100-sxm", residual=1.0)
        # ring LL: 15.0 us + 2 x 7/8 x S / (450 GB/s x 0.824 x 0.5); tree LL 15.2 us, NVLS 25 us
        self.assertEqual((name, proto), ("ring", "LL"))
        self.assertAlmostEqual(t, 15e-6 + 2 * 7 / 8 * s / (450e9 * 0.824 * 0.5), delta=1e-12)

    def test_bus_bandwidth_rises_with_size_and_protocols_change(self):
        seen, last = [], 0.0
        for k in range(10, 34):
            c = ar(1 << k, 8)
            t, name, proto = EC.predicted_s(c, self.links, "h100-sxm")
            bus = comm.busbw(c, t)
            self.assertGreaterEqual(bus, last * (1 - 1e-12), msg=k)
            last = bus
            seen.append(proto)
        self.assertEqual(seen[0], "LL")
        self.assertEqual(seen[-1], "Simple")

    def test_never_below_the_bound(self):
        for dev in ("h100-sxm", "b200", "gb200", "a100-sxm-80gb", "mi300x", "h800", "l40s", "tpu-v5p"):
            d = load_device(dev)
            links = comm.links(d)
            domain = d.scale_up.domain_size if d.scale_up else 1
            for kind in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"):
                for k in (10, 16, 22, 28, 33):
                    groups = [("up", min(domain, 8), 1)] if domain > 1 else []
                    if links["out"] is not None and domain > 1:
                        groups.append(("out", 2 * min(domain, 8), min(domain, 8)))
                    for tier, n, local in groups:
                        if d.scale_up and d.scale_up.topology == "torus" and tier == "up":
                            n = 4
                        c = Collective("t", kind, 1 << k, n, tier, local=local if tier == "out" else 1)
                        up = links["up"]
                        link = up if tier == "up" else links["out"]
                        bound = comm.lower_bound_s(c, link, up)
                        t = EC.predicted_s(c, links, dev)[0]
                        self.assertGreaterEqual(t, bound, msg=(dev, kind, k, tier))


class CollectiveCommand(unittest.TestCase):
    def test_predicted_row_per_size(self):
        import json
        from support import run_cli

        out = json.loads(run_cli("collective", "all_reduce", "--ranks", "8", "--device", "h100-sxm",
                                 "--max-bytes", "64MiB", "--format", "json")[1])
        pred = [r for r in out["rows"] if r["predicted"]]
        bound = {r["bytes"]: r for r in out["rows"] if r["bound"]}
        self.assertEqual(len(pred), len(bound))
        # 1 KiB: ring LL, 15.0 us + 2 x 7/8 x 1024 B / (450 GB/s x 0.824 x 0.5 x residual)
        r = pred[0]
        self.assertEqual((r["bytes"], r["algorithm"]), (1024, "predicted ring/LL"))
        self.assertAlmostEqual(r["time_s"], 15e-6 + 1792 / (450e9 * 0.824 * 0.5 * EC.FITTED["all"]), delta=1e-12)
        for r in pred:
            self.assertGreaterEqual(r["time_s"], bound[r["bytes"]]["time_s"])
        self.assertTrue(any("Predicted" in c for c in out["conventions"]))


class ServingUsesIt(unittest.TestCase):
    def test_tp_comm_is_the_predicted_collective(self):
        from support import load_model
        from infracalc.analyses.efficiency import serving
        from infracalc.collectives import tp_collectives
        from infracalc.summation import plain_sum

        arch, d = load_model("llama-3.1-8b"), load_device("h100-sxm")
        got = serving.tp_comm(d, 8, arch)(1000)
        cs = tp_collectives(1000, arch.hidden_size, serving.TP_REDUCE_BYTES, tp=8, sp=False,
                            layers=len(arch.layers), tier="up")
        want = plain_sum(c.count * EC.predicted_s(c, comm.links(d), "h100-sxm")[0] for c in cs)   # the code's order
        self.assertEqual(got, want)
        best = sum(c.count * comm.time_s(c, comm.links(d)["up"], "best") for c in cs)
        self.assertGreater(got, best)


if __name__ == "__main__":
    unittest.main()


class MeasuredAllToAll(unittest.TestCase):
    """Item 4: NCCL's all-to-all on SM100 NVLink at the measured busbw (rapidsai/rapidsmpf #590:
    446.20 GB/s at 4 ranks, 383.43 at 8), no residual; topo.h's figure below 4 ranks, on SM90 and
    for a dispatcher that is not NCCL's all-to-all."""

    def setUp(self):
        self.b200 = load_device("b200")
        self.links = comm.links(self.b200)

    def a2a(self, n, nbytes=1 << 30):
        return Collective("t", "all_to_all", nbytes, n, "up", local=n)

    def test_rate_by_ranks(self):
        up = self.links["up"]
        self.assertIsNone(EC.a2a_busbw("b200", up, 2))
        self.assertEqual(EC.a2a_busbw("b200", up, 4), 446.20e9)
        self.assertEqual(EC.a2a_busbw("b200", up, 7), 446.20e9)
        self.assertEqual(EC.a2a_busbw("b200", up, 8), 383.43e9)
        self.assertEqual(EC.a2a_busbw("gb200", comm.links(load_device("gb200"))["up"], 64), 383.43e9)
        self.assertIsNone(EC.a2a_busbw("h100-sxm", comm.links(load_device("h100-sxm"))["up"], 8))
        self.assertIsNone(EC.a2a_busbw("b200", up, 8, "hybridep"))
        self.assertIsNone(EC.a2a_busbw("b200", self.links["out"], 16))

    def test_eight_ranks_by_hand(self):
        # direct, one Simple ring step: 8.4 + 3.4 us; bandwidth S (n-1)/n / 383.43 GB/s, no residual:
        # 1,073,741,824 x 7/8 = 939,524,096 B / 383.43e9 = 2,450.309 us
        t, name, proto = EC.predicted_s(self.a2a(8), self.links, "b200")
        self.assertEqual((name, proto), ("direct", "Simple"))
        self.assertAlmostEqual(t, 11.8e-6 + 939524096 / 383.43e9, places=12)
        # the same residual passed explicitly changes nothing (a measured rate)
        self.assertAlmostEqual(EC.predicted_s(self.a2a(8), self.links, "b200", residual=0.5)[0], t, places=15)

    def test_hybridep_at_its_published_rate(self):
        # HybridEP's B200 row (8 ranks, 16 SMs): 535.94 GB/s on the counted rows; a record without
        # rank_share counts all of S: 1,073,741,824 / 535.94e9, no latency, no residual
        t, name, _ = EC.predicted_s(self.a2a(8), self.links, "b200", residual=0.85, dispatcher="hybridep")
        self.assertEqual(name, "hybridep")
        self.assertAlmostEqual(t, 1073741824 / 535.94e9, places=15)

    def test_hybridep_without_a_row_keeps_topo_figure(self):
        # no HybridEP row on SM90: topo.h's 20.6 x 18 = 370.8 GB/s x the residual, the 11.8 us latency
        links = comm.links(load_device("h100-sxm"))
        t = EC.predicted_s(self.a2a(8), links, "h100-sxm", residual=0.85, dispatcher="hybridep")[0]
        self.assertAlmostEqual(t, 11.8e-6 + 939524096 / (370.8e9 * 0.85), places=12)

    def test_four_ranks_and_two(self):
        # 4 ranks: 3/4 S / 446.20 GB/s + 11.8 us
        t = EC.predicted_s(self.a2a(4), self.links, "b200")[0]
        self.assertAlmostEqual(t, 11.8e-6 + 805306368 / 446.20e9, places=12)
        # 2 ranks: topo.h's figure and the residual (the all-to-all of 2 is a ring step here or direct)
        t2 = EC.predicted_s(self.a2a(2), self.links, "b200", residual=1.0)[0]
        self.assertLess(t2, 536870912 / 700e9 + 20e-6)


class Dispatcher(unittest.TestCase):
    def test_case_field(self):
        from infracalc.analyses import case_schema
        check, _ = case_schema.SETUP_FIELDS["ep_dispatcher"]
        for name in ("alltoall", "hybridep", "deepep"):
            self.assertTrue(check(name), name)
        for bad in ("flex", "AllToAll", None):
            self.assertFalse(check(bad), bad)

    def test_pricing_key(self):
        from infracalc.analyses import train_time as T
        self.assertEqual(T.pricing("ring", "hybridep"), "ring")
        self.assertEqual(T.pricing("nccl", "alltoall"), "nccl")
        self.assertEqual(T.pricing("nccl", "deepep"), "nccl/deepep")
        with self.assertRaises(UserError):
            T.pricing("nccl", "flex")

    def test_only_ep_collectives_take_the_dispatcher(self):
        from infracalc.analyses import train_time as T
        b200 = load_device("b200")
        links = comm.links(b200)
        ep = Collective("ep", "all_to_all", 1 << 30, 8, "up", local=8, dim="ep")
        cp = Collective("cp", "all_to_all", 1 << 30, 8, "up", local=8, dim="cp")
        nccl = T.run_s(ep, links, "nccl", "b200")
        hybrid = T.run_s(ep, links, "nccl/hybridep", "b200")
        self.assertAlmostEqual(nccl, 11.8e-6 + 939524096 / 383.43e9, places=12)
        self.assertAlmostEqual(hybrid, 1073741824 / 535.94e9, places=15)   # HybridEP's B200 row
        # a collective of another dimension is NCCL's all-to-all whatever the EP dispatcher
        self.assertEqual(T.run_s(cp, links, "nccl/hybridep", "b200"), nccl)

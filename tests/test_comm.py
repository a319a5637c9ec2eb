"""Collectives and their alpha-beta cost (infracalc.comm, infracalc.collectives).

Every expected value is derived by hand in the comment beside it, from the formula named
there, never by calling the code under test a second way.
"""

import math
import unittest
from fractions import Fraction

import support  # noqa: F401  (puts calculations/ on sys.path)
from infracalc import comm
from infracalc.collectives import Collective
from infracalc.errors import UserError
from infracalc.load.hardware import load_device

H100 = load_device("h100-sxm")
US = 1e-6


def one(collectives, kind):
    [c] = [c for c in collectives if c.kind == kind]
    return c


class EpTest(unittest.TestCase):
    def test_qwen3_30b_a3b_dispatch_and_combine_per_token(self):
        # top-8 of 128, hidden 2048, bf16, ep 8: S = 8 * 2048 * 2 = 32,768 B per token (sent +
        # kept); 7/8 of the copies leave the rank: 8 * 2048 * 2 * 7/8 = 28,672 B.
        cs = comm.ep_collectives(1, 8, 2048, 2, ep=8, moe_layers=48, tier="up", experts=128)
        self.assertEqual([c.name for c in cs], ["EP dispatch all-to-all", "EP combine all-to-all"])
        for c in cs:
            self.assertEqual((c.kind, c.bytes, c.group, c.count), ("all_to_all", 32768, 8, 48))
            self.assertEqual(comm.wire_bytes(c), 28672)
        # Linear in tokens: 4096 tokens send 4096 * 28,672 = 117,440,512 B per dispatch.
        c = comm.ep_collectives(4096, 8, 2048, 2, ep=8, moe_layers=48, tier="up")[0]
        self.assertEqual(comm.wire_bytes(c), 117_440_512)

    def test_distinct_destination_ranks_exact(self):
        # P(rank missed) = C(112, 8) / C(128, 8) = prod_{i<8} (112 - i) / (128 - i).
        miss = Fraction(1)
        for i in range(8):
            miss *= Fraction(112 - i, 128 - i)
        self.assertEqual(comm.distinct_devices(128, 8, 8), 8 * (1 - miss))
        self.assertAlmostEqual(float(8 * (1 - miss)), 5.3, delta=0.1)   # sanity: about 5.3 ranks
        self.assertEqual(comm.distinct_devices(128, 1, 8), 1)           # one expert: one rank
        self.assertEqual(comm.distinct_devices(128, 8, 128), 8)         # one expert per rank: k ranks
        self.assertEqual(comm.distinct_devices(128, 8, 1), 1)
        self.assertEqual(comm.distinct_devices(64, 33, 2), 2)           # k > m = 32: both ranks always hit

    def test_dedup_never_sends_more_than_per_copy(self):
        for experts, k, ep in ((128, 8, 8), (256, 8, 32), (8, 2, 8), (64, 6, 4), (128, 1, 16)):
            with self.subTest(experts=experts, k=k, ep=ep):
                per_copy = comm.ep_collectives(1000, k, 1024, 2, ep=ep, moe_layers=1, tier="up", experts=experts)[0]
                dedup = comm.ep_collectives(1000, k, 1024, 2, ep=ep, moe_layers=1, tier="up", dedup=True,
                                            experts=experts)[0]
                self.assertLessEqual(dedup.bytes, per_copy.bytes)
                # S = ceil(tokens * hidden * bytes * E[distinct ranks]).
                expect = math.ceil(1000 * 1024 * 2 * comm.distinct_devices(experts, k, ep))
                self.assertEqual(dedup.bytes, expect)

    def test_hot_experts_skew(self):
        # Concentrated: all tokens pick experts 0..7, which sit on rank 0 (16 experts per rank):
        # rank 0 receives all copies, 8 times the mean: skew = ep * min(k, m) / k = 8.
        c = comm.ep_collectives(64, 8, 2048, 2, ep=8, moe_layers=1, tier="up", routing="concentrated", experts=128)[0]
        self.assertEqual(c.skew, 8.0)
        # Histogram: 4 experts on 2 ranks, loads 3,1 | 0,0: rank 0 has all: skew = 2 * 4/4 = 2.
        c = comm.ep_collectives(64, 1, 16, 2, ep=2, moe_layers=1, tier="up", routing="histogram", experts=4,
                                loads=(3, 1, 0, 0))[0]
        self.assertEqual(c.skew, 2.0)
        link = comm.links(H100, alpha_up=0)["up"]
        even = comm.ep_collectives(64, 1, 16, 2, ep=2, moe_layers=1, tier="up", experts=4)[0]
        self.assertAlmostEqual(comm.time_s(c, link) / comm.time_s(even, link), 2.0)

    def test_errors(self):
        with self.assertRaises(UserError):
            comm.ep_collectives(1, 8, 2048, 2, ep=6, moe_layers=1, tier="up",
                                experts=128)      # 6 does not divide 128
        with self.assertRaises(UserError):
            comm.ep_collectives(1, 8, 2048, 2, ep=8, moe_layers=1, tier="up", dedup=True)       # experts unknown
        with self.assertRaises(UserError):
            comm.ep_collectives(1, 8, 2048, 2, ep=8, moe_layers=1, tier="up", dedup=True, routing="concentrated",
                                experts=128)


class CostTest(unittest.TestCase):
    def test_ring_all_reduce_8_h100_alpha_zero(self):
        # 134,217,728 B over 8 ranks at 450 GB/s per direction: 2 * 7/8 = 1.75;
        # 1.75 * 134,217,728 / 450e9 = 521.9578 us.
        link = comm.links(H100, alpha_up=0)["up"]
        c = Collective("ar", "all_reduce", 134_217_728, 8, "up")
        t = comm.time_s(c, link)
        self.assertAlmostEqual(t / US, 521.96, places=2)
        # nccl-tests: algbw = S / t = 450e9 / 1.75; busbw = algbw * 2(n-1)/n = the link, 450e9.
        self.assertAlmostEqual(comm.algbw(c, t), 450e9 / 1.75, delta=1)
        self.assertAlmostEqual(comm.busbw(c, t), 450e9, delta=1)

    def test_busbw_equals_link_for_every_ring_collective(self):
        # At alpha = 0 busbw is the per-rank link bandwidth for all ring collectives (nccl-tests'
        # definition of busbw is built so).
        link = comm.links(H100, alpha_up=0)["up"]
        for kind in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "p2p"):
            with self.subTest(kind=kind):
                c = Collective(kind, kind, 1 << 30, 8, "up")
                self.assertAlmostEqual(comm.busbw(c, comm.time_s(c, link)) / 450e9, 1.0, places=12)

    def test_alpha_terms(self):
        # H100 NVLink alpha = 0.6 us (NCCL Ring LL): an 8-rank all-reduce of 0 bytes... use 8 B:
        # 2 * 7 steps * 0.6 us = 8.4 us plus 1.75 * 8 / 450e9 (negligible).
        link = comm.links(H100)["up"]
        self.assertEqual(link.alpha_s, 0.6 * US)
        c = Collective("ar", "all_reduce", 8, 8, "up")
        self.assertAlmostEqual(comm.time_s(c, link) / US, 8.4 + 1.75 * 8 / 450e9 / US, places=9)
        ag = Collective("ag", "all_gather", 8, 8, "up")
        self.assertAlmostEqual(comm.time_s(ag, link) / US, 4.2 + 0.875 * 8 / 450e9 / US, places=9)
        p2p = Collective("p", "p2p", 450_000, 2, "up")     # 1 us + 0.6 us
        self.assertAlmostEqual(comm.time_s(p2p, link) / US, 1.6, places=9)

    def test_tree_and_in_network_and_best(self):
        link = comm.links(H100)["up"]
        big = Collective("ar", "all_reduce", 134_217_728, 8, "up")
        # NVLS: S / (450e9 * 0.85) + 25 us = 350.896 + 25 = 375.896 us.
        self.assertAlmostEqual(comm.time_s(big, link, "in_network") / US, 134_217_728 / 382.5e9 / US + 25, places=6)
        self.assertEqual(comm.choose(big, link)[0], "in_network")
        # 1 MiB: ring 1.75 * 2^20 / 450e9 + 14 * 0.6 us = 4.078 + 8.4 = 12.48 us;
        # tree 2 * 2^20 / 450e9 + 2 * 3 * 0.6 us = 4.660 + 3.6 = 8.26 us; NVLS 2.74 + 25 = 27.7 us.
        small = Collective("ar", "all_reduce", 1 << 20, 8, "up")
        self.assertAlmostEqual(comm.time_s(small, link, "tree") / US, 2 * 2**20 / 450e9 / US + 3.6, places=9)
        self.assertEqual(comm.choose(small, link)[0], "tree")
        a100 = comm.links(load_device("a100-sxm-80gb"))["up"]
        with self.assertRaises(UserError):
            comm.time_s(big, a100, "in_network")                       # no NVLS on NVSwitch gen 2
        self.assertEqual(comm.applicable(big, a100), ["ring", "tree"])

    def test_tiers(self):
        self.assertEqual(comm.tier(8, H100), "up")
        self.assertEqual(comm.tier(16, H100), "out")
        self.assertEqual(comm.tier(72, load_device("gb200")), "up")
        # Across nodes a group runs at the NIC: 50 GB/s (1 x 400 Gb/s per GPU); 16 ranks, alpha 0:
        # all-gather 15/16 * 1.6e9 / 50e9 = 30 ms.
        out = comm.links(H100, alpha_out=0)["out"]
        self.assertEqual(out.alpha_s, 0.0)
        c = Collective("ag", "all_gather", 1_600_000_000, 16, "out")
        self.assertAlmostEqual(comm.time_s(c, out), 0.030, places=12)
        # No scale-out link on TPU v4 unless one is given (the PCIe cards state their PCIe link as
        # the default scale-out tier: tests/test_hardware_data.py).
        rtx = load_device("tpu-v4")
        self.assertIsNone(comm.links(rtx)["out"])
        with self.assertRaises(UserError):
            comm.time_s(c, comm.links(rtx)["out"])
        given = comm.links(rtx, link_bw_out=25e9)["out"]
        self.assertEqual((given.bytes_per_s, given.alpha_s), (25_000_000_000, comm.DEFAULT_ALPHA_S))
        self.assertIn("alpha not published", given.assumptions[0])

    def test_overrides(self):
        link = comm.links(H100, alpha_up=2e-6, link_bw_up=100e9, comm_efficiency=0.5)["up"]
        # 2 * 7/8 * 1e9 / (100e9 * 0.5) + 14 * 2 us = 35 ms + 28 us.
        c = Collective("ar", "all_reduce", 1_000_000_000, 8, "up")
        self.assertAlmostEqual(comm.time_s(c, link), 0.035 + 28e-6, places=12)
        for bad in ({"alpha_up": -1}, {"link_bw_up": 0}, {"comm_efficiency": 1.5}):
            with self.subTest(bad=bad), self.assertRaises(UserError):
                comm.links(H100, **bad)

    def test_mesh_uses_the_links_to_group_members(self):
        # MI300X: 7 links of 64 GB/s; a group of 4 uses 3 of them: 192 GB/s. All-reduce of
        # 1.92e9 B at alpha 0 (none published; overridden): 1.5 * 1.92e9 / 192e9 = 15 ms.
        mi = load_device("mi300x")
        link = comm.links(mi, alpha_up=0)["up"]
        self.assertEqual(link.topology, "mesh")
        c4 = Collective("ar", "all_reduce", 1_920_000_000, 4, "up")
        self.assertAlmostEqual(comm.time_s(c4, link), 0.015, places=12)
        c8 = Collective("ar", "all_reduce", 1_920_000_000, 8, "up")   # 1.75 * 1.92e9 / 448e9
        self.assertAlmostEqual(comm.time_s(c8, link), 1.75 * 1.92e9 / 448e9, places=12)
        self.assertIn("alpha not published", comm.links(mi)["up"].assumptions[0])

    def test_tpu_torus_axis(self):
        v5e = load_device("tpu-v5e")
        link = comm.links(v5e)["up"]
        # Full 16-chip axis wraps: bidirectional ring over 2 links of 4.5e10 B/s:
        # all-gather 15/16 * 1.44e9 / 9e10 = 15 ms, + 8 hops * 1 us.
        ag = Collective("ag", "all_gather", 1_440_000_000, 16, "up")
        self.assertAlmostEqual(comm.time_s(ag, link), 0.015 + 8e-6, places=12)
        ar = Collective("ar", "all_reduce", 1_440_000_000, 16, "up")     # twice the all-gather
        self.assertAlmostEqual(comm.time_s(ar, link), 2 * (0.015 + 8e-6), places=12)
        # 8 chips: no wraparound: one link, 7 hops: 7/8 * 3.6e9 / 4.5e10 = 70 ms + 7 us.
        ag8 = Collective("ag", "all_gather", 3_600_000_000, 8, "up")
        self.assertAlmostEqual(comm.time_s(ag8, link), 0.070 + 7e-6, places=12)
        # All-to-all on the wrapped axis, S = 9e8 per rank: floor(256/4) * 9e8/16 / 9e10 = 40 ms
        # + 8 us; about 1/4 of an all-gather of the whole 16 * 9e8 array (15/16*1.44e10/9e10 = 150 ms).
        a2a = Collective("a2a", "all_to_all", 900_000_000, 16, "up")
        self.assertAlmostEqual(comm.time_s(a2a, link), 0.040 + 8e-6, places=12)
        # 2D group of 16 x 16 = 256 chips, both axes wrap: all-gather over 2 axes x 2 links:
        # 255/256 * 2.56e9 / (4 * 4.5e10) = 14.1667 ms, + 2 axes * 8 hops * 1 us.
        ag2 = Collective("ag", "all_gather", 2_560_000_000, 256, "up")
        self.assertAlmostEqual(comm.time_s(ag2, link, axes=2), 255 / 256 * 2.56e9 / 1.8e11 + 16e-6, places=12)
        # All-to-all over 16 x 16 (bisection of 16 rows x 2 links): floor(256/4) * S/16 / 9e10,
        # S = 9e8: 40 ms, the same as on one 16-chip axis; + 16 hops.
        a2a2 = Collective("a2a", "all_to_all", 900_000_000, 256, "up")
        self.assertAlmostEqual(comm.time_s(a2a2, link, axes=2), 0.040 + 16e-6, places=12)
        with self.assertRaises(UserError):
            comm.time_s(Collective("ag", "all_gather", 8, 200, "up"), link, axes=2)
        self.assertFalse(comm.wraparound(comm.links(load_device("tpu-v5p"))["up"], 2))
        self.assertTrue(comm.wraparound(comm.links(load_device("tpu-v5p"))["up"], 8))

    def test_bad_algorithm(self):
        c = Collective("ag", "all_gather", 8, 8, "up")
        link = comm.links(H100)["up"]
        for algorithm in ("tree", "in_network", "fastest"):
            with self.subTest(algorithm=algorithm), self.assertRaises(UserError):
                comm.time_s(c, link, algorithm)


class DeviceDataTest(unittest.TestCase):
    def test_bad_link_fields_are_one_line_errors(self):
        import json
        import os
        import tempfile
        with open(os.path.join(support.CALC, "hardware", "h100-sxm.json")) as f:
            base = json.load(f)
        for field, value in (("topology", "ring"), ("alpha_s", -1), ("in_network_reduce", "yes"),
                             ("links_per_device", 1.5)):
            data = json.loads(json.dumps(base))
            data["scale_up"][field] = value
            with self.subTest(field=field), tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "dev.json")
                with open(path, "w") as f:
                    json.dump(data, f)
                with self.assertRaises(UserError) as e:
                    load_device(path)
                self.assertIn(field if field != "topology" else "topology 'ring'", str(e.exception))

    def test_every_device_gives_links(self):
        # Devices without a published alpha (AMD, Gaudi 3) fall back to the stated default.
        for dev in ("mi355x", "gaudi3"):
            up = comm.links(load_device(dev))["up"]
            self.assertEqual(up.alpha_s, comm.DEFAULT_ALPHA_S)
        self.assertEqual(comm.links(load_device("tpu-v4"))["out"], None)
        rows = comm.describe()
        self.assertEqual(rows[0]["time"], "2(n-1)/n * S/B + 2(n-1) * alpha")


    def test_hardware_listing_shows_the_link_fields(self):
        from infracalc.analyses.hardware import device_summary
        up = device_summary(H100)["scale_up"]
        self.assertEqual((up["topology"], up["links_per_device"], up["bytes_per_s_per_link"]),
                         ("switch", 18, 25 * 10**9))               # 18 x 25 GB/s = 450 GB/s
        self.assertEqual((up["alpha_s"], up["in_network_reduce"], up["in_network_efficiency"]),
                         (0.6e-6, True, 0.85))
        self.assertEqual(device_summary(H100)["scale_out"]["nics_per_device"], 1)
        mi = device_summary(load_device("mi300x"))
        self.assertEqual((mi["scale_up"]["alpha_s"], mi["scale_out"]["alpha_s"]), (None, None))  # not published


class BuilderTest(unittest.TestCase):
    def test_tp_two_all_reduces_per_layer(self):
        # Llama-3.1-70B-like: 80 layers, hidden 8192, bf16, 2048 tokens: S = 2048*8192*2 = 33,554,432.
        cs = comm.tp_collectives(2048, 8192, 2, tp=8, sp=False, layers=80, tier="up", head_tokens=1, vocab=128256)
        self.assertEqual([(c.kind, c.bytes, c.count) for c in cs], [
            ("all_reduce", 33_554_432, 1), ("all_reduce", 33_554_432, 80), ("all_reduce", 33_554_432, 80),
            ("all_gather", 128256 * 2, 1)])
        self.assertEqual(comm.tp_collectives(2048, 8192, 2, tp=1, sp=False, layers=80, tier="up"), [])

    def test_sequence_parallelism_conserves_bytes_and_time(self):
        # RS + AG move (n-1)/n S each: together the 2(n-1)/n S of the all-reduce they replace,
        # in the same 2(n-1) steps, so the per-layer wire bytes and times are equal.
        link = comm.links(H100)["up"]
        ar = comm.tp_collectives(4096, 5120, 2, tp=4, sp=False, layers=64, tier="up", embedding=False)
        sp = comm.tp_collectives(4096, 5120, 2, tp=4, sp=True, layers=64, tier="up", embedding=False)
        wire = lambda cs: sum(comm.wire_bytes(c) * c.count for c in cs)
        time = lambda cs: sum(comm.time_s(c, link) * c.count for c in cs)
        self.assertEqual(wire(ar), 2 * 64 * 2 * 3 / 4 * 4096 * 5120 * 2)
        self.assertEqual(wire(sp), wire(ar))
        self.assertAlmostEqual(time(sp), time(ar), places=15)

    def test_pp_and_cp(self):
        [c] = comm.pp_collectives(2048, 8192, 2, 3, "out")
        self.assertEqual((c.kind, c.bytes, c.count, c.tier), ("p2p", 33_554_432, 3, "out"))
        # CP 4, 1024 tokens per rank, 4096 B of K/V per token per layer, 32 layers: each rank
        # passes its 4 MiB shard 3 times per layer: 96 p2p runs of 4,194,304 B.
        [c] = comm.cp_collectives(1024, 4096, 4, 32, "up")
        self.assertEqual((c.bytes, c.count), (4_194_304, 96))

    def test_cp_causal_balance(self):
        # c = 4, cp = 2: contiguous ranks do 4*5/2 = 10 and 16 + 10 = 26 pairs (sum 8*9/2 = 36);
        # zig-zag (h = 2, chunk j costs 4j + 3): ranks {0,3} = 3 + 15 and {1,2} = 7 + 11: 18 each.
        self.assertEqual(comm.cp_attention_pairs(4, 2), (10, 26))
        self.assertEqual(comm.cp_attention_pairs(4, 2, zigzag=True), (18, 18))
        for cp in (2, 3, 8):
            t = 512 * cp
            self.assertEqual(sum(comm.cp_attention_pairs(512, cp)), t * (t + 1) // 2)
            z = comm.cp_attention_pairs(512, cp, zigzag=True)
            self.assertEqual(sum(z), t * (t + 1) // 2)
            self.assertEqual(len(set(z)), 1)
        with self.assertRaises(UserError):
            comm.cp_attention_pairs(5, 2, zigzag=True)

    def test_dp_by_zero_stage(self):
        # Psi = 1e9 B of gradients over 8 ranks: stage 0 all-reduce and stages 1-2 RS + AG each
        # put 2 * 7/8 Psi on the wire; stage 3 adds a second all-gather: 3 * 7/8 Psi (1.5x).
        wire = lambda stage: sum(comm.wire_bytes(c) * c.count
                                 for c in comm.dp_gradient_collectives(10**9, 8, stage, "out"))
        self.assertEqual([wire(s) for s in range(4)], [1.75e9, 1.75e9, 1.75e9, 2.625e9])
        self.assertEqual(comm.dp_gradient_collectives(10**9, 1, 0, "out"), [])
        with self.assertRaises(UserError):
            comm.dp_gradient_collectives(10**9, 8, 4, "out")


if __name__ == "__main__":
    unittest.main()

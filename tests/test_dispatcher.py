"""The flex dispatcher's backends at their published rates (analyses/efficiency/dispatcher): every
value below is derived by hand from the tables (deepseek-ai/DeepEP README, 'Normal kernels with NVLink
and RDMA forwarding'; deepseek-ai/DeepEP Hybrid-EP_Implementation.md) and the benchmarks' byte counts."""

import os
import unittest
from fractions import Fraction

import support  # noqa: F401  (import path)

from infracalc import comm
from infracalc.collectives import Collective, ep_collectives, rank_share
from infracalc.analyses import train_time as T
from infracalc.analyses.efficiency import collective as EC
from infracalc.analyses.efficiency import dispatcher as D
from infracalc.load.hardware import load_device


def links(device_id):
    return comm.links(load_device(device_id))


def miss(held, experts, k):
    """P(none of a token's k experts, k distinct of E, is among `held` given ones), by the product."""
    p = Fraction(1)
    for i in range(k):
        p *= Fraction(experts - held - i, experts - i)
    return p


class Rates(unittest.TestCase):
    def test_deepep_h800_rows(self):
        up, out = links("h800")["up"], links("h800")["out"]
        self.assertEqual(D.rate("deepep", "h800", up, "up", 8, "dispatch"), 153e9)
        self.assertEqual(D.rate("deepep", "h800", up, "up", 8, "combine"), 158e9)
        self.assertEqual(D.rate("deepep", "h800", out, "out", 16, "dispatch"), 43e9)
        self.assertEqual(D.rate("deepep", "h800", out, "out", 48, "dispatch"), 58e9)   # the 32-rank row
        self.assertEqual(D.rate("deepep", "h800", out, "out", 64, "combine"), 50e9)
        self.assertEqual(D.rate("deepep", "h800", out, "out", 256, "dispatch"), 51e9)  # the largest row
        self.assertIsNone(D.rate("deepep", "h800", out, "out", 8, "dispatch"))        # below 16 ranks
        self.assertIsNone(D.rate("deepep", "h800", up, "up", 4, "dispatch"))

    def test_deepep_scaled_to_full_nvlink4(self):
        # 153 x 450 / 200 = 344.25, 158 x 450 / 200 = 355.5 GB/s (H100 SXM's 18 links over H800's 8)
        up = links("h100-sxm")["up"]
        self.assertAlmostEqual(D.rate("deepep", "h100-sxm", up, "up", 8, "dispatch"), 344.25e9, delta=1)
        self.assertAlmostEqual(D.rate("deepep", "h100-sxm", up, "up", 8, "combine"), 355.5e9, delta=1)
        # the same 50 GB/s NIC: the H800 row as it is
        self.assertEqual(D.rate("deepep", "h100-sxm", links("h100-sxm")["out"], "out", 64, "dispatch"), 51e9)
        # SM100: the HybridEP document's DeepEP B200 row at 24 SMs, B300 takes it; none on GB200
        self.assertEqual(D.rate("deepep", "b200", links("b200")["up"], "up", 8, "dispatch"), 494e9)
        self.assertAlmostEqual(D.rate("deepep", "b300", links("b300")["up"], "up", 64, "combine"), 420e9, delta=1)
        self.assertIsNone(D.rate("deepep", "gb200", links("gb200")["up"], "up", 8, "dispatch"))

    def test_hybridep_rows(self):
        gb = links("gb200")["up"]
        self.assertEqual(D.rate("hybridep", "gb200", gb, "up", 8, "dispatch"), 550.10e9)
        self.assertEqual(D.rate("hybridep", "gb200", gb, "up", 16, "combine"), 474.48e9)
        self.assertEqual(D.rate("hybridep", "gb200", gb, "up", 35, "dispatch"), 485.50e9)   # the 32-rank row
        self.assertEqual(D.rate("hybridep", "gb200", gb, "up", 64, "dispatch"), 469.96e9)   # 36, extrapolated
        self.assertEqual(D.rate("hybridep", "gb300", links("gb300")["up"], "up", 64, "combine"), 418.27e9)
        self.assertAlmostEqual(D.rate("hybridep", "b300", links("b300")["up"], "up", 8, "dispatch"), 535.94e9,
                               delta=1)
        self.assertIsNone(D.rate("hybridep", "gb200", gb, "up", 4, "dispatch"))
        self.assertIsNone(D.rate("hybridep", "h100-sxm", links("h100-sxm")["up"], "up", 8, "dispatch"))
        self.assertIsNone(D.rate("hybridep", "b200", links("b200")["out"], "out", 16, "dispatch"))
        # HybridEP over H100's RDMA (one 50 GB/s NIC per GPU), H800 and H200 take it
        h = links("h100-sxm")["out"]
        self.assertEqual(D.rate("hybridep", "h100-sxm", h, "out", 16, "dispatch"), 54.47e9)
        self.assertEqual(D.rate("hybridep", "h800", links("h800")["out"], "out", 32, "combine"), 52.53e9)
        self.assertEqual(D.rate("hybridep", "h200", links("h200")["out"], "out", 128, "dispatch"), 41.24e9)
        self.assertIsNone(D.rate("hybridep", "h100-sxm", h, "out", 8, "dispatch"))
        self.assertIsNone(D.rate("alltoall", "b200", links("b200")["up"], "up", 8, "dispatch"))

    def test_sm_share(self):
        self.assertEqual(D.sm_share("deepep", "h800"), 20 / 132)
        self.assertEqual(D.sm_share("hybridep", "gb200"), 16 / 148)
        self.assertEqual(D.sm_share("alltoall", "h800"), 0.0)
        self.assertEqual(D.sm_share("deepep", "no-such-device"), 0.0)


class CountedBytes(unittest.TestCase):
    def test_rank_share(self):
        # Qwen3-30B-A3B at EP 8: 16 experts per rank, top-8 of 128: 1 - C(112, 8) / C(128, 8)
        self.assertAlmostEqual(rank_share(128, 8, 8), float(1 - miss(16, 128, 8)), places=15)
        self.assertAlmostEqual(rank_share(128, 8, 8), 0.6674196, places=7)
        (d, c) = ep_collectives(8192, 8, 2048, 2, ep=8, moe_layers=1, tier="up", experts=128)
        self.assertEqual((d.rank_share, c.rank_share), (rank_share(128, 8, 8),) * 2)
        # already one copy per rank (dedup), or no experts given: 1
        (d, _) = ep_collectives(8192, 8, 2048, 2, ep=8, moe_layers=1, tier="up", experts=128, dedup=True)
        self.assertEqual(d.rank_share, 1.0)
        (d, _) = ep_collectives(8192, 8, 2048, 2, ep=8, moe_layers=1, tier="up")
        self.assertEqual(d.rank_share, 1.0)

    def test_h100_intranode_floors_at_the_bound(self):
        # S = 8192 x 8 x 2048 x 2 = 268,435,456; DeepEP counts S x 0.66742 at 344.25 GB/s = 520.4 us,
        # below the bound's S x 7/8 / 450 GB/s = 521.96 us (the bound knows no one-copy-per-rank send):
        # the prediction is the bound
        (d, c) = ep_collectives(8192, 8, 2048, 2, ep=8, moe_layers=1, tier="up", experts=128)
        lk = links("h100-sxm")
        share = float(1 - miss(16, 128, 8))
        self.assertAlmostEqual(D.seconds(d, lk, "h100-sxm", "deepep"), 268435456 * share / 344.25e9, places=12)
        self.assertAlmostEqual(D.seconds(c, lk, "h100-sxm", "deepep"), 268435456 * share / 355.5e9, places=12)
        t, name, _ = EC.predicted_s(d, lk, "h100-sxm", dispatcher="deepep")
        self.assertEqual(name, "deepep")
        bound = comm.lower_bound_s(d, lk["up"], lk["up"])
        self.assertAlmostEqual(bound, 268435456 * 7 / 8 / 450e9 + lk["up"].alpha_s, places=12)
        self.assertGreater(bound, D.seconds(d, lk, "h100-sxm", "deepep"))
        self.assertEqual(t, bound)

    def test_h800_internode_by_hand(self):
        # DeepSeek-V3 at EP 64, 8 per node: S = 4096 x 8 x 7,392 (FP8 + scales) = 242,221,056 dispatch,
        # 4096 x 8 x 14,336 = 469,762,048 combine; counted S x nic_share, nic_share = 1 - C(224, 8)/C(256, 8)
        # (7 remote nodes x (1 - miss(32)) over 8 x 56/64 = 7 off-node copies)
        (d, c) = ep_collectives(4096, 8, 7168, 2, ep=64, moe_layers=1, tier="out", experts=256,
                                dispatch_token_bytes=7392, combine_token_bytes=14336, local=8)
        self.assertEqual((d.bytes, c.bytes), (242221056, 469762048))
        share = float(1 - miss(32, 256, 8))
        self.assertAlmostEqual(d.nic_share, share, places=12)
        lk = links("h800")
        self.assertAlmostEqual(D.seconds(d, lk, "h800", "deepep"), 242221056 * share / 51e9, places=12)
        self.assertAlmostEqual(D.seconds(c, lk, "h800", "deepep"), 469762048 * share / 50e9, places=12)
        # the bound (NIC bytes at 50 GB/s) is below: the prediction is the rate's
        self.assertAlmostEqual(EC.predicted_s(d, lk, "h800", dispatcher="deepep")[0], 242221056 * share / 51e9,
                               places=12)

    def test_skew_scales_the_time(self):
        c = Collective("EP dispatch all-to-all", "all_to_all", 1 << 30, 8, "up", local=8, dim="ep", skew=2.0)
        self.assertAlmostEqual(D.seconds(c, links("gb200"), "gb200", "hybridep"), 2 * (1 << 30) / 550.10e9,
                               places=15)
        self.assertEqual(D.direction(c), "dispatch")
        self.assertEqual(D.direction(c.replace(name="EP combine all-to-all")), "combine")


class SmOccupancy(unittest.TestCase):
    def timed(self, ep_s, tp_s=0.0):
        ep = Collective("EP dispatch all-to-all", "all_to_all", 1, 8, "up", local=8, dim="ep")
        tp = Collective("TP all-gather", "all_gather", 1, 8, "up", local=8, dim="tp")
        return [T.Timed(ep, "forward", ep_s), T.Timed(tp, "forward", tp_s)]

    def test_exposed_is_the_lost_compute_or_the_excess(self):
        hide = ("tp", "ep")
        # compute 20 ms, EP 10 ms at a 0.15 SM share: max(10 - 20, 10 x 0.15) = 1.5 ms
        got = T._pass_of(self.timed(0.010), T.Pass(forward=0.020), hide, ep_sm_share=0.15)
        self.assertAlmostEqual(got.forward, 0.0015, places=15)
        # compute 5 ms: the excess, 5 ms
        got = T._pass_of(self.timed(0.010), T.Pass(forward=0.005), hide, ep_sm_share=0.15)
        self.assertAlmostEqual(got.forward, 0.005, places=15)
        # TP's 4 ms hidden with it: max(14 - 20, 1.5) = 1.5 ms (TP takes no SMs here)
        got = T._pass_of(self.timed(0.010, 0.004), T.Pass(forward=0.020), hide, ep_sm_share=0.15)
        self.assertAlmostEqual(got.forward, 0.0015, places=15)
        # no share (NCCL's all-to-all): hidden entirely
        self.assertEqual(T._pass_of(self.timed(0.010), T.Pass(forward=0.020), hide).forward, 0.0)

    def test_deepseek_v3_step_charges_the_sms(self):
        # DeepSeek-V3 on H800 (DualPipe overlaps the EP all-to-all): the forward's exposed EP is its
        # seconds x 20/132 wherever that exceeds the excess over compute
        from infracalc.analyses import validate as V, validate_predict as VP
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "deepseek-v3-report-pretrain-h800-x2048.json"))
        _, t = VP.training_prediction(case)
        st = t.stages[t.bottleneck]
        ep = sum(x.seconds for x in st.collectives if x.collective.dim == "ep" and x.phase == "forward")
        other = sum(x.seconds for x in st.collectives if x.collective.dim != "ep" and x.phase == "forward")
        self.assertAlmostEqual(st.comm.forward, other + max(ep - st.compute.forward, ep * 20 / 132), places=12)


if __name__ == "__main__":
    unittest.main()

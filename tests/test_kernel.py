"""`gemm` and `attention`: one kernel's FLOPs, bytes, intensity, ridge point and
bound, derived by hand; `forward --per-layer`; `hardware` ridge points."""

import csv
import io
import json
import unittest

from support import run_cli, write_config


def rec(*argv):
    status, out, err = run_cli(*argv, "--format", "json")
    assert status == 0, err
    return json.loads(out)


def row(r, device):
    return next(d for d in r["devices"] if d["id"] == device)


class Gemm(unittest.TestCase):
    def test_q_projection_m256(self):
        # [256,4096] x [4096,4096] bf16: 2*256*4096*4096 = 8,589,934,592 FLOPs;
        # bytes 2*(256*4096 + 4096*4096 + 256*4096) = 37,748,736; I = 227.555... FLOP/B.
        r = rec("gemm", "--m", "256", "--k", "4096", "--n", "4096", "--device", "h100-sxm",
                "--device", "a100-sxm-80gb")
        w = r["work"]
        self.assertEqual(w["matrix_flops"], 2 * 256 * 4096 * 4096)
        self.assertEqual((w["act_bytes_read"], w["weight_bytes_read"], w["act_bytes_written"]),
                         (2 * 256 * 4096, 2 * 4096 * 4096, 2 * 256 * 4096))
        self.assertEqual(w["bytes_moved"], 37_748_736)
        self.assertAlmostEqual(w["arithmetic_intensity_flops_per_byte"], 8_589_934_592 / 37_748_736, places=12)
        # H100 SXM: ridge 989.5e12 / 3.35e12 = 295.37 > 227.6: memory-bound,
        # 37,748,736 / 3.35e12 = 11.268 us.
        h = row(r, "h100-sxm")
        self.assertAlmostEqual(h["ridge_point_flops_per_byte"], 989.5e12 / 3.35e12, places=9)
        self.assertEqual(h["bound"], "memory")
        self.assertAlmostEqual(h["time_s"] / (37_748_736 / 3.35e12), 1, places=12)
        # A100: ridge 312e12 / 2.039e12 = 153.0 < 227.6: compute-bound, 8.59e9 / 312e12 = 27.532 us.
        a = row(r, "a100-sxm-80gb")
        self.assertEqual(a["bound"], "compute")
        self.assertAlmostEqual(a["time_s"] / (8_589_934_592 / 312e12), 1, places=12)

    def test_q_projection_m1_int8_g128_weights(self):
        # M = 1, weights int8 with one BF16 scale per 128 values of each row:
        # 4096*4096 + 4096 rows * 32 groups * 2 B = 17,039,360 B; input/output bf16 8,192 B each.
        w = rec("gemm", "--m", "1", "--k", "4096", "--n", "4096", "--weight-dtype", "int8-g128")["work"]
        self.assertEqual(w["matrix_flops"], 33_554_432)
        self.assertEqual(w["weight_bytes_read"], 17_039_360)
        self.assertEqual(w["bytes_moved"], 17_039_360 + 2 * 8192)
        self.assertEqual(w["compute_dtype"], "bf16")

    def test_output_format(self):
        # fp8 input and weight, bf16 output [8, 16]: 8*32 + 32*16 + 2*8*16 B; compute at fp8.
        r = rec("gemm", "--m", "8", "--k", "32", "--n", "16", "--input-dtype", "fp8",
                "--weight-dtype", "fp8", "--output-dtype", "bf16")
        self.assertEqual(r["work"]["bytes_moved"], 256 + 512 + 256)
        self.assertEqual(row(r, "h100-sxm")["matrix_flops_per_s"], 1979 * 10**12)

    def test_device_all_marks_missing_units(self):
        r = rec("gemm", "--m", "1", "--k", "64", "--n", "64", "--input-dtype", "fp8", "--device", "all")
        a = row(r, "a100-sxm-80gb")   # Ampere has no FP8 tensor cores
        self.assertIsNone(a["time_s"])
        self.assertIn("no fp8 matrix unit", a["bound"])
        self.assertGreater(len(r["devices"]), 15)

    def test_unpublished_peak_is_unknown_not_a_placeholder(self):
        # A device that has bf16 but publishes no figure: compute unknown, bound = memory time.
        dev = write_config(self, {"id": "x", "name": "X", "matrix_flops_per_s": {"bf16": None},
                                  "vector_flops_per_s": {}, "memory_bytes": 10**9,
                                  "memory_bandwidth_bytes_per_s": 10**12})
        d = rec("gemm", "--m", "4096", "--k", "4096", "--n", "4096", "--device", dev)["devices"][0]
        self.assertIsNone(d["compute_time_s"])
        self.assertIsNone(d["ridge_point_flops_per_byte"])
        self.assertEqual(d["bound"], "memory; compute unknown")
        self.assertAlmostEqual(d["time_s"], 3 * 2 * 4096 * 4096 / 1e12, places=15)

    def test_storage_only_compute_is_an_error(self):
        status, _, err = run_cli("gemm", "--m", "1", "--k", "8", "--n", "8", "--input-dtype", "int4")
        self.assertEqual(status, 2)
        self.assertIn("storage-only", err)


class AttentionCore(unittest.TestCase):
    def test_decode_core_gqa(self):
        # One query over 8,192 keys, 32 heads, 8 KV heads, head dim 128, bf16:
        # QK^T and PV 2*32*128*8192 = 67,108,864 FLOPs each; softmax 5*32*8192 = 1,310,720;
        # bytes Q 32*128*2 = 8,192, K and V 8192*8*128*2 = 16,777,216 each, output 8,192.
        w = rec("attention", "--queries", "1", "--keys", "8192", "--heads", "32", "--kv-heads", "8",
                "--head-dim", "128")["work"]
        self.assertEqual(w["matrix_flops"], 2 * 67_108_864)
        self.assertEqual(w["vector_flops"], 1_310_720)
        self.assertEqual((w["act_bytes_read"], w["kv_bytes_read"], w["act_bytes_written"]),
                         (8192, 2 * 16_777_216, 8192))
        self.assertEqual(w["bytes_moved"], 33_570_816)

    def test_roofline_and_binding_side(self):
        # 256 queries over 8,192 keys (causal), 32 heads, 8 KV heads, dim 128, bf16:
        # pairs 256*(8192-256) + 256*257/2 = 2,064,512; matrix 4*128*32*pairs = 33,824,964,608,
        # softmax 5*32*pairs = 330,321,920 at the fp32 vector peak; bytes Q 2 MiB + K,V 32 MiB
        # + out 2 MiB = 37,748,736: intensity 896.1 (matrix) > H100's ridge 295.4, so compute-
        # bound: 33,824,964,608/989.5e12 + 330,321,920/67e12 = 39.114 us against 11.268 us.
        r = rec("attention", "--queries", "256", "--keys", "8192", "--heads", "32", "--kv-heads", "8",
                "--head-dim", "128")
        self.assertEqual((r["work"]["matrix_flops"], r["work"]["vector_flops"], r["work"]["bytes_moved"]),
                         (33_824_964_608, 330_321_920, 37_748_736))
        h = row(r, "h100-sxm")
        self.assertAlmostEqual(h["ridge_point_flops_per_byte"], 989.5e12 / 3.35e12, places=9)
        self.assertEqual(h["bound"], "compute")
        self.assertAlmostEqual(h["compute_time_s"] / (33_824_964_608 / 989.5e12 + 330_321_920 / 67e12), 1,
                               places=12)
        self.assertAlmostEqual(h["memory_time_s"] / (37_748_736 / 3.35e12), 1, places=12)
        self.assertEqual(h["time_s"], h["compute_time_s"])

    def test_causal_and_full_prefill(self):
        # T = K = 1024, 1 head, dim 64: causal pairs 1024*1025/2 = 524,800, rectangular
        # 1024^2 = 1,048,576; QK + PV 2 * 2*64*pairs.
        args = ("attention", "--queries", "1024", "--keys", "1024", "--heads", "1", "--head-dim", "64")
        causal, full = rec(*args)["work"], rec(*args, "--no-causal")["work"]
        self.assertEqual(causal["matrix_flops"], 4 * 64 * 524_800)
        self.assertEqual(causal["matrix_flops_rectangular"], 4 * 64 * 1_048_576)
        self.assertEqual(full["matrix_flops"], 4 * 64 * 1_048_576)
        self.assertEqual(full["vector_flops"], 5 * 1_048_576)
        self.assertEqual(causal["bytes_moved"], full["bytes_moved"])   # same operands

    def test_causal_needs_keys_at_least_queries(self):
        status, _, err = run_cli("attention", "--queries", "8", "--keys", "4", "--heads", "1",
                                 "--head-dim", "8")
        self.assertEqual(status, 2)
        self.assertIn("keys >= queries", err)


class PerLayerAndRidge(unittest.TestCase):
    def test_forward_per_layer(self):
        # Qwen3-8B, one token: q_proj of one layer is 2*4096*4096 FLOPs (36 layers share it);
        # the totals are the whole pass either way.
        per = rec("forward", "--model", "qwen3-8b", "--per-layer")
        whole = rec("forward", "--model", "qwen3-8b")
        q = next(o for o in per["operators"] if o["name"] == "q_proj")
        self.assertEqual((q["matrix_flops"], q["repeats"]), (2 * 4096 * 4096, 36))
        self.assertEqual(per["totals"], whole["totals"])
        total = sum(o["matrix_flops"] * o["repeats"] for o in per["operators"])
        self.assertEqual(total, whole["totals"]["matrix_flops"])

    def test_train_per_layer(self):
        # DeepSeek-V4-Flash, one sequence of 256 tokens: the ratio-128 compressor of one layer
        # (layers 3,5,...,41, x = 20) projects by wkv and wgate [4096 -> 512] each, so one
        # instance is 2*256*4096*512 = 1,073,741,824 forward matrix FLOPs per projection and the
        # backward (dX + dW) twice that; the whole-step figures do not change, and each per-layer
        # row times its x is the summed row.
        per = rec("train", "--model", "deepseek-v4-flash", "--seq", "256", "--per-layer")
        whole = rec("train", "--model", "deepseek-v4-flash", "--seq", "256")
        self.assertTrue(per["per_layer"])
        self.assertNotIn("per_layer", whole)
        rows = [o for o in per["operators_per_micro_batch"]
                if o["layers"] == "3,5,...,41" and o["name"] in ("attn.compressor.wkv", "attn.compressor.wgate")]
        self.assertEqual([(o["forward_matrix_flops"], o["backward_matrix_flops"], o["repeats"]) for o in rows],
                         [(2 * 256 * 4096 * 512, 4 * 256 * 4096 * 512, 20)] * 2)
        self.assertEqual(per["flops_per_step"], whole["flops_per_step"])
        for field in ("forward_matrix_flops", "backward_matrix_flops", "forward_vector_flops", "backward_vector_flops"):
            with self.subTest(field=field):
                self.assertEqual([o[field] * o["repeats"] for o in per["operators_per_micro_batch"]],
                                 [o[field] for o in whole["operators_per_micro_batch"]])

    def test_forward_per_layer_csv_names_its_columns(self):
        # A per-layer CSV row holds one instance (Qwen3-8B q_proj at one token: 2*4096*4096 =
        # 33,554,432 FLOPs and 4096*4096*2 B = 33,554,432 weight bytes), not the pass's
        # 36 x 33,554,432 = 1,207,959,552; its header must say so, since a CSV has no prose.
        status, out, _ = run_cli("forward", "--model", "qwen3-8b", "--per-layer", "--format", "csv")
        self.assertEqual(status, 0)
        q = next(r for r in csv.DictReader(io.StringIO(out)) if r["name"] == "q_proj")
        self.assertEqual(q["per_layer_matrix_flops"], str(2 * 4096 * 4096))
        self.assertEqual(q["per_layer_weight_bytes_read"], str(4096 * 4096 * 2))
        self.assertEqual(q["repeats"], "36")
        self.assertNotIn("matrix_flops", q)
        # the summed CSV keeps the plain names: 36 x 33,554,432
        status, out, _ = run_cli("forward", "--model", "qwen3-8b", "--format", "csv")
        q = next(r for r in csv.DictReader(io.StringIO(out)) if r["name"] == "q_proj")
        self.assertEqual(q["matrix_flops"], str(36 * 2 * 4096 * 4096))

    def test_hardware_ridge_points(self):
        d = rec("hardware", "--device", "h100-sxm")["devices"][0]
        self.assertAlmostEqual(d["ridge_point_flops_per_byte"]["bf16"], 989.5e12 / 3.35e12, places=9)
        self.assertAlmostEqual(d["ridge_point_flops_per_byte"]["fp8"], 1979e12 / 3.35e12, places=9)


class CrossoversAndRoom(unittest.TestCase):
    def test_three_crossovers_qwen3_8b_h100(self):
        # Qwen3-8B bf16 on H100 SXM, P = 1, G = 2 (one decode step at history 1).
        # Ridge-point estimate: 989.5e12 / 3.35e12 = 295.37 FLOP/B; bf16 weights are
        # 2 B per parameter, so B > 295.37 * (2P) / (2P): batch 296 (the book's figure).
        # Ideal bound, in closed form: per request 15,137,374,208 matrix FLOPs and
        # 5,004,544 vector FLOPs (at 67e12), 450,560 B (an embedding row 8,192, KV read
        # 294,912, KV written 147,456); shared weights 15,136,811,008 B. Compute-bound when
        # B * (15,137,374,208/989.5e12 + 5,004,544/67e12) > (15,136,811,008 + B * 450,560)/3.35e12,
        # i.e. B > 296.52: batch 297. Operator sum: 327 (test_decode, by hand).
        r = rec("decode", "--model", "qwen3-8b", "--input-len", "1", "--output-len", "2", "--batch-sweep")
        self.assertEqual((r["ridge_estimate_batch"], r["ideal_compute_bound_batch"], r["compute_bound_batch"]),
                         (296, 297, 327))

    def test_affine_ideal_crossover_equals_bisection(self):
        # The closed form (dense: totals affine in the batch) against bisection on ledgers.
        # Qwen3-8B, P = G = 128 on H100: 646 (ideal) while the operator sum says 346.
        from infracalc.analyses import decode as D, decode_sum
        from infracalc.analyses.roofline import roof
        from infracalc.load.hardware import load_device
        from infracalc.load.models import load_model
        from infracalc.workload import Workload
        arch, dev, w = load_model("qwen3-8b"), load_device("h100-sxm"), Workload()
        r = roof(dev, w.compute_dtype)
        rows = D.sweep(arch, w, dev, 128, 128)
        self.assertEqual((rows["ideal_compute_bound_batch"], rows["compute_bound_batch"]), (646, 346))

        def probe(b):
            return D.ideal_is_compute(decode_sum.decode_pieces(arch, w.replace(batch=b), 128, 254, check=False), r)
        self.assertTrue(probe(646))
        self.assertFalse(probe(645))

    def test_sweep_reserve_stops_at_the_books_capacity(self):
        # decode --batch-sweep --reserve: Qwen3-8B bf16, every request's cache at 8,192 tokens
        # (P = 8191, G = 2: P + G - 1), on an H100 read as its 80 GB label with the book's
        # fixed 2 GiB workspace: 80e9 - 16,381,470,720 - 2,147,483,648 = 61,471,045,632 B
        # // 1,207,959,552 B = 50 requests, the book's capacity-qwen3-8b-n8192 (80 GB, BF16).
        r = rec("decode", "--model", "qwen3-8b", "--input-len", "8191", "--output-len", "2",
                "--batch-sweep", "--reserve", "2GiB", "--memory-convention", "label")
        self.assertEqual(r["capacity"]["reserve_bytes"], 2 * 2**30)
        self.assertEqual(r["capacity"]["cache_room_bytes"], 61_471_045_632)
        self.assertEqual(r["capacity_batch"], 50)
        self.assertEqual(r["rows"][-1]["batch"], 50)

    def test_kv_room(self):
        # Qwen3-8B int8-g128 weights 9,544,230,912 B (the book's 8-bit) on an H100 read as
        # its 80 GB label (the book's convention) with a 2 GiB reserve:
        # 80e9 - 9,544,230,912 - 2,147,483,648 = 68,308,285,440 B left for the KV cache; at
        # 8,192 tokens a request takes 36 * 2 * 8 * 128 * 2 * 8192 = 1,207,959,552 B, so 56 fit
        # (the book's capacity table, 80 GB row).
        c = rec("kv", "--model", "qwen3-8b", "--context", "8192", "--reserve", "2147483648",
                "--weight-dtype", "int8-g128", "--memory-convention", "label")["capacity"]
        self.assertEqual(c["kv_cache_room_bytes"], 68_308_285_440)
        self.assertEqual(c["kv_bytes_per_request_per_device"], 1_207_959_552)
        self.assertEqual(c["max_requests"], 56)


if __name__ == "__main__":
    unittest.main()

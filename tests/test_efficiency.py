"""Efficiency models (analyses/efficiency): values derived from their published sources,
and the invariants that keep the prediction a separate figure that never beats the bound."""

import unittest

from support import Workload, load_model

from infracalc import ledger
from infracalc.analyses import decode_sum
from infracalc.analyses.efficiency import matmul, memory, predict
from infracalc.analyses.roofline import op_bound, roof
from infracalc.dtypes import DTYPES
from infracalc.load.hardware import load_device
from infracalc.ops import Op


class Mamf(unittest.TestCase):
    """stas00/ml-engineering:compute/accelerator/README.md, Maximum Achievable Matmul FLOPS table."""

    def fraction(self, device, fmt):
        d = load_device(device)
        return matmul.matmul_fraction(device, fmt, dict(d.matrix_flops_per_s)[fmt])

    def test_measured_devices(self):
        # H100 SXM BF16: 794.5 TFLOP/s measured over our file's dense peak 989.5
        self.assertAlmostEqual(self.fraction("h100-sxm", "bf16").value, 794.5 / 989.5, places=12)
        self.assertEqual(self.fraction("h100-sxm", "bf16")[1], "measured")
        # H100 SXM FP8: 1402.6 of 1979
        self.assertAlmostEqual(self.fraction("h100-sxm", "fp8").value, 1402.6 / 1979, places=12)
        # A100 SXM BF16: 271.2 of 312
        self.assertAlmostEqual(self.fraction("a100-sxm-80gb", "bf16").value, 271.2 / 312, places=12)
        # MI300X BF16: 668.4 over our 1307.4 (the table rounds the peak to 1300)
        self.assertAlmostEqual(self.fraction("mi300x", "bf16").value, 668.4 / 1307.4, places=12)

    def test_borrowed_figures_say_assumed(self):
        # H200 (same die as H100 SXM): the H100 table fraction 794.5 / 989
        f = self.fraction("h200", "bf16")
        self.assertAlmostEqual(f.value, 794.5 / 989, places=12)
        self.assertTrue(f[1].startswith("assumed (h100-sxm bf16"), f[1])
        # B200 FP4: no Blackwell measurement; FP4 borrows FP8 of H100: 1402.6 / 1979
        f = self.fraction("b200", "fp4")
        self.assertAlmostEqual(f.value, 1402.6 / 1979, places=12)
        self.assertIn("assumed", f[1])
        # Gaudi 3 FP8: the device's own BF16 figure (1288.8 / 1677)
        f = self.fraction("gaudi3", "fp8")
        self.assertAlmostEqual(f.value, 1288.8 / 1677, places=12)
        self.assertEqual(f[1], "assumed (bf16 of the same device)")
        # MI355X FP8 and FP4: MI325X's FP8 figure, 1519 of 2614.9
        for fmt in ("fp8", "fp4"):
            f = self.fraction("mi355x", fmt)
            self.assertAlmostEqual(f.value, 1519 / 2614.9, places=12)
            self.assertTrue(f[1].startswith("assumed (mi325x fp8"), f[1])

    def test_amd_maf_table(self):
        # ROCm/rocm-blogs measuring-max-achievable-flops-part2, Table 1 (hipBLASLt, FP8 at the
        # measured median clock): MI300X 1273 TFLOP/s, MI325X 1519, over our FP8 peak 2614.9
        for device, got in (("mi300x", 1273), ("mi325x", 1519)):
            f = self.fraction(device, "fp8")
            self.assertAlmostEqual(f.value, got / 2614.9, places=12)
            self.assertEqual(f[1], "measured")

    def test_l40s_own_measurements(self):
        # vllm-project/vllm pull request #6677 (one L40S): torch._scaled_mm's best time 45.50 us at
        # M, K, N = 512, 4096, 4096: 2 x 512 x 4096 x 4096 = 17,179,869,184 FLOPs / 45.50 us
        # = 377.5795 TFLOP/s, over the datasheet's dense FP8 733 TFLOP/s
        f = self.fraction("l40s", "fp8")
        self.assertAlmostEqual(f.value, 17_179_869_184 / 45.50e-6 / 733e12, places=12)
        self.assertAlmostEqual(f.value, 0.515115, places=6)
        self.assertEqual(f[1], "measured")
        self.assertIn("pull request #6677", f[2])
        # zzc0721/torch-performance-test-data database.md, the L40S row: BF16 269.15, FP16 264.02
        # TFLOP/s of the dense 362.05
        self.assertAlmostEqual(self.fraction("l40s", "bf16").value, 269.15 / 362.05, places=12)
        self.assertAlmostEqual(self.fraction("l40s", "fp16").value, 264.02 / 362.05, places=12)
        # INT8 has no measurement of its own: the device's FP8 figure, stated as assumed
        f = self.fraction("l40s", "int8")
        self.assertAlmostEqual(f.value, 17_179_869_184 / 45.50e-6 / 733e12, places=12)
        self.assertEqual(f[1], "assumed (fp8 of the same device)")

    def test_every_fraction_is_at_most_one(self):
        for device in matmul.SMS:
            d = load_device(device)
            for fmt, peak in d.matrix_flops_per_s:
                if peak:
                    self.assertLessEqual(matmul.matmul_fraction(device, fmt, peak).value, 1.0)


class Waves(unittest.TestCase):
    def test_partial_last_wave(self):
        # [2048, 4096] output, 128x128 tiles: 16 x 32 = 512 tiles; 132 SMs -> 4 waves = 528 slots
        self.assertAlmostEqual(matmul.wave_efficiency(2048, 4096, 132), 512 / 528, places=15)
        # 133 tiles on 132 SMs: 2 waves, the second nearly empty: 133 / 264
        self.assertAlmostEqual(matmul.wave_efficiency(133 * 128, 128, 132), 133 / 264, places=15)

    def test_exact_waves_and_split_k(self):
        self.assertEqual(matmul.wave_efficiency(128 * 132, 128, 132), 1.0)   # one full wave
        self.assertEqual(matmul.wave_efficiency(256, 1024, 132), 1.0)        # 16 tiles < 132: split-K
        self.assertEqual(matmul.wave_efficiency(2048, 4096, 0), 1.0)         # SM count unknown


class Hbm(unittest.TestCase):
    def test_flashmla_figure(self):
        # deepseek-ai/FlashMLA README: 3000 GB/s memory-bound on H800 SXM5 (3.35 TB/s datasheet)
        f, basis, _ = memory.hbm_fraction("h800", 3.35e12)
        self.assertAlmostEqual(f, 3000 / 3350, places=12)
        self.assertEqual(basis, "measured")
        f, basis, _ = memory.hbm_fraction("mi300x", 5.3e12)
        self.assertAlmostEqual(f, 3000 / 3350, places=12)
        self.assertTrue(basis.startswith("assumed"))

    def test_inline_ecc_keeps_the_data_share(self):
        # GDDR with inline ECC (L40S): 1/16 of the DRAM holds check bits, so 15/16 of a stream's
        # bytes are data: the borrowed H800 fraction 3000 / 3350 times 15/16 = 0.839552...
        f, basis, src = memory.hbm_fraction("l40s", 864e9)
        self.assertAlmostEqual(f, 3000 / 3350 * 15 / 16, places=12)
        self.assertAlmostEqual(f, 0.8395522388, places=10)
        self.assertIn("inline ECC", basis)
        self.assertIn("V100", src)
        # 864 GB/s x 0.83955 = 725.37 GB/s sustained
        rates = predict.achievable(load_device("l40s"), DTYPES["fp8"])
        self.assertAlmostEqual(rates.bytes_per_s, 864e9 * 3000 / 3350 * 15 / 16, places=0)
        # an HBM device (sideband ECC) keeps the fraction unscaled
        self.assertAlmostEqual(memory.hbm_fraction("h100-sxm", 3.35e12)[0], 3000 / 3350, places=12)

    def test_attention_in_16_bits_on_ada(self):
        # No FP8 fused attention on the L40S (TensorRT-LLM's FP8 context FMHA is Hopper-only;
        # FlashAttention-2 runs FP16/BF16 on Ada): attention at the BF16 peak 362.05 TFLOP/s
        # times FlashAttention-2's A100 fraction 0.73 = 264.2965 TFLOP/s, while the GEMMs run FP8
        rates = predict.achievable(load_device("l40s"), DTYPES["fp8"])
        self.assertAlmostEqual(rates.attention_flops_per_s, 0.73 * 362.05e12, places=0)
        self.assertIn(("attention (bf16)", 0.73), [b[:2] for b in rates.bases])
        self.assertAlmostEqual(rates.matrix_flops_per_s, 17_179_869_184 / 45.50e-6, places=0)
        # Hopper keeps its FP8 attention (FlashAttention-3: 1.2 PFLOP/s)
        h100 = predict.achievable(load_device("h100-sxm"), DTYPES["fp8"])
        self.assertAlmostEqual(h100.attention_flops_per_s, 1200e12, places=0)

    def test_attention_figures(self):
        # FlashAttention-3 abstract: 740 TFLOP/s FP16 (of 989), close to 1.2 PFLOP/s FP8 (of 1979)
        self.assertAlmostEqual(memory.attention_fraction("h100-sxm", "bf16")[0], 740 / 989, places=12)
        self.assertAlmostEqual(memory.attention_fraction("h100-sxm", "fp8")[0], 1200 / 1979, places=12)
        # FlashAttention-2 abstract: up to 73% of the A100 peak
        self.assertEqual(memory.attention_fraction("a100-sxm-80gb", "bf16")[0], 0.73)
        # FlashMLA README: 1460 TFLOP/s MHA prefill forward on B200 (2250 dense BF16)
        self.assertAlmostEqual(memory.attention_fraction("b200", "bf16")[0], 1460 / 2250, places=12)
        self.assertEqual(memory.attention_fraction("h200", "bf16")[1], "assumed (h100-sxm bf16)")


class EngineMemory(unittest.TestCase):
    def test_ecc_capacity_of_the_l40s(self):
        # modal-labs/modal-client pull request #2797: nvidia-smi reports 46,068 MiB on an L40S (ECC on,
        # the default); the device file keeps the physical 48 GiB for the bound
        l40s = load_device("l40s")
        self.assertEqual(memory.engine_memory_bytes(l40s), 46068 * 2**20)
        self.assertEqual(46068 * 2**20, 48_305_799_168)
        self.assertEqual(l40s.memory_bytes, 48 * 2**30)
        # an HBM device keeps ECC inline: its driver total is the device file's figure
        h100 = load_device("h100-sxm")
        self.assertEqual(memory.engine_memory_bytes(h100), h100.memory_bytes)

    def test_engine_room_on_the_l40s(self):
        # Llama 3.1 8B in FP8 (weights 9,081,200,640 B: the FP8 matrices and 16-bit embeddings and
        # norms) on an L40S: room = 0.9 x (48,305,799,168 - 9,081,200,640) = 35,302,138,675.2 B
        from infracalc.analyses.efficiency import serving
        fp8 = DTYPES["fp8"]
        w = Workload(batch=1, tokens=1, weight_dtype=fp8, act_dtype=fp8, kv_dtype=fp8)
        arch = load_model("llama-3.1-8b")
        self.assertEqual(arch.weight_bytes(w), 9_081_200_640)
        rec = serving.predicted_serving(arch, w, load_device("l40s"), 1000, 1000)
        self.assertEqual(rec["kv_room_bytes"], 35_302_138_675)


class OperatorTime(unittest.TestCase):
    def rates(self, **kw):
        base = dict(matrix_flops_per_s=800e12, attention_flops_per_s=700e12, vector_flops_per_s=60e12,
                    bytes_per_s=3e12, sms=132, kernel_s=2e-6)
        base.update(kw)
        return predict.Rates(**base)

    def test_gemm_by_hand(self):
        # [2048,4096]x[4096,4096]: 2*2048*4096*4096 FLOPs at 800 TFLOP/s x 512/528 (waves),
        # bytes 32 MiB + 16 MiB + 16 MiB at 3 TB/s is shorter; plus one kernel of 2 us
        flops = 2 * 2048 * 4096 * 4096
        op = Op("q_proj", "linear", "[2048,4096]x[4096,4096]", matrix_flops=flops,
                weight_read=2 * 4096 * 4096, act_read=2 * 2048 * 4096, act_write=2 * 2048 * 4096)
        expected = flops / (800e12 * 512 / 528) + 2e-6
        self.assertAlmostEqual(predict.op_time(op, self.rates()), expected, places=15)
        # over 32 layers: 32x the work, 32 kernels
        self.assertAlmostEqual(predict.op_time(op.times(32, "0-31"), self.rates()), 32 * expected, places=13)

    def test_memory_bound_and_attention(self):
        op = Op("rmsnorm", "vector", "[1,4096]", vector_flops=4 * 4096, act_read=8192, act_write=8192,
                weight_read=8192)
        self.assertAlmostEqual(predict.op_time(op, self.rates()), 3 * 8192 / 3e12 + 2e-6, places=18)
        att = Op("attn_qk", "attention", "x", matrix_flops=10**12, act_read=1)
        self.assertAlmostEqual(predict.op_time(att, self.rates()), 10**12 / 700e12 + 2e-6, places=15)
        # a row that moves nothing (softmax inside the fused kernel) launches nothing
        sm = Op("softmax", "vector", "x", vector_flops=6 * 10**9)
        self.assertAlmostEqual(predict.op_time(sm, self.rates()), 6e9 / 60e12, places=18)


class DeepGemmTable(unittest.TestCase):
    """The predicted time of an FP8 GEMM on H800 (the device's achievable rates at the product's
    4 us kernel cost) against deepseek-ai/DeepGEMM's published per-shape table (README.md,
    "Performance", "Normal GEMMs for dense models": H800, NVCC 12.8, FP8 inputs with 1x128 /
    128x128 scales, BF16 output), measured time = 2 M N K / the table's TFLOPS. Rows where the model
    holds: the weight-streaming decode shapes (M 64 and 128, N x K at least 8.6 M) and the long-K
    compute shapes (M 4096, K >= 7168). Two kinds of row it does not hold for, stated in
    docs/prediction.md: M 4096 at K <= 2048 (predicted up to 56% faster: a tile's K loop is
    too short to hide its prologue and epilogue, which the best-shape MAMF does not see) and the
    ~6-7 us GEMMs at K 2048 (predicted 30-45% slower: the fixed kernel cost is a fitted serving
    figure, longer than these kernels' own launch-to-end time)."""

    ROWS = (   # M, N, K, TFLOPS
        (64, 2112, 7168, 206), (64, 24576, 1536, 289), (64, 7168, 16384, 336), (64, 4096, 7168, 287),
        (128, 2112, 7168, 352), (128, 24576, 1536, 535), (128, 7168, 16384, 645),
        (128, 4096, 7168, 533), (4096, 7168, 16384, 1358), (4096, 4096, 7168, 1304),
        (4096, 2112, 7168, 1058))

    def test_predicted_within_the_table(self):
        rates = predict.achievable(load_device("h800"), DTYPES["fp8"], kernel_s=4e-6)
        errors = []
        for m, n, k, tflops in self.ROWS:
            op = Op("gemm", "linear", f"[{m},{k}]x[{k},{n}]", matrix_flops=2 * m * n * k,
                    weight_read=n * k, act_read=m * k, act_write=2 * m * n)
            errors.append(predict.op_time(op, rates) / (2 * m * n * k / (tflops * 1e12)) - 1)
        # e.g. M 64, N 7168, K 16384: 117.4 MB of FP8 weights + 1.0 MB in + 0.9 MB out at 3,000 GB/s
        # (FlashMLA's H800 figure) = 39.8 us, + 4 us = 43.8 us, beside 2 x 64 x 7168 x 16384 /
        # 336 TFLOP/s = 44.7 us: -2.1%
        self.assertAlmostEqual(errors[2], 43.80e-6 / 44.74e-6 - 1, delta=0.002)
        worst = max(abs(e) for e in errors)
        self.assertLess(worst, 0.14, errors)
        self.assertLess(sorted(abs(e) for e in errors)[len(errors) // 2], 0.05, errors)


class NeverBelowTheBound(unittest.TestCase):
    CASES = (("llama-3.1-8b", "h100-sxm", "bf16"), ("qwen3-30b-a3b", "b200", "fp4"),
             ("deepseek-v3", "h200", "fp8"), ("mistral-7b-v0.1", "mi300x", "fp8"), ("gpt-oss-120b", "gb200", "fp8"))

    def test_every_operator(self):
        for model, device, fmt in self.CASES:
            arch, d = load_model(model), load_device(device)
            for batch, tokens, history in ((1, 1, 4096), (64, 1, 1024), (1, 2048, 0)):
                w = Workload(batch=batch, tokens=tokens, history=history, weight_dtype=DTYPES[fmt],
                             act_dtype=DTYPES["fp8" if fmt == "fp4" else fmt], kv_dtype=DTYPES["bf16"])
                r, p = roof(d, w.compute_dtype), predict.achievable(d, w.compute_dtype)
                for op in ledger.operators(arch, w):
                    with self.subTest(model=model, op=op.name, batch=batch, tokens=tokens):
                        self.assertGreaterEqual(predict.op_time(op, p), op_bound(op, r)[2])


class DecodePieces(unittest.TestCase):
    def test_summed_steps_equal_each_step(self):
        # the closed-form per-operator sum over steps equals the steps' ledgers one by one
        arch, d = load_model("mistral-7b-v0.1"), load_device("h100-sxm")   # sliding window 4096
        w = Workload(batch=4, tokens=1, history=0)
        p = predict.achievable(d, w.compute_dtype)
        lo, hi = 4090, 4101                                           # across the window's edge
        summed = predict.piece_times(decode_sum.decode_pieces(arch, w, lo, hi), p)
        by_step = [0.0] * len(summed)
        for h in range(lo, hi + 1):
            for i, op in enumerate(ledger.operators(arch, w.replace(history=h))):
                by_step[i] += predict.op_time(op, p)
        for a, b in zip(summed, by_step):
            self.assertAlmostEqual(a, b, delta=1e-12 + 1e-9 * b)


if __name__ == "__main__":
    unittest.main()

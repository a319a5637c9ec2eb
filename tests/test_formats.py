"""Quantized storage formats per tensor class, native formats, compute peaks."""

import unittest

from support import DTYPES, Workload, build, load_model, run_cli


class WeightFormats(unittest.TestCase):
    def test_int4_applies_to_linear_layers_only(self):
        # Qwen3-8B --weight-dtype int4 (4 bits + one bf16 scale per 128 values along
        # the input axis). Per layer:
        #   q, o [4096, 4096]: 8,388,608 + 4096*32*2 = 8,650,752 each
        #   k, v [1024, 4096]: 2,097,152 + 1024*32*2 = 2,162,688 each
        #   gate, up [12288, 4096]: 25,165,824 + 12288*32*2 = 25,952,256 each
        #   down [4096, 12288]: 25,165,824 + 4096*96*2 = 25,952,256
        #   norms (2*4096 + 2*128) * 2 bytes = 16,896  -> 99,500,544 per layer
        # 36 layers = 3,582,019,584; embedding and head stay bf16: 2 * 151936*4096*2
        # = 2,489,319,424; final norm 8,192 -> 6,071,347,200.
        w = Workload(weight_dtype=DTYPES["int4-g128"])
        t = build(load_model("qwen3-8b"), w).totals
        self.assertEqual(t.weight_bytes, 6_071_347_200)

    def test_native_expert_format(self):
        # Qwen3-30B-A3B with its experts in MXFP4 (as GPT-OSS ships): one expert's
        # gate/up [768, 2048] = 786,432 + 768*64 scales = 835,584 bytes, down
        # [2048, 768] = 786,432 + 2048*24 = 835,584 -> 2,506,752 per expert;
        # x 128 experts x 48 layers = 15,401,484,288. Everything else bf16:
        # (30,532,122,624 - 48*128*3*768*2048) * 2 = 3,082,186,752.
        w = Workload(formats=(("expert", DTYPES["mxfp4"]),))
        t = build(load_model("qwen3-30b-a3b"), w).totals
        self.assertEqual(t.weight_bytes, 15_401_484_288 + 3_082_186_752)

    def test_weight_only_int4_computes_at_activation_peak(self):
        status, out, _ = run_cli("forward", "--model", "qwen3-8b", "--weight-dtype", "int4-g128",
                                 "--format", "json")
        self.assertEqual(status, 0)
        self.assertIn('"compute_dtype": "bf16"', out)
        self.assertIn('"matrix_flops_per_s": 989500000000000', out)

    def test_fp8_compute_uses_fp8_peak(self):
        status, out, _ = run_cli("forward", "--model", "qwen3-8b", "--weight-dtype", "fp8",
                                 "--act-dtype", "fp8", "--format", "json")
        self.assertEqual(status, 0)
        self.assertIn('"matrix_flops_per_s": 1979000000000000', out)

    def test_storage_only_format_cannot_compute(self):
        status, _, err = run_cli("forward", "--model", "qwen3-8b", "--act-dtype", "int4")
        self.assertEqual(status, 2)
        self.assertIn("storage-only", err)


class FormatNames(unittest.TestCase):
    """Group size and scale format are part of a format's name."""

    def test_book_8_bit_weights(self):
        # The book's Qwen3-8B capacity table (bojieli/ai-infra-book,
        # calculations/results/capacity-qwen3-8b-n8192.md): BF16 16,381,470,720 B;
        # 8-bit 9,544,230,912 B = 8.888758 GiB (payload 9,435,703,296 + scales 108,527,616:
        # one BF16 scale per 128 values of each row of every linear matrix; embedding,
        # head and norms stay BF16). Plain int8 has no scales: the payload alone, 8.787683 GiB.
        from support import totals
        g128 = totals("qwen3-8b", weight_dtype=DTYPES["int8-g128"]).weight_bytes
        plain = totals("qwen3-8b", weight_dtype=DTYPES["int8"]).weight_bytes
        self.assertEqual(g128, 9_544_230_912)
        self.assertEqual(plain, 9_435_703_296)
        self.assertEqual(g128 - plain, 108_527_616)
        self.assertEqual(f"{g128 / 2**30:.6f} {plain / 2**30:.6f}", "8.888758 8.787683")

    def test_parsed_names(self):
        from infracalc.dtypes import dtype
        # int4, one FP16 scale per 32 values: [2, 64] -> 64 B + 2 rows * 2 groups * 2 B
        self.assertEqual(dtype("int4-g32-fp16").nbytes((2, 64)), 64 + 8)
        # fp8 with a 128x128 block scale, FP32 by default: the same bytes as fp8-block128
        self.assertEqual(dtype("fp8-b128").nbytes((7168, 18432)), DTYPES["fp8-block128"].nbytes((7168, 18432)))
        # MXFP8: E4M3 + one E8M0 (1 B) per 32 values: [4096, 4096] -> 16,777,216 + 4096*128
        self.assertEqual(DTYPES["mxfp8"].nbytes((4096, 4096)), 16_777_216 + 524_288)
        self.assertEqual(DTYPES["mxfp8"].peak, "fp8")
        self.assertEqual(DTYPES["int4"].nbytes((256, 256)), 32768)   # plain int4: no scales

    def test_bad_names(self):
        for name in ("int8-g0", "bf16-g128", "int8-g128-fp64", "int8-x128", "int8-g08"):
            status, _, err = run_cli("gemm", "--m", "1", "--k", "8", "--n", "8", "--weight-dtype", name)
            self.assertEqual(status, 2, name)
            self.assertIn("BASE-gG", err)


if __name__ == "__main__":
    unittest.main()

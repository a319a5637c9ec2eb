"""trtllm-bench's build rule (analyses/efficiency/trtllm_bench): the max batch size and max num
tokens `trtllm-bench build --dataset` chooses (NVIDIA/TensorRT-LLM tensorrt_llm/bench/build/tuning.py,
calc_engine_setting and finetune_setting), and where the prediction takes them."""

import os
import unittest

import support

from infracalc.analyses import validate as V
from infracalc.analyses import validate_predict as VP
from infracalc.analyses.efficiency import serving, trtllm_bench as T
from infracalc.errors import UserError

H100_NVML = 81_559 * 2**20   # the H100 80GB HBM3 driver total, 81,559 MiB (hardware/h100-sxm.json)
LLAMA_70B = dict(param_count=70_553_706_496, layers=80, kv_heads=8, head_size=128)   # Llama 3.1 70B
LLAMA_8B = dict(param_count=8_030_261_248, layers=32, kv_heads=8, head_size=128)     # Llama 3.1 8B


class Rounding(unittest.TestCase):
    """finetune_setting's bands, at and around their edges."""

    def test_batch(self):
        self.assertEqual([T.round_batch(x) for x in (1, 64, 64.5, 221.16, 255.9, 256, 557.35, 1023.9, 1024, 1025)],
                         [64, 64, 96, 224, 256, 256, 640, 1024, 1024, 1280])

    def test_tokens(self):
        self.assertEqual([T.round_tokens(x) for x in (1, 2048, 2049, 4095.9, 4096, 4097, 8191, 8192, 8193)],
                         [2048, 2048, 2304, 4096, 4096, 4608, 8192, 8192, 9216])

    def test_caps_and_pp(self):
        # 10,000 requests: min(., 4096) / pp = 2048 at pp 2, tokens min(2048 x 2, 32768) = 4096
        self.assertEqual(T.finetune(10_000, 128, 128, pp=2), (2048, 4096))
        # 4096 x (1 + 2048 / 128) = 69,632 tokens, capped at 32,768 (a multiple of 1024 already)
        self.assertEqual(T.finetune(5000, 2048, 128), (4096, 32768))


class EngineSetting(unittest.TestCase):
    """By hand from calc_engine_setting: Llama 3.1 70B FP8 on one H100 (NVML total 81,559 MiB).
    memory = 81,559 / 1024 = 79.6474609375 GiB; engine = 70,553,706,496 / 10^9 x 1 = 70.553706496;
    per token = 2 x 80 x 8 x 128 x 1 / 2^30 = 1.52587890625e-4; requests of L tokens =
    0.95 x 9.0937549415 / 1.52587890625e-4 / L = 56,616.99 / L."""

    def setting(self, model, isl, osl, fp8=True, tp=1):
        return T.engine_setting(**model, fp8_weights=fp8, fp8_cache=fp8, device_total_bytes=H100_NVML,
                                input_len=isl, output_len=osl, tp=tp)

    def test_llama_70b_fp8_h100(self):
        # 128/128: 56,616.99 / 256 = 221.16 -> 32 x 7 = 224; tokens 221.16 x 2 = 442 -> 2048
        self.assertEqual(self.setting(LLAMA_70B, 128, 128), (224, 2048))
        # 5000/500: 10.29 requests -> the floor 64; tokens 10.29 x 11 = 113 -> 2048
        self.assertEqual(self.setting(LLAMA_70B, 5000, 500), (64, 2048))

    def test_llama_8b_fp8_h100(self):
        # per token 2 x 32 x 8 x 128 / 2^30 = 6.103515625e-5; 0.95 x (79.6474609375 - 8.030261248)
        # / 6.1035e-5 = 1,114,707 tokens. 1000/1000: 557.35 -> 128 x 5 = 640; tokens 1,114.7 -> 2048.
        self.assertEqual(self.setting(LLAMA_8B, 1000, 1000), (640, 2048))
        # 128/128: 4,354 requests, capped at 4096; tokens 4096 x 2 = 8192 (1024 x 8)
        self.assertEqual(self.setting(LLAMA_8B, 128, 128), (4096, 8192))

    def test_tensor_parallel(self):
        # TP 2: memory 2 x 79.6474609375 = 159.294921875; KV heads max(2, 8) = 8;
        # 0.95 x 88.741215379 / 1.52587890625e-4 / 2000 = 276.25 -> 128 x 3 = 384
        self.assertEqual(self.setting(LLAMA_70B, 1000, 1000, tp=2), (384, 2048))
        # TP 16 > 8 KV heads: each GPU keeps one head, per token x 16 / 8; memory 16 x 79.647 =
        # 1,274.36 GiB: 0.95 x 1,203.80 / 3.0518e-4 / 2000 = 1,873.6 -> 256 x 8 = 2048; tokens 3,747 -> 3840
        self.assertEqual(self.setting(LLAMA_70B, 1000, 1000, tp=16), (2048, 3840))

    def test_does_not_fit(self):
        # 16-bit 70B: engine 141.1 > 79.65 GiB: the rule's error
        with self.assertRaises(UserError):
            self.setting(LLAMA_70B, 128, 128, fp8=False)


B200_NVML = 183_359 * 2**20   # the B200 driver total, 183,359 MiB (hardware/b200.json) = 179.0615234375 GiB


class Elements(unittest.TestCase):
    """A checkpoint's safetensors elements (Dtype.elements), what v1.0's rule counts as parameters."""

    def test_formats(self):
        from support import DTYPES
        # NVFP4 [8192, 8192]: 67,108,864 values packed two a byte = 33,554,432 uint8, plus one E4M3
        # scale per 16 = 4,194,304; the FP32 tensor scale is a scalar tensor of its own (not counted)
        self.assertEqual(DTYPES["nvfp4"].elements((8192, 8192)), 33_554_432 + 4_194_304)
        self.assertEqual(DTYPES["fp8"].elements((1024, 8192)), 8_388_608)
        self.assertEqual(DTYPES["bf16"].elements((8192,)), 8192)
        # MXFP4 [64, 64]: 4096 / 2 values + one E8M0 per 32 = 128; FP8 block 128 [256, 256]: 4 blocks
        self.assertEqual(DTYPES["mxfp4"].elements((64, 64)), 2048 + 128)
        self.assertEqual(DTYPES["fp8-block128"].elements((256, 256)), 65_536 + 4)

    def test_llama_70b_nvfp4_checkpoint(self):
        # Llama 3.1 70B: 80 layers x 855,638,016 linear values = 68,451,041,280, x (1/2 + 1/16) =
        # 38,503,710,720; embedding + lm_head 2 x 128,256 x 8192 = 2,101,346,304 and the norms
        # 2 x 8192 x 80 + 8192 = 1,318,912 in BF16: 40,606,375,936 (params 70,553,706,496)
        from support import DTYPES, Workload, load_model
        arch = load_model("llama-3.1-70b")
        self.assertEqual(arch.checkpoint_elements(Workload(weight_dtype=DTYPES["nvfp4"])), 40_606_375_936)
        self.assertEqual(arch.checkpoint_elements(Workload(weight_dtype=DTYPES["fp8"])), arch.params)


class PyTorchSetting(unittest.TestCase):
    """By hand from v1.0's calc_engine_setting + get_settings: Llama 3.3 70B NVFP4 on one B200.
    engine = 40,606,375,936 x 0.5 / 2^30 = 18.9088173 GiB; memory 179.0615234 GiB; per token
    2 x 80 x 8 x 128 x 1 / 2^30 = 1.52587890625e-4; requests of L tokens = 0.9 x 160.1527061 /
    1.52587890625e-4 / L = 944,619.1 / L."""

    def setting(self, isl, osl, elements=40_606_375_936, fmt="nvfp4", tp=1, layers=80, total=B200_NVML):
        return T.pytorch_setting(checkpoint_elements=elements, weight_format=fmt, kv_format="fp8",
                                 attention_layers=layers, kv_heads=8, head_size=128, device_total_bytes=total,
                                 input_len=isl, output_len=osl, max_input_len=isl, kv_fraction=0.9, tp=tp)

    def test_llama_70b_nvfp4_b200(self):
        # 128/128: 3,689.9 requests -> 256 x 15 = 3840; tokens 7,379.8 -> 512 x 15 = 7680 (>= 128 + 3840)
        self.assertEqual(self.setting(128, 128), (3840, 7680))
        # 1000/1000: 472.3 -> 128 x 4 = 512; tokens 944.6 -> 2048
        self.assertEqual(self.setting(1000, 1000), (512, 2048))
        # 20000/2000: 42.9 -> the floor 64; tokens 472 -> 2048, raised to the prompt + batch 20,064
        self.assertEqual(self.setting(20000, 2000), (64, 20064))

    def test_tensor_parallel_405b(self):
        # Llama 3.1 405B NVFP4 on four B200: 126 x 3,187,671,040 linear values x 9/16 + 4,202,692,608
        # + 4,145,152 = 230,133,022,720 elements, 107.1640396 GiB; memory 4 x 179.0615234 = 716.2460938;
        # per token 2 x 126 x max(4, 8) x 128 / 2^30 = 2.40325927734375e-4; 1000/1000: 0.9 x 609.0820541
        # / 2.4033e-4 / 2000 = 1,140.48 -> 256 x 5 = 1280; tokens 2,280.96 -> 256 x 9 = 2304 (> 2280)
        self.assertEqual(self.setting(1000, 1000, elements=230_133_022_720, tp=4, layers=126), (1280, 2304))

    def test_fp8_counts_one_byte(self):
        # 70B FP8 on one H200 (151,397,597,184 B = 141 GiB): engine 70,553,706,496 / 2^30 = 65.7081 GiB;
        # 0.9 x 75.2919 / 1.52587890625e-4 / 256 = 1,734.7 -> 256 x 7 = 1792; tokens 3,469.4 -> 3584
        self.assertEqual(self.setting(128, 128, elements=70_553_706_496, fmt="fp8", total=151_397_597_184),
                         (1792, 3584))

    def test_untuned_format_and_no_room(self):
        with self.assertRaises(UserError):   # MXFP4 is not in build.py's TUNED_QUANTS
            self.setting(128, 128, fmt="mxfp4")
        with self.assertRaises(UserError):   # 16-bit 70B: 131.4 GiB of engine > one H100's 79.6 GiB
            self.setting(128, 128, elements=70_553_706_496, fmt="bf16", total=H100_NVML)


class Prediction(unittest.TestCase):
    def test_the_v014_cases_take_the_rule(self):
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "trtllm014-llama31-70b-fp8-h100-sxm-128-128.json"))
        _, rec = VP.serving_prediction(case)
        self.assertEqual((rec["engine_batch_limit"], rec["engine_max_num_tokens"]), (224, 2048))
        self.assertIn("2048 tokens, trtllm-bench's tuning rule", VP.cause(rec))
        # a publication whose build is not the rule's: the runtime room's limit, no token limit
        other = V.load_case(next(p for p in V.case_paths() if "mi300x-offline" in p))
        self.assertIsNone(VP.engine_limits(other, V._model(other), None, None))

    def test_the_v10_cases_take_the_pytorch_rule(self):
        # the hand-worked limits above, on the publication's own rows (one device and TP4)
        for name, limits in (("trtllm-llama33-70b-fp4-b200-128-128.json", (3840, 7680)),
                             ("trtllm-llama31-405b-fp4-b200-tp4-1000-1000.json", (1280, 2304))):
            case = V.load_case(os.path.join(V.VALIDATION_DIR, name))
            _, rec = VP.serving_prediction(case)
            self.assertEqual((rec["engine_batch_limit"], rec["engine_max_num_tokens"]), limits, name)

    def test_pipelined_layout_with_limits_is_an_error(self):
        from support import DTYPES, Workload, load_model
        from infracalc import layout as placement
        from infracalc.load.hardware import load_device

        fp8 = DTYPES["fp8"]
        with self.assertRaises(UserError):
            serving.predicted_layout(load_model("llama-3.1-8b"), Workload(weight_dtype=fp8, act_dtype=fp8, kv_dtype=fp8),
                                     load_device("h100-sxm"), placement.Layout(tp=1, pp=2), 128, 128,
                                     engine_limits=(256, 2048))

    def test_token_limit_caps_the_concurrency(self):
        # Llama 3.1 8B FP8 on H100 at 128/128 with the rule's (4096, 8192): one iteration carries
        # N + N x 128 / 127 tokens <= 8192, so N <= int(8192 / (1 + 128 / 127)) = int(4079.87) = 4079
        from support import DTYPES, Workload, load_model
        from infracalc.load.hardware import load_device

        fp8 = DTYPES["fp8"]
        arch, d = load_model("llama-3.1-8b"), load_device("h100-sxm")
        w = Workload(weight_dtype=fp8, act_dtype=fp8, kv_dtype=fp8)
        n, _, limit = serving.concurrency(arch, w, d.memory_bytes, 128, 128, engine_limits=(4096, 8192))
        self.assertEqual((n, limit), (4079, 4096))
        self.assertEqual(serving.concurrency(arch, w, d.memory_bytes, 128, 128, engine_limits=(4096, 100_000))[0],
                         4096)


if __name__ == "__main__":
    unittest.main()

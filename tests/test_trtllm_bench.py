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


class Prediction(unittest.TestCase):
    def test_the_v014_cases_take_the_rule(self):
        case = V.load_case(os.path.join(V.VALIDATION_DIR, "trtllm014-llama31-70b-fp8-h100-sxm-128-128.json"))
        _, rec = VP.serving_prediction(case)
        self.assertEqual((rec["engine_batch_limit"], rec["engine_max_num_tokens"]), (224, 2048))
        self.assertIn("2048 tokens, trtllm-bench's build rule", VP.cause(rec))
        # a publication whose build is not the rule's: the runtime room's limit, no token limit
        other = V.load_case(next(p for p in V.case_paths() if "mi300x-offline" in p))
        self.assertIsNone(VP.engine_limits(other, V._model(other), None, None))

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

"""The engine limits `trtllm-bench build --dataset` chooses: TensorRT-LLM's published build rule.

Source: NVIDIA/TensorRT-LLM tensorrt_llm/bench/build/tuning.py, `calc_engine_setting` and
`finetune_setting`, in the version that tunes only FP8 and unquantised builds (build.py's
`get_benchmark_engine_settings`; other quantisations read benchmark_config.yml) and counts the
engine as `param_count / 1000**3` bytes per element. That is the oldest stored version of the file
(the tag v0.14.0's copy is not stored by tag; later versions add a BYTES_PER_ELEM table with NVFP4,
count the engine in GiB and the cache per attention layer), the rule TensorRT-LLM 0.14's
performance page built its engines with (docs/source/performance/perf-overview.md at v0.14.0:
`trtllm-bench --model $model_name build --tp_size $tp_size --quantization FP8 --dataset
$dataset_file`; the build reads the dataset's average ISL and OSL). The rule, with its units as the
code has them:

    engine      = param_count / 10^9 x (1 for FP8, else 2)                 ("GB")
    memory      = NVML total bytes / 2^30 x tp x pp                         (GiB, pynvml)
    per token   = 2 x layers x max(tp, kv_heads) x head_size x (1 for an FP8 cache, else 2) / 2^30
    requests    = 0.95 x (memory - engine) / per token / (ISL + OSL)         (kv_cache_gpu_mem_fraction 0.95)

then `finetune_setting`: raw batch = min(requests, 4096) / pp, raw tokens = min(raw batch x
(1 + ISL / OSL), 32768); the batch rounded up to a multiple of 32 (at least 64) below 256, of 128
below 1024, of 256 above; the tokens to a multiple of 256 (at least 2048) below 4096, of 512 below
8192, of 1024 above. The engine's size is every checkpoint parameter at the GEMM format's bytes (a
ModelOpt FP8 checkpoint keeps its embedding and lm_head in 16 bits: the rule does not see it), in
10^9 bytes subtracted from a total in 2^30 bytes: the rule's estimate, not the runtime's memory.
"""

import math

from ...errors import UserError

KV_CACHE_GPU_MEM_FRACTION = 0.95   # calc_engine_setting's default
MAX_BATCH = 4096                   # finetune_setting: "Cap total batch size"
MAX_TOKENS = 32768                 # finetune_setting: "Cap num tokens"


def round_batch(raw):
    """finetune_setting's max batch size from a raw batch: multiples of 32 (at least 64) below 256,
    of 128 below 1024, of 256 above."""
    if raw < 256:
        return max(64, 32 * math.ceil(raw / 32))
    if raw < 1024:
        return 128 * math.ceil(raw / 128)
    return 256 * math.ceil(raw / 256)


def round_tokens(raw):
    """finetune_setting's max num tokens from a raw count: multiples of 256 (at least 2048) below
    4096, of 512 below 8192, of 1024 above."""
    if raw < 4096:
        return max(2048, 256 * math.ceil(raw / 256))
    if raw < 8192:
        return 512 * math.ceil(raw / 512)
    return 1024 * math.ceil(raw / 1024)


def finetune(requests, input_len, output_len, pp=1):
    """(max batch size, max num tokens) from the requests the cache is estimated to hold."""
    raw_batch = min(requests, MAX_BATCH) / pp
    raw_tokens = min(raw_batch * (1 + input_len / output_len), MAX_TOKENS)
    return round_batch(raw_batch), round_tokens(raw_tokens)


def engine_setting(*, param_count, fp8_weights, layers, kv_heads, head_size, fp8_cache, device_total_bytes,
                   input_len, output_len, tp=1, pp=1):
    """(max batch size, max num tokens) of `trtllm-bench build` for a model of `param_count`
    checkpoint parameters on tp x pp devices of `device_total_bytes` (NVML's total) each, tuned to
    a dataset of average `input_len` / `output_len` (the module's rule); an error when the rule
    itself fails (the model does not fit, or not one request does)."""
    engine = param_count / 1000 ** 3 * (1 if fp8_weights else 2)
    memory = device_total_bytes / 1024 ** 3 * tp * pp
    per_token = 2 * layers * max(tp, kv_heads) * head_size * (1 if fp8_cache else 2) / 1024 ** 3
    requests = KV_CACHE_GPU_MEM_FRACTION * (memory - engine) / per_token / (input_len + output_len)
    if requests < 1:
        raise UserError(f"trtllm-bench build rule: {param_count:,} parameters on {tp * pp} device(s) of "
                        f"{device_total_bytes:,} B leave room for {requests:.2f} requests of "
                        f"{input_len + output_len} tokens (the build raises an error below 1)")
    return finetune(requests, input_len, output_len, pp)

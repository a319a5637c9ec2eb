"""The engine limits trtllm-bench chooses: TensorRT-LLM's published tuning rule, in two versions.

Source: NVIDIA/TensorRT-LLM tensorrt_llm/bench/build/tuning.py, `calc_engine_setting` and
`finetune_setting`. Each publication's runs took the version of its release; the two differ in the
engine's size and the cache fraction, and share `finetune_setting`'s rounding:

**v0.14** (`engine_setting`): the version that tunes only FP8 and unquantised builds (build.py's
`get_benchmark_engine_settings`; other quantisations read benchmark_config.yml) and counts the
engine as `param_count / 1000**3` bytes per element. That is the oldest stored version of the file
(the tag v0.14.0's copy is not stored by tag), the rule TensorRT-LLM 0.14's performance page built
its engines with (docs/source/performance/perf-overview.md at v0.14.0: `trtllm-bench --model
$model_name build --tp_size $tp_size --quantization FP8 --dataset $dataset_file`; the build reads
the dataset's average ISL and OSL). The rule, with its units as the code has them:

    engine      = param_count / 10^9 x (1 for FP8, else 2)                 ("GB")
    memory      = NVML total bytes / 2^30 x tp x pp                         (GiB, pynvml)
    per token   = 2 x layers x max(tp, kv_heads) x head_size x (1 for an FP8 cache, else 2) / 2^30
    requests    = 0.95 x (memory - engine) / per token / (ISL + OSL)         (kv_cache_gpu_mem_fraction 0.95)

The engine's size is every checkpoint parameter at the GEMM format's bytes (a ModelOpt FP8
checkpoint keeps its embedding and lm_head in 16 bits: the rule does not see it), in 10^9 bytes
subtracted from a total in 2^30 bytes: the rule's estimate, not the runtime's memory.

**v1.0** (`pytorch_setting`): the PyTorch path of `trtllm-bench throughput`, which TensorRT-LLM
1.0's performance page ran (perf-overview.md at commit 00f37686: `trtllm-bench --tp $tp_size --pp
$pp_size [--ep $ep_size] --model $model_name throughput --dataset $dataset_file --backend pytorch
--extra_llm_api_options $llm_options`, the options file setting only CUDA-graph batch sizes and
padding, no --max_batch_size or --max_num_tokens). Without them `get_settings`
(tensorrt_llm/bench/benchmark/utils/general.py) sizes the run by the same rule
(get_benchmark_engine_settings, build.py: TUNED_QUANTS NVFP4, FP8, FP8 block scales, none) with
the run's --kv_cache_free_gpu_mem_fraction (throughput.py: default 0.90; the page: 0.95 "in many
cases", 0.90 or lower on out-of-memory), in the tuning.py of that era:

    engine      = checkpoint elements x BYTES_PER_ELEM / 2^30               (NVFP4 0.5, FP8 1, else 2; GiB)
    per token   = 2 x attention layers x max(tp, kv_heads) x head_size x BYTES_PER_ELEM[KV] / 2^30
    requests    = fraction x (memory - engine) / per token / (ISL + OSL)

where the checkpoint's elements are its safetensors parameter count (build/dataclasses.py
ModelConfig.get_param_count: the sum of huggingface_hub's parameter_count): a ModelOpt NVFP4
checkpoint stores two 4-bit values per uint8 element and one E4M3 scale per 16 values, so the rule
counts its linear layers at 9/16 of their values and then at 0.5 bytes each (Dtype.elements). With
chunked prefill off (the page's runs: throughput's default) get_settings then raises max num tokens
to at least the dataset's longest prompt plus the max batch size.

Both versions then `finetune_setting`: raw batch = min(requests, 4096) / pp, raw tokens =
min(raw batch x (1 + ISL / OSL), 32768); the batch rounded up to a multiple of 32 (at least 64)
below 256, of 128 below 1024, of 256 above; the tokens to a multiple of 256 (at least 2048) below
4096, of 512 below 8192, of 1024 above.
"""

import math

from ...errors import UserError

KV_CACHE_GPU_MEM_FRACTION = 0.95   # calc_engine_setting's default (v0.14's build passes none)
MAX_BATCH = 4096                   # finetune_setting: "Cap total batch size"
MAX_TOKENS = 32768                 # finetune_setting: "Cap num tokens"
# v1.0's tuning.py BYTES_PER_ELEM (QuantAlgo -> bytes), by the tool's format names; any other
# format: 2 (the table's default) for a cache, and for weights not a tuned quantisation (build.py
# TUNED_QUANTS): the run would take BuildConfig's defaults, which this rule does not model
BYTES_PER_ELEM = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp8-block128": 1.0, "nvfp4": 0.5}


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
    """(max batch size, max num tokens) of TensorRT-LLM 0.14's `trtllm-bench build --dataset` (the
    module's v0.14 rule) for a model of `param_count` checkpoint parameters on tp x pp devices of `device_total_bytes` (NVML's total) each, tuned to
    a dataset of average `input_len` / `output_len` (the module's rule); an error when the rule
    itself fails (the model does not fit, or not one request does)."""
    engine = param_count / 1000 ** 3 * (1 if fp8_weights else 2)
    memory = device_total_bytes / 1024 ** 3 * tp * pp
    per_token = 2 * layers * max(tp, kv_heads) * head_size * (1 if fp8_cache else 2) / 1024 ** 3
    requests = KV_CACHE_GPU_MEM_FRACTION * (memory - engine) / per_token / (input_len + output_len)
    if requests < 1:
        raise _requests_error(f"{param_count:,} parameters", tp * pp, device_total_bytes, requests,
                              input_len + output_len)
    return finetune(requests, input_len, output_len, pp)


def _requests_error(what, devices, total_bytes, requests, seq_len):
    return UserError(f"trtllm-bench's tuning rule: {what} on {devices} device(s) of {total_bytes:,} B leave "
                     f"room for {requests:.2f} requests of {seq_len} tokens (the rule raises an error below 1)")


def pytorch_setting(*, checkpoint_elements, weight_format, kv_format, attention_layers, kv_heads, head_size,
                    device_total_bytes, input_len, output_len, max_input_len, kv_fraction, tp=1, pp=1):
    """(max batch size, max num tokens) of TensorRT-LLM 1.0's `trtllm-bench throughput --backend
    pytorch` without --max_batch_size / --max_num_tokens (the module's v1.0 rule) for a checkpoint
    of `checkpoint_elements` safetensors elements whose linear layers are in `weight_format`, a
    cache in `kv_format`, on tp x pp devices of `device_total_bytes` (NVML's total) each, a dataset
    of average `input_len` / `output_len` and longest prompt `max_input_len`, the run's KV cache
    fraction `kv_fraction`, chunked prefill off; an error where the rule itself raises one or where
    the weights are in a format the rule does not tune."""
    if weight_format not in BYTES_PER_ELEM:
        raise UserError(f"trtllm-bench's tuning rule: weights in {weight_format} are not a tuned quantisation "
                        f"({', '.join(BYTES_PER_ELEM)}); the run takes BuildConfig's defaults, not modelled")
    engine = checkpoint_elements * BYTES_PER_ELEM[weight_format] / 1024 ** 3
    memory = device_total_bytes / 1024 ** 3 * tp * pp
    per_token = 2 * attention_layers * max(tp, kv_heads) * head_size * BYTES_PER_ELEM.get(kv_format, 2.0) / 1024 ** 3
    requests = kv_fraction * (memory - engine) / (per_token * (input_len + output_len))
    if memory < engine or requests < 1:
        raise _requests_error(f"{checkpoint_elements:,} checkpoint elements in {weight_format}", tp * pp,
                              device_total_bytes, requests, input_len + output_len)
    batch, tokens = finetune(requests, input_len, output_len, pp)
    return batch, max(tokens, max_input_len + batch)

"""Memory on one device: weights + KV cache + a workspace reserve (the reserve rule and the
capacity arithmetic live in infracalc/capacity.py, which the layout library shares)."""


from ..capacity import binding_stage, cache_room, default_reserve, requests_in, reserve_of  # noqa: F401


def request_bytes(arch, w, context):
    """KV cache and recurrent state one request must reserve to reach
    `context` tokens (the peak it holds on the way, as `kv` counts it)."""
    return arch.kv_bytes(w.kv_dtype, context, w.mla, peak=True)


def max_requests(arch, w, memory_bytes, context, reserve_bytes=None):
    """Concurrent requests of `context` tokens that fit beside the weights on
    one device: floor((memory - weights - reserve) / bytes per request); 0 when
    not even one fits (see `kv` for sharding, paging and prefix sharing)."""
    return requests_in(cache_room(memory_bytes, arch.weight_bytes(w), reserve_bytes),
                       request_bytes(arch, w, context))


# Serving engines' defaults for the memory left to the KV cache, beside ours (which
# follows vLLM's). Each is (engine, the rule as documented, reserve in bytes or None).
ENGINE_DEFAULTS = (
    ("vLLM", "gpu_memory_utilization = 0.9 of total device memory for weights, activations and "
             "KV cache (engine argument --gpu-memory-utilization, default 0.9; docs.vllm.ai, "
             "engine arguments)", "total"),
    ("TensorRT-LLM", "KvCacheConfig.free_gpu_memory_fraction = 0.9 of the memory still free after "
                     "the weights (and activations) are loaded (nvidia.github.io/TensorRT-LLM, "
                     "'How to Change KV Cache Behavior')", "free"),
    ("SGLang", "mem_fraction_static of total memory for weights and KV pool; unset, a heuristic "
               "picks it from the device's memory size (sgl-project/sglang: "
               "python/sglang/srt/server_args.py)", None),
)


RESERVE_RULE = "10% of device memory, as vLLM's default gpu_memory_utilization 0.9"


def engine_defaults(memory_bytes, weight_bytes, request):
    """Each engine's default reserve on a device holding `weight_bytes` and the requests
    of `request` cache bytes that would then fit (ENGINE_DEFAULTS; None: no fixed rule)."""
    out = []
    for name, rule, kind in ENGINE_DEFAULTS:
        res = engine_reserve(kind, memory_bytes, weight_bytes)
        out.append({"engine": name, "rule": rule, "reserve_bytes": res,
                    "max_requests": None if res is None else
                    requests_in(cache_room(memory_bytes, weight_bytes, res), request)})
    return out


def engine_reserve(rule, memory_bytes, weight_bytes):
    """The reserve an engine's default leaves out of the cache: 10% of memory (vLLM),
    10% of the memory left after the weights (TensorRT-LLM); None when not fixed."""
    if rule == "total":
        return default_reserve(memory_bytes)
    if rule == "free":
        return max(memory_bytes - weight_bytes, 0) // 10
    return None

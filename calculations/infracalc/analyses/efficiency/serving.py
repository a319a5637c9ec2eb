"""Predicted serving throughput: a continuous-batching engine's steady-state iteration.

The bound (analyses/serving) lets the scheduler reach the mean-concurrency ceiling and
overlaps everything at peak. The prediction follows what a tuned engine does, each term
named:

1. Concurrency. The engine keeps in flight the requests whose cache, reserved for their
   final length (no eviction: TensorRT-LLM's GUARANTEED_NO_EVICT default), fits in the
   KV room; the room is KV_FRACTION of the memory left after the weights
   (TensorRT-LLM's `free_gpu_memory_fraction`; its benchmark sets 0.95 or 0.90, 0.90
   is the documented default, nvidia.github.io/TensorRT-LLM "How to Change KV Cache
   Behavior"); and it is capped by the engine's batch limit, TensorRT-LLM's
   trtllm-bench rule (NVIDIA/TensorRT-LLM: tensorrt_llm/bench/build/tuning.py,
   `calc_engine_setting` and `finetune_setting`): requests of ISL + OSL tokens that
   fit in the room, at most 4096, rounded up to a multiple of 32 (at least 64) below
   256, of 128 below 1024, of 256 above. Where a publication built its engines with that tool
   (`trtllm-bench build --dataset`), the limits are the build rule's own (trtllm_bench.engine_setting:
   its estimate of the room, not the runtime's), and its max num tokens M caps N at
   M / (1 + P / (G - 1)), the tokens of one steady-state iteration.

       N = min(floor(room / cache at P + G - 1 tokens), engine_batch, requests)

   where `requests` is a finite run's published request count (a benchmark of R requests sent
   at once keeps at most R in flight; validation cases' setup.requests, per replica ceil(R / dp));
   none when the load is unbounded. With R below the engine's limit every request is admitted at
   once, and the run is one prefill of the R prompts and G - 1 decode steps at batch R: the same
   work as G - 1 steady-state iterations at N = R (R prefills, R (G - 1) decode tokens at the
   mean history P + G / 2, on which the decode step's cost is linear), laid out differently (the
   prefills together instead of spread over the decodes: a compute-bound prefill wave in place
   of FLOPs hidden under the decodes' weight reads). The steady state at N = R is taken for it;
   the difference is the prefill's share, small at these lengths (docs/prediction.md).

2. One iteration carries the N requests' decode tokens (history: the mean, P + G/2)
   and, as chunked prefill, the prefills that keep N in flight: N / (G - 1) requests of
   P tokens each (that engine's max_num_tokens is set to exactly that, N (1 + P/G)).
   The two share one pass over the weights: per operator, FLOPs, activations and KV
   add up, the weights are read once (the larger of the two reads). Its GPU time is
   the operator sum at achievable rates (efficiency.predict), plus the exposed tensor-
   parallel communication (an all-reduce after attention and after the MLP, not
   overlapped: TensorRT-LLM runs them between the GEMMs) costed by comm.time_s.

3. Per-sequence work: every layer of the iteration does a fixed amount of work per request
   in flight that the operator rows (FLOPs and bytes) do not carry: the decode attention
   kernel's per-sequence setup (its page-table walk, the split-KV partial results and their
   reduction), the cache append and RoPE per sequence. SEQUENCE_LAYER_S x N x layers, on
   the GPU (a cost per request alone, independent of depth, fits the corpus worse: the
   70B and 405B cases need 2-3x the per-request time of the 8B ones, 80 and 126 layers
   against 32; a fit with both terms puts the per-request one at zero).

   Per-token work of the context phase: likewise every layer does a fixed amount of work per
   prompt token of the iteration's prefills that the rows do not carry (the context path's
   QKV preprocessing and cache write per token, the activations' quantisation to the GEMM
   format, the MoE permute of each token's copies): PREFILL_TOKEN_LAYER_S x (N P / (G - 1))
   x layers, on the GPU. Evidence: against the v1.0 Blackwell FP4 cases the excess of the
   measured iteration over the other terms grows with the prompt tokens per iteration at
   about 0.1 us per token per layer for a 3B-active MoE and a dense 70B alike (48 and 80
   layers, hidden 2048 and 8192), not with their FLOPs.

4. Host time per iteration (scheduling, launch of the step): HOST_FIXED_S, added to the GPU
   time (the engine does not overlap it), plus, for an engine whose scheduler walks every request
   in flight on the host each step, SEQUENCE_HOST_S x N (vLLM: vllm-project/vllm
   vllm/v1/core/sched/scheduler.py, Scheduler.schedule loops over `self.running` in Python and
   allocates each request's cache slots; its model runner then builds each request's inputs:
   a cost per request that does not grow with the model's depth). An engine is fitted with one
   of the two per-sequence forms, never both (FREE in efficiency.fit): TensorRT-LLM's per layer
   on the GPU (its scheduler is C++), vLLM's per sequence on the host. SEQUENCE_LAYER_S,
   PREFILL_TOKEN_LAYER_S, HOST_FIXED_S and SEQUENCE_HOST_S, like predict.KERNEL_S, are FITTED on
   the validation corpus (FITTED below; docs/prediction.md), not measured.

5. The host's step, where it is measured: TensorRT-LLM's PyTorch executor (its default backend
   since v0.19) overlaps the host's work of one iteration (scheduling, sampling, the requests'
   updates and responses, the next step's inputs) with the GPU's work of the previous one (its
   overlap scheduler, on by default: nvidia.github.io/TensorRT-LLM, "Overlap Scheduler"), so an
   iteration takes at least the host's step, which grows with the requests in flight. On a Grace
   host (GB200, GB300: HOST_CPU) that step is measured: 44.53 ms at 1,536 requests a rank
   (HOST_PER_REQUEST_S, NVIDIA/TensorRT-LLM pull request #10273), 29.0 us a request, so

       iteration = max(GPU time + per-sequence and per-prompt-token work + host time,
                       N x HOST_PER_REQUEST_S[engine, host CPU])             (`host_floor_s`)

   Where no figure is published (x86 hosts, vLLM, TensorRT-LLM's C++ executor) no floor is
   charged beyond the fitted host time.

   output tokens/s = N G / (G - 1) / iteration   (N (G - 1) / G requests finish per step
   ... each yields G tokens: N G / (G - 1) per iteration)
"""

import math

from ... import layout as placement
from ... import ledger
from ...blocks.attention import causal_pairs, keys_touched
from ..memory import request_bytes
from . import memory, predict, trtllm_bench
from ...errors import UserError
from ...summation import plain_sum

KV_FRACTION = 0.9
ENGINE_MAX_BATCH = 4096
DEFAULT_ENGINE = "TensorRT-LLM"   # the product default's engine (FITTED["all"]; efficiency.fit)

# The host CPU a device's serving engine runs on, where a host step is measured for it: GB200 and
# GB300 are Grace-Blackwell superchips, one NVIDIA Grace CPU (72 Arm Neoverse V2 cores) with two
# GPUs over NVLink-C2C (NVIDIA GB200 NVL72 and GB300 NVL72 product pages). Any other device: a host
# without a published step time (none charged beyond the fitted host time).
HOST_CPU = {"gb200": "Grace", "gb300": "Grace"}

# Host step time per request in flight of one iteration, per (engine, host CPU), measured: on GB200
# TensorRT-LLM's PyTorch executor logs host_step_time 44.53 ms per iteration with Llama-3.2-1B and
# 45.11 ms with GPT-OSS-120B at the same load (ISL/OSL 1k/1k, attention DP 2 with max_batch_size
# 1536 a rank, 3,072 requests in flight; its C++ scheduler; NVIDIA/TensorRT-LLM pull request
# #10273, description): a 16-layer 1B model and a 36-layer 120B MoE at the same step time, so the
# step is the host's and set by the requests, not by the model. The 1B model's figure (its GPU
# work is the smallest part of the step) over its 1,536 requests a rank.
HOST_PER_REQUEST_S = {("TensorRT-LLM", "Grace"): 44.53e-3 / 1536}

# Fitted constants: (kernel_s, host_fixed_s, sequence_layer_s, prefill_token_layer_s, sequence_host_s),
# an engine's (efficiency.fit).
# "all" is fitted on every TensorRT-LLM case and is the product default; each other key is the
# fit on the other publications of the same engine (leave one publication out), which `validate`
# uses for that publication's cases. tests/test_prediction.py refits them and fails when a number drifts.
FITTED = {
    'all':
        (4e-06, 0.001357, 3.01e-07, 1.541e-07, 0.0),
    'AMD: MLPerf Inference v4.1 Datacenter, Closed: AMD, Supermicro AS-8125GS-TNMR2 (1x AMD Instinct MI300X-NPS1-SPX-192GB-750W, vLLM 0.4.3+rocm614), llama2-70b':
        (4e-06, 0.024, 0.0, 2.827e-07, 2.517e-05),
    'ASUSTeK: MLPerf Inference v5.1 submission, ASUSTeK (AMD vLLM harness): per-GPU Offline measurements of llama2-70b on one AMD Instinct MI325X each':
        (4e-06, 0.024, 0.0, 2.009e-07, 3.84e-05),
    'NVIDIA: MLPerf Inference v4.1 Datacenter, Closed: NVIDIA B200 (1x B200-SXM-180GB, TensorRT), llama2-70b':
        (4e-06, 0.001703, 2.83e-07, 1.469e-07, 0.0),
    'NVIDIA: TensorRT-LLM Performance Overview (docs/source/performance/perf-overview.md)':
        (4e-06, 0.002212, 3.31e-07, 1.46e-07, 0.0),
    'NVIDIA: TensorRT-LLM Performance Overview, Online Serving Measurements, v0.14.0 data (docs/source/performance/perf-overview.md)':
        (4e-06, 0.001438, 3.02e-07, 1.418e-07, 0.0),
    'NVIDIA: TensorRT-LLM Performance Overview, v0.14.0 data (docs/source/performance/perf-overview.md)':
        (4e-06, 0.0, 3.19e-07, 1.617e-07, 0.0),
    'Red Hat: MLPerf Inference v5.1 Datacenter, Closed: Red Hat, Dell PowerEdge XE8640 (1xH100-SXM-80GB, vLLM), llama3.1-8b':
        (4e-06, 0.024, 0.0, 3e-07, 3.84e-05),
    'Red Hat: MLPerf Inference v5.1 Datacenter, Closed: Red Hat, IBM Cloud gx3 instance 1xL40S-PCIE-48GB, vLLM, llama3.1-8b':
        (4e-06, 0.024, 0.0, 2.405e-07, 3.191e-05),
}


def host_floor_s(engine, device, n):
    """The host step of an iteration with n requests in flight: n x the engine's measured host
    time per request on the device's host CPU (HOST_PER_REQUEST_S, HOST_CPU); 0 where none is
    published. The engine overlaps it with the GPU's work, so it bounds the iteration from below
    (the iteration is the longer of the two), it does not add to it."""
    per = HOST_PER_REQUEST_S.get((engine, HOST_CPU.get(device.id)))
    return per * n if per else 0.0


def engine_batch(room_bytes, full_request_bytes):
    """TensorRT-LLM trtllm-bench's max batch size: min(requests of ISL + OSL tokens in the
    room, 4096), rounded up (multiples of 32, at least 64, below 256; of 128 below 1024; of
    256 above: trtllm_bench.round_batch); the cap alone when a request keeps no cache. The room
    is the runtime's (`concurrency`); a case whose engine the build rule itself sized passes
    that rule's result instead (trtllm_bench.engine_setting)."""
    raw = min(room_bytes / full_request_bytes, ENGINE_MAX_BATCH) if full_request_bytes else ENGINE_MAX_BATCH
    return trtllm_bench.round_batch(raw)


def mixed_ops(decode_ops, prefill_ops, prefills):
    """One iteration's rows: the decode step's and `prefills` x the prefill's FLOPs, activation
    and KV bytes per operator, the weights read once (the larger read), the GEMM's shape over all
    the iteration's tokens (decode tokens + prefills x prompt tokens). Attention rows are not
    merged: the requests in their context phase and those in their generation phase run
    different attention kernels (TensorRT-LLM docs/source/advanced/gpt-attention.md, "Context
    Phase": a fused multi-head attention kernel; "Generation Phase": masked multi-head / XQA
    kernels), so the decodes' attention (bound by its KV read) and the prefills' (bound by its
    FLOPs) are two rows, each at its own limit, not one row whose FLOPs hide under the KV read.
    When the two passes run different operators (a linear-attention layer's chunked prefill
    against its recurrent decode, an MLA path chosen per pass) nothing is merged: the decode
    rows, then the prefill rows scaled, each reading its own weights (a slower, stated
    iteration)."""
    if [op.name for op in decode_ops] != [op.name for op in prefill_ops]:
        return list(decode_ops) + [_scaled(b, prefills) for b in prefill_ops]
    out = []
    for a, b in zip(decode_ops, prefill_ops):
        if a.category == "attention":
            out += [a, _scaled(b, prefills)]
            continue
        out.append(a.replace(
            shape=_merged_shape(a.shape, b.shape, prefills),
            matrix_flops=a.matrix_flops + round(b.matrix_flops * prefills),
            vector_flops=a.vector_flops + round(b.vector_flops * prefills),
            weight_read=max(a.weight_read, b.weight_read),
            act_read=a.act_read + round(b.act_read * prefills),
            act_write=a.act_write + round(b.act_write * prefills),
            kv_read=a.kv_read + round(b.kv_read * prefills),
            kv_write=a.kv_write + round(b.kv_write * prefills)))
    return out


def _merged_shape(a, b, prefills):
    """The shape of the iteration's one GEMM over both passes' tokens, which its wave quantisation
    reads (predict.wave): [m_a + round(m_b x prefills), k] x [k, n] when both read [m,k]x[k,n]
    with the same k and n, else a's."""
    ga, gb = predict._gemm_m_n(a), predict._gemm_m_n(b)
    if not ga or not gb or a.split("]x[", 1)[1] != b.split("]x[", 1)[1]:
        return a
    m = ga[0] + round(gb[0] * prefills)
    return "[" + str(m) + a[a.index(","):]


def _scaled(op, k):
    """A row's FLOPs, activation and KV bytes times k (its weights read once)."""
    return op.replace(matrix_flops=round(op.matrix_flops * k), vector_flops=round(op.vector_flops * k),
                      act_read=round(op.act_read * k), act_write=round(op.act_write * k),
                      kv_read=round(op.kv_read * k), kv_write=round(op.kv_write * k))


def cp_split(input_len, output_len, cp=1):
    """(decode history, prompt tokens, their history) one device of a context-parallel group of
    cp ranks runs per request, the convention `parallel` follows (analyses/parallel/costs.py): a
    decode step at history h costs the step at ceil(h / cp) (each rank holds that much of every
    request's cache; the mean, P + G / 2, here), and a prompt is split zig-zag (2 cp chunks of
    h = P / (2 cp), rank r taking chunks r and 2 cp - 1 - r), so every rank runs P / cp tokens
    after (cp - 1) h of history, the causal pairs of 1/cp of the prompt. cp 1: (P + G/2, P, 0)."""
    history = input_len + output_len // 2
    if cp == 1:
        return history, input_len, 0
    return math.ceil(history / cp), math.ceil(input_len / cp), (cp - 1) * input_len // (2 * cp)


def concurrency(arch, w, memory_bytes, input_len, output_len, cp=1, requests=None, engine_limits=None):
    """(N, room, engine batch limit): the requests an engine keeps in flight on one device
    (or one device's shard `arch`) with `memory_bytes` to allocate from, at most `requests` (a
    finite run's request count; None: unbounded); under context parallelism each device holds
    ceil(L / cp) of a request's L cached tokens. `engine_limits`: the (max batch size, max num
    tokens) the engine was built with (trtllm_bench.engine_setting), else the batch limit from
    the runtime's room (engine_batch) and no token limit. A token limit M caps N where one steady-
    state iteration would carry more tokens than M: N decode tokens and N P / (G - 1) prompt
    tokens, so N <= M / (1 + P / (G - 1))."""
    # the shard's weights memoized: a search meets each shard under many CP degrees and batches
    weights = placement.memo(("serving weight bytes", arch, w.without_history()), lambda: arch.weight_bytes(w))
    room = KV_FRACTION * max(memory_bytes - weights, 0)
    final = request_bytes(arch, w, math.ceil((input_len + output_len - 1) / cp))
    if engine_limits is None:
        limit = engine_batch(room, request_bytes(arch, w, math.ceil((input_len + output_len) / cp)))
        tokens_cap = limit
    else:
        limit, max_tokens = engine_limits
        tokens_cap = int(max_tokens / (1 + cp_split(input_len, output_len, cp)[1] / max(output_len - 1, 1)))
    fits = int(room // final) if final else limit
    n = min(fits, limit, tokens_cap)
    return (n if requests is None else min(n, requests)), room, limit


def iteration(arch, w, rates, n, input_len, output_len, comm_s=None, cp=1):
    """(GPU seconds of one steady-state iteration at concurrency n, its rows); `comm_s`
    maps the iteration's token count per device and its decode tokens to its exposed
    communication seconds; under context parallelism one device's share (`cp_split`)."""
    history, prompt, before = cp_split(input_len, output_len, cp)

    def make():
        steps = max(output_len - 1, 1)
        dec = ledger.operators(arch, w.replace(batch=n, tokens=1, history=history, logits="last"))
        pre = ledger.operators(arch, w.replace(batch=1, tokens=prompt, history=before, logits="last"))
        rows = mixed_ops(dec, pre, n / steps)
        return predict.pass_time(rows, rates), rows

    # memoized: a search meets the same shard at the same concurrency under many layouts
    gpu, rows = placement.memo(("serving iteration", arch, w, rates, n, input_len, output_len, cp), make)
    steps = max(output_len - 1, 1)
    if comm_s is not None:
        gpu += comm_s(n + n * prompt / steps, n)
    return gpu, rows


# MLPerf's Server TPOT is the 99th percentile over the run's samples of each sample's time per output
# token (mlcommons/inference loadgen/results.cc, ProcessTokenLatencies: the sorted
# time_per_output_token_arr read at target_tpot_percentile), its queries issued as a Poisson process
# (mlcommons/inference_policies inference_rules.adoc, Scenarios: "LoadGen sends new queries to the SUT
# according to a Poisson distribution"). Z_TAIL: the standard normal's 99th percentile,
# statistics.NormalDist().inv_cdf(0.99) (tests/test_prediction.py checks it; statistics is not
# imported here for its start-up cost).
Z_TAIL = 2.3263478740408408


def tail_concurrency(m, cap):
    """The requests in flight a request at the 99th percentile of TPOT shares its decode with, when
    m are in flight on average under Poisson arrivals: a request's TPOT is the mean iteration over
    its own lifetime of D iterations, and the others in flight over it are the arrivals of the window
    (-D, D) weighted by their overlap, mean m, variance m x 2/3 (the integral of the overlap's square:
    2 x integral over [0, D] of (u / D)^2 du = 2D / 3, times the arrival rate m / D). Its p99:
    ceil(m + Z_TAIL x sqrt(2 m / 3)), normal for the Poisson count, at most `cap` (the memory's N:
    more requests wait for admission instead of sharing the iteration)."""
    return min(cap, math.ceil(m + Z_TAIL * math.sqrt(2 * m / 3)))


def latency_limited(step_s, n, tpot_limit_s):
    """A concurrency m <= n at the TPOT limit: n when its iteration `step_s(n)` (one output
    token of every request in flight: the TPOT) is within `tpot_limit_s`; else, by bisection on
    [1, n], an m whose iteration is within the limit while m + 1's is not (1 when even one
    request exceeds it). The iteration grows with the requests in flight except for the few-
    percent steps of wave quantisation, so m is the limit's crossing up to those steps."""
    if step_s(n) <= tpot_limit_s:
        return n
    lo, hi = 1, n            # step_s(hi) > limit; lo is the answer unless step_s(1) > limit too
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if step_s(mid) <= tpot_limit_s:
            lo = mid
        else:
            hi = mid
    return lo


def predicted_serving(arch, w, device, input_len, output_len, constants=None, comm_s=None,
                      tpot_limit_s=None, cp=1, requests=None, engine_limits=None, engine=DEFAULT_ENGINE):
    """The predicted steady state of one replica (one device, or the shard `arch` each of
    its devices holds): concurrency, iteration time split, output tokens/s of the replica.
    With `tpot_limit_s` (a latency-constrained load such as MLPerf's Server scenario) the
    concurrency is lowered to the largest whose iteration meets the TPOT limit
    (latency_limited). The memory is the engine's (efficiency.memory.engine_memory_bytes: the
    device's default, ECC-enabled capacity). Under context parallelism (`cp`) the shard is
    one CP rank's: its cache share and its share of each iteration (`cp_split`). None when
    the device has no prediction (no published peak) or nothing fits. `requests`: a finite
    run's request count, a cap on the concurrency (`concurrency`); `engine_limits`: the engine's
    built (max batch size, max num tokens), where the case publishes how it was built. `engine`:
    whose host step bounds the iteration from below on the device's host (`host_floor_s`)."""
    kernel_s, host_fixed, sequence_layer_s, prefill_token_layer_s, sequence_host_s = constants or FITTED["all"]
    rates = predict.achievable(device, w.compute_dtype, kernel_s)
    if rates is None:
        return None
    n, room, limit = concurrency(arch, w, memory.engine_memory_bytes(device), input_len, output_len, cp, requests,
                                 engine_limits)
    if n < 1:
        return None
    memory_n = n
    layers = len(arch.layers)
    steps = max(output_len - 1, 1)
    prompt = cp_split(input_len, output_len, cp)[1]

    def per_token_s(m):   # per-sequence work and the context phase's per-token work
        return (sequence_layer_s * m + prefill_token_layer_s * m * prompt / steps) * layers

    def host_s(m):        # the host's fixed part and its walk over the m requests in flight
        return host_fixed + sequence_host_s * m

    if tpot_limit_s is not None:
        def step_s(m):
            return max(iteration(arch, w, rates, m, input_len, output_len, comm_s, cp)[0] + per_token_s(m) + host_s(m),
                       host_floor_s(engine, device, m))
        n = latency_limited(lambda m: step_s(tail_concurrency(m, memory_n)), n, tpot_limit_s)
    gpu, rows = iteration(arch, w, rates, n, input_len, output_len, comm_s, cp)
    sequences = sequence_layer_s * n * layers
    prompts = per_token_s(n) - sequences
    host = host_s(n)
    floor = host_floor_s(engine, device, n)
    it = max(gpu + per_token_s(n) + host, floor)   # predicted_at_batch's, in its order
    rec = {
        "concurrency": n,
        "engine_batch_limit": limit,
        "kv_room_bytes": int(room),
        "iteration_s": it,
        "gpu_s": gpu + sequences + prompts,
        "kernels": predict.kernel_count(rows),
        "sequence_s": sequences,
        "prefill_tokens": n * prompt / steps,
        "prefill_token_s": prompts,
        "host_s": host,
        "output_tokens_per_s": n * output_len / steps / it,
    }
    if floor:                      # a host with a measured step: the floor under the iteration
        rec.update(host_step_s=floor)
    if tpot_limit_s is not None:   # a latency-constrained load: the limit and the memory's N
        rec.update(tpot_limit_s=tpot_limit_s, memory_concurrency=memory_n)
    if requests is not None:       # a finite run: its request count, the cap on N
        rec.update(requests=requests)
    if engine_limits is not None:  # the engine's built limits (the build rule's result)
        rec.update(engine_max_num_tokens=engine_limits[1])
    return rec


TP_REDUCE_BYTES = 2   # the residual stream is all-reduced in 16 bits, whatever the GEMM format


def tp_comm(device, tp, arch):
    """tokens -> exposed seconds of one iteration's TP all-reduces (after attention and after
    the MLP in every layer, and the vocab-parallel embedding's), each as NCCL runs it on the tier
    the group spans (efficiency.collective: its algorithm and protocol for the message size, at
    the fitted residual), none overlapped with the GEMMs."""
    from ... import comm
    from ...collectives import tp_collectives
    from . import collective

    tier = comm.tier(tp, device)
    links = comm.links(device)
    up, out = links.get("up"), links.get("out")

    def seconds(tokens, decode=0):
        cs = tp_collectives(max(1, round(tokens)), arch.hidden_size, TP_REDUCE_BYTES, tp=tp, sp=False,
                            layers=len(arch.layers), tier=tier)
        return plain_sum(c.count * collective.seconds(c, up, out, device.id) for c in cs)
    return seconds


def predicted_layout(arch, w, device, lay, input_len, output_len, constants=None, tpot_limit_s=None,
                     requests=None, engine=DEFAULT_ENGINE, engine_limits=None):
    """The predicted steady state of a layout: one replica of tp x cp x pp devices (each device
    holds its TP shard of its stage's layers, the all-reduces exposed), dp replicas adding up; the
    replica's record plus `output_tokens_per_s_cluster`. Under pipeline parallelism the
    replica runs `pipelined` (pp micro-batches in flight); under context parallelism each
    device is one CP rank (`cp_split`, `cp_comm`). None under a skewed routing model with EP, or
    without a prediction on the device. `requests`: a finite run's request count, shared by the
    dp replicas (each keeps at most ceil(requests / dp) in flight). `engine`: whose host step
    bounds each replica's iteration from below (`host_floor_s`). `engine_limits`: the (max batch
    size, max num tokens) each replica's engine was sized with (trtllm_bench: the rule sees one
    replica's tp x pp devices; its batch is the whole TP group's, its tokens one iteration's); an
    error under pipeline parallelism, whose per-stage share of the limits is not modelled."""
    if engine_limits is not None and lay.pp > 1:
        raise UserError(f"engine limits {engine_limits} with pp {lay.pp}: a pipelined replica's share of "
                        f"the rule's limits is not modelled")
    replica = None if _routing_unmodelled(w, lay) else _replica(arch, device, lay, w)
    if replica is None:
        return None
    per_replica = None if requests is None else math.ceil(requests / lay.dp)
    if lay.pp > 1:
        rec = pipelined(replica, w, device, lay, input_len, output_len, constants, tpot_limit_s,
                        requests=per_replica, engine=engine)
    else:
        rec = predicted_serving(replica[0][0], w, device, input_len, output_len, constants, replica[0][1],
                                tpot_limit_s, lay.cp, per_replica, engine_limits, engine=engine)
    if rec is None:
        return None
    return {**rec, "exposed_collectives": exposed_collectives(lay),
            "output_tokens_per_s_cluster": rec["output_tokens_per_s"] * lay.dp,
            "output_tokens_per_s_per_device": rec["output_tokens_per_s"] * lay.dp / lay.devices}


def exposed_collectives(lay):
    """What communication a layout's predicted iteration exposes, in words."""
    parts = (["TP all-reduces"] * (lay.tp > 1 or lay.ep <= lay.tp and lay.cp == 1)
             + ["EP dispatch and combine all-to-alls"] * (lay.ep > lay.tp)
             + ["CP merges of the partial attention and K/V ring passes"] * (lay.cp > 1))
    return " and ".join(parts)


def _routing_unmodelled(w, lay):
    """Expert parallelism under a skewed routing model (concentrated, a histogram): the busiest
    rank's expert GEMMs set the pace, and a shard's ledger carries the mean share: no prediction."""
    return lay.ep > 1 and getattr(w, "routing", "uniform") not in ("uniform", "balanced")


def _replica(arch, device, lay, w):
    """[(the shard each device of a stage holds, its TP all-reduces' seconds per token count or
    None, the stages that hold an equal shard)], one entry per distinct stage (equal
    `stage_signature`s have equal figures: computed once). Expert parallelism inside the TP group
    (ep <= tp: each device holds experts / ep whole experts, split tp / ep ways, instead of a
    1/tp slice of every expert; TensorRT-LLM's moe_ep_size x moe_tp_size = tp_size) keeps the TP
    replica's collectives: the tokens are replicated over the group, each device runs its experts'
    share of the routed copies (the shard's ledger: the mean share, uniform routing) and the
    all-reduce after the MLP sums the experts' outputs, as it sums a TP MLP's partial outputs.
    Expert parallelism beyond the TP group (attention data parallelism over ep / tp replicas of
    tp devices: each device runs its replica's requests' attention, split tp ways, and its
    experts / ep experts for the copies the EP group routes to them, the shard's ledger) adds each
    MoE layer's dispatch and combine all-to-all of each TP rank's 1/tp share of the iteration's
    copies, and with tp > 1 keeps the replica's TP all-reduces (`ep_comm`). Context parallelism
    adds each layer's CP collectives to those (`cp_comm`; `w` gives the cache format)."""
    out = []
    for shard, count in stage_shards(arch, lay):
        comm_s = (ep_comm(device, lay, shard) if lay.ep > lay.tp
                  else tp_comm(device, lay.tp, shard) if lay.tp > 1 else None)
        out.append((shard, cp_comm(device, lay, shard, w, comm_s) if lay.cp > 1 else comm_s, count))
    return out


def ep_comm(device, lay, shard):
    """tokens -> exposed seconds of one iteration's expert-parallel collectives on a device of an
    attention-data-parallel replica (ep > tp): per MoE layer a dispatch and a combine of the
    top-k copies of its TP rank's 1/tp share of the tokens in 16 bits (`collectives.moe_collectives`
    with ep > tp: `ep_collectives` with share = tp; uniform routing; the convention `parallel` and
    `train` share), each as NCCL runs it on the tier the EP group spans, not overlapped; with
    tp > 1 the replica's TP all-reduces too (`tp_comm`: after the attention and after the MLP of
    every layer, the latter reassembling the routed outputs of the TP ranks' shares, as
    `collectives.moe_keeps_tp_reduction` keeps it without sequence parallelism)."""
    from ... import comm
    from ...blocks.moe import MoE
    from ...collectives import moe_collectives
    from . import collective

    blocks = [b for layer in shard.layers for b in layer.blocks if isinstance(b, MoE)]
    if not blocks:
        return tp_comm(device, lay.tp, shard) if lay.tp > 1 else None
    b = blocks[0]
    tier = comm.tier(lay.group_span("ep"), device)
    links = comm.links(device)
    up, out = links.get("up"), links.get("out")
    domain = device.scale_up.domain_size if device.scale_up else 1
    local = comm.ranks_per_domain(lay, "ep", domain)
    tp_s = tp_comm(device, lay.tp, shard) if lay.tp > 1 else None

    def seconds(tokens, decode=0):
        cs = moe_collectives(max(1, round(tokens)), b.top_k, b.hidden, TP_REDUCE_BYTES, tp=lay.tp, ep=lay.ep,
                             moe_layers=len(blocks), tier_ep=tier, tier_tp=comm.tier(lay.tp, device),
                             experts=b.experts, local_ep=local)
        ep_s = plain_sum(c.count * collective.seconds(c, up, out, device.id) for c in cs)
        return ep_s + tp_s(tokens) if tp_s else ep_s
    return seconds


def cp_comm(device, lay, shard, w, base=None):
    """(tokens, decode) -> exposed seconds of one iteration's collectives on a CP rank: `base`'s
    (its TP or EP ones, None: none) plus per layer with a cache the CP collectives of the
    builder `parallel`'s estimate uses (`stage_comm.layer_collectives`): the all-reduce that
    merges the decode tokens' partial attention over the group ([decode, hidden] in 16 bits) and
    the ring pass of the prefill tokens' K/V shards (cp - 1 steps of tokens - decode tokens per
    rank), each as NCCL runs it on the tier the CP group spans, not overlapped."""
    from ... import comm
    from .. import stage_comm
    from . import collective

    tiers = stage_comm.group_tiers(lay, device)
    links = comm.links(device)
    up, out = links.get("up"), links.get("out")
    traffic = {p: stage_comm.Traffic(hidden=shard.hidden_size, act_bytes=TP_REDUCE_BYTES, tiers=tiers[:3] + tiers[4:],
                                     kv_dtype=w.kv_dtype, kv_path=w.mla, cp_pass=p) for p in ("merge", "ring")}

    def cp_s(tokens, p):
        if tokens < 1:
            return 0.0
        terms = {}   # per distinct layer (a model repeats a few): its terms, summed in the layers' order

        def of(layer):
            got = terms.get(layer)
            if got is None:
                got = terms[layer] = [c.count * collective.seconds(c, up, out, device.id) for c in
                                      stage_comm.layer_collectives(layer, lay, max(1, round(tokens)), traffic[p])
                                      if c.dim == "cp"]
            return got
        return plain_sum(x for layer in shard.layers for x in of(layer))

    def seconds(tokens, decode=0):
        return (base(tokens, decode) if base else 0.0) + cp_s(decode, "merge") + cp_s(tokens - decode, "ring")
    return seconds


def pp_send_s(device, lay, hidden):
    """tokens -> seconds of one pipeline boundary's send of [tokens, hidden] in 16 bits (the
    residual stream), as NCCL runs a point-to-point send on the tier the replica spans."""
    from ... import comm
    from ...collectives import pp_collectives
    from . import collective

    tier = comm.tier(lay.tp * lay.pp, device)
    links = comm.links(device)
    up, out = links.get("up"), links.get("out")

    def seconds(tokens):
        (c,) = pp_collectives(max(1, round(tokens)), hidden, TP_REDUCE_BYTES, 1, tier)
        return collective.seconds(c, up, out, device.id)
    return seconds


def pipelined(replica, w, device, lay, input_len, output_len, constants=None, tpot_limit_s=None, batch=None,
              requests=None, engine=DEFAULT_ENGINE):
    """A pipeline-parallel replica's steady state (`predicted_layout` under pp > 1): the engine
    keeps pp micro-batches of N / pp requests in flight, one per stage, so that every stage is
    busy (TensorRT-LLM's and vLLM's pipeline parallelism); each stage holds its layers' cache of
    all N requests, so N is the smallest stage's concurrency (`concurrency` per stage shard). In
    one iteration (every request advances one token) each stage runs the pp micro-batches in
    turn and the slowest stage sets the pace:

        iteration = pp x max over stages of (GPU time of ceil(N / pp) requests on the stage
                    + its per-sequence and per-prompt-token work + the boundary send of the
                    micro-batch's tokens)
                    + host time,   at least the host's step of N requests (`host_floor_s`)

    (the boundary sends are charged on the stage's time: a stage receives its micro-batch before
    it can run it). With `batch` the iteration at that concurrency (predicted_at_batch) instead
    of the engine's; `requests` caps N (a finite run's request count, `concurrency`)."""
    kernel_s, host_fixed, sequence_layer_s, prefill_token_layer_s, sequence_host_s = constants or FITTED["all"]
    rates = predict.achievable(device, w.compute_dtype, kernel_s)
    if rates is None:
        return None
    got = [concurrency(shard, w, memory.engine_memory_bytes(device), input_len, output_len, lay.cp, requests)
           for shard, _, _ in replica]
    n, room, limit = min(got, key=lambda g: g[0])
    if batch is not None:
        n = batch
    if n < 1:
        return None
    memory_n = n
    pp = lay.pp
    send = pp_send_s(device, lay, replica[0][0].hidden_size)
    steps = max(output_len - 1, 1)
    prompt = cp_split(input_len, output_len, lay.cp)[1]

    def stage_s(m):
        per = math.ceil(m / pp)
        tokens = per + per * prompt / steps
        worst = (0.0, 0)
        for shard, comm_s, _ in replica:
            gpu, rows = iteration(shard, w, rates, per, input_len, output_len, comm_s, lay.cp)
            t = (gpu + (sequence_layer_s * per + prefill_token_layer_s * per * prompt / steps) * len(shard.layers)
                 + send(tokens))
            worst = max(worst, (t, predict.kernel_count(rows)))
        return worst

    if tpot_limit_s is not None:
        def step_s(m):
            return max(pp * stage_s(m)[0] + host_fixed + sequence_host_s * m, host_floor_s(engine, device, m))
        n = latency_limited(lambda m: step_s(tail_concurrency(m, memory_n)), n, tpot_limit_s)
    t, kernels = stage_s(n)
    deepest = max(len(sh.layers) for sh, _, _ in replica)
    sequences = sequence_layer_s * math.ceil(n / pp) * deepest * pp
    prompts = prefill_token_layer_s * math.ceil(n / pp) * prompt / steps * deepest * pp
    host = host_fixed + sequence_host_s * n
    floor = host_floor_s(engine, device, n)
    it = max(pp * t + host, floor)
    rec = {
        "concurrency": n,
        "engine_batch_limit": limit,
        "kv_room_bytes": int(room),
        "iteration_s": it,
        "gpu_s": pp * t,
        "kernels": kernels * pp,
        "sequence_s": sequences,
        "prefill_tokens": n * prompt / steps,
        "prefill_token_s": prompts,
        "host_s": host,
        "pipeline_micro_batches": pp,
        "output_tokens_per_s": n * output_len / steps / it,
    }
    if floor:
        rec.update(host_step_s=floor)
    if tpot_limit_s is not None:
        rec.update(tpot_limit_s=tpot_limit_s, memory_concurrency=memory_n)
    if requests is not None:
        rec.update(requests=requests)
    return rec


def predicted_at_batch(arch, w, device, lay, input_len, output_len, batch, constants=None, engine=DEFAULT_ENGINE):
    """The prediction at a given concurrency per replica (the SLO answer's batch), not the
    engine's own: TPOT = one steady-state iteration at `batch` requests (iteration(), plus
    the per-sequence work of `batch` requests and the host time, at least the host's step of
    `batch` requests (`host_floor_s`); under pipeline parallelism
    `pipelined`'s iteration at that batch); TTFT = one prompt's prefill alone (batch 1, the SLO
    sizing's TTFT case) at the achievable rates, through every stage in turn, plus its
    all-reduces and boundary sends, one sequence's per-layer work and its prompt tokens' per-layer
    context-phase work, and one iteration's host time;
    output tokens/s per device = batch G / (G - 1) / TPOT x dp / devices; under context
    parallelism a CP rank's share of each (`cp_split`). None where predicted_layout has none
    (EP under a skewed routing model; no achievable rates on the device)."""
    kernel_s, host_fixed, sequence_layer_s, prefill_token_layer_s, sequence_host_s = constants or FITTED["all"]
    replica = None if _routing_unmodelled(w, lay) else _replica(arch, device, lay, w)
    rates = predict.achievable(device, w.compute_dtype, kernel_s)
    if replica is None or rates is None:
        return None
    _, prompt, before = cp_split(input_len, output_len, lay.cp)
    if lay.pp > 1:
        tpot = pipelined(replica, w, device, lay, input_len, output_len, constants, batch=batch,
                         engine=engine)["iteration_s"]
        send = pp_send_s(device, lay, replica[0][0].hidden_size)(prompt) * (lay.pp - 1)
    else:
        shard, comm_s, _ = replica[0]
        gpu, _ = iteration(shard, w, rates, batch, input_len, output_len, comm_s, lay.cp)
        steps = max(output_len - 1, 1)
        tpot = max(gpu + (sequence_layer_s * batch + prefill_token_layer_s * batch * prompt / steps)
                   * len(shard.layers) + (host_fixed + sequence_host_s * batch),
                   host_floor_s(engine, device, batch))   # predicted_serving's, in its order
        send = 0.0
    ttft = send + host_fixed + sequence_host_s
    for shard, comm_s, count in replica:
        pre = ledger.operators(shard, w.replace(batch=1, tokens=prompt, history=before, logits="last"))
        ttft += count * (predict.pass_time(pre, rates) + (comm_s(prompt) if comm_s else 0.0)
                         + (sequence_layer_s + prefill_token_layer_s * prompt) * len(shard.layers))
    steps = max(output_len - 1, 1)
    return {"ttft_s": ttft, "tpot_s": tpot,
            "output_tokens_per_s_per_device": batch * output_len / steps / tpot * lay.dp / lay.devices}


# -- A ceiling on the predicted rate (what `parallel --search --objective predicted` prunes by) --
#
# predicted_ceiling(...) >= predicted_layout(...)["output_tokens_per_s_per_device"] on every layout,
# from closed forms per stage shard (its tensors and the attention's cached tokens: no ledger), so a
# search can rule a layout out without its iteration's ledgers. Each term is one the iteration
# charges, counted no higher than its rows do (tests/test_predicted_ceiling.py checks each on the
# ledger of every bundled model):
#
#   iteration >= max(F / max(matrix rate, vector rate), W / bandwidth)
#                + max(n A(h, 1) / attention rate, n R(h) / bandwidth) + n / (G - 1) x A(H', P') / attention rate
#                + the fitted per-sequence and per-prompt-token terms + host (exact)
#                [+ the pipeline's boundary sends (exact)] [+ the collectives, `with_comm`]
#
# because a sum of rows max(compute_i, memory_i) is at least, over any group of the rows,
# max(their compute, their memory): the rows outside attention, the decodes' attention rows and
# the prefills' (mixed_ops keeps the two attention passes apart); with
#   F = (n + n P' / (G - 1)) x 2 x (the params of the matrix and router tensors + top_k / min(tp, ep)
#       x one routed expert's) + (n + n / (G - 1)) x 2 x the head's params     (FLOPs of those rows:
#       every position multiplies each such weight once, its routed copies split min(tp, ep) ways;
#       the head runs on one last position per pass of a request)
#   W = the bytes of those tensors outside the routed experts + each MoE layer's experts touched
#       (moe.experts_touched, the ledger's rule) by the decode's or the prefill's tokens
#   R(h) = the cache bytes a decode at history h reads in its attention rows: the cached keys its
#       token sees (blocks.attention.keys_touched, less its own) x the bytes a key adds to those
#       rows, over the blocks whose rows follow blocks.attention's key and pair counts
#       (`_cache_readers`: softmax attention, MLA); recurrent state, compressed and sparse caches
#       are left out (their reads are not all of what they hold)
#   A(H, T) = the FLOPs of those blocks' attention rows for T tokens after H: the causal pairs x
#       the FLOPs of one pair; the decodes' and the prefills' attention rows are rows of their own
# P' is a CP rank's prompt share, H' its history before it and h its decode history (cp_split).
# Norm and bias vectors, the embedding's gather, vector FLOPs, activation traffic, kernel launches
# and (without `with_comm`) the collectives are left out: a ceiling, never below the figure.

def _cache_readers():
    from ...blocks.attention import Attention
    from ...blocks.mla import MLA
    return (Attention, MLA)


def _routed_experts():
    from ...blocks.moe import MoE
    return MoE


def shard_counts(arch, w):
    """(weight bytes W0, matrix FLOPs per position, head FLOPs per last position, ((MoE block,
    layers holding it, bytes of one routed expert), ...)) of a shard in `w`'s formats: the terms
    of `iteration_floor` that do not depend on the tokens (memoized per shard and formats)."""
    def make():
        moe = _routed_experts()
        weights, token_flops, head_flops, experts = 0, 0.0, 0, []
        for block, count in _blocks_of(arch):
            routed = {t.name for t in block._expert()} if isinstance(block, moe) else ()
            for t in block.tensors():
                if t.name in routed or t.role not in ("matrix", "router", "head"):
                    continue
                weights += count * w.weight_bytes(t)
                if t.role == "head":
                    head_flops += 2 * count * t.params
                else:
                    token_flops += 2 * count * t.params
            if routed:
                one = block._expert()
                token_flops += 2 * count * block.top_k * plain_sum(t.params for t in one if t.role == "expert") \
                    / min(block.tp, block.ep)
                experts.append((block, count, plain_sum(w.weight_bytes(t) for t in one)))
        return weights, token_flops, head_flops, tuple(experts)
    return placement.memo(("serving shard counts", arch, w.without_history()), make)


def _blocks_of(arch):
    """(block, layers holding it) of every block of an architecture, the top blocks once."""
    yield arch.embedding, 1
    for layer, count, _ in arch.layer_groups():
        for block in layer.blocks:
            yield block, count
    yield arch.final_norm, 1
    yield arch.head, 1


def expert_read_bytes(experts, w, tokens):
    """Bytes of the routed experts a pass of `tokens` positions reads: per MoE layer the experts
    its EP group's tokens touch, this device's share (the ledger's rule, MoE.experts_read)."""
    return plain_sum(count * b.experts_read(w, tokens) * per_expert for b, count, per_expert in experts)


def attention_readers(arch, w):
    """((block, layers x the bytes its attention rows read per cached key, layers x their FLOPs per
    query-key pair), ...) of the shard's blocks whose attention rows scale with the keys and pairs
    of blocks.attention (`_cache_readers`: softmax attention, MLA): both from the block's own rows
    of one request and one token, at history 1 less at history 0 (one key more) and at history 0
    (one pair); memoized per shard, formats and MLA path. An MLA path that reads its cache in a
    projection (expanded) reads no key in its attention rows: 0, as counted."""
    def make():
        out, readers, one = [], _cache_readers(), w.replace(batch=1, tokens=1, history=0)

        def attention(rows, field):
            return plain_sum(getattr(op, field) for op in rows if op.category == "attention")
        for layer, count, _ in arch.layer_groups():
            for b in layer.blocks:
                if isinstance(b, readers):
                    first, second = b.ops(one), b.ops(one.replace(history=1))
                    out.append((b, count * (attention(second, "kv_read") - attention(first, "kv_read")),
                                count * attention(first, "matrix_flops")))
        return tuple(out)
    return placement.memo(("serving attention readers", arch, w.without_history()), make)


def history_read_bytes(arch, w, history, readers=None):
    """R(h): one request's cache bytes a decode step's attention rows read at `history` over
    `attention_readers` (or `readers`, their tuple): per block its bytes per key x the cached keys
    the new token sees, keys_touched(h, 1) - 1 (h; a window's W - 1; a chunk's h mod C), never its
    own new key."""
    return plain_sum(per_key * (keys_touched(history, 1, getattr(b, "window", None), getattr(b, "chunk", None)) - 1)
                     for b, per_key, _ in readers or attention_readers(arch, w))


def attention_pair_flops(arch, w, history, tokens, readers=None):
    """A(H, T): one request's attention-row FLOPs for T new tokens after H over `attention_readers`
    (or `readers`): per block its FLOPs per pair x the causal pairs its kernel computes (windows and
    chunks capped, blocks.attention.causal_pairs)."""
    return plain_sum(per_pair * causal_pairs(history, tokens, getattr(b, "window", None), getattr(b, "chunk", None))
                     for b, _, per_pair in readers or attention_readers(arch, w))


def iteration_floor(arch, w, rates, n, input_len, output_len, cp=1):
    """A lower bound on `iteration(arch, w, rates, n, ...)`'s GPU seconds without its
    communication (the section's comment above):

        max(F / max(matrix, vector rate), W / bandwidth)                the rows outside attention
        + max(n A(h, 1) / attention rate, n R(h) / bandwidth)           the decodes' attention rows
        + n / (G - 1) x A(H', P') / attention rate                      the prefills' attention rows

    The iteration rounds its scaled prefill rows to whole FLOPs and bytes (under 1e-14 s a row at
    these rates): far less than the kernel launches the floor leaves out (kernel_s a row that
    moves bytes)."""
    def make():
        history, prompt, before = cp_split(input_len, output_len, cp)
        prefills = n / max(output_len - 1, 1)
        weights, token_flops, head_flops, experts = shard_counts(arch, w)
        flops = token_flops * (n + prefills * prompt) + head_flops * (n + prefills)
        read = weights + max(expert_read_bytes(experts, w, n), expert_read_bytes(experts, w, prompt)) if experts \
            else weights
        outside = max(flops / max(rates.matrix_flops_per_s, rates.vector_flops_per_s), read / rates.bytes_per_s)
        readers = attention_readers(arch, w)
        if not readers:
            return outside
        decodes = max(n * attention_pair_flops(arch, w, history, 1, readers) / rates.attention_flops_per_s,
                      n * history_read_bytes(arch, w, history, readers) / rates.bytes_per_s)
        return (outside + decodes
                + prefills * attention_pair_flops(arch, w, before, prompt, readers) / rates.attention_flops_per_s)
    return placement.memo(("serving iteration floor", arch, w, rates, n, input_len, output_len, cp), make)


def stage_shards(arch, lay):
    """[(the shard each device of a stage holds, the stages that hold an equal one)], one entry per
    distinct stage (`stage_signature`), in the stages' order; the architecture itself on one device."""
    if lay.tp == 1 and lay.pp == 1 and lay.ep == 1 and lay.cp == 1:
        return [(arch, 1)]

    def make():
        groups = {}
        for st in placement.stages(arch, lay):
            key = placement.stage_signature(arch, lay, st)
            if key in groups:
                groups[key][1] += 1
            else:
                groups[key] = [placement.shard(arch, lay, st), 1]
        return tuple(tuple(g) for g in groups.values())
    return list(placement.memo(("serving stage shards", arch, lay.tp, lay.ep, lay.pp, lay.pp_layers), make))


def predicted_ceiling(arch, w, device, lay, input_len, output_len, constants=None, with_comm=False):
    """An upper bound on predicted_layout(...)["output_tokens_per_s_per_device"], None exactly where
    that is None (EP under a skewed routing model, no achievable rates, nothing fits): the engine's
    concurrency N (`concurrency`, exact: the smallest stage's) over a lower bound on its iteration,

        N G / (G - 1) / (pp x max over stages of (iteration_floor at m + the fitted per-sequence
                         and per-prompt-token work of m + [pp > 1] the boundary send)
                         + host time of N) x dp / devices,      m = ceil(N / pp) (N when pp = 1)

    `pipelined`'s and `predicted_serving`'s sums with each stage's GPU time bounded below (the
    host step's floor, `host_floor_s`, left out: a smaller iteration, still a ceiling). With
    `with_comm` each stage adds its exposed collectives (the exact ones of `_replica`: tighter, and
    as costly to build as the figure's own)."""
    kernel_s, host_fixed, sequence_layer_s, prefill_token_layer_s, sequence_host_s = constants or FITTED["all"]
    rates = predict.achievable(device, w.compute_dtype, kernel_s)
    if rates is None or _routing_unmodelled(w, lay):
        return None
    stages = (_replica(arch, device, lay, w) if with_comm
              else [(shard, None, count) for shard, count in stage_shards(arch, lay)])
    memory_bytes = memory.engine_memory_bytes(device)
    n = min(concurrency(shard, w, memory_bytes, input_len, output_len, lay.cp)[0] for shard, _, _ in stages)
    if n < 1:
        return None
    steps = max(output_len - 1, 1)
    prompt = cp_split(input_len, output_len, lay.cp)[1]
    m = math.ceil(n / lay.pp)
    tokens = m + m * prompt / steps
    send = 0.0
    if lay.pp > 1:   # the boundary send of pipelined's stage time, memoized (it depends on tp x pp alone)
        hidden = stages[0][0].hidden_size
        send = placement.memo(("serving pp send", device, lay.tp * lay.pp, hidden, tokens),
                              lambda: pp_send_s(device, lay, hidden)(tokens))
    slowest = 0.0
    for shard, comm_s, _ in stages:
        t = (iteration_floor(shard, w, rates, m, input_len, output_len, lay.cp)
             + (sequence_layer_s * m + prefill_token_layer_s * m * prompt / steps) * len(shard.layers) + send)
        if comm_s is not None:
            t += comm_s(tokens, m)
        slowest = max(slowest, t)
    it = lay.pp * slowest + host_fixed + sequence_host_s * n
    return n * output_len / steps / it * lay.dp / lay.devices

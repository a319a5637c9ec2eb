"""`validate`'s predicted figure per case, and its accuracy per family.

For a serving case the prediction is efficiency.serving's steady state for the case's
model, device, formats, lengths and layout (a tensor-parallel replica: each device's shard,
its TP all-reduces exposed; dp replicas add up), at the fitted constants of
efficiency.serving.FITTED chosen leave one publication out: a case is predicted with the
constants fitted on every publication but its own, so no case's own measurement shapes
its prediction. The accuracy table gives, per family, the median and 90th percentile of
|predicted / measured - 1| and the worst case with what dominated its predicted time.
"""

import statistics

from ..errors import UserError

FAMILIES = ("serving, one device", "serving, several devices", "training, dense", "training, MoE",
            "collectives")


def publication(case):
    """The publication a case comes from: publisher and title (its version included)."""
    src = case["source"] if isinstance(case["source"], dict) else {}
    return f"{src.get('publisher', '')}: {src.get('title', '')}"


# The serving engine of a publication, by the name its title gives (every serving publication of
# the corpus names one: TensorRT-LLM's performance pages, MLPerf submissions on "TensorRT" or
# "vLLM"); the fitted engine constants (efficiency.fit) are the engine's.
ENGINES = (("vLLM", "vLLM"), ("TensorRT", "TensorRT-LLM"))


def engine(case):
    """The serving engine a case ran on, from its publication's title; an error naming the case
    when the title names none (no silent default)."""
    title = case["source"].get("title", "") if isinstance(case["source"], dict) else ""
    for word, name in ENGINES:
        if word in title:
            return name
    raise UserError(f"validation case {case['id']}: its source title names no serving engine "
                    f"({', '.join(w for w, _ in ENGINES)})")


def family(case, arch=None):
    s = case["setup"]
    if case["kind"] == "training-step":
        if arch is None:
            from .validate import _model
            arch = _model(case)
        moe = arch.active_params != arch.params
        return "training, MoE" if moe else "training, dense"
    if case["kind"] == "collective":
        return "collectives"
    return "serving, several devices" if s["devices"] > 1 else "serving, one device"


def constants_for(case):
    """(constants, key): the fit without the case's publication, else the fit on all cases."""
    from .efficiency.serving import FITTED

    key = publication(case)
    return (FITTED[key], "without its publication") if key in FITTED else (FITTED["all"], "all cases (in-sample)")


# MLPerf Server scenario's latency limits (p99 TTFT, p99 TPOT, seconds) per benchmark, keyed by
# the benchmark's name (the last item of an MLPerf publication's title): llama2-70b 2000 / 200 ms (mlcommons/inference loadgen/mlperf.conf,
# `llama2-70b.Server.ttft_latency = 2000`, `llama2-70b.Server.tpot_latency = 200`); llama3.1-8b
# 2000 / 100 ms (mlcommons/inference_policies inference_rules.adoc, the benchmarks' latency
# table). The prediction applies the TPOT limit to the mean iteration (the engine can run no more
# requests than keep every token within it); TTFT is not checked (chunked prefill puts a prompt of
# these lengths in one iteration, far below 2 s).
MLPERF_SERVER_LIMITS = {"llama2-70b": (2.0, 0.200), "llama3.1-8b": (2.0, 0.100)}


def tpot_limit(case):
    """The TPOT limit (seconds) of an MLPerf Server case, else None (an Offline run, or a
    server load without a latency limit, such as trtllm-bench at unlimited request rate)."""
    title = case["source"].get("title", "") if isinstance(case["source"], dict) else ""
    if case["setup"].get("scenario") != "server" or not title.startswith("MLPerf Inference"):
        return None
    return MLPERF_SERVER_LIMITS[title.rsplit(", ", 1)[-1]][1]


# Publications whose runs trtllm-bench's tuning rule sized (it sets the max batch size and max num
# tokens from the model, the quantisation, TP/PP and the dataset's ISL/OSL; efficiency.trtllm_bench),
# keyed by title, each with the rule's version:
# - TensorRT-LLM 0.14's performance page builds every engine with `trtllm-bench --model $model_name
#   build --tp_size $tp_size --quantization FP8 --dataset $dataset_file` (FP16 engines the same
#   without --quantization; docs/source/performance/perf-overview.md at v0.14.0, "Engine Building");
# - TensorRT-LLM 1.0's runs `trtllm-bench --tp $tp_size --pp $pp_size [--ep $ep_size] --model
#   $model_name throughput --dataset $dataset_file --backend pytorch --extra_llm_api_options
#   $llm_options`, passing neither --max_batch_size nor --max_num_tokens (its options file sets
#   CUDA-graph batch sizes and padding only; perf-overview.md at commit 00f37686, "Running the
#   Benchmark"), so get_settings sizes the run by the rule, chunked prefill off (the default).
TRTLLM_BENCH_BUILDS = {
    "TensorRT-LLM Performance Overview, v0.14.0 data (docs/source/performance/perf-overview.md)": "v0.14",
    "TensorRT-LLM Performance Overview (docs/source/performance/perf-overview.md)": "v1.0",
}


def engine_limits(case, arch, w, device):
    """(max batch size, max num tokens) of a case whose publication sized its runs with
    trtllm-bench's rule (TRTLLM_BENCH_BUILDS), from the checkpoint (v0.14: its parameters; v1.0:
    its safetensors elements in the case's formats), its attention's KV heads and head size, the
    formats, the device's driver total, the layout's TP and PP and the case's lengths; v1.0 at the
    KV fraction the prediction's runtime room takes (efficiency.serving.KV_FRACTION, the
    throughput command's default). None for other cases (the engine limit then follows the
    runtime's room: efficiency.serving.engine_batch). An error naming the case where the rule's
    inputs are not one uniform attention."""
    version = TRTLLM_BENCH_BUILDS.get(case["source"].get("title"))
    if version is None:
        return None
    from ..blocks.attention import Attention
    from .efficiency import memory, serving, trtllm_bench

    s = case["setup"]
    heads = {(b.kv_heads, b.head_dim) for layer in arch.layers for b in layer.blocks if isinstance(b, Attention)}
    if len(heads) != 1 or any(not any(isinstance(b, Attention) for b in layer.blocks) for layer in arch.layers):
        raise UserError(f"validation case {case['id']}: trtllm-bench's tuning rule needs one attention "
                        f"geometry in every layer; {arch.id} has {sorted(heads)}")
    (kv_heads, head_size), = heads
    lay = s.get("layout", {})
    common = dict(kv_heads=kv_heads, head_size=head_size, device_total_bytes=memory.engine_memory_bytes(device),
                  input_len=s["input_len"], output_len=s["output_len"], tp=lay.get("tp", 1), pp=lay.get("pp", 1))
    if version == "v0.14":
        return trtllm_bench.engine_setting(
            param_count=arch.params, fp8_weights=s["weight_dtype"] == "fp8", layers=len(arch.layers),
            fp8_cache=s["kv_dtype"] == "fp8", **common)
    return trtllm_bench.pytorch_setting(
        checkpoint_elements=arch.checkpoint_elements(w), weight_format=s["weight_dtype"], kv_format=s["kv_dtype"],
        attention_layers=len(arch.layers), max_input_len=s["input_len"], kv_fraction=serving.KV_FRACTION, **common)


def serving_prediction(case, constants=None):
    """(predicted figure in the case's unit, the steady-state record) of a serving case;
    (None, None) when the tool has no prediction for it."""
    from .efficiency.serving import predicted_layout, predicted_serving
    from .validate import _device, _layout, _model, _serving_workload

    s, m = case["setup"], case["measured"]
    arch = _model(case)
    device = _device(s["device"])
    w = _serving_workload(s, arch)
    constants = constants or constants_for(case)[0]
    limit = tpot_limit(case)
    limits = engine_limits(case, arch, w, device)
    if s["devices"] > 1:
        rec = predicted_layout(arch, w, device, _layout(case, arch), s["input_len"], s["output_len"], constants,
                               limit, s.get("requests"), engine(case), engine_limits=limits)
        out = rec and rec["output_tokens_per_s_cluster"]
    else:
        rec = predicted_serving(arch, w, device, s["input_len"], s["output_len"], constants,
                                tpot_limit_s=limit, requests=s.get("requests"), engine_limits=limits,
                                engine=engine(case))
        out = rec and rec["output_tokens_per_s"]
    if rec is None:
        return None, None
    G, P = s["output_len"], s["input_len"]
    value = {"output_tokens_per_s": out, "requests_per_s": out / G,
             "total_tokens_per_s": out / G * (P + G)}.get(m.get("unit"))
    return value, rec


PREDICTION_CONVENTIONS = (
    "Predicted (beside the bound, not a bound): serving cases at efficiency.serving's steady "
    "state (the engine's concurrency and batch limit, at most the run's published request count "
    "where the case gives one, one iteration of decode and chunked "
    "prefill at achievable rates, TP all-reduces exposed, a fixed cost per request in flight in "
    "the form the engine's scheduler runs it (TensorRT-LLM: on the GPU per layer; vLLM: on the host "
    "per request, its Python scheduler walking every request each step), host time per iteration, "
    "and at least the engine's measured host step of the requests in flight where one is published "
    "(TensorRT-LLM on a Grace host: 29.0 us a request, overlapped with the GPU's work)); "
    "error = predicted / measured - 1 (positive: the prediction is optimistic). Its four fitted "
    "constants are the serving engine's (TensorRT-LLM or vLLM, named by the publication) and are "
    "fitted leave one publication out within the "
    "engine, each configuration (a publication's model, device, format and device count) counting "
    "once: a case is predicted with those fitted on the engine's other publications (column "
    "fit). Training cases: train's step estimate at the "
    "achievable matmul and HBM fractions with each publication's recipe (TRAINING_RECIPES), "
    "times one fitted factor (what that model leaves unexplained), fitted leave one publisher out. "
    "Collective cases: NCCL's own cost model (per algorithm and protocol latency, link bandwidth at "
    "NCCL's figures; efficiency.collective) with one fitted residual on the bandwidth (leave one "
    "publication out).",
    "Accuracy per family: cases with a prediction, median and 90th percentile (linear "
    "interpolation) of |error|, the median signed error, and the worst case with the term "
    "that dominated its predicted iteration; a case whose prediction takes a rate measured in its "
    "own publication (its fit column says in-sample) is printed but not counted.",
)


def with_prediction(case, row):
    """`row` (validate's bound row) with the predicted figure, its error against the
    measurement, the family and the fit it used; None where there is no prediction."""
    row.update(family=family(case), predicted=None, predicted_error=None, predicted_fit=None,
               predicted_cause=None, predicted_in_sample=False)
    if row["not_evaluated"]:
        return row
    if case["kind"] == "training-step":
        value, t = training_prediction(case)
        if value is None:
            return row
        if case["measured"]["unit"] == "step_time_s":   # a time: the error of the rate it implies
            error = case["measured"]["value"] / value - 1
        else:
            error = value / case["measured"]["value"] - 1
        factor, basis = training_factor(case)
        fit = f"step x {factor:.3f}, {basis}"
        host = 0.0
        if TRAINING_RECIPES[case["source"]["publisher"]].get("per_expert_gemms") and family(case) == "training, MoE":
            h, why = expert_host_for(case)
            fit = f"{h * 1e6:.0f} us per local expert and MoE layer, {why}; {fit}"
            host = t.micro_batches * t.stages[t.bottleneck].host_s   # the exposed share (train_time.exposed_host_pass)
        row.update(predicted=value, predicted_error=error, predicted_fit=fit,
                   predicted_cause=training_cause(t, host))
        return row
    if case["kind"] == "collective" and row.get("ratio"):
        eff, basis = collective_factor(case)
        value, name, proto = collective_prediction(case, eff)
        time = str(case["measured"].get("unit", "")).startswith("time")
        error = case["measured"]["value"] / value - 1 if time else value / case["measured"]["value"] - 1
        rate, in_sample = measured_rate(case)
        fit = f"residual {eff:.3f}, {basis}"
        if rate:
            fit = "NCCL's measured all-to-all rate, no residual, " + (
                "in-sample: measured in this publication, not in the accuracy" if in_sample else "without its publication")
        row.update(predicted=value, predicted_error=error, predicted_fit=fit,
                   predicted_cause=f"NCCL model: {name}/{proto}", predicted_in_sample=in_sample)
        return row
    if case["kind"] != "serving-throughput":
        return row
    constants, fit = constants_for(case)
    value, rec = serving_prediction(case, constants)
    if value is None:
        return row
    row.update(predicted=value, predicted_error=value / case["measured"]["value"] - 1, predicted_fit=fit,
               predicted_cause=cause(rec))
    return row


def training_cause(t, host_s=0.0):
    """The shares of a predicted step: the pipeline's micro-batches (of them the bottleneck stage's
    exposed communication and, for MoE, the per-expert host cost `host_s` per step), its bubble,
    the exposed DP sync and optimizer."""
    st = t.stages[t.bottleneck]
    comm = t.micro_batches * st.comm.total
    parts = [f"compute {(t.pipeline_s - t.bubble_s - comm - host_s) / t.step_s:.0%}",
             f"exposed communication {comm / t.step_s:.0%}"]
    if host_s:
        parts.append(f"exposed per-expert host cost {host_s / t.step_s:.0%}")
    return ", ".join(parts) + (f", bubble {t.bubble_s / t.step_s:.0%}, "
                               f"DP sync and optimizer {t.sync_s / t.step_s:.0%} of the step")


# Each training publication's recipe, as its pages and default configs state it.
TRAINING_RECIPES = {
    "NVIDIA": {"zero": 1, "overlap_dp": True, "overlap_tp": True, "recompute": "none", "per_expert_gemms": True,
               "token_permute": True, "overlap_pp": True, "unfused_expert_bias": True,
               "why": "NeMo 24.07 and 25.11 performance recipes: Megatron distributed optimizer (ZeRO-1) "
                      "with gradient reduce-scatter and parameter all-gather overlapped, TP communication "
                      "overlapped with the GEMMs (tp_comm_overlap, Transformer Engine userbuffers), "
                      "no recompute; MoE experts in Transformer Engine's GroupedLinear (one GEMM "
                      "launch per local expert); MoE tokens through Megatron-Core's all-to-all "
                      "dispatcher (its token permutations before and after each all-to-all); "
                      "expert output biases added per expert outside the GEMM (Megatron-Core's "
                      "TEGroupedMLP._apply_bias); "
                      "an interleaved pipeline's sends overlapped with compute (overlap_p2p_comm, "
                      "which Megatron Bridge sets whenever pp > 1 and vp > 1)"},
    "PyTorch (Meta)": {"zero": 3, "overlap_dp": True, "overlap_tp": False, "recompute": "selective",
                       "why": "torchtitan FSDP2 (parameters, gradients and optimizer sharded, ZeRO-3) "
                              "with prefetched all-gathers; selective activation checkpointing"},
    "DeepSeek": {"zero": 1, "overlap_dp": True, "overlap_tp": False, "overlap_ep": True, "recompute": "none",
                 "schedule": "dualpipe", "wire": ("fp8", "bf16"),
                 "why": "DeepSeek-V3 report, sections 3.2.1-3.2.3 and 3.3: DualPipe (each chunk's "
                        "all-to-all overlapped with another chunk's computation), ZeRO-1 data "
                        "parallelism, no TP, FP8 dispatch and BF16 combine; its recompute of RMSNorm "
                        "and the MLA up-projections is not charged"},
}


# Collectives: efficiency.collective's NCCL model (latency per algorithm and protocol, bandwidth
# at NCCL's link figures) with its one fitted residual, chosen leave one publication out: the
# median over the other publications' cases of the bandwidth seconds of the pair NCCL's model picks
# over the measured time less that pair's latency; "all" over every case (efficiency.collective.
# FITTED). tests/test_prediction.py refits it.
COLLECTIVE_FITTED = {
    'all': 0.8505251448435689,
    "CoreWeave: coreweave/nccl-tests pull request #43, 'feat(slurm): Add a GB200 NVL72 example'": 0.8525856493448614,
    "DeepSeek (deepseek-ai): deepseek-ai/DeepEP README, 'Low-latency kernels with pure RDMA'": 0.8591218280095859,
    "ProHuper (GitHub user): NVIDIA/nccl issue #1411, 'Why NCCL_CROSS_NIC option can improve the bandwidth of ring allreduce?'": 0.8546461538461539,
    "ProHuper (GitHub user): NVIDIA/nccl-tests issue #232, 'NCCL Tree allreduce test cannot reach the theoretical bus bandwidth on 2 nodes with 4 nics'": 0.8465099657867134,
    "erfiboy (GitHub user): NVIDIA/nccl issue #2169, '[Question]: alltoall throughput drops sharply above 512 MB message size'": 0.8465099657867134,
    "ishanbshah (GitHub user; an H100 cluster operator): nccl-tests issue #347, 'Multi-node NCCL performance drop due to cross numa issues' (output 'Within one node')": 0.8465099657867134,
    "nirandaperera (GitHub user; a RAPIDS developer running rapidsmpf's benchmarks): rapidsai/rapidsmpf issue #590, 'Poor performance against NCCL' (NCCL Alltoall busbw table)": 0.8465099657867134,
    "qdbkppkbdq (GitHub user): NVIDIA/nccl issue #1221, 'NVLS don not work in systems with more than four nodes'": 0.8546461538461539,
    "yupatrick22 (GitHub user): NVIDIA/nccl issue #1374, 'Why NVLS allreduce performance is so weird?'": 0.8465099657867134,
    "zhangmenghao (GitHub user): NVIDIA/nccl-tests issue #153, '`busbw` does not reflect the speed of hardware bottleneck in H800'": 0.8465099657867134,
}


def _collective_setup(case):
    from .. import comm
    from .collective import placed
    from .validate import _device

    s = case["setup"]
    device = _device(s["device"])
    c = placed(s["operation"], s["bytes"], s["devices"], s["ranks_per_node"], device)
    return c, comm.links(device, link_bw_out=s.get("link_bw_out_bytes_per_s")), device


def measured_seconds(case, c):
    """A collective case's measured time of one run (a busbw figure converted by nccl-tests' rule)."""
    from .. import comm

    m = case["measured"]
    if str(m.get("unit", "")).startswith("time"):
        return m["value"] * 1e-6
    return comm.bus_factor(c.kind, c.group) * c.bytes / (m["value"] * 1e9)


def collective_sample(case):
    """(publication, residual): the bandwidth seconds of the pair NCCL's model picks at residual 1
    over (measured seconds - that pair's latency); None when the latency alone exceeds the run, or
    when the prediction runs a measured all-to-all rate (no residual: efficiency.collective item 4)."""
    from .efficiency import collective

    if measured_rate(case)[0]:
        return None
    c, links, device = _collective_setup(case)
    forced = case["setup"].get("nccl_algo")
    _, _, lat, bw = min(collective.choices(c, links, device.id, forced=forced), key=lambda r: r[2] + r[3])
    rest = measured_seconds(case, c) - lat
    return (publication(case), bw / rest) if rest > 0 else None


def measured_rate(case):
    """(runs a measured rate, in-sample) of a collective case: whether its prediction takes NCCL's
    measured all-to-all rate (efficiency.collective item 4, no residual), and whether that rate was
    measured in the case's own publication: then the prediction restates the measurement, so it is
    printed but not counted in the accuracy (`accuracy`)."""
    from .efficiency import collective

    c, links, device = _collective_setup(case)
    if c.kind != "all_to_all" or collective.a2a_busbw(device.id, links.get(c.tier), c.group) is None:
        return False, False
    return True, case["source"].get("url_or_ref") == collective.A2A_URL


def fit_collectives(cases):
    """COLLECTIVE_FITTED from collective cases: the median residual over all and over all but
    each publication."""
    samples = [x for x in (collective_sample(c) for c in cases) if x]
    out = {"all": statistics.median(r for _, r in samples)}
    for pub in sorted({p for p, _ in samples}):
        rest = [r for p, r in samples if p != pub]
        if rest:
            out[pub] = statistics.median(rest)
    return out


def collective_factor(case):
    key = publication(case)
    return ((COLLECTIVE_FITTED[key], "without its publication") if key in COLLECTIVE_FITTED
            else (COLLECTIVE_FITTED["all"], "all cases (in-sample)"))


def collective_prediction(case, residual):
    """(predicted figure in the case's unit, algorithm, protocol) of a collective case."""
    from .. import comm
    from .efficiency import collective

    c, links, device = _collective_setup(case)
    t, name, proto = collective.predicted_s(c, links, device.id, residual, case["setup"].get("nccl_algo"))
    if str(case["measured"].get("unit", "")).startswith("time"):
        return t * 1e6, name, proto
    return comm.busbw(c, t) / 1e9, name, proto


def model_id(case):
    return case["setup"]["model"]


def stack(case):
    """The software stack a case's publication measures: its publisher and its title before the first
    comma, so every release of one publisher's page is one stack ("NVIDIA: Megatron Bridge Performance
    Summary" for Megatron Bridge 25.11 and 26.02)."""
    src = case["source"] if isinstance(case["source"], dict) else {}
    return f"{src.get('publisher', '')}: {src.get('title', '').split(',')[0]}"


def expert_host_for(case):
    """(seconds per local expert per MoE layer and micro-batch, basis) for a training case: the fit on
    the other models' cases of its own stack (every release of the publisher's page: efficiency.training.
    EXPERT_HOST_FITTED[stack][model]), else the fit on all."""
    from .efficiency.training import EXPERT_HOST_FITTED

    got = EXPERT_HOST_FITTED.get(stack(case), {}).get(model_id(case))
    if got is not None:
        return got, "without its model, same stack"
    return EXPERT_HOST_FITTED["all"], "all MoE cases, none of its model's in its stack"


EXPERT_HOST_GRID = tuple(round(i * 1e-5, 8) for i in range(61))   # 0-600 us in steps of 10 us


def fit_expert_host(cases):
    """efficiency.training.EXPERT_HOST_FITTED from the MoE training cases whose recipe runs per-expert
    GEMMs in the plain schedule: the value of EXPERT_HOST_GRID (0-600 us in steps of 10 us) of minimal
    median |error|, over all ("all", `train`'s default) and, per stack (`stack`: the host cost is the
    launch path's, and once the host is charged only beyond the MoE blocks' own GPU time,
    train_time.exposed_host_pass, Megatron Bridge 25.11's and 26.02's cases leave the same constant
    within 20 us per model), over its cases of every other model (leave one model out within the stack).
    A case whose recipe runs the EP all-to-all overlapped (setup.overlap_ep: Megatron's
    moe_a2a_overlap, the combined forward-backward schedule) is predicted with the constant but not in
    the fit: that schedule's own host cost (NVIDIA-NeMo/Megatron-Bridge pull request #1760 disabled it
    for "CPU overhead") is not the per-expert launch cost, and folding it in would charge it to every
    case. Each case is predicted at every grid value: the step is not linear in the constant (the host
    is charged beyond the MoE blocks' GPU time, and stages hold different numbers of MoE layers). A fit
    on the grid's last value is an error (the range no longer brackets the optimum)."""
    rows = []
    for case in cases:
        recipe = TRAINING_RECIPES.get(case["source"].get("publisher", ""), {})
        if family(case) != "training, MoE" or not recipe.get("per_expert_gemms") or case["setup"].get("overlap_ep"):
            continue
        seconds = [1 / training_prediction(case, expert_host_s=h)[0] for h in EXPERT_HOST_GRID]
        rows.append((stack(case), model_id(case), seconds, 1 / case["measured"]["value"]))

    def best(rs):
        i = min(range(len(EXPERT_HOST_GRID)), key=lambda i: statistics.median(abs(r[3] / r[2][i] - 1) for r in rs))
        if i == len(EXPERT_HOST_GRID) - 1:
            raise ValueError("fit_expert_host: the fit is the grid's last value; widen EXPERT_HOST_GRID")
        return EXPERT_HOST_GRID[i]

    out = {"all": best(rows)}
    for pub in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == pub]
        fits = {model: best([r for r in mine if r[1] != model])
                for model in sorted({r[1] for r in mine}) if any(r[1] != model for r in mine)}
        if fits:
            out[pub] = fits
    return out


def training_factor(case):
    """(factor, basis) for a training case: the fit without its publisher; a publisher with no
    dense case has no key (fit_training's keys are the dense cases' publishers), so the fit on
    every dense case holds none of its cases."""
    from .efficiency.training import FITTED as TRAINING_FITTED

    key = case["source"].get("publisher", "") if isinstance(case["source"], dict) else ""
    return ((TRAINING_FITTED[key], "without its publisher") if key in TRAINING_FITTED
            else (TRAINING_FITTED["all"], "all dense cases, none of them its publisher's: without its publisher"))


def fit_training(cases):
    """efficiency.training.FITTED from training cases: median estimate rate / measured rate, over all and
    over all but each publisher, on the dense cases only: the MoE cases are never in the fit, so
    their family's accuracy is reported on cases the factor has not seen (the factor stands in for
    what a dense step's model lacks; MoE's own costs are modelled, not fitted)."""
    ratios = []
    for case in cases:
        if family(case) != "training, dense":
            continue
        value, _ = training_prediction(case, 1.0)
        if value is not None:
            pub = case["source"].get("publisher", "")
            if case["measured"]["unit"] == "step_time_s":
                ratios.append((pub, case["measured"]["value"] / value))
            else:
                ratios.append((pub, value / case["measured"]["value"]))
    out = {"all": statistics.median(r for _, r in ratios)}
    for pub in sorted({p for p, _ in ratios}):
        out[pub] = statistics.median(r for p, r in ratios if p != pub)
    return out


def training_prediction(case, factor=None, expert_host_s=None):
    """(predicted figure in the case's unit, the StepTime) of a training case: train_time's
    step estimate (operators, exposed communication, bubble, DP sync, optimizer) at the
    achievable matmul and HBM fractions, with the publication's recipe (a recipe that runs each
    expert's GEMMs as their own launches pays `expert_host_s` per local expert per MoE layer and
    micro-batch: by default the fit without the case's model, expert_host_for); (None, None) when
    the unit or the publisher has none."""
    from ..dtypes import dtype
    from ..workload import Workload
    from .efficiency.training import predicted_step
    from .validate import _device, _layout, _model

    s, m = case["setup"], case["measured"]
    recipe = TRAINING_RECIPES.get(case["source"].get("publisher") if isinstance(case["source"], dict) else None)
    if recipe is None or m.get("unit") not in ("tokens_per_s_per_device", "step_time_s"):
        return None, None
    arch, device = _model(case), _device(s["device"])
    act = dtype(s["act_dtype"])
    w = Workload(batch=s["micro_batch"], tokens=s["seq_len"], logits="all",
                 weight_dtype=dtype(s["weight_dtype"]), act_dtype=act, kv_dtype=act)
    k = training_factor(case)[0] if factor is None else factor
    lay = _layout(case, arch, s["micro_batch"])
    vp = s["layout"].get("vp", 1) or 1
    schedule = ({"schedule": "interleaved", "chunks": vp} if vp > 1 and lay.pp > 1
                else {"schedule": recipe["schedule"]} if "schedule" in recipe else {})
    recompute = s.get("recompute", recipe["recompute"])   # the row's own, where the source prints it
    # the row's EP all-to-all and TP overlap, where its published configuration states them
    # (setup.overlap_ep, setup.overlap_tp)
    h = 0.0
    if recipe.get("per_expert_gemms"):
        h = expert_host_for(case)[0] if expert_host_s is None else expert_host_s
    got = predicted_step(arch, w, lay, device, factor=k, recompute=recompute, zero=recipe["zero"],
                         overlap_dp=recipe["overlap_dp"], overlap_tp=s.get("overlap_tp", recipe["overlap_tp"]),
                         overlap_ep=s.get("overlap_ep", recipe.get("overlap_ep", False)),
                         ep_dispatcher=s.get("ep_dispatcher", "alltoall"),
                         wire=recipe.get("wire", ("", "")),
                         expert_gemm_host_s=h, token_permute=recipe.get("token_permute", False),
                         overlap_pp=recipe.get("overlap_pp", False),
                         unfused_expert_bias=recipe.get("unfused_expert_bias", False), **schedule)
    if got is None:
        return None, None
    step, t = got
    if m["unit"] == "step_time_s":
        return step, t
    return s["global_batch"] * s["seq_len"] / step / s["devices"], t


def cause(rec):
    """What dominated a case's predicted iteration, in words."""
    parts = {"GPU work": rec["gpu_s"], "host (scheduling, sampling)": rec["host_s"]}
    name = max(parts, key=parts.get)
    held = (f", held by the {rec['tpot_limit_s'] * 1e3:.0f} ms TPOT limit below the memory's "
            f"{rec['memory_concurrency']}" if rec.get("tpot_limit_s") and rec["concurrency"] < rec["memory_concurrency"]
            else "")
    run = f", requests {rec['requests']}" if rec.get("requests") is not None else ""
    if rec.get("engine_max_num_tokens") is not None:   # the tuning rule's limits
        run = f" and {rec['engine_max_num_tokens']} tokens, trtllm-bench's tuning rule" + run
    if rec.get("host_step_s") and rec["host_step_s"] >= rec["iteration_s"]:
        return (f"host step (the engine's measured step on its host CPU, per request in flight) 100% of the "
                f"iteration, GPU work {rec['gpu_s'] / rec['iteration_s']:.0%} under it, at concurrency "
                f"{rec['concurrency']} (engine limit {rec['engine_batch_limit']}{run}{held})")
    shares = [f"{what} {rec[key] / rec['iteration_s']:.0%}"
              for what, key in (("per-sequence work", "sequence_s"), ("per-prompt-token work", "prefill_token_s"))
              if rec.get(key)]
    seq = f" ({', '.join(shares)})" if name == "GPU work" and shares else ""
    return (f"{name} {parts[name] / rec['iteration_s']:.0%} of the iteration{seq} at concurrency "
            f"{rec['concurrency']} (engine limit {rec['engine_batch_limit']}{run}{held})")


def accuracy(rows):
    """Per family: cases with a prediction, median and p90 of |predicted / measured - 1|,
    the median signed error, and the worst case with its cause."""
    out = []
    for fam in FAMILIES:
        sel = [r for r in rows if r.get("family") == fam and r.get("predicted_error") is not None
               and not r.get("predicted_in_sample")]
        if not sel:
            out.append({"family": fam, "cases": 0, "median_abs_error": None, "p90_abs_error": None,
                        "median_error": None, "worst_case": None, "worst_error": None, "worst_cause": None})
            continue
        errs = sorted(abs(r["predicted_error"]) for r in sel)
        worst = max(sel, key=lambda r: abs(r["predicted_error"]))
        out.append({"family": fam, "cases": len(sel), "median_abs_error": statistics.median(errs),
                    "p90_abs_error": percentile(errs, 0.9),
                    "median_error": statistics.median(r["predicted_error"] for r in sel),
                    "worst_case": worst["id"], "worst_error": worst["predicted_error"],
                    "worst_cause": worst["predicted_cause"]})
    return out


def percentile(sorted_values, q):
    """The q-quantile by linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)

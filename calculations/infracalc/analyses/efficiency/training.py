"""Predicted training step: train's step estimate at achievable rates, times a fitted factor.

`train_time.step_time` charges every operator of the forward, backward and recompute,
the exposed communication of the layout, the pipeline bubble, the data-parallel sync and
the optimizer. The prediction runs it at the achievable matmul and HBM fractions
(efficiency.matmul, efficiency.memory) with the user's recipe and the TP collectives
overlapped with the same phase's compute (a tuned stack's tp_comm_overlap; only what exceeds
that compute is exposed), then multiplies the step by
FITTED["all"]: what that model leaves unexplained against the published runs of the
validation corpus (NeMo, torchtitan), the median of estimate rate / measured rate. The
factor stands in for physics the model lacks (FP8 casts and scaling, GEMMs at training
shapes below their best-shape MAMF) and is fitted leave one
publisher out for `validate` (analyses/validate_predict; docs/prediction.md).
"""

FITTED = {
    'all': 1.3719682376173223,
    'NVIDIA': 1.330723478180754,
    'PyTorch (Meta)': 1.3719682376173223,
}


# Seconds per local expert per MoE layer and micro-batch (forward + backward) that a stack running
# each expert's GEMMs as launches of their own (Transformer Engine's GroupedLinear over a host list
# of splits: per expert its GEMMs, casts, split-K reduces and fills; NVIDIA/TransformerEngine issue
# #2939 counts them) spends on the host: train_time.expert_host_pass, charged beyond the MoE blocks'
# own GPU time (train_time.exposed_host_pass). Fitted on the MoE training cases of the plain schedule
# (Megatron Bridge 25.11 and 26.02): per stack (every release of the publisher's page), leave one
# MODEL out within it: a case is predicted with the fit on the other models' cases of its stack
# (validate_predict.fit_expert_host; tests/test_prediction.py refits). "all", the fit on every case,
# is the product default for MoE layers in `train`'s predicted step.
EXPERT_HOST_FITTED = {
    'all': 0.00024,
    "NVIDIA: Megatron Bridge Performance Summary": {'deepseek-v3': 0.00025, 'gpt-oss-120b': 0.00022,
                                                    'qwen3-235b-a22b': 0.00025, 'qwen3-30b-a3b': 0.00023},
}


# The EP dispatcher `train`'s predicted step assumes (a named convention; validate takes each row's
# own, setup.ep_dispatcher): Megatron-Core's default token dispatcher, NCCL's all-to-all.
DISPATCHER = "alltoall"
MEASURED_NOTE = {"alltoall": ", NCCL's measured all-to-all rate on SM100 NVLink from 4 ranks",
                 "hybridep": (", at HybridEP's published rate on B200 and GB200 NVLink (16 SMs; B300 and GB300 "
                              "take it) and over SM90 RDMA from 16 ranks, NCCL's model elsewhere"),
                 "deepep": (", at DeepEP's published rate on H800 (NVLink scaled to other SM90 nodes; RDMA from "
                            "16 ranks) and B200 NVLink, NCCL's model elsewhere")}
DISPATCHER_NAMES = {"alltoall": "Megatron-Core's all-to-all dispatcher (NCCL all-to-all)",
                    "hybridep": "the flex dispatcher's HybridEP backend",
                    "deepep": "the flex dispatcher's DeepEP backend"}


def convention(dispatcher=DISPATCHER):
    """The predicted step's convention line (train's output); `dispatcher`: the EP dispatcher it prices
    (DISPATCHER unless the user names another)."""
    return ("Predicted step (a third figure, not a bound; efficiency.training, docs/prediction.md): the "
            "step estimate at the device's achievable matmul and HBM fractions, the TP collectives under "
            "the same phase's compute, the fused attention at the measured kernel's forward and backward "
            "rates for its head dimension and keys per query (FlashAttention-3's curves: efficiency.attention), "
            "every collective priced as NCCL runs it (its algorithm and "
            "protocol for the size, the fitted residual; the EP dispatch and combine by "
            f"{DISPATCHER_NAMES[dispatcher]}{MEASURED_NOTE[dispatcher]}), "
            "an interleaved pipeline's boundary sends under "
            "the same phase's compute, MoE layers charged the all-to-all "
            "dispatcher's token permutations and the per-expert output bias add (their bytes at the "
            "achievable bandwidth) and "
            f"{EXPERT_HOST_FITTED['all'] * 1e6:.0f} us of host time per local expert per micro-batch where it "
            "exceeds the MoE blocks' own GPU time (fitted, leave one "
            f"model out), times the fitted step factor {FITTED['all']:.3f} (leave one publisher out on the "
            "dense training cases).")


def predicted_step(arch, w, lay, device, *, factor=None, **options):
    """(predicted step seconds, the StepTime at achievable rates) of one layout; `options` are
    step_time's recipe options (recompute, zero, schedule, ...; no efficiencies). A tuned stack
    overlaps its TP communication with the GEMMs (Megatron-LM/NeMo tp_comm_overlap), so
    overlap_tp defaults to True here (validate's recipes state it per publication), and its MoE
    layers run Megatron-Core's all-to-all dispatcher, so ep_dispatcher defaults to "alltoall" (NCCL's
    all-to-all: efficiency.collective item 4) and token_permute to True (the
    permutations' bytes, train_time.permute_bytes) and adds the experts' output biases outside the
    GEMM, so unfused_expert_bias defaults to True (train_time.expert_bias_bytes), and its interleaved
    pipeline overlaps the boundary sends with compute, so overlap_pp defaults to True. None when
    the device has no prediction (no published peak)."""
    from ..train_time import step_time
    from .predict import achievable

    rates = achievable(device, w.compute_dtype)
    if rates is None:
        return None
    t = step_time(arch, w, lay, device, compute_efficiency=rates.matrix_fraction,
                  memory_efficiency=rates.memory_fraction, **_tuned(options, device))
    return t.step_s * (FITTED["all"] if factor is None else factor), t


def _tuned(options, device):
    """`options` with a tuned stack's defaults (predicted_step's docstring), the fused attention rows
    at the device's measured kernel rates for their shape (efficiency.attention)."""
    from .attention import training_rates

    return {"overlap_tp": True, "collective_model": "nccl", "expert_gemm_host_s": EXPERT_HOST_FITTED["all"],
            "token_permute": True, "overlap_pp": True, "unfused_expert_bias": True, "ep_dispatcher": DISPATCHER,
            "attention": training_rates(device), **options}


def predicted_floor(arch, w, lay, device, *, factor=None, **options):
    """A value never above predicted_step(...)[0] with the same arguments, for pruning a search:
    the factor times `train_time.step_floor` at the same achievable rates and options (the floor
    leaves out only terms >= 0 of step_time: the per-expert host cost, the token permutations,
    the unfused expert bias and the pipeline's sends among them). None when predicted_step has no prediction."""
    from ..train_time import step_floor
    from .predict import achievable

    rates = achievable(device, w.compute_dtype)
    if rates is None:
        return None
    floor = step_floor(arch, w, lay, device, compute_efficiency=rates.matrix_fraction,
                       memory_efficiency=rates.memory_fraction, **_tuned(options, device))
    return floor * (FITTED["all"] if factor is None else factor)


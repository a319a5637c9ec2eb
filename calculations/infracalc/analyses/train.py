"""`train` (single device): FLOPs of one step and memory of one device, as a record.

Phase one of issue 9: one device (TP = PP = DP = 1). A step is `global_batch`
sequences of `seq` tokens, processed as global_batch / micro_batch micro-batches
(gradient accumulation); FLOPs are exact for the whole step, memory is that of
one micro-batch in flight plus the model states.
"""

from ..errors import UserError
from . import train_flops, train_memory
from .records import SCHEMA_VERSION, model_record

CONVENTIONS = (
    "Training pass = the forward ledger with the output head on every position plus a "
    "softmax cross-entropy over the vocabulary in fp32 (4 vector FLOPs per logit + 2 per "
    "row forward, 3 per logit + 1 per row backward); no KV cache is read; MLA runs in its "
    "naive form (K and V up-projected per head, as Megatron-LM trains it; --mla does not apply).",
    "Backward: every matrix operator 2x its forward matrix FLOPs (input and weight "
    "gradients; attention's QK^T and PV likewise); the embedding a scatter-add (one add "
    "per element, no matrix FLOPs); vector operators their forward vector FLOPs times: "
    "norm 2, activation 2, softmax 1, RoPE 1, residual 1, bias (gemm) 1, other 1.",
    "Model FLOPs = forward + backward matrix FLOPs = 3x the forward matrix FLOPs; "
    "hardware FLOPs add the recomputed matrix FLOPs (selective: the attention core; full: "
    "one forward of every decoder layer, never the embedding, head or loss) and, with "
    "--flash-recompute, the QK^T a fused attention backward recomputes.",
    "Memory: weights, gradients and optimizer states in their formats (AdamW: fp32 master, "
    "momentum, variance = 12 B/param); activations = what each operator keeps for its "
    "backward (the ledger's saved bytes) at the recompute level, for one micro-batch; the "
    "loss keeps the logits in fp32. A fused attention kernel keeps Q, K, V, O and one fp32 "
    "log-sum-exp per (query, head), no T x T scores.",
)


def _flops_record(st):
    return {
        "tokens": st.tokens,
        "forward_matrix_flops": st.forward_matrix_flops,
        "backward_matrix_flops": st.backward_matrix_flops,
        "recompute_matrix_flops": st.recompute_matrix_flops,
        "flash_recompute_flops": st.flash_extra_flops,
        "model_flops": st.model_flops,
        "hardware_flops": st.hardware_flops,
        "forward_vector_flops": st.forward_vector_flops,
        "backward_vector_flops": st.backward_vector_flops,
        "recompute_vector_flops": st.recompute_vector_flops,
    }


def _op_record(r):
    return {
        "name": r.name, "layers": r.layers, "repeats": r.repeats, "kind": r.kind,
        "forward_matrix_flops": r.forward_matrix_flops,
        "backward_matrix_flops": r.backward_matrix_flops,
        "recompute_matrix_flops": r.recompute_matrix_flops,
        "forward_vector_flops": r.forward_vector_flops,
        "backward_vector_flops": r.backward_vector_flops,
        "backward_bytes": r.backward_bytes,
        "saved_bytes": r.saved_bytes,
    }


def _ratio(x):
    return None if x is None else round(x, 6)


def train(arch, w, device, *, global_batch, recompute="none", flash_recompute=False,
          zero=0, optimizer="adamw", grad_bytes=2, attention="fused"):
    """`w`: one micro-batch (batch = micro-batch size, tokens = sequence length)."""
    if global_batch % w.batch:
        raise UserError(f"global batch {global_batch} is not a multiple of the micro-batch {w.batch}")
    steps = global_batch // w.batch
    st = train_flops.step(arch, w.replace(batch=global_batch), recompute, flash_recompute)
    micro = train_flops.step(arch, w, recompute, flash_recompute)
    wd = w.weight_dtype
    if wd.bits % 8 or wd.is_quantized or w.formats:
        raise UserError(f"train keeps every weight in one whole-byte format (bf16, fp16, fp32); "
                        f"got {wd.name}{' with native formats' if w.formats else ''}")
    weight_bytes = wd.bits // 8
    (mem,) = train_memory.memory(arch, w, zero=zero, recompute=recompute, optimizer=optimizer,
                                 weight_bytes=weight_bytes, grad_bytes=grad_bytes,
                                 attention=attention)
    total = mem.total
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "train",
        "model": model_record(arch),
        "device": {"id": device.id, "name": device.name, "memory_bytes": device.memory_bytes,
                   "memory_convention": device.memory_convention},
        "inputs": {
            "devices": 1, "tp": 1, "pp": 1, "dp": 1, "seq": w.tokens, "micro_batch": w.batch,
            "global_batch": global_batch, "micro_batches_per_step": steps,
            "recompute": recompute, "flash_recompute": flash_recompute, "attention": attention,
            "zero": zero, "optimizer": optimizer,
            "optimizer_states": [{"state": n, "bytes_per_param": b}
                                 for n, b in train_memory.OPTIMIZERS[optimizer]],
            "weight_dtype": w.weight_dtype.name, "grad_bytes_per_param": grad_bytes,
            "act_dtype": w.act_dtype.name,
        },
        "flops_per_step": _flops_record(st),
        "closed_forms": [{"name": c.name, "formula": c.formula, "flops": c.flops,
                          "compared_with": c.compared_with, "exact_flops": c.exact_flops,
                          "ratio_to_exact": _ratio(c.ratio), "reason": c.reason}
                         for c in train_flops.conventions(arch, st, global_batch, w.tokens)],
        "operators_per_micro_batch": [_op_record(r) for r in micro.ops],
        "memory": {
            "params": mem.dense_params + mem.expert_params,
            "weights_bytes": mem.states.weights,
            "grads_bytes": mem.states.grads,
            "optimizer_bytes": mem.states.optimizer,
            "layer_activations_bytes": mem.layer_activation_bytes,
            "embedding_head_loss_activations_bytes": mem.extra_activation_bytes,
            "logits_fp32_bytes": mem.logits_bytes,
            "recompute_working_bytes": mem.recompute_working_bytes,
            "activations_bytes": mem.activation_bytes,
            "total_bytes": total,
            "device_memory_bytes": device.memory_bytes,
            "fits": total <= device.memory_bytes,
            "headroom_bytes": device.memory_bytes - total,
        },
        "conventions": list(CONVENTIONS),
    }

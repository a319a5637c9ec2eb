"""Persistent mixed-precision Adam state per rank under ZeRO stages 0-3 (`budget zero-state`).

P parameters on N data-parallel ranks, five components: BF16 weights 2 B (sharded from stage 3),
gradients G B (G = 2 for BF16, 4 for FP32; sharded from stage 2), FP32 master weights, Adam m and
v 4 B each (sharded from stage 1). An unsharded component holds P x width bytes on every rank; a
sharded one holds its shard, rounded by a named rule:

  bytes       ceil(P x width / N) bytes per component (no element padding; `train --zero`'s rule,
              which rounds the 12 optimizer bytes as one block)
  flat        s = ceil(P / N) elements: the flattened parameter vector padded to a multiple of N
  per-tensor  s = sum over the checkpoint's tensors of ceil(n_t / N): each tensor padded on its
              own (a stacked expert tensor [E, ...] counts as its E per-expert tensors, as the
              checkpoint stores them)

and holds s x width bytes, (s N - P) x width of the cluster's padding; an unsharded one replicates
P x width (N - 1) extra bytes. Per rank: the components' sum; cluster: x N;
required: per rank + a declared extra live allocation; a stage fits when required <= a declared
capacity. Persistent state only (no activations, gathers, buckets or allocator); nothing measured.

By hand (the book's 7-rank Qwen3-8B, P = 8,190,735,360, BF16 gradients): flat s = ceil(P / 7) =
1,170,105,052 elements, stage 3 = 16 s = 18,721,680,832 B; per-tensor: the 399 tensors' padded
shards sum to 1,170,105,342 elements, 18,721,685,472 B; bytes: 2 ceil(2P/7) + ceil(12P/7) =
18,721,680,824 B.
"""

from .train_memory import model_states
from ..splits import ceil_div

RULES = ("bytes", "flat", "per-tensor")

# (component, bytes per element, first ZeRO stage that shards it); the gradient's width is declared
COMPONENTS = (("weights_bf16", 2, 3), ("gradients", None, 2), ("master_fp32", 4, 1), ("adam_m_fp32", 4, 1),
              ("adam_v_fp32", 4, 1))


def physical_tensors(arch):
    """[(elements, copies)] of the checkpoint's tensors: a stacked expert tensor as its E experts."""
    out = []
    parts = [(b, 1) for b in arch.top_blocks()] + [(layer, count) for layer, count, _ in arch.layer_groups()]
    for part, count in parts:
        for t in part.tensors():
            if t.params == 0:
                continue
            if t.role == "expert" and len(t.shape) == 3:
                out.append((t.params // t.shape[0], count * t.shape[0]))
            else:
                out.append((t.params, count))
    return out


def shard_elements(tensors, ranks, rule):
    """Elements of one rank's shard of a sharded component under `rule` (flat or per-tensor)."""
    if rule == "flat":
        return ceil_div(sum(n * c for n, c in tensors), ranks)
    return sum(ceil_div(n, ranks) * c for n, c in tensors)


def _components(params, ranks, stage, grad_bytes, shard):
    """[(component, bytes per element, sharded, per-rank bytes, cluster padding bytes)] of one ZeRO stage."""
    if shard is None:   # train's rounding: whole components, bytes rounded up
        s = model_states(params, ranks, stage, weight_bytes=2, grad_bytes=grad_bytes, optimizer_bytes=12)
        return [(name, width, stage >= first, b, b * ranks - width * params if stage >= first else 0)
                for (name, width, first), b in zip((("weights_bf16", 2, 3), ("gradients", grad_bytes, 2),
                                                    ("optimizer_fp32", 12, 1)), (s.weights, s.grads, s.optimizer))]
    out = []
    for name, width, first in COMPONENTS:
        width = width or grad_bytes
        sharded = stage >= first
        out.append((name, width, sharded, (shard if sharded else params) * width,
                    (shard * ranks - params) * width if sharded else 0))
    return out


def zero_stages(*, tensors, ranks, grad_bytes, rule, extra_live_bytes=0, capacity_bytes=None):
    """The `budget zero-state` record: one row per ZeRO stage 0-3, one per stage and component, and the
    summary (module docstring)."""
    params = sum(n * c for n, c in tensors)
    shard = None if rule == "bytes" else shard_elements(tensors, ranks, rule)
    rows, components = [], []
    for stage in range(4):
        parts = _components(params, ranks, stage, grad_bytes, shard)
        for name, width, sharded, per_rank, padding in parts:
            components.append({"zero_stage": stage, "component": name, "bytes_per_element": width, "sharded": sharded,
                               "per_rank_bytes": per_rank, "padding_bytes": padding,
                               "replicated_extra_bytes": 0 if sharded else per_rank * (ranks - 1)})
        per_rank = sum(p[3] for p in parts)
        required = per_rank + extra_live_bytes
        row = {"zero_stage": stage, "per_rank_bytes": per_rank, "cluster_bytes": per_rank * ranks,
               "padding_bytes": sum(p[4] for p in parts), "required_bytes": required}
        if capacity_bytes is not None:
            row["headroom_bytes"] = capacity_bytes - required
            row["fits"] = required <= capacity_bytes
        rows.append(row)
    return {"parameters": params, "tensors": sum(c for _, c in tensors), "bytes_per_parameter": 14 + grad_bytes,
            "unsharded_bytes": (14 + grad_bytes) * params, "shard_elements": shard,
            "padding_elements_per_sharded_component": None if shard is None else shard * ranks - params,
            "zero3_per_rank_bytes": rows[3]["per_rank_bytes"],
            "stages_fitting": None if capacity_bytes is None else [r["zero_stage"] for r in rows if r["fits"]],
            "stages": rows, "components": components}


ZERO_STATE_CONVENTIONS = [
    "Persistent Adam state per rank under ZeRO 0-3: BF16 weights 2 B (sharded from stage 3), gradients 2 or 4 B "
    "(stage 2), FP32 master, m and v 4 B each (stage 1); no activations, gathers, buckets or allocator.",
    "A sharded component's rounding is named: bytes = ceil(P x width / N) per component (train --zero's rule, the "
    "12 optimizer bytes as one block); flat = ceil(P / N) elements (the flattened vector padded to a multiple of "
    "N); per-tensor = sum of ceil(n / N) over the checkpoint's tensors (a stacked expert tensor as its E experts). "
    "Padding = shard x N - P elements per sharded component.",
    "Fits: per rank + the declared extra live bytes <= the declared capacity (a budget, not a device's memory).",
]

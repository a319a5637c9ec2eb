"""The book's training tally of one micro-batch (train --scalar-count book).

The book counts a training step's non-matrix work as plain scalar FLOPs per operator, forward
and backward apart, with its own backward rules and the special functions (exp, sigmoid, rsqrt,
sqrt, log, pow, sin, cos, max compares) apart; then an unfused AdamW, the FP32 objects its
declared backward keeps, and the data operations around the embedding and the loss
(bojieli/ai-infra-book:calculations/research/training-nonmatrix-completion/CONTRACT.md, its
Qwen3-8B results in .../results/ and summary.json). Each ledger row carries its rule
(`ops.TrainCount`: ops.train_rmsnorm, train_swiglu, train_softmax, train_flops.book_cross_entropy,
the joins of shared projection inputs, the GQA head-gradient sums, RoPE and its table, the
residual adds, the embedding's scatter-add, DeepSeek-V4's mHC wrapper); a row without one is
listed as unknown, and so is every total it would enter.

- AdamW, unfused, per parameter m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, the two bias
  corrections, theta (1 - lr wd) - lr mhat / (sqrt(vhat) + eps): 14 scalar FLOPs and one sqrt;
  per step 6 for the shared coefficients and two pows (b1^t, b2^t). It reads gradient, master,
  m and v and writes master, m and v (FP32: 16 and 12 B per parameter) and the cast weights.
- Saved objects: the rows' `saved_bytes` at the end of the forward. The declared subset's peak:
  that, or, under recompute-silu, the last layer's recompute (its s and a in FP32) once the rows
  after the decoder layers (final norm, loss) have freed theirs, whichever is larger.
- The whole model, one micro-batch, unsharded (a layout does not split this count).
"""

from ..errors import UserError
from ..ops import train_evaluated
from . import train_flops

POLICIES = ("save-nonlinear", "recompute-silu")
CONVENTION = (
    "Book count, --scalar-count book (the book's Qwen3-8B training tally and its DeepSeek-V4 training "
    "modules): one micro-batch through the "
    "whole model, unsharded; plain scalar FLOPs of the forward and the backward apart (FP32, a sum of n "
    "values n - 1 adds), special functions (exp, sigmoid, rsqrt, sqrt, log, pow, sin, cos, max compares) "
    "apart; RMSNorm backward 6RD + (2R - 1)D, SwiGLU 6 per element, softmax 5K - 1 per row of K valid "
    "keys, mean cross entropy S (V + 1), the joins of shared projection inputs and the GQA head "
    "gradients as adds; V4's mHC pre/post (matrix convention), sqrt(softplus) router, window attention core "
    "with its sink, projection periphery and attention compressors; an unfused AdamW 14 per parameter + 6 per step with a sqrt per parameter; the "
    "FP32 objects the declared backward keeps; rows without a rule are listed and the totals they enter are "
    "unknown. Beside our vector FLOPs, not instead of them.")
ADAMW_PER_PARAM = 14       # scalar FLOPs per parameter (sqrt apart)
ADAMW_PER_STEP = 6         # the shared coefficients: 1 - b1, 1 - b2, 1 - b1^t, 1 - b2^t, lr wd, 1 - lr wd
MOMENT_BYTES = 4           # m and v in FP32 (optimizer adamw)
INDEX_BYTES = 8            # int64 token ids and labels
GRAD_FP32 = 4              # the loss's and the compacted hidden gradients are FP32


def _specials(*groups):
    out = {}
    for group in groups:
        for name, n in group:
            out[name] = out.get(name, 0) + n
    return dict(sorted(out.items()))


def operator_rows(ops, policy):
    """(op, TrainCount or None) per ledger row: None where the row has no book rule."""
    return [(op, None if op.book_train is None else train_evaluated(op.book_train).under(policy)) for op in ops]


def missing_rules(rows):
    """The distinct names of the rows without a book training rule, in order."""
    return list(dict.fromkeys(op.name for op, c in rows if c is None))


def saved_peak(rows):
    """max(saved at the end of the forward, that - what the rows after the last decoder layer kept
    + the last decoder layer's re-allocation)."""
    saved = sum(c.saved_bytes for _, c in rows)
    last = max((i for i, (op, _) in enumerate(rows) if train_flops.in_layers(op)), default=-1)
    after = sum(c.saved_bytes for _, c in rows[last + 1:])
    temp = max((c.temp_bytes for op, c in rows[:last + 1] if train_flops.in_layers(op)), default=0)
    return saved, max(saved, saved - after + temp)


def adamw(params, s):
    """The book's AdamW over `params` parameters under the setup's formats."""
    if s.optimizer != "adamw" or not s.master_bytes:
        raise UserError(f"--scalar-count book: the book's AdamW rule needs --optimizer adamw with a master copy "
                        f"(got {s.optimizer}, master {s.master_bytes} B)")
    return {"parameters": params,
            "parameter_scalar_flops": ADAMW_PER_PARAM * params,
            "shared_coefficient_scalar_flops": ADAMW_PER_STEP,
            "scalar_flops": ADAMW_PER_PARAM * params + ADAMW_PER_STEP,
            "special_ops": {"pow": 2, "sqrt": params},
            "step_index_increments": 1,
            "master_to_weight_casts": params,
            "read_bytes": params * (s.grad_bytes + s.master_bytes + 2 * MOMENT_BYTES),
            "write_bytes": params * (s.master_bytes + 2 * MOMENT_BYTES),
            "weight_write_bytes": params * s.weight_bytes}


def data_operations(arch, w, s, rows):
    """Bytes the book's embedding and loss interfaces move besides the rows, and the casts."""
    v, h = arch.vocab_size, arch.hidden_size
    labels, head = w.loss_rows, w.head_rows
    compact = head < w.positions
    act = w.act_dtype.nbytes_flat(1)
    return {"embedding_gradient_zero_bytes": v * h * s.grad_bytes,
            "embedding_index_read_bytes": INDEX_BYTES * w.positions,
            "loss_gradient_zero_bytes": GRAD_FP32 * head * v,
            "loss_label_read_bytes": INDEX_BYTES * labels,
            "loss_selected_logits_read_bytes": act * labels * v,
            "loss_gradient_scatter_write_bytes": GRAD_FP32 * labels * v,
            "cast_in_elements": sum(c.cast_in for _, c in rows),
            "cast_out_elements": sum(c.cast_out for _, c in rows),
            "compact_hidden_gather_bytes": 2 * act * head * h if compact else 0,
            "compact_hidden_gradient_zero_bytes": GRAD_FP32 * w.positions * h if compact else 0,
            "compact_hidden_gradient_scatter_bytes": 2 * GRAD_FP32 * head * h if compact else 0}


def _total(rows, field):
    return sum(getattr(c, field) for _, c in rows)


def _row(op, c):
    if c is None:
        return {"name": op.name, "layers": op.layers, "repeats": op.repeats, "rule": None}
    return {"name": op.name, "layers": op.layers, "repeats": op.repeats,
            "forward_scalar_flops": c.forward, "backward_scalar_flops": c.backward,
            "forward_special_ops": dict(c.forward_specials),
            "backward_special_ops": dict(c.backward_specials), "saved_bytes": c.saved_bytes,
            **({"parts": [{"name": name, "forward_scalar_flops": f, "backward_scalar_flops": b, "saved_bytes": s}
                          for name, f, b, s in c.parts]} if c.parts else {})}


def tally(arch, w, s, policy="save-nonlinear", per_layer=False):
    """The book's training tally of one micro-batch `w` through the whole model `arch`. Rows
    without a book rule are listed (`missing_rules`) and every total that would sum them is None
    (unknown): the rows that have one still give their figures. per_layer: the operator rows are
    one instance of each distinct layer (as `train --per-layer`); the totals stay the whole model."""
    if policy not in POLICIES:
        raise UserError(f"book activation policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    model_flops = train_flops.step(arch, w).model_flops
    high, ops = train_flops.training_ops(arch, w.replace(scalar_count="book"))
    rows = operator_rows(ops, policy)
    missing = missing_rules(rows)
    opt = adamw(arch.params, s)
    out = {"activation_policy": policy, **({"per_layer": True} if per_layer else {}), "missing_rules": missing,
           "forward_scalar_flops": None, "backward_scalar_flops": None,
           "optimizer_scalar_flops": opt["scalar_flops"], "special_ops": None,
           "training_matrix_flops": model_flops, "matrix_plus_scalar_flops": None,
           "saved_at_forward_end_bytes": None, "saved_peak_bytes": None}
    if not missing:
        fwd, bwd = _total(rows, "forward"), _total(rows, "backward")
        saved, peak = saved_peak(rows)
        out.update(forward_scalar_flops=fwd, backward_scalar_flops=bwd,
                   special_ops=_specials(*((c.forward_specials + c.backward_specials) for _, c in rows),
                                         opt["special_ops"].items()),
                   matrix_plus_scalar_flops=model_flops + fwd + bwd + opt["scalar_flops"],
                   saved_at_forward_end_bytes=saved, saved_peak_bytes=peak)
    shown = operator_rows(train_flops.training_ops(arch, w.replace(scalar_count="book"), True)[1], policy) \
        if per_layer else rows
    out.update(operators=[_row(op, c) for op, c in shown], adamw=opt,
               data_operations=data_operations(arch, high, s, rows) if not missing else None)
    return out

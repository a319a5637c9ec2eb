"""Operator records and the few factories every block builds them with.

An `Op` is one row of the ledger: the work of one operator in one layer (the
ledger multiplies by the number of identical layers). Conventions:

- a multiply-add is 2 FLOPs: a [m, k] x [k, n] product is 2*m*k*n matrix FLOPs;
- vector FLOPs per element (transcendentals count 1): see VECTOR_FLOPS;
- fusion model: every operator outside attention reads its inputs from and
  writes its outputs to memory; attention is fused (FlashAttention-style):
  QK^T reads Q and K, softmax stays on chip and moves no bytes, PV reads V and
  writes the output; scores are never written.
"""

from .record import Record

# Vector FLOPs per element. Sources: the operation counts of each formula,
# transcendental functions (exp, tanh, rsqrt) counted as one FLOP.
VECTOR_FLOPS = {
    "rmsnorm": 4,    # x^2, sum, * rsqrt(mean), * weight (per element)
    "residual": 1,   # x + f(x)
    "bias": 1,       # x + b
    "rope": 3,       # x*cos + rotate(x)*sin: 2 mul + 1 add per rotated element
    "softmax": 5,    # max, subtract, exp, sum, scale: per score
    "swiglu": 5,     # silu(g) = g * sigmoid(g) (exp, add, div, mul = 4) then * up
    "geglu_tanh": 10,  # 0.5*g*(1+tanh(c*(g+0.044715 g^3))): 9, then * up
    "scale": 1,      # multiply by a constant
    # GPT-OSS clamped SwiGLU, per element of the expert width: g = min(g, limit) (1),
    # u = clamp(u, -limit, limit) (2), g * sigmoid(alpha * g) (alpha*g 1, exp 1,
    # add 1, div 1, * g 1 = 5), (u + 1) * that (2): 10.
    "swiglu_clamp": 10,
    # DeepSeek-V4 (swiglu_limit): u = clamp(u, -limit, limit) (2), g = min(g, limit) (1),
    # silu(g) (4), * u (1): 8.
    "swiglu_limit": 8,
    # Kimi K3 SiTU: beta tanh(g/beta) sigmoid(g) (div, tanh, mul, sigmoid 3, mul: 7) times
    # beta' tanh(u/beta') (div, tanh, mul: 3), the product 1: 11.
    "situ": 11,
    "l2norm": 3,     # x^2, sum, * rsqrt(mean): RMSNorm without a weight (Llama 4 qk norm)
    "sink": 4,       # per softmax row: the sink logit joins the max, subtract, exp, sum (never scaled)
    "moe_combine": 2,  # per routed expert output value: * routing weight, + into the token's sum
    "sigmoid": 3,    # exp(-x), 1 + that, 1 / that (Qwen3-Next shared-expert gate, one per token)
    "gated_add": 2,  # y + g * x: the sigmoid-gated shared expert added to the routed sum
    # LayerNorm with weight and bias (GPT): mean (1), x - mean (1), square (1), sum (1),
    # * rstd (1), * weight (1), + bias (1) per element.
    "layernorm": 7,
    "relu": 1,       # max(0, x) (OPT)
    "softcap": 3,    # c * tanh(x / c): divide, tanh, multiply (Gemma 2 attention and final logits)
    "scaled_residual": 2,  # x + m * f(x): multiply, add (Granite residual_multiplier)
    "alpha_beta_residual": 3,  # alpha * x + beta * f(x): two multiplies, add (MiniMax)
    "gelu_erf": 5,   # 0.5*x*(1+erf(x/sqrt(2))): / sqrt(2), erf, + 1, * x, * 0.5
    "gelu_tanh": 9,  # 0.5*x*(1+tanh(c*(x+0.044715 x^3))), the GPT-2 "gelu_new" (geglu_tanh without * up)
}

class Op(Record):
    _hot = True              # thousands per command: a compiled constructor (record.HOT_AFTER)
    name: str
    category: str            # linear | attention | vector | memory
    shape: str
    matrix_flops: int = 0
    rect_flops: int = 0      # attention only: what an unmasked matmul computes
    vector_flops: int = 0
    weight_read: int = 0
    act_read: int = 0
    kv_read: int = 0
    act_write: int = 0
    kv_write: int = 0
    compute: str = ""        # format whose matrix peak the op runs at
    layers: str = ""         # which layers (filled by the ledger)
    repeats: int = 1
    # Training (analyses.train_flops / train_memory):
    kind: str = ""           # gemm | attention | norm | activation | softmax | rope | residual |
                             # embedding | elementwise | routing | memory | loss
    weight: str = ""         # name of the weight tensor the op multiplies by ("" if none)
    saved_bytes: int = 0     # activation bytes kept for the backward (no recompute)
    saved_replicated: int = 0  # part of saved_bytes in the sequence region (norm inputs and
                               # statistics, a sublayer's first input, residual dropout masks):
                               # whole on every TP rank without sequence parallelism
    vjp_matrix_flops: int = 0  # a vector op's backward contractions counted as matrix work (mHC under
                               # hc_contractions "matrix"); gemm/attention backwards follow their kind
    # The book's count (forward --scalar-count book; `book`): plain scalar FLOPs with the special
    # functions apart, ((name, count), ...) sorted by name; 0 / () where the op has no book rule.
    book_scalar: int = 0
    book_specials: tuple = ()
    book_extra_bytes: int = 0   # the book's materialized-operand bytes beyond ours (scores, tables, indices)
    book_train: tuple = None    # the book's training rule of the row (train_rule; train --scalar-count book)
    head_dim: int = 0        # attention only: the head dimension of its contraction (the kernel's shape; 0 unknown)

    @property
    def bytes_read(self):
        return self.weight_read + self.act_read + self.kv_read

    @property
    def bytes_written(self):
        return self.act_write + self.kv_write

    @property
    def bytes_moved(self):
        return self.bytes_read + self.bytes_written

    @property
    def flops(self):
        return self.matrix_flops + self.vector_flops

    _SCALED = ("matrix_flops", "rect_flops", "vector_flops", "weight_read", "act_read",
               "kv_read", "act_write", "kv_write", "saved_bytes", "saved_replicated", "vjp_matrix_flops",
               "book_scalar", "book_extra_bytes")

    def times(self, k, layers):
        """This op repeated over k identical layers (every additive field times k,
        copied by name)."""
        values = self._field_dict()
        if k != 1:
            for f in self._SCALED:
                values[f] *= k
            if self.book_specials:
                values["book_specials"] = tuple((name, n * k) for name, n in self.book_specials)
            if self.book_train is not None:
                count, args, m = self.book_train
                values["book_train"] = (count, args, m * k)
        values["layers"], values["repeats"] = layers, k
        return Op._from_fields(values)


STAT_BYTES = 4   # one fp32 statistic per normalized row (rstd; LayerNorm adds the mean)


def gathered_rows(n, table):
    """The shape label of a gather: '1 row of [V,H]', '8 rows of [V,H]'."""
    return f"{n} row{'' if n == 1 else 's'} of {table}"


def gemm(w, name, m, weight, bias=None, in_features=None, shape=None, saves_input=True,
         replicated=False, out_dtype=None):
    """Tokens [m, k] times a weight stored as [n, k] (Hugging Face layout).

    matrix FLOPs 2*m*k*n; reads the weight (in its stored format), the input
    activations m*k; writes m*n outputs (in the activation format, or
    `out_dtype`); a bias adds m*n vector FLOPs.
    Training: keeps its input m*k for the weight gradient, unless another
    projection of the same input keeps it (`saves_input=False`: k and v share
    q's input, up shares gate's); `replicated`: that input is the sublayer's
    input (the sequence region, whole on every TP rank without SP).
    """
    n, k = weight.shape[-2], weight.shape[-1]
    if in_features is not None:
        k = in_features
    act = w.act_dtype
    saved = act.nbytes_flat(m * k) if saves_input else 0
    out = out_dtype or act
    return Op(
        name, "linear", shape or f"[{m},{k}]x[{k},{n}]",
        matrix_flops=2 * m * k * n,
        vector_flops=m * n * VECTOR_FLOPS["bias"] if bias is not None else 0,
        weight_read=w.weight_bytes(weight) + (w.weight_bytes(bias) if bias is not None else 0),
        act_read=act.nbytes_flat(m * k),
        act_write=out.nbytes_flat(m * n),
        compute=w.compute_dtype.name,
        kind="gemm", weight=weight.name, saved_bytes=saved,
        saved_replicated=saved if replicated else 0,
        # the book's training count: an input another projection also reads (k and v read q's,
        # up reads gate's) joins its input gradient to the others', m k adds; no rule with a bias
        book_train=None if bias is not None else NO_TRAIN_WORK if saves_input else train_rule(train_adds, 0, m * k),
    )


def book(scalar, extra_bytes=0, **specials):
    """The book's count of one operator (forward --scalar-count book; its stage-resource and
    request-bridge files, bojieli/ai-infra-book:calculations/results/stage-resources-*.md): plain
    scalar FLOPs (FP32, a reduction of n values n - 1 adds), its special functions apart, and the
    bytes its materialized-operand interface moves beyond ours (`extra_bytes`)."""
    return {"book_scalar": scalar, "book_extra_bytes": extra_bytes,
            "book_specials": tuple(sorted((k, v) for k, v in specials.items() if v))}


def _specials(counts):
    return tuple(sorted((k, v) for k, v in counts.items() if v))


class TrainCount(Record):
    """The book's training count of one ledger row (train --scalar-count book; its Qwen3-8B
    training tally, bojieli/ai-infra-book:calculations/research/training-nonmatrix-completion/
    CONTRACT.md): plain scalar FLOPs of the forward and of the backward (FP32; a sum of n values
    n - 1 adds), their special functions apart ((name, count), ...), the FP32 objects the
    declared backward keeps (`saved_bytes`), the values cast BF16 -> FP32 on the way in and
    FP32 -> BF16 on the way out, and `temp_bytes`: what the backward of one instance allocates
    again (a recompute; per instance, not multiplied over layers). `recomputed`: the row's count
    under the book's SiLU-recompute policy (None: the same)."""
    forward: int = 0
    backward: int = 0
    forward_specials: tuple = ()
    backward_specials: tuple = ()
    saved_bytes: int = 0
    cast_in: int = 0
    cast_out: int = 0
    temp_bytes: int = 0
    recomputed: object = None
    parts: tuple = ()   # named parts of the count the book also prints apart: ((name, forward, backward, saved), ...)

    def times(self, k):
        """This count over k identical layers (temp_bytes stays per instance)."""
        if k == 1:
            return self
        return TrainCount(self.forward * k, self.backward * k,
                          tuple((n, c * k) for n, c in self.forward_specials),
                          tuple((n, c * k) for n, c in self.backward_specials),
                          self.saved_bytes * k, self.cast_in * k, self.cast_out * k, self.temp_bytes,
                          self.recomputed.times(k) if self.recomputed is not None else None,
                          tuple((name, *(v * k for v in values)) for name, *values in self.parts))

    def under(self, policy):
        """The count under the book's activation policy (save-nonlinear | recompute-silu)."""
        return self.recomputed if policy == "recompute-silu" and self.recomputed is not None else self


FP32 = 4   # the book's declared FP32 nonlinear intermediates, saved objects and gradients


def train_count(forward=0, backward=0, saved=0, cast_in=0, cast_out=0, backward_specials=None, **specials):
    """A TrainCount; `specials` are the forward's special functions (sigmoid=..., exp=...)."""
    return TrainCount(forward, backward, _specials(specials), _specials(backward_specials or {}),
                      saved, cast_in, cast_out)


def train_rule(count, *args):
    """A row's book training rule (count, args, k): the TrainCount count(*args) over k layers
    (Op.times multiplies k). Evaluated by train --scalar-count book only (`train_evaluated`), so
    no other command builds the counts."""
    return (count, args, 1)


def train_evaluated(rule):
    count, args, k = rule
    return count(*args).times(k)


def train_adds(forward, backward):
    """Plain adds or multiplies, no specials, nothing kept (residual adds, joins, RoPE)."""
    return TrainCount(forward, backward)


NO_TRAIN_WORK = (train_adds, (0, 0), 1)   # a row whose training count is zero (train_rule)


def train_rope_table(tokens, rotated):
    """The book's RoPE table in training, as in the forward count (ledger.rope_table_op): T R / 2
    scalar FLOPs, T R sin and T R cos; no backward."""
    return train_count(tokens * rotated // 2, sin=tokens * rotated, cos=tokens * rotated)


def train_rmsnorm(rows, width):
    """The book's RMSNorm in training, R rows of width D: forward R (4D + 1) with R rsqrt (as the
    forward count); backward dx = r (g - z sum(g z) / D), g = dy gamma: 6 per element, and the
    weight gradient sum over rows of dy z: R D multiplies + (R - 1) D adds; keeps FP32 z and r
    (R D + R values); casts its R D inputs in and R D outputs out."""
    return train_count(rows * (4 * width + 1), 6 * rows * width + (2 * rows - 1) * width,
                       saved=FP32 * (rows * width + rows), cast_in=rows * width, cast_out=rows * width,
                       rsqrt=rows)


def train_swiglu(elements):
    """The book's SwiGLU in training over E elements: forward s = sigmoid(g), a = g s, z = a u
    (2E and E sigmoids); backward du = dy a, da = dy u, dg = da (s + a (1 - s)): 6E; keeps a, s, u
    in FP32 (12E bytes); casts g and u in (2E), z out (E). Under recompute-silu it keeps g and u
    only (8E bytes) and recomputes s and a before the backward: E more sigmoids and multiplies,
    8E bytes allocated again per instance."""
    e = elements
    keep = train_count(2 * e, 6 * e, saved=3 * FP32 * e, cast_in=2 * e, cast_out=e, sigmoid=e)
    again = TrainCount(2 * e, 7 * e, keep.forward_specials, (("sigmoid", e),), 2 * FP32 * e,
                       2 * e, e, temp_bytes=2 * FP32 * e)
    return keep.replace(recomputed=again)


def train_softmax(rows, pairs):
    """The book's scaled causal softmax in training, `rows` query rows over `pairs` valid
    query-key pairs: forward per row of width K scale, subtract the max, sum (K - 1), divide
    = 4K - 1 with K exps and K - 1 max compares; backward dot = sum(dp p), ds = p (dp - dot)
    = 4K - 1, and the scale's K: 5K - 1; keeps the probabilities in FP32."""
    return train_count(4 * pairs - rows, 5 * pairs - rows, saved=FP32 * pairs,
                       exp=pairs, max_compare=pairs - rows)


def elementwise(w, name, elements, flops_per_element, inputs=1, outputs=1,
                weight=None, shape=None, kind="elementwise", saved=0, replicated=False, counted=None):
    """A vector operator over `elements` values: reads `inputs` tensors of that
    size (plus an optional weight), writes `outputs` tensors of that size.
    Training: keeps `saved` bytes for its backward (`replicated`: in the
    sequence region, see `gemm`). `counted`: the book's count (`book`)."""
    act = w.act_dtype
    return Op(
        name, "vector", shape or f"[{elements}]", **(counted or {}),
        vector_flops=elements * flops_per_element,
        weight_read=w.weight_bytes(weight) if weight is not None else 0,
        act_read=act.nbytes_flat(elements) * inputs,
        act_write=act.nbytes_flat(elements) * outputs,
        kind=kind, weight=weight.name if weight is not None else "",
        saved_bytes=saved, saved_replicated=saved if replicated else 0,
    )


def saved_inputs(w, elements, inputs=1):
    """Bytes of `inputs` activation tensors of `elements` values each."""
    return w.act_dtype.nbytes_flat(elements) * inputs


def rmsnorm(w, name, rows, weight, replicated=True):
    """RMSNorm over `rows` vectors of the weight's width: 4 FLOPs per element.
    Keeps its input and one fp32 statistic (rstd) per row; a layer norm of the
    residual stream is in the sequence region (`replicated`), a per-head q/k norm is not."""
    width = weight.shape[-1]
    saved = saved_inputs(w, rows * width) + rows * STAT_BYTES
    return elementwise(w, name, rows * width, VECTOR_FLOPS["rmsnorm"], weight=weight,
                       shape=f"[{rows},{width}]", kind="norm", saved=saved, replicated=replicated,
                       counted={**book(rows * (4 * width + 1), rsqrt=rows),
                                "book_train": train_rule(train_rmsnorm, rows, width)})


def residual(w, rows, width, name="residual_add"):
    """x + f(x): 1 FLOP per element, reads both, writes the sum; keeps nothing."""
    return elementwise(w, name, rows * width, VECTOR_FLOPS["residual"], inputs=2,
                       shape=f"[{rows},{width}]", kind="residual",
                       counted={**book(rows * width),
                                "book_train": train_rule(train_adds, rows * width, rows * width)})


DROPOUT_MASK_BYTES = 1   # one byte per element (Korthikanti et al. 2022, arXiv:2205.05198)


def with_dropout_mask(op, elements):
    """`op` followed by residual dropout on `elements` outputs: keeps a 1-byte mask
    per element, in the sequence region (whole on every TP rank without SP)."""
    if not elements:
        return op
    mask = elements * DROPOUT_MASK_BYTES
    return op.replace(saved_bytes=op.saved_bytes + mask,
                      saved_replicated=op.saved_replicated + mask)

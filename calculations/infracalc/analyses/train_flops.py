"""FLOPs of one training step, exact from the ledger, and the usual closed forms beside it.

A training pass is the forward ledger with the output head on every position
(`logits all`) plus the loss, then a backward per operator, then what the
recompute level runs again. Conventions (docs/train.md, "Conventions: FLOPs"):

- matrix operators (`gemm`): the input gradient dX = dY W and the weight
  gradient dW = X^T dY are each a matmul as large as the forward: backward
  = 2 x forward matrix FLOPs; a bias gradient sums dY over the rows (one add
  per output element, the forward bias add's count);
- attention matmuls: QK^T needs dQ and dK, PV needs dP and dV: 2 x forward.
  A fused (FlashAttention) backward also recomputes QK^T from Q, K and the
  saved row statistics: `flash_recompute` adds 1 x attn_qk (2.5 x the two
  attention matmuls when their widths match) to the hardware FLOPs;
- vector operators: backward = BACKWARD_VECTOR[kind] x forward vector FLOPs;
  the embedding's backward is a scatter-add of dY into the rows (one add per
  element, no matrix FLOPs); the loss's is (softmax - one-hot) / tokens;
  a vector operator's backward contractions a convention counts as matrix work
  are its `vjp_matrix_flops` (mHC under `--hc-contractions matrix`);
- model FLOPs = forward + backward matrix FLOPs = 3 x forward matrix FLOPs
  (not under `--hc-contractions matrix`, where the mHC rows' backward is their own);
  hardware FLOPs add the recomputed matrix FLOPs: `selective` = the attention
  core (attn_qk, softmax, attn_pv of every layer), `full` = one forward of
  every decoder layer (never the embedding, final norm, head or loss);
- backward bytes (a stated model, not a measurement): a gemm moves twice its
  forward bytes (dX reads W and dY and writes dX; dW reads X and dY and writes
  dW); other operators read dY and what they saved, write dX (and read and
  write a weight gradient); the embedding reads dY and reads and writes the
  gradient rows; attention reads its saved inputs and dO and writes their
  gradients.
"""

from .. import layout as placement
from .. import ledger
from ..arch import Block
from ..errors import UserError
from ..memo import remember
from ..ops import FP32, STAT_BYTES, Op, train_count, train_rule
from ..dtypes import DTYPES
from ..record import Record

_BF16 = DTYPES["bf16"]

RECOMPUTE = ("none", "selective", "full")
# Megatron-LM's --recompute-modules (megatron/core/transformer/transformer_config.py, recompute_modules),
# each a part of a layer run again in the backward on top of the level (see `recomputed`)
RECOMPUTE_MODULES = ("core_attn", "layernorm", "mla_up_proj", "moe_act")
MLA_UP_ROWS = ("q_a_layernorm", "q_b_proj", "kv_a_layernorm", "kv_b_proj", "rope")   # what mla_up_proj reruns

# Backward vector FLOPs as a multiple of the forward's, per operator kind.
BACKWARD_VECTOR = {
    "gemm": 1,         # bias gradient: sum of dY over rows, one add per output element
    "norm": 2,         # input gradient (about one forward again) + weight/bias gradient
    "activation": 2,   # derivative of the nonlinearity, times dY and the other branch
    "softmax": 1,      # dS = P * (dP - rowsum(dO * O)): about the forward's count per score
    "rope": 1,         # rotation by -theta
    "residual": 1,     # the two branches' gradients added
    "elementwise": 1,
    "routing": 1,
    "attention": 1,    # vector part of a recurrent/chunked core (Gated DeltaNet)
    "memory": 0,       # copies (KV store): the gradient passes through
}
LOSS_FWD_PER_LOGIT = 4   # max, subtract, exp, sum (log-sum-exp in fp32)
LOSS_FWD_PER_ROW = 2     # log of the sum, minus the target logit
LOSS_BWD_PER_LOGIT = 3   # subtract lse, exp, scale by 1/tokens
LOSS_BWD_PER_ROW = 1     # minus one at the target
LOSS_BYTES = 4           # the loss works on fp32 logits


class CrossEntropy(Block):
    """Softmax cross-entropy over the vocabulary on every supervised row (`Workload.loss_rows`:
    every position the head runs on, the compacted supervised tokens, or those of a dense loss
    mask; fp32): reads their logits, writes one loss per row; keeps the fp32 logits and the
    log-sum-exp per row for the backward."""
    vocab: int

    def ops(self, w):
        rows, v = w.loss_rows, self.vocab
        return [Op("cross_entropy", "vector", f"[{rows},{v}] fp32",
                   vector_flops=rows * v * LOSS_FWD_PER_LOGIT + rows * LOSS_FWD_PER_ROW,
                   act_read=w.act_dtype.nbytes_flat(rows * v), act_write=rows * LOSS_BYTES,
                   kind="loss", saved_bytes=rows * v * LOSS_BYTES + rows * STAT_BYTES,
                   book_train=train_rule(book_cross_entropy, rows, v))]


def book_cross_entropy(rows, vocab):
    """The book's mean cross entropy over S supervised rows of V logits, probabilities saved:
    forward per row max (V - 1 compares), subtract V, exp V, sum V - 1, log 1, add the max and
    subtract the target 2, divide V (the probabilities) = 3V + 1 scalar FLOPs, and the mean over
    the S rows S (S - 1 adds, one divide); backward (p - onehot) / S: one subtract and V scales
    per row; keeps the S V probabilities in FP32, casts the S V logits in."""
    s, v = rows, vocab
    return train_count(s * (3 * v + 1) + s, s * (v + 1), saved=FP32 * s * v, cast_in=s * v,
                       exp=s * v, log=s, max_compare=s * (v - 1))


class Backward(Record):
    matrix_flops: int
    vector_flops: int
    bytes: int


def backward(op, w, vocab, flash_recompute=False):
    """The backward of one ledger row (already multiplied over its layers) of a
    pass over workload `w` through a model with a `vocab`-word vocabulary."""
    kind = op.kind
    if kind == "gemm":
        return Backward(2 * op.matrix_flops, op.vector_flops, 2 * op.bytes_moved)
    if kind == "attention":
        extra = op.matrix_flops if flash_recompute and op.name == "attn_qk" else 0
        return Backward(2 * op.matrix_flops + extra, op.vector_flops,
                        2 * op.saved_bytes + op.act_write)
    if kind == "embedding":   # scatter-add: one add per element of dY [positions, hidden]
        hidden = op.act_write // w.act_dtype.nbytes_flat(w.positions)
        return Backward(0, w.positions * hidden, op.act_write + 2 * op.weight_read)
    if kind == "loss":
        rows = w.loss_rows
        logits = rows * vocab
        return Backward(0, logits * LOSS_BWD_PER_LOGIT + rows * LOSS_BWD_PER_ROW,
                        op.saved_bytes + op.act_read)
    if kind == "softmax":     # inside the fused kernel: reads its row statistics only
        return Backward(0, op.vector_flops * BACKWARD_VECTOR[kind], op.saved_bytes)
    if kind not in BACKWARD_VECTOR:
        raise UserError(f"operator {op.name}: no backward rule for kind '{kind or '(none)'}'")
    moved = 0 if kind == "memory" else op.act_write + op.saved_bytes + op.act_read + 2 * op.weight_read
    return Backward(op.vjp_matrix_flops, op.vector_flops * BACKWARD_VECTOR[kind], moved)


def training_workload(w):
    """The workload of a training pass: no history, the head on every position;
    MLA in its naive form (K and V up-projected per head, as Megatron-LM trains it)."""
    if w.history:
        raise UserError("a training pass has no KV history (history must be 0)")
    return w.replace(logits="all", mla="naive")


def training_ops(arch, w, per_layer=False):
    """Forward ledger rows of a training pass: every operator, head on all
    positions, then the loss; under an 8-bit format as `recipe_block_ops` merges them (returned
    with the workload of the BF16 rows, which the backward of the embedding and loss reads).
    per_layer: one instance of each distinct layer's rows (`ledger.operators`)."""
    w = training_workload(w)
    high = stored_workload(w)
    ops = ledger.operators(arch, w, per_layer)
    if high is not w:   # the format convention: linear rows of the layers in the 8-bit format, the rest BF16
        ops = [lo.replace(act_write=hi.act_write) if linear_row(lo) and in_layers(lo) else hi
               for lo, hi in zip(ops, ledger.operators(arch, high, per_layer))]
    ops.extend(op.times(1, "-") for op in CrossEntropy(arch.vocab_size).ops(high))
    return high, ops


def in_layers(op):
    """Decoder-layer rows (the ledger labels top-level rows '-')."""
    return op.layers != "-"


def recompute_spec(level, modules=()):
    """The one string that names a recompute recipe: the level, then '+module' for each of
    `modules` (RECOMPUTE_MODULES, in their order), e.g. 'none+layernorm+moe_act'."""
    if level not in RECOMPUTE:
        raise UserError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {level!r}")
    unknown = [m for m in modules if m not in RECOMPUTE_MODULES]
    if unknown:
        raise UserError(f"unknown recompute module '{unknown[0]}' (choose from {', '.join(RECOMPUTE_MODULES)})")
    if modules and level == "full":
        raise UserError("--recompute full already runs every decoder layer again; drop --recompute-modules")
    return "+".join((level,) + tuple(m for m in RECOMPUTE_MODULES if m in modules))


_PARSED = {}
_PARSED_KEPT = 1 << 10


def parse_recompute(spec):
    """(level, frozenset of modules) of a `recompute_spec` string (memoized)."""
    got = _PARSED.get(spec)
    if got is None:
        level, *modules = spec.split("+") if isinstance(spec, str) else ("",)
        recompute_spec(level, modules)    # validates
        got = remember(_PARSED, _PARSED_KEPT, spec, (level, frozenset(modules)))
    return got


def recomputed(op, spec):
    """Does the recipe `spec` (a `recompute_spec`) run this forward row again during the backward?
    full: every decoder-layer row; selective or core_attn: the attention core (attn_qk, softmax,
    attn_pv); layernorm: the residual stream's norms; mla_up_proj: MLA's up-projections with their
    norms and RoPE (MLA_UP_ROWS); moe_act: the routed experts' activation."""
    if not in_layers(op):
        return False
    level, modules = parse_recompute(spec)
    if level == "full":
        return True
    if op.kind in ("attention", "softmax") and (level == "selective" or "core_attn" in modules):
        return True
    if not modules:
        return False
    if op.name in MLA_UP_ROWS:
        return "mla_up_proj" in modules
    if op.kind == "norm":
        return "layernorm" in modules
    return op.kind == "activation" and op.name.startswith("experts.") and "moe_act" in modules


def stored_workload(w):
    """The workload of every row but the linear layers' under the training format convention:
    an 8-bit (or narrower) compute format (fp8, mxfp8) converts only the decoder layers'
    linear projections (`linear_row`), as Transformer Engine, torchao's float8 training and
    NeMo do and as the DeepSeek-V3 report states (arXiv:2412.19437, section 3.3.1: the
    embedding, output head, MoE gating, norms and attention keep BF16/FP32); everything else
    computes, moves and keeps BF16. A 16- or 32-bit format is the workload itself."""
    if w.act_dtype.bits > 8:
        return w
    return w.replace(act_dtype=_BF16, kv_dtype=_BF16)


def linear_row(op):
    """A row the low-precision format converts: a decoder layer's linear projection (the
    router excepted)."""
    return op.kind == "gemm" and op.name != "router"


def recipe_block_ops(block, w):
    """A block's training rows under the format convention (`stored_workload`): the linear
    rows of the compute-format ledger (their FP8 FLOPs and FP8 inputs read and kept; the
    output written in BF16), every other row of the BF16 ledger (memoized)."""
    high = stored_workload(w)
    if high is w:
        return placement.block_ops(block, w)
    return placement.memo(("recipe ops", block, w),
                          lambda: _merged(placement.block_ops(block, w), placement.block_ops(block, high)))


def _merged(low, high):
    if [op.name for op in low] != [op.name for op in high]:
        raise AssertionError("the two formats' ledgers of a block differ in their rows")
    return [lo.replace(act_write=hi.act_write) if linear_row(lo) else hi for lo, hi in zip(low, high)]


class OpFlops(Record):
    name: str
    layers: str
    repeats: int
    kind: str
    forward_matrix_flops: int
    forward_vector_flops: int
    backward_matrix_flops: int
    backward_vector_flops: int
    backward_bytes: int
    recompute_matrix_flops: int
    recompute_vector_flops: int
    saved_bytes: int


class StepFlops(Record):
    """One training pass over `tokens` tokens (sum over operators)."""
    tokens: int
    recompute: str
    flash_recompute: bool
    ops: tuple
    forward_matrix_flops: int
    forward_vector_flops: int
    backward_matrix_flops: int
    backward_vector_flops: int
    recompute_matrix_flops: int
    recompute_vector_flops: int
    full_recompute_matrix_flops: int   # what `full` would add, for the closed forms
    flash_extra_flops: int             # the QK^T a fused backward recomputes (0 unless flash_recompute)

    @property
    def model_flops(self):
        """Forward + backward matrix FLOPs = 3 x forward matrix FLOPs."""
        return self.forward_matrix_flops + self.backward_matrix_flops - self.flash_extra_flops

    @property
    def hardware_flops(self):
        """Model FLOPs + recomputed matrix FLOPs + a fused backward's recomputed QK^T."""
        return self.forward_matrix_flops + self.backward_matrix_flops + self.recompute_matrix_flops

    @property
    def vector_flops(self):
        return self.forward_vector_flops + self.backward_vector_flops + self.recompute_vector_flops


def step(arch, w, recompute="none", flash_recompute=False, per_layer=False):
    """FLOPs of forward, backward and recompute for one pass of `w.batch`
    sequences of `w.tokens` tokens through `arch` (a whole model or a shard); per_layer:
    the rows (and so the sums) are one instance of each distinct layer, for the table only."""
    parse_recompute(recompute)
    w, ops = training_ops(arch, w, per_layer)
    rows = []
    for op in ops:
        b = backward(op, w, arch.vocab_size, flash_recompute)
        again = recomputed(op, recompute)
        rows.append(OpFlops(op.name, layers=op.layers, repeats=op.repeats, kind=op.kind,
                            forward_matrix_flops=op.matrix_flops, forward_vector_flops=op.vector_flops,
                            backward_matrix_flops=b.matrix_flops, backward_vector_flops=b.vector_flops,
                            backward_bytes=b.bytes, recompute_matrix_flops=op.matrix_flops if again else 0,
                            recompute_vector_flops=op.vector_flops if again else 0,
                            saved_bytes=op.saved_bytes))

    flash = sum(op.matrix_flops for op in ops if flash_recompute and op.name == "attn_qk")
    return StepFlops(
        tokens=w.positions, recompute=recompute, flash_recompute=flash_recompute, ops=tuple(rows),
        forward_matrix_flops=ledger.sum_field(rows, "forward_matrix_flops"),
        forward_vector_flops=ledger.sum_field(rows, "forward_vector_flops"),
        backward_matrix_flops=ledger.sum_field(rows, "backward_matrix_flops"),
        backward_vector_flops=ledger.sum_field(rows, "backward_vector_flops"),
        recompute_matrix_flops=ledger.sum_field(rows, "recompute_matrix_flops"),
        recompute_vector_flops=ledger.sum_field(rows, "recompute_vector_flops"),
        full_recompute_matrix_flops=sum(op.matrix_flops for op in ops if in_layers(op)),
        flash_extra_flops=flash)


class Convention(Record):
    name: str
    formula: str
    flops: int
    compared_with: str       # which exact count the ratio divides by
    exact_flops: int
    reason: str

    @property
    def ratio(self):
        return self.flops / self.exact_flops if self.exact_flops else None


def attention_width_sum(arch):
    """sum over softmax-attention layers of heads * (query-key width + value width)
    (12 L H Q when written per layer with Q = head_dim for both); linear
    attention layers have no T-dependent term here."""
    total = 0
    for layer, count, _ in arch.layer_groups():
        for b in layer.blocks:
            if hasattr(b, "qk_nope"):    # MLA
                total += count * b.heads * (b.qk_nope + b.qk_rope + b.v_head_dim)
            elif hasattr(b, "head_dim") and hasattr(b, "kv_heads"):
                total += count * b.heads * 2 * b.head_dim
    return total


def embedding_params(arch):
    return arch.embedding.params


def megatron_closed_form(sequences, seq, layers, hidden, vocab, recompute=True):
    """Narayanan et al. 2021 (arXiv:2104.04473) eq. 3, with full recompute:
    96 B s l h^2 (1 + s/(6h) + V/(16 l h)) = 96Bslh^2 + 16Bs^2lh + 6BshV;
    without recompute (3 passes of the layers, not 4): 72Bslh^2 + 12Bs^2lh + 6BshV."""
    b, s, l, h, v = sequences, seq, layers, hidden, vocab
    passes = 4 if recompute else 3
    return passes * (24 * b * s * l * h * h + 4 * b * s * s * l * h) + 6 * b * s * h * v


def conventions(arch, st, sequences, seq):
    """The step's exact count beside 6ND, PaLM/torchtitan and Megatron's closed form."""
    d = sequences * seq
    n = arch.active_params
    moe = n != arch.params
    non_emb = n - embedding_params(arch)
    attn = attention_width_sum(arch)
    palm = 6 * non_emb * d + 6 * attn * seq * d
    full = st.model_flops + st.full_recompute_matrix_flops
    gpt = arch.model_type == "gpt2"
    shape_note = "" if gpt else (" It assumes a GPT block (MHA, non-gated 4h MLP); this model's "
                                 "blocks differ, so only the order of magnitude compares.")
    # an MoE model's 6ND also with N = all parameters, as scaling tables (and the book) quote it
    six_all = (Convention("6ND, all parameters", f"6 x N x D, N = {arch.params:,} parameters, every "
                          f"expert included, D = {d:,} tokens", 6 * arch.params * d, "model", st.model_flops,
                          reason="charges every token for every stored expert, not the top-k it uses"),) \
        if moe else ()
    return (
        Convention("exact (model FLOPs)", "3 x forward matrix FLOPs from the ledger",
                   st.model_flops, "model", st.model_flops,
                   reason="causal attention pairs, head and loss on every position, gathers cost no FLOPs"),
        Convention("6ND", f"6 x N x D, N = {n:,} {'active' if moe else 'all'} parameters, D = {d:,} tokens",
                   6 * n * d, "model", st.model_flops,
                   reason="counts every parameter as a matmul weight (the embedding gather too, "
                   "a tied head once) and no attention score work"),
        *six_all,
        Convention("PaLM / torchtitan",
                   f"6 x N_non-embedding x D + 12 L H Q T x D, N_non-embedding = {non_emb:,}, "
                   f"sum of L H (Q_k + Q_v) / 2 = {attn // 2:,}, T = {seq:,}",
                   palm, "model", st.model_flops,
                   reason=("drops the embedding table, which the tied head also multiplies by (its FLOPs "
                    "go missing)" if arch.tied_embeddings else "drops the embedding table, keeps the head")
                   + "; attention over all T keys (not halved for causality, windows ignored)"),
        Convention("Megatron (Narayanan et al. 2021, eq. 3)",
                   "96 B s l h^2 (1 + s/(6h) + V/(16 l h)), full recompute",
                   megatron_closed_form(sequences, seq, len(arch.layers), arch.hidden_size,
                                        arch.vocab_size), "hardware, full recompute", full,
                   reason="attention over the full s x s square (not halved for causality); "
                   "biases and norms not counted; recomputes the layers once." + shape_note),
    )

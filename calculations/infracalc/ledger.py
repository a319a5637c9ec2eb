"""The ledger: an architecture and a workload -> operator records and totals.

This is the single source of truth every analysis composes: it never looks at
a device. Each distinct block is expanded once and multiplied by the number of
layers holding it: one row group per block place (Architecture.block_groups), over
all its layers, however the layers differ elsewhere (Kimi K3's KDA projections are
one row over their 69 layers, not one per attention-residual position).
"""

from operator import attrgetter

from .arch import layer_range_label
from .errors import UserError
from .memo import remember
from .ops import Op, book, train_rope_table, train_rule
from .record import Record
from .summation import plain_sum


class Totals(Record):
    params: int
    active_params: int
    weight_bytes: int               # resident weights in their stored formats
    linear_flops: int               # projections, MLP/experts, router, output head
    attention_flops_causal: int
    attention_flops_rectangular: int
    vector_flops: int
    weight_bytes_read: int
    act_bytes_read: int
    kv_bytes_read: int
    act_bytes_written: int
    kv_bytes_written: int
    kv_bytes_per_token: int         # one token's cache across all layers
    kv_bytes_resident_before: int   # whole batch, before the pass
    kv_bytes_resident_after: int

    @property
    def matrix_flops(self):
        return self.linear_flops + self.attention_flops_causal

    @property
    def flops(self):
        return self.matrix_flops + self.vector_flops

    @property
    def bytes_read(self):
        return self.weight_bytes_read + self.act_bytes_read + self.kv_bytes_read

    @property
    def bytes_written(self):
        return self.act_bytes_written + self.kv_bytes_written

    @property
    def unique_bytes(self):
        """The least a perfectly fused pass must move: weights read, KV read
        and written (activations assumed to stay on chip)."""
        return self.weight_bytes_read + self.kv_bytes_read + self.kv_bytes_written


class Ledger(Record):
    arch: object
    workload: object
    ops: tuple
    totals: Totals


def build(arch, w):
    """Every operator of one forward pass of `arch` over workload `w`."""
    ops = operators(arch, w)
    return Ledger(arch, w, tuple(ops), totals(arch, w, ops))


# Rows of the latest ledgers, by (arch, workload, per_layer): one command asks for
# the same pass several times (a decode's steps again for its serving bound, an
# MLA path's cost and then its rows). Records are immutable and equal inputs give
# equal rows, so a hit is exact. Bounded: a layout search builds thousands.
_ROWS = {}
_ROWS_KEPT = 256
_LABELS = {}   # layer_range_label by layer indices (a few per model)
_LABELS_KEPT = 1 << 12


def operators(arch, w, per_layer=False):
    """The ledger's operator rows alone (no totals): what the decode sums need.
    per_layer: each distinct layer's rows once (one instance, not multiplied by
    its count; `repeats` still says how many layers share it). A new list of
    shared rows (memoized per arch, workload and per_layer)."""
    key = (arch, w, per_layer)
    rows = _ROWS.get(key)
    if rows is None:
        rows = remember(_ROWS, _ROWS_KEPT, key, tuple(_operators(arch, w, per_layer)))
    return list(rows)


def parts(arch):
    """[(block, count, layers label, per-layer rows allowed)] in the ledger's row order:
    the embedding, each block place of the layers (Architecture.block_groups: a block
    over every layer holding it, in first-seen order), the final norm, the head. A
    block's rows are its ops, each times `count` (every FIELDS value scales by it)."""
    out = [(arch.embedding, 1, "-", False)]
    for block, count, indices in arch.block_groups():
        label = _LABELS.get(indices) or remember(_LABELS, _LABELS_KEPT, indices, layer_range_label(indices))
        out.append((block, count, label, True))
    out.append((arch.final_norm, 1, "-", False))
    out.append((arch.head, 1, "-", False))
    return out


def _operators(arch, w, per_layer):
    replay = ced_replay(arch, w)
    if replay is not None:
        return _ced_operators(arch, w, per_layer, replay)
    free = w.without_history()   # the key of history-independent rows
    ops = []
    for block, count, label, layered in parts(arch):
        ops.extend(_block_rows(block, w, free, count, label, per_layer and layered))
        if w.reference_path and block is arch.embedding:
            from .blocks.reference_path import mrope_op
            ops.append(mrope_op(arch, w).replace(layers="-"))
        if w.scalar_count == "book" and block is arch.embedding:
            ops.append(rope_table_op(arch, w))
    return ops


def rope_table_op(arch, w):
    """--scalar-count book: the book's RoPE table, computed once per pass and shared by the batch
    (equal position ids) and every layer: the T positions times R/2 inverse frequencies (T R / 2
    scalar FLOPs), then cos and sin of the duplicated [T, R] angles (T R each, specials). No
    matrix or vector FLOPs of ours (the ledger takes the table as given). R: the rotated dims."""
    dims = {b.rope_dim for layer in arch.layers for b in layer.blocks if getattr(b, "rope_dim", 0)}
    if len(dims) != 1:
        from .errors import UserError
        raise UserError(f"--scalar-count book: {arch.id} has rotated widths {sorted(dims) or 'none'}; "
                        "the book's RoPE table rule needs one")
    (r,) = dims
    t = w.tokens
    # its interface: reads the int64 positions and the fp32 inverse frequencies, writes cos and sin
    moved = 8 * t + 4 * (r // 2) + 2 * w.act_dtype.nbytes_flat(t * r)
    return Op("rope_table", "vector", f"[{t},{r // 2}] -> cos, sin [{t},{r}]", layers="-",
              **book(t * r // 2, moved, sin=t * r, cos=t * r),
              book_train=train_rule(train_rope_table, t, r))


def ced_replay(arch, w):
    """The decoder's workload under --schedule ced, or None when every layer runs every new token.

    CED (DeepSeek-V4.1; the book's topics/v41_forward.py and its chapter 2): a fresh prompt of
    T > R tokens (R = arch.ced_window, the sliding window) runs layers 0 .. split-1 (the causal
    encoder) on all T positions and layers split .. n-1 (the decoder) on the last R only: their
    queries keep their absolute positions (history T - R for the shared-cache attention and the
    indexers), their sliding windows restart at the replayed segment (Workload.replay), and the
    decoder's KV source at `split` compresses the encoder's output at all T positions. A
    continuation (H > 0) or a prompt of at most R tokens runs every layer on every token."""
    if w.schedule != "ced":
        return None
    if not arch.ced_split:
        raise UserError(f"--schedule ced: {arch.id} has no CED encoder/decoder split (DeepSeek-V4.1)")
    r = arch.ced_window
    if w.history or w.tokens <= r:
        return None
    return w.replace(tokens=r, history=w.tokens - r, replay=True, schedule="full")


def _ced_operators(arch, w, per_layer, dec):
    """Rows of a CED prefill: the embedding and the encoder layers under `w`; the decoder layers,
    the final norm and the head under the replay workload `dec` (labels: global layer indices)."""
    from .arch import block_groups

    split = arch.ced_split
    enc, decoder = [], []
    for layer, _, indices in arch.layer_groups():
        for part, keep in ((enc, lambda i: i < split), (decoder, lambda i: i >= split)):
            mine = tuple(i for i in indices if keep(i))
            if mine:
                part.append((layer, len(mine), mine))
    ops = list(_block_rows(arch.embedding, w, w.without_history(), 1, "-", False))
    for groups, ww in ((enc, w), (decoder, dec)):
        free = ww.without_history()
        for block, count, indices in block_groups(groups):
            label = _LABELS.get(indices) or remember(_LABELS, _LABELS_KEPT, indices, layer_range_label(indices))
            ops.extend(_block_rows(block, ww, free, count, label, per_layer))
    for block in (arch.final_norm, arch.head):
        ops.extend(_block_rows(block, dec, dec.without_history(), 1, "-", False))
    return ops


# Labelled rows by (block, workload at history 0, count, layers, per_layer): a
# decode's steps and a batch sweep's probes differ in the history alone. A
# history-independent block (Block.history_independent) keeps (None, rows), built
# once; another keeps (its latest raw rows, their labelled copies), and the raw rows
# it returns again (its history-free part, arch.history_free_rows) are labelled once.
_BLOCK_ROWS = {}
_BLOCK_ROWS_KEPT = 1024


# Raw rows (block.ops) by (block, workload; at history 0 for a history-independent
# block): a model repeats a few distinct blocks over many layer groups (Kimi K3: 35
# distinct blocks in 187 places), and each is expanded once per workload.
_RAW = {}
_RAW_KEPT = 512


def _raw_ops(block, w, free):
    if not block.reads_mla:
        w, free = w.without_mla(), free.without_mla()
    key = (block, free) if block.history_independent else (block, w)
    ops = _RAW.get(key)
    return remember(_RAW, _RAW_KEPT, key, tuple(block.ops(w))) if ops is None else ops


def _block_rows(block, w, free, count, label, per_layer):
    """`block`'s rows under `w`, labelled with its layer range and count (per_layer:
    one instance's figures with `repeats`; else multiplied by the count)."""
    key = (block, free if block.reads_mla else free.without_mla(), count, label, per_layer)
    hit = _BLOCK_ROWS.get(key)
    if block.history_independent:
        if hit is None:
            hit = remember(_BLOCK_ROWS, _BLOCK_ROWS_KEPT, key,
                           (None, tuple(_labelled(op, count, label, per_layer) for op in _raw_ops(block, w, free))))
        return list(hit[1])
    ops = _raw_ops(block, w, free)
    if hit is not None and len(hit[0]) == len(ops):
        rows = [done if op is raw else _labelled(op, count, label, per_layer)
                for op, raw, done in zip(ops, *hit)]
    else:
        rows = [_labelled(op, count, label, per_layer) for op in ops]
    remember(_BLOCK_ROWS, _BLOCK_ROWS_KEPT, key, (ops, rows))
    return rows


def _labelled(op, count, label, per_layer):
    return op.replace(layers=label, repeats=count) if per_layer else op.times(count, label)


def sum_field(rows, attr, category=None):
    """The sum of field `attr` over operator rows (of one `category` when given):
    the one way every analysis totals a ledger, a summed decode or a kernel."""
    if category is None:
        return plain_sum(map(attrgetter(attr), rows))
    return plain_sum(getattr(op, attr) for op in rows if op.category == category)


def field_sums(arch, w, fields):
    """The sums of `fields` (Op attributes) over the ledger's rows of `arch` under `w`,
    from each distinct block's rows once times the layers holding it (a row's every
    additive field scales with its count): sum_field's answers without the rows."""
    get = attrgetter(*fields) if len(fields) > 1 else (lambda op, one=attrgetter(*fields): (one(op),))
    if ced_replay(arch, w) is not None:   # CED runs two workloads: sum its rows
        return tuple(plain_sum(vals) for vals in zip(*(get(op) for op in operators(arch, w))))
    free = w.without_history()
    counts = {}
    for block, count, _, _ in parts(arch):
        counts[block] = counts.get(block, 0) + count
    total = [0] * len(fields)
    for block, count in counts.items():
        for op in _raw_ops(block, w, free):
            total = [t + count * v for t, v in zip(total, get(op))]
    return tuple(total)


# Totals of operator rows: (total's name, operator field, category or None).
OP_TOTALS = (
    ("linear_flops", "matrix_flops", "linear"),
    ("attention_flops_causal", "matrix_flops", "attention"),
    ("attention_flops_rectangular", "rect_flops", "attention"),
    ("vector_flops", "vector_flops", None),
    ("weight_bytes_read", "weight_read", None),
    ("act_bytes_read", "act_read", None),
    ("kv_bytes_read", "kv_read", None),
    ("act_bytes_written", "act_write", None),
    ("kv_bytes_written", "kv_write", None),
)


def op_totals(rows):
    """{total's name: sum} of OP_TOTALS over operator rows (Totals' work and traffic fields):
    the fields without a category summed over every row, the others over their category's."""
    by = {}
    for op in rows:
        by.setdefault(op.category, []).append(op)
    return {name: sum_field(rows, attr) if category is None else sum_field(by.get(category, ()), attr)
            for name, attr, category in OP_TOTALS}


def totals(arch, w, ops):
    """The Totals of `arch`'s operator rows `ops` under workload `w` (a whole
    model's or a shard's): parameters, resident weights and caches, and op_totals."""
    return Totals(
        params=arch.params,
        active_params=arch.active_params,
        weight_bytes=arch.weight_bytes(w),
        **op_totals(ops),
        kv_bytes_per_token=arch.kv_bytes_per_token(w.kv_dtype, w.mla),
        kv_bytes_resident_before=w.batch * arch.kv_bytes(w.kv_dtype, w.history, w.mla) if w.history else 0,
        kv_bytes_resident_after=w.batch * arch.kv_bytes(w.kv_dtype, w.context, w.mla),
    )

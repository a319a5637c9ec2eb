"""The normalized architecture: what a config means, independent of its keys.

An `Architecture` is an embedding, a tuple of `Layer`s, a final norm and an
output head. A `Layer` is a sequence of blocks (norms, attention, residual
adds, MLP or MoE). Every block is a frozen dataclass that knows two things:
its checkpoint tensors (`tensors()`, for exact parameter counts) and its
operators for a workload (`ops(w)`, for the ledger); `shard(tp, ep)` returns
the block as one device of a parallel layout holds it (see `layout`).
Identical layers compare equal, so the ledger computes each distinct layer once.
"""

from .memo import remember
from .record import Record


class Tensor(Record):
    """One checkpoint tensor. role: matrix | expert | router | embedding | head | vector |
    table (an integer lookup table: DeepSeek-V4's tid2eid);
    `stored` names a format the checkpoint always keeps it in (e.g. fp32 for
    DeepSeek-V3's e_score_correction_bias), whatever the weight format."""
    name: str
    shape: tuple
    role: str = "matrix"
    stored: str = ""
    checkpoint_shape: tuple = ()   # the official checkpoint's shape where it differs from the config's
                                   # (parameters stay the config's; `stored_as`, --tensor-shapes checkpoint)

    def stored_as(self, shapes):
        """This tensor as the checkpoint stores it under --tensor-shapes `shapes` (config | checkpoint)."""
        if shapes == "checkpoint" and self.checkpoint_shape:
            return self.replace(shape=self.checkpoint_shape)
        return self

    @property
    def params(self):
        """Values of the tensor; 0 for an integer lookup table (role table), which is
        checkpoint bytes but no parameter (nothing trains it; the book's count excludes it)."""
        if self.role == "table":
            return 0
        n = 1
        for d in self.shape:
            n *= d
        return n


def _memoized_tensors(method, key):
    """`method` (a block's tensors() or active_params()) computed once per instance: a block is
    immutable and its tensors are a function of its fields alone, while
    parameter counts and every ledger ask for them again."""
    def tensors(self):
        d = self.__dict__
        out = d.get(key)
        if out is None:
            out = d[key] = method(self)
        return out
    tensors.__doc__ = method.__doc__
    return tensors


# history_free_rows' memo: (block, part, workload at history 0) -> rows. Bounded (a
# layout search builds thousands of ledgers).
_FREE_PARTS = {}
_FREE_PARTS_KEPT = 1024


def history_free_rows(block, w, part, build):
    """build(), the rows `part` of `block` under `w` that do not depend on the
    history (an attention block's projections, norms, RoPE and cache write: all
    but its core), memoized by (block, part, w at history 0): a decode's steps
    and a batch sweep's probes differ in the history alone. `build` must read
    no history (tests/test_history_independent.py compares every block's rows
    with this memo warm at another history and cold)."""
    key = (block, part, w.without_history())
    rows = _FREE_PARTS.get(key)
    return remember(_FREE_PARTS, _FREE_PARTS_KEPT, key, build()) if rows is None else rows


class Block(Record):
    """Defaults for blocks without weights, KV cache or attention."""

    label = ""

    history_independent = False
    """True when `ops(w)` is the same at every `w.history` (all other workload
    fields equal): the block reads no cache or state and checks no position
    (MLP, MoE, norms, residual adds, embedding, output head; not attention,
    whose pairs and cache reads grow with the history). The ledger then reuses
    its rows across decode steps and batch-sweep probes instead of rebuilding
    them. Declare it only when true: tests/test_history_independent.py compares
    the rows of every declaring block of every bundled model at different
    histories, so a wrong declaration fails CI."""

    cache_kinds = ()
    """The kinds of cache row (dtypes.CACHE_KINDS) whose format this block takes from
    `kv_dtype.for_cache(kind)`: a composite --kv-dtype may set them apart."""

    reads_mla = False
    """True when `ops(w)` depends on `w.mla` (the MLA blocks: blocks.mla). The ledger
    keys every other block's rows by the workload with the MLA path left out, so an MLA
    model's two paths (mla_path.cheaper) share them. tests/test_history_independent.py
    compares every other block's rows of every bundled model under each path."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("tensors", "active_params"):   # keyed per class: a subclass's may call super()'s
            if name in cls.__dict__:
                setattr(cls, name, _memoized_tensors(cls.__dict__[name], f"_{name}.{cls.__qualname__}"))

    def tensors(self):
        return ()

    def ops(self, w):
        return []

    def kv_bytes_per_token(self, kv_dtype, mla="absorbed"):
        """Cache bytes one token adds to this block (0 if it keeps none) in format
        `kv_dtype`. Every cache hook takes the workload's cache format the same
        way, (kv_dtype, mla): `mla` is the MLA execution path (blocks.mla), which
        only an MLA block's cache depends on; callers never ask which blocks."""
        return 0

    def kv_tokens(self, context):
        """How many of `context` tokens this block keeps in its cache."""
        return context

    def kv_tokens_peak(self, context):
        """The most tokens this block holds at any context up to `context`:
        what a request must reserve on its way there. Override when
        `kv_tokens` can fall as the context grows (chunked attention)."""
        return self.kv_tokens(context)

    def kv_bytes(self, kv_dtype, context, mla="absorbed", peak=False):
        """Cache and state bytes one request holds in this block after `context` tokens (peak:
        the most it holds on the way there): bytes per token x tokens kept + fixed state."""
        tokens = self.kv_tokens_peak(context) if peak else self.kv_tokens(context)
        return self.kv_bytes_per_token(kv_dtype, mla) * tokens + self.state_bytes(kv_dtype)

    def history_breakpoints(self, lo, hi):
        """History values h in (lo, hi] where a new linear piece of the per-step
        cost begins. For one new token per request (T = 1) every quantity of
        `ops` must be linear in the history on each piece, so a sum over decode
        steps can be done in closed form piece by piece."""
        return ()

    def history_period(self):
        """P when this block's breakpoints repeat every P histories and its
        per-step cost at H + P is its cost at H plus a fixed increment (chunked
        attention, P = C); None otherwise. Lets decode sum whole periods at once.

        Contract (analyses/decode_sum.py relies on it): from history P on, the
        breakpoints in (H + P, H + 2P] are those in (H, H + P] shifted by P, and
        a block with a period has no other breakpoints; a block without one has
        only a few, whatever the range (it is asked over the whole output)."""
        return None

    def history_segments(self, lo, hi):
        """Histories in (lo, hi] where a block with a history period changes its
        per-period drift (DeepSeek-V4's indexer once its top-k is saturated): decode
        cuts its periodic runs there (analyses/decode_sum.segments). Default none."""
        return ()

    def state_bytes(self, kv_dtype):
        """Fixed per-request state that does not grow with context (recurrent layers)."""
        return 0

    def kv_formula(self, kv_dtype, mla="absorbed"):
        """One line deriving `kv_bytes_per_token` (and `state_bytes`) from the
        shapes, for the `kv` output; "" when the block does not describe it.
        Takes the cache format as `kv_bytes_per_token` does."""
        return ""

    def shard(self, tp, ep=1):
        """This block as one device of a layout holds and runs it, itself an
        ordinary block (fewer heads, a narrower MLP, fewer local experts, a
        vocabulary slice), so `tensors()`, `ops(w)` and the cache methods give
        per-device figures. `tp` is the tensor-parallel degree, `ep` the
        expert-parallel degree (MoE blocks only). A block that cannot be split
        that way raises UserError naming why. Default: a block without weights
        is replicated (each device keeps any cache or state whole); a block with
        weights must declare its split."""
        if (tp > 1 or ep > 1) and self.tensors():
            from .errors import UserError
            raise UserError(f"{self.label or type(self).__name__} does not declare how tensor "
                            "or expert parallelism splits it")
        return self

    @property
    def params(self):
        """The tensors' parameters (once per instance, as `tensors`: the layers share blocks)."""
        d = self.__dict__
        out = d.get("_params")
        if out is None:
            out = d["_params"] = sum(t.params for t in self.tensors())
        return out

    def active_params(self):
        """Parameters one token uses (differs from `params` for MoE; a subclass's is computed
        once per instance)."""
        return self.params


class Layer(Record):
    blocks: tuple

    def tensors(self):
        return tuple(t for b in self.blocks for t in b.tensors())

    @property
    def params(self):
        return sum(b.params for b in self.blocks)

    def active_params(self):
        return sum(b.active_params() for b in self.blocks)

    @property
    def label(self):
        return " + ".join(b.label for b in self.blocks if b.label)

    def kv_bytes_per_token(self, kv_dtype, mla="absorbed"):
        return sum(b.kv_bytes_per_token(kv_dtype, mla) for b in self.blocks)

    def kv_bytes(self, kv_dtype, context, mla="absorbed", peak=False):
        """Cache bytes one request holds in this layer after `context` tokens
        (peak: the most it holds on the way there, what it must reserve)."""
        return sum(b.kv_bytes(kv_dtype, context, mla, peak) for b in self.blocks)


class Part(Record):
    """A part of the checkpoint reported apart from the main model (MTP, vision).
    params is None when it cannot be derived from the config (unknown); `tower` is the
    geometry of a vision encoder the tool costs (`VisionTower`, `encode`), else None."""
    name: str
    params: int
    note: str
    tower: object = None
    module: object = None   # MTP: the Layer a draft call runs (its input block first), when the
                            # adapter builds it (DeepSeek-V4); else the drafter is derived
    checkpoint_bytes: int = None   # its tensors' bytes in the checkpoint's formats, when derived


class VisionTower(Record):
    """A ViT vision encoder's geometry (Qwen3-VL: `load/vision.py`; its FLOPs and bytes:
    `analyses/vision_encoder.py`)."""
    hidden: int          # d
    intermediate: int    # I (plain two-layer MLP)
    depth: int           # ViT blocks
    heads: int
    patch: int           # p (square patches)
    temporal_patch: int  # t frames per patch (a still image is repeated t times)
    channels: int        # C
    merge: int           # s: s x s patches merge into one token
    out_hidden: int      # o: the language model's hidden size
    deepstack: tuple     # blocks whose output a DeepStack merger also projects
    params: int


class Architecture(Record):
    id: str
    model_type: str
    hidden_size: int
    vocab_size: int
    max_context: int
    embedding: object
    layers: tuple
    final_norm: object
    head: object
    tied_embeddings: bool = False
    native_formats: tuple = ()   # (role, dtype name) pairs the checkpoint ships in
    parts: tuple = ()            # Part records not counted in params
    notes: tuple = ()
    max_context_source: str = "max_position_embeddings"   # what sets max_context (load.rope)
    ced_split: int = 0           # DeepSeek-V4.1 CED: the first decoder layer (0: no encoder/decoder split)
    ced_window: int = 0          # CED: the prompt positions the decoder replays (the sliding window)

    def top_blocks(self):
        return (self.embedding, self.final_norm, self.head)

    def tensors(self):
        """All checkpoint tensors of the main model; a tied head adds none."""
        out = list(self.embedding.tensors())
        for i, layer in enumerate(self.layers):
            out.extend(t.replace(name=f"layers.{i}.{t.name}") for t in layer.tensors())
        out.extend(self.final_norm.tensors())
        out.extend(self.head.tensors())
        return out

    @property
    def params(self):
        """Every block's parameters (computed once per instance: an immutable record)."""
        d = self.__dict__
        out = d.get("_params")
        if out is None:
            out = d["_params"] = sum(b.params for b in self.top_blocks()) + sum(
                layer.params * count for layer, count, _ in self.layer_groups())
        return out

    @property
    def active_params(self):
        """Parameters used per token: top-k routed experts, not all of them (once per instance)."""
        d = self.__dict__
        out = d.get("_active_params")
        if out is None:
            out = d["_active_params"] = sum(b.active_params() for b in self.top_blocks()) + sum(
                layer.active_params() * count for layer, count, _ in self.layer_groups())
        return out

    def _check(self):
        groups = {}
        for i, layer in enumerate(self.layers):
            groups.setdefault(layer, []).append(i)
        self.__dict__["_groups"] = [(layer, len(ix), tuple(ix)) for layer, ix in groups.items()]

    def layer_groups(self):
        """[(layer, count, indices)] for each distinct layer, in first-seen order
        (computed once, when the architecture is built)."""
        return self._groups

    def has_block(self, kind):
        """Whether any decoder layer holds a block of class `kind` (an option that acts on one block
        kind refuses a model without it)."""
        return any(isinstance(b, kind) for layer, _, _ in self._groups for b in layer.blocks)

    def block_groups(self):
        """block_groups(self.layer_groups()), computed once."""
        d = self.__dict__
        out = d.get("_block_groups")
        if out is None:
            out = d["_block_groups"] = block_groups(self._groups)
        return out

    def _weight_tally(self):
        """[(tensor, copies)], one per distinct (shape, role, stored) — all a tensor's
        stored bytes depend on (Workload.weight_bytes) — built once per architecture:
        `models` sizes every model in four formats and each ledger sizes it again."""
        d = self.__dict__
        tally = d.get("_tally")
        if tally is None:
            seen = {}

            def add(tensors, count):
                for t in tensors:
                    key = (t.shape, t.role, t.stored)
                    entry = seen.get(key)
                    if entry is None:
                        seen[key] = [t, count]
                    else:
                        entry[1] += count
            for b in self.top_blocks():
                add(b.tensors(), 1)
            for layer, count, _ in self.layer_groups():
                add(layer.tensors(), count)
            tally = d["_tally"] = [(t, n) for t, n in seen.values()]
        return tally

    def weight_bytes(self, w):
        """Resident weight bytes of the whole model in the workload's formats (its tensors' shapes as
        `w.tensor_shapes` says: the config's, or the checkpoint's where they differ)."""
        return sum(n * w.weight_bytes(t.stored_as(w.tensor_shapes)) for t, n in self._weight_tally())

    def checkpoint_elements(self, w):
        """The elements of the model's checkpoint in the workload's formats (Dtype.elements: packed
        values plus scales, per tensor as `w.tensor_shapes` says), what a safetensors parameter
        count of that checkpoint sums."""
        stored = ((t.stored_as(w.tensor_shapes), n) for t, n in self._weight_tally())
        return sum(n * w.stored_format(t).elements(t.shape) for t, n in stored)

    def kv_bytes_per_token(self, kv_dtype, mla="absorbed"):
        """One token's cache over all layers; `mla` picks the MLA path (naive | absorbed)."""
        return sum(layer.kv_bytes_per_token(kv_dtype, mla) * count
                   for layer, count, _ in self.layer_groups())

    def kv_bytes(self, kv_dtype, context, mla="absorbed", peak=False):
        """Cache and state bytes of one request after `context` tokens
        (peak: the most held on the way there; differs for chunked attention): each block place
        once, times the layers holding it (`block_groups`: the layers share most blocks)."""
        return sum(b.kv_bytes(kv_dtype, context, mla, peak) * count for b, count, _ in self.block_groups())

    @property
    def attention_summary(self):
        kinds = {}
        for layer, count, _ in self.layer_groups():
            for b in layer.blocks:
                kind = getattr(b, "kind", None)
                if kind:
                    kinds[kind] = kinds.get(kind, 0) + count
        if len(kinds) == 1:
            return next(iter(kinds))
        return " + ".join(f"{n}x {k}" for k, n in kinds.items())


def block_groups(layer_groups):
    """[(block, count, indices)] for each distinct block place of `layer_groups`
    ([(layer, count, indices)]), in first-seen order: a block equal in several layer
    groups at the same occurrence within its layer (a layer's second residual add is
    another place than its first) is one entry over all their layers (indices sorted)."""
    places = {}
    for layer, _, indices in layer_groups:
        seen = {}
        for block in layer.blocks:
            k = seen[block] = seen.get(block, -1) + 1
            places.setdefault((block, k), []).append(indices)
    out = []
    for (block, _), parts in places.items():
        indices = parts[0] if len(parts) == 1 else tuple(sorted(i for p in parts for i in p))
        out.append((block, len(indices), indices))
    return out


def layer_range_label(indices):
    """'0-35', '1,3,...,35' or '0,5,9' for a sorted tuple of layer indices."""
    if len(indices) == 1:
        return str(indices[0])
    steps = {b - a for a, b in zip(indices, indices[1:])}
    if steps == {1}:
        return f"{indices[0]}-{indices[-1]}"
    if len(steps) == 1 and len(indices) > 3:
        return f"{indices[0]},{indices[1]},...,{indices[-1]}"
    return ",".join(str(i) for i in indices) if len(indices) <= 8 else \
        f"{len(indices)} layers in {indices[0]}-{indices[-1]}"

"""What one forward pass processes, and in which number formats."""

from .dtypes import DTYPES, STORED_ONLY, Dtype, dtype
from .errors import UserError
from .record import Record

LOGITS = ("last", "all", "none")
SCHEDULES = ("full", "ced")
MLA_PATHS = ("absorbed", "expanded", "naive")
MLA_CHOICES = ("auto",) + MLA_PATHS   # auto: picked per pass (analyses/mla_path)
DELTA_FORMS = ("auto", "chunked", "recurrent")
NEW_KV = ("reread", "on-chip")
SCALAR_COUNTS = ("ledger", "book")   # vector FLOPs only | also the book's scalar and special-function count
TENSOR_SHAPES = ("config", "checkpoint")   # resident weight bytes from the config's shapes | the checkpoint's
HC_CONTRACTIONS = ("vector", "matrix")   # mHC stream sums as vector work (default) | as matrix contractions
REFERENCE_PATHS = ("", "default", "record-past")   # blocks.reference_path ("": the ledger's own count)
KDA_COUNTS = ("ledger", "recurrent-baseline")   # blocks.kimi.KDA: our ledger | the book's logical recurrent count
CONV_STATES = ("history", "kernel")   # a causal conv's cached positions: kernel - 1 (default) | kernel
ROUTING_MODELS = ("uniform", "balanced", "concentrated")   # MoE routing models (blocks.moe), besides "histogram"
_BF16 = DTYPES["bf16"]


class Workload(Record):
    """B requests, each with `history` cached tokens and `tokens` new ones.

    Weight formats: see `dtype_for`; `formats` overrides a role with a
    checkpoint's native format (e.g. MXFP4 experts).
    Matrix work runs at the activation format's peak (`compute_dtype`).
    """
    batch: int = 1
    tokens: int = 1
    history: int = 0
    logits: str = "last"
    weight_dtype: Dtype = _BF16
    act_dtype: Dtype = _BF16
    kv_dtype: Dtype = _BF16
    formats: tuple = ()   # ((role, Dtype), ...)
    routing: str = "uniform"      # MoE routing model (see blocks.moe)
    routing_loads: tuple = ()     # relative load per expert for routing "histogram"
    mla: str = "absorbed"         # MLA execution path: auto | absorbed | expanded | naive (blocks.mla)
    delta_form: str = "auto"      # linear-attention form: auto | chunked | recurrent (blocks.linear_attention, blocks.lightning)
    new_kv: str = "reread"        # attention reads the pass's new K/V back from memory | takes them on chip
    conv_state: str = "history"   # positions per channel a Gated DeltaNet conv state keeps: kernel - 1 ("history",
                                  # vLLM's layout) | kernel (the book's reference path); `kv --conv-state`
    reference_path: str = ""      # the book's Qwen3.5/3.6 reference-fallback count (blocks.reference_path): "",
                                  # "default" or "record-past" (conv taps, padded chunks, eager rectangle, M-RoPE)
    kda_count: str = "ledger"     # KDA's non-matrix work: ledger | recurrent-baseline (blocks.kimi, the book's
                                  # logical recurrent baseline: every op and the recurrence as scalar FLOPs)
    head_positions: int = 0       # positions per request the head runs on (0: as `logits` says); training's
                                  # compacted supervised tokens (train --supervised-tokens)
    loss_positions: int = 0       # positions per request the loss supervises (0: every head row); a dense
                                  # loss mask: the head on every position, the loss on these (train --loss-mask)
    scalar_count: str = "ledger"   # ledger | book: also the book's per-operator scalar and special-function
                                   # count (ops.book; forward --scalar-count), and its RoPE table row
    tensor_shapes: str = "config"   # resident weights: the config's tensor shapes | the official checkpoint's
                                    # where they differ (arch.Tensor.checkpoint_shape; decode --tensor-shapes)
    schedule: str = "full"        # which layers run which positions: full (every layer every new token) | ced
                                  # (DeepSeek-V4.1's encoder/decoder split: ledger.ced_replay)
    replay: bool = False          # set by the ledger only: this pass is CED's decoder replay of a fresh prompt's
                                  # last `tokens` positions (history = the positions before them)
    hc_contractions: str = "vector"  # mHC's pre weighted sum and post stream mix: vector FLOPs | matrix
                                     # contractions (blocks.hyper_connections; train --hc-contractions)

    def _check(self):
        for name, low in (("batch", 1), ("tokens", 1), ("history", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                need = "a positive integer" if low else "a non-negative integer"
                raise UserError(f"{name} must be {need}, got {value!r}")
        if self.mla not in MLA_CHOICES:
            raise UserError(f"mla must be one of {', '.join(MLA_CHOICES)}, got {self.mla!r}")
        if self.delta_form not in DELTA_FORMS:
            raise UserError(f"delta_form must be one of {', '.join(DELTA_FORMS)}, got {self.delta_form!r}")
        if self.new_kv not in NEW_KV:
            raise UserError(f"new_kv must be one of {', '.join(NEW_KV)}, got {self.new_kv!r}")
        if self.reference_path not in REFERENCE_PATHS:
            raise UserError(f"reference_path must be one of {', '.join(map(repr, REFERENCE_PATHS))}, "
                            f"got {self.reference_path!r}")
        if self.kda_count not in KDA_COUNTS:
            raise UserError(f"kda_count must be one of {', '.join(KDA_COUNTS)}, got {self.kda_count!r}")
        if self.conv_state not in CONV_STATES:
            raise UserError(f"conv_state must be one of {', '.join(CONV_STATES)}, got {self.conv_state!r}")
        if self.scalar_count not in SCALAR_COUNTS:
            raise UserError(f"scalar_count must be one of {', '.join(SCALAR_COUNTS)}, got {self.scalar_count!r}")
        if self.tensor_shapes not in TENSOR_SHAPES:
            raise UserError(f"tensor_shapes must be one of {', '.join(TENSOR_SHAPES)}, got {self.tensor_shapes!r}")
        if self.hc_contractions not in HC_CONTRACTIONS:
            raise UserError(f"hc_contractions must be one of {', '.join(HC_CONTRACTIONS)}, "
                            f"got {self.hc_contractions!r}")
        if self.logits not in LOGITS:
            raise UserError(f"logits must be one of {', '.join(LOGITS)}, got {self.logits!r}")
        if self.schedule not in SCHEDULES:
            raise UserError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if not 0 <= self.loss_positions <= self.tokens:
            raise UserError(f"loss positions must be in 0..{self.tokens} (the new tokens per request), "
                            f"got {self.loss_positions}")
        if not 0 <= self.head_positions <= self.tokens:
            raise UserError(f"head positions must be in 0..{self.tokens} (the new tokens per request), "
                            f"got {self.head_positions}")

    def without_mla(self):
        """This workload with the MLA path left out (absorbed; built once per instance):
        the key of the rows of a block that does not read it (Block.reads_mla)."""
        d = self.__dict__
        free = d.get("_without_mla")
        if free is None:
            free = d["_without_mla"] = self.replace(mla="absorbed") if self.mla != "absorbed" else self
        return free

    def without_history(self):
        """This workload at history 0 (built once per instance): the key under which
        rows that do not depend on the history are reused across histories
        (Block.history_independent, arch.history_free_rows)."""
        d = self.__dict__
        free = d.get("_without_history")
        if free is None:
            free = d["_without_history"] = self.replace(history=0) if self.history else self
        return free

    @property
    def positions(self):
        """New token positions in the pass: batch * tokens."""
        return self.batch * self.tokens

    @property
    def context(self):
        """Tokens per request after the pass: history + tokens."""
        return self.history + self.tokens

    @property
    def new_keys_on_chip(self):
        """New tokens per request whose K/V attention takes from the projections
        instead of reading them back from the cache: T with --new-kv on-chip, else 0."""
        return self.tokens if self.new_kv == "on-chip" else 0

    @property
    def head_rows(self):
        """Positions the output head runs on: `head_positions` per request when set, else by `logits`."""
        if self.head_positions:
            return self.batch * self.head_positions
        return {"last": self.batch, "all": self.positions, "none": 0}[self.logits]

    @property
    def loss_rows(self):
        """Rows the loss supervises: `loss_positions` per request when set, else every head row."""
        return self.batch * self.loss_positions if self.loss_positions else self.head_rows

    @property
    def compute_dtype(self):
        return self.act_dtype

    def dtype_for(self, role):
        """Storage format of a tensor role: a native override, else the weight
        format for linear-layer matrices (roles matrix and expert); embedding,
        head, MoE router and 1-D tensors keep 16 bits (bf16) when the weight format is
        narrower, as quantized checkpoints (GPTQ, AWQ, FP8, MXFP4) do."""
        for r, d in self.formats:
            if r == role:
                return d
        wd = self.weight_dtype
        if role in ("matrix", "expert") or wd.bits >= 16:
            return wd
        return _BF16

    def stored_format(self, tensor):
        """The format a weight tensor is stored in: its checkpoint's own, else its role's (dtype_for)."""
        stored = tensor.stored
        return (DTYPES.get(stored) or STORED_ONLY.get(stored) or dtype(stored)) if stored else self.dtype_for(tensor.role)

    def weight_bytes(self, tensor):
        return self.stored_format(tensor).nbytes(tensor.shape)


def from_formats(arch, *, weight_dtype=None, act_dtype="bf16", kv_dtype=None, routing="uniform", routing_loads=(),
                 **fields):
    """A Workload of `arch` from format names: an explicit weight format replaces the
    checkpoint's native ones (bf16 plus `arch.native_formats` otherwise); the cache is in the
    activation format unless kv_dtype names one. Other Workload fields pass by keyword."""
    from .dtypes import dtype

    if weight_dtype:
        weight, formats = dtype(weight_dtype), ()
    else:
        weight = dtype("bf16")
        formats = tuple((role, dtype(name)) for role, name in arch.native_formats)
    act = dtype(act_dtype)
    kv = dtype(kv_dtype) if kv_dtype else act
    if kv.block:
        raise UserError(f"--kv-dtype {kv.name}: 128x128 block scales apply to weight matrices, "
                        "not to cache rows; use fp8")
    if kv.caches:
        kinds = {k for layer, _, _ in arch.layer_groups() for b in layer.blocks for k in b.cache_kinds}
        unused = [k for k, _ in kv.caches if k not in kinds]
        if unused:
            raise UserError(f"--kv-dtype {kv.name}: {arch.id} keeps no {' or '.join(unused)} cache rows "
                            f"(its kinds: {', '.join(sorted(kinds)) or 'none'})")
        for k, d in kv.caches:
            if d.block:
                raise UserError(f"--kv-dtype {kv.name}: block scales apply to weight matrices, not to cache rows")
    return Workload(weight_dtype=weight, act_dtype=act, kv_dtype=kv, formats=formats, routing=routing,
                    routing_loads=routing_loads, **fields)


"""Placement of a model on many devices: the layout, its checks, pipeline
stages and the per-device shard.

A `Layout` says how many ways each parallel dimension splits the work. The
devices are tp * cp * dp * pp; expert parallelism is carved out of the dp * tp
devices of a stage (EP ranks from the TP group first, then from data-parallel
replicas: expert TP = tp / ep when ep <= tp, else 1; `splits.expert_tp`).

Sharding acts on the architecture, not on the ledger: `shard(arch, layout,
stage)` is an ordinary `Architecture` holding what one device of that stage
holds (each block's own `shard(tp, ep)` hook: fewer heads, a narrower MLP,
fewer local experts, a vocabulary slice; norms replicated), so
`ledger.build`, `weight_bytes` and `kv_bytes` give per-device figures.
Pipeline stages are contiguous layer ranges; the first stage holds the
embedding, the last the final norm and the output head (with tied embeddings
and pp > 1, a copy of the embedding matrix for the head).

Cost: a stage's layers are counted per distinct layer by bisection in each
layer group's sorted indices, O(groups x stages x log layers); shards of
blocks, layers and stages are memoized (records are hashable).
"""

import bisect
import math

from .arch import Block
from .capacity import binding_stage, cache_room, requests_in, reserve_of
from .errors import UserError
from .memo import remember
from .record import Record
from .splits import ceil_div, expert_tp

DIMS = ("tp", "cp", "ep", "dp", "pp")


class Layout(Record):
    tp: int = 1            # tensor parallel
    pp: int = 1            # pipeline stages
    dp: int = 1            # data-parallel replicas
    cp: int = 1            # context parallel
    ep: int = 1            # expert parallel (MoE layers), carved out of dp * tp
    sp: bool = False       # sequence parallelism (with TP)
    micro_batches: int = 1
    pp_layers: tuple = ()  # layers per stage; () = even split, first (L mod pp) stages one more
    order: str = "tp-cp-ep-dp-pp"   # rank order, innermost first (Megatron)

    def _check(self):
        self.__dict__["pp_layers"] = tuple(self.pp_layers)   # hashable whatever was given
        for name in ("tp", "pp", "dp", "cp", "ep", "micro_batches"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"{name} must be a positive integer, got {value!r}")
        dims = self.order.split("-")
        if sorted(d for d in dims if d != "ep") != ["cp", "dp", "pp", "tp"] or dims.count("ep") > 1:
            raise UserError(f"rank order '{self.order}' must list tp, cp, dp and pp once each "
                            "(and optionally ep), innermost first, e.g. tp-cp-ep-dp-pp")

    @property
    def devices(self):
        return self.tp * self.pp * self.dp * self.cp

    @property
    def expert_tp(self):
        """Ways each routed expert is tensor-split (`splits.expert_tp`)."""
        return expert_tp(self.tp, self.ep)

    def _size(self, dim):
        return {"tp": self.tp, "cp": self.cp, "dp": self.dp, "pp": self.pp}[dim]

    def group_stride(self, dim):
        """Rank distance between neighbours of a `dim` group: the product of the
        sizes of the dimensions inside it in `order` (ep takes no ranks of its
        own; its neighbours are expert_tp ranks apart inside the TP group, or
        adjacent TP ranks when ep > tp)."""
        if dim == "ep":
            return self.expert_tp if self.ep <= self.tp else 1
        stride = 1
        for d in self.order.split("-"):
            if d == dim:
                return stride
            if d != "ep":
                stride *= self._size(d)
        raise UserError(f"unknown parallel dimension '{dim}'; one of {', '.join(DIMS)}")

    def group_span(self, dim):
        """Consecutive ranks a `dim` group spans, first to last member inclusive:
        what must fit in one scale-up domain for the group to use its links."""
        if dim == "ep":
            if self.ep <= self.tp:
                return self.expert_tp * (self.ep - 1) + 1
            return self.group_stride("dp") * (self.ep // self.tp - 1) + self.tp
        return self.group_stride(dim) * (self._size(dim) - 1) + 1

    def label(self):
        parts = [f"{d}{getattr(self, d)}" for d in ("tp", "pp", "dp", "cp", "ep")
                 if getattr(self, d) > 1]
        return " ".join(parts + (["sp"] if self.sp else [])) or "1 device"


class Stage(Record):
    """Pipeline stage `index`: layers [lo, hi)."""
    index: int
    lo: int
    hi: int
    has_embedding: bool
    has_head: bool

    @property
    def layers(self):
        return self.hi - self.lo


_MEMO = {}
MEMO_KEPT = 1 << 16   # entries kept before the oldest half is dropped (memo.remember)


def memo(key, make):
    """The value stored under `key`, made once by make() (records are hashable). Every value
    is a pure function of its key's immutable records, so the table is shared by every
    command of a process; it is bounded (MEMO_KEPT)."""
    out = _MEMO.get(key)
    if out is None:
        out = remember(_MEMO, MEMO_KEPT, key, make())
    return out


# -- checks -----------------------------------------------------------------

def divisors(n):
    """The divisors of n in increasing order, in O(sqrt(n)) steps."""
    low = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return low + [n // d for d in reversed(low) if d * d != n]


def _distinct_blocks(arch):
    def make():
        seen = {}
        for layer, _, _ in arch.layer_groups():
            for b in layer.blocks:
                seen.setdefault(b, None)
        return list(seen)

    return memo(("distinct blocks", arch), make)


def valid_tps(arch):
    """TP degrees dividing every block's attention heads, with KV heads either
    divisible by TP or dividing it (so each device holds whole KV heads)."""
    return memo(("valid tps", arch), lambda: _valid_tps(arch))


def _valid_tps(arch):
    heads, kv = set(), set()
    for b in _distinct_blocks(arch):
        if getattr(b, "heads", None):
            heads.add(b.heads)
            if getattr(b, "kv_heads", None):
                kv.add(b.kv_heads)
    if not heads:
        return None
    return [t for t in divisors(math.gcd(*heads)) if all(k % t == 0 or t % k == 0 for k in kv)]


def moe_experts(arch):
    """Routed-expert counts of the MoE blocks (empty for a dense model)."""
    return sorted({b.experts for b in _distinct_blocks(arch) if hasattr(b, "experts")})


def validate(arch, layout):
    """Raise UserError with the reason when `arch` cannot be placed on `layout`."""
    tps = valid_tps(arch)
    tp, ep = layout.tp, layout.ep
    if tps is not None and tp not in tps:
        heads = sorted({b.heads for b in _distinct_blocks(arch) if getattr(b, "heads", None)})
        raise UserError(f"--tp {tp} does not split the attention heads of {arch.id} "
                        f"({'/'.join(map(str, heads))} heads) into whole heads; valid TP values: "
                        f"{', '.join(map(str, tps))}")
    if ep > 1:
        experts = moe_experts(arch)
        if not experts:
            raise UserError(f"--ep {ep}: {arch.id} has no routed experts (expert parallelism "
                            "needs an MoE model)")
        if (tp * layout.dp) % ep:
            raise UserError(f"--ep {ep} does not divide tp x dp = {tp * layout.dp} (EP ranks are "
                            "carved out of the TP and data-parallel devices)")
    if layout.sp and tp == 1:
        raise UserError("sequence parallelism splits the TP group's activations; it needs --tp > 1")
    n = len(arch.layers)
    if layout.pp > n:
        raise UserError(f"--pp {layout.pp} exceeds the {n} layers of {arch.id}")
    if layout.pp > PP_MAX:
        raise UserError(f"--pp {layout.pp:,} is deeper than the {PP_MAX:,} stages the tool reports "
                        "(each stage is a record of its own; published pipelines use at most a few "
                        "hundred)")
    if layout.pp_layers:
        sizes = layout.pp_layers
        if len(sizes) != layout.pp:
            raise UserError(f"--pp-layers lists {len(sizes)} stages; --pp is {layout.pp}")
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sizes):
            raise UserError(f"--pp-layers: every stage needs at least one layer, got "
                            f"{','.join(map(str, sizes))}")
        if sum(sizes) != n:
            raise UserError(f"--pp-layers sums to {sum(sizes)}; {arch.id} has {n} layers")
    error = memo(("shard error", arch, tp, ep), lambda: _shard_error(arch, tp, ep))
    if error:
        raise UserError(error)


def _shard_error(arch, tp, ep):
    """The first block's reason it cannot be split tp x ep ways, or "" (memoized
    by validate, so a search checks each (tp, ep) once)."""
    try:
        for b in _distinct_blocks(arch) + list(arch.top_blocks()):
            shard_block(b, tp, ep if hasattr(b, "experts") else 1)
    except UserError as e:
        return str(e)
    return ""


# -- stages -----------------------------------------------------------------

def stage_sizes(n, pp, pp_layers=()):
    """Layers per stage: as given, or even with the first (n mod pp) stages one more."""
    if pp_layers:
        return tuple(pp_layers)
    base, extra = divmod(n, pp)
    return tuple(base + (1 if s < extra else 0) for s in range(pp))


def stages(arch, layout):
    """(Stage, ...) contiguous layer ranges; stage 0 holds the embedding, the last the head.
    Memoized by what they depend on (the layer count, pp and the stage sizes): a command asks
    for a layout's stages from several analyses, and equal stages are then the same records."""
    def make():
        out, lo = [], 0
        sizes = stage_sizes(len(arch.layers), layout.pp, layout.pp_layers)
        for s, size in enumerate(sizes):
            out.append(Stage(s, lo, lo + size, s == 0, s == len(sizes) - 1))
            lo += size
        return tuple(out)

    return memo(("stages", len(arch.layers), layout.pp, layout.pp_layers), make)


def stage_layers(arch, lo, hi):
    """[(layer, count)] of distinct layers with index in [lo, hi): a bisection in
    each group's sorted indices, O(groups x log layers)."""
    out = []
    for layer, _, indices in arch.layer_groups():
        count = bisect.bisect_left(indices, hi) - bisect.bisect_left(indices, lo)
        if count:
            out.append((layer, count))
    return out


# -- shards -----------------------------------------------------------------

def shard_block(block, tp, ep=1):
    """block.shard(tp, ep), memoized; the whole block when nothing splits."""
    if tp == 1 and ep == 1:
        return block
    return memo(("block", block, tp, ep), lambda: block.shard(tp, ep))


def shard_layer(layer, tp, ep=1):
    """A layer as one TP x EP device holds it (ep applies to MoE blocks only)."""
    if tp == 1 and ep == 1:
        return layer
    return memo(("layer", layer, tp, ep), lambda: layer.replace(blocks=tuple(
        shard_block(b, tp, ep if hasattr(b, "experts") else 1) for b in layer.blocks)))


def top_shards(arch, layout, stage):
    """(embedding, final norm, head) one device of `stage` holds: absent blocks
    where the stage has none; with tied embeddings and pp > 1 the last stage
    holds a copy of the embedding matrix (as `WeightsOnly`) for its head."""
    tp = layout.tp
    none = Block()
    embedding = shard_block(arch.embedding, tp) if stage.has_embedding else none
    if stage.has_head and arch.tied_embeddings and not stage.has_embedding:
        from .blocks.basic import WeightsOnly

        held = (shard_block(arch.head, tp).weight().replace(name="copy of the embedding for the tied head"),)
        embedding = WeightsOnly(held)
    if not stage.has_head:
        return embedding, none, none
    return embedding, shard_block(arch.final_norm, tp), shard_block(arch.head, tp)


def shard_id(arch, layout, stage):
    """The id of a stage's per-device architecture."""
    return f"{arch.id} [{layout.label()}, stage {stage.index}: layers {stage.lo}-{stage.hi - 1}]"


def shard(arch, layout, stage):
    """The per-device `Architecture` of one device of `stage` (memoized)."""
    def make():
        embedding, norm, head = top_shards(arch, layout, stage)
        layers = tuple(shard_layer(layer, layout.tp, layout.ep)
                       for layer in arch.layers[stage.lo:stage.hi])
        return arch.replace(id=shard_id(arch, layout, stage),
                            embedding=embedding, layers=layers, final_norm=norm, head=head, parts=())

    return memo(("arch", arch, layout.tp, layout.ep, stage), make)


# -- per-device ledger ---------------------------------------------------------

def block_ops(block, w):
    """block.ops(w), memoized: layouts sharing a (block shard, workload) reuse it."""
    return memo(("ops", block, w), lambda: tuple(block.ops(w)))


def device_layers(arch, layout, stage):
    """[(layer shard, count, global layer indices)] one device of `stage` runs,
    per distinct layer (memoized): the unit a search over layouts composes and
    caches per-layer figures on, without building the stage's architecture."""
    def make():
        out = []
        for layer, _, indices in arch.layer_groups():
            i, j = bisect.bisect_left(indices, stage.lo), bisect.bisect_left(indices, stage.hi)
            if i < j:
                out.append((shard_layer(layer, layout.tp, layout.ep), j - i, indices[i:j]))
        return tuple(sorted(out, key=lambda g: g[2][0]))   # first seen in the stage first

    return memo(("device layers", arch, layout.tp, layout.ep, stage.lo, stage.hi), make)


def stage_signature(arch, layout, stage):
    """What one device of `stage` holds, up to renaming: its (layer shard, count)
    pairs and whether it holds the embedding and the head. Stages with equal
    signatures under one layout have equal per-device figures (a search
    computes each once)."""
    return (tuple((layer, count) for layer, count, _ in device_layers(arch, layout, stage)),
            stage.has_embedding, stage.has_head)


def device_operators(arch, layout, stage, w):
    """`ledger.operators` of one device of `stage`, row for row (layer labels
    name the model's global layer indices), from memoized per-block operators."""
    from .arch import block_groups, layer_range_label

    emb, norm, head = top_shards(arch, layout, stage)
    ops = [op.times(1, "-") for op in block_ops(emb, w)]
    for b, count, indices in block_groups(device_layers(arch, layout, stage)):
        label = layer_range_label(indices)
        ops.extend(op.times(count, label) for op in block_ops(b, w))
    ops.extend(op.times(1, "-") for op in block_ops(norm, w))
    ops.extend(op.times(1, "-") for op in block_ops(head, w))
    return ops


def device_ledger(arch, layout, stage, w):
    """ledger.build(shard(arch, layout, stage), w), from `device_operators`
    (the same rows and totals; layer labels are global indices)."""
    from .ledger import Ledger, totals

    one = shard(arch, layout, stage)
    ops = device_operators(arch, layout, stage, w)
    return Ledger(one, w, tuple(ops), totals(one, w, ops))


# -- memory per device --------------------------------------------------------

def stage_weight_bytes(arch, w, layout, stage):
    """Weight bytes one device of `stage` holds: its layers' shards (counted per
    distinct layer) plus the embedding / final norm / head shards it holds (memoized per
    (tp, ep, layer range, top blocks): a search meets it under every CP degree)."""
    def make():
        total = sum(count * layer_weight_bytes(layer, layout.tp, layout.ep, w)
                    for layer, count in stage_layers(arch, stage.lo, stage.hi))
        return total + memo(("top weights", arch, w, layout.tp, stage.has_embedding, stage.has_head), lambda: sum(
            w.weight_bytes(t) for b in top_shards(arch, layout, stage) for t in b.tensors()))
    return memo(("stage weights", arch, w, layout.tp, layout.ep, stage.lo, stage.hi, stage.has_embedding,
                 stage.has_head), make)


def layer_weight_bytes(layer, tp, ep, w):
    """Weight bytes of one device's shard of `layer` (memoized)."""
    return memo(("weights", layer, tp, ep, w), lambda: sum(
        w.weight_bytes(t) for t in shard_layer(layer, tp, ep).tensors()))


class StageMemory(Record):
    """One device of a pipeline stage: what it holds and how many requests fit."""
    index: int
    lo: int
    hi: int
    weight_bytes: int
    kv_bytes_per_request: int    # cache and state one request reserves here (peak)
    reserve_bytes: int
    memory_bytes: int

    def need(self, batch):
        return self.weight_bytes + self.reserve_bytes + batch * self.kv_bytes_per_request

    @property
    def max_requests(self):
        return requests_in(cache_room(self.memory_bytes, self.weight_bytes, self.reserve_bytes),
                           self.kv_bytes_per_request)

    def shortfall_bytes(self, batch=1):
        return max(0, self.need(batch) - self.memory_bytes)


def device_memory(arch, w, layout, context, memory_bytes, *, reserve_bytes=None):
    """(per-stage StageMemory, index of the binding stage) for requests of
    `context` tokens: weights + reserve + batch x per-request cache per device
    (analyses.memory's rule), the cache of each stage's sharded layers (the
    peak a request reserves); with context parallelism each rank holds its
    sequence shard, ceil(context / cp) tokens. The binding stage fits the
    fewest requests (ties: the least memory left, then the first)."""
    return binding_memory(arch, w, layout, stages(arch, layout), context=context, memory_bytes=memory_bytes,
                          reserve_bytes=reserve_bytes)


def binding_memory(arch, w, layout, sts, *, context, memory_bytes, reserve_bytes=None):
    """`device_memory` over the stages `sts` only: (their StageMemory rows, index in `sts` of
    the binding one). Stages holding the same layers and top blocks hold the same, so a
    search passes one stage per distinct kind, first stage first: the binding kind's first
    stage is then the one `device_memory` names (its ties go to the first stage)."""
    reserve = reserve_of(memory_bytes, reserve_bytes)
    tokens = ceil_div(context, layout.cp)
    out = []
    fits = []
    for st in sts:   # not memoized per stage: its parts are, and a search meets each stage about once
        kv = sum(count * memo(("layer kv", layer, w.kv_dtype, tokens, w.mla),
                              lambda: layer.kv_bytes(w.kv_dtype, tokens, w.mla, peak=True))
                 for layer, count, _ in device_layers(arch, layout, st))
        row = StageMemory(st.index, lo=st.lo, hi=st.hi, weight_bytes=stage_weight_bytes(arch, w, layout, st),
                          kv_bytes_per_request=kv, reserve_bytes=reserve,
                          memory_bytes=memory_bytes)
        out.append(row)
        fits.append(row.max_requests)
    return out, binding_stage([memory_bytes - s.need(m or 0) for s, m in zip(out, fits)], fits)


# -- enumeration ----------------------------------------------------------------

# The deepest pipeline reported: every stage has its own record in the output (about 4 kB
# of JSON), so 1,024 stages stay within a few MB and well under a second; published
# pipelines are far shallower (Megatron-LM's 405B recipe: 16 stages of 8 layers).
PP_MAX = 1024
SEARCH_MAX_DEVICES = 2 ** 24        # divisors found in O(sqrt(devices)) = 4,096 steps at most
SEARCH_MAX_CANDIDATES = 50_000      # a few seconds of own time; every power of two up to 2^24 passes


def check_search_size(arch, devices):
    """Refuse a search whose candidate list could not be costed in seconds: more
    than SEARCH_MAX_DEVICES devices, or more than SEARCH_MAX_CANDIDATES layouts
    (the count stops as soon as it passes the limit, so the check itself is cheap).
    Highly composite device counts have the most factorizations (720,720 devices:
    89,600 tp x pp x cp x dp, 2,721,600 with ep for an MoE model); powers of two
    the fewest (1,048,576: 1,771; 19,481 with ep; 2^24: 38,025 with ep)."""
    if devices > SEARCH_MAX_DEVICES:
        raise UserError(f"--search takes at most {SEARCH_MAX_DEVICES:,} devices, got {devices:,}; "
                        "give a layout and run without --search")
    moe = bool(moe_experts(arch))
    count = 0
    for tp in divisors(devices):
        for pp in divisors(devices // tp):
            for cp in divisors(devices // (tp * pp)):
                count += len(divisors(tp * (devices // (tp * pp * cp)))) if moe else 1
                if count > SEARCH_MAX_CANDIDATES:
                    raise UserError(
                        f"--search over {devices:,} devices has more than {SEARCH_MAX_CANDIDATES:,} "
                        f"candidate layouts (tp x pp x cp x dp{' x ep' if moe else ''}); search a "
                        "device count with fewer factorizations (e.g. a power of two), or give a "
                        "layout and run without --search")


def candidate_layouts(arch, devices):
    """Every Layout of exactly `devices` devices over tp, pp, cp, dp (and ep for an
    MoE model: each divisor of tp x dp), in a fixed order (tp, pp, cp, dp, ep
    increasing), valid or not: `validate` says why one is refused. SP is off and
    stages are even (what a search compares). Refused first when there would be
    too many (`check_search_size`)."""
    check_search_size(arch, devices)
    moe = bool(moe_experts(arch))
    out = []
    for tp in divisors(devices):
        for pp in divisors(devices // tp):
            for cp in divisors(devices // (tp * pp)):
                dp = devices // (tp * pp * cp)
                for ep in (divisors(tp * dp) if moe else (1,)):
                    out.append(Layout(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep))
    return out


def refusal(arch, lay):
    """Why a search refuses a candidate layout, as one reason per kind (not per degree,
    so rejections count under it), or "": the cheap structured checks of `validate`,
    in its order. Shared by `parallel --search` and `train --search`."""
    tps = valid_tps(arch)
    if tps is not None and lay.tp not in tps:
        return "TP does not split the attention heads into whole heads"
    if lay.ep > 1 and any(x % lay.ep for x in moe_experts(arch)):
        return "EP does not divide the routed experts"
    if lay.pp > len(arch.layers):
        return "PP exceeds the layers"
    if memo(("shard error", arch, lay.tp, lay.ep), lambda: _shard_error(arch, lay.tp, lay.ep)):
        return "a block cannot be split tp x ep ways"
    return ""


def enumerate_layouts(arch, devices, *, cps=(1,), sp=True, micro_batches=None, examples=None):
    """`candidate_layouts` sorted into (valid [Layout], {reason: count}).

    Only cp degrees in `cps` are considered; sequence parallelism is turned on
    whenever tp > 1 when `sp` (the same traffic as TP's all-reduces, less
    activation memory); `micro_batches(dp)` gives a layout's micro-batches, or a
    reason string when dp cannot take the batch. Each refused layout is counted
    under its first failed check (cheap structured checks, in `validate`'s
    order), the reasons in the order they are met; `examples` (a dict) gets the label of the
    first layout refused for each reason."""
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise UserError(f"devices must be a positive integer, got {devices!r}")
    valid, rejected = [], {}
    for lay in candidate_layouts(arch, devices):
        if lay.cp not in cps:
            continue
        why = refusal(arch, lay)
        m = micro_batches(lay.dp) if micro_batches and not why else 1
        why = why or (m if isinstance(m, str) else "")
        if why:
            rejected[why] = rejected.get(why, 0) + 1
            if examples is not None:
                examples.setdefault(why, lay.label())
            continue
        valid.append(lay.replace(sp=sp and lay.tp > 1, micro_batches=m))
    return valid, rejected

"""`kv`: KV cache and recurrent state per token, per layer and per request, and
how many requests (or how long a context) fit beside the weights on a device.

Everything goes through the Block interface, so new layer types need no change
here: `kv_bytes_per_token(kv_dtype, mla)` (cache per token in the workload's
cache format), `kv_tokens(context)` (tokens a layer keeps: all of them, or at
most a window), `state_bytes(kv_dtype)` (fixed recurrent state per request),
`kv_formula(kv_dtype, mla)` (the text of the formula) and `shard(tp)` (one
tensor-parallel device's block). Placement (the layout checks, pipeline
stages, per-device shards and weights) is the `layout` module's, shared with
`parallel`; the capacity vocabulary (room, requests in room, binding stage) is
`analyses/memory`'s.

Memory per device = weight shard + KV cache + workspace reserve. A stage of
the pipeline holding weights Wt and, per request, own cache R (plus a shared
prefix cache S once) fits B requests when Wt + reserve + S + B * R <= memory:
max requests = floor((memory - Wt - reserve - S) / R), the minimum over stages.
"""

from functools import lru_cache

from .memory import binding_stage, cache_room, requests_in, reserve_of
from .records import SCHEMA_VERSION, model_record
from .. import layout as placement
from ..arch import Block, layer_range_label
from ..errors import UserError
from ..record import Record
from ..splits import ceil_div

CONVENTIONS = (
    "Cache bytes per token = the sum over layers of each layer type's bytes per token "
    "(formula per layer type above); a windowed layer keeps at most its window W of "
    "tokens; recurrent (linear-attention) state is a fixed size per request.",
    "Memory per device = weight shard + KV cache + workspace reserve. The reserve covers "
    "activations, the runtime context, allocator slack and fragmentation; its default is "
    "10% of device memory (vLLM's gpu_memory_utilization 0.9) and it is set with --reserve.",
    "Tensor parallelism (Megatron-style): query heads and KV heads split over the TP devices; "
    "when TP exceeds the KV heads every device holds one KV head (replicated) and its cache; "
    "other matrices (MLP, experts) split 1/TP along one axis (largest shard ceil(d/TP)); "
    "embedding and output head vocab-parallel (ceil(vocab/TP) rows, no padding); norms, "
    "biases outside attention and the MoE router replicated. A layer type that does not "
    "declare its TP split keeps its whole cache on every device.",
    "Pipeline parallelism: layers in contiguous stages as even as possible, the first "
    "(layers mod PP) stages one layer more; stage 0 also holds the embedding, the last "
    "stage the final norm and output head (with tied embeddings, a copy of the embedding "
    "matrix). Capacity is the minimum over stages; the binding stage is named.",
    "A chunked layer (chunk C) holds the tokens of the open chunk; a request reserves the "
    "most it holds on its way to the context, min(context, C).",
    "Pages of P tokens: a layer holding n tokens allocates ceil(n/P) pages while nothing has "
    "left its window (or when P divides the chunk C), and ceil((n + P - 1)/P) pages once a "
    "window slides (the worst case, the window straddling a page boundary). Waste = "
    "allocated - held tokens. Recurrent state is not paged.",
    "Prefix sharing: a common prefix of S tokens is stored once for the whole batch in every "
    "layer that still holds it (a layer holding n tokens keeps positions context-n .. "
    "context-1); with pages only the floor(S/P) whole pages of the prefix are shared. "
    "Recurrent state is per request. The prefix may not exceed the context.",
    "Max context at batch B: the largest context, from the shared prefix up to the model's "
    "maximum, at which B requests fit (from there a batch's bytes never fall as the context "
    "grows, so it is found by bisection).",
)


# -- sizing -----------------------------------------------------------------

def cache_per_token(block, w):
    """Cache bytes one token adds to `block` under workload `w`."""
    return block.kv_bytes_per_token(w.kv_dtype, w.mla)


def cache_state(block, w):
    """The block's fixed state per request; with w.conv_state "kernel" a block whose conv
    state keeps kernel - 1 positions per channel (Gated DeltaNet: `conv_slot_bytes`) keeps
    all kernel positions, one slot more."""
    return block.state_bytes(w.kv_dtype) + conv_extra(block, w)


def conv_extra(block, w):
    """Bytes `--conv-state kernel` adds to the block's state (0 for blocks without the slot)."""
    slot = getattr(block, "conv_slot_bytes", None)
    return slot() if slot and w.conv_state == "kernel" else 0


def cache_blocks(layer, w):
    """The blocks of a layer that keep a cache or a recurrent state."""
    return [b for b in layer.blocks if cache_per_token(b, w) or cache_state(b, w)]


def formula(block, w):
    """The block's own formula text, or its label with the figure when it has none."""
    text = block.kv_formula(w.kv_dtype, w.mla)
    if text and conv_extra(block, w):
        return (f"{text}; with --conv-state kernel one more conv position per channel, "
                f"+{conv_extra(block, w):,} B: {cache_state(block, w):,} B per request")
    if text:
        return text
    parts = []
    if cache_per_token(block, w):
        parts.append(f"{cache_per_token(block, w):,} B per token")
    if cache_state(block, w):
        parts.append(f"{cache_state(block, w):,} B fixed state per request")
    return f"{block.label or type(block).__name__}: " + ", ".join(parts)


def pages_held(n, context, page, align=None):
    """Pages one layer allocates for n held tokens of `context`: ceil(n/page)
    when the span starts on a page boundary (nothing evicted yet, or chunks of
    `align` tokens with page dividing align), else the worst case
    ceil((n + page - 1)/page) (a sliding span straddling a page boundary)."""
    if n == context or (align and align % page == 0):
        return ceil_div(n, page)
    return ceil_div(n + page - 1, page)


def held_tokens(n, context, page, align=None):
    """Token slots allocated for n held tokens: n, or whole pages."""
    return n if not page else pages_held(n, context, page, align) * page


def shared_tokens(n, context, prefix, page):
    """Of the n tokens a layer holds (positions context-n .. context-1), the slots
    of the common prefix (positions < prefix) stored once for the batch."""
    first = context - n
    if not page:
        return max(0, prefix - first)
    return max(0, prefix // page - first // page) * page


class Term(Record):
    """One cache-keeping block type, counted over `layers` layers, on one device."""
    label: str
    formula: str
    layers: int
    per_token: int          # bytes per token per layer, whole model (no TP split)
    per_token_device: int   # bytes per token per layer on one TP device
    state_device: int       # fixed state bytes per request per layer on one device
    tokens: int             # tokens held per layer
    slots: int              # token slots allocated (whole pages)
    shared: int             # slots of the common prefix, stored once
    ways: object            # TP ways the cache splits (None: not declared)

    @property
    def own_bytes(self):
        """Per request, all `layers` layers: own slots plus state."""
        return self.layers * ((self.slots - self.shared) * self.per_token_device + self.state_device)

    @property
    def shared_bytes(self):
        return self.layers * self.shared * self.per_token_device

    @property
    def waste_bytes(self):
        return self.layers * (self.slots - self.tokens) * self.per_token_device


def split_ways(block, part, w):
    """Ways one TP device's block `part` splits `block`'s cache (or state): whole
    bytes / the device's bytes; None when the block declares no split (its whole
    cache is then kept on every device, which never overstates capacity)."""
    if part is block:
        return None if type(block).shard is Block.shard else 1
    whole = cache_per_token(block, w) or cache_state(block, w)
    mine = cache_per_token(part, w) or cache_state(part, w)
    return whole // mine if mine else None


def terms(layer_counts, w, context, tp=1, page=None, prefix=0):
    """Term per cache block of each (layer, count) pair at `context` (>= prefix)
    tokens; per-device bytes from each block's TP shard (`layout.shard_layer`)."""
    out = []
    for layer, count in layer_counts:
        mine = placement.shard_layer(layer, tp)
        for b, part in zip(layer.blocks, mine.blocks):
            k, s = cache_per_token(b, w), cache_state(b, w)
            if not (k or s):
                continue
            n = b.kv_tokens_peak(context) if k else 0
            now = b.kv_tokens(context) if k else 0
            align = getattr(b, "chunk", None)
            out.append(Term(label=b.label or type(b).__name__, formula=formula(b, w), layers=count,
                            per_token=k, per_token_device=cache_per_token(part, w),
                            state_device=cache_state(part, w),
                            tokens=n, slots=held_tokens(n, context, page, align) if n else 0,
                            shared=shared_tokens(now, context, prefix, page) if now else 0,
                            ways=split_ways(b, part, w) if tp > 1 else 1))
    return out


def merge(ts):
    """Sum terms of the same block type (a layer type split over stages)."""
    merged = {}
    for t in ts:
        key = t.replace(layers=0)
        merged[key] = merged.get(key, 0) + t.layers
    return [t.replace(layers=n) for t, n in merged.items()]


# -- layout ---------------------------------------------------------------

class Stage(Record):
    """A pipeline stage as kv sizes it: its layers per distinct layer type and the
    weight bytes one of its devices holds (layout.stage_weight_bytes)."""
    index: int
    first: int
    last: int               # inclusive
    layer_counts: tuple
    weight_bytes: int


def plan(arch, w, lay):
    """kv's Stage per pipeline stage of layout `lay` (layout.stages)."""
    return [Stage(st.index, st.lo, st.hi - 1, tuple(placement.stage_layers(arch, st.lo, st.hi)),
                  placement.stage_weight_bytes(arch, w, lay, st))
            for st in placement.stages(arch, lay)]


def distinct(stages_):
    """The first stage of each kind (same layers and weights): capacity is a
    minimum over stages, and identical stages have identical demands."""
    seen = {}
    for st in stages_:
        seen.setdefault((st.layer_counts, st.weight_bytes), st)
    return list(seen.values())


# -- capacity ---------------------------------------------------------------

class Demand(Record):
    """What one device of a stage needs at a context: weights, shared and own cache."""
    weights: int
    shared: int       # prefix cache, once
    own: int          # per request
    waste: int        # page waste per request
    per_token: int    # cache bytes per token on this device (its layers, TP split)

    def need(self, batch, reserve):
        return self.weights + reserve + self.shared + batch * self.own

    def max_requests(self, memory, reserve):
        """floor((memory - weights - reserve - shared) / own); None if own is 0 and it fits."""
        return requests_in(cache_room(memory, self.weights, reserve) - self.shared, self.own)


def demand(stage, w, context, tp, page, prefix):
    return Demand(stage.weight_bytes, *_cache_demand(stage.layer_counts, w, context, tp, page, prefix))


@lru_cache(maxsize=4096)
def _cache_demand(layer_counts, w, context, tp, page, prefix):
    """(shared, own, waste, per-token) cache bytes of a stage's layers, per device."""
    ts = terms(layer_counts, w, context, tp, page, prefix)
    return (sum(t.shared_bytes for t in ts), sum(t.own_bytes for t in ts),
            sum(t.waste_bytes for t in ts), sum(t.layers * t.per_token_device for t in ts))


class Request(Record):
    """The requests `kv` sizes: `batch` of them, `context` tokens each, the cache
    in pages of `page` tokens (None: not paged), a common prefix of `prefix`
    tokens stored once for the batch."""
    context: int
    batch: int = 1
    page: object = None
    prefix: int = 0

    def at(self, context):
        return self.replace(context=context)


class Budget(Record):
    """What every capacity question shares: the workload, the TP ways, and one
    device's memory and workspace reserve."""
    w: object
    tp: int
    memory: int
    reserve: int

    def demand(self, stage, req):
        return demand(stage, self.w, req.context, self.tp, req.page, req.prefix)

    def max_requests(self, d):
        return d.max_requests(self.memory, self.reserve)

    def left(self, d, batch):
        """Memory left on the device at `batch` requests (negative: a shortfall)."""
        return self.memory - d.need(batch, self.reserve)


def max_requests_at(stages_, budget, req):
    """(max requests, binding stage index, demands) at req.context; None =
    unbounded. The binding stage fits the fewest (memory.binding_stage). Pass
    `distinct(stages)`: repeated stage kinds change nothing."""
    ds = [budget.demand(st, req) for st in stages_]
    fits = [budget.max_requests(d) for d in ds]
    bind = binding_stage([budget.left(d, m or 0) for d, m in zip(ds, fits)], fits)
    return fits[bind], stages_[bind].index, ds


def fits(stages_, budget, req):
    """True when req.batch requests fit on every stage."""
    return all(budget.left(budget.demand(st, req), req.batch) >= 0 for st in stages_)


def max_context(stages_, budget, req, limit):
    """Largest context in [max(1, prefix), limit] at which req.batch requests fit
    (0 if none). From the prefix on, a batch's bytes never fall as the context grows."""
    lo, hi = max(1, req.prefix), limit
    if lo > hi or not fits(stages_, budget, req.at(lo)):
        return 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(stages_, budget, req.at(mid)):
            lo = mid
        else:
            hi = mid - 1
    return lo


def table_contexts(max_ctx, prefix=0):
    """1K, 2K, 4K, ... up to the model's maximum (included when not a power of
    two), longer than the shared prefix."""
    out, c = [], 1024
    while c <= max_ctx:
        out.append(c)
        c *= 2
    if not out or out[-1] != max_ctx:
        out.append(max_ctx)
    return [c for c in out if c > prefix]


# -- the record -------------------------------------------------------------

def _term_record(t):
    return {
        "layer_type": t.label,
        "layers": t.layers,
        "formula": t.formula,
        "bytes_per_token_per_layer": t.per_token,
        "tokens_held_per_layer": t.tokens,
        "state_bytes_per_layer": t.state_device,
        "bytes_per_request_per_layer": t.per_token * t.tokens + t.state_device,
        "bytes_per_token": t.layers * t.per_token,
        "bytes_per_request": t.layers * (t.per_token * t.tokens + t.state_device),
    }


def _tp_notes(arch, w, tp):
    notes = []
    if tp == 1:
        return notes
    seen = set()
    for layer, _, _ in arch.layer_groups():
        for b, part in zip(layer.blocks, placement.shard_layer(layer, tp).blocks):
            if b in seen or not (cache_per_token(b, w) or cache_state(b, w)):
                continue
            seen.add(b)
            ways = split_ways(b, part, w)
            label = b.label or type(b).__name__
            if ways is None:
                notes.append(f"{label}: its TP split is not declared, so its whole cache is counted "
                             f"on each of the {tp} TP devices")
            elif ways == 1:
                notes.append(f"{label}: its cache is not split by TP; each of the {tp} TP devices "
                             "holds all of it (replicated)")
            elif ways < tp:
                notes.append(f"{label}: TP {tp} exceeds its {ways} KV heads; each device holds one "
                             f"KV head, replicated {tp // ways}x across the TP group")
            else:
                notes.append(f"{label}: cache split {tp} ways by KV heads")
    return notes


def budget_of(arch, w, req, lay, memory_bytes, reserve_bytes=None):
    """The Budget of a `kv` question, after checking its inputs: the prefix within
    the context, a reserve below memory, a layout of TP and PP only that fits `arch`."""
    if req.prefix > req.context:
        raise UserError(f"--shared-prefix {req.prefix} exceeds --context {req.context}")
    reserve = reserve_of(memory_bytes, reserve_bytes)
    if reserve >= memory_bytes:
        raise UserError(f"reserve {reserve:,} B is not less than device memory {memory_bytes:,} B")
    if lay.replace(tp=1, pp=1, pp_layers=()) != placement.Layout():
        raise UserError("kv sizes tensor and pipeline parallelism only (tp, pp)")
    placement.validate(arch, lay)
    return Budget(w, lay.tp, memory_bytes, reserve)


def capacity_record(arch, sts, budget, req, lay):
    """Requests that fit (the binding stage's), memory left, the longest context at
    the batch and page waste, on one device of each of `sts`' stages."""
    kinds = distinct(sts)
    most, bind, _ = max_requests_at(kinds, budget, req)
    ds = [budget.demand(st, req) for st in sts]   # cached per stage kind
    d = ds[bind]
    mctx = max_context(kinds, budget, req, max(arch.max_context, 1))
    return {
        "devices": lay.tp * lay.pp,
        "memory_bytes_per_device": budget.memory,
        "reserve_bytes": budget.reserve,
        "kv_cache_room_bytes": cache_room(budget.memory, sts[bind].weight_bytes, budget.reserve),
        "binding_stage": bind,
        "max_requests": most,
        "fits_one_request": most is None or most >= 1,
        "shortfall_bytes_at_batch_1": max(0, -min(budget.left(dd, 1) for dd in ds)),
        "memory_left_bytes_at_batch": min(budget.left(dd, req.batch) for dd in ds),
        "memory_left_bytes_at_max_requests": (
            None if most is None or most == 0 else min(budget.left(dd, most) for dd in ds)),
        "max_context_at_batch": mctx,
        "max_context_is_model_limit": mctx == arch.max_context,
        "kv_bytes_per_token_per_device": d.per_token,
        "kv_bytes_per_request_per_device": d.own,
        "shared_prefix_bytes_per_device": d.shared,
        **({"page_bytes_per_device": req.page * d.per_token} if req.page else {}),
        "page_waste_bytes_per_request": d.waste,
        "page_waste_bytes_at_batch": d.waste * req.batch,
        "stages": [{
            "stage": st.index,
            "layers": layer_range_label(tuple(range(st.first, st.last + 1))),
            "weight_bytes": st.weight_bytes,
            "kv_bytes_per_request": dd.own,
            "shared_prefix_bytes": dd.shared,
            "page_waste_bytes_per_request": dd.waste,
            "max_requests": budget.max_requests(dd),
            "memory_left_bytes_at_batch": budget.left(dd, req.batch),
        } for st, dd in zip(sts, ds)],
    }


def concurrency_table(arch, sts, budget, req):
    """Max requests and binding stage at 1K, 2K, 4K, ... tokens (table_contexts)."""
    kinds = distinct(sts)
    table = []
    for c in table_contexts(arch.max_context, req.prefix):
        m, b, _ = max_requests_at(kinds, budget, req.at(c))
        table.append({"context": c, "max_requests": m, "binding_stage": b})
    return table


def bytes_per_request(arch, w, context):
    """The whole model's cache of one request at `context` tokens (no parallelism, no paging):
    `kv`'s bytes per request, for analyses that take a request's KV payload."""
    whole = merge(terms([(layer, count) for layer, count, _ in arch.layer_groups()], w, context))
    return sizing_record(whole)["bytes_per_request"]


def sizing_record(whole):
    """Cache per token and per request of the whole model (no parallelism): the
    layer types' rows (_term_record) and their sums."""
    rows = [_term_record(t) for t in whole]
    return {
        "bytes_per_token": sum(r["bytes_per_token"] for r in rows),
        "state_bytes_per_request": sum(r["layers"] * r["state_bytes_per_layer"] for r in rows),
        "bytes_per_request": sum(r["bytes_per_request"] for r in rows),
        "layer_types": rows,
    }


def _notes(arch, w, sts, budget, req):
    notes = _tp_notes(arch, w, budget.tp)
    if req.prefix and not any(budget.demand(st, req).shared for st in sts):
        notes.append(f"No layer still holds any of the {req.prefix:,}-token shared prefix at "
                     f"{req.context:,} tokens (windows have slid past it, or it is shorter than "
                     "one page), so nothing is shared")
    if req.context > arch.max_context:
        notes.append(f"--context {req.context:,} exceeds the model's maximum context "
                     f"{arch.max_context:,} ({arch.max_context_source})")
    return notes


def part_weight_bytes(arch, w):
    """Bytes of the checkpoint's parts beside the text model (vision tower, MTP layers:
    `arch.parts`) in the weight format: what `--weights all` adds to the resident weights."""
    return sum(w.weight_dtype.nbytes_flat(p.params) for p in arch.parts)


def state_parts(arch, w):
    """{"recurrent": B, "conv": B} per request over the whole model's layers whose state is a
    recurrent state plus a conv state (Gated DeltaNet, KDA; conv with `conv_extra`); {} if none."""
    rec = conv = 0
    for layer, count, _ in arch.layer_groups():
        for b in layer.blocks:
            if hasattr(b, "recurrent_state_bytes") and hasattr(b, "conv_state_bytes"):
                rec += count * b.recurrent_state_bytes()
                conv += count * (b.conv_state_bytes() + conv_extra(b, w))
    return {"recurrent": rec, "conv": conv} if rec or conv else {}


def screen_record(sts, budget, req, memories, reserve_bytes=None, parts=None):
    """The batch's necessary budget against each of `memories` (bytes per device): per
    memory its reserve (`--reserve`, or its default share of that memory), the need of the
    binding stage (weights + reserve + shared prefix + B x the cache per request), whether it
    fits and the memory left (negative: short). On one device (`parts`: state_parts) also the
    need's terms at the batch: weights, B x the per-token cache, B x each state part."""
    out = []
    for m in memories:
        reserve = reserve_of(m, reserve_bytes)
        need = max(budget.demand(st, req).need(req.batch, reserve) for st in distinct(sts))
        out.append({"memory_bytes": m, "reserve_bytes": reserve, "need_bytes_at_batch": need,
                    "fits": need <= m, "memory_left_bytes_at_batch": m - need})
    rec = {"devices": out}
    if len(sts) == 1 and parts is not None:
        d = budget.demand(sts[0], req)
        state = sum(parts.values())
        rec["terms_at_batch"] = dict({"weights": d.weights, "cache": req.batch * (d.own - state) + d.shared},
                                     **{f"{k}_state": req.batch * v for k, v in parts.items()})
    return rec


def kv(arch, w, req, memory_bytes, layout=None, reserve_bytes=None, device=None, weights="text", screen=()):
    """The full `kv` result record for Request `req` on one device of each stage
    of `layout` (TP x PP; default one device) with `memory_bytes` each. weights "all" adds the
    checkpoint's parts (`part_weight_bytes`, one device only); `screen`: more memory sizes the
    batch's necessary budget is checked against (`screen_record`)."""
    lay = layout or placement.Layout()
    budget = budget_of(arch, w, req, lay, memory_bytes, reserve_bytes)
    whole = merge(terms([(layer, count) for layer, count, _ in arch.layer_groups()], w, req.context))
    sts = plan(arch, w, lay)
    if weights == "all":
        if lay.tp * lay.pp > 1:
            raise UserError("--weights all places the vision and MTP weights on one device; drop --tp/--pp")
        sts = [sts[0].replace(weight_bytes=sts[0].weight_bytes + part_weight_bytes(arch, w))]
    extra = {}
    if weights != "text":
        extra["weights"] = {"text_bytes": plan(arch, w, lay)[0].weight_bytes,
                            "parts": {p.name: w.weight_dtype.nbytes_flat(p.params) for p in arch.parts}}
    parts = state_parts(arch, w)
    if screen:
        extra["screen"] = screen_record(sts, budget, req, screen, reserve_bytes, parts if lay.tp == 1 else None)
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "kv",
        "model": model_record(arch),
        "inputs": {
            "context": req.context,
            **({"conv_state": w.conv_state} if w.conv_state != "history" else {}),
            **({"weights": weights} if weights != "text" else {}),
            "batch": req.batch,
            "weight_dtype": w.weight_dtype.name,
            "kv_dtype": w.kv_dtype.name,
            "mla": w.mla,
            "tp": lay.tp,
            "pp": lay.pp,
            "page_size": req.page,
            "shared_prefix": req.prefix,
            "device": device,
            "memory_bytes": memory_bytes,
            "reserve_bytes": budget.reserve,
            "reserve_is_default": reserve_bytes is None,
            **({"native_formats": {role: d.name for role, d in w.formats}} if w.formats else {}),
        },
        "sizing": dict(sizing_record(whole), **({"state_parts_per_request": parts} if parts else {})),
        "capacity": capacity_record(arch, sts, budget, req, lay),
        "concurrency": concurrency_table(arch, sts, budget, req),
        **extra,
        "notes": _notes(arch, w, sts, budget, req),
        "conventions": list(CONVENTIONS) + ([CONV_KERNEL] if w.conv_state == "kernel" else [])
        + ([WEIGHTS_ALL] if weights == "all" else []),
    }


CONV_KERNEL = ("Conv state, --conv-state kernel (the book's reference path): a Gated DeltaNet layer keeps all "
               "conv_kernel positions per conv channel, one more than the kernel - 1 a causal conv needs "
               "(vLLM's layout, the default).")
WEIGHTS_ALL = ("Weights, --weights all: the text model's weights plus the checkpoint's other parts (vision tower, "
               "MTP layers) in the weight format, resident on the device; their execution state is not counted.")

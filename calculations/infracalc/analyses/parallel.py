"""`parallel`: serving a model on N devices under a layout (and a search over layouts).

Each device runs its shard (`layout.shard`: an ordinary architecture), so its time
in a phase is the roofline bound of the shard's ledger (as `decode`: the sum of
per-operator bounds, decode steps summed in closed form) plus the communication
it cannot hide (the collectives of `collectives`/`comm`). Stages compose into a
pipeline and replicas into a cluster:

- stage time tau_s = roofline_s + comm_s (no overlap, the default), or
  max(roofline_s, comm_s) with --overlap (communication hidden under the
  shard's kernels up to their time);
- pipeline of pp stages, B requests per replica in m micro-batches of b = B/m:
  one pass of a micro-batch takes L = sum_s tau_s + (pp - 1) x the boundary
  transfer; a prefill of the B prompts ends after L + (m - 1) max_s tau_s (the
  TTFT of the batch); a decode step, in which each micro-batch must leave the
  last stage before its next token can enter the first, recurs every
  cycle = max(L, m max_s tau_s): the TPOT; the slowest stage idles a fraction
  1 - m max_s tau_s / cycle of it (the bubble);
- data parallelism multiplies throughput: dp replicas share nothing.

The per-layer costs are memoized by (layer shard, workload), and a stage's cost
is the sum over its distinct layers of count x the layer's cost, so a search over
thousands of layouts builds each (tp, ep) shard's ledgers once per batch.
"""

import math

from .. import comm, ledger
from ..collectives import ceil_div
from .. import layout as placement
from ..arch import Block, Layer
from ..errors import UserError
from . import decode_sum, mla_path
from .decode import check_lengths, account, decode_path
from .memory import RESERVE_RULE, cache_room, engine_defaults
from .records import CONVENTIONS, SCHEMA_VERSION, device_record, model_record, workload_record
from .roofline import roof
from .serving import SERVING_CONVENTIONS

PARALLEL_CONVENTIONS = (
    "Devices = tp x pp x dp x cp; expert parallelism is carved out of the tp x dp devices of a "
    "stage (EP ranks from the TP group first, then from data-parallel replicas); each device "
    "runs its shard (the layout library's placement rules, README 'Placement on many devices').",
    "Batch B = concurrent requests per model replica (one DP replica); the cluster carries "
    "dp x B. The replica's B requests run in m micro-batches of B/m (default m = gcd(B, pp)).",
    "Per device and phase (the estimate): the operator-sum roofline of its shard (the sum of "
    "per-operator roofline times, decode steps in closed form) plus exposed communication: all of "
    "it by default; with --overlap the part exceeding the shard's roofline time (hidden up to that "
    "time). The lower bound beside it is defined in the output.",
    "Pipeline: a micro-batch's pass takes L = sum of stage times + (pp - 1) boundary transfers; "
    "TTFT of the batch = L + (m - 1) x the slowest stage; a decode step recurs every "
    "max(L, m x slowest stage) (the TPOT); bubble = the slowest stage's idle share of that cycle. "
    "Summed over decode steps these maxima are taken of the sums (shorter, for the estimate and the "
    "lower bound alike).",
    "Data parallelism: replicas share nothing; cluster tokens/s = dp x a replica's; per device = "
    "cluster / devices.",
    "Collectives per micro-batch pass (collectives.py, costed by comm.py on the tier the group "
    "spans): TP 2 all-reduces of [tokens, hidden] per layer (SP: reduce-scatter + all-gather), "
    "the vocab-parallel embedding's all-reduce and the head's logits all-gather; EP (the convention "
    "train shares, collectives.moe_collectives, Megatron-LM's all-to-all token dispatcher): "
    "dispatch and combine all-to-all per MoE layer, each TP rank sending its 1/tp slice of the "
    "replica's tokens, plus an all-gather and a reduce-scatter over the expert-TP group when "
    "ep < tp; an MoE layer under EP keeps its TP reduction only with shared experts or without "
    "SP; PP (collectives.pp_boundary_collectives, Megatron's scatter/gather): per boundary each "
    "TP rank sends its 1/tp slice of [tokens, hidden], and without SP the receiving stage "
    "all-gathers it over TP; CP in prefill the ring pass of K/V shards (cp - 1 per "
    "layer), in decode one all-reduce of [B, hidden] per cache-keeping layer to merge the "
    "ranks' partial attention.",
    "Context parallelism: the prompt is split contiguously, ceil(P/cp) tokens per rank; the "
    "last rank (the most causal pairs) bounds the prefill; in decode every rank runs the new "
    "tokens' projections against its share of the history, ceil(H/cp) tokens (weights "
    "replicated over CP, like DP); recurrent (linear-attention) layers' state hand-off between CP "
    "ranks is not charged.",
    "Capacity per stage as `kv`: weights + reserve + B x the cache of P + G - 1 tokens on that "
    "stage's layers (ceil((P + G - 1)/cp) tokens under CP); the binding stage fits the fewest. "
    "A layout that does not fit is a result with its shortfall; its times are computed as if "
    "memory were unlimited.",
)

ESTIMATE = (
    "Estimate (the 'latency' figures, what the search ranks): per stage the operator-sum roofline "
    "of its shard (each operator max(FLOPs / peak, bytes / bandwidth), summed) plus exposed "
    "communication, every collective with the --algorithm (ring by default) and none of it "
    "overlapped (with --overlap: max(roofline, communication)); PP boundary transfers on the "
    "critical path. Not a bound: real runs can beat it (fused kernels, overlapped communication, "
    "faster collective algorithms).")
LOWER_BOUND = (
    "Lower bound (the 'lower_bound' figures; no real run of this layout and batch can be faster, "
    "under the stated device peaks, bandwidths and link alpha-beta figures): per stage "
    "max(ideal, fastest communication), ideal = max(matrix FLOPs / matrix peak, vector FLOPs / "
    "vector peak, (weight bytes read + KV bytes read and written) / memory bandwidth) -- the "
    "units run in parallel, operators fuse, weights and cache are read once per pass -- and "
    "communication fully hidden under that work, or, where it exceeds it, the time of its "
    "collectives with the fastest applicable algorithm (ring, tree, in-network, binomial); "
    "PP boundary transfers not charged; the same pipeline composition (a micro-batch crosses "
    "every stage; the slowest stage serves all m micro-batches; decode steps are sequential). "
    "Tokens/s figures under it are upper bounds.")
SERVING_LAYOUT = (
    "Serving-throughput bound on a layout: each distinct stage shard (its share of the weights, "
    "its memory beside them and the reserve for the caches of its layers) goes through decode's "
    "serving bound below; a replica serves at most its slowest stage's rate, the cluster dp "
    "replicas' (requests/s = output tokens/s / G). Communication is not charged (hidden "
    "entirely), so it stays an upper bound; not derived under context parallelism.")

LEFT_OUT = (
    "Neither the estimate nor the lower bound charges scheduling, kernel launch and "
    "synchronisation, host work, NCCL's fixed per-call latency, hierarchical collectives, uneven "
    "routing beyond the routing model, or activation memory beyond the reserve; the estimate is "
    "therefore not an upper bound either.",
    "Decode steps of a pipeline are composed from sums over the steps; the per-step maxima "
    "(slowest stage, exposed communication under --overlap) are taken of the sums, which can "
    "only shorten the time.",
)

OBJECTIVES = ("throughput", "ttft", "tpot")
CP_SPLITS = ("contiguous", "zigzag")   # --cp-split
ALGORITHMS = ("ring", "binomial", "best")   # --algorithm

# Cost vector: (compute-bound s, weights s, KV s, activations s) then decode_sum.FIELDS.
_NACC = 4
ZERO = {True: (0.0,) * _NACC + (0,) * len(decode_sum.FIELDS), False: (0.0,) * _NACC}


def _add(a, b):
    return tuple(x + y for x, y in zip(a, b))


def _scale(a, k):
    return tuple(k * x for x in a)


def _time(cost):
    return cost[0] + cost[1] + cost[2] + cost[3]


def _cost(pcs, r, with_work=True):
    """Cost vector of linear pieces: their Account and (with_work) their summed work."""
    acc = account(pcs, r)
    if not with_work:
        return (acc.compute_s, acc.weights_s, acc.kv_s, acc.act_s)
    work = [0] * len(decode_sum.FIELDS)
    for p in pcs:
        for i in range(len(p.ops)):
            work = [a + b for a, b in zip(work, p.summed(i))]
    return (acc.compute_s, acc.weights_s, acc.kv_s, acc.act_s, *work)


class Plan:
    """What every layout of one search shares: model, workload, device, lengths, links."""

    def __init__(self, arch, w, device, input_len, output_len, compute_efficiency=1.0,
                 memory_efficiency=1.0, reserve_bytes=None, overlap=False, algorithm="ring",
                 link_options=None, batch=1, ep_dedup=False, cp_split="contiguous"):
        self.length_notes = check_lengths(arch, input_len, output_len)
        if algorithm not in ALGORITHMS:
            raise UserError(f"unknown collective algorithm '{algorithm}'; choose from {', '.join(ALGORITHMS)}")
        self.arch, self.device = arch, device
        self.w = w.replace(batch=1, tokens=1, history=0, logits="last")
        self.r = roof(device, self.w.compute_dtype, compute_efficiency, memory_efficiency)
        self.efficiency = (compute_efficiency, memory_efficiency)
        self.P, self.G = input_len, output_len
        self.reserve = reserve_bytes
        self.overlap, self.algorithm = overlap, algorithm
        if ep_dedup and not placement.moe_experts(arch):
            raise UserError(f"--ep-dedup: {arch.id} has no routed experts (EP dispatch needs an MoE model)")
        if ep_dedup and w.routing != "uniform":
            raise UserError(f"--ep-dedup's expected destination count is derived for uniform routing only; "
                            f"drop --routing {w.routing}")
        self.ep_dedup = bool(ep_dedup)
        if cp_split not in CP_SPLITS:
            raise UserError(f"unknown CP split '{cp_split}'; choose from {', '.join(CP_SPLITS)}")
        if cp_split == "zigzag" and any(getattr(b, "window", None) is not None or getattr(b, "chunk", None)
                                        for layer, _, _ in arch.layer_groups() for b in layer.blocks):
            raise UserError(f"--cp-split zigzag: {arch.id} has windowed or chunked attention layers, whose "
                            "causal pairs per zig-zag chunk are not modelled; use the contiguous split")
        self.cp_split = cp_split
        self.link_options = dict(link_options or {})
        self.links = comm.links(device, **self.link_options)
        self.act_bytes = ceil_div(self.w.act_dtype.bits, 8)
        self.domain = device.scale_up.domain_size if device.scale_up else 1
        self.mla_choices = {}
        self._cache, self._kinds, self._decode_w = {}, {}, {}
        self.wp = self.wd = None
        self.resolve_mla(batch)

    def workload(self, base, **changes):
        """base.replace(**changes), one object per distinct result (a cache key compares it by
        identity, not field by field)."""
        key = ("workload", base is self.wp, tuple(sorted(changes.items())))
        return self.memo(key, lambda: base.replace(**changes))

    def memo(self, key, make):
        """The value stored under `key` in this plan's cache, made once by make()."""
        out = self._cache.get(key)
        if out is None:
            out = self._cache[key] = make()
        return out

    @property
    def steps(self):
        return self.G - 1

    def resolve_mla(self, batch):
        """Concrete MLA paths of the prefill and the decode steps (`--mla auto`: the cheaper
        on the whole model at this batch, as `decode` picks; the same path on every shard)."""
        self.mla_batch = batch
        w = self.w.replace(batch=batch)
        wp, pre = mla_path.for_pass(self.arch, w.replace(tokens=self.P), self.r)
        wd, dec = decode_path(self.arch, w, self.P, self.P + self.steps - 1, self.r)
        wp, wd = wp.replace(tokens=1, batch=1), wd.replace(batch=1)
        if (wp, wd) != (self.wp, self.wd):
            self._cache.clear()   # every cached figure assumed the former paths
            self._decode_w.clear()
        self.wp, self.wd = wp, wd
        self.mla_choices = {"prefill": pre, "decode steps": dec if self.steps else None}

    # -- per-device compute ------------------------------------------------------

    def stages(self, lay):
        """layout.stages, memoized per (pp, pp_layers)."""
        return self.memo(("stages", lay.pp, lay.pp_layers), lambda: placement.stages(self.arch, lay))

    def top_unit(self, lay, stage):
        """The embedding, final norm and head shards one device of `stage` holds."""
        key = ("top unit", lay.tp, stage.has_embedding, stage.has_head)

        def make():
            emb, norm, head = placement.top_shards(self.arch, lay, stage)
            return self.arch.replace(id=f"{self.arch.id} [top blocks]", embedding=emb, layers=(),
                                     final_norm=norm, head=head, parts=(), notes=())
        return self.memo(key, make)

    def unit(self, layer):
        """A one-layer architecture: the unit whose ledgers a stage's cost sums."""
        return self.memo(("unit", layer), lambda: self.arch.replace(
            id=f"{self.arch.id} [one layer]", embedding=Block(), layers=(layer,), final_norm=Block(),
            head=Block(), parts=(), notes=()))

    def history_free(self, block, w):
        """True when no operator of `block` changes with the history (MLP, MoE, norms): one
        linear piece over every history (no breakpoint, no period) whose ledger at history 0
        equals the one at history 1 (memoized per block and workload). A block declaring
        Block.history_independent is (its rows are the same at every history)."""
        if block.history_independent:
            return True

        def make():
            if block.history_period() or block.history_breakpoints(0, 1 << 62):
                return False   # not one linear piece over every history
            one = lambda h: [decode_sum._vector(op) for op in block.ops(w.replace(tokens=1, history=h))]
            return one(0) == one(1)
        return self.memo(("history free", block, w), lambda: self.memo(
            ("history free at batch 1", block, w.replace(batch=1)), make))

    def unit_cost(self, a, w, spec, work=True):
        """Cost vectors of architecture `a`: spec ("pass",) -> (one pass of w,); ("steps", lo,
        hi) -> (decode steps at histories lo..hi summed in closed form, the step at lo, the
        step at hi), all from the same linear pieces (w.tokens = 1).

        A layer of several blocks costs the sum of its blocks' costs (ledger rows come from
        blocks alone, and each cost is a sum over rows), each block costed once per
        workload: the attention shard of a TP degree is shared by every EP degree, and a
        block whose rows do not change with the history costs (steps) x one step, so its
        ledger is built once for every CP degree."""
        def make():
            if not a.layers and not any(b.tensors() or b.ops(w) for b in a.top_blocks()):
                return (ZERO[work],) * (1 if spec[0] == "pass" else 3)
            if a.layers and spec[0] == "steps" and len(a.layers[0].blocks) > 1:
                total = None
                for block in a.layers[0].blocks:
                    one = self.memo(("block unit", block), lambda: self.unit(Layer(blocks=(block,))))
                    part = self.unit_cost(one, w, spec, work)
                    total = part if total is None else tuple(_add(t, u) for t, u in zip(total, part))
                return total
            if a.layers and spec[0] == "steps" and self.history_free(a.layers[0].blocks[0], w):
                one = self.unit_cost(a, w if not w.history else w.replace(history=0), ("pass",), work)[0]
                return (_scale(one, spec[2] - spec[1] + 1), one, one)
            if spec[0] == "pass":
                return (_cost([decode_sum.single(ledger.operators(a, w))], self.r, work),)
            if not a.layers:   # embedding, final norm and head: the same work at every history
                one = self.unit_cost(a, w.replace(history=0), ("pass",), work)[0]
                return (_scale(one, spec[2] - spec[1] + 1), one, one)
            pcs = self.pieces(a, w, spec[1], spec[2])
            return (_cost(pcs, self.r, work), _cost([pcs[0].step(0)], self.r, work),
                    _cost([pcs[-1].last_step()], self.r, work))
        return self.memo(("cost", a, w, spec, work), make)

    def pieces(self, a, w, lo, hi):
        """decode_sum.decode_pieces(a, w, lo, hi). When no block of `a` starts a new linear
        piece in (0, hi] (full attention), the steps lo..hi lie on the piece that starts at
        history 0, so they are that piece shifted by lo steps: its two ledgers are built once
        per (unit, workload), whatever the range (each CP degree has its own)."""
        if decode_sum.period(a) or decode_sum.breakpoints(a, 0, hi):
            return decode_sum.decode_pieces(a, w, lo, hi, check=False)
        base = self.memo(("piece at 0", a, w), lambda: decode_sum.decode_pieces(a, w, 0, 1, check=False)[0])
        starts = tuple(base.values(i, lo) for i in range(len(base.ops)))
        return [base.replace(first=lo, steps=hi - lo + 1, starts=starts, end_ops=())]

    def kind(self, lay, stage):
        """What one device of `stage` holds: ((layer shard, count), ...), embedding?, head?.
        Stages of the same kind cost the same, so a pipeline is costed once per kind."""
        return self._kind(lay, stage)[1]

    def kind_id(self, lay, stage):
        """A small integer naming the kind (cheap to hash in cache keys)."""
        return self._kind(lay, stage)[0]

    def _kind(self, lay, stage):
        def make():
            kind = placement.stage_signature(self.arch, lay, stage)
            return self._kinds.setdefault(kind, len(self._kinds)), kind
        return self.memo(("kind", lay.tp, lay.ep, stage.lo, stage.hi, stage.has_embedding, stage.has_head), make)

    def stage_kinds(self, lay):
        """(kind id of every stage in order, [(kind id, its first stage)] of the distinct
        kinds), memoized per (tp, ep, pp, stage sizes): what a search composes stage times from."""
        def make():
            sts = self.stages(lay)
            ids = tuple(self.kind_id(lay, st) for st in sts)
            firsts = {}
            for k, st in zip(ids, sts):
                firsts.setdefault(k, st)
            return ids, list(firsts.items())
        return self.memo(("stage kinds", lay.tp, lay.ep, lay.pp, lay.pp_layers), make)

    def stage_cost(self, lay, stage, w, spec, work=True):
        """Cost vectors (as unit_cost) of one device of `stage`: count x each distinct layer's
        costs + its top blocks'."""
        def make():
            total = self.unit_cost(self.top_unit(lay, stage), w, spec, work)
            for layer, count in self.kind(lay, stage)[0]:
                unit = self.unit_cost(self.unit(layer), w, spec, work)
                if work:
                    total = tuple(_add(t, _scale(u, count)) for t, u in zip(total, unit))
                else:   # 4-vectors (no work counts): the same sums, written out
                    total = tuple((t[0] + count * u[0], t[1] + count * u[1], t[2] + count * u[2],
                                   t[3] + count * u[3]) for t, u in zip(total, unit))
            return total
        return self.memo(("stage cost", lay.tp, self.kind_id(lay, stage), w, spec, work), make)

    def prefill_ranks(self, cp):
        """[(tokens, history)] of the CP ranks that may bound the prefill. Contiguous split,
        c = ceil(P/cp): the last rank (its P - (cp-1) c tokens after (cp-1) c) or, when it
        holds fewer, the one before it (c tokens after (cp-2) c). Zig-zag split (2 cp chunks
        of h = P/(2cp), rank r holding chunks r and 2cp-1-r): every rank alike, one pass of
        c = 2h tokens after (cp-1) h, which has the causal pairs of its two chunks,
        h (r h) + h (2cp-1-r) h + h (h+1) = 2h (cp-1) h + 2h (2h+1)/2 = P (P+1) / (2 cp)
        per head: 1/cp of the prompt's, exactly (full attention)."""
        P = self.P
        if self.cp_split == "zigzag" and cp > 1:
            h = P // (2 * cp)
            return [(2 * h, (cp - 1) * h)]
        c = ceil_div(P, cp)
        last = P - (cp - 1) * c
        return [(last, (cp - 1) * c)] + ([(c, (cp - 2) * c)] if last < c else [])

    def prefill_cost(self, lay, stage, b, work=True):
        """(cost, tokens per rank) of the prefill of b prompts on the slowest CP rank
        (`prefill_ranks`), whichever of its candidates takes longer."""
        options = [(self.stage_cost(lay, stage, self.workload(self.wp, batch=b, logits="last", tokens=tokens,
                                                              history=history), ("pass",), work)[0], tokens)
                   for tokens, history in self.prefill_ranks(lay.cp)]
        return max(options, key=lambda o: _time(o[0]))

    def decode_cost(self, lay, stage, b, work=True):
        """(all G - 1 decode steps summed, the first step, the last step). Under CP a step at
        history h costs the step at h' = ceil(h/cp) (each rank holds at most that many); each
        h' in lo'..hi' stands for cp histories except at the ends:
        sum = cp x S(lo'..hi') - x step(lo') - y step(hi'), x = lo - cp (lo' - 1) - 1,
        y = cp hi' - hi (exact)."""
        cp, lo, hi = lay.cp, self.P, self.P + self.steps - 1
        lo2, hi2 = ceil_div(lo, cp), ceil_div(hi, cp)
        w = self._decode_w.get(b)
        if w is None:
            w = self._decode_w[b] = self.workload(self.wd, batch=b, tokens=1, history=0)
        total, first, last = self.stage_cost(lay, stage, w, ("steps", lo2, hi2), work)
        if cp > 1:
            x, y = lo - cp * (lo2 - 1) - 1, cp * hi2 - hi
            total = _add(_scale(total, cp), _add(_scale(first, -x), _scale(last, -y)))
        return total, first, last

    # -- communication -----------------------------------------------------------

    def tier(self, lay, dim):
        span = lay.group_stride("pp") + 1 if dim == "pp" else lay.group_span(dim)
        return "up" if span <= self.domain else "out"

    def tiers(self, lay):
        """The tier of the tp, ep, cp and pp groups (memoized per layout)."""
        return self.memo(("tiers", lay), lambda: tuple(self.tier(lay, d) for d in ("tp", "ep", "cp", "pp")))

    def comm_tiers(self, lay):
        """The tiers of the tp, ep and cp groups: all a stage's own collectives depend on (the
        PP tier only prices boundary transfers), so layouts differing in it share them."""
        return self.memo(("comm tiers", lay), lambda: self.tiers(lay)[:3])

    def collectives(self, lay, stage, phase, b, tokens_per_rank):
        """[Collective] one device of `stage` takes part in during one micro-batch pass of
        `phase` ("prefill" or "decode"), b requests of tokens_per_rank new tokens each: its
        top blocks' and, per distinct layer, one layer's collectives x the layer count
        (runs of the same collective merged)."""
        def make():
            merged = {}
            parts = [(self.top_collectives(lay, stage, b, tokens_per_rank), 1)]
            parts += [(self.layer_collectives(lay, layer, phase, b, tokens_per_rank), count)
                      for layer, count in self.kind(lay, stage)[0]]
            for cs, count in parts:
                for c in cs:
                    key = c.replace(count=1)
                    merged[key] = merged.get(key, 0) + c.count * count
            return [c.replace(count=n) for c, n in merged.items()]
        return self.memo(self._comm_key(lay, ("stage", self.kind_id(lay, stage)), phase, b, tokens_per_rank), make)

    def comm_s(self, lay, stage, phase, b, tokens_per_rank):
        """Seconds of every collective of `collectives(...)`, summed the same way, without
        building the merged list (what a search needs)."""
        def make():
            total = self.top_s(lay, (stage.has_embedding, stage.has_head), b, tokens_per_rank)
            for layer, count in self.kind(lay, stage)[0]:
                total += count * self.layer_comm_s(lay, layer, phase, b, tokens_per_rank)
            return total
        return self.memo(self._comm_key(lay, ("stage s", self.kind_id(lay, stage)), phase, b, tokens_per_rank),
                         make)

    def top_s(self, lay, key, b, tokens_per_rank):
        """Seconds of the top blocks' collectives (key = (embedding?, head?)) of one pass."""
        emb, head = key
        return self.memo(("top s", lay.tp, lay.sp, self.tiers(lay)[0], emb, head, b, tokens_per_rank),
                         lambda: sum(self.comm_time(c) for c in self.top_collectives(
                             lay, placement.Stage(0, 0, 0, emb, head), b, tokens_per_rank)))

    def _comm_key(self, lay, what, phase, b, tokens_per_rank):
        return ("comm", lay.tp, lay.ep, lay.cp, lay.sp, self.comm_tiers(lay), what, phase, b, tokens_per_rank)

    def layer_comm_s(self, lay, layer, phase, b, tokens_per_rank):
        """Seconds of `layer_collectives`, summed in its order, from the memoized groups'
        seconds (no collective is built or costed twice)."""
        return self.memo(self._comm_key(lay, ("layer s", layer), phase, b, tokens_per_rank), lambda: sum(
            t for _, times in self.layer_groups(lay, layer, phase, b * tokens_per_rank) for t in times))

    def top_collectives(self, lay, stage, b, tokens_per_rank):
        """The embedding's and the head's TP collectives (vocab-parallel) of one pass."""
        if lay.tp == 1 or not (stage.has_embedding or stage.has_head):
            return []
        arch = self.arch
        return comm.tp_collectives(b * tokens_per_rank, arch.hidden_size, self.act_bytes, lay.tp, lay.sp, 0,
                                   self.tier(lay, "tp"), embedding=stage.has_embedding,
                                   head_tokens=b if stage.has_head else 0,
                                   vocab=lay.tp * ceil_div(arch.vocab_size, lay.tp))

    def layer_collectives(self, lay, layer, phase, b, tokens_per_rank):
        """The collectives of ONE layer (its shard `layer`) in one pass, each with count 1 (or
        cp - 1 for the CP ring pass)."""
        return self.memo(self._comm_key(lay, ("layer", layer), phase, b, tokens_per_rank), lambda: [
            c for cs, _ in self.layer_groups(lay, layer, phase, b * tokens_per_rank) for c in cs])

    def comm_group(self, key, build):
        """(collectives, their seconds) of one collectives.py call build(), memoized by `key`,
        the arguments it depends on (layouts and layers that pass the same share them)."""
        def make():
            cs = tuple(build())
            return cs, tuple(self.comm_time(c) for c in cs)
        return self.memo(("comm group",) + key, make)

    def layer_groups(self, lay, layer, phase, tokens):
        """One layer's collectives in one pass of `tokens` tokens per rank, as `comm_group`s:
        TP's, EP's, CP's (in this order)."""
        w, act, hidden = self.w, self.act_bytes, self.arch.hidden_size
        tp_tier, ep_tier, cp_tier = self.comm_tiers(lay)
        tp, ep, cp, sp = lay.tp, lay.ep, lay.cp, lay.sp
        out = []
        moe = [blk for blk in layer.blocks if hasattr(blk, "experts")]
        if tp > 1:
            mlp = 1 if not moe or comm.moe_keeps_tp_reduction(tp, ep, sp, moe[0].shared_inter) else 0
            out.append(self.comm_group(("tp", tokens, tp, sp, tp_tier, mlp), lambda: comm.tp_collectives(
                tokens, hidden, act, tp, sp, 1, tp_tier, embedding=False, mlp_layers=mlp)))
        if ep > 1 and moe:
            k, experts = moe[0].top_k, moe[0].experts
            out.append(self.comm_group(("ep", tokens, k, experts, tp, ep, ep_tier, tp_tier), lambda: (
                comm.moe_collectives(tokens, k, hidden, act, tp, ep, 1, ep_tier, tp_tier, self.ep_dedup,
                                     w.routing, experts=experts, loads=w.routing_loads))))
        if cp > 1:
            per_token = layer.kv_bytes_per_token(w.kv_dtype, (self.wp if phase == "prefill" else self.wd).mla)
            if per_token and phase == "prefill":
                out.append(self.comm_group(("cp", tokens, per_token, cp, cp_tier), lambda: comm.cp_collectives(
                    tokens, per_token, cp, 1, cp_tier)))
            elif per_token:
                out.append(self.comm_group(("cp merge", tokens, cp, cp_tier), lambda: [comm.Collective(
                    "CP decode merge of partial attention", "all_reduce", tokens * hidden * act, cp, cp_tier,
                    1, "cp")]))
        return out

    def comm_time(self, c):
        """Seconds of all c.count runs of a collective on its tier."""
        link = self.links.get(c.tier)
        if self.algorithm == "best" and link is not None and c.group > 1 and c.bytes:
            return comm.choose(c, link)[1] * c.count
        return comm.time_s(c, link, self.algorithm_for(c)) * c.count

    def comm_time_fastest(self, c):
        """Seconds of all c.count runs of a collective with the fastest applicable algorithm
        (ring, tree, in-network: `comm.choose`; binomial for all-reduces) on its tier: what the
        lower bound charges."""
        link = self.links.get(c.tier)
        if link is not None and c.group > 1 and c.bytes:
            t = comm.choose(c, link)[1]
            if c.kind == "all_reduce" and not (link.topology == "torus" and c.tier == "up"):
                # the book's binomial tree, which --algorithm may name (not modelled on a torus)
                t = min(t, comm.time_s(c, link, "binomial"))
            return t * c.count
        return comm.time_s(c, link, "ring") * c.count

    def algorithm_for(self, c):
        """The named algorithm where it applies (binomial: all-reduces), ring otherwise."""
        return "binomial" if self.algorithm == "binomial" and c.kind == "all_reduce" else "ring"

    def transfer(self, lay, tokens):
        """([Collective], seconds) of one PP boundary crossing of `tokens` token activations
        (`collectives.pp_boundary_collectives`: the 1/tp slice per TP rank, and without SP the
        receiver's TP all-gather)."""
        if lay.pp == 1:
            return [], 0.0

        def make():
            cs = comm.pp_boundary_collectives(tokens, self.arch.hidden_size, self.act_bytes, lay.tp, lay.sp,
                                              self.tier(lay, "pp"), self.tier(lay, "tp"))
            return cs, sum(self.comm_time(c) for c in cs)
        tiers = self.tiers(lay)
        return self.memo(("transfer", lay.tp, lay.sp, tiers[3], tiers[0], tokens), make)

    def stage_time(self, roofline_s, comm_s):
        return max(roofline_s, comm_s) if self.overlap else roofline_s + comm_s


# -- one layout ---------------------------------------------------------------------

def micro_batches(lay, batch):
    """m: the layout's --micro-batches when set (> 1), else gcd(B, pp); it must divide B."""
    m = lay.micro_batches if lay.micro_batches > 1 else math.gcd(batch, lay.pp)
    if batch % m:
        raise UserError(f"--micro-batches {m} does not divide the batch {batch}")
    return m


def memory(plan, lay, batch):
    """Per-stage memory (as `kv`), the binding stage and the replica's capacity (memoized per
    (tp, ep, pp, cp, stage sizes): what a device holds does not depend on dp or the batch)."""
    def make():
        context = plan.P + plan.G - 1
        rows, binding = placement.device_memory(plan.arch, plan.wd, lay, context, plan.device.memory_bytes,
                                                plan.reserve)
        return rows, binding, rows[binding].max_requests   # the binding stage fits the fewest
    return plan.memo(("memory", lay.tp, lay.ep, lay.pp, lay.cp, lay.pp_layers), make)


def search_memory(plan, lay):
    """(the binding stage's StageMemory, the replica's capacity) as `memory` gives them, from
    one row per distinct stage kind (`Plan.stage_kinds`; stages of one kind hold the same,
    and the first of a kind stands for it, as `memory`'s ties go to the first stage)."""
    def make():
        firsts = [st for _, st in plan.stage_kinds(lay)[1]]
        rows, binding = placement.binding_memory(plan.arch, plan.wd, lay, firsts, plan.P + plan.G - 1,
                                                 plan.device.memory_bytes, plan.reserve)
        return rows[binding], rows[binding].max_requests
    return plan.memo(("search memory", lay.tp, lay.ep, lay.pp, lay.cp, lay.pp_layers), make)


def _collective_rows(plan, cs):
    return [{"name": c.name, "dim": c.dim, "kind": c.kind, "bytes_per_run": c.bytes, "runs": c.count,
             "group": c.group, "tier": c.tier, "wire_bytes_per_run": round(comm.wire_bytes(c, plan.algorithm_for(c))),
             "time_s": plan.comm_time(c)} for c in cs]


def _work(cost):
    v = dict(zip(decode_sum.FIELDS, cost[_NACC:]))
    return {"matrix_flops": v["matrix_flops"], "vector_flops": v["vector_flops"],
            "weight_bytes_read": v["weight_read"], "kv_bytes_read": v["kv_read"],
            "kv_bytes_written": v["kv_write"], "act_bytes_moved": v["act_read"] + v["act_write"]}


def _stage_phase(plan, lay, stage, cost, cs, runs=1):
    """One stage's phase record: roofline split, work, collectives (x runs passes), exposed comm."""
    roofline = _time(cost)
    comm_s = sum(plan.comm_time(c) for c in cs) * runs
    rec = {"stage": stage.index, "roofline_s": roofline, "compute_bound_s": cost[0], "weights_s": cost[1],
           "kv_s": cost[2], "activations_s": cost[3], "comm_s": comm_s,
           "exposed_comm_s": plan.stage_time(roofline, comm_s) - roofline,
           "time_s": plan.stage_time(roofline, comm_s)}
    rec.update(_work(cost))
    # the lower bound (LOWER_BOUND): the work's least time, communication hidden under it up to it
    ideal = ideal_s(plan.r, rec)
    fastest = sum(plan.comm_time_fastest(c) for c in cs) * runs
    rec.update(ideal_s=ideal, comm_fastest_s=fastest, lower_bound_s=max(ideal, fastest))
    rec["collectives"] = _collective_rows(plan, cs)
    if runs != 1:
        for row in rec["collectives"]:
            row["passes"] = runs
            row["time_s"] *= runs
    return rec


def ideal_s(r, work):
    """The least time of a stage's work on its device: max(matrix FLOPs / matrix peak, vector
    FLOPs / vector peak, (weight bytes read + KV bytes read and written) / bandwidth). The three
    units may run in parallel, operators may fuse (activations never leave the chip) and the
    weights and cache must be read at least once per pass (they exceed on-chip memory)."""
    return max(work["matrix_flops"] / r.matrix_flops_per_s, work["vector_flops"] / r.vector_flops_per_s,
               (work["weight_bytes_read"] + work["kv_bytes_read"] + work["kv_bytes_written"]) / r.bytes_per_s)


def phases_bound(ph, lay):
    """The lower bound of each phase's pipeline composition (LOWER_BOUND): stage times
    lower_bound_s, boundary transfers not charged (hidden under other micro-batches' work)."""
    out = {}
    for name, p in ph.items():
        if not isinstance(p, dict) or "stages" not in p:
            continue
        times = [s["lower_bound_s"] for s in p["stages"]]
        L, slowest, full = _pipeline(times, 0.0, ph["micro_batches"], lay.pp)
        out[name] = ({"pass_s": L, "slowest_stage_s": slowest, "ttft_first_s": L, "ttft_s": L + full - slowest}
                     if name == "prefill" else {"pass_s": L, "slowest_stage_s": slowest, "cycle_s": max(L, full)})
    return out


def latency_bound(plan, lay, batch, ph):
    """Lower bounds on TTFT and TPOT and upper bounds on tokens/s (LOWER_BOUND), beside
    `latency`'s estimate, by the same formulas; needs `phases(..., detail=True)`."""
    b = phases_bound(ph, lay)
    return dict(latency(plan, lay, batch, b), phases=b, definition=LOWER_BOUND)


def _pipeline(stage_times, transfer_s, m, pp):
    """(one micro-batch's pass L, slowest stage, m x slowest)."""
    slowest = max(stage_times)
    return sum(stage_times) + (pp - 1) * transfer_s, slowest, m * slowest


def stage_phase(plan, lay, stage, phase, b, detail=True):
    """One stage's record in `phase` (prefill | first | last | decode) for a micro-batch of b
    requests, memoized per stage kind (identical stages are costed once)."""
    key = ("stage phase", lay.tp, lay.ep, lay.cp, lay.sp, plan.tiers(lay), plan.kind_id(lay, stage), phase, b,
           detail)

    def make():
        runs, tokens, kind = 1, 1, "decode"
        if phase == "prefill":
            cost, tokens = plan.prefill_cost(lay, stage, b, detail)
            kind = "prefill"
        else:
            total, first, last = plan.decode_cost(lay, stage, b, detail)
            if phase == "decode":
                cost, runs = total, plan.steps
            else:
                cost = first if phase == "first" else last
        if detail:
            return _stage_phase(plan, lay, stage, cost, plan.collectives(lay, stage, kind, b, tokens), runs)
        roofline, comm_s = _time(cost), plan.comm_s(lay, stage, kind, b, tokens) * runs
        t = plan.stage_time(roofline, comm_s)
        return {"stage": stage.index, "roofline_s": roofline, "comm_s": comm_s,
                "exposed_comm_s": t - roofline, "time_s": t}

    rec = plan.memo(key, make)
    return rec if rec["stage"] == stage.index or not detail else dict(rec, stage=stage.index)


def stage_phases(plan, lay, sts, phase, b, detail):
    """stage_phase of every stage; without `detail` (a search, a sweep: times only) each stage
    kind's times are composed from its parts' times (`_fast_parts`), one record per kind."""
    if detail:
        return [stage_phase(plan, lay, st, phase, b, detail) for st in sts]
    ids, firsts = plan.stage_kinds(lay)
    by_kind = {}
    for k, st, (roofline, comm_s, t) in _kind_times(plan, lay, phase, b, firsts):
        by_kind[k] = {"stage": st.index, "roofline_s": roofline, "comm_s": comm_s,
                      "exposed_comm_s": t - roofline, "time_s": t}
    return [by_kind[k] for k in ids]


def _kind_times(plan, lay, phase, b, firsts):
    """[(kind id, first stage, (roofline s, comm s, stage time s))] per distinct stage kind
    (`_fast_stage`), memoized per kind with the parts they are summed from."""
    parts = plan.memo(("fast parts", lay.tp, lay.ep, lay.cp, lay.sp, plan.comm_tiers(lay), phase, b), dict)
    out = []
    for k, st in firsts:
        times = parts.get(k)
        if times is None:
            roofline, comm_s = _fast_stage(plan, lay, st, phase, b, parts)
            times = parts[k] = (roofline, comm_s, plan.stage_time(roofline, comm_s))
        out.append((k, st, times))
    return out


def fast_stage_times(plan, lay, phase, b):
    """Every stage's time in `phase` (as `stage_phases(..., detail=False)`'s time_s, in stage
    order) without building its records: what a search ranks by."""
    ids, firsts = plan.stage_kinds(lay)
    if len(firsts) == 1:
        return [_kind_times(plan, lay, phase, b, firsts)[0][2][2]] * len(ids)
    t = {k: times[2] for k, _, times in _kind_times(plan, lay, phase, b, firsts)}
    return [t[k] for k in ids]


def _fast_parts(plan, lay, phase, b, part, key):
    """Times of one part of a stage (a layer shard, or the top blocks (embedding?, head?)) in
    `phase`: per option (prefill: the slowest CP rank's candidates, as `Plan.prefill_cost`;
    decode: one) a (roofline s, comm s) pair, from the same memoized cost vectors and
    collectives as `stage_phase`. A stage's times are count-weighted sums of its parts' (the
    same sums as `Plan.stage_cost`, taken of times instead of cost vectors: equal up to
    floating-point rounding)."""
    top = not hasattr(part, "blocks")
    roofs = plan.memo(("part roof", part, phase, b, lay.cp), lambda: _part_roofs(plan, lay.cp, phase, b, part))
    if phase == "prefill":
        return [(r, plan.top_s(lay, key, b, tokens) if top else plan.layer_comm_s(lay, part, "prefill", b, tokens))
                for r, tokens in roofs]
    cs = plan.top_s(lay, key, b, 1) if top else plan.layer_comm_s(lay, part, "decode", b, 1)
    return [(roofs[0][0], cs * plan.steps if phase == "decode" else cs)]


def _part_roofs(plan, cp, phase, b, part):
    """[(roofline s, tokens per rank)] of one part (`_fast_parts`) per option, a layer shard's
    as the sum of its blocks' (each block costed once per workload, `Plan.unit_cost`)."""
    units = ([plan.memo(("block unit", block), lambda: plan.unit(Layer(blocks=(block,)))) for block in part.blocks]
             if hasattr(part, "blocks") else [part])
    if phase == "prefill":
        out = []
        for tokens, history in plan.prefill_ranks(cp):
            w = plan.workload(plan.wp, batch=b, logits="last", tokens=tokens, history=history)
            out.append((sum(_time(plan.unit_cost(u, w, ("pass",), False)[0]) for u in units), tokens))
        return out
    lo, hi = plan.P, plan.P + plan.steps - 1
    lo2, hi2 = ceil_div(lo, cp), ceil_div(hi, cp)
    w = plan._decode_w.get(b) or plan.workload(plan.wd, batch=b, tokens=1, history=0)
    i = {"first": 1, "last": 2}.get(phase)
    if i is not None:
        return [(sum(_time(plan.unit_cost(u, w, ("steps", lo2, hi2), False)[i]) for u in units), 1)]
    total = 0.0
    for u in units:
        t, first, last = plan.unit_cost(u, w, ("steps", lo2, hi2), False)
        if cp > 1:
            x, y = lo - cp * (lo2 - 1) - 1, cp * hi2 - hi
            total += cp * _time(t) - x * _time(first) - y * _time(last)
        else:
            total += _time(t)
    return [(total, 1)]


def _fast_stage(plan, lay, stage, phase, b, parts):
    """(roofline s, comm s) of one device of `stage` from its parts' times (`_fast_parts`)."""
    key = (stage.has_embedding, stage.has_head)
    top = parts.get(key)
    if top is None:
        top = parts[key] = _fast_parts(plan, lay, phase, b, plan.top_unit(lay, stage), key)
    sums = [list(o) for o in top]
    for layer, count in plan.kind(lay, stage)[0]:
        one = parts.get(layer)
        if one is None:
            one = parts[layer] = _fast_parts(plan, lay, phase, b, layer, None)
        for acc, (r, c) in zip(sums, one):
            acc[0] += count * r
            acc[1] += count * c
    best = sums[0]
    for o in sums[1:]:
        if o[0] > best[0]:
            best = o
    return best[0], best[1]


def check_cp(plan, lay):
    """ceil(P/cp), the prompt tokens per CP rank; UserError when the split leaves a rank none
    or (zig-zag) the prompt does not cut into 2 cp chunks."""
    c = ceil_div(plan.P, lay.cp)
    if plan.P - (lay.cp - 1) * c < 1:
        raise UserError(f"--cp {lay.cp} leaves the last rank no prompt token of {plan.P} "
                        f"(ceil(P/cp) = {c} tokens per rank)")
    if plan.cp_split == "zigzag" and lay.cp > 1 and plan.P % (2 * lay.cp):
        raise UserError(f"--cp-split zigzag cuts the prompt into 2 x cp = {2 * lay.cp} equal chunks; "
                        f"--input-len {plan.P} does not divide (try {2 * lay.cp * ceil_div(plan.P, 2 * lay.cp)})")
    return c


def phases(plan, lay, batch, detail=True, want=("prefill", "first", "last", "decode")):
    """Per phase: every stage's record and the pipeline composition (one layout, one batch)."""
    arch = plan.arch
    m = micro_batches(lay, batch)
    b = batch // m
    sts = plan.stages(lay)
    out = {"micro_batches": m, "micro_batch": b}
    c = check_cp(plan, lay)
    if "prefill" in want:
        recs = stage_phases(plan, lay, sts, "prefill", b, detail)
        xc, xs = plan.transfer(lay, b * c)
        L, slowest, full = _pipeline([s["time_s"] for s in recs], xs, m, lay.pp)
        out["prefill"] = {"stages": recs, "transfer": _collective_rows(plan, xc),
                          "transfer_s": xs, "pass_s": L, "ttft_first_s": L, "ttft_s": L + full - slowest,
                          "bubble_fraction": 1 - full / (L + full - slowest) if L else 0.0}
    if not plan.steps:
        return out
    xc, xs = plan.transfer(lay, b)

    def step_phase(recs, runs):
        L, slowest, full = _pipeline([s["time_s"] for s in recs], xs * runs, m, lay.pp)
        cycle = max(L, full)
        transfer = _collective_rows(plan, xc)
        if runs != 1:
            for row in transfer:
                row.update(passes=runs, time_s=row["time_s"] * runs)
        return {"stages": recs, "transfer": transfer,
                "transfer_s": xs * runs, "pass_s": L, "cycle_s": cycle,
                "bubble_fraction": 1 - full / cycle if cycle else 0.0}

    for name in ("first", "last", "decode"):
        if name in want:
            out[name] = step_phase(stage_phases(plan, lay, sts, name, b, detail),
                                   plan.steps if name == "decode" else 1)
    return out


def latency(plan, lay, batch, ph):
    """TTFT, TPOT and tokens/s per replica, cluster and device."""
    steps, dp, n = plan.steps, lay.dp, lay.devices
    ttft = ph["prefill"]["ttft_s"] if "prefill" in ph else None
    dec = ph["decode"]["cycle_s"] if "decode" in ph else 0.0
    rate = batch * steps / dec if steps and dec else None
    total = (ttft or 0.0) + dec
    e2e = batch * plan.G / total if total and ttft is not None else None
    return {
        "ttft_s": ttft,
        "ttft_first_micro_batch_s": ph["prefill"]["ttft_first_s"] if "prefill" in ph else None,
        "tpot_first_s": ph["first"]["cycle_s"] if "first" in ph else None,
        "tpot_mean_s": dec / steps if steps else None,
        "tpot_last_s": ph["last"]["cycle_s"] if "last" in ph else None,
        "decode_s": dec,
        "generation_s": total if ttft is not None else None,
        "decode_tokens_per_s_per_request": steps / dec if steps and dec else None,
        "decode_tokens_per_s_replica": rate,
        "decode_tokens_per_s_cluster": rate * dp if rate else None,
        "decode_tokens_per_s_per_device": rate * dp / n if rate else None,
        "tokens_per_s_cluster": e2e * dp if e2e else None,
        "tokens_per_s_per_device": e2e * dp / n if e2e else None,
    }


def layout_record(plan, lay, m):
    groups = []
    for dim in ("tp", "cp", "ep", "dp", "pp"):
        size = getattr(lay, dim)
        if size > 1:
            span = lay.group_stride("pp") + 1 if dim == "pp" else lay.group_span(dim)
            groups.append({"dim": dim, "size": size, "stride": lay.group_stride(dim), "span": span,
                           "tier": "-" if dim == "dp" else plan.tier(lay, dim)})
    sizes = placement.stage_sizes(len(plan.arch.layers), lay.pp, lay.pp_layers)
    return {"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "cp": lay.cp, "ep": lay.ep, "sp": lay.sp,
            "expert_tp": lay.expert_tp if placement.moe_experts(plan.arch) else None,
            "micro_batches": m, "pp_layers": list(sizes), "order": lay.order, "devices": lay.devices,
            "label": lay.label(), "groups": groups}


def memory_record(plan, lay, batch):
    rows, binding, cap = memory(plan, lay, batch)
    stages = [{"stage": s.index, "layers": f"{s.lo}-{s.hi - 1}", "weight_bytes": s.weight_bytes,
               "cache_bytes_per_request": s.kv_bytes_per_request, "reserve_bytes": s.reserve_bytes,
               "need_bytes": s.need(batch), "memory_bytes": s.memory_bytes, "max_requests": s.max_requests,
               "shortfall_bytes": s.shortfall_bytes(batch)} for s in rows]
    fits = cap is None or batch <= cap
    bind = None if binding is None else stages[binding]
    return {"context_tokens": plan.P + plan.G - 1, "cache_tokens_per_rank": ceil_div(plan.P + plan.G - 1, lay.cp),
            "memory_convention": plan.device.memory_convention,
            "reserve_rule": RESERVE_RULE if plan.reserve is None else "--reserve",
            "engine_defaults": None if bind is None else engine_defaults(
                bind["memory_bytes"], bind["weight_bytes"], bind["cache_bytes_per_request"]),
            "stages": stages, "binding_stage": binding,
            "max_requests_per_replica": cap, "max_requests_cluster": None if cap is None else cap * lay.dp,
            "fits": fits, "shortfall_bytes": max(s["shortfall_bytes"] for s in stages)}


def serving_record(plan, lay, rows):
    """analyses/serving's bound per distinct stage shard (its room beside its weights and
    reserve); the replica is bounded by its slowest stage, the cluster by dp replicas.
    Communication is not charged (still an upper bound). Not derived under CP."""
    from .serving import serving_bound

    if lay.cp > 1:
        return None
    per_stage, seen = [], {}
    for st, mem in zip(placement.stages(plan.arch, lay), rows):
        room = cache_room(mem["memory_bytes"], mem["weight_bytes"], mem["reserve_bytes"])
        key = (placement.stage_signature(plan.arch, lay, st), room)   # equal shards, one bound
        if key not in seen:
            shard = placement.shard(plan.arch, lay, st)
            seen[key] = serving_bound(shard, plan.wd, plan.r, plan.P, plan.G, room,
                                      plan.wp.replace(tokens=plan.P))
        b = seen[key]
        s = b["steady_state"]
        per_stage.append({"stage": st.index, "guaranteed_concurrency": b["guaranteed_concurrency"],
                          "concurrency": None if s is None else s["concurrency"],
                          "requests_per_s": None if s is None else s["requests_per_s"],
                          "output_tokens_per_s": None if s is None else s["output_tokens_per_s"],
                          "bound": "nothing fits" if s is None else s["bound"]})
    rates = [s["output_tokens_per_s"] for s in per_stage]
    replica = 0.0 if any(x is None for x in rates) else min(rates)
    return {"stages": per_stage, "output_tokens_per_s_replica": replica,
            "output_tokens_per_s_cluster": replica * lay.dp,
            "output_tokens_per_s_per_device": replica * lay.dp / lay.devices,
            "requests_per_s_replica": replica / plan.G,
            "requests_per_s_cluster": replica * lay.dp / plan.G}


def inputs_record(plan, batch):
    rec = {"devices": None, "batch": batch, "input_len": plan.P, "output_len": plan.G,
           "decode_steps": plan.steps, "overlap": plan.overlap, "algorithm": plan.algorithm}
    rec.update((k, v) for k, v in workload_record(plan.w, plan.arch).items()
               if k not in ("batch", "tokens", "history", "logits"))
    if plan.ep_dedup:   # echoed only when set (stored results predate the option)
        rec["ep_dedup"] = True
    if plan.cp_split != "contiguous":   # likewise
        rec["cp_split"] = plan.cp_split
    mla = plan.mla_choices
    if any(mla.values()):
        rec["mla"] = (f"auto: {mla['prefill']['path'] if mla['prefill'] else '-'} for the prefill, "
                      f"{mla['decode steps']['path'] if mla['decode steps'] else '-'} for the decode steps")
    return rec


def links_record(plan):
    out = {}
    for tier, link in plan.links.items():
        out[tier] = None if link is None else {
            "name": link.name, "bytes_per_s": link.bytes_per_s, "alpha_s": link.alpha_s,
            "efficiency": link.efficiency, "topology": link.topology, "domain_size": link.domain_size,
            "in_network_reduce": link.in_network_reduce, "assumptions": list(link.assumptions)}
    return out


def header(plan, command="parallel"):
    ce, me = plan.efficiency
    return {"schema_version": SCHEMA_VERSION, "command": command, "model": model_record(plan.arch),
            "device": device_record(plan.device, plan.r, plan.w.compute_dtype, ce, me),
            "links": links_record(plan)}


def unknown_peak_notes(plan):
    """A note when the device publishes no matrix or vector peak (Apple; TPUs' vector
    peak): those FLOPs are charged no time, so every time here leaves them out."""
    from .roofline import unknown_peaks
    peaks = unknown_peaks(plan.r)
    if not peaks:
        return []
    return [f"{' and '.join(peaks)} peak unknown on {plan.device.id} (none published): those FLOPs are "
            f"charged no time, so the roofline and 'compute-bound' times count only the memory side "
            f"(and the FLOPs at known peaks): every time here leaves those FLOPs out"]


def notes(plan, lay, mem, batch):
    out = unknown_peak_notes(plan) + plan.length_notes
    for phase, choice in plan.mla_choices.items():
        if choice:
            out.append(mla_path.note(choice, phase) + f" (times of the whole model on one device at batch "
                       f"{batch}; the chosen path runs on every shard)")
    if not mem["fits"]:
        st = mem["stages"][mem["binding_stage"]]
        out.append(f"does not fit: batch {batch} per replica needs {st['need_bytes']:,} B on a device of "
                   f"stage {st['stage']}, {mem['shortfall_bytes']:,} B more than its "
                   f"{st['memory_bytes']:,} B; times are computed as if memory were unlimited")
    return out


def parallel(plan, lay, batch):
    """The `parallel` record of one layout and one batch per replica."""
    placement.validate(plan.arch, lay)
    if batch != plan.mla_batch:
        plan.resolve_mla(batch)
    ph = phases(plan, lay, batch)
    rec = header(plan)
    rec["inputs"] = inputs_record(plan, batch)
    rec["inputs"]["devices"] = lay.devices
    rec["layout"] = layout_record(plan, lay, ph["micro_batches"])
    mem = memory_record(plan, lay, batch)
    rec["notes"] = notes(plan, lay, mem, batch)
    rec["memory"] = mem
    rec["latency"] = latency(plan, lay, batch, ph)
    rec["latency_definition"] = ESTIMATE
    rec["lower_bound"] = latency_bound(plan, lay, batch, ph)
    rec["phases"] = {k: ph[k] for k in ("prefill", "first", "last", "decode") if k in ph}
    rec["serving"] = serving_record(plan, lay, mem["stages"])
    rec["left_out"] = list(LEFT_OUT)
    rec["conventions"] = (list(CONVENTIONS) + list(PARALLEL_CONVENTIONS) + list(comm_conventions(plan))
                          + ([SERVING_LAYOUT] + list(SERVING_CONVENTIONS) if rec["serving"] else []))
    return rec


def comm_conventions(plan):
    algo = {"ring": "ring for every collective (nccl-tests' formulas)",
            "binomial": "the book's unsegmented binomial tree for every all-reduce (2 ceil(log2 n) rounds "
                        "of the whole buffer; wire bytes are the busiest rank's, ceil(log2 n) S), ring for "
                        "the other collectives",
            "best": "the fastest applicable algorithm per collective (ring, tree, in-network), as NCCL's "
                    "tuner"}[plan.algorithm]
    zigzag = ("Context parallelism, --cp-split zigzag (load-balanced causal split, as Megatron-LM's "
              "context parallelism): the prompt in 2 x cp chunks of P/(2cp), rank r holding chunks r and "
              "2cp-1-r; every rank does 1/cp of the prompt's causal pairs, costed as one pass of P/cp "
              "tokens after (cp-1) P/(2cp) (the same pairs); this replaces the contiguous split above "
              "for the prefill (decode and capacity unchanged).",)
    return (f"Collective time: alpha-beta on the tier the group spans (comm.py, README 'Communication "
            f"model'), {algo}; a group fitting one scale-up domain of {plan.domain} devices uses the "
            "scale-up link, a wider one the scale-out NIC.",) + (zigzag if plan.cp_split == "zigzag" else ())


# -- batch sweep ----------------------------------------------------------------------

SWEEP_COLUMNS = ("batch", "micro_batches", "ttft_s", "tpot_first_s", "tpot_mean_s", "tpot_last_s",
                 "decode_tokens_per_s_per_request", "decode_tokens_per_s_replica",
                 "decode_tokens_per_s_cluster", "decode_tokens_per_s_per_device", "exposed_comm_share",
                 "bubble_fraction")


def sweep(plan, lay):
    """B = 1, 2, 4, ... up to the replica's capacity: the `decode --batch-sweep` for a layout."""
    from .decode import sweep_batches

    placement.validate(plan.arch, lay)
    if plan.G < 2:
        raise UserError("--batch-sweep needs --output-len of at least 2 (one decode step)")
    mem = memory_record(plan, lay, 1)
    cap = mem["max_requests_per_replica"]
    if cap is None:
        raise UserError(f"{plan.arch.id} keeps no per-request cache: memory does not bound the batch")
    rows = []
    for b in sweep_batches(cap):
        ph = phases(plan, lay, b, detail=False)
        lat = latency(plan, lay, b, ph)
        dec = ph["decode"]
        exposed = max(s["exposed_comm_s"] for s in dec["stages"])
        rows.append({"batch": b, "micro_batches": ph["micro_batches"], "ttft_s": lat["ttft_s"],
                     "tpot_first_s": lat["tpot_first_s"], "tpot_mean_s": lat["tpot_mean_s"],
                     "tpot_last_s": lat["tpot_last_s"],
                     "decode_tokens_per_s_per_request": lat["decode_tokens_per_s_per_request"],
                     "decode_tokens_per_s_replica": lat["decode_tokens_per_s_replica"],
                     "decode_tokens_per_s_cluster": lat["decode_tokens_per_s_cluster"],
                     "decode_tokens_per_s_per_device": lat["decode_tokens_per_s_per_device"],
                     "exposed_comm_share": exposed / dec["cycle_s"] if dec["cycle_s"] else 0.0,
                     "bubble_fraction": dec["bubble_fraction"]})
    rec = header(plan, "parallel --batch-sweep")
    rec["inputs"] = inputs_record(plan, None)
    rec["inputs"]["devices"] = lay.devices
    del rec["inputs"]["batch"]
    rec["layout"] = layout_record(plan, lay, lay.micro_batches)
    rec["layout"]["micro_batches"] = "gcd(B, pp)" if lay.micro_batches == 1 else lay.micro_batches
    rec["notes"] = notes(plan, lay, mem, 1) if cap else ["not even one request fits: nothing to sweep"]
    rec["memory"] = mem
    rec["rows"] = rows
    rec["latency_definition"] = ESTIMATE + " The sweep gives the estimate only; `parallel --batch B` adds the lower bound."
    rec["left_out"] = list(LEFT_OUT)
    rec["conventions"] = list(CONVENTIONS) + list(PARALLEL_CONVENTIONS) + list(comm_conventions(plan))
    return rec


# -- search ---------------------------------------------------------------------------

def score(plan, lay, batch, objective):
    """(value to rank, figures) of one layout at one batch: lower is better."""
    ph = _score_phases(plan, lay, batch, objective)
    lat = latency(plan, lay, batch, ph)
    if objective == "ttft":
        return lat["ttft_s"], lat, ph
    if objective == "tpot":
        return lat["tpot_mean_s"], lat, ph
    return -lat["decode_tokens_per_s_per_device"], lat, ph


def _score_phases(plan, lay, batch, objective):
    """The pipeline figures `latency` reads of the one phase an objective ranks by (ttft: the
    prefill; else the decode steps), by `phases`' formulas from `fast_stage_times`, without
    the per-stage records and transfer rows."""
    m = micro_batches(lay, batch)
    b = batch // m
    c = check_cp(plan, lay)
    out = {"micro_batches": m, "micro_batch": b}
    if objective == "ttft":
        xs = plan.transfer(lay, b * c)[1]
        L, slowest, full = _pipeline(fast_stage_times(plan, lay, "prefill", b), xs, m, lay.pp)
        out["prefill"] = {"pass_s": L, "ttft_first_s": L, "ttft_s": L + full - slowest}
    elif plan.steps:
        xs = plan.transfer(lay, b)[1]
        L, slowest, full = _pipeline(fast_stage_times(plan, lay, "decode", b), xs * plan.steps, m, lay.pp)
        out["decode"] = {"pass_s": L, "cycle_s": max(L, full)}
    return out


def search_batches(cap, batch, pp):
    """The batches per replica tried for a layout: the given one, or pp micro-batches (a full
    pipeline) of b = 1, 4, 16, ... requests (powers of 4) while b x pp fits the capacity
    (2^20 when memory does not bound it)."""
    if batch is not None:
        return [batch]
    out, b = [], 1
    limit = cap if cap is not None else 1 << 20
    while b * pp <= limit:
        out.append(b * pp)
        b *= 4
    return out


def _collective_span(lay):
    """Tie-break: the largest collective group, then the dimensions in order."""
    return (max(lay.tp, lay.cp, lay.ep, 2 if lay.pp > 1 else 1), lay.tp, lay.cp, lay.ep, lay.pp, lay.dp)


def search(plan, devices, objective="throughput", tpot_limit=None, top=10, batch=None):
    """Every layout of `devices` the model admits, ranked by the objective (best first).

    throughput: decode tokens/s per device (cluster decode tokens/s / devices) at the best
    batch per replica (`search_batches`, or --batch) with mean TPOT within
    --tpot-limit; ttft: the smallest TTFT; tpot: the smallest mean TPOT (both at --batch,
    default 1). Rejections are counted by reason."""
    if objective not in OBJECTIVES:
        raise UserError(f"unknown objective '{objective}'; choose from {', '.join(OBJECTIVES)}")
    if objective != "ttft" and plan.G < 2:
        raise UserError(f"--objective {objective} needs --output-len of at least 2 (one decode step)")
    if objective != "throughput" and batch is None:
        batch = 1
    rejected, ranked, total = {}, [], 0

    def reject(reason, lay, detail=None):
        entry = rejected.setdefault(reason, {"reason": reason, "layouts": 0, "example": lay.label(),
                                             "least_shortfall_bytes": None})
        entry["layouts"] += 1
        if detail is not None and (entry["least_shortfall_bytes"] is None or detail < entry["least_shortfall_bytes"]):
            entry["least_shortfall_bytes"] = detail
            entry["example"] = lay.label()

    for lay in placement.candidate_layouts(plan.arch, devices):
        total += 1
        why = placement.refusal(plan.arch, lay)
        if why:
            reject(why, lay)
            continue
        try:
            placement.validate(plan.arch, lay)
            if plan.P < lay.cp or plan.P - (lay.cp - 1) * ceil_div(plan.P, lay.cp) < 1:
                raise UserError(f"CP leaves a rank without prompt tokens (P = {plan.P})")
        except UserError as e:
            reject(str(e), lay)
            continue
        bind, cap = search_memory(plan, lay)
        if cap == 0:
            reject("does not fit: weights and reserve exceed a device's memory", lay,
                   bind.shortfall_bytes(0) or bind.need(1) - bind.memory_bytes)
            continue
        best = None
        try:
            for b in search_batches(cap, batch, lay.pp):
                if cap is not None and b > cap:
                    reject(f"does not fit: batch {b} per replica", lay, bind.shortfall_bytes(b))
                    break
                value, lat, _ = score(plan, lay, b, objective)
                if tpot_limit is not None and lat["tpot_mean_s"] is not None and lat["tpot_mean_s"] > tpot_limit:
                    if best is None:
                        reject("mean TPOT over --tpot-limit at every batch that fits", lay)
                    break
                if best is None or value < best[0]:
                    best = (value, b, lat)
        except UserError as e:
            reject(str(e), lay)
            continue
        if best is not None:
            ranked.append((best[0], _collective_span(lay), lay, best[1], best[2]))
    ranked.sort(key=lambda x: (x[0], x[1]))
    return ranked, sorted(rejected.values(), key=lambda r: (-r["layouts"], r["reason"])), total


def search_record(plan, devices, objective="throughput", tpot_limit=None, top=10, batch=None):
    """The `parallel --search` record: the top K layouts with their breakdown, rejections by reason."""
    ranked, rejected, total = search(plan, devices, objective, tpot_limit, top, batch)
    rec = header(plan, "parallel --search")
    rec["inputs"] = inputs_record(plan, batch)
    rec["inputs"].update({"devices": devices, "objective": objective, "tpot_limit_s": tpot_limit, "top": top})
    best = []
    for rank, (value, _, lay, b, lat) in enumerate(ranked[:top], 1):
        ph = phases(plan, lay, b, detail=True)
        mem = memory_record(plan, lay, b)
        dec = ph.get("decode") or ph["prefill"]
        stage = max(dec["stages"], key=lambda s: s["time_s"])
        comm_by_dim = {}
        for c in stage["collectives"]:
            comm_by_dim[c["dim"]] = comm_by_dim.get(c["dim"], 0.0) + c["time_s"]
        best.append({"rank": rank, "layout": layout_record(plan, lay, ph["micro_batches"]), "batch": b,
                     "latency": latency(plan, lay, b, ph),
                     "lower_bound": {k: v for k, v in latency_bound(plan, lay, b, ph).items()
                                     if k not in ("phases", "definition")},
                     "slowest_decode_stage" if "decode" in ph else "slowest_prefill_stage": {
                         "stage": stage["stage"], "roofline_s": stage["roofline_s"],
                         "compute_bound_s": stage["compute_bound_s"], "weights_s": stage["weights_s"],
                         "kv_s": stage["kv_s"], "comm_s": stage["comm_s"],
                         "exposed_comm_s": stage["exposed_comm_s"], "comm_s_by_dim": comm_by_dim},
                     "bubble_fraction": dec["bubble_fraction"],
                     "memory": {"binding_stage": mem["binding_stage"],
                                "max_requests_per_replica": mem["max_requests_per_replica"],
                                "weight_bytes": mem["stages"][mem["binding_stage"]]["weight_bytes"]}})
    rec["notes"] = [f"{len(ranked)} of {total} layouts of {devices} devices admitted; "
                    f"{total - len(ranked)} rejected"] + unknown_peak_notes(plan)
    for phase, choice in plan.mla_choices.items():
        if choice:
            rec["notes"].append(mla_path.note(choice, phase) + " (at batch 1, for every layout)")
    rec["ranking"] = {
        "throughput": "decode tokens/s per device at the best batch per replica (pp micro-batches of "
                      "1, 4, 16, ... requests while they fit, or --batch) whose mean TPOT is within "
                      "--tpot-limit",
        "ttft": "TTFT of the batch (--batch, default 1), smallest first",
        "tpot": "mean TPOT (--batch, default 1), smallest first"}[objective] + \
        "; ties: fewer devices per collective (largest group, then tp, cp, ep, pp)"
    rec["definitions"] = [ESTIMATE, LOWER_BOUND]
    rec["layouts_considered"] = total
    rec["layouts_admitted"] = len(ranked)
    rec["top"] = best
    rec["rejected"] = rejected
    rec["left_out"] = list(LEFT_OUT) + [
        "The search keeps sequence parallelism off, stages even and the rank order tp-cp-ep-dp-pp; "
        "it tries each layout at the batches above (micro-batches gcd(B, pp))."]
    rec["conventions"] = list(CONVENTIONS) + list(PARALLEL_CONVENTIONS) + list(comm_conventions(plan))
    return rec

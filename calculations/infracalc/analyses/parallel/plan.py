"""`Plan`: what every layout of one `parallel` command or search shares."""

from ... import comm
from ... import layout as placement
from ...arch import Block
from ...collectives import ceil_div
from ...errors import UserError
from .. import mla_path
from ..decode import check_lengths, decode_path
from ..roofline import roof
from .communication import Communication
from .conventions import ALGORITHMS, CP_SPLITS
from .costs import PartCosts


class Plan(PartCosts, Communication):
    """What every layout of one search shares: model, workload, device, lengths, links."""

    def __init__(self, arch, w, device, input_len, output_len, compute_efficiency=1.0,
                 memory_efficiency=1.0, reserve_bytes=None, overlap=False, algorithm="ring",
                 link_options=None, batch=1, ep_dedup=False, cp_split="contiguous", dispatch_dtype="",
                 combine_dtype=""):
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
        for name, value in (("--dispatch-dtype", dispatch_dtype), ("--combine-dtype", combine_dtype)):
            if value and value not in comm.WIRE_FORMATS:
                raise UserError(f"{name}: unknown format '{value}'; choose from {', '.join(comm.WIRE_FORMATS)}")
        self.dispatch_dtype, self.combine_dtype = dispatch_dtype or "", combine_dtype or ""
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

"""`Plan`: what every layout of one `parallel` command or search shares, as one immutable
record (model, workload, device, lengths, links, the serving options and the MLA paths
chosen at one batch), with the cache its evaluations fill.

A plan never changes once built: another batch's MLA paths are another plan
(`Plan.at_batch`), with a cache of its own, so no figure depends on the order in which
records and searches were asked of it."""

from ... import comm
from ... import layout as placement
from ...splits import ceil_div
from ...errors import UserError
from ...memo import remember
from ...record import Record
from .. import mla_path
from ..decode import check_lengths, decode_path
from ..roofline import roof
from .conventions import ALGORITHMS, CP_SPLITS, LOGITS_BYTES, PP_SENDS

CACHE_KEPT = 1 << 17   # entries a plan's cache holds before it drops its oldest half


class ServingOptions(Record):
    """Every knob of a `parallel` plan besides the model, workload, device and lengths."""
    compute_efficiency: float = 1.0
    memory_efficiency: float = 1.0
    reserve_bytes: object = None    # None: the reserve rule of analyses/memory
    overlap: bool = False
    algorithm: str = "ring"         # --algorithm (ALGORITHMS)
    link_options: tuple = ()        # (name, value) pairs of comm.links' overrides
    ep_dedup: bool = False
    cp_split: str = "contiguous"    # --cp-split (CP_SPLITS)
    dispatch_dtype: str = ""        # --dispatch-dtype (comm.WIRE_FORMATS; "": the activation format)
    combine_dtype: str = ""         # --combine-dtype (likewise)
    logits_dtype: str = ""          # --logits-dtype (LOGITS_BYTES; "": the activation format)
    pp_send: str = "slice"          # --pp-send (PP_SENDS)


def check_options(arch, w, o):
    """UserError when the options do not apply to the model and workload."""
    if o.algorithm not in ALGORITHMS:
        raise UserError(f"unknown collective algorithm '{o.algorithm}'; choose from {', '.join(ALGORITHMS)}")
    if o.ep_dedup and not placement.moe_experts(arch):
        raise UserError(f"--ep-dedup: {arch.id} has no routed experts (EP dispatch needs an MoE model)")
    if o.ep_dedup and w.routing != "uniform":
        raise UserError(f"--ep-dedup's expected destination count is derived for uniform routing only; "
                        f"drop --routing {w.routing}")
    for name, value in (("--dispatch-dtype", o.dispatch_dtype), ("--combine-dtype", o.combine_dtype)):
        if value and value not in comm.WIRE_FORMATS:
            raise UserError(f"{name}: unknown format '{value}'; choose from {', '.join(comm.WIRE_FORMATS)}")
    if o.logits_dtype and o.logits_dtype not in LOGITS_BYTES:
        raise UserError(f"--logits-dtype: unknown format '{o.logits_dtype}'; choose from {', '.join(LOGITS_BYTES)}")
    if o.pp_send not in PP_SENDS:
        raise UserError(f"--pp-send: unknown convention '{o.pp_send}'; choose from {', '.join(PP_SENDS)}")
    if o.cp_split not in CP_SPLITS:
        raise UserError(f"unknown CP split '{o.cp_split}'; choose from {', '.join(CP_SPLITS)}")
    if o.cp_split == "zigzag" and any(getattr(b, "window", None) is not None or getattr(b, "chunk", None)
                                      for layer, _, _ in arch.layer_groups() for b in layer.blocks):
        raise UserError(f"--cp-split zigzag: {arch.id} has windowed or chunked attention layers, whose "
                        "causal pairs per zig-zag chunk are not modelled; use the contiguous split")


class Plan:
    """Model, workload, device, prompt and output lengths P and G, serving options, and the
    MLA paths (`--mla auto`: the cheaper on the whole model at `batch`, as `decode` picks; the
    same path on every shard). Options are keyword-only: ServingOptions' fields."""

    def __init__(self, arch, w, device, input_len, output_len, *, batch=1, **options):
        options["link_options"] = tuple(sorted(dict(options.get("link_options") or ()).items()))
        o = ServingOptions(**options)
        self.length_notes = check_lengths(arch, input_len, output_len)
        check_options(arch, w, o)
        self.arch, self.device, self.options = arch, device, o
        self.w = w.replace(batch=1, tokens=1, history=0, logits="last")
        self.r = roof(device, self.w.compute_dtype, o.compute_efficiency, o.memory_efficiency)
        self.P, self.G, self.steps = input_len, output_len, output_len - 1
        self.links = comm.links(device, **dict(o.link_options))
        self.act_bytes = ceil_div(self.w.act_dtype.bits, 8)
        self.domain = device.scale_up.domain_size if device.scale_up else 1
        self.batch = batch
        one = self.w.replace(batch=batch)
        wp, pre = mla_path.for_pass(arch, one.replace(tokens=self.P), self.r)
        wd, dec = decode_path(arch, one, self.P, self.P + self.steps - 1, self.r)
        self.wp, self.wd = wp.replace(tokens=1, batch=1), wd.replace(batch=1)
        self.mla_choices = {"prefill": pre, "decode steps": dec if self.steps else None}
        self._cache, self._kinds, self._signatures = {}, {}, []

    def at_batch(self, batch):
        """This plan with the MLA paths chosen at `batch` (itself when they are)."""
        if batch == self.batch:
            return self
        o = self.options
        return Plan(self.arch, self.w, self.device, self.P, self.G, batch=batch,
                    **{f: getattr(o, f) for f in ServingOptions._fields})

    # the options, by the names the formulas use
    overlap = property(lambda self: self.options.overlap)
    algorithm = property(lambda self: self.options.algorithm)
    reserve = property(lambda self: self.options.reserve_bytes)
    ep_dedup = property(lambda self: self.options.ep_dedup)
    cp_split = property(lambda self: self.options.cp_split)
    dispatch_dtype = property(lambda self: self.options.dispatch_dtype or "")
    combine_dtype = property(lambda self: self.options.combine_dtype or "")
    logits_dtype = property(lambda self: self.options.logits_dtype or "")
    pp_send = property(lambda self: self.options.pp_send)
    efficiency = property(lambda self: (self.options.compute_efficiency, self.options.memory_efficiency))

    def memo(self, key, make):
        """The value stored under `key` in this plan's cache, made once by make() (bounded:
        CACHE_KEPT entries; every value is a pure function of the plan and its key)."""
        out = self._cache.get(key)
        if out is None:
            out = remember(self._cache, CACHE_KEPT, key, make())
        return out

    def workload(self, base, **changes):
        """base.replace(**changes), one object per distinct result (a cache key compares it by
        identity, not field by field)."""
        key = ("workload", base is self.wp, tuple(sorted(changes.items())))
        return self.memo(key, lambda: base.replace(**changes))

    def kind_id(self, lay, stage):
        """A small integer naming what one device of `stage` holds (`layout.stage_signature`):
        stages of one kind cost the same, so a pipeline is costed once per kind."""
        def make():
            signature = placement.stage_signature(self.arch, lay, stage)
            k = self._kinds.setdefault(signature, len(self._kinds))
            if k == len(self._signatures):
                self._signatures.append(signature)
            return k
        return self.memo(("kind", lay.tp, lay.ep, stage.lo, stage.hi, stage.has_embedding, stage.has_head), make)

    def kind_layers(self, k):
        """((layer shard, count), ...) one device of stage kind k holds (`layout.stage_signature`)."""
        return self._signatures[k][0]


def stages(plan, lay):
    """layout.stages, memoized per (pp, pp_layers)."""
    return plan.memo(("stages", lay.pp, lay.pp_layers), lambda: placement.stages(plan.arch, lay))


def stage_kinds(plan, lay):
    """(kind id of every stage in order, [(kind id, its first stage)] of the distinct kinds),
    memoized per (tp, ep, pp, stage sizes)."""
    def make():
        sts = stages(plan, lay)
        ids = tuple(plan.kind_id(lay, st) for st in sts)
        firsts = {}
        for k, st in zip(ids, sts):
            firsts.setdefault(k, st)
        return ids, list(firsts.items())
    return plan.memo(("stage kinds", lay.tp, lay.ep, lay.pp, lay.pp_layers), make)

"""Which MLA execution path a phase is charged when `--mla auto` (the default).

A bound must not charge a dearer computation than an engine would run. Serving
engines prefill latent attention in the expanded form (up-project the latent
of every key, attend per head) and decode in the absorbed form (W_UK folded
into the query, attention over the latent); both keep the latent cache
(blocks/mla.py). `auto` charges each phase the cheaper of the two, both
costed and the choice stated with both times:

- a pass (a `forward` pass, a prefill): by the pass's roofline bound (sum of
  operator bounds). Long prefills come out expanded (DeepSeek-V3, 4096
  tokens on an H100: 3.4x fewer attention FLOPs per pair);
- the decode steps of a request: by the summed bound of all the steps
  (closed form). They come out absorbed except over very short histories,
  where the up-projection of a few latents is cheaper than absorbing W_UK.

`--mla absorbed|expanded|naive` forces one path for every phase.
"""

import sys

from .. import ledger
from ..summation import plain_sum


def has_mla(arch):
    """True when some layer runs MLA attention (its execution path is a choice).
    No MLA block exists before blocks.mla is imported (by the adapters that build
    one), so other models never import it."""
    mla = sys.modules.get(__name__.rsplit(".", 2)[0] + ".blocks.mla")
    return mla is not None and any(isinstance(b, mla.MLA) for layer, _, _ in arch.layer_groups()
                                   for b in layer.blocks)


def pass_time(arch, w, r):
    """The pass's roofline bound: the sum of its operators' bounds (roofline.op_bound's time,
    max(compute, memory), without naming each bound)."""
    compute_s, memory_s = r.compute_s, r.memory_s
    return plain_sum(max(compute_s(op.matrix_flops, op.vector_flops), memory_s(op.bytes_moved))
               for op in ledger.operators(arch, w))


def cheaper(arch, w, cost):
    """(workload with a concrete MLA path, the choice as a record or None): under auto,
    the cheaper of expanded and absorbed by cost(workload) in seconds (ties: absorbed)."""
    if w.mla != "auto" or not has_mla(arch):
        return w, None
    times = {p: cost(w.replace(mla=p)) for p in ("expanded", "absorbed")}
    pick = min(times, key=lambda p: (times[p], p != "absorbed"))
    other = "absorbed" if pick == "expanded" else "expanded"
    return w.replace(mla=pick), {
        "path": pick, "time_s": times[pick], "other_path": other, "other_time_s": times[other],
        "rule": "auto: the cheaper of expanded and absorbed (roofline bound)",
    }


def for_pass(arch, w, r):
    """cheaper() for one pass, by its roofline bound."""
    return cheaper(arch, w, lambda x: pass_time(arch, x, r))


def note(choice, phase="pass"):
    """One line stating the choice."""
    return (f"MLA path for the {phase}: {choice['path']} ({choice['time_s'] * 1e3:.3f} ms) over "
            f"{choice['other_path']} ({choice['other_time_s'] * 1e3:.3f} ms): --mla auto charges "
            "the cheaper of the two; --mla absorbed|expanded|naive forces one")

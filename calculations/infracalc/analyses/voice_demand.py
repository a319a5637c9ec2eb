"""The TPU paper's voice-search demand anchor, scaled linearly (the book's chapter-1 TPU demand).

Jouppi et al., "In-Datacenter Performance Analysis of a Tensor Processing Unit", ISCA 2017
(arXiv:1704.04760), section 2: in 2013 a projection showed that people searching by voice for three
minutes a day would double Google's datacenter computation. With today's capacity normalized to 1,
the anchor is one added unit at 3 minutes per person per day; scaled linearly by the declared usage
m, relative population p, work per audio second w and peak factor k (teaching assumptions, not
further observations):

    increment = (m / 3) p w k,   total = 1 + increment;
    with a declared effective gain g on the added work only: increment / g, total 1 + increment / g;
    with a declared baseline of S server equivalents: S x increment added server equivalents (exact),
    ceil(S x increment) whole added servers and S + ceil(S x increment) whole servers in all.

No historical user, server, accelerator count or cost is derived; exact fractions.
"""

from fractions import Fraction

ANCHOR_MINUTES = 3      # minutes of voice search per person per day that double the capacity (Jouppi et al. 2017)


def _ceil(x):
    return -(-x.numerator // x.denominator)


def _candidate(name, increment, baseline_servers):
    row = {"candidate": name, "increment_exact": str(increment), "total_exact": str(1 + increment),
           "added_server_equivalents_exact": None, "added_server_equivalents": None, "total_server_equivalents": None}
    if baseline_servers is not None:
        added = baseline_servers * increment
        row.update(added_server_equivalents_exact=str(added), added_server_equivalents=_ceil(added),
                   total_server_equivalents=baseline_servers + _ceil(added))
    return row


def voice_demand(*, minutes, population=Fraction(1), work=Fraction(1), peak=Fraction(1), baseline_servers=None,
                 gain=None):
    chain, level = [], Fraction(1)
    for factor, multiplier in (("usage_minutes", Fraction(minutes) / ANCHOR_MINUTES), ("population", population),
                               ("work_per_audio_second", work), ("peak_requirement", peak)):
        chain.append({"factor": factor, "multiplier_exact": str(multiplier), "input_exact": str(level),
                      "output_exact": str(level * multiplier)})
        level *= multiplier
    rows = [("conventional", level)] + ([("with_effective_gain", level / gain)] if gain is not None else [])
    return {
        "anchor_minutes_per_person_day": ANCHOR_MINUTES, "anchor_total_capacity": 2,
        "increment_exact": str(level), "total_exact": str(1 + level),
        "candidates": [_candidate(name, x, baseline_servers) for name, x in rows],
        "scaling": chain,
    }


VOICE_DEMAND_CONVENTIONS = [
    "Anchor: Jouppi et al., ISCA 2017 (arXiv:1704.04760), sec. 2: three minutes of voice search per person per day "
    "would double 2013 datacenter computation. Capacity today = 1; the added demand scales linearly with the "
    "declared minutes / 3, relative population, work per audio second and peak factor (teaching assumptions).",
    "A declared effective gain divides only the added work; a declared baseline of server equivalents gives "
    "baseline x increment added server equivalents, ceil(baseline x increment) whole added servers and baseline + "
    "that whole servers in all. No historical server or user count, accelerator count or "
    "cost is derived; exact fractions.",
]

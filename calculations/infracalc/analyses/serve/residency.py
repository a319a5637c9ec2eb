"""Immutable KV pages resident in several memory tiers over declared intervals (the book's
chapter-9 multi-level residency group).

Each interval holds the first N tokens (whole pages) of a prefix identity in one tier during
[start, end) ns: N c bytes, c the model's KV bytes per token. Intervals of one identity in one
tier share their pages (a longer prefix holds the shorter one's), so between consecutive
interval ends, per tier:

    physical = sum over identities of the largest resident prefix's bytes,
    logical  = sum over intervals of their bytes (each counted alone);

a copy in another tier is its own physical copy, and the globally unique bytes (the comparison
base) are the sum over identities of their largest prefix resident anywhere. Over time: a
tier's peak physical bytes, physical and logical byte-ns (the sums of bytes x segment length),
the time its physical bytes exceed its capacity (kept, flagged, never evicted), and, over all
tiers, the cross-tier copy byte-seconds = all tiers' physical - globally unique byte-seconds.
"""

from fractions import Fraction
from ...summation import plain_sum

RESIDENCY_CONVENTION = (
    "Residency (analyses/serve/residency.py): declared [start, end) intervals of a prefix identity's first N "
    "tokens in a tier; per tier, physical = sum over identities of the longest resident prefix (shared pages), "
    "logical = every interval alone; each tier's copy is physical; globally unique = each identity's longest "
    "prefix anywhere; byte-seconds = bytes x time over the segments; over-capacity time is flagged, nothing "
    "is evicted.")


def residency(intervals, capacities, token_bytes):
    """(per-tier rows, segments, summary). intervals: (id, tier, identity, tokens, start_ns, end_ns);
    capacities: {tier: bytes or None}, in report order."""
    tiers = list(capacities) + [t for t in dict.fromkeys(i[1] for i in intervals) if t not in capacities]
    cuts = sorted({x for i in intervals for x in (i[4], i[5])})
    segments = []
    for lo, hi in zip(cuts, cuts[1:]):
        live = [i for i in intervals if i[4] <= lo and hi <= i[5]]
        physical, logical, unique = {}, {}, {}
        for t in tiers:
            here = [i for i in live if i[1] == t]
            longest = {}
            for i in here:
                longest[i[2]] = max(longest.get(i[2], 0), i[3])
            physical[t] = plain_sum(longest.values()) * token_bytes
            logical[t] = plain_sum(i[3] for i in here) * token_bytes
        for i in live:
            unique[i[2]] = max(unique.get(i[2], 0), i[3])
        segments.append({"start_ns": lo, "end_ns": hi, "tier_physical_bytes": physical, "tier_logical_bytes": logical,
                         "all_tier_physical_bytes": plain_sum(physical.values()),
                         "globally_unique_page_bytes": plain_sum(unique.values()) * token_bytes})
    rows = []
    for t in tiers:
        cap = capacities.get(t)
        phys = plain_sum(s["tier_physical_bytes"][t] * (s["end_ns"] - s["start_ns"]) for s in segments)
        logi = plain_sum(s["tier_logical_bytes"][t] * (s["end_ns"] - s["start_ns"]) for s in segments)
        rows.append({"tier": t, "capacity_bytes": cap,
                     "peak_bytes": max((s["tier_physical_bytes"][t] for s in segments), default=0),
                     "physical_byte_nanoseconds": phys, "logical_byte_nanoseconds": logi,
                     "over_capacity_nanoseconds": plain_sum(s["end_ns"] - s["start_ns"] for s in segments
                                                      if cap is not None and s["tier_physical_bytes"][t] > cap),
                     "physical_byte_seconds": Fraction(phys, 10**9), "logical_byte_seconds": Fraction(logi, 10**9),
                     "shared_byte_seconds_saved": Fraction(logi - phys, 10**9)})
    total = plain_sum(r["physical_byte_seconds"] for r in rows)
    unique = Fraction(plain_sum(s["globally_unique_page_bytes"] * (s["end_ns"] - s["start_ns"]) for s in segments), 10**9)
    summary = {"all_tier_peak_physical_bytes": max((s["all_tier_physical_bytes"] for s in segments), default=0),
               "all_tier_physical_byte_seconds": total, "globally_unique_byte_seconds": unique,
               "cross_tier_copy_byte_seconds": total - unique,
               "all_tiers_capacity_feasible": not any(r["over_capacity_nanoseconds"] for r in rows)}
    return rows, segments, summary

"""The layout-search skeleton `parallel --search` and `train --search` share: every candidate
layout scored by the command's own function, the refused ones counted by reason in one record
shape, the rest ranked by (value, the command's tie-break); `rank_top` gives the best few of
that ranking while scoring exactly only the layouts a bound cannot rule out.

A scoring function returns (value, payload...) for a layout it ranks and raises `Rejected`
(a reason, and a memory shortfall where there is one) or a UserError for one it refuses; a
`MissingLink` is counted under its canonical reason (the tier, not the collective's name)."""

import bisect

from ..errors import MissingLink, UserError

PRUNE_MARGIN = 1e-9   # relative: a bound summed in another order than the exact figure differs by ~1e-15


class Rejected(Exception):
    """A layout the search does not rank, and why (`shortfall_bytes`: how much memory it
    lacks, when that is the reason)."""

    def __init__(self, reason, shortfall_bytes=None):
        super().__init__(reason)
        self.reason, self.shortfall_bytes = reason, shortfall_bytes


class Rejections:
    """Refused layouts by reason. Each record: reason, layouts (how many), example (a layout's
    label: the one with the least shortfall when there is one, else the first met),
    least_shortfall_bytes (None when the reason is not memory)."""

    def __init__(self):
        self._by = {}

    def add(self, reason, label=None, shortfall_bytes=None, count=1):
        entry = self._by.setdefault(reason, {"reason": reason, "layouts": 0, "example": label,
                                             "least_shortfall_bytes": None})
        entry["layouts"] += count
        least = entry["least_shortfall_bytes"]
        if shortfall_bytes is not None and (least is None or shortfall_bytes < least):
            entry["least_shortfall_bytes"] = shortfall_bytes
            entry["example"] = label

    @property
    def layouts(self):
        return sum(e["layouts"] for e in self._by.values())

    def records(self):
        """The records, most layouts first (ties by reason)."""
        return sorted(self._by.values(), key=lambda r: (-r["layouts"], r["reason"]))


def rank(layouts, score, tie_break, rejections):
    """[(value, tie_break(lay), lay, *payload)] of the layouts `score` ranks, best (smallest)
    first; the refused ones go to `rejections`."""
    ranked = []
    for lay in layouts:
        try:
            value, *payload = score(lay)
        except Rejected as e:
            rejections.add(e.reason, lay.label(), e.shortfall_bytes)
        except MissingLink as e:
            rejections.add(e.reason, lay.label())
        except UserError as e:
            rejections.add(str(e), lay.label())
        else:
            ranked.append((value, tie_break(lay), lay, *payload))
    ranked.sort(key=lambda x: (x[0], x[1]))
    return ranked


def rank_top(layouts, *, bound, exact, tie_break, rejections, top, refine=None):
    """(rank(layouts, ...)[:top] of the exact scores, how many layouts were admitted), pruned.

    bound(lay) returns (floor, *state) or refuses the layout as a scoring function does (every
    refusal is found here, in the layouts' order, so the rejection records are `rank`'s);
    exact(lay, *state) returns (value, *payload), with value >= floor and no refusal. Layouts
    are scored exactly in the order of their floors, and the scoring stops once the next floor
    exceeds the top-th exact value: no layout left can enter the top (nor tie with it). Exact
    ties keep the layouts' order, as `rank`'s stable sort does. `refine(lay, *state)`, when
    given, is a tighter floor (>= bound's, <= the value), asked before the exact score: a
    layout whose refined floor exceeds the top-th is skipped."""
    order = {id(lay): i for i, lay in enumerate(layouts)}
    candidates = rank(layouts, bound, tie_break, rejections)
    best = []   # (value, tie-break, position in layouts, lay, payload), best first
    for floor, tie, lay, *state in candidates:
        if len(best) >= top:
            kth = best[top - 1][0]
            if floor > kth + PRUNE_MARGIN * abs(kth):
                break
            if refine is not None and refine(lay, *state) > kth + PRUNE_MARGIN * abs(kth):
                continue
        value, *payload = exact(lay, *state)
        bisect.insort(best, (value, tie, order[id(lay)], lay, payload), key=lambda x: x[:3])
    return [(value, tie, lay, *payload) for value, tie, _, lay, payload in best[:top]], len(candidates)

"""The summary block every command opens with: the answer to the command's question first
(fits or not, with the binding stage and shortfall; the times and rates it exists for), the
lower bound, the estimate and the prediction side by side where the record has them. A time
of a layout that does not fit always says so beside it."""

from . import units as u

DOES_NOT_FIT = "does not fit"


WIDTH = 100


def _wrap(text, first, rest):
    """text in lines of at most WIDTH columns, broken at spaces (Markdown joins them again:
    soft line breaks); a word longer than a line stays whole. Not textwrap: it imports `re`,
    which would cost every command its import."""
    lines, line, fresh = [], first, True
    for word in text.split():
        if not fresh and len(line) + 1 + len(word) > WIDTH:
            lines.append(line)
            line, fresh = rest, True
        line, fresh = (line + word if fresh else f"{line} {word}"), False
    return lines + [line]


def block(headline, lines):
    """The block's lines, each within WIDTH columns: a bold headline, then one bullet per line,
    then a blank line."""
    head = _wrap(f"**{headline}**", "", "")
    return [*head, *[x for line in lines for x in _wrap(line, "- ", "  ")], ""]


def times(estimate=None, bound=None, predicted=None, fits=True, unit=u.seconds):
    """'1.088 s estimate, 852.253 ms lower bound, 1.402 s predicted' of what the record has,
    with 'does not fit' beside them when the layout does not."""
    parts = [f"{unit(v)} {what}" for v, what in ((estimate, "estimate"), (bound, "lower bound"),
                                                  (predicted, "predicted")) if v is not None]
    return ", ".join(parts) + ("" if fits else f" ({DOES_NOT_FIT})")


def memory_headline(fits, stage, need, capacity, shortfall=None):
    where = f"stage {stage} needs" if stage is not None else "needs"
    if fits:
        return f"Fits: {where} {u.nbytes(need)} of {u.nbytes(capacity)} per device"
    short = shortfall if shortfall is not None else need - capacity
    return (f"Does not fit: {where} {u.nbytes(need)} of {u.nbytes(capacity)} per device, "
            f"short by {u.nbytes(short)}")

"""The summary block every command opens with: the answer to the command's question first
(fits or not, with the binding stage and shortfall; the times and rates it exists for), the
lower bound, the estimate and the prediction side by side where the record has them. A time
of a layout that does not fit always says so beside it."""

from . import units as u

DOES_NOT_FIT = "does not fit"


def block(headline, lines):
    """The block's lines: a bold headline, then one bullet per line, then a blank line."""
    return [f"**{headline}**", *[f"- {line}" for line in lines], ""]


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

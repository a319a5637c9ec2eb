"""Chip and rack power arithmetic from declared figures (`budget chip-power`; the book's chapter-4
energy section): voltage scaling, power density, a rack's card count and a phone's memory bus.

    dynamic power ratio  = (V_after / V_before)^2        (P_dynamic ~ alpha C V^2 f: only V changes)
    power density ratio  = power ratio / area ratio      (projected area)
    rack                 : cards N <= floor((P_budget - P_fixed) / P_card); a row of N cards draws
                           P_fixed + N P_card, within the budget and within a declared cooling limit
    phone bus            = channels x bits per channel x pin rate / 8 (bytes/s); a payload read over
                           it takes payload / bus seconds

Exact fractions throughout (floats beside them). Worked case: 0.85 V -> 0.55 V gives (11/17)^2 =
121/289; power x 3/4 on area x 3/5 gives density x 5/4; a 120 kW rack with 12 kW fixed and 1.2 kW
per card holds floor(108 / 1.2) = 90 cards, under a 40 kW cooling limit floor(28 / 1.2) = 23; four x16
LPDDR5X channels at 10.7 Gb/s per pin carry 4 x 16 x 10.7 / 8 = 85.6 GB/s.
"""

from fractions import Fraction
from math import floor

CHIP_POWER_CONVENTIONS = [
    "Declared figures only. Voltage: only the V^2 term of alpha C V^2 f changes (activity, capacitance and "
    "clock held), so it does not reproduce a paper's whole power change; density: the power ratio over the "
    "projected-area ratio.",
    "Rack: a linear power model, fixed power plus cards x power per card, against the declared budget and, "
    "when given, a declared cooling limit (not a thermal model). Phone bus: channels x bits x pin rate / 8, "
    "a peak transfer rate (no refresh, turnaround or efficiency), and a payload's read time at that peak.",
]


def _exact(f):
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def voltage(before, after):
    ratio = (after / before) ** 2
    return {"voltage_before": _exact(before), "voltage_after": _exact(after), "dynamic_power_ratio": _exact(ratio),
            "dynamic_power_ratio_decimal": float(ratio), "reduction_fraction": float(1 - ratio)}


def density(power_ratio, area_ratio):
    ratio = power_ratio / area_ratio
    return {"power_ratio": _exact(power_ratio), "area_ratio": _exact(area_ratio),
            "density_ratio": _exact(ratio), "density_ratio_decimal": float(ratio)}


def _cards_under(limit, fixed, per_card):
    return max(0, floor((limit - fixed) / per_card))


def rack(budget, fixed, per_card, cards=(), cooling=None):
    """kW figures as Fractions; rows for the declared card counts."""
    rows = []
    for n in cards:
        power = fixed + n * per_card
        rows.append({"cards": n, "power_kw": _exact(power), "power_kw_decimal": float(power),
                     "within_budget": power <= budget,
                     "within_cooling": None if cooling is None else power <= cooling})
    return {"budget_kw": _exact(budget), "fixed_kw": _exact(fixed), "per_card_kw": _exact(per_card),
            "max_cards": _cards_under(budget, fixed, per_card), "cooling_kw": None if cooling is None else _exact(cooling),
            "max_cards_under_cooling": None if cooling is None else _cards_under(cooling, fixed, per_card),
            "rows": rows}


def bus(channels, bits, pin_rate, payload_bytes=None):
    """pin_rate in bits/s per pin (a Fraction); the bus's bytes/s and a payload's read seconds."""
    per_channel = bits * pin_rate / 8
    total = channels * per_channel
    return {"channels": channels, "bits_per_channel": bits, "pin_rate_bits_per_s": _exact(pin_rate),
            "channel_bytes_per_s": _exact(per_channel), "bus_bytes_per_s": _exact(total),
            "payload_bytes": payload_bytes,
            "payload_read_s": None if payload_bytes is None else float(payload_bytes / total)}

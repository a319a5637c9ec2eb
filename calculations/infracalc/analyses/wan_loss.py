"""Loss that is not congestion on a long path (the book's chapter-7 WAN example): a Mathis TCP rate, an
ideal BBR-style goodput, a reliable stream repaired once per round trip, and the FEC repair a block needs.
Path figures are declared: RTT R (s), knee rate K (bits/s), independent loss probability p, MSS M (bytes),
a request of S bytes and a model time T_m.

    Mathis     rate = 8 M / (R sqrt(p)) bits/s        (Mathis et al. 1997, the bound without the constant C;
                                                       beside it C = 1.22, 0.87, 1.31, 0.93 times it)
    BBR ideal  BDP = K R / 8 bytes, cwnd = 2 BDP, goodput = (1 - p) K
    stream     n = ceil(S / M) packets, each lost independently per round; all delivered within r rounds
               with probability (1 - p^r)^n; E[rounds] = sum_r (1 - (1 - p^r)^n), the sum stopped at the
               first r whose probability reaches 1 - tail (a stated truncation);
               budget = R + T_m + 8 S / K, completion = budget + (rounds - 1) R
    FEC        k = ceil(S / symbol) data symbols; the least r repair symbols (from e) with
               P(losses among k + r <= r - e) >= target, for each declared extra tolerance e

Mathis is binary64 (sqrt(p) is irrational unless p is a square of a rational, then exact); everything
else is an exact rational, reported with its binary64 value.

Worked case: p = 1/4, R = 1/10 s, M = 1000 B: the Mathis rate is 8000 / (0.1 x 0.5) = 160,000 bits/s.
With n = 2 packets: P(both within 1 round) = (3/4)^2 = 9/16, within 2 rounds (15/16)^2 = 225/256;
a FEC block of k = 1 data symbol at target 9/10 needs r = 1 (r = 0: 3/4 short; r = 1: at most one of 2 lost,
1 - 1/16 = 15/16).
"""

import math
from fractions import Fraction

from ..splits import ceil_div

MATHIS_CONSTANTS = (("periodic_loss_every_ack", 1.22), ("periodic_loss_delayed_ack", 0.87),
                    ("random_loss_every_ack", 1.31), ("random_loss_delayed_ack", 0.93))


def _square_root(p):
    """sqrt(p) exactly when p is the square of a rational, else binary64."""
    n, d = math.isqrt(p.numerator), math.isqrt(p.denominator)
    if n * n == p.numerator and d * d == p.denominator:
        return Fraction(n, d)
    return float(p) ** 0.5


def mathis_bits_per_s(*, mss_bytes, rtt_s, loss):
    """8 M / (R sqrt(p)): exact when sqrt(p) is rational, else binary64."""
    root = _square_root(loss)
    if isinstance(root, Fraction):
        return Fraction(mss_bytes * 8) / rtt_s / root
    return float(mss_bytes * 8) / float(rtt_s) / root


def rounds_cdf(*, packets, loss, tail):
    """[P(all n delivered within r rounds) for r = 0, 1, ...] up to the first >= 1 - tail (at most 61 rounds)."""
    out = []
    for r in range(62):
        out.append((1 - loss ** r) ** packets)
        if out[-1] >= 1 - tail:
            break
    return out


def loss_tail(*, symbols, lost_at_most, loss):
    """P(at most `lost_at_most` of `symbols` lost), exact: sum_i C(N, i) p^i (1 - p)^(N - i), for 0 < p < 1.
    With p = a / b the terms are integers over b^N, each from the last:
    T(i + 1) = T(i) (N - i) a / ((i + 1) (b - a)), an exact division."""
    a, b = loss.numerator, loss.denominator
    term, total = (b - a) ** symbols, 0
    for i in range(min(lost_at_most, symbols) + 1):
        total += term
        term = term * (symbols - i) * a // ((i + 1) * (b - a))
    return Fraction(total, b ** symbols)


def repair_symbols(*, data, loss, target, extra):
    """The least r >= extra with P(losses among data + r <= r - extra) >= target. The probability never
    falls as r grows (one more symbol adds at most one loss, and one more loss is allowed), so the search
    doubles the step past `extra` until the target is met, then bisects: O(log r) exact tails, not r."""
    most = 10 * data + 100
    limit = max(most, extra)   # the largest r tried (r = extra always is)

    def meets(r):
        return loss_tail(symbols=data + r, lost_at_most=r - extra, loss=loss) >= target

    short, step = extra - 1, 1   # `short`: the largest r known to fall short (extra - 1: none tried yet)
    while not meets(min(short + step, limit)):
        if short + step >= limit:
            raise ValueError(f"no repair count reaches the target {target} within {most} symbols")
        short, step = short + step, 2 * step
    enough = min(short + step, limit)
    while enough - short > 1:
        mid = (short + enough) // 2
        short, enough = (short, mid) if meets(mid) else (mid, enough)
    return enough


def _exact(value):
    return {"exact": str(value), "float": float(value)}


def wan_loss(*, rtt_s, knee_bits_per_s, loss, mss_bytes, request_bytes, model_s, symbol_bytes, target, extras,
             tail):
    mathis = mathis_bits_per_s(mss_bytes=mss_bytes, rtt_s=rtt_s, loss=loss)
    request_bits = request_bytes * 8
    bdp = Fraction(knee_bits_per_s) * rtt_s / 8
    goodput = (1 - loss) * knee_bits_per_s
    packets = ceil_div(request_bytes, mss_bytes)
    serialization = Fraction(request_bits, knee_bits_per_s)
    budget = rtt_s + model_s + serialization
    cdf = rounds_cdf(packets=packets, loss=loss, tail=tail)
    expected_rounds = sum((1 - c for c in cdf), Fraction(0))
    p50 = next((r for r, c in enumerate(cdf) if c >= Fraction(1, 2)), None)
    p99 = next((r for r, c in enumerate(cdf) if c >= Fraction(99, 100)), None)
    expected = budget + (expected_rounds - 1) * rtt_s
    at_p99 = None if p99 is None else budget + (p99 - 1) * rtt_s
    data = ceil_div(request_bytes, symbol_bytes)
    fec = []
    for e in extras:
        r = repair_symbols(data=data, loss=loss, target=target, extra=e)
        fec.append({"tolerated_extra_losses": e, "data_symbols": data, "repair_symbols": r, "total_symbols": data + r,
                    "overhead_ratio": str(Fraction(r, data)), "overhead_ratio_float": float(Fraction(r, data)),
                    "block_recovery_probability": float(loss_tail(symbols=data + r, lost_at_most=r - e, loss=loss)),
                    "expected_losses_in_block": float((data + r) * loss),
                    "repair_over_expected_losses": float(Fraction(r) / ((data + r) * loss))})
    mathis_s = request_bits / mathis
    return {
        "rtt_s": str(rtt_s), "knee_bits_per_s": knee_bits_per_s, "loss_probability": str(loss),
        "bdp_bytes": str(bdp), "bdp_packets": float(bdp / mss_bytes),
        "mathis_bits_per_s": float(mathis), "mathis_mbit_per_s": float(mathis) / 10**6,
        "mathis_request_s": float(mathis_s), "mathis_fraction_of_knee": float(mathis / knee_bits_per_s),
        "mathis_with_constant": [{"case": name, "c": c, "mbit_per_s": float(mathis) * c / 10**6,
                                  "request_s": float(mathis_s) / c} for name, c in MATHIS_CONSTANTS],
        "bbr_cwnd_bytes": str(2 * bdp), "bbr_goodput_bits_per_s": str(goodput),
        "bbr_goodput_mbit_per_s": float(goodput) / 10**6, "bbr_request_s": float(Fraction(request_bits) / goodput),
        "bbr_over_mathis": float(goodput / mathis),
        "packets": packets, "expected_losses": float(packets * loss), "serialization_s": float(serialization),
        "serial_budget_s": str(budget), "serial_budget_s_float": float(budget),
        "rounds_tail": str(tail), "expected_rounds": float(expected_rounds), "p50_rounds": p50, "p99_rounds": p99,
        "expected_completion_s": float(expected), "p99_completion_s": None if at_p99 is None else float(at_p99),
        "expected_over_budget": float(expected / budget),
        "p99_over_budget": None if at_p99 is None else float(at_p99 / budget),
        "rounds": [{"rounds": r, "all_delivered_probability": float(c)} for r, c in enumerate(cdf)],
        "fec_symbol_bytes": symbol_bytes, "fec_target": str(target), "fec": fec,
    }


WAN_LOSS_CONVENTIONS = [
    "Declared path: RTT, knee rate, independent loss probability p, MSS, request size and model time (the book "
    "takes them from its author's path measurements; the measured rates are not inputs here).",
    "Mathis steady-state TCP rate 8 MSS / (RTT sqrt(p)) bits/s (the bound without the constant; the C = 1.22, "
    "0.87, 1.31, 0.93 rows of Mathis et al. beside it), binary64. BBR ideal: paced at the knee, cwnd = 2 BDP "
    "(BBR draft's cwnd gain 2), goodput (1 - p) x knee.",
    "Reliable stream: ceil(size / MSS) packets lost independently, one ideal selective repair per round trip "
    "(repairs can be lost); completion = RTT + model time + size / knee + (rounds - 1) RTT. No window "
    "reduction, slow start or RTO: a bound in TCP's favour. E[rounds] sums 1 - P(done within r) up to the "
    "first r with P >= 1 - tail (--rounds-tail, a stated truncation).",
    "FEC: k data symbols + r repair symbols recover when at most r - e are lost; the least such r whose "
    "binomial probability reaches the target, exact. Symbol size and block layout do not change the time.",
]

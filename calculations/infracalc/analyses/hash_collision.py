"""ECMP hash collisions: n equal flows each hashed uniformly and independently onto one of m equal uplinks
(the book's chapter-7 model of one leaf's cross-spine flows), and per-packet spraying as the alternative.
Exact rationals; no simulation.

The number of assignments in which every uplink carries at most L flows is A(L) = n! [x^n] T_L(x)^m with
T_L(x) = sum_{j<=L} x^j / j!, so P(max <= L) = A(L) / m^n. A(L) is computed in integers:

    3 (L + 1) > n (at most two uplinks can exceed L), by inclusion-exclusion:
        A(L) = m^n - m S1 + C(m, 2) S2,   S1 = sum_{a>L} C(n, a) (m - 1)^(n - a),
        S2 = sum_{a>L} C(n, a) sum_{b>L, a+b<=n} C(n - a, b) (m - 2)^(n - a - b)
    otherwise, by the power-series recurrence for T^m (J.C.P. Miller), q_k = k! [x^k] T_L^m:
        q_k = m^k for k <= L,   q_k = (1 / k) sum_{j=1}^{L} ((m + 1) j - k) C(k, j) q_{k-j},   A(L) = q_n
        (the same q_k for L < k <= 2L + 1, where at most one uplink can exceed L: m^k - m S1 at n = k)

    E[max] = sum_{L=0}^{n-1} (1 - P(max <= L)),   p99 = the least L with P(max <= L) >= 99/100,
    P(no collision) = m! / (m - n)! / m^n (0 when n > m),   E[empty uplinks] = m (1 - 1/m)^n,
    effective uplinks = n / E[max],   fraction of the nominal cut = (n / m) / E[max]

(every flow limited to the busiest uplink's fair share, the idle capacity unusable). Spraying: the message
striped packet by packet over the declared paths (`packet_reorder`), against one path carrying it all.

Worked case: n = 2 flows on m = 2 uplinks: 4 assignments, 2 with one flow each: P(max <= 1) = 1/2,
P(max <= 2) = 1; E[max] = (1 - 0) + (1 - 1/2) = 3/2; no collision 2!/0!/4 = 1/2; empty 2 (1/2)^2 = 1/2;
effective uplinks 2 / (3/2) = 4/3, fraction (2/2) / (3/2) = 2/3.
"""

from fractions import Fraction
from math import perm
from operator import add, mul

MAX_FLOWS = 128       # the exact distribution costs about n^2 L: 128 flows take ~11 ms
MAX_UPLINKS = 65536


def _miller_table(binomials, m, most):
    """((m + 1) j - k) C(k, j) for k <= n, 1 <= j <= most (the largest L the recurrence runs for), from the
    binomials C(k, j): the recurrence's coefficients, shared by every L."""
    return [[((m + 1) * j - k) * c for j, c in enumerate(row[1:most + 1], 1)] for k, row in enumerate(binomials)]


def _bounded_count(n, m, L, table, binomials, one):
    """q_n of the recurrence: assignments of n flows with every uplink at most L (q_k = m^k for k <= L;
    for L < k <= 2L + 1 at most one uplink can exceed L, and q_k is `_one_above`'s count, the
    recurrence's value computed in k - L products instead of L)."""
    q = [m ** k for k in range(L + 1)]
    q += [_one_above(k, m, L, binomials, one) for k in range(L + 1, min(2 * L + 1, n) + 1)]
    for k in range(len(q), n + 1):
        q.append(sum(map(mul, table[k], q[k - 1:k - L - 1:-1])) // k)   # j = 1..L (map stops at L)
    return q[n]


def _one_above(n, m, L, binomials, one):
    """m^n - m S1, S1 = sum_{a>L} C(n, a) (m-1)^(n-a): the assignments with every uplink at most L when at
    most one can exceed it (2 (L + 1) > n); one: the powers of m - 1."""
    return m ** n - m * sum(map(mul, binomials[n][L + 1:], reversed(one[:n - L])))


def _two_above(n, m, L, binomials, one, two):
    """Assignments with every uplink at most L when at most two can exceed it (3 (L + 1) > n), by inclusion-
    exclusion: m^n - m S1 + C(m, 2) S2 (`_one_above` for the first two terms),
    S2 = sum_{a>L} C(n, a) sum_{b>L, a+b<=n} C(n-a, b) (m-2)^(n-a-b); one, two: the powers of m - 1, m - 2."""
    s2 = sum(binomials[n][a] * sum(map(mul, binomials[n - a][L + 1:], reversed(two[:n - a - L])))
             for a in range(L + 1, n - L))
    return _one_above(n, m, L, binomials, one) + m * (m - 1) // 2 * s2


def pascal_rows(n):
    """[[C(k, j) for j <= k] for k <= n], each row from the one above: C(k, j) = C(k-1, j-1) + C(k-1, j)
    (additions instead of a fresh math.comb per entry)."""
    rows = [[1]]
    for _ in range(n):
        above = rows[-1]
        rows.append([1, *map(add, above, above[1:]), 1])
    return rows


def max_load_counts(flows, uplinks):
    """[A(L) for L = 0..n]: assignments with every uplink carrying at most L of the n flows."""
    n, m = flows, uplinks
    counts = [0] * (n + 1)
    binomials = pascal_rows(n)
    one, two = ([(m - d) ** e for e in range(n + 1)] for d in (1, 2))
    table = None
    for L in range(-(-n // m), n + 1):
        if 3 * (L + 1) > n:
            counts[L] = _two_above(n, m, L, binomials, one, two)
        else:
            table = table or _miller_table(binomials, m, n // 3 - 1)   # 3 (L + 1) <= n
            counts[L] = _bounded_count(n, m, L, table, binomials, one)
    return counts


def _exact(value):
    return str(value), float(value)


def hash_collision(*, flows, uplinks):
    n, m = flows, uplinks
    total = m ** n
    counts = max_load_counts(n, m)   # integers over m^n: one reduction per printed rational
    expected = Fraction(sum(total - a for a in counts[:n]), total)
    ideal = Fraction(n, m)
    no_collision = Fraction(perm(m, n), total)   # m (m-1) ... (m-n+1) / m^n; 0 when n > m
    empty = m * (1 - Fraction(1, m)) ** n
    rows, previous = [], 0
    for L, a in enumerate(counts):
        if a != previous:
            p = Fraction(a - previous, total)
            rows.append({"max_load": L, "probability": str(p), "probability_float": float(p),
                         "cumulative": str(Fraction(a, total))})
        previous = a
    out = {"flows": n, "uplinks": m, "ideal_load_per_uplink": str(ideal)}
    for name, value in (("expected_max_load", expected), ("no_collision_probability", no_collision),
                        ("expected_empty_uplinks", empty), ("effective_uplinks", n / expected),
                        ("effective_fraction_of_nominal_cut", ideal / expected)):
        out[name], out[name + "_float"] = _exact(value)
    out["expected_max_over_ideal"] = float(expected / ideal)
    out["p99_max_load"] = next(L for L, a in enumerate(counts) if 100 * a >= 99 * total)
    out["max_load_distribution"] = rows
    return out


def spray(*, payload_bytes, packet_bytes, path_delays_ns, path_rate):
    """The message sprayed over the paths (`packet_reorder`, no loss) against one path carrying it all:
    serial = P / r + min delay; reorder wait = completion - (P / (k r) + max delay)."""
    from .packet_reorder import packet_reorder

    r = packet_reorder(payload_bytes=payload_bytes, packet_bytes=packet_bytes, path_delays_ns=path_delays_ns,
                       path_rate=path_rate, detail=False)
    completion = Fraction(r["completion_ns"])
    serial = Fraction(payload_bytes * 10**9, path_rate) + min(path_delays_ns)
    ideal = Fraction(payload_bytes * 10**9, len(path_delays_ns) * path_rate) + max(path_delays_ns)
    return {"paths": len(path_delays_ns), "payload_bytes": payload_bytes, "packets": r["packets"],
            "first_ordered_delivery_ns": r["first_delivery_ns"], "completion_ns": r["completion_ns"],
            "peak_retained_bytes": r["peak_retained_bytes"], "peak_retained_packets": r["peak_retained_packets"],
            "retained_area_byte_ns": r["retained_area_byte_ns"], "single_path_serial_ns": str(serial),
            "spray_speedup": str(serial / completion), "reorder_wait_ns": str(completion - ideal)}


HASH_COLLISION_CONVENTIONS = [
    "ECMP teaching model: n equal flows, each hashed independently and uniformly onto one of m equal uplinks "
    "(not a switch's hash function or a measured traffic mix); the flows are one leaf's flows that must cross "
    "the spine (m = its uplinks).",
    "Exact distribution of the maximum load: A(L) = n! [x^n] (sum_{j<=L} x^j/j!)^m assignments with every "
    "uplink at most L, in integers (inclusion-exclusion over the uplinks above L when at most two can be, 3 (L + 1) > n; Miller's power recurrence below); "
    f"at most {MAX_FLOWS} flows. Effective cut = ideal load / E[max]: every flow held to the busiest uplink's "
    "fair share, the other uplinks' idle capacity unused.",
    "Spraying (with --path-delays): the `packet-reorder` model, round-robin packets over independent serial "
    "paths, no loss, in-order release; the single-path counterfactual carries the whole message on one path "
    "with the shortest delay; reorder wait = completion - (message / all paths + the longest delay).",
]

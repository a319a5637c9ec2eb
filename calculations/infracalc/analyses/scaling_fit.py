"""A loss law L(N, D) = E + A (N/N0)^-alpha + B (D/D0)^-beta fitted to declared training points by a
finite exponent search (the book's chapter-3 experiment 3-8).

For every declared pair (alpha, beta) of the grid, in the order given, the fit points (split "fit")
give the design rows [1, (N/N0)^-alpha, (D/D0)^-beta] and their losses the targets; (E, A, B) is the
least-squares solution by a three-column modified Gram-Schmidt QR and back substitution. A pair is
rejected when the design is rank-deficient (a column's residual norm <= 1e-10 x its norm) or the
coefficients leave E >= 0, A > 0, B > 0 (an E in [-64 ulp(max fit loss), 0) is set to 0 first). The
pair of least sum of squared fit residuals wins (the first on a tie). Holdout points never enter the
fit: they are predicted, and RMSE = sqrt(sum of holdout residual^2 / holdout count). Residual =
predicted - observed; a point is outside the fit box when its N or D lies outside the fit points' range.

Everything is binary64 in one stated order, so the result is exactly reproducible: each power term is
c x (x / x0) ** (-e); every sum is left to right (`summation.plain_sum`, whatever the Python version),
or compensated (`summation.compensated_sum`, what Python 3.12+'s built-in sum() does) when asked; a
dot product is the sum of x_i y_i; the loss is (E + A-term) + B-term. It is the book calculator's
procedure (bojieli/ai-infra-book:calculations/src/infra_calc/topics/scaling_law.py, `fit`), so its
figures are equal to the last bit, not merely close.

Worked case (by hand): points L = 1 + (N/1)^-1/2 + (D/1)^-1/2 at N, D in {1, 4} (four fit points:
L = 3, 2.5, 2.5, 2) on the one-pair grid (1/2, 1/2) give E = A = B = 1 with zero residuals.
"""

import math

from ..summation import compensated_sum, plain_sum

SUMS = {"plain": plain_sum, "compensated": compensated_sum}


def power_term(coefficient, value, reference, exponent):
    """c x (value / reference) ** (-exponent), in that order."""
    return coefficient * (value / reference) ** (-exponent)


def law_loss(law, n, d):
    """E + A (N/N0)^-alpha + B (D/D0)^-beta, added left to right."""
    return (law["E"] + power_term(law["A"], n, law["N0"], law["alpha"])
            + power_term(law["B"], d, law["D0"], law["beta"]))


def orthogonalize(q, v, add=plain_sum):
    """One modified Gram-Schmidt step: v against the orthonormal columns q. (r column [r_0j .. r_jj],
    q_j), or None when v is (numerically) dependent on q: its residual norm <= 1e-10 x its norm."""
    norm = math.sqrt(add(x * x for x in v))
    r = []
    for qi in q:
        r.append(add(x * y for x, y in zip(qi, v)))
        v = [x - r[-1] * y for x, y in zip(v, qi)]
    r.append(math.sqrt(add(x * x for x in v)))
    if r[-1] <= 1e-10 * norm:
        return None
    return r, [x / r[-1] for x in v]


def back_substitute(r, rhs, add=plain_sum):
    """x of R x = rhs for the upper-triangular R given by its columns r[j] = [r_0j .. r_jj]."""
    out = [0.0] * len(rhs)
    for i in reversed(range(len(rhs))):
        out[i] = (rhs[i] - add(r[j][i] * out[j] for j in range(i + 1, len(rhs)))) / r[i][i]
    return out


def least_squares(columns, targets, add=plain_sum):
    """The coefficients minimising |sum_j c_j column_j - targets| (QR by modified Gram-Schmidt, then
    back substitution); None when a column is dependent on the earlier ones."""
    q, r = [], []
    for v in columns:
        step = orthogonalize(q, v, add)
        if step is None:
            return None
        r.append(step[0])
        q.append(step[1])
    return back_substitute(r, [add(x * y for x, y in zip(column, targets)) for column in q], add)


def fit(points, grid, n0, d0, summation="plain"):
    """points: [{id, split ('fit' | 'holdout'), N, D, loss}]; grid: [(alpha, beta)] in search order;
    summation: 'plain' or 'compensated' (SUMS). The law is None when no pair is admissible (the
    candidates and rejections are still returned).

    The design's first column (ones) and its alpha column are orthogonalized once per alpha, not once
    per pair: the same operations on the same values, so the same bits as `least_squares` per pair."""
    add = SUMS[summation]
    train = [p for p in points if p["split"] == "fit"]
    losses = [p["loss"] for p in train]
    tolerance = 64 * math.ulp(max(losses))
    ones = orthogonalize([], [1] * len(train), add)
    n_cols, d_cols, prefixes = {}, {}, {}
    candidates, rejected = [], []
    for alpha, beta in grid:
        if alpha not in n_cols:
            n_cols[alpha] = [power_term(1, p["N"], n0, alpha) for p in train]
            second = None if ones is None else orthogonalize([ones[1]], n_cols[alpha], add)
            prefixes[alpha] = None if second is None else ([ones[0], second[0]], [ones[1], second[1]])
        if beta not in d_cols:
            d_cols[beta] = [power_term(1, p["D"], d0, beta) for p in train]
        prefix = prefixes[alpha]
        third = None if prefix is None else orthogonalize(prefix[1], d_cols[beta], add)
        if third is None:
            rejected.append({"alpha": alpha, "beta": beta, "reason": "rank-deficient design"})
            continue
        q = prefix[1] + [third[1]]
        e, a, b = back_substitute(prefix[0] + [third[0]], [add(x * y for x, y in zip(c, losses)) for c in q], add)
        if -tolerance <= e < 0:
            e = 0.0
        if e < 0 or a <= 0 or b <= 0:
            rejected.append({"alpha": alpha, "beta": beta, "reason": "coefficients violate E >= 0, A > 0, B > 0"})
            continue
        # law_loss on the fit points: A x (N/N0)^-alpha is A x the design's column value (1 x t = t exactly)
        sse = add(((e + a * n) + b * d - y) ** 2 for n, d, y in zip(n_cols[alpha], d_cols[beta], losses))
        candidates.append({"alpha": alpha, "beta": beta, "E": e, "A": a, "B": b, "fit_sse": sse})
    best = min(candidates, key=lambda c: c["fit_sse"]) if candidates else None
    box = {k: [min(p[k] for p in train), max(p[k] for p in train)] for k in ("N", "D")}
    law = None if best is None else dict({k: best[k] for k in ("E", "A", "B", "alpha", "beta")}, N0=n0, D0=d0)
    out = {"law": law, "fit_sse": None if best is None else best["fit_sse"], "fit_box": box,
           "candidates": candidates, "rejected": rejected}
    if best is None:
        return dict(out, predictions=[], holdout_rmse=None)
    predictions = []
    for p in points:
        predicted = law_loss(law, p["N"], p["D"])
        predictions.append({"id": p["id"], "split": p["split"], "N": p["N"], "D": p["D"], "loss": p["loss"],
                            "predicted_loss": predicted, "residual": predicted - p["loss"],
                            "outside_fit_box": any(not box[k][0] <= p[k] <= box[k][1] for k in box)})
    held = [r["residual"] for r in predictions if r["split"] == "holdout"]
    rmse = math.sqrt(add(x ** 2 for x in held) / len(held)) if held else None
    return dict(out, predictions=predictions, holdout_rmse=rmse)


SCALING_FIT_CONVENTIONS = [
    "Declared points (N, D, loss, split); the law L = E + A (N/N0)^-alpha + B (D/D0)^-beta. For each declared "
    "exponent pair in order, (E, A, B) is the least-squares solution on the fit points (modified Gram-Schmidt "
    "QR); pairs with E < 0, A <= 0, B <= 0 or a dependent design are rejected; the least fit SSE wins (first "
    "on a tie). Holdout points are predicted, never fitted: RMSE over them. Residual = predicted - observed.",
    "Binary64 in one stated order (power terms c x (x / x0) ** -e; sums left to right, or with --summation "
    "compensated as Python 3.12+'s sum() adds floats), the book calculator's procedure, so every digit is "
    "reproducible; a finite grid search, not a global nonlinear fit, and no uncertainty interval.",
]

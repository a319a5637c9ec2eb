"""Scaling-law `budget` kinds (scaling-fit, scaling-lifecycle): arguments and run.

Each `_<kind>_arguments(q)` adds the kind's options, each `_<kind>(args)` returns its result record;
cli/budget.py lists the kinds and dispatches to them (a '-' in a kind's name is '_' here).
Numbers are read as binary64 (the fit is a floating-point procedure), grids as exact decimals.
"""

import argparse
import math
from fractions import Fraction

from . import common


def _real(text, what="a positive number such as 1e9 or 2.5"):
    try:
        value = float(text) if len(text) <= 40 else math.nan
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be {what}, got '{text}'")
    return value


def _price(text):
    try:
        value = float(text) if len(text) <= 40 else math.nan
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a non-negative price such as 1e-18 or 0, got '{text}'")
    return value


def _reals(text):
    """A comma list of positive numbers: 1e8,5e8,1e9."""
    return [_real(t) for t in text.split(",")] if len(text) <= 400 else _real("x" * 41)


def _calls(text):
    """A comma list of non-negative whole call counts: 0,1000,1e6."""
    out = []
    for t in text.split(",")[:100]:
        try:
            value = Fraction(t) if len(t) <= 30 else None
        except (ValueError, ZeroDivisionError):
            value = None
        if value is None or value < 0 or value.denominator != 1 or value > 10**18:
            raise argparse.ArgumentTypeError(f"must be whole call counts such as 0,1000,1e6, got '{text}'")
        out.append(int(value))
    return out


def _point(text):
    """ID:SPLIT:N:D:LOSS, split fit or holdout."""
    parts = text.split(":")
    if len(parts) != 5 or not parts[0] or parts[1] not in ("fit", "holdout"):
        raise argparse.ArgumentTypeError(f"must be ID:SPLIT:N:D:LOSS with SPLIT fit or holdout "
                                         f"(1b11b51b5:fit:1096300000:1.5e9:3.680017), got '{text}'")
    return {"id": parts[0], "split": parts[1], "N": _real(parts[2]), "D": _real(parts[3]), "loss": _real(parts[4])}


def _exponents(text):
    """START:STOP:STEP (inclusive, exact decimals) or a comma list: 0.1:0.6:0.05, 0.4,0.5,0.6."""
    try:
        if ":" in text:
            start, stop, step = (Fraction(t) for t in text.split(":"))
            if step <= 0 or stop < start or (stop - start) / step > 1000:
                raise ValueError
            values = [start + k * step for k in range(int((stop - start) / step) + 1)]
        else:
            values = [Fraction(t) for t in text.split(",")]
    except (ValueError, ZeroDivisionError):
        values = []
    if not values or len(text) > 200 or any(not 0 < v <= 10 for v in values):
        raise argparse.ArgumentTypeError(f"must be START:STOP:STEP or a comma list of exponents in (0, 10] "
                                         f"(0.1:0.6:0.05), got '{text}'")
    return [float(v) for v in values]


def _policy(text):
    """NAME:EXPONENT (N grows as budget^EXPONENT from the first budget's optimum)."""
    name, _, value = text.rpartition(":")
    try:
        exponent = float(value) if len(value) <= 30 else math.nan
    except ValueError:
        exponent = math.nan
    if not name or not 0 < exponent < 1:
        raise argparse.ArgumentTypeError(f"must be NAME:EXPONENT with 0 < EXPONENT < 1 (Chinchilla:0.5), got '{text}'")
    return name, exponent


def _fit_arguments(q):
    q.add_argument("--point", type=common.as_given(_point), action="append", required=True,
                   metavar="ID:SPLIT:N:D:LOSS",
                   help="one training point: parameters N, tokens D, loss, split fit or holdout; repeatable")
    q.add_argument("--alpha", type=common.as_given(_exponents), required=True, metavar="GRID",
                   help="the exponent grid of N: START:STOP:STEP or a comma list (0.1:0.6:0.05)")
    q.add_argument("--beta", type=common.as_given(_exponents), required=True, metavar="GRID",
                   help="the exponent grid of D, searched inside each alpha (0.1:0.6:0.05)")
    q.add_argument("--n0", type=_real, default=1e9, help="reference parameters N0 (default 1e9)")
    q.add_argument("--d0", type=_real, default=1e10, help="reference tokens D0 (default 1e10)")
    q.add_argument("--summation", choices=("plain", "compensated"), default="plain",
                   help="order of the fit's float sums: left to right (default), or compensated as Python 3.12+'s "
                        "built-in sum() adds floats (the book's lifecycle files were written so)")


def _fitted(args):
    from ..analyses.scaling_fit import fit
    from ..errors import UserError

    points = [_point(t) for t in args.point]
    ids = [p["id"] for p in points]
    if len(set(ids)) != len(ids):
        raise UserError("--point ids must be unique")
    if sum(p["split"] == "fit" for p in points) < 4:
        raise UserError("the fit needs at least four --point ...:fit:... points (three coefficients)")
    grid = [(a, b) for a in _exponents(args.alpha) for b in _exponents(args.beta)]
    return fit(points, grid, args.n0, args.d0, args.summation)


def _scaling_fit_arguments(q):
    _fit_arguments(q)


def _scaling_fit(args):
    return _fitted(args)


def _scaling_lifecycle_arguments(q):
    _fit_arguments(q)
    q.add_argument("--target-loss", type=_real, required=True, metavar="L", help="the loss every candidate must reach")
    q.add_argument("--sizes", type=_reals, required=True, metavar="N[,N...]", help="candidate parameter counts")
    q.add_argument("--input-tokens", type=common.positive_int, required=True, metavar="P",
                   help="input tokens of one call")
    q.add_argument("--decode-steps", type=int, required=True, metavar="G'",
                   help="decode steps of one call (G returned tokens are G - 1 steps after the input pass)")
    q.add_argument("--train-price", type=_price, required=True, metavar="C", help="cost per training FLOP")
    q.add_argument("--prefill-price", type=_price, default=None, metavar="C",
                   help="cost per input FLOP (default: the training price)")
    q.add_argument("--decode-price", type=_price, default=None, metavar="C",
                   help="cost per decode FLOP (default: the training price)")
    q.add_argument("--setup-cost", type=_price, default=0, metavar="C", help="a fixed upfront cost (default 0)")
    q.add_argument("--calls", type=_calls, required=True, metavar="C[,C...]",
                   help="call counts at which to name the cheapest candidate (0,1000,1e6)")
    q.add_argument("--lifetime-calls", type=_calls, default=None, metavar="C",
                   help="one lifetime's calls: each row's total cost and the cheapest size over it")
    q.add_argument("--budget", type=_reals, default=None, metavar="FLOPS[,...]",
                   help="training budgets: the continuous compute-optimal N, D of each (6 N D = budget)")
    q.add_argument("--policy", type=common.as_given(_policy), action="append", default=None,
                   metavar="NAME:EXPONENT", help="an allocation policy N ~ budget^EXPONENT from the first budget's "
                                                 "optimum (needs --budget); repeatable")


def _scaling_lifecycle(args):
    from ..analyses.scaling_lifecycle import lifecycle
    from ..errors import UserError

    if args.decode_steps < 0:
        raise UserError(f"--decode-steps must be 0 or more, got {args.decode_steps}")
    if args.policy and not args.budget:
        raise UserError("--policy needs --budget (the first budget's optimum is the policies' anchor)")
    if args.lifetime_calls is not None and len(args.lifetime_calls) != 1:
        raise UserError("--lifetime-calls takes one count")
    fitted = _fitted(args)
    if fitted["law"] is None:
        raise UserError("no exponent pair of the grid gives E >= 0, A > 0, B > 0; widen --alpha/--beta")
    prices = {"train": args.train_price, "setup": args.setup_cost,
              "prefill": args.train_price if args.prefill_price is None else args.prefill_price,
              "decode": args.train_price if args.decode_price is None else args.decode_price}
    out = lifecycle(law=fitted["law"], box=fitted["fit_box"], sizes=args.sizes, target_loss=args.target_loss,
                    prices=prices, input_tokens=args.input_tokens, decode_steps=args.decode_steps,
                    call_counts=args.calls, lifetime_calls=None if args.lifetime_calls is None else args.lifetime_calls[0],
                    budgets=args.budget or (), policies=[_policy(t) for t in args.policy or ()])
    return dict({"law": fitted["law"], "fit_sse": fitted["fit_sse"], "holdout_rmse": fitted["holdout_rmse"],
                 "fit_box": fitted["fit_box"], "predictions": fitted["predictions"]}, **out)

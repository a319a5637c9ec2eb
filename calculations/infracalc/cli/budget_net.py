"""The network `budget` kinds of chapters 6 and 7 (periodic-queue, feedback-queue, ...): arguments and run.

Each `_<kind>_arguments(q)` adds the kind's options, each `_<kind>(args)` returns its result
record; cli/budget.py lists the kinds and dispatches to them (a '-' in a kind's name is '_' here).
"""

import argparse
from fractions import Fraction

_BYTE_RATES = (("TB/s", 10**12), ("GB/s", 10**9), ("MB/s", 10**6), ("KB/s", 10**3), ("B/s", 1))


def byte_rate(text):
    """A whole number of bytes/s, exact: 50GB/s, 40e9, 0 (zero allowed: an idle source)."""
    unit, factor = next(((u, f) for u, f in _BYTE_RATES if text.endswith(u)), ("", 1))
    try:
        value = Fraction(text[:len(text) - len(unit)]) * factor if len(text) <= 40 else None
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or value.denominator != 1 or not 0 <= value <= 10**18:
        raise argparse.ArgumentTypeError(f"must be a whole number of bytes/s up to 10^18 such as 50GB/s or 4e10, "
                                         f"got '{text}'")
    return int(value)


def _ns(text):
    from .budget import exact_ns

    return exact_ns(text)


def _job(text):
    """PERIOD:ON:OFFSET:RATE: 100ms:20ms:0ms:40GB/s."""
    parts = text.split(":")
    try:
        if len(parts) != 4:
            raise argparse.ArgumentTypeError(text)
        period, on, offset = (_ns(p) for p in parts[:3])
        rate = byte_rate(parts[3])
        if not 0 < on <= period:
            raise argparse.ArgumentTypeError(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be PERIOD:ON:OFFSET:RATE with 0 < ON <= PERIOD "
                                         f"(100ms:20ms:0ms:40GB/s), got '{text}'")
    return period, on, offset, rate


def _capacity(q):
    q.add_argument("--capacity", type=byte_rate, required=True, metavar="R",
                   help="the shared link's service rate in bytes/s (50GB/s)")


def _queue_limits(q):
    q.add_argument("--initial-queue", type=byte_count_text, default=0, metavar="BYTES",
                   help="queue at time 0 (256KiB; default 0)")
    q.add_argument("--buffer", type=byte_count_text, default=None, metavar="BYTES",
                   help="finite buffer: fluid beyond it is dropped (default unbounded)")


def byte_count_text(text):
    """A non-negative byte count: 0, 262144, 256KiB."""
    from .budget import byte_count

    return byte_count(text)


def _periodic_queue_arguments(q):
    q.add_argument("--job", dest="jobs", type=_checked_job, action="append", required=True,
                   metavar="PERIOD:ON:OFFSET:RATE",
                   help="a periodic demand: sends RATE during [k PERIOD + OFFSET, + ON) (repeat for each job)")
    _capacity(q)
    q.add_argument("--window", type=_ns, default=None, metavar="T",
                   help="observation window from 0 (default: the least common multiple of the periods)")
    _queue_limits(q)


def _checked_job(text):
    _job(text)
    return text


def _limits(args):
    from ..errors import UserError

    if args.buffer is not None and args.initial_queue > args.buffer:
        raise UserError(f"--initial-queue {args.initial_queue:,} exceeds --buffer {args.buffer:,}")
    if not args.capacity:
        raise UserError("--capacity must be positive")


def _periodic_queue(args):
    from ..analyses.fluid_queue import periodic_queue
    from ..errors import UserError

    _limits(args)
    if args.window == 0:
        raise UserError("--window must be positive")
    try:
        return periodic_queue(jobs=[_job(j) for j in args.jobs], capacity=args.capacity, window_ns=args.window,
                              initial_bytes=args.initial_queue, buffer_bytes=args.buffer)
    except ValueError as e:
        raise UserError(str(e))


def _feedback_queue_arguments(q):
    q.add_argument("--offered", type=byte_rate, required=True, metavar="R", help="arrival rate until feedback (80GB/s)")
    q.add_argument("--reduced", type=byte_rate, required=True, metavar="R",
                   help="arrival rate after the feedback (40GB/s; 0 = stop)")
    _capacity(q)
    q.add_argument("--feedback", type=_ns, required=True, metavar="T", help="feedback delay from 0 (20us)")
    q.add_argument("--after-feedback", type=_ns, required=True, metavar="T", help="observed time after it (100us)")
    _queue_limits(q)


def _feedback_queue(args):
    from ..analyses.fluid_queue import feedback_queue
    from ..errors import UserError

    _limits(args)
    if not args.feedback or not args.after_feedback:
        raise UserError("--feedback and --after-feedback must be positive")
    return feedback_queue(offered=args.offered, reduced=args.reduced, capacity=args.capacity,
                          feedback_ns=args.feedback, after_ns=args.after_feedback, initial_bytes=args.initial_queue,
                          buffer_bytes=args.buffer)

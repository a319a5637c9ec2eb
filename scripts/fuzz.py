#!/usr/bin/env python3
"""Fuzz the command line against the error contract (tests/fuzz.py): a larger
sample than the unit tests run. Prints each breach and a summary; exit 1 on any.

    python3 scripts/fuzz.py [--seed N] [--count N] [--limit SECONDS]
                            [--cases N] [--cwd N] [--signals N] [--command NAME ...]

Besides --count argument vectors (mutated model, device and routing files, nested
fields included), it runs --cases mutated validation case files, --cwd vectors run
in an empty working directory and in one full of look-alikes of the bundled ids
(outputs compared), and --signals writes interrupted by SIGTERM or SIGHUP.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import fuzz  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=12)
    p.add_argument("--count", type=int, default=5000)
    p.add_argument("--limit", type=float, default=5.0, help="seconds allowed per call (default 5)")
    p.add_argument("--cases", type=int, default=1000, help="mutated validation case files (default 1000)")
    p.add_argument("--cwd", type=int, default=300, help="working-directory comparisons (default 300)")
    p.add_argument("--signals", type=int, default=40, help="interrupted writes (default 40)")
    p.add_argument("--command", action="append", default=None, metavar="NAME",
                   help="draw the vectors from this command only (repeatable; e.g. budget, whose ~85 kinds "
                        "get one vector in 20 otherwise)")
    args = p.parse_args()
    unknown = sorted(set(args.command or ()) - set(fuzz.cli.COMMANDS))
    if unknown:
        p.error(f"unknown command {', '.join(unknown)}; choose from {', '.join(sorted(fuzz.cli.COMMANDS))}")
    breaches = 0
    for what, count, job in (
            ("vectors", args.count, lambda: fuzz.run(args.seed, args.count, args.limit, report=print, commands=args.command)),
            ("case files", args.cases, lambda: fuzz.fuzz_cases(args.seed, args.cases, report=print)),
            ("working-directory runs", args.cwd,
             lambda: fuzz.cwd_independent(args.seed, args.cwd, args.limit, report=print)),
            ("interrupted writes", args.signals, lambda: fuzz.signal_writes(args.seed, args.signals, report=print))):
        if not count:
            continue
        t0 = time.perf_counter()
        clean, failures = job()
        breaches += len(failures)
        print(f"fuzz: seed {args.seed}: {clean} of {count} {what} clean, {len(failures)} breaches, "
              f"{time.perf_counter() - t0:.1f} s")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())

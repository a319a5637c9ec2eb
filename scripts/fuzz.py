#!/usr/bin/env python3
"""Fuzz the command line against the error contract (tests/fuzz.py): a larger
sample than the unit tests run. Prints each breach and a summary; exit 1 on any.

    python3 scripts/fuzz.py [--seed N] [--count N] [--limit SECONDS]
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
    args = p.parse_args()
    t0 = time.perf_counter()
    clean, failures = fuzz.run(args.seed, args.count, args.limit, report=print)
    print(f"fuzz: seed {args.seed}: {clean} of {args.count} vectors clean, {len(failures)} breaches, "
          f"{time.perf_counter() - t0:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

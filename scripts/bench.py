#!/usr/bin/env python3
"""Start-up benchmark: each subcommand in a fresh process, median of N runs.

Prints the bare interpreter start (`python3 -c pass`), each command's wall
time, and the command's own share (imports plus work) over the bare start.
The budget is ~30 ms of own share per command. Uses the running interpreter
directly, so a version-manager shim does not distort the figures.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALC = os.path.join(ROOT, "calculations", "calc.py")

TRAIN_SEARCH_DENSE = ["train", "--model", "gpt3-175b", "--device", "a100-sxm-80gb", "--devices", "1024", "--seq",
                      "2048", "--global-batch", "1536", "--recompute", "full", "--search"]
TRAIN_SEARCH_MOE = ["train", "--model", "deepseek-v3", "--device", "h200", "--devices", "1024", "--seq", "4096",
                    "--global-batch", "2048", "--recompute", "full", "--zero", "1", "--search"]
PARALLEL_SEARCH_SMALL = ["parallel", "--model", "llama-3.1-70b", "--devices", "8", "--search", "--input-len", "2048",
                         "--output-len", "256"]
PARALLEL_SEARCH_DENSE = ["parallel", "--model", "llama-3.1-70b", "--devices", "1024", "--search", "--input-len",
                         "2048", "--output-len", "256"]
PARALLEL_SEARCH_MOE = ["parallel", "--model", "qwen3-30b-a3b", "--devices", "1024", "--search", "--input-len",
                       "2048", "--output-len", "1024"]
COMMANDS = [
    ["models"],
    ["models", "--model", "qwen3-30b-a3b"],
    ["hardware"],
    ["forward", "--model", "qwen3-8b", "--tokens", "8192"],
    ["forward", "--model", "qwen3-8b", "--batch", "64", "--history", "8192", "--format", "json"],
    ["forward", "--model", "qwen3-235b-a22b", "--tokens", "1048576", "--format", "csv"],
    ["kv", "--model", "qwen3-8b", "--context", "32768"],
    ["kv", "--model", "deepseek-v3", "--context", "32768", "--device", "h200", "--tp", "8", "--pp", "4"],
    ["decode", "--model", "qwen3-8b", "--input-len", "1024", "--output-len", "1024"],
    ["decode", "--model", "qwen3-30b-a3b", "--input-len", "1024", "--output-len", "1024", "--batch-sweep"],
    ["decode", "--model", "qwen3-8b", "--input-len", "128", "--output-len", "128", "--batch-sweep", "--format", "json"],
    # Chunked attention over the largest allowed output length: cost flat in G (issue 12).
    ["decode", "--model", "llama-4-scout", "--input-len", "1024", "--output-len", "1000000000000000"],
    ["train", "--model", "qwen3-8b", "--seq", "8192", "--global-batch", "512"],
    ["train", "--model", "qwen3-30b-a3b", "--seq", "4096", "--recompute", "full", "--format", "json"],
    ["train", "--model", "llama-3.1-70b", "--devices", "64", "--tp", "8", "--pp", "4", "--sp", "--seq", "8192",
     "--global-batch", "512", "--schedule", "interleaved"],
    TRAIN_SEARCH_DENSE,
    TRAIN_SEARCH_MOE,
    ["gemm", "--m", "256", "--k", "4096", "--n", "4096", "--device", "all"],
    ["attention", "--queries", "1", "--keys", "8192", "--heads", "32", "--kv-heads", "8", "--head-dim", "128"],
    ["forward", "--model", "qwen3-8b", "--per-layer"],
    ["parallel", "--model", "llama-3.1-70b", "--devices", "8", "--tp", "8", "--input-len", "2048", "--output-len", "256"],
    ["parallel", "--model", "deepseek-v3", "--device", "h200", "--devices", "16", "--tp", "8", "--pp", "2",
     "--input-len", "2048", "--output-len", "1024", "--batch", "32", "--format", "json"],
    PARALLEL_SEARCH_SMALL,
    PARALLEL_SEARCH_DENSE,
    PARALLEL_SEARCH_MOE,
    ["reproduce", "--check"],
    ["validate"],
    ["validate", "--case", "trtllm-llama31-8b-fp8-h100-sxm-128-2048", "--format", "json"],
    ["validate", "--case", "trtllm-llama31-405b-fp8-h200-tp8-128-2048", "--format", "json"],
    ["validate", "--case", "nemo2407-pretrain-llama3-70b-fp8-h100-sxm-x64", "--format", "json"],
]
BUDGET_S = 0.030
# Bulk checks: many results or cases in one run (a few ms each), and layout searches (hundreds of
# layouts, ~1 s for 1,024 devices); timed, not held to the per-command budget.
BULK = (["reproduce", "--check"], ["validate"],
        TRAIN_SEARCH_DENSE, TRAIN_SEARCH_MOE,   # searches: held to their own ~1 s budget
        PARALLEL_SEARCH_SMALL, PARALLEL_SEARCH_DENSE, PARALLEL_SEARCH_MOE)


def wall(argv, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - t0)
        if p.returncode not in (0,):
            return None, p.stderr.decode().strip().splitlines()[-1:]
    return statistics.median(times), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    base, _ = wall([sys.executable, "-c", "pass"], args.runs)
    print(f"bare interpreter start: {base * 1e3:.1f} ms (median of {args.runs}, {sys.executable})")
    print(f"{'command':<100} {'wall ms':>8} {'own ms':>7} {'ratio':>6}")
    worst, failures = 0.0, 0
    for cmd in COMMANDS:
        t, err = wall([sys.executable, CALC, *cmd], args.runs)
        label = "infra-calc " + " ".join(cmd)
        if t is None:
            if err and "unknown command" in err[0]:
                print(f"{label:<100} {'(not available yet)':>23}")
                continue
            print(f"{label:<100} failed: {err}")
            failures += 1
            continue
        own = t - base
        worst = worst if cmd in BULK else max(worst, own)
        print(f"{label:<100} {t * 1e3:8.1f} {own * 1e3:7.1f} {t / base:6.2f}")
    verdict = "within" if worst <= BUDGET_S else "OVER"
    print(f"worst own share (excluding the bulk checks reproduce --check, validate over the whole corpus "
          f"and the layout searches): {worst * 1e3:.1f} ms, {verdict} the {BUDGET_S * 1e3:.0f} ms budget")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

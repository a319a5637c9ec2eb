"""Start-up benchmark: each subcommand in a fresh process, the fastest of N runs.

Prints the bare interpreter start (`python3 -c pass`), each command's wall
time, and the command's own share (imports plus work) over the bare start, in
wall time and in CPU time. The budget is ~30 ms of own share per command
(the layout searches: ~1 s each). Uses the running interpreter directly, so a
version-manager shim does not distort the figures.

Figures are minima over the runs (other processes only ever add time), and the
verdict names the worst command. On a loaded machine (load average above the
CPU count, or a bare start that varies a lot) every figure is inflated and the
verdict is informational: the exit status is 1 only when a command fails, or,
with --strict, when a budget is exceeded.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

try:
    import resource
except ImportError:   # Windows: CPU times are then not reported
    resource = None

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
PARALLEL_SEARCH_MLA = ["parallel", "--model", "deepseek-v3", "--device", "h200", "--devices", "1024", "--search",
                       "--input-len", "2048", "--output-len", "1024"]
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
    PARALLEL_SEARCH_MLA,
    ["budget", "decode", "--params", "70B", "--weight-bits", "8", "--matrix-peak", "bf16=989.4T"],
    ["budget", "training", "--params", "1T,5T,10T", "--train-tokens", "20T", "--efficiency", "3/10,2/5,1/2",
     "--days", "90,180", "--cards", "16384", "--device", "a100-sxm-80gb", "--device", "b200"],
    ["budget", "window", "--model", "qwen3-8b", "--context", "8192", "--bandwidth", "1TB/s", "--latency", "500ns",
     "--transaction-bytes", "128", "--transactions", "128"],
    ["budget", "checkpoint", "--model", "qwen3-8b", "--write-bandwidth", "8GB/s", "--job-mtbf", "28440s",
     "--intervals", "60,900,3600"],
    ["reproduce", "--check"],
    ["validate"],
    ["validate", "--case", "trtllm-llama31-8b-fp8-h100-sxm-128-2048", "--format", "json"],
    ["validate", "--case", "trtllm-llama31-405b-fp8-h200-tp8-128-2048", "--format", "json"],
    ["validate", "--case", "nemo2407-pretrain-llama3-70b-fp8-h100-sxm-x64", "--format", "json"],
]
BUDGET_S = 0.030
SEARCH_BUDGET_S = 1.0
# Bulk checks: many results or cases in one run (a few ms each), and layout searches (hundreds of
# layouts, ~1 s for 1,024 devices); timed, not held to the per-command budget.
SEARCHES = (TRAIN_SEARCH_DENSE, TRAIN_SEARCH_MOE, PARALLEL_SEARCH_SMALL, PARALLEL_SEARCH_DENSE, PARALLEL_SEARCH_MOE,
            PARALLEL_SEARCH_MLA)
BULK = (["reproduce", "--check"], ["validate"]) + SEARCHES


def _children_cpu():
    if resource is None:
        return 0.0
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# Commands run as a user's do: Python caches bytecode (calc.py honours -B and
# PYTHONDONTWRITEBYTECODE, which some shells and CI runners set; measured with
# it set, every run would include compiling the package).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv, runs, stat=min):
    """(wall time, CPU time, all wall times) of `runs` runs, each the fastest (or
    `stat` of the runs), or (None, last stderr line) when the command fails."""
    walls, cpus = [], []
    for _ in range(runs):
        c0 = _children_cpu()
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
        walls.append(time.perf_counter() - t0)
        cpus.append(_children_cpu() - c0)
        if p.returncode != 0:
            return None, p.stderr.decode().strip().splitlines()[-1:]
    return (stat(walls), stat(cpus) if resource else None, walls), None


def load_note(bare_walls):
    """A sentence saying why the figures may be inflated, or ''."""
    reasons = []
    if hasattr(os, "getloadavg"):
        load, cpus = os.getloadavg()[0], os.cpu_count() or 1
        if load > cpus:
            reasons.append(f"load average {load:.1f} on {cpus} CPUs")
    spread = max(bare_walls) / min(bare_walls)
    if spread > 1.5:
        reasons.append(f"the bare start varied {spread:.1f}x between runs")
    if not reasons:
        return ""
    return ("machine loaded (" + "; ".join(reasons) + "): every figure is inflated, the verdicts "
            "are informational")


def verdict(label, worst, budget_s):
    if worst is None:
        return f"{label}: none measured"
    own, cmd = worst
    state = "within" if own <= budget_s else "OVER"
    return (f"{label}: {own * 1e3:.1f} ms ({' '.join(cmd)}), {state} the "
            f"{budget_s * 1e3:.0f} ms budget")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--strict", action="store_true", help="exit 1 when a budget is exceeded")
    ap.add_argument("--min", action="store_true", help="the fastest of the runs (the default)")
    ap.add_argument("--median", action="store_true", help="the median of the runs instead of the fastest")
    ap.add_argument("--match", default="", metavar="TEXT", help="only the commands whose line contains TEXT")
    args = ap.parse_args()
    stat, stat_name = (statistics.median, "median") if args.median else (min, "fastest")
    (base, base_cpu, bare_walls), _ = timed([sys.executable, "-c", "pass"], max(args.runs, 5), stat)
    cpu_text = f", {base_cpu * 1e3:.1f} ms CPU" if base_cpu is not None else ""
    print(f"bare interpreter start: {base * 1e3:.1f} ms{cpu_text} ({stat_name} of {max(args.runs, 5)}, "
          f"{sys.executable})")
    print(f"{'command':<100} {'wall ms':>8} {'own ms':>7} {'own CPU':>7} {'ratio':>6}")
    worst = worst_search = None
    failures = 0
    for cmd in COMMANDS:
        if args.match not in " ".join(cmd):
            continue
        t, err = timed([sys.executable, CALC, *cmd], args.runs, stat)
        label = "infra-calc " + " ".join(cmd)
        if t is None:
            if err and "unknown command" in err[0]:
                print(f"{label:<100} {'(not available yet)':>23}")
                continue
            print(f"{label:<100} failed: {err}")
            failures += 1
            continue
        wall, cpu, _ = t
        own = wall - base
        own_cpu = f"{(cpu - base_cpu) * 1e3:7.1f}" if cpu is not None else f"{'-':>7}"
        if cmd in SEARCHES:
            worst_search = max(worst_search or (own, cmd), (own, cmd))
        elif cmd not in BULK:
            worst = max(worst or (own, cmd), (own, cmd))
        print(f"{label:<100} {wall * 1e3:8.1f} {own * 1e3:7.1f} {own_cpu} {wall / base:6.2f}")
    note = load_note(bare_walls)
    if note:
        print(note)
    print(verdict("worst own time of a single command (bulk checks reproduce --check and validate "
                  "over the whole corpus, and the layout searches, excluded)", worst, BUDGET_S))
    print(verdict("worst own time of a layout search", worst_search, SEARCH_BUDGET_S))
    over = any(w is not None and w[0] > b for w, b in ((worst, BUDGET_S), (worst_search, SEARCH_BUDGET_S)))
    if failures:
        return 1
    return 1 if args.strict and over else 0


if __name__ == "__main__":
    sys.exit(main())

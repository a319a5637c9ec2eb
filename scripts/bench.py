"""Start-up benchmark: each subcommand in a fresh process, paired with a bare start.

Every run of a command is paired with a bare interpreter start (`python3 -c pass`)
just before it, and both are measured in CPU time (user + system of that one child
process, from os.wait4): the command's own share (imports plus work) is the
difference within the pair, and its figure is the median over the pairs. CPU time
does not count the time a process waits for a core, and the pairing cancels what a
busy machine adds to both starts (cache and frequency effects), so the verdict
holds on a loaded machine; wall times are printed beside it for information. The
budget is ~30 ms of own CPU per command (the layout searches: ~1 s each). Uses the
running interpreter directly, so a version-manager shim does not distort the figures.

--quick (what CI runs) times each command once and leaves out the bulk checks
(reproduce --check, validate), which CI has just run itself; a command whose one pair is
over its budget is timed twice more and given the median of the three (a single pair on a
busy machine can double a command's figure). --instructions counts
instructions instead (valgrind --tool=callgrind, one run each: exact and repeatable on
any load, about 50x slower; use it with --match). The exit status is 1 when a command
fails, or, with --strict, when a budget is exceeded.
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
PARALLEL_SEARCH_MLA = ["parallel", "--model", "deepseek-v3", "--device", "h200", "--devices", "1024", "--search",
                       "--input-len", "2048", "--output-len", "1024"]
PARALLEL_SEARCH_MLA_16K = ["parallel", "--model", "deepseek-v3", "--device", "h200", "--devices", "16384", "--search",
                           "--input-len", "2048", "--output-len", "1024"]
# The predicted objective: CP layouts ranked, pruned by efficiency.serving.predicted_ceiling (issue 18).
PARALLEL_SEARCH_DENSE_PREDICTED = PARALLEL_SEARCH_DENSE + ["--objective", "predicted"]
PARALLEL_SEARCH_MLA_16K_PREDICTED = PARALLEL_SEARCH_MLA_16K + ["--objective", "predicted"]
TRAIN_SEARCH_MOE_16K = ["train", "--model", "deepseek-v3", "--device", "h200", "--devices", "16384", "--seq", "4096",
                        "--global-batch", "16384", "--recompute", "full", "--zero", "1", "--search"]
SERVE_SLO_SEARCH = ["serve", "--model", "llama-3.1-70b", "--input-len", "2048", "--output-len", "256",
                    "--tpot-limit", "5ms", "--ttft-limit", "10ms"]   # no count meets: every count up to 1,024
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
    # The tile view, the pointwise fusion chain and the training catalogue (issue 19).
    ["gemm", "--m", "1024", "--k", "4096", "--n", "12288", "--tile", "32x32x32", "--tile", "64x32x64",
     "--tile", "128x32x128", "--tile-capacity", "81920"],
    ["attention", "--queries", "8192", "--keys", "8192", "--heads", "1", "--head-dim", "128", "--kv-block", "1",
     "--kv-block", "64", "--kv-block", "128", "--tile-capacity", "131072"],
    ["budget", "fusion", "--model", "qwen3-8b", "--tokens", "1024", "--layout-copy"],
    ["budget", "history"],
    ["budget", "history", "--compare", "llama1-7b:llama2-7b", "--count-range", "llama2-70b:1024:4096", "--lifecycle",
     "deepseek-v3-pretraining", "--gpu-hour-price", "2", "--service-usage", "1000000", "--service-price", "1/100"],
    ["budget", "request", "--model", "deepseek-v4-pro", "--prefix-len", "6144", "--input-len", "2048", "--output-len",
     "4", "--attention-count", "rectangular", "--sequential-input"],
    ["budget", "request", "--model", "kimi-k3", "--prefix-len", "6144", "--input-len", "2048", "--output-len", "4",
     "--mla", "naive", "--kda-work", "block"],
    ["budget", "chip-power", "--voltage", "0.85,0.55", "--power-area", "0.75,0.60", "--rack", "120,12,1.2",
     "--rack-cards", "64,72,96", "--cooling", "40", "--bus", "4,16", "--pin-rate", "10.7Gb/s"],
    ["budget", "tile-order", "--model", "qwen3-8b", "--model", "qwen3-32b", "--tokens", "129", "--tile", "96x80x160",
     "--rate", "100T", "--rate", "70T"],
    ["forward", "--model", "qwen3-8b", "--per-layer"],
    ["forward", "--model", "deepseek-v4-flash", "--tokens", "8192"],
    ["decode", "--model", "deepseek-v4-flash", "--input-len", "8192", "--output-len", "1048576"],
    ["kv", "--model", "deepseek-v4-flash", "--context", "1048576", "--device", "h200", "--tp", "8"],
    ["forward", "--model", "deepseek-v4-flash", "--tokens", "33", "--fp8-tiles", "32"],
    ["forward", "--model", "deepseek-v4-flash", "--mtp", "--batch", "2", "--tokens", "16"],
    ["forward", "--model", "deepseek-v4.1-flash", "--tokens", "8192"],
    ["decode", "--model", "deepseek-v4.1-flash", "--input-len", "8192", "--output-len", "1040384"],
    ["kv", "--model", "deepseek-v4.1-flash", "--context", "1048576", "--device", "h200", "--tp", "8"],
    ["forward", "--model", "kimi-k3", "--tokens", "8192", "--mla", "absorbed"],
    ["decode", "--model", "kimi-k3", "--input-len", "8192", "--output-len", "1025", "--batch", "64"],
    ["train", "--model", "kimi-k3", "--device", "h200", "--seq", "4096", "--tp", "8", "--ep", "8", "--dp", "8",
     "--pp", "3"],
    ["parallel", "--model", "llama-3.1-70b", "--devices", "8", "--tp", "8", "--input-len", "2048", "--output-len", "256"],
    ["parallel", "--model", "deepseek-v3", "--device", "h200", "--devices", "16", "--tp", "8", "--pp", "2",
     "--input-len", "2048", "--output-len", "1024", "--batch", "32", "--format", "json"],
    PARALLEL_SEARCH_SMALL,
    PARALLEL_SEARCH_DENSE,
    PARALLEL_SEARCH_MOE,
    PARALLEL_SEARCH_MLA,
    PARALLEL_SEARCH_MLA_16K,
    PARALLEL_SEARCH_DENSE_PREDICTED,
    PARALLEL_SEARCH_MLA_16K_PREDICTED,
    TRAIN_SEARCH_MOE_16K,
    # deep pipelines: a stage per layer
    ["parallel", "--model", "llama-3.1-405b", "--pp", "126", "--input-len", "2048", "--output-len", "256"],
    ["parallel", "--model", "deepseek-v3", "--device", "h200", "--pp", "61", "--input-len", "2048",
     "--output-len", "1024"],
    ["serve", "--model", "qwen3-8b", "--input-len", "2048", "--output-len", "256", "--rate", "5"],
    ["serve", "--model", "llama-3.1-70b", "--input-len", "2048", "--output-len", "256", "--tpot-limit", "50ms",
     "--ttft-limit", "2s"],
    SERVE_SLO_SEARCH,
    ["budget", "decode", "--params", "70B", "--weight-bits", "8", "--matrix-peak", "bf16=989.4T"],
    ["budget", "training", "--params", "1T,5T,10T", "--train-tokens", "20T", "--efficiency", "3/10,2/5,1/2",
     "--days", "90,180", "--cards", "16384", "--device", "a100-sxm-80gb", "--device", "b200"],
    ["budget", "window", "--model", "qwen3-8b", "--context", "8192", "--bandwidth", "1TB/s", "--latency", "500ns",
     "--transaction-bytes", "128", "--transactions", "128"],
    ["budget", "checkpoint", "--model", "qwen3-8b", "--write-bandwidth", "8GB/s", "--job-mtbf", "28440s",
     "--intervals", "60,900,3600"],
    ["budget", "energy", "--model", "qwen3-8b", "--history", "8192", "--new-kv", "on-chip",
     "--price-per-device-hour", "2.5"],
    ["budget", "capacity", "--model", "qwen3-235b-a22b", "--tokens", "8192", "--loads", "3x64,1x64",
     "--capacity-factor", "1,1.25,1.5,2"],
    ["budget", "batch", "--noise-scale", "2M", "--train-tokens", "100B", "--seq", "8192", "--reference-sequences",
     "384", "--reference-cards", "48", "--compute-time", "52.2s", "--overhead-time", "0.5s", "--cards", "48,96,1536"],
    ["budget", "straggler", "--mean-time", "52.2s", "--sigma", "1.044s", "--ranks", "8,48,1024"],
    ["budget", "optimizer", "--model", "deepseek-v4-flash"],
    ["budget", "cast", "--model", "qwen3-235b-a22b", "--link-bw", "32GB/s", "--cpu-cast-rate", "100GB/s",
     "--gpu-cast-rate", "1500GB/s", "--gpu-budget", "256MiB", "--host-budget", "512MiB"],
    ["budget", "handoff", "--model", "qwen3-235b-a22b", "--ep", "7", "--producer-bw", "50GB/s", "--receiver-bw",
     "50GB/s", "--capacity", "64GiB", "--training-live", "40GiB", "--kv", "24GiB", "--common", "4GiB"],
    ["budget", "input-supply", "--model", "qwen3-8b", "--samples", "12x512:8192:100us", "--pack-tokens", "512",
     "--storage-bw", "2GB/s", "--h2d-bw", "12GB/s", "--packing-time", "100us", "--consume-time", "2ms",
     "--snapshot-time", "1ms", "--host-slots", "1", "--device-slots", "1", "--checkpoint-every", "2"],
    ["budget", "async-checkpoint", "--model", "qwen3-8b", "--snapshots", "6", "--first-request", "20s", "--interval",
     "10s", "--staging-time", "0.5s", "--upload-bw", "8GB/s", "--failure-at", "50s"],
    ["budget", "graph", "--model", "qwen3-8b", "--input-tokens", "2048", "--calls", "1000000"],
    ["budget", "matrix-vector", "--model", "qwen3-8b", "--slots", "4", "--format", "json"],
    ["budget", "persistent", "--model", "qwen3-8b", "--tokens", "513", "--tile-rows", "64"],
    ["budget", "fp8-scale", "--block", "128"],
    ["budget", "bank", "--access", "column", "--stride-words", "33"],
    ["budget", "supernode", "--model", "qwen3-32b", "--requests", "8", "--prompt", "256", "--outputs", "8",
     "--deadline", "600ms", "--candidate", "8:40ms:12ms", "--candidate", "4:60ms:20ms", "--candidate", "2:96ms:32ms",
     "--card-memory", "24GB", "--reserve", "2GiB", "--fault-at", "50ms", "--recovery", "200ms", "--recovery-fee", "1",
     "--price-per-card-second", "1", "--min-valid", "3/4", "--format", "json"],
    ["budget", "rl-supply", "--model", "qwen3-235b-a22b", "--routing", "balanced", "--prompt-tokens", "1024",
     "--output-tokens", "256", "--prompts", "8", "--samples-per-prompt", "4", "--accepted", "16",
     "--rate", "rollout-prefill=actor:200T", "--rate", "rollout-decode=actor:20T",
     "--rate", "reference-scoring=reference:200T", "--rate", "teacher-scoring=teacher:200T",
     "--rate", "policy-update=learner:200T", "--verifier", "verifier:50ms:8", "--sync", "weight_link:50GB/s"],
    ["budget", "decision", "--model", "qwen3-8b", "--matrix-peak", "bf16=989.4T", "--input-tokens", "8192",
     "--compute-efficiency", "2/5", "--questions", "8", "--outputs", "64,512", "--decode-batch", "64",
     "--memory-efficiency", "1/2", "--price-per-gpu-hour", "2", "--list-price", "0.042",
     "--compare-model", "deepseek-v4.1-flash", "--compare-schedule", "ced", "--escalation-price", "0.013880"],
    ["budget", "incast", "--groups", "8,16,64", "--sender-rate", "50GB/s", "--egress", "50GB/s", "--buffer", "1MiB",
     "--cable-m", "30", "--mtu", "1500", "--rtt", "20us", "--format", "json"],
    ["budget", "scaling-lifecycle", "--point", "2b855b55b:holdout:2810000000:55000000000:2.574117", "--point",
     "8b7178b178b:holdout:8670000000:178000000000:2.336741", "--point",
     "1b1100m100m:fit:1096300000:100000000:6.611002", "--point", "14m100m100m:fit:14100000:100000000:7.278144",
     "--point", "196m1b51b5:fit:201236224:1500000000:3.929866", "--point",
     "1b11b51b5:fit:1096300000:1500000000:3.680017", "--point", "1b112b12b:fit:1096300000:12000000000:2.925644",
     "--point", "1b191b91b:fit:1096300000:91000000000:2.636805", "--alpha", "0.05:0.8:0.05", "--beta",
     "0.05:0.8:0.05", "--target-loss", "2.9", "--sizes", "1e8,5e8,1e9,2.81e9", "--input-tokens", "512",
     "--decode-steps", "127", "--train-price", "1e-18", "--calls", "0,1000,1000000,1000000000", "--summation",
     "compensated", "--format", "json"],
    ["budget", "scaling-lifecycle", "--point", "fit-0:fit:1e+09:1e+10:3.0", "--point",
     "fit-1:fit:1e+09:2e+10:2.7071067811865475", "--point", "fit-2:fit:1e+09:4e+10:2.5", "--point",
     "fit-3:fit:2e+09:1e+10:2.7071067811865475", "--point", "fit-4:fit:2e+09:2e+10:2.414213562373095", "--point",
     "fit-5:fit:2e+09:4e+10:2.2071067811865475", "--point", "fit-6:fit:4e+09:1e+10:2.5", "--point",
     "fit-7:fit:4e+09:2e+10:2.2071067811865475", "--point", "fit-8:fit:4e+09:4e+10:2.0", "--point",
     "holdout-9:holdout:3e+09:3e+10:2.1547005383792515", "--point",
     "holdout-10:holdout:8e+09:8e+10:1.7071067811865475", "--point", "holdout-11:holdout:1.6e+10:1.6e+11:1.5",
     "--alpha", "0.4,0.5,0.6", "--beta", "0.4,0.5,0.6", "--target-loss", "1.8", "--sizes", "1e9,2e9,4e9,8e9,1.6e10",
     "--input-tokens", "512", "--decode-steps", "128", "--train-price", "1e-18", "--prefill-price", "2e-18",
     "--decode-price", "5e-18", "--calls", "0,1000000,10000000,100000000,365000000,1000000000", "--lifetime-calls",
     "365000000", "--budget", "6e19,6e20,6e21,6e22", "--policy", "Kaplan-inspired:0.73", "--policy",
     "Chinchilla-equal-scaling:0.5", "--summation", "compensated"],
    ["budget", "wan-loss", "--rtt", "0.2s", "--knee", "333Mb/s", "--loss", "0.14", "--request-bytes", "354640",
     "--model-time", "0.038s", "--format", "json"],
    ["budget", "hash-collision", "--flows", "128", "--uplinks", "16", "--format", "json"],
    ["budget", "clos", "--radix", "64", "--oversubscription", "3", "--link-rate", "50GB/s", "--partition", "1024",
     "--gpus", "1024", "--nic", "50GB/s", "--supernode", "8:127GB", "--supernode", "256:96GB", "--format", "json"],
    ["budget", "rail-pairing", "--model", "qwen3-8b", "--nic-bw", "50GB/s", "--startup", "833ns", "--pairing", "shifted",
     "--format", "json"],
    ["budget", "switch-reduce", "--model", "qwen3-8b", "--nic-bw", "50GB/s", "--local-bw", "450GB/s", "--startup", "833ns",
     "--format", "json"],
    ["budget", "hash-collision", "--flows", "8", "--uplinks", "32", "--path-delays", "1us,2us,3us,4us,5us,6us,7us,8us",
     "--path-rate", "50GB/s", "--packet-bytes", "4096", "--model", "qwen3-8b", "--tokens", "1024", "--format", "json"],
    ["budget", "ub-fabric", "--set", "apps_per_host=64", "--format", "json"],
    ["budget", "sm-occupancy", "--tile", "128x128x64", "--threads", "256", "--registers", "64", "--accumulator",
     "registers", "--sms", "132", "--latency", "600ns", "--loads-per-warp", "4", "--load-bytes", "16", "--mma",
     "16x8x16", "--format", "json"],
    ["budget", "copy-coordinates", "--model", "deepseek-v4-flash", "--rows", "64", "--format", "json"],
    ["budget", "expert-execution", "--model", "qwen3-235b-a22b", "--tp", "2", "--ep", "4", "--tokens", "16",
     "--requests", "2", "--format", "json"],
    ["forward", "--model", "qwen3-8b", "--tokens", "129", "--tile", "64x64x128"],
    ["budget", "pipeline", "--model", "qwen3-8b", "--schedule", "1f1b", "--stages", "4", "--microbatches", "16",
     "--seq", "128", "--forward-times", "10ms", "--backward-times", "20ms", "--activation-times", "20ms",
     "--gradient-times", "20ms", "--link", "shared", "--format", "json"],
    ["collective", "reduce_scatter", "--ranks", "16", "--topology", "ring", "--rounds", "3", "--bytes", "8MiB",
     "--link-bw-ring", "50GB/s"],
    ["collective", "all_reduce", "--ranks", "8", "--bytes", "8MiB", "--reconfigure-bw", "75GB/s",
     "--setup-cost", "100ms"],
    ["encode", "--model", "qwen3.6-35b-a3b", "--image", "640x640", "--text-tokens", "100", "--output-len", "4"],
    ["encode", "--model", "qwen3-vl-4b", "--image", "640x640", "--images", "4", "--text-tokens", "400",
     "--output-len", "128"],
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
            PARALLEL_SEARCH_MLA, PARALLEL_SEARCH_MLA_16K, PARALLEL_SEARCH_DENSE_PREDICTED,
            PARALLEL_SEARCH_MLA_16K_PREDICTED, TRAIN_SEARCH_MOE_16K, SERVE_SLO_SEARCH)
BULK = (["reproduce", "--check"], ["validate"]) + SEARCHES


# Commands run as a user's do: Python caches bytecode (calc.py honours -B and
# PYTHONDONTWRITEBYTECODE, which some shells and CI runners set; measured with
# it set, every run would include compiling the package).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_once(argv):
    """(wall s, CPU s of the child alone, returncode, stderr text) of one run."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    err = p.stderr.read()
    if hasattr(os, "wait4"):
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        cpu = usage.ru_utime + usage.ru_stime
    else:   # Windows: no per-process CPU time; wall time stands in
        p.wait()
        cpu = None
    wall = time.perf_counter() - t0
    p.stderr.close()
    return wall, (cpu if cpu is not None else wall), p.returncode, err.decode(errors="replace")


BARE = [sys.executable, "-c", "pass"]


def instructions(argv):
    """Instructions one run executes (valgrind callgrind's 'Collected'), or None."""
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, text=True)
    for line in p.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    return None


def count_instructions(match):
    """--instructions: own instructions (command - bare start) of the matching commands."""
    import shutil

    if not shutil.which("valgrind"):
        print("--instructions needs valgrind on PATH")
        return 1
    bare = instructions(BARE)
    print(f"bare interpreter start: {bare:,} instructions")
    for cmd in COMMANDS:
        if match in " ".join(cmd):
            subprocess.run([sys.executable, CALC, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=ENV)   # bytecode cached first, as a user's second run
            n = instructions([sys.executable, CALC, *cmd])
            print(f"infra-calc {' '.join(cmd):<100} {'failed' if n is None else f'{n - bare:,} own'}")
    return 0


def paired(argv, runs):
    """Per run (bare wall, bare CPU, command wall, command CPU), the bare start run just before
    the command; or (None, last stderr line) when the command fails."""
    pairs = []
    for _ in range(runs):
        bare_wall, bare_cpu, _, _ = run_once(BARE)
        wall, cpu, code, err = run_once(argv)
        if code != 0:
            return None, err.strip().splitlines()[-1:]
        pairs.append((bare_wall, bare_cpu, wall, cpu))
    return pairs, None


def own_figures(pairs):
    """(median wall, median own wall, median own CPU) of paired runs."""
    med = statistics.median
    return (med(p[2] for p in pairs), med(p[2] - p[0] for p in pairs), med(p[3] - p[1] for p in pairs))


def verdict(label, worst, budget_s):
    if worst is None:
        return f"{label}: none measured"
    own, cmd = worst
    state = "within" if own <= budget_s else "OVER"
    return (f"{label}: {own * 1e3:.1f} ms ({' '.join(cmd)}), {state} the "
            f"{budget_s * 1e3:.0f} ms budget")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="paired runs per command (default 5)")
    ap.add_argument("--quick", action="store_true",
                    help="one paired run per command, the bulk checks left out (what CI runs)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a budget is exceeded")
    ap.add_argument("--match", default="", metavar="TEXT", help="only the commands whose line contains TEXT")
    ap.add_argument("--instructions", action="store_true",
                    help="own instruction counts under valgrind callgrind instead of times")
    args = ap.parse_args()
    if args.instructions:
        return count_instructions(args.match)
    runs = 1 if args.quick else max(1, args.runs)
    bare, _ = paired(BARE, 3)
    print(f"bare interpreter start: {statistics.median(p[2] for p in bare) * 1e3:.1f} ms wall, "
          f"{statistics.median(p[3] for p in bare) * 1e3:.1f} ms CPU (median of 3, {sys.executable}); "
          f"own = command - the bare start run just before it, median of {runs} pair(s)")
    print(f"{'command':<100} {'wall ms':>8} {'own ms':>7} {'own CPU':>7}")
    worst = worst_search = None
    failures = 0
    for cmd in COMMANDS:
        if args.match not in " ".join(cmd) or (args.quick and cmd in BULK and cmd not in SEARCHES):
            continue
        pairs, err = paired([sys.executable, CALC, *cmd], runs)
        label = "infra-calc " + " ".join(cmd)
        if pairs is None:
            if err and "unknown command" in err[0]:
                print(f"{label:<100} {'(not available yet)':>23}")
                continue
            print(f"{label:<100} failed: {err}")
            failures += 1
            continue
        wall, own_wall, own_cpu = own_figures(pairs)
        budget = SEARCH_BUDGET_S if cmd in SEARCHES else BUDGET_S
        if len(pairs) < 3 and own_cpu > budget:   # one pair over budget (--quick): confirm with two more
            more, err = paired([sys.executable, CALC, *cmd], 3 - len(pairs))
            if more:
                pairs += more
                wall, own_wall, own_cpu = own_figures(pairs)
        if cmd in SEARCHES:
            worst_search = max(worst_search or (own_cpu, cmd), (own_cpu, cmd))
        elif cmd not in BULK:
            worst = max(worst or (own_cpu, cmd), (own_cpu, cmd))
        print(f"{label:<100} {wall * 1e3:8.1f} {own_wall * 1e3:7.1f} {own_cpu * 1e3:7.1f}")
    print(verdict("worst own CPU time of a single command (bulk checks reproduce --check and validate "
                  "over the whole corpus, and the layout searches, excluded)", worst, BUDGET_S))
    print(verdict("worst own CPU time of a layout search", worst_search, SEARCH_BUDGET_S))
    over = any(w is not None and w[0] > b for w, b in ((worst, BUDGET_S), (worst_search, SEARCH_BUDGET_S)))
    if failures:
        return 1
    return 1 if args.strict and over else 0


if __name__ == "__main__":
    sys.exit(main())

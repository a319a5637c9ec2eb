"""`budget`: first-order budgets with declared inputs (a nominal dense model of N parameters,
memory concurrency by Little's law, checkpoint intervals): the book's chapter-1 and
chapter-10 estimates, each one subcommand."""

import argparse
from fractions import Fraction

from . import common

KINDS = {
    "moe-layer-training": "one MoE layer's fixed-selection training step: per-expert, router and shared matrix "
                          "FLOPs, the reference graph's scalar and non-FLOP counts, parameters and an FP32 save set",
    "gradient-ring": "one gradient tensor all-reduced over two servers, flat rings or the two-level hierarchy: "
                     "every round's physical resources, the round, serial and aggregate lower bounds",
    "zero-state": "persistent Adam state per rank under ZeRO stages 0-3: each component's shard under a named "
                  "rounding (bytes, flat, per-tensor), padding, and the stages that fit a declared capacity",
    "decode": "one decode step of a nominal dense model: 2NB FLOPs, weights + KV bytes, compute and "
              "memory service, crossover batch, capacity",
    "transfer": "a nominal model's weights against cards, and one serial transfer (startup + bytes / bandwidth)",
    "training": "nominal dense training: 6ND, devices for a deadline, days on a fleet, the largest N",
    "window": "memory concurrency: transactions in flight x latency bound the bandwidth (Little's law); "
              "a request's KV payload from the ledger",
    "checkpoint": "checkpoint save cost, failure rate, Young's interval and the Poisson retry optimum",
    "energy": "energy of one forward pass or decode step from the ledger (pJ per byte and per FLOP, "
              "sourced), board power x time, and cost at a declared price per device-hour",
    "history": "public training history: 13 models' published tokens and GPU-hours, 6ND of their "
               "parameter proxy, D/N and GPU-hours / devices / 24 where a device count is published",
    "straggler": "stragglers: a synchronous step as the maximum of N ranks' normal compute times "
                 "(expected max, wait of the mean rank, tail probability, wait and redistribute responses)",
    "batch": "critical batch: steps, examples and days of weak and strong data-parallel scaling from a "
             "declared gradient noise scale (McCandlish et al.)",
    "capacity": "MoE capacity factor: capacity per expert, dropped and padded tokens under a declared "
                "routing histogram, per capacity factor",
    "nic": "host packet budget at line rate: packets/s of a declared frame mix (shares of packets, wire "
           "overhead) and the cores a declared per-core packet rate needs",
    "connections": "connection state of one host: endpoints x peers, a transport per relation against one per "
                   "(peer, isolation class), bytes against a budget",
    "periodic-queue": "a fluid queue of declared periodic demands on one link: exact queue segments, peak and "
                      "final backlog, excess demand, compatibility",
    "feedback-queue": "a fluid queue whose arrival rate drops after a declared feedback delay, with a finite "
                      "buffer: backlog at feedback, drops, drain",
    "collective-tail": "a barrier collective over a finite record of declared per-rank ready times: mean, nearest-"
                       "rank p50/p99 and max completion, and paired counterfactuals (faster exchange, aligned, no recovery)",
    "completion-reclaim": "finite credits held until a periodic poll consumes each completion: submit, complete and "
                          "reclaim times, peaks of outstanding, in-flight and unconsumed operations",
    "fifo-pipeline": "a FIFO generation pipeline from declared stage, link and feedback times: completions, "
                     "finish, boundary buffer peaks, with unbounded or finite slots",
    "moe-dedup": "MoE dispatch and combine bytes per assignment against once per destination rank, from a declared "
                 "per-token destination pattern; reduction adds moved, pairwise all-to-all times",
    "staging": "a ring all-reduce staged through host buffers on a declared PCIe/NUMA host: each physical "
               "resource's bytes and busy time, aggregate and per-round lower bounds",
    "packet-reorder": "one message striped over paths of declared delays, in-order delivery from a reorder buffer, "
                      "declared losses resent: completion, retained peak, resent bytes",
    "memory-pool": "a pooled memory of declared nodes: borrowed capacity and its copies, periodic reads of the "
                   "borrowed bytes through a transaction window, jobs down per set of failed nodes",
    "growing-kv": "a decode's growing KV history on remote replicas: per-step reads, appends committed to every "
                  "replica, the serial communication skeleton (closed forms)",
    "remote-state": "an immutable KV snapshot read remotely through a transaction window against staged once "
                    "and read locally: totals, payback reads, capacity, choice",
    "ordering": "publication dependencies of remote operations (strict against necessary ones, list-scheduled) "
                "and a stale speculative-read witness",
    "pipeline": "a pipeline-parallel training step from declared stage durations: GPipe or 1F1B event times, "
                "idle and bubble, exposed transfer, and each stage's activation-buffer peak",
    "image-request": "a remote image request as serial declared stages: upload and download of declared file sizes, "
                     "connection, round trip, model; an optional compressed variant and local comparison",
    "audio": "real-time audio frames through a model stage, a send link and a jitter-buffered player: "
             "arrivals, deadlines, stalls, ready-queue peak, mute after an interruption",
    "ack-window": "image requests over a finite ACK-window teaching protocol: serial links, segment windows, "
                  "one declared loss, handshakes and consecutive requests on fresh or reused connections",
    "image-stream": "an image request in blocks over an uplink, a server and a downlink that overlap: whole-image "
                    "barriers or independent blocks, an optional preview",
    "trace": "a short request trace on workers that serve one request each, with declared prefill and decode "
             "times: FIFO waits, TTFT, p95, live and reserved KV, the ledger's matrix FLOPs",
    "routing": "routing between priced services with a prefix cache: attempt costs, cost per quality and per "
               "quality-and-deadline success, the cost crossover hit fraction",
    "sampling": "one speculative-sampling step on a declared vocabulary: acceptance, the corrected output "
                "against the target and the wrong resampling's, every rejection branch, exact fractions",
    "retry": "a finite retry graph of declared attempts: every terminal path's probability, cost, time and "
             "resources; success and quality-and-deadline rates, cost per success",
    "optimizer": "optimizer groups of a checkpoint: Muon or AdamW per tensor (DeepSeek-V4's rule), Newton-Schulz "
                 "matrix FLOPs and scalar operations of one update step",
    "voice-demand": "the TPU paper's voice-search anchor (3 minutes a day doubles 2013 capacity) scaled linearly: "
                    "added and total capacity, with a declared gain and baseline of servers",
    "cast": "where to cast one gradient from BF16 to FP32: on the CPU after a BF16 copy or on the GPU before an "
            "FP32 copy; ready times, equal-time link rate, buffer peaks against budgets",
    "batch-reuse": "dense decode batch reuse from the ledger: shared weight reads against per-request KV, the "
                   "capacity batch, the KV-equals-weights batch, the compute/bandwidth crossover, a bound per batch",
    "kda-chunk": "Kimi Delta Attention in chunks: the block algorithm's matrix and scalar work and the chunk "
                 "kernel's buffers and known live subset",
    "routing-metadata": "routing replay metadata: the routed expert ids of T tokens in a whole-byte encoding, "
                        "declared identity fields and header, stored and per-second transport bytes",
    "expert-execution": "same-cohort MoE expert execution on TP x EP (x PP) ranks from a declared route table: "
                        "per-rank expert FLOPs, reduce and broadcast messages, wire bytes, a conditional bound",
    "environments": "agent environments from declared sizes and times: clone placements against a local budget, "
                    "creation byte paths, snapshot deltas, prewarm waits and byte-seconds",
    "sequence-toy": "a toy RNN against a toy causal Transformer over the same tokens: matrix work with and without "
                    "reused state, state bytes, dependency chains",
    "ec-pool": "a vision-language request's encoder-cache bytes and the best request rate of an encoder / "
               "prefill-decode worker split (encoding, PD and shared-network bounds, cache hits)",
    "server-scope": "one server at TP C against two at TP C/2 x PP 2: per-card capacity and the declared serial "
                    "communication of decode forwards, with the crossover remote bandwidth and startup",
    "reshard": "checkpoint reshard plan: the byte ranges of each source file every new rank reads when S ranks' "
               "row-major shards load on T ranks (rows or flat layouts)",
    "async-checkpoint": "asynchronous checkpoints with finite snapshot buffers: capture, staging, upload and durable "
                        "times, training pauses, buffer peak and the snapshot a failure recovers",
    "handoff": "training-to-rollout weight handoff: BF16 weights per EP rank (uneven expert ranges), full vs "
               "selective unicast egress and transfer bound, phase memory against a capacity",
    "input-supply": "training input supply with checkpoint contention: next-fit packing, read / prepare / H2D / "
                    "consume events with host and device slots, snapshots and checkpoint writes on shared storage",
    "fusion": "fused vs unfused interface bytes and tensor peaks of a dense MLP's pointwise chain "
              "(activation, multiply, optional layout permute, cast), every contiguous grouping",
    "quant-gemm": "quantize-then-GEMM of one expert projection: interface bytes of separate quantization, "
                  "full-row-scale and prefix-scale fused casts under a declared tile",
    "rmsnorm": "RMSNorm one group per row against a three-pass split-row reduction: partial and inverse "
               "buffers, extra interface bytes",
    "dag": "list schedule of a declared task graph on serial resources, as declared and with changed "
           "durations or resources: finish, critical path, serial work",
    "microbatch": "two micro-batches of a layer's FFN: full, split serial, ideal overlap and a declared joint "
                  "window (contention) as task graphs",
    "graph": "CUDA-graph boundary of one layer: eager, copy, indirect and direct-output paths with declared "
             "costs, their payback calls, the padded FFN work, a configuration pipeline",
    "deployment": "per-shape dispatch among declared candidate timings against the best uniform candidate: "
                  "frequency-weighted cost, validation fallback, payback calls of the extra preparation",
    "specialization": "shape policies of one FFN layer: generic, bucket padding, per-shape compilation with "
                      "declared rates, preparation and cache; the cheapest lifetime",
    "persistent": "one layer's up projection and activation as per-tile device tasks on two declared workers "
                  "against two kernels with a barrier: finish times, intermediate live peak",
    "stream-buffer": "a producer-consumer FIFO in ticks with reserved reorder slots: the slots the free-running "
                     "schedule needs, and the last take under a byte budget (back-pressure)",
    "host-transfer": "host prepare, host-to-device copy and device consume of blocks through host and device slot "
                     "pools: serial, unbounded and slot-bound finish",
    "attention-input": "input slots of one QK^T tile in declared ticks: synchronous register staging against "
                       "asynchronous copies, finish per slot count, capacity screen",
    "matrix-vector": "QK^T -> materialized softmax -> PV of one head in row groups on matrix, vector and handoff "
                     "servers in declared ticks: staged or direct path, slots",
    "sm-balance": "one attention tile on one SM: tensor-core, exponential and shared-memory cycles at per-SM "
                  "rates (FlashAttention-4's B200 figures by default) under supply multipliers",
    "online-softmax": "online-softmax states (max, exp-sum, weighted sum) of a declared row merged block by block "
                      "and as a tree against the direct softmax and the mean of block outputs",
    "fp8-scale": "exact E4M3FN witness: a row quantized with its final scale against a scale grown block by block",
    "bank": "shared-memory bank service rounds of one warp's scalar word requests (row, column, same word; "
            "row padding, ports, broadcast)",
    "chip-power": "declared chip and rack power arithmetic: voltage scaling (V^2), power density, a rack's "
                  "card count under a power budget and cooling limit, a memory bus's bytes/s and read time",
    "request": "one request's matrix work and state: a restored prefix, new input, returned tokens; input "
               "stage, decode steps, forward calls, restored and final state, a uniform BF16 weight comparison",
    "tile-order": "two dense models' passes padded to one kernel tile at declared matrix rates: valid, causal "
                  "extra and tile extra FLOPs, conditional service, effective rate, which finishes first",
    "supernode": "one burst of requests on fixed cards as TP t x C/t replicas with declared stage times, one "
                 "fault of replica 0, an SLO and a card price: capacity, completions, cost per valid request, winners",
    "rl-supply": "one RL batch's matrix work (ledger) over declared pool rates, a verifier and a sync link: each "
                 "stage's steady and isolated time, pool demands, serial and ideal-pipeline bounds",
    "decision": "a decision request (one forward, answers read at Q positions, no generation) against the LLM "
                "path on one device: GPU-seconds, latency, cost at a declared price, against a list price",
    "ub-fabric": "Unified Bus against RoCE from declared state sizes and phase latencies: endpoint state, context "
                 "cache spill, a 64 B read's round trip, hosts per cache, setup, request rate, silicon share",
    "sm-occupancy": "one GEMM tile's kernel on one SM (compute capability 9.0 limits): resident blocks and warps, "
                    "the binding limit, loads in flight against a declared latency, MMA instructions per tile",
    "copy-coordinates": "a shared expert's three FP8 GEMMs in DeepSeek-V4's kernel tiles: copy calls, payload, "
                        "scale and output bytes per GEMM, each copy's offsets and strides",
    "scaling-fit": "a loss law E + A (N/N0)^-alpha + B (D/D0)^-beta fitted to declared training points over a "
                   "declared exponent grid (least squares per pair): law, fit SSE, holdout RMSE, residuals",
    "scaling-lifecycle": "candidate sizes at one target loss under the fitted law: tokens, 6ND training and "
                         "per-call proxy FLOPs at declared prices, cost crossings, the cheapest size per call count",
    "incast": "N - 1 senders into one egress through a free buffer: the feedback delay it allows, the buffer a "
              "one-hop pause and an end-to-end RTT need, a fluid check",
    "wan-loss": "random loss on a long path: the Mathis TCP rate, an ideal BBR goodput, a reliable stream repaired "
                "once per round trip (rounds, completion) and the FEC repair symbols a target needs",
    "hash-collision": "ECMP: the exact distribution of the busiest uplink when n flows hash onto m, expected max, "
                      "no-collision and empty-uplink probabilities, the effective cut; per-packet spraying beside it",
    "clos": "a folded Clos of k-port switches with leaf oversubscription: two- and three-tier switches, endpoints, "
            "bisection, a partition's cut, supernode egress",
    "rail-pairing": "the cross-server phase of a two-server hierarchical AllReduce on rails: aligned or shifted "
                    "pairs, bytes through the spine, per-rail time against one NIC",
    "switch-reduce": "an in-network (switch) reduction of the cross-server phase against the hierarchical ring "
                     "(`gradient-ring`), and both over 2..S servers",
}


def byte_count(text):
    """A non-negative byte count: 0, 1073741824, 1GiB."""
    return common._bytes(text, 0)


def long_duration(text):
    """A mean time between failures or a recovery time: 28440s, 365d, 2min (unit required)."""
    return common._time(text, "a time with a unit such as 30s, 8h or 365d, at most 1e12 s", 1e12)


def fraction_text(text):
    """An efficiency as a decimal or a ratio: 0.3, 3/10 (kept exact)."""
    from fractions import Fraction

    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or not 0 < value <= 1 or len(text) > 40:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1] such as 0.3 or 3/10, got '{text}'")
    return value


def _straggler_arguments(q):
    q.add_argument("--mean-time", type=long_duration, required=True, metavar="T",
                   help="mean compute time of one rank's step (e.g. 52.2s)")
    q.add_argument("--sigma", type=long_duration, required=True, metavar="T",
                   help="declared standard deviation of a rank's compute time (e.g. 1.044s)")
    q.add_argument("--overhead-time", type=long_duration, default=0.0, metavar="T",
                   help="per-step communication and input wait after the slowest rank (default 0)")
    q.add_argument("--ranks", type=_card_list, required=True, metavar="N[,N...]", help="rank counts")
    q.add_argument("--k-sigma", type=float, default=3.0, metavar="K",
                   help="a straggler is one rank at mean + K sigma (default 3)")


def _straggler(args):
    from ..analyses.straggler import straggler
    from ..errors import UserError

    if not args.mean_time > 0:
        raise UserError("--mean-time must be positive (a rank's mean compute time per step, e.g. 52.2s)")
    if not 0 <= args.k_sigma <= 40:
        raise UserError(f"--k-sigma must be from 0 to 40, got {args.k_sigma}")
    if max(args.ranks) > 10**6:
        raise UserError("--ranks takes at most 10^6 ranks (the quadrature's stated accuracy)")
    from fractions import Fraction

    return straggler(mean_s=Fraction(repr(args.mean_time)), sigma_s=args.sigma,
                     overhead_s=Fraction(repr(args.overhead_time)), ranks=args.ranks, k=args.k_sigma)


def _exact_time(text):
    """A declared duration with a unit, kept exact: 10ms, 0.02s, 1us, 0s, or a ratio such as 261/5s
    (a figure a source states as an exact fraction); at most 10^6 s."""
    import re
    from fractions import Fraction

    units = {"ns": Fraction(1, 10**9), "us": Fraction(1, 10**6), "ms": Fraction(1, 1000), "s": 1, "min": 60,
             "h": 3600, "d": 86400}
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|[0-9]+/0*[1-9][0-9]*)(ns|us|ms|s|min|h|d)",
                     text.strip()) if len(text) <= 48 else None
    value = Fraction(m.group(1)) * units[m.group(2)] if m else None
    if value is None or value > 10**6:
        raise argparse.ArgumentTypeError(f"must be a time with a unit such as 10ms, 0.02s or 261/5s (ns, us, ms, s, "
                                         f"min, h, d), at most 1e6 s, got '{text}'")
    return value


def _cast_arguments(q):
    common.add_model(q)
    q.add_argument("--link-bw", type=common.bandwidth, required=True, metavar="BW",
                   help="effective device-to-host copy rate (e.g. 32GB/s)")
    q.add_argument("--cpu-cast-rate", type=common.bandwidth, required=True, metavar="BW",
                   help="the CPU cast's throughput over its read + write bytes (e.g. 100GB/s)")
    q.add_argument("--gpu-cast-rate", type=common.bandwidth, required=True, metavar="BW",
                   help="the GPU cast's throughput over its read + write bytes (e.g. 1500GB/s)")
    for flag, what in (("--copy-startup", "each copy"), ("--cpu-cast-startup", "the CPU cast"),
                       ("--gpu-cast-startup", "the GPU cast")):
        q.add_argument(flag, dest=flag[2:].replace("-", "_") + "_s", type=_exact_time, default=0, metavar="T",
                       help=f"startup of {what} (default 0s)")
    q.add_argument("--gpu-budget", type=byte_count, required=True, metavar="BYTES",
                   help="extra GPU memory the cast may use beyond the source gradient (e.g. 256MiB)")
    q.add_argument("--host-budget", type=byte_count, required=True, metavar="BYTES",
                   help="host staging memory (e.g. 512MiB)")


def _cast(args):
    from ..analyses.gradient_cast import gradient_cast
    from ..load.models import load_model

    return gradient_cast(load_model(args.model), link=round(args.link_bw), cpu_rate=round(args.cpu_cast_rate),
                         gpu_rate=round(args.gpu_cast_rate), copy_startup=args.copy_startup_s,
                         cpu_startup=args.cpu_cast_startup_s, gpu_startup=args.gpu_cast_startup_s,
                         gpu_budget=args.gpu_budget, host_budget=args.host_budget)


def _routing_metadata_arguments(q):
    common.add_model(q)
    q.add_argument("--tokens", type=common.tokens, required=True, metavar="T", help="recorded token positions")
    q.add_argument("--encoding", choices=("uint8", "uint16", "int32"), default="uint16",
                   help="bytes per expert id (default uint16)")
    q.add_argument("--token-rate", type=common.token_budget, required=True, metavar="TOKENS/S",
                   help="tokens recorded per second (1M = 10^6)")
    q.add_argument("--bandwidth", type=common.bandwidth, required=True, metavar="BW",
                   help="the metadata transport's effective rate (e.g. 1GB/s)")
    q.add_argument("--retained-copies", type=common.positive_int, default=1, metavar="N",
                   help="stored copies of the payload (default 1)")
    q.add_argument("--header-bytes", type=common.non_negative_int, default=128, metavar="B",
                   help="declared stream header (default 128)")
    q.add_argument("--identity-bytes", type=common.non_negative_int, default=24, metavar="B",
                   help="declared identity fields per token (default 24: sequence id, position, weight version)")


def _routing_metadata(args):
    from ..analyses.routing_metadata import routing_metadata
    from ..load.models import load_model

    return routing_metadata(load_model(args.model), tokens=args.tokens, encoding=args.encoding,
                            token_rate=args.token_rate, retained=args.retained_copies, bandwidth=round(args.bandwidth),
                            header_bytes=args.header_bytes, identity_bytes=args.identity_bytes)


def _reshard_arguments(q):
    common.add_model(q)
    q.add_argument("--source-parts", type=common.positive_int, required=True, metavar="S", help="ranks that saved")
    q.add_argument("--target-parts", type=common.positive_int, required=True, metavar="T", help="ranks that load")
    for side in ("source", "target"):
        q.add_argument(f"--{side}-layout", choices=("rows", "flat"), default="rows",
                       help=f"the {side} split: whole rows (default) or flat elements")
    q.add_argument("--weights-only", action="store_true", help="BF16 weights only (no master, Adam m and v)")


def _reshard(args):
    from ..analyses.checkpoint_reshard import reshard
    from ..errors import UserError
    from ..load.models import load_model

    if max(args.source_parts, args.target_parts) > 4096:
        raise UserError("budget reshard plans at most 4,096 ranks a side")
    return reshard(load_model(args.model), source_parts=args.source_parts, target_parts=args.target_parts,
                   source_layout=args.source_layout, target_layout=args.target_layout, weights_only=args.weights_only)


def _async_checkpoint_arguments(q):
    common.add_model(q, required=False)
    q.add_argument("--payload-bytes", type=common.byte_size, default=None, metavar="BYTES",
                   help="a declared snapshot size instead of the model's 14 B per parameter")
    q.add_argument("--snapshots", type=common.positive_int, required=True, metavar="N", help="save requests")
    for flag, dest, what, default in (("--first-request", "first_request_s", "the first save request", None),
                                      ("--interval", "interval_s", "between save requests", None),
                                      ("--staging-time", "staging_time_s", "staging one snapshot (training paused)", None),
                                      ("--durability-delay", "durability_delay_s", "after the upload until durable", 0),
                                      ("--failure-at", "failure_at_s", "the failure's time", None)):
        q.add_argument(flag, dest=dest, type=_exact_time, required=default is None, default=default, metavar="T",
                       help=f"{what}" + ("" if default is None else " (default 0s)"))
    q.add_argument("--upload-bw", type=common.bandwidth, required=True, metavar="BW", help="the writer's rate (8GB/s)")
    q.add_argument("--slots", type=common.positive_int, default=2, metavar="B", help="snapshot buffers (default 2)")


def _async_checkpoint(args):
    from ..analyses.checkpoint_async import async_checkpoint
    from ..errors import UserError
    from ..load.models import load_model

    if args.model is None and args.payload_bytes is None:
        raise UserError("give --model (14 B per parameter) or --payload-bytes")
    if not args.interval_s > 0 or not args.staging_time_s > 0:
        raise UserError("--interval and --staging-time must be positive")
    if args.snapshots > 10**5:
        raise UserError("--snapshots takes at most 100,000 requests")
    params = load_model(args.model).params if args.model else 0
    return async_checkpoint(parameters=params, payload=args.payload_bytes, snapshots=args.snapshots,
                            first=args.first_request_s, interval=args.interval_s, staging=args.staging_time_s,
                            bandwidth=round(args.upload_bw), slots=args.slots, durability=args.durability_delay_s,
                            failure=args.failure_at_s)


def _handoff_arguments(q):
    common.add_model(q)
    q.add_argument("--ep", type=common.positive_int, default=1, metavar="R", help="expert-parallel ranks (default 1)")
    q.add_argument("--replicas", type=common.positive_int, default=1, metavar="N", help="EP groups (default 1)")
    q.add_argument("--producer-bw", type=common.bandwidth, required=True, metavar="BW", help="the sender's egress")
    q.add_argument("--receiver-bw", type=common.bandwidth, required=True, metavar="BW", help="each receiver's rate")
    for flag, what in (("--capacity", "memory per rank"), ("--training-live", "training's own live allocation"),
                       ("--kv", "the rollout KV pool"), ("--common", "a shared allocation beside both")):
        q.add_argument(flag, type=byte_count, required=True, metavar="BYTES", help=what)


def _handoff(args):
    from ..analyses.weight_handoff import handoff
    from ..load.models import load_model

    return handoff(load_model(args.model), ep=args.ep, replicas=args.replicas, producer_rate=round(args.producer_bw),
                   receiver_rate=round(args.receiver_bw), capacity=args.capacity, training_live=args.training_live,
                   kv=args.kv, common=args.common)


def _samples(text):
    """Pre-tokenized samples TOKENS:STORED_BYTES:PREP_TIME, comma-separated; NxTOKENS:... repeats one N times."""
    out = []
    try:
        for item in text.split(","):
            count, x, rest = item.strip().partition("x")
            times, spec = (int(count), rest) if x and count.isdigit() else (1, item.strip())
            tokens, stored, prep = spec.split(":")
            out += [(int(tokens), int(stored), _exact_time(prep))] * times
    except (ValueError, argparse.ArgumentTypeError):
        out = None
    if not out or len(out) > 10**4 or any(t < 1 or b < 0 for t, b, _ in out):
        raise argparse.ArgumentTypeError(f"must be samples TOKENS:BYTES:TIME (12x512:8192:100us), at most 10^4, "
                                         f"got '{text[:60]}'")
    return tuple(out)


def _input_supply_arguments(q):
    common.add_model(q, required=False)
    q.add_argument("--samples", type=_samples, required=True, metavar="[Nx]T:B:TIME,...",
                   help="pre-tokenized samples: tokens, stored bytes, CPU preparation time")
    q.add_argument("--pack-tokens", type=common.positive_int, required=True, metavar="L", help="tokens per pack")
    q.add_argument("--host-slots", type=common.positive_int, default=2, metavar="H", help="host pack buffers (2)")
    q.add_argument("--device-slots", type=common.positive_int, default=2, metavar="D", help="device pack buffers (2)")
    q.add_argument("--storage-bw", type=common.bandwidth, required=True, metavar="BW", help="storage read/write rate")
    q.add_argument("--h2d-bw", type=common.bandwidth, required=True, metavar="BW", help="host-to-device rate")
    for flag, dest, what in (("--packing-time", "packing_time_s", "CPU packing per pack"),
                             ("--consume-time", "consume_time_s", "the device's consumption of one pack"),
                             ("--snapshot-time", "snapshot_time_s", "one checkpoint snapshot on the device")):
        q.add_argument(flag, dest=dest, type=_exact_time, required=True, metavar="T", help=what)
    q.add_argument("--checkpoint-every", type=common.non_negative_int, default=0, metavar="K",
                   help="a snapshot after every K-th pack (default 0: none)")
    q.add_argument("--snapshot-slots", type=common.positive_int, default=1, metavar="S", help="snapshot buffers (1)")
    q.add_argument("--separate-write-storage", action="store_true",
                   help="checkpoint writes on their own storage (default: shared with the reads)")


def _input_supply(args):
    from ..analyses.input_supply import input_supply
    from ..errors import UserError
    from ..load.models import load_model

    if args.checkpoint_every and args.model is None:
        raise UserError("--checkpoint-every needs --model (14 B per parameter per snapshot)")
    return input_supply(samples=args.samples, pack_tokens=args.pack_tokens, host_slots=args.host_slots,
                        device_slots=args.device_slots, storage_rate=round(args.storage_bw),
                        h2d_rate=round(args.h2d_bw), packing=args.packing_time_s, consume=args.consume_time_s,
                        every=args.checkpoint_every, snapshot=args.snapshot_time_s, snapshot_slots=args.snapshot_slots,
                        shared_storage=not args.separate_write_storage,
                        parameters=load_model(args.model).params if args.model else 0)


def _optimizer_arguments(q):
    common.add_model(q)
    q.add_argument("--sink", choices=("unresolved", "row-muon", "adamw"), default="unresolved",
                   help="the attention sinks' optimizer, which the report does not state (default unresolved; "
                        "row-muon: one 1 x n matrix)")
    q.add_argument("--head-mixer", choices=("unresolved", "adamw", "muon"), default="unresolved",
                   help="the mHC head mixer hc_head_fn's optimizer (default unresolved)")
    q.add_argument("--iterations", type=common.positive_int, default=10, metavar="K",
                   help="Newton-Schulz iterations per Muon update (default 10)")


def _optimizer(args):
    from ..analyses.optimizer_groups import optimizer_groups
    from ..errors import UserError
    from ..load.models import load_model

    if args.iterations > 1000:
        raise UserError("--iterations takes at most 1,000 Newton-Schulz steps")
    return optimizer_groups(load_model(args.model), sink=args.sink, head_mixer=args.head_mixer,
                            iterations=args.iterations)


def _pipeline_arguments(q):
    common.add_model(q)
    q.add_argument("--schedule", choices=("gpipe", "1f1b"), required=True,
                   help="GPipe (all forwards, then backwards) or 1F1B (PipeDream-Flush)")
    q.add_argument("--stages", type=common.positive_int, required=True, metavar="P",
                   help="pipeline stages (equal runs of consecutive layers)")
    q.add_argument("--microbatches", type=common.positive_int, required=True, metavar="M", help="micro-batches per step")
    q.add_argument("--microbatch-size", type=common.positive_int, default=1, metavar="B",
                   help="sequences per micro-batch (default 1)")
    q.add_argument("--seq", type=common.tokens, required=True, metavar="T", help="tokens per sequence")
    times = _list(_exact_time)
    q.add_argument("--forward-times", dest="forward_times_s", type=times, required=True, metavar="T[,T...]",
                   help="one micro-batch's forward per stage (one value for every stage, or P)")
    q.add_argument("--backward-times", dest="backward_times_s", type=times, required=True, metavar="T[,T...]",
                   help="one micro-batch's backward per stage (one value or P)")
    q.add_argument("--activation-times", dest="activation_times_s", type=times, required=True, metavar="T[,T...]",
                   help="one activation message s -> s+1 per boundary (one value or P-1)")
    q.add_argument("--gradient-times", dest="gradient_times_s", type=times, required=True, metavar="T[,T...]",
                   help="one gradient message s+1 -> s per boundary (one value or P-1)")
    q.add_argument("--update-times", dest="update_times_s", type=times, default=(0,), metavar="T[,T...]",
                   help="the optimizer update per stage after the last backward (one value or P; default 0s)")
    q.add_argument("--setup-time", dest="setup_time_s", type=_exact_time, default=0, metavar="T",
                   help="once per step before any micro-batch (default 0s)")
    q.add_argument("--link", choices=("independent", "shared"), default="independent",
                   help="one link per boundary and direction (default), or one shared half-duplex link")
    q.add_argument("--activations", choices=("save", "recompute-silu"), default="save",
                   help="keep SwiGLU's gate, sigmoid and up (default), or keep gate and up and recompute")
    q.add_argument("--gemm-inputs", choices=("none", "save", "recompute-products"), default="none",
                   help="also reserve the GEMMs' saved inputs: none (default), save them all, or keep Q/K/V/context "
                        "and rebuild the norm and SwiGLU products before backward")
    q.add_argument("--extra-saved-bytes", type=_list(byte_count), default=(0,), metavar="B[,B...]",
                   help="declared extra bytes each micro-batch keeps per stage (one value or P; default 0)")


def _per(values, count, option):
    from ..errors import UserError

    if len(values) == 1:
        return tuple(values) * count
    if len(values) != count:
        raise UserError(f"{option} takes one value or {count}, got {len(values)}")
    return tuple(values)


def _pipeline(args):
    from ..analyses.training_pipeline import pipeline
    from ..errors import UserError
    from ..load.models import load_model

    p = args.stages
    if p < 2:
        raise UserError("--stages must be at least 2 (a pipeline has boundaries)")
    if args.microbatches > 4096 or p > 256:
        raise UserError("budget pipeline schedules at most 4,096 micro-batches over 256 stages")
    return pipeline(arch=load_model(args.model), schedule=args.schedule, link=args.link, stages=p,
                    microbatches=args.microbatches, microbatch_size=args.microbatch_size, tokens=args.seq,
                    forward=_per(args.forward_times_s, p, "--forward-times"),
                    backward=_per(args.backward_times_s, p, "--backward-times"),
                    act=_per(args.activation_times_s, p - 1, "--activation-times"),
                    grad=_per(args.gradient_times_s, p - 1, "--gradient-times"),
                    update=_per(args.update_times_s, p, "--update-times"), setup=args.setup_time_s,
                    activations=args.activations, gemm_inputs=args.gemm_inputs,
                    extra_saved=_per(args.extra_saved_bytes, p, "--extra-saved-bytes"))


def _exact(text, what, low=0, high=10**30):
    """An exact non-negative number: 1, 0.75, 3/4, 10M (K, M, G = 10^3, 10^6, 10^9)."""
    from fractions import Fraction

    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(text[-1:].upper(), 1)
    try:
        value = Fraction(text[:-1] if scale > 1 else text) * scale
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or not low <= value <= high or len(text) > 40:
        raise argparse.ArgumentTypeError(f"must be {what}, got '{text}'")
    return value


def _share(text):
    """A fraction in (0, 1]: 1, 3/4, 0.25."""
    from fractions import Fraction

    value = _exact(text, "a fraction in (0, 1] such as 1, 3/4 or 0.25", 0, 1)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1] such as 1, 3/4 or 0.25, got '{text}'")
    return Fraction(value)


def _line_rate(text):
    """A line rate in bits/s, exact: 40Gb/s, 100Gb/s, 4e10."""
    from fractions import Fraction

    factor = next((f for u, f in (("Tb/s", 10**12), ("Gb/s", 10**9), ("Mb/s", 10**6), ("b/s", 1))
                   if text.endswith(u)), None)
    number = text[:-4 if factor and factor > 1 else -3] if factor else text
    try:
        value = Fraction(number) * (factor or 1)
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or value.denominator != 1 or not 0 < value <= 10**18 or len(text) > 40:
        raise argparse.ArgumentTypeError(f"must be a whole number of bits/s up to 10^18 such as 40Gb/s or 4e10, "
                                         f"got '{text}'")
    return int(value)


def _packet_classes(text):
    """Frame classes F[:SHARE[:WORK]],...: 64, or 64:1/2,1518:1/2:3 (shares of the packet count)."""
    from fractions import Fraction

    out = []
    for item in text.split(","):
        parts = item.strip().split(":")
        frame = common.digits(parts[0])
        if frame is None or frame < 64 or len(parts) > 3 or len(out) >= 64:
            raise argparse.ArgumentTypeError(f"must be frame classes F[:SHARE[:WORK]] with frames of at least 64 B "
                                             f"(64, or 64:1/2,1518:1/2), got '{text}'")
        share = _share(parts[1]) if len(parts) > 1 else Fraction(1)
        work = Fraction(_exact(parts[2], "a work multiplier such as 1 or 3/2")) if len(parts) > 2 else Fraction(1)
        out.append((frame, share, work))
    return tuple(out)


def _nic_arguments(q):
    q.add_argument("--line-rate", type=_line_rate, required=True, metavar="R",
                   help="line rate in bits/s (40Gb/s, 100Gb/s)")
    q.add_argument("--utilization", type=_share, default="1", metavar="U",
                   help="fraction of the line filled (default 1)")
    q.add_argument("--frames", type=_packet_classes, default=((64, 1, 1),), metavar="F[:SHARE[:WORK]],...",
                   help="frame classes: bytes with FCS, share of the packet count, work multiplier (default 64)")
    q.add_argument("--wire-overhead", type=common.non_negative_int, default=20, metavar="BYTES",
                   help="per-packet wire bytes beside the frame (default 20: preamble/SFD 8 + gap 12)")
    q.add_argument("--encapsulation", type=common.non_negative_int, default=0, metavar="BYTES",
                   help="encapsulation bytes added to every frame (default 0)")
    q.add_argument("--core-rate", type=_list(lambda t: _exact(t, "a packet rate such as 10M", 1)), required=True,
                   metavar="PPS[,PPS...]", help="packets/s one core forwards (10M,20M: declared figures)")
    q.add_argument("--target-utilization", type=_share, default="1", metavar="U",
                   help="core utilization to provision for (default 1)")
    q.add_argument("--retained", type=_exact_share_or_zero, default="1", metavar="H",
                   help="share of the per-packet host work left on the host (default 1; 0 = offloaded)")


def _exact_share_or_zero(text):
    from fractions import Fraction

    return Fraction(_exact(text, "a fraction in [0, 1] such as 1 or 1/4", 0, 1))


def _nic(args):
    from fractions import Fraction

    from ..analyses.packet_budget import packet_budget
    from ..errors import UserError

    if sum(p for _, p, _ in args.frames) != 1:
        raise UserError("--frames shares must sum to exactly 1 (they are shares of the packet count)")
    return packet_budget(line_bits_per_s=args.line_rate, classes=args.frames,
                         core_rates=[Fraction(r) for r in args.core_rate], utilization=Fraction(args.utilization),
                         wire_overhead_bytes=args.wire_overhead, encapsulation_bytes=args.encapsulation,
                         target_utilization=Fraction(args.target_utilization), retained=Fraction(args.retained))


_EXACT_TIME_UNITS = (("min", 60), ("ns", Fraction(1, 10**9)), ("us", Fraction(1, 10**6)), ("ms", Fraction(1, 1000)),
                     ("h", 3600), ("s", 1))


def exact_seconds(text):
    """A declared time kept exact, unit required: 1/10s, 300ms, 0.2s, 5s (ns, us, ms, s, min, h)."""
    unit = next(((u, f) for u, f in _EXACT_TIME_UNITS if text.endswith(u)), None)
    try:
        value = Fraction(text[:-len(unit[0])]) * unit[1] if unit and len(text) <= 40 else None
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or not 0 <= value <= 10**9:
        raise argparse.ArgumentTypeError(f"must be a time with a unit such as 1/10s, 300ms or 5s, got '{text}'")
    return value


def _image_request_arguments(q):
    q.add_argument("--input-bytes", type=common.byte_size, required=True, metavar="S",
                   help="input file the client uploads (30MB = 3 x 10^7 B)")
    q.add_argument("--output-bytes", type=common.byte_size, required=True, metavar="S",
                   help="final image file it downloads (5MB)")
    q.add_argument("--upload-rate", type=_line_rate, required=True, metavar="R", help="upload bits/s (20Mb/s)")
    q.add_argument("--download-rate", type=_line_rate, required=True, metavar="R", help="download bits/s (100Mb/s)")
    for flag, text in (("--rtt", "request round trip, charged once"), ("--model-time", "the model's service time")):
        q.add_argument(flag, type=exact_seconds, required=True, metavar="T", help=f"{text} (e.g. 1/10s, 300ms)")
    for flag, text in (("--prepare-time", "input preparation"), ("--connection-time", "connection setup"),
                       ("--queue-time", "server queue"), ("--decode-time", "input decode"),
                       ("--encode-time", "final image encode"), ("--use-time", "output use")):
        q.add_argument(flag, type=exact_seconds, default=Fraction(0), metavar="T", help=f"{text} (default 0s)")
    q.add_argument("--local-time", type=exact_seconds, default=None, metavar="T",
                   help="a declared local time of the same boundary, to compare against (e.g. 5s)")
    q.add_argument("--compressed-bytes", type=common.byte_size, default=None, metavar="S",
                   help="add a compressed variant sending S bytes (same quality asserted by the caller)")
    q.add_argument("--compress-time", type=exact_seconds, default=Fraction(0), metavar="T",
                   help="its extra client-side compression (default 0s)")
    q.add_argument("--decompress-time", type=exact_seconds, default=Fraction(0), metavar="T",
                   help="its extra server-side decompression (default 0s)")


def _image_request(args):
    from ..analyses.image_request import image_request
    from ..errors import UserError

    compressed = None
    if args.compressed_bytes is not None:
        if args.compressed_bytes > args.input_bytes:
            raise UserError(f"--compressed-bytes {args.compressed_bytes:,} exceeds --input-bytes {args.input_bytes:,}")
        compressed = (args.compressed_bytes, args.compress_time, args.decompress_time)
    elif args.compress_time or args.decompress_time:
        raise UserError("--compress-time and --decompress-time need --compressed-bytes")
    times = {"input_preparation": args.prepare_time, "connection": args.connection_time,
             "request_round_trip": args.rtt, "queue": args.queue_time, "input_decode": args.decode_time,
             "model": args.model_time, "final_image_encode": args.encode_time, "output_use": args.use_time}
    return image_request(input_bytes=args.input_bytes, output_bytes=args.output_bytes,
                         upload_bits_per_s=args.upload_rate, download_bits_per_s=args.download_rate, times=times,
                         local_s=args.local_time, compressed=compressed)


def exact_ns(text):
    """A declared time as whole nanoseconds: 20ms, 12ms, 1/20s (unit required)."""
    value = exact_seconds(text) * 10**9
    if value.denominator != 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of nanoseconds, got '{text}'")
    return int(value)


def _audio_arguments(q):
    q.add_argument("--frame", dest="frame_ns", type=exact_ns, required=True, metavar="T", help="frame length (20ms)")
    q.add_argument("--network-delays", dest="network_delays_ns", type=_list(exact_ns), required=True, metavar="T,T,...",
                   help="each frame's network delay after its send, one per frame (5ms,5ms,50ms,...)")
    q.add_argument("--model-times", dest="model_times_ns", type=_list(exact_ns), required=True, metavar="T[,T...]",
                   help="model time per frame: one for every frame, or one per frame (12ms)")
    q.add_argument("--send-time", dest="send_time_ns", type=exact_ns, default=0, metavar="T", help="link time per frame (default 0s)")
    q.add_argument("--jitter-buffer", dest="jitter_buffer_ns", type=exact_ns, default=0, metavar="T",
                   help="wait after frame 0 arrives before playback (default 0s)")
    q.add_argument("--sample-rate", type=common.positive_int, required=True, metavar="HZ", help="PCM samples/s (24000)")
    q.add_argument("--channels", type=common.positive_int, default=1, help="PCM channels (default 1)")
    q.add_argument("--sample-bytes", type=common.positive_int, default=2, help="bytes per sample (default 2)")
    q.add_argument("--interrupt", dest="interrupt_ns", type=exact_ns, default=None, metavar="T",
                   help="a user interruption at this time: mute at the next device quantum after the control delay")
    q.add_argument("--control-delay", dest="control_delay_ns", type=exact_ns, default=0, metavar="T", help="interrupt to mute command (default 0s)")
    q.add_argument("--device-quantum", dest="device_quantum_ns", type=exact_ns, default=1, metavar="T",
                   help="the audio device's period; mute takes effect on its boundaries (default 1ns)")


def _audio(args):
    from ..analyses.audio_timing import audio_timing
    from ..errors import UserError

    frames = len(args.network_delays_ns)
    models = args.model_times_ns * frames if len(args.model_times_ns) == 1 else args.model_times_ns
    if len(models) != frames or frames > 10**5:
        raise UserError(f"--model-times gives {len(args.model_times_ns)} times for {frames} frames (--network-delays): "
                        f"give one, or one per frame")
    if not args.frame_ns or not args.device_quantum_ns or not all(models):
        raise UserError("--frame, --model-times and --device-quantum must be positive")
    try:
        return audio_timing(frame_ns=args.frame_ns, model_ns=models, network_delay_ns=args.network_delays_ns,
                            send_ns=args.send_time_ns, jitter_buffer_ns=args.jitter_buffer_ns, sample_rate=args.sample_rate,
                            channels=args.channels, sample_bytes=args.sample_bytes, interrupt_ns=args.interrupt_ns,
                            control_delay_ns=args.control_delay_ns, device_quantum_ns=args.device_quantum_ns)
    except ValueError as e:
        raise UserError(str(e))


def _trace_request(text):
    """ARRIVAL:P:G:PREFILL:DECODE: 0ms:1024:128:1.024ms:1ms (times with units, whole ns)."""
    parts = text.split(":")
    try:
        if len(parts) != 5:
            raise argparse.ArgumentTypeError(text)
        prompt, out = common.positive_int(parts[1]), common.positive_int(parts[2])
        return exact_ns(parts[0]), prompt, out, exact_ns(parts[3]), exact_ns(parts[4])
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be ARRIVAL:P:G:PREFILL:DECODE (times with units: "
                                         f"0ms:1024:128:1.024ms:1ms), got '{text}'")


def _trace_arguments(q):
    common.add_model(q)
    q.add_argument("--request", type=_checked(_trace_request), action="append", required=True,
                   metavar="ARRIVAL:P:G:PREFILL:DECODE",
                   help="a request: arrival, prompt and output tokens, declared prefill time and time per decode "
                        "step; repeatable (input order breaks arrival ties)")
    q.add_argument("--workers", type=common.positive_int, default=1, help="workers, one request each (default 1)")
    q.add_argument("--kv-capacity", type=common.byte_size, default=None, metavar="BYTES",
                   help="a shared KV budget: each request reserves its final length from start to finish")
    q.set_defaults(weight_dtype=None, act_dtype="bf16")
    q.add_argument("--kv-dtype", default=None, metavar="FMT", help="KV cache format (default bf16)")
    common.add_architecture_options(q)


def _trace(args):
    from ..analyses.serve import iteration
    from ..analyses.worker_trace import worker_trace
    from ..errors import UserError
    from ..load.models import load_model

    requests = [_trace_request(t) for t in args.request]
    if len(requests) > 1000 or sum(r[2] for r in requests) > 10**6:
        raise UserError("--request: at most 1,000 requests and 10^6 output tokens in all")
    arch = load_model(args.model)
    w = common.workload(args, arch, 1, 1, 0)
    per_token = arch.kv_bytes(w.kv_dtype, 1, w.mla)
    big = next((r for r in requests if args.kv_capacity is not None and per_token * (r[1] + r[2] - 1) > args.kv_capacity),
               None)
    if big:
        raise UserError(f"a request of {big[1]} + {big[2]} tokens reserves {per_token * (big[1] + big[2] - 1):,} B of KV, "
                        f"more than --kv-capacity {args.kv_capacity:,} B: it could never start")
    flops = {}
    for _, prompt, out, _, _ in requests:
        if (prompt, out) not in flops:
            parts = iteration.Parts(arch, w, prompt, out)
            flops[(prompt, out)] = (iteration.totals(parts.prefill)[0], iteration.totals(parts.decode)[0])
    return dict({"model": arch.id}, **worker_trace(requests, args.workers, per_token, args.kv_capacity, flops))


def _ratio_at_least_zero(text):
    return Fraction(_exact(text, "a non-negative number such as 1, 3/2 or 0.5"))


def _voice_demand_arguments(q):
    q.add_argument("--minutes", type=_ratio_at_least_zero, required=True, metavar="M",
                   help="voice minutes per person per day (the anchor: 3 doubles the capacity)")
    for flag, text in (("--population", "relative population"), ("--work-per-audio-second", "relative work per audio "
                       "second"), ("--peak-factor", "relative peak requirement")):
        q.add_argument(flag, type=_ratio_at_least_zero, default=Fraction(1), metavar="X", help=f"{text} (default 1)")
    q.add_argument("--baseline-servers", type=common.positive_int, default=None, metavar="S",
                   help="declared server equivalents of today's capacity, for whole added servers")
    q.add_argument("--effective-gain", type=_ratio_at_least_zero, default=None, metavar="G",
                   help="a declared throughput gain on the added work only (e.g. 4)")


def _voice_demand(args):
    from ..analyses.voice_demand import voice_demand
    from ..errors import UserError

    if args.effective_gain is not None and not args.effective_gain:
        raise UserError("--effective-gain must be positive")
    return voice_demand(minutes=args.minutes, population=args.population, work=args.work_per_audio_second,
                        peak=args.peak_factor, baseline_servers=args.baseline_servers, gain=args.effective_gain)


def _batch_reuse_arguments(q):
    common.add_model(q)
    q.add_argument("--history", type=common.tokens_or_zero, required=True, metavar="H",
                   help="history tokens of every request (0: a first decode step after nothing)")
    q.add_argument("--batches", type=common.positive_int_list, default=(1, 4, 16, 64), metavar="B[,B...]",
                   help="batches for the per-batch rows (default 1,4,16,64)")
    q.add_argument("--workspace", type=byte_count, default=0, metavar="BYTES",
                   help="declared workspace beside the weights and KV (default 0)")
    common.add_dtypes(q)
    _device(q)


def _batch_reuse(args):
    from ..analyses.batch_reuse import batch_reuse
    from ..errors import UserError
    from ..layout import moe_experts
    from ..ledger import build
    from ..load.models import load_model

    arch = load_model(args.model)
    if moe_experts(arch):
        raise UserError(f"batch-reuse is a dense model's rule: {arch.id} routes tokens to experts, whose union "
                        "grows with the batch")
    w = common.workload(args, arch, 1, 1, args.history).replace(new_kv="on-chip", logits="last")
    one, two = (build(arch, w.replace(batch=b)).totals for b in (1, 2))
    row = two.weight_bytes_read - one.weight_bytes_read
    device, capacity, peak = _device_figures(args, args.device)
    out = batch_reuse(resident=one.weight_bytes, shared=one.weight_bytes_read - row, embedding_row=row,
                      kv_per_token=one.kv_bytes_written, history=args.history,
                      matrix_flops=one.linear_flops + one.attention_flops_causal, peak=peak,
                      bandwidth=device.memory_bandwidth_bytes_per_s, capacity=capacity, workspace=args.workspace,
                      batches=args.batches)
    return dict({"model": arch.id, "device": device.id}, **out)


def _kda_chunk_arguments(q):
    common.add_model(q)
    q.add_argument("--tokens", type=common.positive_int, required=True, help="tokens T of the sequence")
    q.add_argument("--chunk", type=common.positive_int, default=None,
                   help="chunk size C (default the model's; the kernel supports 32 and 64)")
    q.add_argument("--batch", type=common.positive_int, default=1, help="sequences (default 1)")


def _kda_chunk(args):
    from ..analyses.kda_chunk import kda_chunk
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    kda = [b for layer in arch.layers for b in layer.blocks if getattr(b, "kind", None) == "KDA"]
    if not kda:
        raise UserError(f"model '{arch.id}' has no KDA (Kimi Delta Attention) layer")
    chunk = args.chunk or kda[0].chunk
    if chunk not in (32, 64):
        raise UserError(f"--chunk {chunk}: the chunked KDA kernel supports 32 and 64")
    return dict({"model": arch.id, "chunk": chunk}, **kda_chunk(batch=args.batch, tokens=args.tokens, chunk=chunk,
                                                            heads=kda[0].heads, d=kda[0].head_dim, layers=len(kda)))


def _handshake(text):
    """Messages DIR:BYTES,...: c2s:400,s2c:800 (each sent when the previous one arrives)."""
    out = []
    for item in text.split(",") if text else ():
        d, colon, b = item.strip().partition(":")
        size = common.digits(b)
        if d not in ("c2s", "s2c") or not size or len(out) >= 8:
            raise argparse.ArgumentTypeError(f"must be up to 8 messages c2s:BYTES or s2c:BYTES separated by commas "
                                             f"(c2s:400,s2c:800), got '{text}'")
        out.append((d, size))
    return tuple(out)


def _drop(text):
    name, colon, p = text.partition(":")
    segment = common.digits(p)
    if name not in ("upload", "download") or segment is None:
        raise argparse.ArgumentTypeError(f"must be upload:SEGMENT or download:SEGMENT (upload:12), got '{text}'")
    return name, segment


def _ack_window_arguments(q):
    q.add_argument("--input-bytes", type=common.byte_size, required=True, metavar="S", help="upload file (30MB)")
    q.add_argument("--output-bytes", type=common.byte_size, required=True, metavar="S", help="download file (5MB)")
    q.add_argument("--segment-bytes", type=common.positive_int, required=True, metavar="B", help="payload per segment")
    q.add_argument("--upload-rate", type=_line_rate, required=True, metavar="R", help="client-to-server bits/s")
    q.add_argument("--download-rate", type=_line_rate, required=True, metavar="R", help="server-to-client bits/s")
    q.add_argument("--forward-delay", type=exact_seconds, required=True, metavar="T", help="one-way delay up (1/20s)")
    q.add_argument("--reverse-delay", type=exact_seconds, required=True, metavar="T", help="one-way delay down")
    q.add_argument("--initial-window", type=common.positive_int, required=True, metavar="B",
                   help="initial congestion window, payload bytes")
    q.add_argument("--max-window", type=common.positive_int, required=True, metavar="B", help="window cap")
    q.add_argument("--receive-window", type=common.positive_int, required=True, metavar="B",
                   help="fixed receive window beyond the acknowledged prefix")
    q.add_argument("--window-growth", type=common.non_negative_int, required=True, metavar="B",
                   help="window growth per newly acknowledged segment, at most its payload")
    q.add_argument("--header-bytes", type=common.non_negative_int, required=True, metavar="B", help="per data segment")
    q.add_argument("--ack-bytes", type=common.non_negative_int, required=True, metavar="B", help="per ACK")
    q.add_argument("--rto", type=exact_seconds, required=True, metavar="T", help="fixed retransmission timeout")
    q.add_argument("--model-time", type=exact_seconds, required=True, metavar="T", help="server model time")
    q.add_argument("--handshake", type=_checked(_handshake), default="", metavar="DIR:BYTES,...",
                   help="messages opening a connection, in order (default none)")
    q.add_argument("--drop", type=_checked(_drop), default=None, metavar="upload|download:SEGMENT",
                   help="the one first transmission lost (retransmitted at its timeout)")
    q.add_argument("--start-time", type=exact_seconds, default=Fraction(0), metavar="T",
                   help="when the first request is submitted (default 0s)")
    q.add_argument("--requests", type=common.positive_int, default=1, metavar="N", help="consecutive requests (default 1)")
    q.add_argument("--strategy", choices=("fresh", "ticket", "reuse_reset", "reuse_warm"), default="fresh",
                   help="connection per later request: fresh (full handshake), ticket (first two messages), "
                        "reuse_reset / reuse_warm (the first connection, windows reset or kept); default fresh")
    q.add_argument("--submit-on", choices=("complete_received", "quiet"), default="complete_received",
                   help="the next request follows the response's arrival or its last ACK (default complete_received)")
    q.add_argument("--think-time", type=exact_seconds, default=Fraction(0), metavar="T", help="before the next request")
    q.add_argument("--initial-upload-window", type=common.positive_int, default=None, metavar="B",
                   help="a different initial window client to server")
    q.add_argument("--initial-download-window", type=common.positive_int, default=None, metavar="B",
                   help="a different initial window server to client")
    q.add_argument("--loss-request", type=common.positive_int, default=1, metavar="K",
                   help="the request whose segment --drop loses (default 1)")


def _ack_window(args):
    from ..analyses.ack_window import ack_window, segments
    from ..errors import UserError

    drop = args.drop and _drop(args.drop)
    packets = segments(args.input_bytes, args.output_bytes, args.segment_bytes)
    if args.requests * sum(packets.values()) > 10**5:
        raise UserError("at most 10^5 segments in all (--requests x segments per request)")
    if drop and drop[1] >= packets[drop[0]]:
        raise UserError(f"--drop {args.drop}: the {drop[0]} has segments 0 to {packets[drop[0]] - 1}")
    if args.loss_request > args.requests:
        raise UserError(f"--loss-request {args.loss_request} exceeds --requests {args.requests}")
    windows = {"upload": args.initial_upload_window or args.initial_window,
               "download": args.initial_download_window or args.initial_window}
    for name, size in (("upload", args.input_bytes), ("download", args.output_bytes)):
        if windows[name] > args.max_window or windows[name] < min(args.segment_bytes, size):
            raise UserError(f"the initial {name} window must hold one segment and not exceed --max-window")
    if args.receive_window < min(args.segment_bytes, max(args.input_bytes, args.output_bytes)):
        raise UserError("--receive-window must hold one segment")
    try:
        return ack_window(input_bytes=args.input_bytes, output_bytes=args.output_bytes, segment_bytes=args.segment_bytes,
                          upload_bits_per_s=args.upload_rate, download_bits_per_s=args.download_rate,
                          forward_s=args.forward_delay, reverse_s=args.reverse_delay, initial_window=args.initial_window,
                          max_window=args.max_window, receive_window=args.receive_window, growth=args.window_growth,
                          header_bytes=args.header_bytes, ack_bytes=args.ack_bytes, rto_s=args.rto,
                          model_s=args.model_time, handshake=_handshake(args.handshake), requests=args.requests,
                          strategy=args.strategy, submit_on=args.submit_on, think_s=args.think_time,
                          start_s=args.start_time, drop=drop, loss_request=args.loss_request, initial_windows=windows)
    except ValueError as e:
        raise UserError(str(e))


def _environments_arguments(q):
    q.add_argument("--environments", type=common.positive_int, required=True, metavar="N", help="environments (100)")
    for flag, text in (("--template-bytes", "template state (2GiB)"), ("--touched-bytes", "bytes an environment touches"),
                       ("--dirty-bytes", "bytes it writes (within touched)"),
                       ("--hot-readonly-bytes", "hot read-only bytes (within touched, beside dirty)"),
                       ("--overhead-bytes", "private overhead per environment"),
                       ("--local-budget-bytes", "local memory budget"), ("--snapshot-delta-bytes", "one branch's delta"),
                       ("--environment-bytes", "bytes a prewarmed environment holds")):
        q.add_argument(flag, type=byte_count, required=True, metavar="BYTES", help=text)
    q.add_argument("--transfer-rate", type=common.byte_size, required=True, metavar="BYTES",
                   help="declared effective byte service per second (1GiB)")
    q.add_argument("--preparation-time", type=exact_seconds, required=True, metavar="T", help="environment preparation")
    q.add_argument("--lead-time", type=exact_seconds, required=True, metavar="T", help="prewarm start before the call")
    q.add_argument("--hit", type=_exact_share_or_zero, required=True, metavar="P", help="prediction hit probability")
    q.add_argument("--timeout", type=exact_seconds, required=True, metavar="T",
                   help="a wrong prewarm is cancelled this long after the call")


def _environments(args):
    from ..analyses.environment_budget import environment_budget
    from ..errors import UserError

    if not args.dirty_bytes <= args.touched_bytes <= args.template_bytes or \
            args.hot_readonly_bytes > args.touched_bytes - args.dirty_bytes:
        raise UserError("need dirty <= touched <= template and hot read-only <= touched - dirty")
    if args.snapshot_delta_bytes > args.template_bytes:
        raise UserError("--snapshot-delta-bytes exceeds --template-bytes")
    return environment_budget(environments=args.environments, template=args.template_bytes,
                              touched=args.touched_bytes, dirty=args.dirty_bytes, hot_readonly=args.hot_readonly_bytes,
                              overhead=args.overhead_bytes, local_budget=args.local_budget_bytes,
                              delta=args.snapshot_delta_bytes, bytes_per_s=args.transfer_rate,
                              preparation_s=args.preparation_time, lead_s=args.lead_time, hit=Fraction(args.hit),
                              timeout_s=args.timeout, environment_bytes=args.environment_bytes)


def _sequence_toy_arguments(q):
    q.add_argument("--tokens", type=common.positive_int, default=4, help="known tokens T (default 4; one more is supplied)")
    q.add_argument("--layers", type=common.positive_int, default=3, help="layers L (default 3)")
    q.add_argument("--width", type=common.positive_int, default=4, help="width D (default 4)")
    q.add_argument("--ff-width", type=common.positive_int, default=8, help="Transformer feed-forward width F (default 8)")
    q.add_argument("--vocabulary", type=common.positive_int, default=5, help="input table rows (default 5)")


def _sequence_toy(args):
    from ..analyses.sequence_toy import sequence_toy
    from ..errors import UserError

    if args.tokens > 4096 or args.layers * args.width * args.ff_width > 10**9:
        raise UserError("--tokens at most 4096 (a teaching sequence)")
    return sequence_toy(tokens=args.tokens, layers=args.layers, d=args.width, f=args.ff_width,
                        vocabulary=args.vocabulary)


def _ec_pool_arguments(q):
    from .encode import image_size

    common.add_model(q)
    q.add_argument("--image", type=image_size, required=True, metavar="WxH", help="the image after preprocessing")
    q.add_argument("--images", type=common.positive_int, default=1, metavar="N", help="images per request (default 1)")
    q.add_argument("--text-tokens", type=common.tokens_or_zero, default=0, metavar="T",
                   help="other input positions, for the declared input KV (default 0)")
    q.add_argument("--workers", type=common.positive_int, required=True, help="encoder + PD workers (at least 2)")
    q.add_argument("--encoder-rate", type=lambda t: _exact(t, "images/s, e.g. 12", 0), required=True,
                   metavar="IMAGES/S", help="uncached images per second of one encoder worker")
    q.add_argument("--pd-rate", type=lambda t: _exact(t, "requests/s, e.g. 4", 0), required=True,
                   metavar="REQUESTS/S", help="requests per second of one PD worker")
    q.add_argument("--network", type=_byte_rate, required=True, metavar="BYTES/S",
                   help="shared E-to-PD network in bytes/s (300MB)")
    q.add_argument("--hit", type=lambda t: _exact(t, "a fraction in [0, 1] such as 3/4", 0, 1), default=Fraction(0),
                   metavar="H", help="fraction of images served from the encoder cache (default 0)")
    q.add_argument("--arrival", type=lambda t: _exact(t, "requests/s", 0), default=Fraction(0), metavar="REQUESTS/S",
                   help="offered requests/s, compared with the bound (default 0)")
    q.add_argument("--compressed-bytes", type=common.byte_size, default=None, metavar="BYTES",
                   help="one compressed image, for the uplink comparison")
    q.add_argument("--uplink-rate", type=_line_rate, default=None, metavar="R", help="uplink bits/s (6.4Mb/s)")
    common.add_dtypes(q)


def _ec_pool(args):
    from ..analyses import ec_pool, kv, vision_encoder
    from ..errors import UserError
    from ..load.models import load_model

    if args.workers < 2:
        raise UserError("--workers must be at least 2 (a positive encoder and PD pool)")
    if args.encoder_rate == 0 or args.pd_rate == 0:
        raise UserError("--encoder-rate and --pd-rate must be positive")
    arch = load_model(args.model)
    w = common.workload(args, arch, 1, 1, 0)
    state = kv.bytes_per_request(arch, w, 0)
    rec = vision_encoder.encode(arch, [args.image], 0, w.weight_dtype, w.act_dtype,
                                lambda t: kv.bytes_per_request(arch, w, t) - state)
    image, tower = rec["images"][0], rec["tower"]
    tokens, ec = image["tokens"], image["ec_bytes"]
    final = ec // (1 + len(tower["deepstack"]))
    request_ec = args.images * ec
    per_position = kv.bytes_per_request(arch, w, 1) - state
    positions = args.images * tokens + args.text_tokens
    if positions > arch.max_context:
        raise UserError(f"the request's {positions:,} input positions exceed the model's context of {arch.max_context:,}")
    rows = ec_pool.pool_splits(args.workers, args.images, args.hit, args.encoder_rate, args.pd_rate, args.network,
                               request_ec)
    best = max(r["bound"] for r in rows)
    hidden = vision_encoder.tower_of(arch).out_hidden
    width, height = args.image
    out = {"model": arch.id, "grid_thw": [1, height // tower["patch"], width // tower["patch"]],
           "patches": image["patches"], "image_positions": tokens,
           "deepstack_blocks": tower["deepstack"], "final_embedding_shape": [tokens, hidden],
           "ec_shape": [tokens, hidden * (1 + len(tower["deepstack"]))], "final_embedding_bytes_per_image": final,
           "deepstack_bytes_per_image": ec - final, "ec_bytes_per_image": ec, "ec_bytes_per_request": request_ec,
           "visual_positions_per_request": args.images * tokens, "input_positions": positions,
           "kv_bytes_per_position": per_position, "visual_kv_bytes_per_image": image["kv_bytes"],
           "visual_kv_bytes_per_request": args.images * image["kv_bytes"],
           "text_kv_bytes": args.text_tokens * per_position, "input_kv_bytes": positions * per_position,
           "one_image_ec_network_s_exact": str(Fraction(ec) / args.network),
           "one_request_ec_network_s_exact": str(Fraction(request_ec) / args.network),
           "uncached_images_per_request_exact": str(args.images * (1 - args.hit))}
    if args.compressed_bytes is not None:
        out["ec_to_compressed_ratio_exact"] = str(Fraction(ec, args.compressed_bytes))
    if args.uplink_rate is not None:
        uplink = Fraction(args.uplink_rate, 8)
        if args.compressed_bytes is not None:
            out["compressed_image_uplink_s_exact"] = str(args.compressed_bytes / uplink)
        out["ec_uplink_s_exact"] = str(ec / uplink)
    out.update({"best_bound_requests_per_s_exact": str(best),
                "best_splits": ", ".join(f"{r['encoder_workers']}E+{r['pd_workers']}PD" for r in rows
                                         if r["bound"] == best),
                "arrival_below_best_bound": args.arrival < best,
                "splits": [dict({k: v for k, v in r.items() if k != "bound"}, arrival_below_bound=args.arrival < r["bound"])
                           for r in rows],
                "ec_components": [{"name": "final_embedding", "vision_block": None, "shape": [tokens, hidden],
                                   "bytes": final}]
                + [{"name": f"deepstack_{b}", "vision_block": b, "shape": [tokens, hidden],
                    "bytes": final} for b in tower["deepstack"]]})
    return out


def _byte_rate(text):
    """Bytes per second: a size (50GB, 25GiB) or an exact positive number or fraction (256025000000000/25901553)."""
    from fractions import Fraction

    try:
        return Fraction(common.byte_size(text))
    except (argparse.ArgumentTypeError, ValueError):
        pass
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or not 0 < value <= 10**18 or len(text) > 60:
        raise argparse.ArgumentTypeError(f"must be a byte rate such as 50GB or an exact number such as "
                                         f"256025000000000/25901553 bytes/s, got '{text}'")
    return value


def _server_scope_arguments(q):
    common.add_model(q)
    q.add_argument("--cards", type=common.positive_int, default=8, help="cards in all (default 8)")
    q.add_argument("--history", type=common.non_negative_int, required=True, metavar="H", help="history tokens")
    q.add_argument("--decode-steps", type=common.positive_int, required=True, metavar="S", help="decode forwards")
    q.add_argument("--batch", type=common.positive_int, default=1, help="requests (default 1)")
    q.add_argument("--capacity-bytes", type=common.byte_size, required=True, metavar="BYTES", help="per card")
    q.add_argument("--workspace-bytes", type=byte_count, default=0, metavar="BYTES", help="declared per card (default 0)")
    q.add_argument("--local-bw", type=_byte_rate, required=True, metavar="BYTES/S",
                   help="local collective edge bandwidth in bytes/s (50GB)")
    q.add_argument("--local-startup", type=exact_seconds, required=True, metavar="T", help="per local startup (2us)")
    q.add_argument("--remote-bw", type=_byte_rate, required=True, metavar="BYTES/S",
                   help="shared inter-server egress bandwidth in bytes/s (25GB)")
    q.add_argument("--remote-startup", type=exact_seconds, required=True, metavar="T", help="per remote startup (5us)")
    q.set_defaults(weight_dtype=None, act_dtype="bf16", kv_dtype=None)


def _server_scope(args):
    from ..analyses import kv
    from ..analyses import server_scope as ss
    from ..errors import UserError
    from ..layout import Layout
    from ..load.models import load_model

    if args.cards % 2:
        raise UserError("--cards must be even (two servers of C/2 cards)")
    arch = load_model(args.model)
    w = common.workload(args, arch, 1, 1, 0)
    context = args.history + args.decode_steps
    candidates, paths = [], []
    for name, tp, pp in ((f"single_server_tp{args.cards}", args.cards, 1),
                         (f"two_servers_tp{args.cards // 2}_pp2", args.cards // 2, 2)):
        stages = kv.plan(arch, w, Layout(tp=tp, pp=pp))
        cards = []
        for st in stages:
            kv_bytes = args.batch * kv.demand(st, w, context, tp, None, 0).own
            resident = st.weight_bytes + kv_bytes + args.workspace_bytes
            cards.append({"server": st.index if pp > 1 else 0, "stage": st.index, "cards": tp, "layers": f"{st.first}-{st.last}",
                          "weight_bytes": st.weight_bytes, "kv_bytes": kv_bytes, "workspace_bytes": args.workspace_bytes,
                          "resident_bytes": resident, "fits": resident <= args.capacity_bytes})
        ops = ss.decode_collectives(layers_per_stage=[st.last - st.first + 1 for st in stages], tp=tp, pp=pp,
                                    hidden=arch.hidden_size, vocab=arch.vocab_size, batch=args.batch)
        local, payload, calls, remote = ss.path_seconds(ops, args.local_startup, args.local_bw, args.remote_startup,
                                                        args.remote_bw)
        paths.append((local, payload, calls, local + remote))
        candidates.append({"candidate": name, "servers": pp, "cards_per_server": tp, "final_positions": context,
                           "max_card_resident_bytes": max(c["resident_bytes"] for c in cards),
                           "all_cards_fit": all(c["fits"] for c in cards), "local_s_exact": str(local),
                           "interserver_payload_bytes": payload, "interserver_startups": calls,
                           "per_forward_s_exact": str(local + remote), "per_forward_s": float(local + remote),
                           "all_forwards_s_exact": str(args.decode_steps * (local + remote)),
                           "cards": cards, "operations": [
                               {"operation": n, "stage": s, "layer": l, "path": "interserver" if r else "local",
                                "startups": k, "bytes": int(b) if b == int(b) else str(b),
                                "all_forwards_s_exact": str(args.decode_steps * ss.operation_seconds(
                                    k, b, *((args.remote_startup, args.remote_bw) if r else
                                            (args.local_startup, args.local_bw))))}
                               for n, s, l, r, k, b in ops]})
    single, two = paths[0][3], paths[1][3]
    bw, startup = ss.crossover(single, paths[1][0], paths[1][1], paths[1][2], args.remote_startup, args.remote_bw)
    preference = "tie" if single == two else candidates[0 if single < two else 1]["candidate"]
    return {"model": arch.id, "candidates": [{k: v for k, v in c.items() if k not in ("cards", "operations")}
                                              for c in candidates],
            "cards": [dict(candidate=c["candidate"], **card) for c in candidates for card in c["cards"]],
            "communication_preference": preference, "both_fit": all(c["all_cards_fit"] for c in candidates),
            "two_servers_cheaper_above_remote_bw_exact": None if bw is None else str(bw),
            "two_servers_cheaper_below_remote_startup_s_exact": None if startup is None else str(startup),
            "operations": [dict(candidate=c["candidate"], **op) for c in candidates for op in c["operations"]]}


def _blocks(text):
    """Blocks IN:OUT:PROCESS:ENCODE,...: 10MB:1MB:1/10s:0s,10MB:2MB:1/10s:0s."""
    out = []
    for item in text.split(",") if len(text) <= 4000 else ():
        parts = item.strip().split(":")
        try:
            if len(parts) != 4:
                raise argparse.ArgumentTypeError(item)
            out.append((common.byte_size(parts[0]), common.byte_size(parts[1]), exact_seconds(parts[2]),
                        exact_seconds(parts[3])))
        except argparse.ArgumentTypeError:
            out = []
            break
    if not out or len(out) > 256:
        raise argparse.ArgumentTypeError(f"must be blocks IN:OUT:PROCESS:ENCODE separated by commas "
                                         f"(10MB:1MB:1/10s:0s,10MB:2MB:1/10s:0s), at most 256, got '{text}'")
    return tuple(out)


def _preview(text):
    """AFTER:BYTES:ENCODE: 0:500KB:1/20s (a preview after block AFTER's encode)."""
    parts = text.split(":")
    after = common.digits(parts[0]) if len(parts) == 3 else None
    try:
        if after is None:
            raise argparse.ArgumentTypeError(text)
        return after, common.byte_size(parts[1]), exact_seconds(parts[2])
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be AFTER:BYTES:ENCODE (a block index, the preview's bytes and its "
                                         f"encode time: 0:500KB:1/20s), got '{text}'")


_checked = common.as_given


def _image_stream_arguments(q):
    q.add_argument("--blocks", type=_checked(_blocks), required=True, metavar="IN:OUT:PROCESS:ENCODE,...",
                   help="per block: input bytes, final output bytes, process and encode time, in upload order")
    q.add_argument("--upload-rate", type=_line_rate, required=True, metavar="R", help="upload bits/s (20Mb/s)")
    q.add_argument("--download-rate", type=_line_rate, required=True, metavar="R", help="download bits/s (100Mb/s)")
    q.add_argument("--forward-delay", type=exact_seconds, default=Fraction(0), metavar="T",
                   help="propagation after each upload serialization (e.g. 1/20s; default 0s)")
    q.add_argument("--reverse-delay", type=exact_seconds, default=Fraction(0), metavar="T",
                   help="propagation after each download serialization (default 0s)")
    for flag, text in (("--prepare-time", "client preparation"), ("--connection-time", "connection setup"),
                       ("--assembly-time", "client assembly after the last final block")):
        q.add_argument(flag, type=exact_seconds, default=Fraction(0), metavar="T", help=f"{text} (default 0s)")
    q.add_argument("--independent", action="store_true",
                   help="block i needs only input i and its own encode (the caller asserts the same final quality); "
                        "default: whole-image barriers")
    q.add_argument("--preview", type=_checked(_preview), default=None, metavar="AFTER:BYTES:ENCODE",
                   help="a preview encoded after block AFTER, of BYTES extra download (0:500KB:1/20s)")


def _image_stream(args):
    from ..analyses.image_stream import block_schedule
    from ..errors import UserError

    blocks, preview = _blocks(args.blocks), args.preview and _preview(args.preview)
    if preview and preview[0] >= len(blocks):
        raise UserError(f"--preview after block {preview[0]}: there are {len(blocks)} blocks (0 to {len(blocks) - 1})")
    return block_schedule(blocks=blocks, independent=args.independent, upload_bits_per_s=args.upload_rate,
                          download_bits_per_s=args.download_rate, forward_s=args.forward_delay,
                          reverse_s=args.reverse_delay, prepare_s=args.prepare_time, connection_s=args.connection_time,
                          assembly_s=args.assembly_time, preview=preview)


_CANDIDATE_KEYS = {"input": "input_price", "cache": "cache_price", "output": "output_price", "reasoning": "reasoning",
                   "visible": "visible", "quality": "quality", "hit": "hit", "hit-time": "hit_s", "miss-time": "miss_s"}


def _candidate(text):
    """NAME,input=P,cache=P,output=P,reasoning=N,visible=N,quality=Q,hit=F,hit-time=T,miss-time=T."""
    name, *items = [t.strip() for t in text.split(",")]
    c = {"name": name}
    try:
        for item in items:
            key, eq, value = item.partition("=")
            if not eq or key not in _CANDIDATE_KEYS or _CANDIDATE_KEYS[key] in c:
                raise argparse.ArgumentTypeError(item)
            if key in ("hit-time", "miss-time"):
                parsed = exact_seconds(value)
            elif key in ("quality", "hit"):
                parsed = Fraction(_exact(value, "a probability", 0, 1))
            elif key in ("reasoning", "visible"):
                parsed = common.non_negative_int(value)
            else:
                parsed = Fraction(_exact(value, "a price per million tokens"))
            c[_CANDIDATE_KEYS[key]] = parsed
        if not name or "=" in name or len(c) != len(_CANDIDATE_KEYS) + 1 or not c["quality"]:
            raise argparse.ArgumentTypeError(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be NAME,input=P,cache=P,output=P,reasoning=N,visible=N,quality=Q,hit=F,hit-time=T,miss-time=T "
            f"(prices per million tokens, every key once, quality > 0), got '{text}'")
    return c


def _routing_arguments(q):
    q.add_argument("--candidate", type=_checked(_candidate), action="append", required=True,
                   metavar="NAME,KEY=VALUE,...",
                   help="a service: input, cache, output prices per million tokens, reasoning and visible output "
                        "tokens, quality probability, prefix hit fraction, hit-time and miss-time; repeatable, "
                        "the first is the reference")
    q.add_argument("--fresh-tokens", type=common.non_negative_int, required=True, metavar="N",
                   help="input tokens outside the shared prefix")
    q.add_argument("--prefix-tokens", type=common.non_negative_int, required=True, metavar="N",
                   help="shared prefix tokens (cached on a hit)")
    q.add_argument("--deadline", type=exact_seconds, required=True, metavar="T", help="request deadline (e.g. 6s)")
    q.add_argument("--target", type=_share, default="9/10", metavar="F",
                   help="joint quality-and-deadline target (default 9/10)")
    q.add_argument("--tasks", type=common.positive_int, default=1, metavar="N", help="submitted tasks (default 1)")


def _routing(args):
    from ..analyses.routing_cost import routing_cost
    from ..errors import UserError

    candidates = [_candidate(t) for t in args.candidate]
    if len({c["name"] for c in candidates}) != len(candidates):
        raise UserError("--candidate names must be distinct")
    return routing_cost(candidates=candidates, fresh=args.fresh_tokens, prefix=args.prefix_tokens, tasks=args.tasks,
                        deadline_s=args.deadline, target=Fraction(args.target))


_RETRY_FIELDS = {"cost": "cost", "time": "seconds", "cpu": "cpu_seconds", "resident": "resident_bytes"}


def _retry_node(text):
    """ID,cost=C,time=T,cpu=T,resident=BYTES,TARGET=P,...: initial,cost=1/100,time=10s,cpu=3s,resident=2GiB,
    success=4/5,repair=3/25,upgrade=2/25 (targets are other nodes or success/failure)."""
    from ..analyses.retry_paths import TERMINALS

    name, *items = [t.strip() for t in text.split(",")]
    node = {"cost": Fraction(0), "seconds": Fraction(0), "cpu_seconds": Fraction(0), "resident_bytes": 0,
            "outcomes": []}
    bad = not name or name in TERMINALS or "=" in name or len(text) > 1000
    for item in items:
        key, eq, value = item.partition("=")
        if bad or not eq:
            bad = True
            break
        if key == "resident":
            node["resident_bytes"] = byte_count(value)
        elif key in ("time", "cpu"):
            node[_RETRY_FIELDS[key]] = exact_seconds(value)
        elif key == "cost":
            node["cost"] = Fraction(_exact(value, "a non-negative cost such as 1/100"))
        else:
            node["outcomes"].append((key, Fraction(_exact(value, "a probability such as 4/5", 0, 1))))
    if bad or not node["outcomes"]:
        raise argparse.ArgumentTypeError(f"must be ID,cost=C,time=T,cpu=T,resident=BYTES,TARGET=P,... with at least "
                                         f"one outcome (initial,cost=1/100,time=10s,success=4/5,repair=1/5), "
                                         f"got '{text}'")
    return name, node


def _retry_node_text(text):
    """Checks one --node and keeps its text (echoed as given; `_retry` parses it)."""
    _retry_node(text)
    return text


def _retry_arguments(q):
    q.add_argument("--node", type=_retry_node_text, action="append", required=True, metavar="ID,KEY=VALUE,...",
                   help="an attempt: cost=dollars, time=wall time, cpu=core time, resident=bytes held, and its "
                        "outcomes TARGET=probability (another node, success or failure); repeatable, the first "
                        "is the start")
    q.add_argument("--deadline", type=exact_seconds, required=True, metavar="T",
                   help="a success counts as on time when its path takes at most T (e.g. 20s)")
    q.add_argument("--tasks", type=common.positive_int, default=1, metavar="N",
                   help="submitted tasks, for the expected total cost and successes (default 1)")


def _retry(args):
    from ..analyses.retry_paths import TERMINALS, retry_paths
    from ..errors import UserError

    nodes, given = {}, [_retry_node(t) for t in args.node]
    for name, node in given:
        if name in nodes:
            raise UserError(f"--node '{name}' is given twice")
        nodes[name] = node
    for name, node in nodes.items():
        if sum(p for _, p in node["outcomes"]) != 1:
            raise UserError(f"the outcome probabilities of node '{name}' must sum to exactly 1")
        missing = next((t for t, _ in node["outcomes"] if t not in nodes and t not in TERMINALS), None)
        if missing:
            raise UserError(f"node '{name}' leads to unknown node '{missing}' (give it with --node, or success/failure)")
    try:
        return retry_paths(nodes=nodes, start=given[0][0], deadline_s=args.deadline, tasks=args.tasks)
    except ValueError as e:
        raise UserError(str(e))


def _distribution(text):
    """P0,P1,...: exact probabilities (1/2, 0.25, 0), 1 to 4,096 tokens, summing to exactly 1."""
    from fractions import Fraction

    parts = text.split(",") if len(text) <= 100_000 else []
    values = [_exact(t.strip(), "a probability such as 1/3", 0, 1) for t in parts]
    if not 1 <= len(values) <= 4096 or sum(values, Fraction(0)) != 1:
        raise argparse.ArgumentTypeError(f"must be 1 to 4,096 probabilities P0,P1,... summing to exactly 1 "
                                         f"(normalized, after temperature and top-k/top-p), got '{text[:80]}'")
    return tuple(values)


def _sampling_arguments(q):
    q.add_argument("--target-probs", type=_distribution, required=True, metavar="P0,P1,...",
                   help="the target's next-token distribution p on a shared vocabulary (e.g. 1/2,1/3,1/6)")
    q.add_argument("--draft-probs", type=_distribution, required=True, metavar="Q0,Q1,...",
                   help="the draft's distribution q on the same vocabulary (e.g. 1/6,1/3,1/2)")


def _sampling(args):
    from ..analyses.speculative_sampling import sampling
    from ..errors import UserError

    if len(args.target_probs) != len(args.draft_probs):
        raise UserError(f"--target-probs has {len(args.target_probs)} tokens, --draft-probs "
                        f"{len(args.draft_probs)}: the two share one vocabulary")
    return sampling(target=args.target_probs, draft=args.draft_probs)


def _index_range(text):
    a, dash, b = text.partition("-")
    lo, hi = common.digits(a), common.digits(b) if dash else common.digits(a)
    if lo is None or hi is None or hi < lo:
        raise ValueError(text)
    return range(lo, hi + 1)


def _relations_text(text):
    """Checks THREADS:PEERS,... and keeps the text (echoed as given; `_connections` expands it)."""
    _relations(text)
    return text


def _relations(text):
    """Directed relations THREADS:PEERS,...: 0-63:0 (every thread to peer 0), 0:0-127."""
    out = []
    try:
        for item in text.split(","):
            t, colon, p = item.strip().partition(":")
            if not colon:
                raise ValueError(item)
            out += [(i, j) for i in _index_range(t) for j in _index_range(p)]
            if len(out) > 10**6:
                raise ValueError(item)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be relations THREADS:PEERS with ranges such as 0-63:0, "
                                         f"at most 10^6, got '{text}'")
    return tuple(out)


def _connections_arguments(q):
    q.add_argument("--threads", type=common.positive_int, required=True, metavar="T", help="local endpoints")
    q.add_argument("--peers", type=common.positive_int, required=True, metavar="P", help="remote peers")
    q.add_argument("--isolation-classes", type=common.positive_int, default=1, metavar="K",
                   help="classes a shared transport never crosses (thread mod K; default 1)")
    q.add_argument("--relations", type=_relations_text, default=None, metavar="THREADS:PEERS,...",
                   help="active directed relations (0-63:0); default every thread to every peer")
    q.add_argument("--endpoint-bytes", type=common.non_negative_int, default=256, metavar="B",
                   help="state per local endpoint (default 256, a teaching size)")
    q.add_argument("--relation-bytes", type=common.non_negative_int, default=64, metavar="B",
                   help="binding state per active relation (default 64)")
    q.add_argument("--transport-bytes", type=common.non_negative_int, default=1024, metavar="B",
                   help="state per transport (default 1024)")
    q.add_argument("--budget-bytes", type=byte_count, default=None, metavar="S",
                   help="on-chip state budget to check against (e.g. 1MiB)")


def _connections(args):
    from ..analyses.connection_states import connection_states
    from ..errors import UserError

    if args.relations is None and args.threads * args.peers > 10**6:
        raise UserError("--threads x --peers exceeds 10^6 relations; give the active ones with --relations")
    rel = None if args.relations is None else _relations(args.relations)
    if rel is not None:
        bad = next(((t, p) for t, p in rel if t >= args.threads or p >= args.peers), None)
        if bad:
            raise UserError(f"relation {bad[0]}:{bad[1]} is out of range (threads 0-{args.threads - 1}, "
                            f"peers 0-{args.peers - 1})")
        if len(set(rel)) != len(rel):
            raise UserError("--relations names a relation twice")
    return connection_states(threads=args.threads, peers=args.peers, classes=args.isolation_classes, relations=rel,
                             endpoint_bytes=args.endpoint_bytes, relation_bytes=args.relation_bytes,
                             transport_bytes=args.transport_bytes, budget_bytes=args.budget_bytes)


def _moe_layer_training_arguments(q):
    common.add_model(q)
    q.add_argument("--layer", type=common.non_negative_int, default=None, metavar="L",
                   help="decoder layer (default the first top-k MoE layer)")
    q.add_argument("--batch", type=common.positive_int, default=1, help="sequences (default 1)")
    q.add_argument("--tokens", type=common.positive_int, default=128, help="tokens per sequence (default 128)")
    q.add_argument("--routing", choices=("balanced", "concentrated"), default="balanced",
                   help="the declared fixed selection (default balanced)")


def _moe_layer_training(args):
    from ..analyses.moe_layer_training import moe_layer_training
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    layers = {}
    for layer, _, indices in arch.layer_groups():
        moe = next((b for b in layer.blocks if hasattr(b, "experts") and hasattr(b, "top_k")), None)
        for i in indices:
            layers[i] = moe
    if args.layer is None:
        args.layer = next((i for i in sorted(layers) if layers[i] is not None and not layers[i].hash_vocab), None)
    if layers.get(args.layer) is None:
        moes = [i for i in sorted(layers) if layers[i] is not None]
        raise UserError(f"layer {args.layer} of '{arch.id}' is not an MoE layer"
                        + (f" (MoE layers: {moes[0]}-{moes[-1]})" if moes else " (the model has none)"))
    b = layers[args.layer]
    return dict({"model": arch.id, "layer": args.layer},
                **moe_layer_training(rows=args.batch * args.tokens, hidden=arch.hidden_size, expert_width=b.expert_inter,
                                     shared_width=b.shared_inter, experts=b.experts, top_k=b.top_k,
                                     hashed=bool(b.hash_vocab), vocab=b.hash_vocab, routing=args.routing))


def _gradient_tensor_arguments(q):
    common.add_model(q)
    q.add_argument("--tensor", default="mlp.gate_proj.weight", metavar="NAME",
                   help="the first decoder layer's tensor whose gradient is reduced (default mlp.gate_proj.weight)")
    q.add_argument("--grad-dtype", choices=("fp32", "bf16"), default="fp32", help="gradient width (default fp32)")


def _gradient_ring_arguments(q, organization=True):
    _gradient_tensor_arguments(q)
    if organization:
        q.add_argument("--organization", choices=("flat-contiguous", "flat-interleaved", "hierarchical"),
                       required=True, help="flat ring in rank order, flat ring alternating servers, or two-level")
    q.add_argument("--ranks-per-server", type=common.positive_int, default=8, metavar="R",
                   help="ranks in each of the two servers (default 8)")
    q.add_argument("--nics-per-server", type=common.positive_int, default=None, metavar="K",
                   help="NICs per server (default one per rank; fewer stripe each message over all K)")
    q.add_argument("--nic-bw", type=common.bandwidth, required=True, metavar="BW", help="one NIC's rate (50GB/s)")
    q.add_argument("--local-bw", type=common.bandwidth, required=True, metavar="BW",
                   help="a rank's local link, transmit and receive (450GB/s)")
    q.add_argument("--egress-bw", type=common.bandwidth, default=None, metavar="BW",
                   help="a shared server egress and ingress (default none)")
    q.add_argument("--startup", type=_exact_time, default=0, metavar="T", help="per round (e.g. 833ns; default 0)")
    q.add_argument("--budget", type=_exact_time, default=None, metavar="T", help="a declared time budget (3ms)")


def _gradient_tensor(args):
    """(model id, the first layer's tensor named --tensor): its gradient is what the collective reduces."""
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    layer = next(iter(arch.layer_groups()))[0]
    tensor = next((t for t in layer.tensors() if t.name == args.tensor), None)
    if tensor is None:
        names = ", ".join(t.name for t in layer.tensors()[:8])
        raise UserError(f"model '{arch.id}' has no layer tensor '{args.tensor}' (e.g. {names})")
    return arch.id, tensor


def _gradient_ring(args, organization=None):
    from ..analyses.gradient_rings import gradient_rings

    model, tensor = _gradient_tensor(args)
    return dict({"model": model, "tensor": f"layers.0.{tensor.name}", "shape": list(tensor.shape)},
                **gradient_rings(elements=tensor.params, width=4 if args.grad_dtype == "fp32" else 2,
                                 organization=organization or args.organization, ranks_per_server=args.ranks_per_server,
                                 nics_per_server=args.nics_per_server or args.ranks_per_server,
                                 nic_rate=round(args.nic_bw), local_rate=round(args.local_bw),
                                 egress_rate=None if args.egress_bw is None else round(args.egress_bw),
                                 startup_s=args.startup, budget_s=args.budget))


def _zero_state_arguments(q):
    common.add_model(q)
    q.add_argument("--ranks", type=common.positive_int, required=True, metavar="N", help="data-parallel ranks")
    q.add_argument("--grad-dtype", choices=("bf16", "fp32"), default="bf16", help="gradient storage (default bf16)")
    q.add_argument("--shard", choices=("bytes", "flat", "per-tensor"), default="bytes",
                   help="a sharded component's rounding: bytes (train --zero's), flat (the parameter vector padded "
                        "to a multiple of N), per-tensor (each tensor padded); default bytes")
    q.add_argument("--extra-live-bytes", type=byte_count, default=0, metavar="BYTES",
                   help="a declared allocation live beside the state (default 0)")
    q.add_argument("--capacity", type=byte_count, default=None, metavar="BYTES",
                   help="a declared per-rank budget to fit against (e.g. 24GiB; default none)")


def _zero_state(args):
    from ..analyses.zero_state import physical_tensors, zero_stages
    from ..load.models import load_model

    arch = load_model(args.model)
    return dict({"model": arch.id},
                **zero_stages(tensors=physical_tensors(arch), ranks=args.ranks,
                              grad_bytes=2 if args.grad_dtype == "bf16" else 4, rule=args.shard,
                              extra_live_bytes=args.extra_live_bytes, capacity_bytes=args.capacity))


def _batch_arguments(q):
    q.add_argument("--noise-scale", type=common.token_budget, required=True, metavar="TOKENS",
                   help="declared gradient noise scale B_noise in tokens (2M, 20M)")
    q.add_argument("--train-tokens", type=common.token_budget, required=True, metavar="D",
                   help="tokens the reference run trains on (100B)")
    q.add_argument("--seq", type=common.positive_int, required=True, metavar="T", help="tokens per sequence")
    q.add_argument("--reference-sequences", type=common.positive_int, required=True, metavar="B",
                   help="sequences per step of the reference run (taken as exactly reaching the target)")
    q.add_argument("--reference-cards", type=common.positive_int, required=True, metavar="N",
                   help="cards of the reference run (B / N micro-batches per card)")
    q.add_argument("--compute-time", type=_exact_time, required=True, metavar="T",
                   help="compute seconds of a reference step, kept exact (52.2s or a ratio such as 261/5s; scales "
                        "as 1 / cards under strong scaling)")
    q.add_argument("--overhead-time", type=_exact_time, default=0, metavar="T",
                   help="per-step communication and input wait that does not scale (e.g. 0.5s; default 0)")
    q.add_argument("--cards", type=_card_list, required=True, metavar="N[,N...]",
                   help="card counts to scale to")


_card_list = common.positive_int_list


def _batch(args):
    from ..analyses.critical_batch import critical_batch
    from ..errors import UserError

    if not args.compute_time > 0:
        raise UserError("--compute-time must be positive (a reference step's compute seconds, e.g. 52.2s)")
    return critical_batch(noise_tokens=args.noise_scale, tokens=args.train_tokens, sequence_tokens=args.seq,
                          reference_sequences=args.reference_sequences, reference_cards=args.reference_cards,
                          compute_s=args.compute_time, overhead_s=args.overhead_time, cards=args.cards)


def _capacity_arguments(q):
    q.add_argument("--model", default=None, metavar="ID|config.json",
                   help="an MoE model: its experts, top-k, hidden and expert width (or give --experts, --top-k)")
    q.add_argument("--experts", type=common.positive_int, default=None, metavar="E", help="experts of the layer")
    q.add_argument("--top-k", type=common.positive_int, default=None, metavar="K", help="experts per token")
    q.add_argument("--tokens", type=common.positive_int, required=True, metavar="T", help="tokens of the batch")
    q.add_argument("--loads", type=_loads, required=True, metavar="W[xN],...",
                   help="relative load per expert, in expert order (WxN repeats W N times): 3x64,1x64")
    q.add_argument("--capacity-factor", type=_factors, required=True, metavar="F[,F...]",
                   help="capacity factors (1, 1.25, 3/2)")


def _loads(text):
    out = []
    for item in text.split(","):
        w, x, n = item.strip().partition("x")
        weight, count = common.digits(w), common.digits(n) if x else 1
        if weight is None or not count or len(out) + count > 1 << 20:
            raise argparse.ArgumentTypeError(f"must be loads W or WxN separated by commas (3x64,1x64), got '{text}'")
        out += [weight] * count
    return tuple(out)


def _factors(text):
    from fractions import Fraction

    try:
        values = tuple(Fraction(t.strip()) for t in text.split(","))
    except (ValueError, ZeroDivisionError):
        values = ()
    if not values or any(v <= 0 or v > 1000 for v in values) or len(text) > 400:
        raise argparse.ArgumentTypeError(f"must be positive capacity factors such as 1,1.25,1.5, got '{text}'")
    return values


def _capacity(args):
    from fractions import Fraction

    from ..analyses import moe_capacity as mc
    from ..errors import UserError

    hidden = inter = None
    if args.model is not None:
        from ..load.models import load_model

        if args.experts is not None or args.top_k is not None:
            raise UserError("--model gives the experts and top-k; drop --experts/--top-k (or --model)")

        arch = load_model(args.model)
        moe = next((b for layer in arch.layers for b in layer.blocks if hasattr(b, "experts")
                    and hasattr(b, "top_k")), None)
        if moe is None:
            raise UserError(f"model '{arch.id}' has no MoE layer")
        experts, top_k = moe.experts, moe.top_k
        hidden, inter = arch.hidden_size, moe.expert_inter
    elif args.experts is None or args.top_k is None:
        raise UserError("give --model, or --experts and --top-k")
    else:
        experts, top_k = args.experts, args.top_k
    if top_k > experts:
        raise UserError(f"--top-k {top_k} exceeds the {experts} experts")
    assignments = args.tokens * top_k
    loads = mc.loads_of(args.loads, assignments, experts)
    rows = mc.capacity_rows(loads, args.capacity_factor)
    if hidden and inter:
        rows = mc.expert_flops(rows, hidden, inter, assignments)
    return {"experts": experts, "top_k": top_k, "assignments": assignments, "mean_load": str(Fraction(assignments, experts)),
            "max_load": max(loads), "min_load": min(loads), "rows": rows,
            "expert_rows": mc.expert_groups(loads, rows)}


class _KindParsers(dict):
    """{kind: its parser}, each parser made and given its options the first time it is looked up (argparse
    does so for the kind named on the command line, `budget KIND --help` included): giving all of them
    their options on every `budget` command cost about 30 ms of its start-up, and making the 75 empty
    parsers 1.5 ms more. The listing of `budget --help` needs only the kinds' names and lines."""

    def __init__(self, sub):
        super().__init__(dict.fromkeys(KINDS))
        self._sub = sub

    def __getitem__(self, name):
        q = dict.__getitem__(self, name)
        if q is None:
            q = self._sub._parser_class(prog=f"{self._sub._prog_prefix} {name}", description=KINDS[name])
            globals()[f"_{name.replace('-', '_')}_arguments"](q)
            common.add_output(q)
            # the options this kind echoes as its inputs (argparse's own record of them)
            q.set_defaults(echoed=tuple(a.dest for a in q._actions if a.dest not in ("help", "format", "output")))
            dict.__setitem__(self, name, q)
        return q


def add_arguments(p):
    sub = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    sub._name_parser_map = sub.choices = _KindParsers(sub)
    for name, text in KINDS.items():   # what add_parser records for the help listing
        sub._choices_actions.append(sub._ChoicesPseudoAction(name, (), text))


def _params(q, required=True):
    q.add_argument("--params", type=common.token_budget, required=required, metavar="N",
                   help="nominal parameters (70B = 7 x 10^10, 1T; decimal suffixes)")


def _device(q):
    q.add_argument("--device", default="h100-sxm", metavar="ID|DEVICE.json",
                   help="device whose bf16 dense matrix peak, memory bandwidth and labelled memory apply "
                        "(default h100-sxm)")
    q.add_argument("--matrix-peak", type=common.format_rate, action="append", default=None,
                   metavar="FMT=FLOP/S", help="declare a matrix peak instead of the device's (e.g. bf16=989.4T)")
    q.add_argument("--memory-bandwidth", type=common.bandwidth, default=None, metavar="BW",
                   help="declare a memory bandwidth instead of the device's (e.g. 6.7TB/s)")
    q.add_argument("--memory-bytes", type=common.byte_size, default=None, metavar="BYTES",
                   help="capacity per device instead of its labelled memory (e.g. 80GB)")


def _decode_arguments(q):
    _params(q)
    q.add_argument("--weight-bits", type=common.positive_int, default=16, help="storage bits per weight (default 16)")
    q.add_argument("--batch", type=common.positive_int, default=1, help="requests in the step (default 1)")
    q.add_argument("--kv-history-bytes", type=byte_count, default=0, metavar="BYTES",
                   help="KV history each request reads (declared; default 0)")
    q.add_argument("--kv-append-bytes", type=byte_count, default=0, metavar="BYTES",
                   help="KV each request writes (declared; default 0)")
    q.add_argument("--metadata-bytes", type=byte_count, default=0, metavar="BYTES",
                   help="scales and other shared bytes read with the weights (default 0)")
    q.add_argument("--workspace", type=byte_count, default=0, metavar="BYTES",
                   help="resident workspace (default 0)")
    _device(q)


def _transfer_arguments(q):
    _params(q)
    q.add_argument("--weight-bits", type=common.positive_int, default=16, help="storage bits per weight (default 16)")
    q.add_argument("--cards", type=common.positive_int, default=1, help="cards holding the weights (default 1)")
    q.add_argument("--card-memory", type=common.byte_size, required=True, metavar="BYTES",
                   help="declared budget per card (e.g. 80GB = 8 x 10^10 B)")
    q.add_argument("--shards", type=_shards, default=None, metavar="N,N,...",
                   help="parameters per card, summing to --params (default: as even as possible, the first "
                        "cards one more)")
    q.add_argument("--payload-bytes", type=common.byte_size, default=None, metavar="BYTES",
                   help="bytes of the serial transfer (default: the weights)")
    q.add_argument("--link-bw", type=common.bandwidth, required=True, metavar="BW",
                   help="link bandwidth in one direction (e.g. 50GB/s for 400 Gb/s)")
    q.add_argument("--link-efficiency", type=common.fraction, default=1.0, help="fraction of it reached (default 1.0)")
    q.add_argument("--startup", type=common.latency, default=0.0, metavar="T",
                   help="startup per message (e.g. 3us; default 0)")
    q.add_argument("--messages", type=common.positive_int, default=1, help="messages (default 1)")


def _shards(text):
    """Parameters per card, a comma-separated list of non-negative integers (a card may hold none)."""
    values = tuple(common.digits(p.strip()) for p in text.split(",")) if len(text) <= 400 else (None,)
    if None in values:
        raise argparse.ArgumentTypeError(f"must be parameter counts per card such as 35000000000,35000000000, "
                                         f"got '{text}'")
    return values


def _training_arguments(q):
    q.add_argument("--params", type=_list(common.token_budget), required=True, metavar="N,N,...",
                   help="nominal parameters, one or a comma-separated list (1T,5T,10T)")
    tokens = q.add_mutually_exclusive_group(required=True)
    tokens.add_argument("--train-tokens", type=common.token_budget, metavar="D", help="task tokens (e.g. 20T)")
    tokens.add_argument("--tokens-per-param", type=common.positive_int, metavar="K",
                        help="task tokens D = K x N (the work then grows as N^2)")
    q.add_argument("--efficiency", type=_list(fraction_text), required=True, metavar="F,F,...",
                   help="MFU of the 6ND numerator at the dense peak, one or a list (0.3 or 3/10,2/5,1/2)")
    q.add_argument("--days", type=_list(common.positive_int), required=True, metavar="D,D,...",
                   help="calendar deadlines in days, one or a list (90,180)")
    q.add_argument("--unavailable-days", type=common.non_negative_int, default=0,
                   help="days of each deadline not training (default 0)")
    q.add_argument("--cards", type=common.positive_int, required=True, help="the fleet, for days and size bounds")
    q.add_argument("--state-bytes-per-param", type=common.positive_int, default=16,
                   help="persistent bytes per parameter (default 16: BF16 weights and gradients, FP32 master, "
                        "Adam m and v)")
    q.add_argument("--device", action="append", default=None, metavar="ID|DEVICE.json",
                   help="device(s) whose bf16 dense peak and labelled memory apply; repeatable (default h100-sxm)")
    q.add_argument("--matrix-peak", type=common.format_rate, action="append", default=None,
                   metavar="FMT=FLOP/S", help="declare a matrix peak (with one --device; e.g. bf16=989.4T)")
    q.add_argument("--memory-bytes", type=common.byte_size, default=None, metavar="BYTES",
                   help="capacity per device instead of its labelled memory")
    q.add_argument("--price-per-device-hour", type=_price, default=None, metavar="USD",
                   help="a declared price of one device-hour in dollars: adds the cost of each run and "
                        "$ per million tokens trained (no default price)")


def _list(parse):
    """A comma-separated list of values each read by `parse`, as a tuple."""
    def parse_list(text):
        if len(text) > 400:
            raise argparse.ArgumentTypeError("too long a list")
        return tuple(parse(item.strip()) for item in text.split(","))
    parse_list.__name__ = getattr(parse, "__name__", "list")
    return parse_list


def _window_arguments(q):
    common.add_model(q, required=False)
    q.add_argument("--context", type=common.tokens, default=None, help="tokens per request (with --model)")
    q.add_argument("--batch", type=common.positive_int, default=1, help="requests (default 1)")
    q.add_argument("--payload-bytes", type=common.byte_size, default=None, metavar="BYTES",
                   help="a declared payload instead of --model's KV cache")
    q.set_defaults(weight_dtype=None, act_dtype="bf16")
    q.add_argument("--kv-dtype", default=None, metavar="FMT", help="KV cache format (default bf16)")
    where = q.add_mutually_exclusive_group()
    where.add_argument("--device", default=None, metavar="ID|DEVICE.json",
                       help="the interface bandwidth is this device's memory bandwidth (default h100-sxm)")
    where.add_argument("--bandwidth", type=common.bandwidth, default=None, metavar="BW",
                       help="a declared interface bandwidth (e.g. 1TB/s)")
    q.add_argument("--latency", type=common.latency, required=True, metavar="T",
                   help="issue-to-completion latency of one transaction (e.g. 500ns)")
    q.add_argument("--transaction-bytes", type=common.positive_int, required=True, metavar="S",
                   help="bytes per transaction (e.g. 128)")
    q.add_argument("--transactions", type=common.positive_int, required=True, metavar="N",
                   help="transaction slots in flight")
    q.add_argument("--active", type=common.positive_int, default=None, metavar="A",
                   help="independent transactions actually in flight (default: all slots)")
    q.add_argument("--service-interval", type=common.latency, default=None, metavar="T",
                   help="a serialized issue interval per transaction (e.g. 100ns)")


def _checkpoint_arguments(q):
    common.add_model(q, required=False)
    _params(q, required=False)
    q.add_argument("--saved", choices=("weights+grads+optimizer", "weights+optimizer"),
                   default="weights+grads+optimizer",
                   help="what a checkpoint holds per parameter: BF16 weights 2 B, BF16 gradients 2 B, FP32 "
                        "master, m and v 12 B (default all: 16 B)")
    q.add_argument("--write-bandwidth", type=common.bandwidth, required=True, metavar="BW",
                   help="sustained checkpoint write bandwidth (e.g. 8GB/s)")
    q.add_argument("--devices", type=common.positive_int, default=1, help="devices whose failures stop the job")
    q.add_argument("--device-mtbf", type=long_duration, default=None, metavar="T",
                   help="mean time between failures of one device (e.g. 365d)")
    q.add_argument("--job-mtbf", type=long_duration, default=None, metavar="T",
                   help="mean time between job-level shocks, counted once (e.g. 1d)")
    q.add_argument("--recovery", type=long_duration, default=0.0, metavar="T", help="restart time r (default 0s)")
    q.add_argument("--intervals", type=common.positive_int_list, default=(), metavar="S,S,...",
                   help="candidate intervals tau in seconds to tabulate")


def _energy_arguments(q):
    common.add_model(q)
    q.add_argument("--batch", type=common.positive_int, default=1, help="requests in the pass (default 1)")
    q.add_argument("--tokens", type=common.tokens, default=1,
                   help="new tokens per request (default 1: a decode step)")
    q.add_argument("--history", type=common.tokens_or_zero, default=0,
                   help="tokens of KV history per request (default 0)")
    q.add_argument("--logits", choices=("last", "all", "none"), default="last",
                   help="output head positions (default last)")
    common.add_dtypes(q)
    common.add_architecture_options(q)
    common.add_device(q)
    q.add_argument("--price-per-device-hour", type=_price, default=None, metavar="USD",
                   help="a declared price of one device-hour in dollars (e.g. 2.5); no default price")
    q.add_argument("--devices", type=common.positive_int, default=1,
                   help="devices billed for the pass's time (default 1)")


def _history_model(text):
    from ..analyses.history import ids

    if text not in ids():
        from ..errors import suggest
        raise argparse.ArgumentTypeError(f"not in the catalogue: '{text}'"
                                         f"{suggest(text, ids()) or '; choose from ' + ', '.join(ids())}")
    return text


def _exact_list(count, what):
    """COUNT comma-separated exact non-negative numbers (0.85,0.55; 120,12,1.2)."""
    def parse(text):
        parts = text.split(",")
        try:
            values = [Fraction(p) for p in parts] if len(parts) == count and len(text) <= 80 else None
        except (ValueError, ZeroDivisionError):
            values = None
        if values is None or min(values) <= 0:
            raise argparse.ArgumentTypeError(f"must be {what}, got '{text}'")
        return values
    return parse


def _pin_rate(text):
    """A per-pin data rate: 10.7Gb/s, 8533Mb/s (bits per second, exact)."""
    import re
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([GM])b/s", text.strip()) if len(text) <= 40 else None
    if not m:
        raise argparse.ArgumentTypeError(f"must be a pin rate such as 10.7Gb/s or 8533Mb/s, got '{text}'")
    return Fraction(m.group(1)) * {"G": 10**9, "M": 10**6}[m.group(2)]


def _chip_power_arguments(q):
    q.add_argument("--voltage", type=_exact_list(2, "BEFORE,AFTER volts such as 0.85,0.55"), metavar="V0,V1",
                   help="supply voltage before and after: the dynamic-power ratio (V1/V0)^2")
    q.add_argument("--power-area", type=_exact_list(2, "POWER,AREA ratios such as 0.75,0.60"), metavar="P,A",
                   help="power and projected-area ratios after/before: the power-density ratio P/A")
    q.add_argument("--rack", type=_exact_list(3, "BUDGET,FIXED,PER_CARD kW such as 120,12,1.2"), metavar="KW,KW,KW",
                   help="rack power budget, fixed power and power per card (kW): cards <= floor((B - F) / C)")
    q.add_argument("--rack-cards", type=common.positive_int_list, default=(), metavar="N[,N...]",
                   help="card counts whose rack power is listed (with --rack)")
    q.add_argument("--cooling", type=_exact_list(1, "a cooling limit in kW such as 40"), metavar="KW",
                   help="a declared cooling limit per rack (kW; with --rack)")
    q.add_argument("--bus", type=common.positive_int_list, metavar="CHANNELS,BITS",
                   help="memory channels and bits per channel (e.g. 4,16: four x16 channels)")
    q.add_argument("--pin-rate", type=_pin_rate, metavar="RATE", help="data rate per pin (with --bus), e.g. 10.7Gb/s")
    q.add_argument("--payload-bytes", type=common.positive_int, metavar="N",
                   help="bytes read over the bus, e.g. a decode step's weights (with --bus)")


def _chip_power(args):
    from ..analyses import chip_power
    from ..errors import UserError

    if not (args.voltage or args.power_area or args.rack or args.bus):
        raise UserError("chip-power needs at least one of --voltage, --power-area, --rack, --bus")
    if (args.rack_cards or args.cooling) and not args.rack:
        raise UserError("--rack-cards and --cooling go with --rack BUDGET,FIXED,PER_CARD")
    if bool(args.bus) != bool(args.pin_rate) or (args.payload_bytes and not args.bus):
        raise UserError("--bus CHANNELS,BITS and --pin-rate go together (--payload-bytes with them)")
    if args.bus and len(args.bus) != 2:
        raise UserError(f"--bus takes CHANNELS,BITS (e.g. 4,16), got {len(args.bus)} numbers")
    out = {}
    if args.voltage:
        out["voltage"] = chip_power.voltage(*args.voltage)
    if args.power_area:
        out["density"] = chip_power.density(*args.power_area)
    if args.rack:
        out["rack"] = chip_power.rack(*args.rack, cards=args.rack_cards,
                                      cooling=args.cooling[0] if args.cooling else None)
    if args.bus:
        out["bus"] = chip_power.bus(*args.bus, args.pin_rate, args.payload_bytes)
    return out


def _request_arguments(q):
    from ..analyses.request_work import ATTENTION_COUNTS, KDA_WORK
    from ..workload import MLA_PATHS

    common.add_model(q)
    q.add_argument("--prefix-len", type=common.tokens_or_zero, default=0, metavar="S",
                   help="restored cached tokens before the input (default 0)")
    q.add_argument("--input-len", type=common.tokens, required=True, metavar="P", help="new input tokens")
    q.add_argument("--output-len", type=common.positive_int, required=True, metavar="G",
                   help="returned tokens, the first from the input stage's last logits")
    q.add_argument("--batch", type=common.positive_int, default=1, help="requests in lockstep (default 1)")
    common.add_dtypes(q)
    q.add_argument("--mla", choices=MLA_PATHS, default="absorbed", help="MLA path (default absorbed)")
    q.add_argument("--attention-count", choices=ATTENTION_COUNTS, default="causal",
                   help="attention matrix work over the causal pairs (default) or the whole rectangle")
    q.add_argument("--kda-work", choices=KDA_WORK, default="ledger",
                   help="KDA layers: the ledger's delta_rule rows (default), or the recurrence as scalar and "
                        "the block algorithm's matrix work for a pass of more than one token")
    q.add_argument("--sequential-input", action="store_true",
                   help="run the input tokens as one-token passes (a reference without cached-prefix chunk prefill)")


def _request(args):
    from ..analyses.request_work import request
    from ..load.models import load_model

    arch = load_model(args.model)
    if args.kda_work != "ledger":   # as forward --kda-count: never a no-op named in the conventions
        from ..blocks.kimi import KDA
        from ..errors import UserError
        if not arch.has_block(KDA):
            raise UserError(f"--kda-work {args.kda_work}: {arch.id} has no KDA (Kimi Delta Attention) layers")
    w = common.workload(args, arch, args.batch, args.input_len, args.prefix_len)
    return dict({"model": arch.id}, **request(arch, w, prefix=args.prefix_len, inputs=args.input_len,
                                               outputs=args.output_len, attention=args.attention_count,
                                               kda=args.kda_work, sequential=args.sequential_input))


def _history_pair(text):
    """BASELINE:TARGET, two catalogue entries."""
    parts = text.split(":")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"must be BASELINE:TARGET (two catalogue ids), got '{text}'")
    return tuple(_history_model(p) for p in parts)


def _history_range(text):
    """MODEL:MIN:MAX, a catalogue entry and a declared device-count range."""
    parts = text.split(":")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"must be MODEL:MIN:MAX (e.g. llama2-70b:1024:4096), got '{text}'")
    low, high = (common.positive_int(p) for p in parts[1:])
    if low > high:
        raise argparse.ArgumentTypeError(f"MIN must not exceed MAX, got '{text}'")
    return _history_model(parts[0]), low, high


def _exact_amount(text):
    """A declared non-negative amount, kept exact: 2, 0.01, 1/100."""
    try:
        value = Fraction(text) if len(text) <= 40 else None
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or value < 0 or value > 10**15:
        raise argparse.ArgumentTypeError(f"must be a non-negative amount such as 2, 0.01 or 1/100, got '{text}'")
    return value


def _history_arguments(q):
    q.add_argument("--model", type=_history_model, action="append", default=None, metavar="ID",
                   help="a catalogue entry (repeatable; default: all 13)")
    q.add_argument("--compare", type=_history_pair, action="append", default=[], metavar="BASE:TARGET",
                   help="growth of TARGET over BASE: parameter proxy, tokens and 6ND, exact (repeatable)")
    q.add_argument("--count-range", type=_history_range, action="append", default=[], metavar="MODEL:MIN:MAX",
                   help="days of MODEL's published GPU-hours on a declared constant MIN..MAX devices (repeatable)")
    q.add_argument("--lifecycle", type=_history_model, action="append", default=[], metavar="ID",
                   help="declared scoped cost of an entry: its GPU-hours x --gpu-hour-price + --service-usage "
                        "x --service-price + --other-cost (repeatable; the prices are in a declared unit)")
    q.add_argument("--gpu-hour-price", type=_exact_amount, default=None, metavar="P",
                   help="declared price of one GPU-hour (with --lifecycle)")
    q.add_argument("--service-usage", type=common.non_negative_int, default=None, metavar="N",
                   help="declared service units used, e.g. requests (with --lifecycle)")
    q.add_argument("--service-price", type=_exact_amount, default=None, metavar="P",
                   help="declared price per service unit, e.g. 1/100 (with --lifecycle)")
    q.add_argument("--other-cost", type=_exact_amount, default=None, metavar="C",
                   help="declared other cost; absent: unknown, so the scoped cost is null (0 excludes it)")


def _history(args):
    from ..analyses.history import history
    from ..errors import UserError

    needed = {"--gpu-hour-price": args.gpu_hour_price, "--service-usage": args.service_usage,
              "--service-price": args.service_price}
    if args.lifecycle and None in needed.values():
        missing = ", ".join(k for k, v in needed.items() if v is None)
        raise UserError(f"--lifecycle needs {missing} (declared prices and usage; none is bundled)")
    if not args.lifecycle and any(v is not None for v in list(needed.values()) + [args.other_cost]):
        raise UserError("--gpu-hour-price, --service-usage, --service-price and --other-cost go with --lifecycle ID")
    costs = [dict(model=m, gpu_hour_price=args.gpu_hour_price, service_usage=args.service_usage,
                  service_price=args.service_price, other_cost=args.other_cost) for m in args.lifecycle]
    return history(tuple(args.model or ()), comparisons=args.compare, count_ranges=args.count_range,
                   lifecycles=costs)


def _fusion_arguments(q):
    common.add_model(q)
    q.add_argument("--tokens", type=common.tokens, required=True, help="rows M of the chain's tensors (tokens)")
    q.add_argument("--act-dtype", default="bf16", metavar="FMT",
                   help="format of gate, up and the chain's intermediates (default bf16)")
    q.add_argument("--stored-dtype", default="int8", metavar="FMT",
                   help="format the chain casts its output to for the down GEMM (default int8: one byte per "
                        "value, a fixed scale not counted)")
    q.add_argument("--layout-copy", action="store_true",
                   help="add a standalone layout permute (read and write one intermediate) before the cast")


def _fusion(args):
    from ..analyses.fusion import first_gated_mlp, pointwise_fusion
    from ..analyses.tiles import element_bytes
    from ..dtypes import dtype
    from ..load.models import load_model

    arch = load_model(args.model)
    mlp = first_gated_mlp(arch)
    stored = dtype(args.stored_dtype).nbytes((args.tokens, mlp.inter))
    out = pointwise_fusion(args.tokens, mlp.inter, act_bytes=element_bytes(dtype(args.act_dtype), "the activation"),
                           stored_bytes=stored, act=mlp.act, layout_copy=args.layout_copy)
    return dict({"model": arch.id}, **out)


def _price(text):
    """A declared positive price in dollars: 2.5, 3."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e9:
        raise argparse.ArgumentTypeError(f"must be a positive price in dollars such as 2.5, got '{text}'")
    return value


def _energy(args):
    """The pass's energy ledger, TDP x its times and, with a declared price, its cost."""
    from ..analyses import energy
    from ..analyses.forward import forward
    from ..load.hardware import load_device
    from ..load.models import load_model

    arch = load_model(args.model)
    device = common.declared_figures(load_device(args.device), args)
    w = common.workload(args, arch, args.batch, args.tokens, args.history)
    rec = forward(arch, w, device, args.compute_efficiency, args.memory_efficiency)
    t = rec["totals"]
    tokens = args.batch * args.tokens
    times = [("ideal lower bound", t["ideal_time_s"]), ("operator-sum estimate", t["roofline_time_s"]),
             ("predicted", t.get("predicted_time_s"))]
    led = energy.ledger(t, tokens, args.batch)
    out = {"model": arch.id, "device": device.id, "tokens": tokens, "requests": args.batch, **led,
           "fits_one_device": rec["memory"]["fits"], "tdp_watts": device.tdp_watts or None,
           "board": energy.board(device.tdp_watts, times, tokens, led["known_joules"])}
    if args.price_per_device_hour is not None:
        out["cost"] = energy.cost(args.price_per_device_hour, args.devices, times, tokens)
    return out


def _device_figures(args, spec):
    """(device with any declared figures, capacity, bf16 dense peak)."""
    from ..dtypes import dtype
    from ..errors import UserError
    from ..load.hardware import load_device

    device = common.declared_figures(load_device(spec), args)
    peak = device.peak(dtype("bf16"))
    if peak is None:
        raise UserError(f"device {device.id} publishes no bf16 matrix peak; declare one with --matrix-peak")
    return device, args.memory_bytes or device.memory_label_bytes, peak


def _device_record(device, capacity, peak):
    return {"id": device.id, "name": device.name, "bf16_matrix_flops_per_s": peak,
            "memory_bandwidth_bytes_per_s": device.memory_bandwidth_bytes_per_s, "capacity_bytes": capacity}


def _training(args, nominal):
    """Every device x parameters x efficiency x deadline: days on the fleet, devices needed, and the
    largest N (the same for every N: one row per device x efficiency x deadline)."""
    from ..errors import UserError

    specs = args.device or ["h100-sxm"]
    if len(specs) > 1 and args.matrix_peak:
        raise UserError("--matrix-peak declares one device's figure; give one --device")
    devices, rows, bounds, costs = [], [], [], []
    for spec in specs:
        device, capacity, peak = _device_figures(args, spec)
        devices.append(_device_record(device, capacity, peak))
        for eff in args.efficiency:
            for days in args.days:
                for n in args.params:
                    r = nominal.training_scale(
                        params=n, tokens=args.train_tokens, tokens_per_param=args.tokens_per_param, peak=peak,
                        efficiency=eff, deadline_days=days, unavailable_days=args.unavailable_days,
                        cards=args.cards, state_bytes_per_param=args.state_bytes_per_param, capacity=capacity)
                    rows.append({"device": device.id, "params": n, "efficiency": str(eff), "deadline_days": days,
                                 **{k: r[k] for k in ("tokens", "work_flops", "state_bytes", "training_days_on_cards",
                                                      "fleet_capacity_fits", "compute_cards", "capacity_cards",
                                                      "needed_cards")}})
                    if args.price_per_device_hour is not None:
                        costs.append(_training_cost(args.price_per_device_hour, device.id, n, eff, peak, r))
                bounds.append({"device": device.id, "efficiency": str(eff), "deadline_days": days,
                               **{k: r[k] for k in ("compute_params_bound", "capacity_params_bound",
                                                    "params_bound")}})
    out = {"rows": rows, "params_bounds": bounds}
    if costs:
        out["cost"] = costs
    return devices, out


def _training_cost(price, device_id, params, eff, peak, r):
    """The run's device-hours (6ND / (peak x efficiency), whatever the fleet) at the declared price."""
    from fractions import Fraction

    from ..analyses.energy import cost

    seconds = Fraction(r["work_flops"]) / (peak * Fraction(eff))
    (c,) = cost(price, 1, [("6ND", float(seconds))], r["tokens"])
    return {"device": device_id, "params": params, "efficiency": str(eff),
            **{k: c[k] for k in ("device_hours", "dollars", "dollars_per_million_tokens")}}


def _inputs(args):
    """The options as given, JSON-ready: exact fractions as text ('3/10'), lists as lists."""
    from fractions import Fraction

    def plain(v):
        if isinstance(v, Fraction):
            return str(v)
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v

    out = {}
    for k in args.echoed:
        v = getattr(args, k)
        out[k] = {f: r for f, r in v} if k == "matrix_peak" and v else plain(v)
    return out


def run(args):
    from ..analyses import nominal
    from ..render import budget as render

    rec = {"schema_version": 1, "command": "budget", "kind": args.kind, "inputs": _inputs(args)}
    if args.kind == "decode":
        device, capacity, peak = _device_figures(args, args.device)
        rec["device"] = _device_record(device, capacity, peak)
        rec["result"] = nominal.decode_budget(
            params=args.params, weight_bits=args.weight_bits, batch=args.batch,
            kv_history_bytes=args.kv_history_bytes, kv_append_bytes=args.kv_append_bytes,
            metadata_bytes=args.metadata_bytes, workspace_bytes=args.workspace, peak=peak,
            bandwidth=device.memory_bandwidth_bytes_per_s, capacity=capacity)
    elif args.kind == "training":
        rec["devices"], rec["result"] = _training(args, nominal)
    elif args.kind == "transfer":
        rec["result"] = nominal.transfer_budget(
            params=args.params, weight_bits=args.weight_bits, shards=_card_shards(args),
            card_capacity=args.card_memory,
            payload_bytes=args.payload_bytes or nominal.weight_bytes(args.params, args.weight_bits),
            link_bandwidth=args.link_bw, link_efficiency=args.link_efficiency, startup_s=args.startup,
            messages=args.messages)
    else:   # one function per kind, beside its _arguments
        rec["result"] = globals()["_" + args.kind.replace("-", "_")](args)
    rec["conventions"] = render.conventions(args.kind)
    if args.kind == "training" and args.price_per_device_hour is not None:
        rec["conventions"] = rec["conventions"] + render.conventions("training-cost")
    return common.emit(args, rec, render.markdown, render.csv)


def _card_shards(args):
    from ..errors import UserError

    if args.shards is None:
        q, r = divmod(args.params, args.cards)
        return tuple(q + (i < r) for i in range(args.cards))
    if len(args.shards) != args.cards or sum(args.shards) != args.params:
        raise UserError(f"--shards must give {args.cards} counts summing to --params {args.params:,}")
    return args.shards


def _window(args):
    from ..analyses.concurrency import memory_window
    from ..errors import UserError

    if (args.model is None) == (args.payload_bytes is None):
        raise UserError("give --model (with --context) for a request's KV cache, or --payload-bytes")
    if args.model is not None:
        from ..analyses.kv import bytes_per_request
        from ..load.models import load_model

        if args.context is None:
            raise UserError("--model needs --context (tokens per request)")
        arch = load_model(args.model)
        payload = args.batch * bytes_per_request(arch, common.workload(args, arch, 1, 1, 0), args.context)
    else:
        payload = args.payload_bytes
    if args.bandwidth is not None:
        bandwidth = round(args.bandwidth)
    else:
        from ..load.hardware import load_device
        bandwidth = load_device(args.device or "h100-sxm").memory_bandwidth_bytes_per_s
    if args.active is not None and args.active > args.transactions:
        raise UserError(f"--active {args.active} exceeds --transactions {args.transactions}")
    ns = lambda t: max(1, round(t * 1e9))  # noqa: E731  (declared times are whole nanoseconds)
    return memory_window(payload_bytes=payload, bandwidth=bandwidth, latency_ns=ns(args.latency),
                         transaction_bytes=args.transaction_bytes, transactions=args.transactions,
                         active=args.active,
                         service_interval_ns=None if args.service_interval is None else ns(args.service_interval))


def _checkpoint(args):
    from fractions import Fraction

    from ..analyses import checkpoint
    from ..errors import UserError

    if (args.model is None) == (args.params is None):
        raise UserError("give --model (its exact parameters) or --params")
    params = args.params
    if args.model is not None:
        from ..load.models import load_model
        params = load_model(args.model).params
    grads = 2 if args.saved == "weights+grads+optimizer" else 0
    payload = checkpoint.payload_bytes(params, 2, grads, 12)
    def exact(seconds):   # a time as written (its shortest decimal), for the exact rationals
        return None if seconds is None else Fraction(repr(seconds))

    rate = checkpoint.failure_rate(args.devices, exact(args.device_mtbf), exact(args.job_mtbf))
    out = checkpoint.interval(payload=payload, write_bandwidth=round(args.write_bandwidth), rate=rate,
                              recovery_s=exact(args.recovery), candidates=args.intervals)
    return dict({"parameters": params}, **out)


from .budget_kernel import _bank, _bank_arguments, _quant_gemm, _quant_gemm_arguments  # noqa: E402,F401
from .budget_kernel import _rmsnorm, _rmsnorm_arguments  # noqa: E402,F401
from .budget_kernel import _dag, _dag_arguments, _microbatch, _microbatch_arguments  # noqa: E402,F401
from .budget_net import _feedback_queue, _feedback_queue_arguments  # noqa: E402,F401
from .budget_net import _periodic_queue, _periodic_queue_arguments  # noqa: E402,F401
from .budget_net import _collective_tail, _collective_tail_arguments, _ordering, _ordering_arguments  # noqa: E402,F401
from .budget_net import _completion_reclaim, _completion_reclaim_arguments  # noqa: E402,F401
from .budget_net import _remote_state, _remote_state_arguments  # noqa: E402,F401
from .budget_net import _fifo_pipeline, _fifo_pipeline_arguments  # noqa: E402,F401
from .budget_net import _moe_dedup, _moe_dedup_arguments  # noqa: E402,F401
from .budget_net import _staging, _staging_arguments  # noqa: E402,F401
from .budget_net import _packet_reorder, _packet_reorder_arguments  # noqa: E402,F401
from .budget_net import _memory_pool, _memory_pool_arguments  # noqa: E402,F401
from .budget_net import _growing_kv, _growing_kv_arguments  # noqa: E402,F401
from .budget_kernel import _deployment, _deployment_arguments, _graph, _graph_arguments  # noqa: E402,F401
from .budget_kernel import _persistent, _persistent_arguments  # noqa: E402,F401
from .budget_kernel import _specialization, _specialization_arguments  # noqa: E402,F401
from .budget_kernel import _host_transfer, _host_transfer_arguments  # noqa: E402,F401
from .budget_kernel import _stream_buffer, _stream_buffer_arguments  # noqa: E402,F401
from .budget_kernel import _attention_input, _attention_input_arguments  # noqa: E402,F401
from .budget_kernel import _matrix_vector, _matrix_vector_arguments  # noqa: E402,F401
from .budget_kernel import _sm_balance, _sm_balance_arguments  # noqa: E402,F401
from .budget_kernel import _tile_order, _tile_order_arguments  # noqa: E402,F401
from .budget_kernel import _fp8_scale, _fp8_scale_arguments, _online_softmax, _online_softmax_arguments  # noqa: E402,F401
from .budget_cost import _supernode, _supernode_arguments  # noqa: E402,F401
from .budget_cost import _rl_supply, _rl_supply_arguments  # noqa: E402,F401
from .budget_cost import _decision, _decision_arguments  # noqa: E402,F401
from .budget_fabric import _incast, _incast_arguments  # noqa: E402,F401
from .budget_scaling import _scaling_fit, _scaling_fit_arguments  # noqa: E402,F401
from .budget_scaling import _scaling_lifecycle, _scaling_lifecycle_arguments  # noqa: E402,F401
from .budget_fabric import _wan_loss, _wan_loss_arguments  # noqa: E402,F401
from .budget_fabric import _hash_collision, _hash_collision_arguments  # noqa: E402,F401
from .budget_ub import _ub_fabric, _ub_fabric_arguments  # noqa: E402,F401
from .budget_fabric import _clos, _clos_arguments, _rail_pairing, _rail_pairing_arguments  # noqa: E402,F401
from .budget_fabric import _switch_reduce, _switch_reduce_arguments  # noqa: E402,F401
from .budget_sm import _sm_occupancy, _sm_occupancy_arguments  # noqa: E402,F401
from .budget_expert import _expert_execution, _expert_execution_arguments  # noqa: E402,F401
from .budget_sm import _copy_coordinates, _copy_coordinates_arguments  # noqa: E402,F401

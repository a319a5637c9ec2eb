"""`budget`: first-order budgets with declared inputs (a nominal dense model of N parameters,
memory concurrency by Little's law, checkpoint intervals): the book's chapter-1 and
chapter-10 estimates, each one subcommand.

This module lists every kind (KINDS), makes a kind's parser when argparse asks for it and runs
the nominal-model kinds (decode, transfer, training); the other kinds live in topic modules
(HOMES names each one's), imported only for the kind that runs: budget_training (chapters 3 and
10), budget_model (a model's ledger or a chip's figures), budget_media (requests, streams,
environments) and the other cli/budget_*.py modules; budget_values holds the declared-value
parsers they share."""

import argparse
import sys
from importlib import import_module

from . import common
from .budget_values import _device, _device_figures, _list, _params, _price, byte_count

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


HOMES = {   # the module of cli/ that holds a kind's options and run; the others are in this one
    "moe-layer-training": "budget_training",
    "gradient-ring": "budget_training",
    "zero-state": "budget_training",
    "window": "budget_model",
    "checkpoint": "budget_training",
    "energy": "budget_model",
    "history": "budget_training",
    "straggler": "budget_training",
    "batch": "budget_training",
    "capacity": "budget_training",
    "nic": "budget_media",
    "connections": "budget_media",
    "periodic-queue": "budget_net",
    "feedback-queue": "budget_net",
    "collective-tail": "budget_net",
    "completion-reclaim": "budget_net",
    "fifo-pipeline": "budget_net",
    "moe-dedup": "budget_net",
    "staging": "budget_net",
    "packet-reorder": "budget_net",
    "memory-pool": "budget_net",
    "growing-kv": "budget_net",
    "remote-state": "budget_net",
    "ordering": "budget_net",
    "pipeline": "budget_training",
    "image-request": "budget_media",
    "audio": "budget_media",
    "ack-window": "budget_media",
    "image-stream": "budget_media",
    "trace": "budget_media",
    "routing": "budget_media",
    "sampling": "budget_media",
    "retry": "budget_media",
    "optimizer": "budget_training",
    "voice-demand": "budget_model",
    "cast": "budget_training",
    "batch-reuse": "budget_model",
    "kda-chunk": "budget_model",
    "routing-metadata": "budget_training",
    "expert-execution": "budget_expert",
    "environments": "budget_media",
    "sequence-toy": "budget_model",
    "ec-pool": "budget_media",
    "server-scope": "budget_model",
    "reshard": "budget_training",
    "async-checkpoint": "budget_training",
    "handoff": "budget_training",
    "input-supply": "budget_training",
    "fusion": "budget_model",
    "quant-gemm": "budget_kernel",
    "rmsnorm": "budget_kernel",
    "dag": "budget_kernel",
    "microbatch": "budget_kernel",
    "graph": "budget_kernel",
    "deployment": "budget_kernel",
    "specialization": "budget_kernel",
    "persistent": "budget_kernel",
    "stream-buffer": "budget_kernel",
    "host-transfer": "budget_kernel",
    "attention-input": "budget_kernel",
    "matrix-vector": "budget_kernel",
    "sm-balance": "budget_kernel",
    "online-softmax": "budget_kernel",
    "fp8-scale": "budget_kernel",
    "bank": "budget_kernel",
    "chip-power": "budget_model",
    "request": "budget_model",
    "tile-order": "budget_kernel",
    "supernode": "budget_cost",
    "rl-supply": "budget_cost",
    "decision": "budget_cost",
    "ub-fabric": "budget_ub",
    "sm-occupancy": "budget_sm",
    "copy-coordinates": "budget_sm",
    "scaling-fit": "budget_scaling",
    "scaling-lifecycle": "budget_scaling",
    "incast": "budget_fabric",
    "wan-loss": "budget_fabric",
    "hash-collision": "budget_fabric",
    "clos": "budget_fabric",
    "rail-pairing": "budget_fabric",
    "switch-reduce": "budget_fabric",
}


def kind_function(kind, suffix=""):
    """A kind's run function (suffix "_arguments": its options), imported from its module when first asked for."""
    module = HOMES.get(kind)
    where = import_module("." + module, __package__) if module else sys.modules[__name__]
    return getattr(where, "_" + kind.replace("-", "_") + suffix)


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
            kind_function(name, "_arguments")(q)
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
    from ..render import budget as render

    if args.kind in ("decode", "training", "transfer"):   # the nominal-model kinds, computed here
        from ..analyses import nominal
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
        rec["result"] = kind_function(args.kind)(args)
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

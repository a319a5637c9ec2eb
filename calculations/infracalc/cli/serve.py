"""`serve`: a serving system: schedulers side by side, load, and the fewest devices meeting an SLO."""

import argparse

from . import common


def time_limit(text):
    """A time limit with its unit (50ms, 2s, 800us): a bare number is refused, since
    '--tpot-limit 50' could mean 50 s or 50 ms."""
    raw = text.strip()
    if not raw.endswith(("us", "ms", "s")):
        from ..errors import quote
        raise argparse.ArgumentTypeError(f"needs a unit (us, ms or s), e.g. 50ms or 2s; got {quote(text)}")
    value = common.duration(raw)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive time, got '{text}'")
    return value


def rate(text):
    """An arrival rate in requests per second (common._float_in: NaN and words refused)."""
    return common._float_in(text, lambda v: 0 < v < 1e12, "(0, 1e12) requests per second")


def non_negative(text):
    return common._float_in(text, lambda v: 0 <= v <= 1e6, "[0, 1e6]")


def worker(text):
    """--worker NAME:COUNT:PREFILL_TOK/S:DECODE_TOK/S (declared rates, exact rationals such as
    16384 or 3/2) or NAME:COUNT:DEVICE (rates from the ledger on a bundled device or file)."""
    from fractions import Fraction

    parts = text.split(":")
    count = common.digits(parts[1]) if len(parts) in (3, 4) and parts[0] else None
    if count is None or count < 1 or count > 4096:
        raise argparse.ArgumentTypeError(
            f"must be NAME:COUNT:PREFILL_TOK/S:DECODE_TOK/S or NAME:COUNT:DEVICE with COUNT in 1..4096, "
            f"got '{text}'")
    if len(parts) == 3:
        return (parts[0], count, parts[2])
    try:
        rates = tuple(Fraction(x) for x in parts[2:])
    except (ValueError, ZeroDivisionError):
        rates = (-1,)
    if any(x <= 0 or x > 10**15 for x in rates):
        raise argparse.ArgumentTypeError(f"rates must be positive numbers or fractions (e.g. 16384, 3/2), "
                                         f"got '{text}'")
    return (parts[0], count) + rates


def reconf_layout(text):
    """tpTepE[@DEV,DEV,...] (devices EP-major then TP-major; default g0 .. g(TE-1))."""
    import re

    m = re.fullmatch(r"tp(\d+)(?:ep(\d+))?(?:@(.+))?", text.strip())
    tp, ep = (int(m.group(1)), int(m.group(2) or 1)) if m else (0, 0)
    if not m or not 1 <= tp <= 1024 or not 1 <= ep <= 1024 or tp * ep > 4096:
        raise argparse.ArgumentTypeError(f"must be tpT[epE][@DEV,DEV,...] (e.g. tp4, tp2ep4, tp4@new0,new1,new2,new3), "
                                         f"got '{text}'")
    devices = m.group(3).split(",") if m.group(3) else [f"g{i}" for i in range(tp * ep)]
    if len(devices) != tp * ep or len(set(devices)) != len(devices) or not all(devices):
        raise argparse.ArgumentTypeError(f"{text}: needs {tp * ep} distinct device names")
    return tp, ep, tuple(devices)


def per_device_bytes(text):
    """BYTES[@DEV,DEV,...]: a byte size on the named devices (default: every device)."""
    size, _, names = text.partition("@")
    return common.byte_size(size), tuple(names.split(",")) if names else None


def exact_in(text, high, what):
    """An exact rational in [0, high] (10, 0.0002 or 1/5000), else one line naming `what`."""
    from fractions import Fraction

    try:
        v = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        v = -1
    if not 0 <= v <= high:
        raise argparse.ArgumentTypeError(f"must be {what}, got '{text}'")
    return v


def seconds_exact(text):
    """Exact non-negative seconds: 10, 0.0002 or 1/5000."""
    return exact_in(text, 10**12, "exact non-negative seconds (10, 0.0002 or 1/5000)")


def acceptance(text):
    """Comma-separated probabilities in [0, 1]."""
    out = []
    for part in text.split(","):
        out.append(common.unit_interval(part.strip()))
    if not out or len(out) > 64:
        raise argparse.ArgumentTypeError(f"must be 1 to 64 probabilities, got '{text}'")
    return tuple(out)


def counts(text):
    """N0,N1,...,Nk: rounds in which exactly a of k drafts were accepted (k = 1..64)."""
    parts = [common.digits(x.strip()) for x in text.split(",")]
    if None in parts or not 2 <= len(parts) <= 65 or not sum(parts) or max(parts) > 10**12:
        raise argparse.ArgumentTypeError(f"must be 2 to 65 non-negative integers N0,N1,...,Nk (rounds "
                                         f"accepting exactly 0..k drafts), not all 0, got '{text}'")
    return tuple(parts)


def spec_option(text):
    """ID:DRAFT_NS:VERIFY_NS:N0,N1,...,Nk (a declared draft option)."""
    parts = text.split(":")
    ns = [common.digits(x) for x in parts[1:3]] if len(parts) == 4 and parts[0] else [None]
    if None in ns or ns[1] < 1 or ns[0] > 10**15 or ns[1] > 10**15 or parts[0] == "baseline":
        raise argparse.ArgumentTypeError(f"must be ID:DRAFT_NS:VERIFY_NS:N0,N1,...,Nk (ID not 'baseline', "
                                         f"verify at least 1 ns), got '{text}'")
    return parts[0], ns[0] + ns[1], counts(parts[3])


def draft_round(text):
    """CACHED:NEW:BLOCK, a DFlash round's context rows (cached, new) and block positions."""
    parts = [common.digits(x) for x in text.split(":")]
    if len(parts) != 3 or None in parts or parts[2] < 2 or max(parts) > 2**24:
        raise argparse.ArgumentTypeError(f"must be CACHED:NEW:BLOCK (non-negative context rows, a block of "
                                         f"at least 2 positions), got '{text}'")
    return tuple(parts)


def page_event(text):
    """create:ID:N, fork:PARENT:ID, append:ID:N or cancel:ID (a KV page event)."""
    parts = text.split(":")
    shapes = {"create": ("id", "n"), "fork": ("id", "id"), "append": ("id", "n"), "cancel": ("id",)}
    shape = shapes.get(parts[0])
    if shape and len(parts) == len(shape) + 1 and len(text) <= 200:
        values = [common.digits(v) if kind == "n" else v for kind, v in zip(shape, parts[1:])]
        if all(v not in (None, "", 0) for v in values) and all(k == "id" or v <= 10**7 for k, v in zip(shape, values)):
            return (parts[0],) + tuple(values)
    raise argparse.ArgumentTypeError(f"must be create:ID:N, fork:PARENT:ID, append:ID:N or cancel:ID "
                                     f"(N positive), got '{text}'")


def residency_interval(text):
    """ID:TIER:IDENTITY:TOKENS:START_NS:END_NS (a declared residency interval)."""
    parts = text.split(":")
    nums = [common.digits(x) for x in parts[3:]] if len(parts) == 6 else [None]
    if None in nums or not all(parts[:3]) or nums[0] < 1 or nums[2] <= nums[1] or max(nums) > 10**18:
        raise argparse.ArgumentTypeError(f"must be ID:TIER:IDENTITY:TOKENS:START_NS:END_NS (tokens positive, "
                                         f"end after start), got '{text}'")
    return tuple(parts[:3]) + tuple(nums)


def tier_capacity(text):
    """TIER=BYTES (512MiB, 1GiB, 377487359)."""
    name, eq, size = text.partition("=")
    if not name or not eq:
        raise argparse.ArgumentTypeError(f"must be TIER=BYTES such as HBM=512MiB, got '{text}'")
    return name, common.byte_size(size)


def tile(text):
    """MxKxN GEMM tile sizes (positive integers)."""
    parts = [common.digits(x) for x in text.lower().split("x")]
    if len(parts) != 3 or None in parts or min(parts) < 1 or max(parts) > 65536:
        raise argparse.ArgumentTypeError(f"must be MxKxN tile sizes such as 64x32x128, got '{text}'")
    return tuple(parts)


def replica(text):
    """EXPERT:RANK (a copy of an expert on another rank)."""
    parts = [common.digits(x) for x in text.split(":")]
    if len(parts) != 2 or None in parts:
        raise argparse.ArgumentTypeError(f"must be EXPERT:RANK in ASCII digits, e.g. 0:1, got '{text}'")
    return tuple(parts)


def flop_rate(text):
    """A compute rate such as 100T (FLOP/s; T = 10^12, P = 10^15, G = 10^9), an integer."""
    value = common._scaled(text.removesuffix("FLOP/s"), common._FLOP_UNITS, "a rate such as 100T (FLOP/s)", 1e30)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive FLOP/s, got '{text}'")
    return round(value)


def int_bandwidth(text):
    """A bandwidth (25GB/s) as whole bytes/s, so the times stay exact rationals."""
    return round(common.bandwidth(text))


def layer_list(text):
    """L1,L2,... or START:STOP:STEP (Python's range) of layer indices."""
    parts = text.split(":")
    if len(parts) == 3:
        nums = [common.digits(x) for x in parts]
        if None not in nums and nums[2] > 0 and nums[0] < nums[1] <= 10**6:
            return tuple(range(*nums))
    else:
        nums = [common.digits(x.strip()) for x in text.split(",")]
        if None not in nums and len(nums) <= 10**4:
            return tuple(nums)
    raise argparse.ArgumentTypeError(f"must be layer indices L1,L2,... or START:STOP:STEP, got '{text}'")


# Host links by name: PCIe x16 per direction (PCI-SIG: Gen4 ~32, Gen5 ~64, Gen6 ~128 GB/s).
HOST_LINKS = {"pcie4": 32 * 10**9, "pcie5": 64 * 10**9, "pcie6": 128 * 10**9}


def host_link(text):
    """A host-to-device bandwidth: pcie4, pcie5, pcie6 (x16, per direction) or a bandwidth."""
    return HOST_LINKS.get(text.strip().lower()) or round(common.bandwidth(text))


def device_host_link(args, device, what):
    """--host-link-bw when given, else the device file's host link; a device whose file has none is
    an error naming it (its host link is unknown, never guessed)."""
    from ..errors import UserError

    if args.host_link_bw is not None:
        return args.host_link_bw
    if device.host_link is None:
        raise UserError(f"{what} streams over the host link, and device '{device.id}' has no host link "
                        f"in its file (unknown): give --host-link-bw BW|pcie4|pcie5|pcie6")
    return device.host_link.bytes_per_s


def route_times(text):
    """QA:QB:FULL:WARM:LOOKUP in integer ns."""
    parts = [common.digits(x) for x in text.split(":")]
    if len(parts) != 5 or None in parts or parts[3] >= parts[2]:
        raise argparse.ArgumentTypeError(f"must be QUEUE_A:QUEUE_B:FULL:WARM:LOOKUP integer ns with WARM below "
                                         f"FULL, got '{text}'")
    return tuple(parts)


def probability(text):
    """An exact probability: 9/10, 0.9 or 1."""
    return exact_in(text, 1, "a probability such as 9/10 or 0.9")


def prefix_candidate(text):
    """ID:PREFIX:SUFFIX:REUSES (tokens; expected reuses an exact rational)."""
    from fractions import Fraction

    parts = text.split(":")
    ok = len(parts) == 4 and parts[0]
    nums = [common.digits(x) for x in parts[1:3]] if ok else [None]
    try:
        reuses = Fraction(parts[3]) if ok else -1
    except (ValueError, ZeroDivisionError):
        reuses = -1
    if None in nums or min(nums) < 1 or max(nums) > 10**7 or reuses < 0:
        raise argparse.ArgumentTypeError(f"must be ID:PREFIX_TOKENS:SUFFIX_TOKENS:EXPECTED_REUSES (e.g. "
                                         f"a:512:1:1), got '{text}'")
    return parts[0], nums[0], nums[1], reuses


def request(text):
    """--request ARRIVAL_NS:PROMPT:OUTPUT (integers)."""
    parts = text.split(":")
    values = [common.digits(x) for x in parts] if len(parts) == 3 else [None]
    if None in values or values[1] < 1 or values[2] < 1 or max(values) > 10**15:
        raise argparse.ArgumentTypeError(f"must be ARRIVAL_NS:PROMPT_TOKENS:OUTPUT_TOKENS in ASCII digits "
                                         f"(prompt and output at least 1), got '{text}'")
    return tuple(values)


def add_arguments(p):
    common.add_model(p)
    common.add_lengths(p, required=False)
    s = p.add_argument_group("scheduler")
    s.add_argument("--max-seqs", type=common.positive_int, default=256, metavar="N",
                   help="requests running at once (as vLLM's --max-num-seqs; default 256)")
    s.add_argument("--max-batched-tokens", type=common.positive_int, default=8192, metavar="T",
                   help="tokens one iteration may carry (as vLLM's --max-num-batched-tokens; default 8192)")
    s.add_argument("--tp", type=common.positive_int, default=1,
                   help="tensor-parallel degree of the replica whose schedulers are compared "
                        "(communication not charged; default 1)")
    load = p.add_argument_group("load and SLO")
    load.add_argument("--rate", type=rate, default=None, metavar="REQ/S",
                      help="arrival rate (Poisson) for utilisation, Little's law and the queueing delay")
    load.add_argument("--service-cv2", type=non_negative, default=0.0, metavar="C2",
                      help="squared coefficient of variation of the service time (default 0: M/D/1)")
    load.add_argument("--ttft-limit", type=time_limit, default=None, metavar="T",
                      help="TTFT limit with its unit (e.g. 2s); with --tpot-limit or alone: size the "
                           "fewest devices that meet the limits")
    load.add_argument("--tpot-limit", type=time_limit, default=None, metavar="T",
                      help="mean TPOT limit with its unit (e.g. 50ms)")
    load.add_argument("--slo-figure", choices=("predicted", "estimate"), default=None,
                      help="the figure the SLO sizing judges and ranks layouts by: predicted (default: a "
                           "well-tuned engine, efficiency.serving) or estimate (operator-sum roofline)")
    load.add_argument("--max-devices", type=common.positive_int, default=None, metavar="N",
                      help="the largest device count the SLO sizing tries (default 1024)")
    load.add_argument("--cached-prefix", type=common.non_negative_int, default=0, metavar="C",
                      help="prompt tokens found in a prefix cache: each prompt prefills P - C tokens after them")
    load.add_argument("--prefix-hit-rate", type=common.unit_interval, default=1.0, metavar="H",
                      help="with --cached-prefix: the fraction of prompts that find the prefix (default 1); "
                           "the schedulers price the expected request")
    pd = p.add_argument_group("prefill/decode disaggregation")
    pd.add_argument("--prefill-device", default=None, metavar="ID|DEVICE.json",
                    help="with --decode-device and --rate: size a prefill pool on this device type")
    pd.add_argument("--decode-device", default=None, metavar="ID|DEVICE.json",
                    help="the decode pool's device type")
    pd.add_argument("--prefill-tp", type=common.positive_int, default=1, help="devices per prefill worker (TP)")
    pd.add_argument("--decode-tp", type=common.positive_int, default=1, help="devices per decode worker (TP)")
    pd.add_argument("--worker", type=worker, action="append", default=None, metavar="SPEC",
                    help="a worker type NAME:COUNT:PREFILL_TOK/S:DECODE_TOK/S (declared rates) or "
                         "NAME:COUNT:DEVICE (rates from the ledger); repeatable: enumerate every split "
                         "into a prefill and a decode pool")
    pd.add_argument("--decode-batch", type=common.positive_int, default=None, metavar="B",
                    help="with --worker NAME:COUNT:DEVICE: rate each device by the lower bound of one "
                         "P-token prefill and of one decode step of B requests at the middle history "
                         "(exact rationals; the book's derived stage rates) instead of the chunked estimate")
    pd.add_argument("--network-bw", type=common.bandwidth, default=None, metavar="BW",
                    help="with --worker: the shared one-way bandwidth carrying every KV handoff (e.g. 25GB/s)")
    rp = p.add_argument_group("replay (a few requests, iteration by iteration, declared step costs)")
    rp.add_argument("--request", type=request, action="append", default=None, metavar="ARRIVAL_NS:P:G",
                    help="a request arriving at ARRIVAL_NS with P prompt and G output tokens; repeatable")
    rp.add_argument("--policy", choices=("fixed", "continuous", "chunked"), default="chunked",
                    help="the replay's scheduler (default chunked)")
    rp.add_argument("--chunk-tokens", type=common.positive_int, default=512, metavar="N",
                    help="chunked: the most prompt tokens of one request per iteration (default 512)")
    rp.add_argument("--kv-capacity", type=common.byte_size, default=None, metavar="BYTES",
                    help="KV pool size for admission (each request reserves its final length)")
    for name, text in (("step-base-ns", "fixed cost per iteration"), ("per-token-ns", "cost per new token"),
                       ("per-pair-ns", "cost per causal query-key pair")):
        rp.add_argument(f"--{name}", type=common.non_negative_int, default=None, metavar="NS",
                        help=f"declared {text}, integer ns (all three needed with --request)")
    sp = p.add_argument_group("speculative decoding")
    sp.add_argument("--draft-model", default=None, metavar="ID|CONFIG.json",
                    help="a draft model (same tokenizer): price draft lengths 1..--max-draft-tokens; "
                         "a DFlash block-diffusion drafter (bundled: qwen3-8b-dflash-b16, or a config whose "
                         "architectures name DFlashDraftModel) drafts them in one block forward")
    sp.add_argument("--draft-round", type=draft_round, default=None, metavar="CACHED:NEW:BLOCK",
                    help="with a DFlash --draft-model: the work of one drafting round at CACHED context "
                         "rows, NEW fused target features and a BLOCK of positions, and the target's "
                         "verification of it (no --acceptance)")
    sp.add_argument("--mtp", action="store_true",
                    help="draft with the target's own multi-token-prediction module (DeepSeek-V3 style) "
                         "instead of --draft-model")
    sp.add_argument("--acceptance", type=acceptance, default=None, metavar="A[,A,...]",
                    help="acceptance probability per draft position (the last repeated), e.g. 0.8 "
                         "or 0.9,0.8,0.7")
    sp.add_argument("--max-draft-tokens", type=common.positive_int, default=8, metavar="K",
                    help="longest draft tried (default 8)")
    sp.add_argument("--accepted-counts", type=counts, default=None, metavar="N0,N1,...,Nk",
                    help="a round ledger with declared costs: rounds accepting exactly 0..k drafts "
                         "(with --draft-ns, --verify-ns, --commit-ns, --baseline-token-ns; --input-len "
                         "is the history the ledger prices the verify pass at)")
    sp.add_argument("--spec-option", type=spec_option, action="append", default=None,
                    metavar="ID:DRAFT_NS:VERIFY_NS:N0,...,Nk",
                    help="a declared draft option for the finite-output budget over --output-len tokens "
                         "(with --baseline-token-ns and --setup-ns); repeatable")
    for name, text in (("draft-ns", "draft cost of a round"), ("verify-ns", "verify cost of a round"),
                       ("commit-ns", "commit cost of a round (default 0)"),
                       ("baseline-token-ns", "plain decoding cost per token"),
                       ("setup-ns", "one-time drafter preparation (default 0)")):
        sp.add_argument(f"--{name}", type=common.non_negative_int, default=None, metavar="NS",
                        help=f"declared {text}, integer ns")
    sp.add_argument("--remaining-output", type=common.positive_int, default=None, metavar="M",
                    help="--accepted-counts: tokens still allowed; a round delivers at most M")
    sp.add_argument("--spec-batch", type=common.positive_int, default=1, metavar="B",
                    help="requests per verify step (default 1)")
    ex = p.add_argument_group("MoE experts (one layer's routed experts as grouped GEMMs on EP ranks)")
    ex.add_argument("--expert-tokens", type=common.positive_int, default=None, metavar="N",
                    help="tokens through one MoE layer: tile padding and the busiest rank (--routing "
                         "balanced or concentrated)")
    ex.add_argument("--expert-ranks", type=common.positive_int, default=8, metavar="R",
                    help="EP ranks holding the experts (default 8)")
    ex.add_argument("--placement", choices=("contiguous", "striped"), default="contiguous",
                    help="expert e on rank e // (E/R) (contiguous, default) or e mod R (striped)")
    ex.add_argument("--tile", type=tile, default=(64, 32, 128), metavar="MxKxN",
                    help="grouped-GEMM tile (default 64x32x128)")
    ex.add_argument("--replica", type=replica, action="append", default=None, metavar="EXPERT:RANK",
                    help="one more copy of an expert on a rank; repeatable")
    ex.add_argument("--payback-batches", type=common.positive_int, default=None, metavar="B",
                    help="with --replica: whether copying the replicas pays back over B identical batches "
                         "(needs --expert-compute, --expert-interface-bw, --copy-bw)")
    ex.add_argument("--expert-compute", type=flop_rate, default=None, metavar="FLOP/S",
                    help="declared compute rate of a rank for the payback (e.g. 100T)")
    ex.add_argument("--expert-interface-bw", type=int_bandwidth, default=None, metavar="BW",
                    help="declared bandwidth carrying a rank's tile traffic (e.g. 1TB/s)")
    ex.add_argument("--copy-bw", type=int_bandwidth, default=None, metavar="BW",
                    help="the serial link copying replica weights (e.g. 25GB/s)")
    ex.add_argument("--copy-startup-ns", type=common.non_negative_int, default=0, metavar="NS",
                    help="startup per replica copied or per expert message (integer ns; default 0)")
    ex.add_argument("--resident-experts", type=common.non_negative_int, default=None, metavar="K",
                    help="experts 0..K-1 on the device, the rest on the host: run the remote ones on the CPU "
                         "or copy them over --host-link-bw (needs --cpu-compute, --host-memory-bw, "
                         "--expert-compute, --expert-memory-bw)")
    ex.add_argument("--cpu-compute", type=flop_rate, default=None, metavar="FLOP/S",
                    help="declared CPU matrix rate for host-resident experts (e.g. 1.8T)")
    ex.add_argument("--host-memory-bw", type=int_bandwidth, default=None, metavar="BW",
                    help="declared host memory bandwidth (e.g. 220GB/s)")
    ex.add_argument("--expert-memory-bw", type=int_bandwidth, default=None, metavar="BW",
                    help="declared device memory bandwidth for the experts (e.g. 777.5GB/s)")
    ex.add_argument("--replica-budget", type=common.byte_size, default=None, metavar="BYTES",
                    help="extra bytes each rank can hold for replicas (default: no limit)")
    rc = p.add_argument_group("TP/EP reconfiguration (move a quiescent group from one layout to another)")
    rc.add_argument("--reconfigure", type=reconf_layout, nargs=2, default=None, metavar=("FROM", "TO"),
                    help="layouts tpT[epE][@DEV,...] (e.g. tp4 tp8): the bytes each device sends and receives")
    rc.add_argument("--reconfigure-batch", type=common.positive_int, default=1, metavar="B",
                    help="requests whose cache moves (default 1)")
    rc.add_argument("--reconfigure-history", type=common.non_negative_int, default=0, metavar="N",
                    help="tokens of cache per request (default 0)")
    rc.add_argument("--aux-state-bytes", type=common.non_negative_int, default=0, metavar="BYTES",
                    help="flat auxiliary state split over the devices (default 0)")
    rc.add_argument("--replay", action="store_true",
                    help="the target recomputes the cache from the token log: no old KV moves")
    rc.add_argument("--fabric-bw", type=int_bandwidth, default=None, metavar="BW",
                    help="declared aggregate fabric bandwidth (all network bytes)")
    rc.add_argument("--sender-bw", type=int_bandwidth, default=None, metavar="BW",
                    help="declared per-device send bandwidth")
    rc.add_argument("--receiver-bw", type=int_bandwidth, default=None, metavar="BW",
                    help="declared per-device receive bandwidth")
    rc.add_argument("--reconfigure-capacity", type=per_device_bytes, action="append", default=None,
                    metavar="BYTES[@DEV,...]", help="declared capacity of the devices (default: unknown); repeatable")
    rc.add_argument("--reconfigure-extra", type=per_device_bytes, action="append", default=None,
                    metavar="BYTES[@DEV,...]", help="declared extra live bytes during the move; repeatable")
    rc.add_argument("--transfer-s", type=seconds_exact, default=None, metavar="S",
                    help="declared network transfer time (at least the lower bound)")
    rc.add_argument("--switch-runtime-s", type=seconds_exact, default=None, metavar="S",
                    help="declared sum of the other serial steps (drain, setup, repack, compile, cut-over, ...)")
    rc.add_argument("--switch-overhead-s", type=seconds_exact, default=None, metavar="S",
                    help="payback: the switch's extra seconds (with --step-saving-s)")
    rc.add_argument("--step-saving-s", type=seconds_exact, default=None, metavar="S",
                    help="payback: seconds saved per step by the new layout")
    of = p.add_argument_group("weight offload (FFN weights in host memory, streamed before use)")
    of.add_argument("--offload-ffn-layers", type=layer_list, default=None, metavar="L1,L2,...|START:STOP:STEP",
                    help="layers whose FFN weights live on the host (e.g. 3:36:4)")
    of.add_argument("--offload-slots", type=common.positive_int, default=1, metavar="S",
                    help="device slots holding one layer's FFN each (the prefetch depth; default 1)")
    of.add_argument("--offload-passes", type=common.positive_int, default=1, metavar="N",
                    help="passes scheduled one after the other (default 1)")
    of.add_argument("--host-link-bw", type=host_link, default=None, metavar="BW|pcie4|pcie5|pcie6",
                    help="host-to-device bandwidth per direction (pcie4/5/6: 32/64/128 GB/s, x16, PCI-SIG); "
                         "default for --offload-ffn-layers and --offload-kv: the device file's host_link")
    of.add_argument("--offload-kv", type=common.unit_interval, default=None, metavar="F",
                    help="the fraction of every request's KV cache kept in host memory and read over "
                         "--host-link-bw at each decode step (with --input-len, --output-len, --offload-batch)")
    of.add_argument("--offload-batch", type=common.positive_int, default=1, metavar="B",
                    help="--offload-kv: requests per decode step (default 1)")
    of.add_argument("--layer-ns", type=common.positive_int, default=None, metavar="NS",
                    help="declared time of one layer (integer ns); default: the estimate of one decode "
                         "step at history --input-len over the layers")
    ho = p.add_argument_group("PD and AF handoff ledger (declared link, serial messages)")
    ho.add_argument("--handoff-bw", type=int_bandwidth, default=None, metavar="BW",
                    help="price one request's PD snapshot (the cache of --input-len tokens) against the AF "
                         "activations of --af-steps decode steps over this one-way bandwidth")
    ho.add_argument("--handoff-startup-ns", type=common.non_negative_int, default=0, metavar="NS",
                    help="startup of every message on every hop (integer ns; default 0)")
    ho.add_argument("--handoff-batch", type=common.positive_int, default=1, metavar="B",
                    help="requests handed off together (default 1)")
    ho.add_argument("--af-steps", type=common.positive_int, default=1, metavar="N",
                    help="decode steps whose AF messages are counted (default 1)")
    ho.add_argument("--staging-bw", type=int_bandwidth, default=None, metavar="BW",
                    help="stage every message through host memory: device-to-host and host-to-device "
                         "hops at this bandwidth around the network hop")
    ho.add_argument("--handoff-kv-model", default=None, metavar="ID|CONFIG.json",
                    help="with --handoff-bw or --worker: the PD handoff carries the prompt's cache in this "
                         "model's KV layout (the book's MLA rows: deepseek-v3's compact MLA state on "
                         "qwen3-8b's rates); the AF messages and stage rates stay the model's")
    kr = p.add_argument_group("KV restore (keep, offload and prefetch, or drop and recompute one snapshot)")
    kr.add_argument("--kv-restore", type=common.non_negative_int, default=None, metavar="NEXT_USE_NS",
                    help="the snapshot of --input-len tokens is next used this many ns from now: its ready "
                         "time, stall and freed byte-ns under the three policies (with --offload-bw, "
                         "--transfer-startup-ns, --recompute-ns, --host-capacity)")
    kr.add_argument("--offload-bw", type=int_bandwidth, default=None, metavar="BW",
                    help="device-to-host bandwidth of the offload (e.g. 25GB/s)")
    kr.add_argument("--restore-bw", type=int_bandwidth, default=None, metavar="BW",
                    help="host-to-device bandwidth of the prefetch (default: --offload-bw)")
    kr.add_argument("--transfer-startup-ns", type=common.non_negative_int, default=None, metavar="NS",
                    help="startup of each direction's copy (integer ns; default 0)")
    kr.add_argument("--recompute-ns", type=common.positive_int, default=None, metavar="NS",
                    help="declared time of replaying the prefill (integer ns)")
    kr.add_argument("--host-capacity", type=common.byte_size, default=None, metavar="BYTES",
                    help="host memory free for the snapshot (e.g. 256MiB); the offload needs all of it")
    pg = p.add_argument_group("KV pages and branches (a paged cache under declared events)")
    pg.add_argument("--page-event", type=page_event, action="append", default=None,
                    metavar="create:ID:N|fork:PARENT:ID|append:ID:N|cancel:ID",
                    help="one event on the paged cache, in order; repeatable (pages of --page-tokens)")
    pg.add_argument("--reservation-tokens", type=common.positive_int, default=None, metavar="R",
                    help="the fixed reservation per request compared with paging (tokens; default 0)")
    pg.add_argument("--page-capacity", type=common.byte_size, default=None, metavar="BYTES",
                    help="cache bytes for pages (whole pages); an event needing more is rejected")
    rs = p.add_argument_group("multi-tier residency of immutable pages (declared intervals)")
    rs.add_argument("--residency", type=residency_interval, action="append", default=None,
                    metavar="ID:TIER:IDENTITY:TOKENS:START_NS:END_NS",
                    help="a prefix identity's first TOKENS tokens (whole --page-tokens pages) held in TIER during "
                         "[START, END) ns; repeatable")
    rs.add_argument("--tier-capacity", type=tier_capacity, action="append", default=None, metavar="TIER=BYTES",
                    help="a tier's capacity (the tiers are reported in this order); repeatable")
    pv = p.add_argument_group("prefix value (which prefixes a cache of fixed size keeps)")
    pv.add_argument("--prefix-candidate", type=prefix_candidate, action="append", default=None,
                    metavar="ID:PREFIX:SUFFIX:REUSES",
                    help="a prefix of PREFIX tokens reused REUSES times by requests of SUFFIX more; repeatable "
                         "(with --prefix-budget)")
    pv.add_argument("--prefix-budget", type=lambda t: 0 if t.strip() == "0" else common.byte_size(t),
                    default=None, metavar="BYTES",
                    help="cache bytes the kept prefixes may hold (e.g. 180MiB)")
    pv.add_argument("--page-tokens", type=common.positive_int, default=16, metavar="N",
                    help="cache page size in tokens: a prefix holds whole pages (default 16)")
    cr = p.add_argument_group("cache route (one request, declared times)")
    cr.add_argument("--cache-route", type=route_times, default=None, metavar="QA:QB:FULL:WARM:LOOKUP",
                    help="worker A holds the --cached-prefix cache (queue QA), worker B does not (queue QB); "
                         "full and warm compute and the remote lookup, integer ns (needs --remote-bw, "
                         "--host-link-bw, --hit-probability, --route-slo-ns)")
    cr.add_argument("--remote-bw", type=int_bandwidth, default=None, metavar="BW",
                    help="the remote store's bandwidth to the host (e.g. 5GB/s)")
    cr.add_argument("--hit-probability", type=probability, default=None, metavar="P",
                    help="probability that A's cached prefix is still valid (e.g. 9/10)")
    cr.add_argument("--route-slo-ns", type=common.positive_int, default=None, metavar="NS",
                    help="the first-token limit A is judged against (integer ns)")
    cr.add_argument("--retrieval-after-queue", action="store_true",
                    help="B starts fetching the prefix only when its queue wait ends")
    common.add_dtypes(p)
    common.add_architecture_options(p)
    common.add_device(p)
    common.add_memory(p)
    common.add_output(p, ("md", "json", "csv"))   # csv: the schedulers and the SLO sizing only


def run(args):
    from ..analyses.serve import system
    from ..errors import UserError
    from ..load.hardware import load_device
    from ..load.models import load_model
    from ..render import serve as render

    _one_question(args)
    arch = load_model(args.model)
    device = load_device(args.device, args.memory_convention)
    w = common.workload(args, arch, 1, 1, 0)
    kv_arch = load_model(args.handoff_kv_model) if args.handoff_kv_model else None
    if args.prefix_candidate:
        if args.prefix_budget is None:
            raise UserError("--prefix-candidate chooses within a cache size: give --prefix-budget")
        if len(args.prefix_candidate) > 24 or len({c[0] for c in args.prefix_candidate}) != len(args.prefix_candidate):
            raise UserError("--prefix-candidate: 1 to 24 candidates with distinct ids")
        return common.emit(args, system.prefix_value_record(arch, w, device, args.prefix_candidate,
                                                            args.prefix_budget, args.page_tokens), render.markdown)
    if args.cache_route is not None:
        if None in (args.remote_bw, args.host_link_bw, args.hit_probability, args.route_slo_ns):
            raise UserError("--cache-route needs --remote-bw, --host-link-bw, --hit-probability and --route-slo-ns")
        if not args.cached_prefix:
            raise UserError("--cache-route routes a cached prefix: give --cached-prefix")
        return common.emit(args, system.route_record(arch, w, device, args), render.markdown)
    if args.handoff_bw is not None:
        if args.input_len is None:
            raise UserError("--handoff-bw hands off the cache of --input-len tokens; give --input-len")
        return common.emit(args, system.handoff_record(
            arch, w, device, args.input_len, args.handoff_batch, args.af_steps, args.handoff_bw,
            args.staging_bw, args.handoff_startup_ns, kv_arch), render.markdown)
    if args.reconfigure is not None:
        return common.emit(args, _reconfigure(args, arch, w, device), render.markdown)
    if args.residency:
        caps = dict(args.tier_capacity or ())
        if len(caps) != len(args.tier_capacity or ()):
            raise UserError("--tier-capacity: a tier is given twice")
        ids = [i[0] for i in args.residency]
        if len(set(ids)) != len(ids):
            raise UserError("--residency: an interval id is given twice")
        return common.emit(args, system.residency_record(arch, w, device, args.residency, caps, args.page_tokens),
                           render.markdown)
    if args.page_event:
        return common.emit(args, system.pages_record(arch, w, device, args.page_event, args.page_tokens,
                                                     args.reservation_tokens or 0, args.page_capacity), render.markdown)
    if args.kv_restore is not None:
        if None in (args.input_len, args.offload_bw, args.recompute_ns, args.host_capacity):
            raise UserError("--kv-restore needs --input-len, --offload-bw, --recompute-ns and --host-capacity")
        return common.emit(args, system.restore_record(
            arch, w, device, args.input_len, args.kv_restore, args.offload_bw, args.restore_bw or args.offload_bw,
            args.transfer_startup_ns or 0, args.recompute_ns, args.host_capacity), render.markdown)
    if args.offload_kv is not None:
        if args.input_len is None or args.output_len is None:
            raise UserError("--offload-kv needs --input-len and --output-len")
        return common.emit(args, system.kv_offload_record(
            arch, w, device, args.input_len, args.output_len, args.offload_batch, args.offload_kv,
            device_host_link(args, device, "--offload-kv"), common.reserve_bytes(args, device.memory_bytes), args.compute_efficiency,
            args.memory_efficiency), render.markdown)
    if args.offload_ffn_layers is not None:
        return common.emit(args, _offload(args, arch, w, device), render.markdown)
    if args.expert_tokens is not None:
        return common.emit(args, _experts(args, arch, w, device), render.markdown)
    if args.accepted_counts or args.spec_option:
        return common.emit(args, _declared_rounds(args, arch, w, device), render.markdown)
    if args.draft_round is not None:
        from ..load.dflash import load_drafter
        if args.acceptance is not None:
            raise UserError("--draft-round prices one round's work; --acceptance belongs to the speculative table")
        return common.emit(args, system.dflash_round_record(arch, w, device, load_drafter(args.draft_model),
                                                            *args.draft_round), render.markdown)
    if not args.request and (args.input_len is None or args.output_len is None):
        raise UserError("give --input-len and --output-len (or --request for a replay)")
    if args.request:
        if args.input_len is not None or args.output_len is not None:
            raise UserError("--request gives each request its lengths; drop --input-len/--output-len")
        costs = (args.step_base_ns, args.per_token_ns, args.per_pair_ns)
        if None in costs:
            raise UserError("--request replays with declared costs: give --step-base-ns, --per-token-ns "
                            "and --per-pair-ns")
        rec = system.replay_record(arch, w, device, args.request, args.policy, args.max_seqs,
                                   args.max_batched_tokens, args.chunk_tokens, args.kv_capacity, *costs)
        return common.emit(args, rec, render.markdown)
    if args.cached_prefix >= args.input_len:
        raise UserError(f"--cached-prefix {args.cached_prefix} must be below --input-len {args.input_len}")
    rated = args.worker and (args.decode_batch or all(len(spec) == 4 for spec in args.worker))
    if args.output_len < 2 and not rated:
        raise UserError("serve needs --output-len of at least 2 (one decode step); pools of declared "
                        "or --decode-batch rated workers take 1 (no decode, no handoff)")
    opts = system.Options(cached=args.cached_prefix,
                          max_seqs=args.max_seqs, token_budget=args.max_batched_tokens, rate=args.rate,
                          cv2=args.service_cv2, ttft_limit=args.ttft_limit, tpot_limit=args.tpot_limit,
                          reserve_bytes=common.reserve_bytes(args, device.memory_bytes),
                          compute_efficiency=args.compute_efficiency,
                          memory_efficiency=args.memory_efficiency, slo_figure=args.slo_figure or "predicted",
                          hit=args.prefix_hit_rate)
    if args.prefix_hit_rate < 1 and (not args.cached_prefix or args.worker or args.prefill_device
                                     or args.ttft_limit is not None or args.tpot_limit is not None):
        raise UserError("--prefix-hit-rate weighs a --cached-prefix in the schedulers' comparison only "
                        "(not with --worker, --prefill-device or the SLO sizing)")
    if args.decode_batch is not None and not args.worker:
        raise UserError("--decode-batch rates --worker NAME:COUNT:DEVICE types; give --worker")
    if args.worker:
        rec = system.workers_record(arch, w, device, args.input_len, args.output_len, opts,
                                    [_worker(spec, args) for spec in args.worker], args.network_bw,
                                    args.decode_batch, kv_arch)
        return common.emit(args, rec, render.markdown)
    if (args.prefill_device is None) != (args.decode_device is None):
        raise UserError("give both --prefill-device and --decode-device")
    if args.prefill_device:
        if args.rate is None:
            raise UserError("--prefill-device/--decode-device size pools for --rate; give --rate")
        rec = system.pd_record(arch, w, load_device(args.prefill_device, args.memory_convention),
                               load_device(args.decode_device, args.memory_convention),
                               args.input_len, args.output_len, opts, args.prefill_tp, args.decode_tp)
        return common.emit(args, rec, render.markdown)
    sizing = args.ttft_limit is not None or args.tpot_limit is not None
    if sizing and args.tp != 1:
        raise UserError("the SLO sizing searches the layouts; drop --tp")
    if args.mtp and args.draft_model:
        raise UserError("--mtp drafts with the target's own module: drop --draft-model")
    if (args.draft_model is None and not args.mtp) != (args.acceptance is None):
        raise UserError("--draft-model (or --mtp) and --acceptance go together")
    if args.max_draft_tokens > 64:
        raise UserError(f"--max-draft-tokens {args.max_draft_tokens}: at most 64")
    rec = system.system_record(arch, w, device, args.input_len, args.output_len, opts, args.tp,
                               (args.max_devices or 1024) if sizing else None)
    if args.draft_model or args.mtp:
        if args.mtp:
            from ..analyses.serve.speculation import mtp_drafter
            draft = mtp_drafter(arch)
        else:
            from ..load.dflash import is_dflash, load_drafter
            draft = load_drafter(args.draft_model) if is_dflash(args.draft_model) else load_model(args.draft_model)
        rec["speculative"] = system.speculative_record(
            arch, draft, common.workload(args, arch, 1, 1, 0),
            None if system.is_drafter(draft) else common.workload(args, draft, 1, 1, 0),
            device, args.input_len, args.output_len,
            args.acceptance, args.max_draft_tokens, args.spec_batch, opts)
        rec["conventions"].append(system.SPEC_CONVENTION)
        if rec["speculative"]["drafter"] == "dflash":
            rec["conventions"].append(system.DFLASH_SPEC_CONVENTION)
    return common.emit(args, rec, render.markdown, render.csv if _tabular(rec) else None)


# The options that each ask serve a different question (the first given answers; the others
# would be ignored): two at once is an error, never a silent choice. Options of one group
# (two drafters, two round ledgers) have their own, more specific message.
QUESTIONS = ((("prefix_candidate", "--prefix-candidate"),), (("cache_route", "--cache-route"),),
             (("handoff_bw", "--handoff-bw"),), (("reconfigure", "--reconfigure"),), (("offload_kv", "--offload-kv"),),
             (("kv_restore", "--kv-restore"),), (("page_event", "--page-event"),),
             (("residency", "--residency"),),
             (("offload_ffn_layers", "--offload-ffn-layers"),), (("expert_tokens", "--expert-tokens"),),
             (("accepted_counts", "--accepted-counts"), ("spec_option", "--spec-option")),
             (("request", "--request"),), (("worker", "--worker"),), (("prefill_device", "--prefill-device"),),
             (("draft_model", "--draft-model"), ("mtp", "--mtp")))


# Options that only one question (or a part of it) reads, with no default: given without it
# they would be ignored, so they are refused instead.
COMPANIONS = (
    (("slo_figure", "max_devices"), ("ttft_limit", "tpot_limit")),
    (("remote_bw", "hit_probability", "route_slo_ns"), ("cache_route",)),
    (("staging_bw",), ("handoff_bw",)),
    (("fabric_bw", "sender_bw", "receiver_bw", "reconfigure_capacity", "reconfigure_extra", "transfer_s",
      "switch_runtime_s", "switch_overhead_s", "step_saving_s"), ("reconfigure",)),
    (("layer_ns",), ("offload_ffn_layers",)),
    (("reservation_tokens", "page_capacity"), ("page_event",)),
    (("tier_capacity",), ("residency",)),
    (("offload_bw", "restore_bw", "transfer_startup_ns", "recompute_ns", "host_capacity"), ("kv_restore",)),
    (("prefix_budget",), ("prefix_candidate",)),
    (("network_bw",), ("worker",)),
    (("handoff_kv_model",), ("handoff_bw", "worker")),
    (("draft_ns", "verify_ns", "commit_ns", "remaining_output"), ("accepted_counts",)),
    (("setup_ns",), ("spec_option",)),
    (("draft_round",), ("draft_model",)),
    (("baseline_token_ns",), ("accepted_counts", "spec_option")),
    (("replica", "resident_experts"), ("expert_tokens",)),
    (("payback_batches",), ("replica",)),
    (("expert_interface_bw", "copy_bw", "replica_budget"), ("payback_batches",)),
    (("cpu_compute", "host_memory_bw", "expert_memory_bw"), ("resident_experts",)),
    (("expert_compute",), ("payback_batches", "resident_experts")),
    (("host_link_bw",), ("offload_kv", "offload_ffn_layers", "cache_route", "resident_experts")),
)


def _flag(dest):
    return "--" + dest.replace("_", "-")


def _tabular(rec):
    """True for the records --format csv tables: the schedulers' comparison and the SLO sizing."""
    return not any(k in rec for k in ("speculative", "spec_round", "spec_budget", "workers", "pd"))


def _one_question(args):
    """Refuse two question-selecting options at once, an option without the question that
    reads it, and repeated ids within one."""
    from ..errors import UserError, quote

    for dests, owners in COMPANIONS:
        for dest in dests:
            if getattr(args, dest) is not None and all(getattr(args, o) in (None, [], ()) for o in owners):
                need = _flag(owners[0]) if len(owners) == 1 else "one of " + ", ".join(map(_flag, owners))
                raise UserError(f"{_flag(dest)} is read only with {need}; give it or drop {_flag(dest)}")

    given = [next(flag for dest, flag in group if getattr(args, dest) not in (None, False, []))
             for group in QUESTIONS if any(getattr(args, dest) not in (None, False, []) for dest, _ in group)]
    if len(given) > 1:
        raise UserError(f"{given[0]} and {given[1]} ask serve two different questions: give one")
    for dest, flag in (("worker", "--worker NAME"), ("spec_option", "--spec-option ID")):
        names = [spec[0] for spec in getattr(args, dest) or ()]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UserError(f"{flag}: {quote(twice[0])} is given twice; each needs its own name")
    if args.decode_batch is not None and args.worker and all(len(spec) == 4 for spec in args.worker):
        raise UserError("--decode-batch rates --worker NAME:COUNT:DEVICE types; these workers declare their rates")


def _worker(spec, args):
    """A pools.Worker from a --worker spec (declared, or rated on a device by the ledger)."""
    from ..analyses.serve.pools import Worker

    if len(spec) == 4:
        return Worker(*spec)
    return Worker(spec[0], spec[1], spec[2], None)   # device id: rated in system.workers_record


def _declared_rounds(args, arch, w, device):
    """The `--accepted-counts` round ledger or the `--spec-option` budget (declared costs)."""
    from ..analyses.serve import system
    from ..errors import UserError

    if args.accepted_counts and args.spec_option:
        raise UserError("--accepted-counts (a round ledger) and --spec-option (a budget) are two questions: "
                        "give one")
    if args.baseline_token_ns is None or args.baseline_token_ns < 1:
        raise UserError("give --baseline-token-ns (plain decoding's cost per token, at least 1 ns)")
    if args.accepted_counts:
        if args.input_len is None or args.draft_ns is None or args.verify_ns is None:
            raise UserError("--accepted-counts needs --input-len (the history), --draft-ns and --verify-ns")
        return system.round_record(arch, w, device, args.input_len, args.accepted_counts, args.draft_ns,
                                   args.verify_ns, args.commit_ns or 0, args.baseline_token_ns,
                                   args.remaining_output)
    if args.output_len is None or args.output_len > 4096:
        raise UserError("--spec-option solves a budget over --output-len tokens (1..4096)")
    return system.budget_record(arch, w, device, args.output_len, args.baseline_token_ns,
                                args.setup_ns or 0, args.spec_option)


def _experts(args, arch, w, device):
    """The `--expert-tokens` record: grouped experts, and with --payback-batches the payback."""
    from ..analyses.serve import system
    from ..errors import UserError

    pay = None
    if args.payback_batches is not None:
        if not args.replica:
            raise UserError("--payback-batches prices copying --replica experts; give --replica")
        if None in (args.expert_compute, args.expert_interface_bw, args.copy_bw):
            raise UserError("--payback-batches needs --expert-compute, --expert-interface-bw and --copy-bw")
        pay = (args.payback_batches, args.expert_compute, args.expert_interface_bw, args.copy_bw,
               args.copy_startup_ns, args.replica_budget)
    local = None
    if args.resident_experts is not None:
        rates = (args.cpu_compute, args.host_memory_bw, args.expert_compute, args.expert_memory_bw,
                 args.host_link_bw)
        if None in rates:
            raise UserError("--resident-experts needs --cpu-compute, --host-memory-bw, --expert-compute, "
                            "--expert-memory-bw and --host-link-bw")
        local = (args.resident_experts,) + rates + (args.copy_startup_ns,)
    return system.experts_record(arch, w, device, args.expert_tokens, args.expert_ranks, args.placement,
                                 args.tile, tuple(args.replica or ()), pay, local)


def _offload(args, arch, w, device):
    """The `--offload-ffn-layers` record."""
    from ..analyses.serve import system
    from ..errors import UserError

    if args.offload_passes > 16:
        raise UserError(f"--offload-passes {args.offload_passes}: at most 16")
    if args.layer_ns is None and args.input_len is None:
        raise UserError("give --layer-ns (declared) or --input-len (the history of the decode step priced)")
    return system.offload_record(arch, w, device, args.offload_ffn_layers, args.offload_slots,
                                 args.offload_passes, device_host_link(args, device, "--offload-ffn-layers"), args.layer_ns, args.input_len,
                                 args.compute_efficiency, args.memory_efficiency)


def _reconfigure(args, arch, w, device):
    """The `--reconfigure FROM TO` record."""
    from ..analyses.serve import system
    from ..analyses.serve.reconfigure import Layout

    from ..errors import UserError, quote

    source, target = (Layout(*spec) for spec in args.reconfigure)
    everyone = sorted(set(source.devices) | set(target.devices))
    if (args.switch_overhead_s is None) != (args.step_saving_s is None):
        raise UserError("--switch-overhead-s and --step-saving-s go together (the payback)")

    def per_device(specs):
        out = {}
        for size, names in specs or ():
            unknown = sorted(set(names or ()) - set(everyone))
            if unknown:
                raise UserError(f"device {quote(unknown[0])} is in neither layout (devices: {', '.join(everyone)})")
            out.update((d, size) for d in (names or everyone))
        return out

    return system.reconfigure_record(
        arch, w, device, source, target, batch=args.reconfigure_batch, history=args.reconfigure_history,
        aux_bytes=args.aux_state_bytes, replay=args.replay,
        rates={"fabric": args.fabric_bw, "sender": args.sender_bw, "receiver": args.receiver_bw},
        capacity=per_device(args.reconfigure_capacity), extra=per_device(args.reconfigure_extra),
        runtime_s=args.switch_runtime_s, transfer_s=args.transfer_s,
        overhead_s=args.switch_overhead_s, saving_s=args.step_saving_s)

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
    load.add_argument("--max-devices", type=common.positive_int, default=1024, metavar="N",
                      help="the largest device count the SLO sizing tries (default 1024)")
    load.add_argument("--cached-prefix", type=common.non_negative_int, default=0, metavar="C",
                      help="prompt tokens found in a prefix cache: each prompt prefills P - C tokens after them")
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
                    help="a draft model (same tokenizer): price draft lengths 1..--max-draft-tokens")
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
    common.add_dtypes(p)
    common.add_architecture_options(p)
    common.add_device(p)
    common.add_memory(p)
    common.add_output(p, ("md", "json"))


def run(args):
    from ..analyses.serve import system
    from ..errors import UserError
    from ..load.hardware import load_device
    from ..load.models import load_model
    from ..render import serve as render

    arch = load_model(args.model)
    device = load_device(args.device, args.memory_convention)
    w = common.workload(args, arch, 1, 1, 0)
    if args.accepted_counts or args.spec_option:
        return common.emit(args, _declared_rounds(args, arch, w, device), render.markdown)
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
                          memory_efficiency=args.memory_efficiency)
    if args.decode_batch is not None and not args.worker:
        raise UserError("--decode-batch rates --worker NAME:COUNT:DEVICE types; give --worker")
    if args.worker:
        rec = system.workers_record(arch, w, device, args.input_len, args.output_len, opts,
                                    [_worker(spec, args) for spec in args.worker], args.network_bw,
                                    args.decode_batch)
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
    if (args.draft_model is None) != (args.acceptance is None):
        raise UserError("--draft-model and --acceptance go together")
    if args.max_draft_tokens > 64:
        raise UserError(f"--max-draft-tokens {args.max_draft_tokens}: at most 64")
    rec = system.system_record(arch, w, device, args.input_len, args.output_len, opts, args.tp,
                               args.max_devices if sizing else None)
    if args.draft_model:
        draft = load_model(args.draft_model)
        rec["speculative"] = system.speculative_record(
            arch, draft, common.workload(args, arch, 1, 1, 0), common.workload(args, draft, 1, 1, 0),
            device, args.input_len, args.output_len,
            args.acceptance, args.max_draft_tokens, args.spec_batch, opts)
        rec["conventions"].append(system.SPEC_CONVENTION)
    return common.emit(args, rec, render.markdown)


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

"""Serving-cost `budget` kinds from declared prices and times (supernode, ...): arguments and run.

Each `_<kind>_arguments(q)` adds the kind's options, each `_<kind>(args)` returns its result record;
cli/budget.py lists the kinds and dispatches to them (a '-' in a kind's name is '_' here).
"""

import argparse

from . import common
from .budget_values import _share, exact_ns as _time, byte_count as _bytes_or_zero


def _candidate(text):
    """TP:PREFILL:DECODE: 8:20ms:6ms (declared stage times, whole ns)."""
    from .budget_values import exact_ns

    parts = text.split(":")
    try:
        if len(parts) != 3:
            raise argparse.ArgumentTypeError(text)
        return common.positive_int(parts[0]), exact_ns(parts[1]), exact_ns(parts[2])
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be TP:PREFILL:DECODE with times in units (8:20ms:6ms), got '{text}'")


def _credit(text):
    from .budget_values import _exact

    return _exact(text, "a non-negative exact number such as 1, 5 or 1/1000")


def _supernode_arguments(q):
    common.add_model(q)
    q.add_argument("--requests", type=common.positive_int, required=True, metavar="N",
                   help="requests of the cohort, all arriving at 0")
    q.add_argument("--prompt", type=common.positive_int, required=True, metavar="P", help="prompt tokens per request")
    q.add_argument("--outputs", type=common.positive_int, required=True, metavar="G",
                   help="output tokens per request (a prefill, then G - 1 decode steps)")
    q.add_argument("--deadline", type=_time, required=True, metavar="T",
                   help="a request is valid when it completes by T (e.g. 250ms)")
    q.add_argument("--candidate", type=common.as_given(_candidate), action="append", required=True,
                   metavar="TP:PREFILL:DECODE",
                   help="an organisation of the cards as TP-way replicas with its declared prefill and per-decode-step "
                        "times; repeatable (8:20ms:6ms)")
    q.add_argument("--cards", type=common.positive_int, default=8, help="cards reserved for the cohort (default 8)")
    q.add_argument("--card-memory", type=common.byte_size, required=True, metavar="BYTES",
                   help="memory per card (24GB)")
    q.add_argument("--reserve", type=_bytes_or_zero, required=True, metavar="BYTES", help="workspace per card (2GiB)")
    q.add_argument("--fault-at", type=_time, default=None, metavar="T",
                   help="one fault of replica 0 (the replica holding card 0) at T (e.g. 50ms; default none)")
    q.add_argument("--recovery", type=_time, default=0, metavar="T",
                   help="replica 0's downtime after the fault (default 0s)")
    q.add_argument("--recovery-fee", type=_credit, default=0, metavar="C",
                   help="a declared fee charged once when the fault was used (default 0)")
    q.add_argument("--price-per-card-second", type=_credit, required=True, metavar="C",
                   help="declared price of one card for one second (the book's 1/1000 credit per card-ms is 1)")
    q.add_argument("--min-valid", type=_share, default=1, metavar="M",
                   help="minimum valid fraction of the requests (default 1; the book 3/4)")
    q.set_defaults(weight_dtype=None, act_dtype="bf16", kv_dtype=None)


def _stage_flops(arch, w, prompt, outputs):
    """[(stage, matrix FLOPs)]: the prefill (batch 1, last-position head), then decode steps 1..G-1."""
    from .. import ledger

    stages = [("prefill", ledger.field_sums(arch, w.replace(batch=1, tokens=prompt, history=0, logits="last"),
                                            ("matrix_flops",))[0])]
    for k in range(1, outputs):
        stages.append((f"decode {k}", ledger.field_sums(
            arch, w.replace(batch=1, tokens=1, history=prompt + k - 1, logits="last"), ("matrix_flops",))[0]))
    return stages


def _card_bytes(arch, w, tp, context):
    """(weight bytes of one TP rank, KV bytes of one request at `context` on it)."""
    from .. import layout as placement
    from ..analyses import kv

    lay = placement.Layout(tp=tp)
    placement.validate(arch, lay)
    (stage,) = kv.plan(arch, w, lay)
    return stage.weight_bytes, kv.demand(stage, w, context, tp, None, 0).own


def _supernode(args):
    from ..analyses.supernode import supernode
    from ..errors import UserError
    from ..load.models import load_model

    if args.requests > 10**4 or args.outputs > 4096:
        raise UserError("--requests at most 10,000 and --outputs at most 4,096")
    arch = load_model(args.model)
    w = common.workload(args, arch, 1, 1, 0)
    candidates = []
    for text in args.candidate:
        tp, prefill, decode = _candidate(text)
        if args.cards % tp:
            raise UserError(f"--candidate {text}: TP {tp} does not divide the {args.cards} cards")
        weights, kv_bytes = _card_bytes(arch, w, tp, args.prompt + args.outputs - 1)
        candidates.append({"tp": tp, "stage_ns": [prefill] + [decode] * (args.outputs - 1), "weight_bytes": weights,
                           "kv_bytes": kv_bytes, "workspace_bytes": args.reserve, "memory_bytes": args.card_memory})
    out = supernode(cards=args.cards, requests=args.requests, deadline_ns=args.deadline,
                    stage_flops=_stage_flops(arch, w, args.prompt, args.outputs), candidates=candidates,
                    fault_ns=args.fault_at, recovery_ns=args.recovery, recovery_fee=args.recovery_fee,
                    price_per_card_second=args.price_per_card_second, min_valid_fraction=args.min_valid)
    return dict({"model": arch.id, "prompt_tokens": args.prompt, "output_tokens": args.outputs,
                 "kv_context_tokens": args.prompt + args.outputs - 1}, **out)


_RL_STAGES = ("rollout-prefill", "rollout-decode", "reference-scoring", "teacher-scoring", "policy-update")
_SCALE = {"K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}


def _flop_rate(text):
    """A positive exact rate: 200T, 2e14, 20e12 (K, M, G, T, P = 10^3 .. 10^15)."""
    from fractions import Fraction

    scale = _SCALE.get(text[-1:].upper(), 1)
    try:
        value = Fraction(text[:-1] if scale > 1 else text) * scale if len(text) <= 40 else None
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or not 0 < value <= 10**21:
        raise argparse.ArgumentTypeError(f"must be a positive rate such as 200T or 2e14, got '{text}'")
    return value


def _pool(text):
    if not text or not all(c.isalnum() or c in "_-" for c in text):
        raise argparse.ArgumentTypeError(f"a pool is a name of letters, digits, '_' or '-', got '{text}'")
    return text


def _stage_rate(text):
    """STAGE=POOL:RATE: rollout-decode=actor:20T."""
    stage, _, rest = text.partition("=")
    pool, _, rate = rest.partition(":")
    if stage not in _RL_STAGES or not rate:
        raise argparse.ArgumentTypeError(f"must be STAGE=POOL:RATE with STAGE one of {', '.join(_RL_STAGES)} "
                                         f"(rollout-decode=actor:20T), got '{text}'")
    return stage.replace("-", "_"), _pool(pool), _flop_rate(rate)


def _verifier(text):
    """POOL:SECONDS:WORKERS: verifier:50ms:8."""
    from .budget_values import exact_seconds

    parts = text.split(":")
    try:
        if len(parts) != 3:
            raise argparse.ArgumentTypeError(text)
        return _pool(parts[0]), exact_seconds(parts[1]), common.positive_int(parts[2])
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be POOL:SECONDS:WORKERS (verifier:50ms:8), got '{text}'")


def _sync(text):
    """POOL:BYTES_PER_S: weight_link:50GB/s."""
    from .budget_net import byte_rate

    pool, _, rate = text.partition(":")
    try:
        value = byte_rate(rate)
        if not value:
            raise argparse.ArgumentTypeError(text)
        return _pool(pool), value
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be POOL:BYTES_PER_S with a positive rate (weight_link:50GB/s), "
                                         f"got '{text}'")


def _speedup(text):
    """POOL=FACTOR: actor=2."""
    pool, _, factor = text.partition("=")
    try:
        return _pool(pool), _flop_rate(factor)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be POOL=FACTOR with a positive factor (actor=2), got '{text}'")


def _rl_supply_arguments(q):
    common.add_model(q)
    for flag, default, text in (("--prompt-tokens", None, "prompt tokens P of every candidate"),
                                ("--output-tokens", None, "output tokens G of every candidate"),
                                ("--prompts", None, "prompts Q of the batch"),
                                ("--samples-per-prompt", None, "samples S per prompt (C = Q x S candidates)"),
                                ("--accepted", None, "accepted samples A of the batch (a declared count, A <= C)"),
                                ("--reference-passes", 1, "reference scoring passes over every candidate (default 1)"),
                                ("--update-epochs", 1, "policy update epochs over the accepted samples (default 1)"),
                                ("--rollout-replicas", 1, "rollout replicas the new weights are sent to (default 1)")):
        q.add_argument(flag, type=common.positive_int, required=default is None, default=default, help=text)
    q.add_argument("--teacher-passes", type=common.non_negative_int, default=0,
                   help="teacher scoring passes over every candidate (default 0)")
    q.add_argument("--rate", type=common.as_given(_stage_rate), action="append", required=True,
                   metavar="STAGE=POOL:RATE",
                   help=f"a matrix stage's pool and effective FLOP/s holding the whole pool; once per stage "
                        f"({', '.join(_RL_STAGES)})")
    q.add_argument("--verifier", type=common.as_given(_verifier), required=True, metavar="POOL:SECONDS:WORKERS",
                   help="the verifier pool, its seconds per candidate and workers (verifier:50ms:8)")
    q.add_argument("--sync", type=common.as_given(_sync), required=True, metavar="POOL:BYTES_PER_S",
                   help="the weight-sync link's pool and bytes/s (weight_link:50GB/s)")
    q.add_argument("--speedup", type=common.as_given(_speedup), action="append", default=[], metavar="POOL=FACTOR",
                   help="a declared speedup of a whole pool (every stage on it); repeatable (actor=2)")
    q.set_defaults(weight_dtype=None, act_dtype="bf16", kv_dtype=None)
    common.add_architecture_options(q)


def rl_stage_flops(arch, w, *, candidates, accepted, prompt, output, reference_passes, teacher_passes, epochs):
    """{stage: matrix FLOPs} of one RL batch (analyses/rl_supply.py's formulas), from the ledger."""
    from .. import ledger
    from ..analyses import decode_sum, train_flops

    def forward(batch, tokens, history, logits):
        return ledger.field_sums(arch, w.replace(batch=batch, tokens=tokens, history=history, logits=logits),
                                 ("matrix_flops",))[0]

    scored = prompt + output - 1
    decode = 0
    if output > 1:
        steps = decode_sum.steps_totals(arch, w.replace(batch=candidates, tokens=1), prompt, prompt + output - 2)
        decode = steps[decode_sum.FIELDS.index("matrix_flops")]
    update = train_flops.step(arch, w.replace(batch=accepted, tokens=scored, history=0, logits="all"))
    score = forward(candidates, scored, 0, "all")
    return {"rollout_prefill": forward(candidates, prompt, 0, "last"), "rollout_decode": decode,
            "reference_scoring": reference_passes * score, "teacher_scoring": teacher_passes * score,
            "policy_update": epochs * (update.forward_matrix_flops + update.backward_matrix_flops)}


def _rl_supply(args):
    from ..analyses.rl_supply import rl_supply
    from ..errors import UserError
    from ..load.models import load_model
    from ..workload import from_formats

    candidates = args.prompts * args.samples_per_prompt
    if args.accepted > candidates:
        raise UserError(f"--accepted {args.accepted} exceeds the {candidates} candidates (prompts x samples)")
    if candidates > 10**5 or args.prompt_tokens + args.output_tokens > 10**6:
        raise UserError("at most 100,000 candidates and 10^6 tokens a candidate")
    rates = {}
    for text in args.rate:
        stage, pool, rate = _stage_rate(text)
        if stage in rates:
            raise UserError(f"--rate names {stage.replace('_', '-')} twice")
        rates[stage] = (pool, rate)
    missing = [s for s in _RL_STAGES if s.replace("-", "_") not in rates]
    if missing:
        raise UserError(f"--rate is missing for {', '.join(missing)}")
    arch = load_model(args.model)
    w = common.workload(args, arch, 1, 1, 0)
    flops = rl_stage_flops(arch, w, candidates=candidates, accepted=args.accepted, prompt=args.prompt_tokens,
                           output=args.output_tokens, reference_passes=args.reference_passes,
                           teacher_passes=args.teacher_passes, epochs=args.update_epochs)
    bf16 = from_formats(arch, weight_dtype="bf16", act_dtype="bf16")
    try:
        out = rl_supply(stage_flops=flops, rates=rates, verifier=_verifier(args.verifier),
                        sync_bytes=args.rollout_replicas * arch.weight_bytes(bf16), sync=_sync(args.sync),
                        candidates=candidates, accepted=args.accepted, speedups=dict(map(_speedup, args.speedup)))
    except ValueError as e:
        raise UserError(str(e))
    return dict({"model": arch.id}, **out)


def _price_exact(text):
    """A positive exact price: 2, 0.042, 1/25."""
    value = _credit(text)
    if not value:
        raise argparse.ArgumentTypeError(f"must be a positive price such as 2 or 0.042, got '{text}'")
    return value


def _decision_arguments(q):
    common.add_model(q)
    q.add_argument("--input-tokens", type=common.positive_int, required=True, metavar="P",
                   help="input tokens of the request (state and questions)")
    q.add_argument("--questions", type=common.positive_int, required=True, metavar="Q",
                   help="questions, each answered by the output distribution at its last position")
    q.add_argument("--outputs", type=common.positive_int_list, required=True, metavar="G,...",
                   help="output lengths of the LLM path to price (each at least 2: one decode step)")
    q.add_argument("--decode-batch", type=common.positive_int, required=True, metavar="B",
                   help="requests sharing each decode step of the LLM path (its GPU-seconds)")
    q.add_argument("--device", default="h100-sxm", metavar="ID|DEVICE.json", help="the device (default h100-sxm)")
    q.add_argument("--matrix-peak", type=common.format_rate, action="append", default=None, metavar="FMT=FLOP/S",
                   help="a declared dense matrix peak instead of the device file's (bf16=989.4T)")
    q.add_argument("--memory-bandwidth", type=common.bandwidth, default=None, metavar="BW",
                   help="a declared memory bandwidth instead of the device file's")
    q.add_argument("--compute-efficiency", type=_share, required=True, metavar="E",
                   help="declared fraction of the bf16 dense peak reached (the book: 2/5 on H100)")
    q.add_argument("--memory-efficiency", type=_share, required=True, metavar="E",
                   help="declared fraction of the memory bandwidth reached (the book: 1/2)")
    q.add_argument("--price-per-gpu-hour", type=_price_exact, required=True, metavar="USD",
                   help="declared rental price of the device per hour")
    q.add_argument("--list-price", type=_price_exact, default=None, metavar="USD",
                   help="a declared list price per million input tokens to compare with the decision path's floor")
    q.add_argument("--compare-model", default=None, metavar="ID|CONFIG.json",
                   help="a second model whose decision prefill is priced beside (the book: deepseek-v4.1-flash)")
    q.add_argument("--compare-schedule", choices=("full", "ced"), default="full",
                   help="the compared model's layer schedule (forward --schedule; the book: ced)")
    q.add_argument("--escalation-price", type=_price_exact, default=None, metavar="USD",
                   help="declared USD per request of the LLM a decision escalates to (needs --list-price)")
    q.set_defaults(weight_dtype=None, act_dtype="bf16", kv_dtype=None)


def _decision(args):
    from .. import ledger
    from ..analyses.decision_request import decision_request
    from ..dtypes import dtype
    from ..errors import UserError
    from ..load.hardware import load_device
    from ..load.models import load_model

    if min(args.outputs) < 2 or len(args.outputs) > 8:
        raise UserError("--outputs: 1 to 8 lengths, each at least 2 (one decode step)")
    if args.input_tokens + max(args.outputs) > 10**7 or args.decode_batch > 10**5:
        raise UserError("--input-tokens + output at most 10^7, --decode-batch at most 10^5")
    if args.escalation_price is not None and args.list_price is None:
        raise UserError("--escalation-price: the escalation share needs --list-price")
    if args.compare_model is None and args.compare_schedule != "full":
        raise UserError("--compare-schedule: name the model with --compare-model")
    arch = load_model(args.model)
    device = common.declared_figures(load_device(args.device), args)
    peak = device.peak(dtype("bf16"))
    if peak is None or not device.memory_bandwidth_bytes_per_s:
        raise UserError(f"device {device.id} has no bf16 matrix peak or memory bandwidth; declare them")
    w = common.workload(args, arch, 1, 1, 0)
    fields = ("matrix_flops", "weight_read", "kv_read")

    def sums(batch, tokens, history, logits):
        return ledger.field_sums(arch, w.replace(batch=batch, tokens=tokens, history=history, logits=logits), fields)

    prefill = sums(1, args.input_tokens, 0, "last")
    head = sums(1, 1, 0, "last")[0] - sums(1, 1, 0, "none")[0]
    steps = []
    for total in args.outputs:
        history = args.input_tokens + (total - 1) // 2
        one, many = sums(1, 1, history, "last"), sums(args.decode_batch, 1, history, "last")
        steps.append((total, history, (one[0], one[1] + one[2]), (many[0], many[1] + many[2])))
    compare = None
    if args.compare_model is not None:
        other = load_model(args.compare_model)
        if args.compare_schedule == "ced" and not other.ced_split:
            raise UserError(f"--compare-schedule ced: {other.id} has no CED encoder/decoder split (DeepSeek-V4.1)")
        ow = common.workload(args, other, 1, args.input_tokens, 0).replace(schedule=args.compare_schedule)
        compare = {"model": other.id, "schedule": args.compare_schedule,
                   "matrix_flops": ledger.field_sums(other, ow, ("matrix_flops",))[0]}
    out = decision_request(input_tokens=args.input_tokens, questions=args.questions, prefill_flops=prefill[0],
                           head_flops=head, weight_bytes=prefill[1], llm_steps=steps, decode_batch=args.decode_batch,
                           peak=peak, bandwidth=device.memory_bandwidth_bytes_per_s,
                           compute_efficiency=args.compute_efficiency, memory_efficiency=args.memory_efficiency,
                           price_per_gpu_hour=args.price_per_gpu_hour, list_price_per_million=args.list_price,
                           compare=compare, escalation_price=args.escalation_price)
    return dict({"model": arch.id, "device": device.id, "bf16_peak_flops_per_s": peak,
                 "memory_bandwidth_bytes_per_s": device.memory_bandwidth_bytes_per_s}, **out)

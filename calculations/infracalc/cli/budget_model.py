"""The `budget` kinds of chapters 1, 2, 4 and 8 that read a model's ledger or a chip's figures (window, energy, request, batch-reuse, ...): arguments and run.

Each `_<kind>_arguments(q)` adds the kind's options, each `_<kind>(args)` returns its result record;
cli/budget.py lists the kinds and finds them here (a '-' in a kind's name is '_' here).
"""

import argparse
from fractions import Fraction

from . import common
from .budget_values import _byte_rate, _device, _device_figures, _exact, _price, byte_count, exact_seconds


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


def _sequence_toy_arguments(q):
    q.add_argument("--tokens", type=common.positive_int, default=4, help="known tokens T (default 4; one more is supplied)")
    q.add_argument("--layers", type=common.positive_int, default=3, help="layers L (default 3)")
    q.add_argument("--width", type=common.positive_int, default=4, help="width D (default 4)")
    q.add_argument("--ff-width", type=common.positive_int, default=8, help="Transformer feed-forward width F (default 8)")
    q.add_argument("--vocabulary", type=common.positive_int, default=5, help="input table rows (default 5)")


def _sequence_toy(args):
    from ..analyses.sequence_toy import sequence_toy
    from ..errors import UserError

    # a teaching toy: its output lists every matrix product of every mode and its binary64 values
    # recompute every prefix, so the work grows as T^2 L (D^2 + D F); these sizes answer in under 0.5 s
    for option, value, most in (("--tokens", args.tokens, 16), ("--layers", args.layers, 8),
                                ("--width", args.width, 16), ("--ff-width", args.ff_width, 64),
                                ("--vocabulary", args.vocabulary, 4096)):
        if value > most:
            raise UserError(f"{option} at most {most} (a teaching toy; the book's is 4 tokens, 3 layers, "
                            f"width 4, feed-forward 8, 5 rows), got {value}")
    return sequence_toy(tokens=args.tokens, layers=args.layers, d=args.width, f=args.ff_width,
                        vocabulary=args.vocabulary)


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

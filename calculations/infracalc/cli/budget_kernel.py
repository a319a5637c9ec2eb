"""The kernel-view `budget` kinds of chapter 5 (bank, rmsnorm, quant-gemm): arguments and run.

Each `_<kind>_arguments(q)` adds the kind's options, each `_<kind>(args)` returns its result
record; cli/budget.py lists the kinds and dispatches to them (a '-' in a kind's name is '_' here).
"""

from . import common
from .budget_values import exact_ns

MAX_STEPS = 1024   # tiles, blocks, lanes or banks one schedule lists (its rows are printed)


def _at_most(count, what):
    from ..errors import UserError

    if count > MAX_STEPS:
        raise UserError(f"{count:,} {what} exceed the {MAX_STEPS:,} this schedule lists; use fewer or larger ones")


def _bank_arguments(q):
    from ..analyses.bank_mapping import ACCESSES

    q.add_argument("--access", choices=ACCESSES, required=True,
                   help="row 0, column 0, or one word for every lane")
    q.add_argument("--stride-words", type=common.positive_int, default=32, metavar="S",
                   help="row stride of the stored tile in words, padding included (default 32)")
    q.add_argument("--tile-rows", type=common.positive_int, default=32, metavar="R",
                   help="rows of the tile (default 32)")
    q.add_argument("--tile-columns", type=common.positive_int, default=32, metavar="C",
                   help="words per row of the tile (default 32)")
    q.add_argument("--lanes", type=common.positive_int, default=32, help="lanes issuing one word each (default 32)")
    q.add_argument("--banks", type=common.positive_int, default=32, help="banks, word a in bank a mod B (default 32)")
    q.add_argument("--ports", type=common.positive_int, default=1, help="requests a bank serves per round (default 1)")
    q.add_argument("--broadcast", action="store_true", help="merge lanes reading the same word")
    q.add_argument("--word-bytes", type=common.positive_int, default=4, help="bytes per word (default 4)")


def _bank(args):
    from ..analyses.bank_mapping import bank_budget
    from ..errors import UserError

    _at_most(max(args.lanes, args.banks), "lanes or banks")
    if args.stride_words < args.tile_columns:
        raise UserError(f"--stride-words {args.stride_words} is below the {args.tile_columns} words of a row")
    if args.lanes > {"row": args.tile_columns, "column": args.tile_rows}.get(args.access, args.lanes):
        raise UserError(f"--lanes {args.lanes} exceeds the tile's {args.access} "
                        f"({args.tile_rows} x {args.tile_columns})")
    return bank_budget(access=args.access, stride_words=args.stride_words, rows=args.tile_rows,
                       columns=args.tile_columns, lanes=args.lanes, banks=args.banks, ports=args.ports,
                       broadcast=args.broadcast, word_bytes=args.word_bytes)


def _rmsnorm_arguments(q):
    common.add_model(q)
    q.add_argument("--rows", type=common.positive_int, required=True, metavar="M", help="rows (tokens) normalized")
    q.add_argument("--splits", type=common.positive_int, required=True, metavar="S",
                   help="parts per row of the split path")
    q.add_argument("--width-multiplier", type=common.positive_int, default=1, metavar="W",
                   help="widen the row to W x hidden_size (a teaching variant; default 1)")
    q.add_argument("--dtype", default="bf16", metavar="FMT", help="format of input, gamma and output (default bf16)")


def _rmsnorm(args):
    from ..analyses.split_reduction import split_rmsnorm
    from ..analyses.tiles import element_bytes
    from ..dtypes import dtype
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    width = arch.hidden_size * args.width_multiplier
    if args.splits > width:
        raise UserError(f"--splits {args.splits} exceeds the row width {width} (no empty part)")
    out = split_rmsnorm(rows=args.rows, width=width, splits=args.splits,
                        elem_bytes=element_bytes(dtype(args.dtype), "the row"))
    return dict({"model": arch.id, "hidden_size": arch.hidden_size}, **out)


def _quant_gemm_arguments(q):
    from .gemm import tile_shape

    common.add_model(q)
    q.add_argument("--tokens", type=common.tokens, required=True, metavar="M",
                   help="tokens the expert receives (rows M of its gate or up projection)")
    q.add_argument("--tile", type=tile_shape, required=True, metavar="MxKxN",
                   help="output tile step (e.g. 128x128x128)")


def _quant_gemm(args):
    from ..analyses.quant_gemm import quant_gemm
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    moe = next((b for layer in arch.layers for b in layer.blocks if hasattr(b, "expert_inter")), None)
    if moe is None:
        raise UserError(f"model '{arch.id}' has no MoE layer (the projection is one routed expert's gate or up)")
    out = quant_gemm(m=args.tokens, k=moe.hidden, n=moe.expert_inter, tile=args.tile)
    return dict({"model": arch.id}, **out)


def _ns_pair(text):
    import argparse

    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"must be two durations A,B (200us,210us), got '{text}'")
    return tuple(exact_ns(p) for p in parts)


def _task_text(text):
    """NAME:DURATION[:RESOURCE[:DEP+DEP...]]; an empty or '-' resource is none."""
    import argparse

    parts = text.split(":")
    if not 2 <= len(parts) <= 4 or not parts[0]:
        raise argparse.ArgumentTypeError(f"must be NAME:DURATION[:RESOURCE[:DEP+DEP]] (hotspot:60us:compute:prepare), "
                                         f"got '{text}'")
    resource = _resource(parts[2]) if len(parts) > 2 else None
    deps = tuple(d for d in parts[3].split("+") if d) if len(parts) > 3 else ()
    return {"task": parts[0], "duration_ns": exact_ns(parts[1]), "resource": resource, "deps": deps}


def _assignment(parse):
    def read(text):
        import argparse

        name, eq, value = text.partition("=")
        if not eq or not name:
            raise argparse.ArgumentTypeError(f"must be NAME=VALUE, got '{text}'")
        return name, parse(value)
    return read


_as_given = common.as_given


def _dag_arguments(q):
    q.add_argument("--task", type=_as_given(_task_text), action="append", required=True,
                   metavar="NAME:T[:RES[:DEP+DEP]]",
                   help="a task (repeatable, in order): its declared duration, resource and dependencies")
    q.add_argument("--change", type=_as_given(_assignment(exact_ns)), action="append", default=[], metavar="NAME=T",
                   help="a changed duration for the second schedule (repeatable)")
    q.add_argument("--move", type=_as_given(_assignment(_resource)), action="append", default=[],
                   metavar="NAME=RESOURCE", help="a changed resource for the second schedule ('-' = none; repeatable)")


def _resource(text):
    return None if text in ("", "-") else text


def _dag(args):
    from ..analyses.task_graph import request_dag
    from ..errors import UserError

    tasks = [_task_text(t) for t in args.task]
    change = [_assignment(exact_ns)(t) for t in args.change]
    move = [_assignment(_resource)(t) for t in args.move]
    names = [t["task"] for t in tasks]
    if len(set(names)) != len(names):
        raise UserError("--task names a task twice")
    for t in tasks:
        bad = [d for d in t["deps"] if d not in names[:names.index(t["task"])]]
        if bad:
            raise UserError(f"task '{t['task']}' depends on '{bad[0]}', which is not a task given before it")
    for flag, pairs in (("--change", change), ("--move", move)):
        unknown = next((n for n, _ in pairs if n not in names), None)
        if unknown:
            raise UserError(f"{flag} names '{unknown}', not a task (tasks: {', '.join(names)})")
    return request_dag(tasks, durations=dict(change), resources=dict(move))


def _microbatch_arguments(q):
    common.add_model(q)
    q.add_argument("--tokens", type=common.tokens, required=True, help="rows of the layer's FFN batch")
    q.add_argument("--first-tokens", type=common.positive_int, default=None,
                   help="rows of the first micro-batch (default half, rounded down)")
    q.add_argument("--full", type=_as_given(_ns_pair), required=True, metavar="N,C",
                   help="declared memory/communication and compute times of the full batch (400us,800us)")
    q.add_argument("--split-n", type=_as_given(_ns_pair), required=True, metavar="N0,N1",
                   help="the micro-batches' N times")
    q.add_argument("--split-c", type=_as_given(_ns_pair), required=True, metavar="C0,C1",
                   help="the micro-batches' C times")
    q.add_argument("--joint-window", type=_as_given(exact_ns), required=True, metavar="J",
                   help="declared time of C0 and N1 run together (their contention)")


def _microbatch(args):
    from ..analyses.fusion import first_gated_mlp
    from ..analyses.task_graph import microbatch_overlap
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    mlp = first_gated_mlp(arch)
    first = args.tokens // 2 if args.first_tokens is None else args.first_tokens
    if not 0 < first < args.tokens:
        raise UserError(f"--first-tokens {first} leaves a micro-batch empty (tokens {args.tokens})")
    params = 3 * arch.hidden_size * mlp.inter
    out = microbatch_overlap(full=_ns_pair(args.full), split_n=_ns_pair(args.split_n),
                             split_c=_ns_pair(args.split_c), joint_window=exact_ns(args.joint_window))
    return dict({"model": arch.id, "ffn_parameters": params, "weight_bytes": 2 * params,
                 "matrix_flops": 2 * args.tokens * params,
                 "micro_batch_matrix_flops": [2 * first * params, 2 * (args.tokens - first) * params],
                 "split_weight_reads_bytes": 4 * params}, **out)


def byte_rate(text):
    """A declared positive whole bytes/s (budget_net.byte_rate: 2TB/s, 1792GB/s, 24GiB/s)."""
    import argparse

    from .budget_net import byte_rate as parse

    value = parse(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive rate, got '{text}'")
    return value


def flop_rate(text):
    """A declared FLOP/s: 100T, 2.5e14, 250000000000000."""
    import argparse
    from fractions import Fraction

    raw = text.strip()
    scale = {"K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}.get(raw[-1:], 1)
    number = raw[:-1] if scale > 1 else raw
    try:
        value = Fraction(number) * scale if len(raw) < 40 else None
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or value < 1 or value.denominator != 1:
        raise argparse.ArgumentTypeError(f"must be a whole FLOP/s such as 100T or 2.5e14, got '{text}'")
    return int(value)


def _graph_arguments(q):
    common.add_model(q)
    add = q.add_argument
    add("--input-tokens", type=common.positive_int, default=256, help="rows of the external input (default 256)")
    add("--real-tokens", type=common.positive_int, default=1536, help="real rows of the padded batch (default 1536)")
    add("--padded-tokens", type=common.positive_int, default=2048, help="rows the graph is captured for (default 2048)")
    add("--copy-bw", type=_as_given(byte_rate), default="2TB/s", metavar="BW",
        help="declared copy traffic rate, read + write (default 2TB/s)")
    for flag, ns, what in (("--device-time", "20us", "device time of the layer"),
                           ("--submit", "20us", "exposed submission wait of the eager path"),
                           ("--replay", "3us", "graph replay cost"), ("--metadata", "2us", "graph metadata update"),
                           ("--indirect", "6us", "indirect addressing cost"),
                           ("--config-time", "20us", "host configuration time of one pipeline segment")):
        add(flag, type=_as_given(exact_ns), default=ns, metavar="T", help=f"{what} (declared; default {ns})")
    add("--setup", type=_as_given(exact_ns), default="1s", metavar="T",
        help="one-off capture of a graph path (default 1s)")
    add("--calls", type=common.positive_int, default=100000, help="calls over the instance's life (default 100000)")
    add("--segments", type=common.positive_int, default=100, help="configuration pipeline segments (default 100)")
    add("--device-speedup", type=common.positive_int, default=4, help="device speedup of the variants (default 4)")
    add("--config-speedup", type=common.positive_int, default=4, help="host speedup of the last variant (default 4)")


def _graph(args):
    from ..analyses.fusion import first_gated_mlp
    from ..analyses.runtime_choices import graph_boundary
    from ..errors import UserError
    from ..load.models import load_model

    if args.padded_tokens < args.real_tokens:
        raise UserError(f"--padded-tokens {args.padded_tokens} is below --real-tokens {args.real_tokens}")
    arch = load_model(args.model)
    mlp = first_gated_mlp(arch)
    out = graph_boundary(hidden=arch.hidden_size, inter=mlp.inter, input_tokens=args.input_tokens,
                         real_tokens=args.real_tokens, padded_tokens=args.padded_tokens,
                         copy_bytes_per_s=byte_rate(args.copy_bw),
                         device_ns=exact_ns(args.device_time), submit_ns=exact_ns(args.submit),
                         replay_ns=exact_ns(args.replay), metadata_ns=exact_ns(args.metadata),
                         indirect_ns=exact_ns(args.indirect), setup_ns=exact_ns(args.setup), calls=args.calls,
                         config_ns=exact_ns(args.config_time), segments=args.segments,
                         device_speedup=args.device_speedup, config_speedup=args.config_speedup)
    return dict({"model": arch.id}, **out)


def _deployment_shape(text):
    """NAME:CALLS:BASELINE:CAND=T,CAND=T."""
    import argparse

    parts = text.split(":")
    if len(parts) != 4 or not parts[0] or common.digits(parts[1]) is None:
        raise argparse.ArgumentTypeError(f"must be NAME:CALLS:BASELINE:CAND=T,CAND=T (x:1:100us:A=10us,B=50us), "
                                         f"got '{text}'")
    cands = dict(_assignment(exact_ns)(c) for c in parts[3].split(",") if c)
    if "baseline" in cands or any(v <= 0 for v in cands.values()) or exact_ns(parts[2]) <= 0:
        raise argparse.ArgumentTypeError(f"times must be positive and no candidate may be named baseline: '{text}'")
    return parts[0], int(parts[1]), exact_ns(parts[2]), cands


def _deployment_arguments(q):
    q.add_argument("--shape", type=_as_given(_deployment_shape), action="append", required=True,
                   metavar="NAME:CALLS:BASELINE:CAND=T,...",
                   help="a shape, its calls per cohort, baseline and candidate times")
    q.add_argument("--invalid", action="append", default=[], metavar="SHAPE:CAND",
                   help="a candidate that failed validation on a shape (falls back to the baseline; repeatable)")
    q.add_argument("--dispatch", type=_as_given(exact_ns), default="0ns", metavar="T",
                   help="dispatch cost per call of per-shape selection (default 0ns)")
    q.add_argument("--extra-setup", type=_as_given(exact_ns), default="600s", metavar="T",
                   help="extra preparation of per-shape dispatch over the best uniform candidate (default 600s)")
    q.add_argument("--repetitions", type=common.positive_int, default=1, help="cohorts over the life (default 1)")


def _deployment(args):
    from ..analyses.runtime_choices import deployment
    from ..errors import UserError

    shapes = [_deployment_shape(s) for s in args.shape]
    names = [s[0] for s in shapes]
    if len(set(names)) != len(names):
        raise UserError("--shape names a shape twice")
    if sum(s[1] for s in shapes) == 0:
        raise UserError("the shapes' calls sum to 0")
    failed = {n: set() for n in names}
    for item in args.invalid:
        shape, _, cand = item.partition(":")
        if shape not in failed or cand not in shapes[names.index(shape)][3]:
            raise UserError(f"--invalid {item}: not a SHAPE:CANDIDATE of the given shapes")
        failed[shape].add(cand)
    return deployment([s + (failed[s[0]],) for s in shapes], dispatch_ns=exact_ns(args.dispatch),
                      extra_setup_ns=exact_ns(args.extra_setup), repetitions=args.repetitions)


def _shape_count(text):
    import argparse

    tokens, _, count = text.partition(":")
    if common.digits(tokens) is None or common.digits(count) is None or not int(tokens) or not int(count):
        raise argparse.ArgumentTypeError(f"must be TOKENS:CALLS of positive integers (256:8), got '{text}'")
    return text


def _specialization_arguments(q):
    common.add_model(q)
    q.add_argument("--shape", type=_shape_count, action="append", required=True, metavar="TOKENS:CALLS",
                   help="a shape's rows and calls per cohort (repeatable)")
    q.add_argument("--buckets", type=common.positive_int_list, required=True, metavar="B,B", help="bucket sizes in rows")
    q.add_argument("--specialized", type=common.positive_int_list, required=True, metavar="T,T",
                   help="shapes compiled for their exact rows")
    q.add_argument("--cached", action="append", default=[], metavar="ARTIFACT",
                   help="an artifact already prepared: generic, bucket:B or specialized:T (repeatable)")
    q.add_argument("--repetitions", type=common.positive_int, required=True, help="cohorts over the instance's life")
    for kind, rate, ms in (("generic", "100T", "100ms"), ("bucket", "200T", "200ms"), ("specialized", "250T", "300ms")):
        q.add_argument(f"--{kind}-rate", type=flop_rate, default=rate, metavar="FLOP/S",
                       help=f"declared matrix rate of the {kind} code (default {rate})")
        q.add_argument(f"--{kind}-compile", type=_as_given(exact_ns), default=ms, metavar="T",
                       help=f"preparation of one {kind} artifact (default {ms})")


def _specialization(args):
    from ..analyses.fusion import first_gated_mlp
    from ..analyses.runtime_choices import specialization
    from ..errors import UserError
    from ..load.models import load_model

    shapes = [tuple(int(x) for x in s.split(":")) for s in args.shape]
    if len({t for t, _ in shapes}) != len(shapes):
        raise UserError("--shape gives the same rows twice")
    known = {"generic"} | {f"bucket:{b}" for b in args.buckets} | {f"specialized:{t}" for t in args.specialized}
    bad = next((c for c in args.cached if c not in known), None)
    if bad:
        raise UserError(f"--cached {bad} is not an artifact of the policies ({', '.join(sorted(known))})")
    arch = load_model(args.model)
    mlp = first_gated_mlp(arch)
    kinds = ("generic", "bucket", "specialized")
    return dict({"model": arch.id}, **specialization(
        hidden=arch.hidden_size, inter=mlp.inter, shapes=shapes, buckets=args.buckets, specialized=args.specialized,
        cached=set(args.cached), repetitions=args.repetitions,
        rates={k: getattr(args, f"{k}_rate") for k in kinds},
        compile_ns={k: exact_ns(getattr(args, f"{k}_compile")) for k in kinds}))


def _persistent_arguments(q):
    common.add_model(q)
    q.add_argument("--tokens", type=common.tokens, required=True, help="rows M of the up projection")
    q.add_argument("--tile-rows", type=common.positive_int, required=True, metavar="ROWS", help="rows per tile")
    q.add_argument("--matrix-rate", type=flop_rate, default="200T", metavar="FLOP/S",
                   help="declared matrix worker rate (default 200T, a teaching input)")
    q.add_argument("--activation-rate", type=flop_rate, default="20G", metavar="ELEMENTS/S",
                   help="declared activation worker rate in elements/s (default 20G)")
    for flag, ns, what in (("--launch", "5us", "host launch of a kernel"),
                           ("--dispatch", "500ns", "dispatch of a device task"),
                           ("--publish", "200ns", "completion event publication of a device task")):
        q.add_argument(flag, type=_as_given(exact_ns), default=ns, metavar="T", help=f"{what} (default {ns})")


def _persistent(args):
    from ..analyses.fusion import first_gated_mlp
    from ..analyses.persistent_tiles import persistent_tiles
    from ..load.models import load_model
    from ..splits import ceil_div

    _at_most(ceil_div(args.tokens, args.tile_rows), "tiles")
    arch = load_model(args.model)
    mlp = first_gated_mlp(arch)
    return dict({"model": arch.id}, **persistent_tiles(
        hidden=arch.hidden_size, inter=mlp.inter, tokens=args.tokens, tile_rows=args.tile_rows,
        matrix_rate=args.matrix_rate, activation_rate=args.activation_rate, launch_ns=exact_ns(args.launch),
        dispatch_ns=exact_ns(args.dispatch), publish_ns=exact_ns(args.publish)))


def _stream_buffer_arguments(q):
    common.add_model(q)
    add = q.add_argument
    add("--block-rows", type=common.positive_int, default=64,
        help="rows per block, of head_dim BF16 values (default 64)")
    add("--blocks", type=common.positive_int, default=5, help="blocks handed over (default 5)")
    add("--first-produce", type=common.non_negative_int, default=4, metavar="TICK",
        help="tick of the first publication (default 4)")
    add("--produce-interval", type=common.positive_int, default=1, metavar="TICKS",
        help="ticks between publications (default 1)")
    add("--first-consume", type=common.non_negative_int, default=5, metavar="TICK",
        help="earliest tick of the first take (default 5)")
    add("--consume-interval", type=common.positive_int, default=2, metavar="TICKS",
        help="ticks between takes (default 2)")
    add("--budget-bytes", type=common.byte_size, default=65536, metavar="BYTES",
        help="on-chip handoff budget (default 65536)")
    add("--reorder-slots", type=common.non_negative_int, default=2,
        help="layout conversion slots reserved apart (default 2)")


def _stream_buffer(args):
    from ..analyses.slot_pipelines import stream_buffer
    from ..load.models import load_model

    _at_most(args.blocks, "blocks")
    arch = load_model(args.model)
    head_dim = _head_dim(arch)
    return dict({"model": arch.id, "head_dim": head_dim}, **stream_buffer(
        block_bytes=2 * args.block_rows * head_dim, blocks=args.blocks, first_produce=args.first_produce,
        produce_interval=args.produce_interval, first_consume=args.first_consume,
        consume_interval=args.consume_interval, budget_bytes=args.budget_bytes, reorder_slots=args.reorder_slots))


def _host_transfer_arguments(q):
    common.add_model(q)
    add = q.add_argument
    add("--tokens", type=common.tokens, default=8192, help="rows of one block's activations (default 8192)")
    add("--blocks", type=common.positive_int, default=8, help="blocks moved (default 8)")
    add("--host-slots", type=common.positive_int, default=2, help="host staging slots (default 2)")
    add("--device-slots", type=common.positive_int, default=2, help="device slots (default 2)")
    add("--prepare", type=_as_given(exact_ns), default="1ms", metavar="T",
        help="host preparation per block (default 1ms)")
    add("--consume", type=_as_given(exact_ns), default="4ms", metavar="T",
        help="device consumption per block (default 4ms)")
    add("--h2d-bw", type=_as_given(byte_rate), default="24GiB/s", metavar="BW",
        help="declared host-to-device copy rate (default 24GiB/s)")


def _host_transfer(args):
    from ..analyses.slot_pipelines import host_transfer
    from ..load.models import load_model

    _at_most(args.blocks, "blocks")
    arch = load_model(args.model)
    return dict({"model": arch.id}, **host_transfer(
        block_bytes=2 * args.tokens * arch.hidden_size, blocks=args.blocks, host_slots=args.host_slots,
        device_slots=args.device_slots, prepare_ns=exact_ns(args.prepare), consume_ns=exact_ns(args.consume),
        bandwidth=byte_rate(args.h2d_bw)))


def _head_dim(arch):
    from ..analyses.models import _geometry
    from ..errors import UserError

    head_dim = _geometry(arch)[2]
    if not head_dim:
        raise UserError(f"model '{arch.id}' has no attention head_dim")
    return head_dim


def _attention_input_arguments(q):
    from .gemm import tile_shape

    common.add_model(q)
    add = q.add_argument
    add("--tile", type=tile_shape, default=(128, 32, 128), metavar="MxKxN",
        help="queries x head-dimension chunk x keys of the QK^T tile (default 128x32x128)")
    add("--latency", type=common.non_negative_int, default=128, metavar="TICKS",
        help="copy completion latency (default 128)")
    add("--input-rate", type=common.positive_int, default=256, metavar="B/TICK",
        help="input bytes per tick (default 256)")
    add("--matrix-rate", type=common.positive_int, default=8192, metavar="FLOP/TICK",
        help="matrix FLOPs per tick (default 8192)")
    add("--register-rate", type=common.positive_int, default=256, metavar="B/TICK",
        help="register staging bytes per tick, in or out (default 256)")
    add("--capacity-bytes", type=common.byte_size, default=65536, metavar="BYTES",
        help="input slot capacity (default 65536)")
    add("--slots", type=common.positive_int_list, default=(1, 2, 4, 8), metavar="S,S",
        help="slot counts listed (default 1,2,4,8)")


def _attention_input(args):
    from ..analyses.attention_handoff import attention_input
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    d = _head_dim(arch)
    if d % args.tile[1]:
        raise UserError(f"the tile's K {args.tile[1]} must divide the head dimension {d} (whole chunks)")
    _at_most(max(args.slots), "slots")
    return dict({"model": arch.id, "head_dim": d}, **attention_input(
        head_dim=d, tile=args.tile, latency=args.latency, input_rate=args.input_rate, matrix_rate=args.matrix_rate,
        register_rate=args.register_rate, capacity=args.capacity_bytes, slot_counts=tuple(args.slots)))


def _matrix_vector_arguments(q):
    common.add_model(q)
    add = q.add_argument
    add("--length", type=common.positive_int, default=128, help="positions of the causal score matrix (default 128)")
    add("--group-rows", type=common.positive_int, default=32, metavar="R", help="query rows per group (default 32)")
    add("--slots", type=common.positive_int, default=2, help="handoff slots (default 2)")
    add("--path", choices=("staged", "direct"), default="staged", help="staged (write and read) or direct handoff")
    for flag, value, what in (("--matrix-rate", 8192, "matrix FLOPs"), ("--scalar-rate", 128, "scalar operations"),
                              ("--exp-rate", 16, "exponentials"), ("--div-rate", 16, "divisions"),
                              ("--compare-rate", 128, "comparisons"), ("--link-rate", 128, "handoff bytes")):
        add(flag, type=common.positive_int, default=value, metavar="PER_TICK",
            help=f"{what} per tick (default {value})")
    add("--capacity-bytes", type=common.byte_size, default=98304, metavar="BYTES",
        help="handoff capacity (default 98304)")


def _matrix_vector(args):
    from ..analyses.attention_handoff import matrix_vector
    from ..errors import UserError
    from ..load.models import load_model

    if args.length % args.group_rows:
        raise UserError(f"--group-rows {args.group_rows} must divide --length {args.length} (whole row groups)")
    _at_most(args.length // args.group_rows, "row groups")
    arch = load_model(args.model)
    rates = {k: getattr(args, f"{k}_rate") for k in ("matrix", "scalar", "exp", "div", "compare", "link")}
    return dict({"model": arch.id}, **matrix_vector(
        head_dim=_head_dim(arch), length=args.length, group_rows=args.group_rows, slots=args.slots,
        direct=args.path == "direct", rates=rates, capacity=args.capacity_bytes))


def _mxn(text):
    import argparse

    parts = text.split("x")
    values = [common.digits(p) for p in parts]
    if len(parts) != 2 or None in values or any(v <= 0 or v % 128 for v in values):
        raise argparse.ArgumentTypeError(f"must be MxN, positive multiples of 128 (256x128), got '{text}'")
    return tuple(values)


def _supply(text):
    import argparse

    parts = text.split(":")
    values = [common.digits(p) for p in parts]
    if len(parts) != 3 or None in values or 0 in values:
        raise argparse.ArgumentTypeError(f"must be MATRIX:EXP:SMEM positive multipliers (2:1:1), got '{text}'")
    return dict(zip(("matrix", "exp", "smem"), values))


def _sm_balance_arguments(q):
    common.add_model(q)
    q.add_argument("--tile", type=_mxn, action="append", metavar="MxN",
                   help="queries x keys of the tile, multiples of 128 (repeatable; default 128x128, 256x128, "
                        "128x256, 256x256)")
    q.add_argument("--supply", type=_supply, action="append", metavar="MATRIX:EXP:SMEM",
                   help="supply multipliers (repeatable; default 1:1:1, 2:1:1, 2:2:1, 2:2:2)")
    for flag, value, what in (("--matrix-per-cycle", 8192, "BF16 MMA FLOPs"), ("--exp-per-cycle", 16, "exponentials"),
                              ("--smem-per-cycle", 128, "shared-memory read bytes")):
        q.add_argument(flag, type=common.positive_int, default=value, metavar="N",
                       help=f"{what} per SM cycle (default {value}: FlashAttention-4 paper, Table 1, B200)")


def _sm_balance(args):
    from ..analyses.sm_balance import MMA, sm_balance
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    d = _head_dim(arch)
    if d % MMA:
        raise UserError(f"the head dimension {d} of {arch.id} is not a multiple of the {MMA}-wide MMA tile")
    tiles = args.tile or [(128, 128), (256, 128), (128, 256), (256, 256)]
    supplies = args.supply or [_supply(s) for s in ("1:1:1", "2:1:1", "2:2:1", "2:2:2")]
    _at_most(len(tiles) * len(supplies), "tile and supply rows")
    rates = {"matrix": args.matrix_per_cycle, "exp": args.exp_per_cycle, "smem": args.smem_per_cycle}
    return dict({"model": arch.id}, **sm_balance(head_dim=d, tiles=tiles, supplies=supplies, rates=rates))


def _score(item):
    import math

    item = item.strip()
    if item in ("-", "masked"):
        return None
    if item.startswith("ln"):
        x = float(item[2:])
        if x <= 0:
            raise ValueError(item)
        return math.log(x)
    value = float(item)
    if value != value or value in (math.inf, -math.inf):
        raise ValueError(item)
    return value


def _scores(text):
    import argparse

    try:
        values = [_score(t) for t in text.split(",")] if len(text) < 4000 else None
    except ValueError:
        values = None
    if not values:
        raise argparse.ArgumentTypeError(f"must be scores separated by commas: numbers, lnX (the natural log of X) "
                                         f"or masked, e.g. 0,ln2,ln4; got '{text}'")
    return text


def _vectors(text):
    import argparse
    import math

    try:
        rows = [[float(c) for c in item.split(":")] for item in text.split(",")] if len(text) < 4000 else []
    except ValueError:
        rows = []
    if not rows or len({len(r) for r in rows}) != 1 or any(not math.isfinite(c) for r in rows for c in r):
        raise argparse.ArgumentTypeError(f"must be finite value vectors of one width, components joined by ':' and "
                                         f"vectors by ',' (1,3,-2 or 0:0,1:2), got '{text}'")
    return text


def _online_softmax_arguments(q):
    q.add_argument("--scores", type=_scores, required=True, metavar="S,S",
                   help="one score per position: a number, lnX (the natural log of X) or masked")
    q.add_argument("--values", type=_vectors, required=True, metavar="V,V", help="one value vector per position")
    q.add_argument("--blocks", required=True, metavar="N,N", help="positions per block, in order (0 = an empty block)")


def _online_softmax(args):
    from ..analyses.merge_numerics import online_softmax
    from ..errors import UserError

    scores = [_score(t) for t in args.scores.split(",")]
    values = [[float(c) for c in item.split(":")] for item in args.values.split(",")]
    blocks = [common.digits(t.strip()) for t in args.blocks.split(",")]
    if None in blocks or len(blocks) > 1024:
        raise UserError(f"--blocks must be at most 1,024 non-negative counts, got '{args.blocks}'")
    if len(values) != len(scores) or sum(blocks) != len(scores):
        raise UserError(f"{len(scores)} scores, {len(values)} values and blocks summing to {sum(blocks)}: "
                        f"all three must cover the same positions")
    return online_softmax(scores, values, blocks)


def _fp8_scale_arguments(q):
    q.add_argument("--block", type=common.positive_int, default=128, help="elements per scale block (default 128)")
    q.add_argument("--larger-first", action="store_true", help="put the block holding the row's maximum first")


def _fp8_scale(args):
    from ..analyses.merge_numerics import prefix_scale_witness

    _at_most(args.block, "elements per block")
    return prefix_scale_witness(args.block, args.larger_first)


def _tile_order_arguments(q):
    from .gemm import tile_shape

    q.add_argument("--model", action="append", required=True, metavar="ID|CONFIG.json",
                   help="a dense decoder (give two: the first, then the second compared against it)")
    q.add_argument("--tokens", type=common.tokens, required=True, help="new tokens per request")
    q.add_argument("--history", type=common.tokens_or_zero, default=0, help="cached tokens per request (default 0)")
    q.add_argument("--batch", type=common.positive_int, default=1, help="requests (default 1)")
    q.add_argument("--tile", type=tile_shape, required=True, metavar="MxKxN",
                   help="the declared kernel tile (the book's architecture-tile-* use 64x64x128)")
    q.add_argument("--rate", type=flop_rate, action="append", default=None, metavar="FLOP/S",
                   help="declared matrix rate serving padded work: one for both models, or one per model in "
                        "order (default 100T, the book's)")


def _tile_order(args):
    from ..analyses.tile_order import service, tile_order
    from ..analyses.tile_padding import tile_padding
    from ..errors import UserError
    from ..load.models import load_model
    from ..workload import Workload

    if len(args.model) != 2:
        raise UserError(f"--model takes two models (the first, then the second), got {len(args.model)}")
    rates = args.rate or [10**14]
    if len(rates) not in (1, 2):
        raise UserError(f"--rate takes one rate for both models or one per model, got {len(rates)}")
    rates = rates * (3 - len(rates))
    passes = []
    for spec, rate in zip(args.model, rates):
        arch = load_model(spec)
        w = Workload(batch=args.batch, tokens=args.tokens, history=args.history)
        totals = tile_padding(arch, w, args.tile, args.batch)["totals"]
        passes.append(service(arch.id, arch.params, totals, rate))
    return dict({"tile": list(args.tile), "tokens": args.tokens, "history": args.history, "batch": args.batch},
                **tile_order(*passes))

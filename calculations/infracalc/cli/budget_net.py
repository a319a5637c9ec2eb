"""The network `budget` kinds of chapters 6 and 7 (periodic-queue, feedback-queue, ...): arguments and run.

Each `_<kind>_arguments(q)` adds the kind's options, each `_<kind>(args)` returns its result
record; cli/budget.py lists the kinds and dispatches to them (a '-' in a kind's name is '_' here).
"""

import argparse
from fractions import Fraction

from . import common
from .budget_values import exact_ns as _ns, exact_ns_list as _list_ns

_BYTE_RATES = (("TiB/s", 2**40), ("GiB/s", 2**30), ("MiB/s", 2**20), ("KiB/s", 2**10),
               ("TB/s", 10**12), ("GB/s", 10**9), ("MB/s", 10**6), ("KB/s", 10**3), ("B/s", 1))


def byte_rate(text):
    """A whole number of bytes/s, exact: 50GB/s, 24GiB/s, 40e9, 0 (zero allowed: an idle source)."""
    unit, factor = next(((u, f) for u, f in _BYTE_RATES if text.endswith(u)), ("", 1))
    try:
        value = Fraction(text[:len(text) - len(unit)]) * factor if len(text) <= 40 else None
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or value.denominator != 1 or not 0 <= value <= 10**18:
        raise argparse.ArgumentTypeError(f"must be a whole number of bytes/s up to 10^18 such as 50GB/s or 4e10, "
                                         f"got '{text}'")
    return int(value)


def _job(text):
    """PERIOD:ON:OFFSET:RATE: 100ms:20ms:0ms:40GB/s."""
    parts = text.split(":")
    try:
        if len(parts) != 4:
            raise argparse.ArgumentTypeError(text)
        period, on, offset = (_ns(p) for p in parts[:3])
        rate = byte_rate(parts[3])
        if not 0 < on <= period:
            raise argparse.ArgumentTypeError(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be PERIOD:ON:OFFSET:RATE with 0 < ON <= PERIOD "
                                         f"(100ms:20ms:0ms:40GB/s), got '{text}'")
    return period, on, offset, rate


_checked = common.as_given


def _capacity(q):
    q.add_argument("--capacity", type=byte_rate, required=True, metavar="R",
                   help="the shared link's service rate in bytes/s (50GB/s)")


def _queue_limits(q):
    q.add_argument("--initial-queue", type=byte_count_text, default=0, metavar="BYTES",
                   help="queue at time 0 (256KiB; default 0)")
    q.add_argument("--buffer", type=byte_count_text, default=None, metavar="BYTES",
                   help="finite buffer: fluid beyond it is dropped (default unbounded)")


def byte_count_text(text):
    """A non-negative byte count: 0, 262144, 256KiB."""
    from .budget_values import byte_count

    return byte_count(text)


def _periodic_queue_arguments(q):
    q.add_argument("--job", dest="jobs", type=_checked(_job), action="append", required=True,
                   metavar="PERIOD:ON:OFFSET:RATE",
                   help="a periodic demand: sends RATE during [k PERIOD + OFFSET, + ON) (repeat for each job)")
    _capacity(q)
    q.add_argument("--window", type=_ns, default=None, metavar="T",
                   help="observation window from 0 (default: the least common multiple of the periods)")
    _queue_limits(q)


def _limits(args):
    from ..errors import UserError

    if args.buffer is not None and args.initial_queue > args.buffer:
        raise UserError(f"--initial-queue {args.initial_queue:,} exceeds --buffer {args.buffer:,}")
    if not args.capacity:
        raise UserError("--capacity must be positive")


def _periodic_queue(args):
    from ..analyses.fluid_queue import periodic_queue
    from ..errors import UserError

    _limits(args)
    if args.window == 0:
        raise UserError("--window must be positive")
    try:
        return periodic_queue(jobs=[_job(j) for j in args.jobs], capacity=args.capacity, window_ns=args.window,
                              initial_bytes=args.initial_queue, buffer_bytes=args.buffer)
    except ValueError as e:
        raise UserError(str(e))


def _feedback_queue_arguments(q):
    q.add_argument("--offered", type=byte_rate, required=True, metavar="R", help="arrival rate until feedback (80GB/s)")
    q.add_argument("--reduced", type=byte_rate, required=True, metavar="R",
                   help="arrival rate after the feedback (40GB/s; 0 = stop)")
    _capacity(q)
    q.add_argument("--feedback", type=_ns, required=True, metavar="T", help="feedback delay from 0 (20us)")
    q.add_argument("--after-feedback", type=_ns, required=True, metavar="T", help="observed time after it (100us)")
    _queue_limits(q)


def _feedback_queue(args):
    from ..analyses.fluid_queue import feedback_queue
    from ..errors import UserError

    _limits(args)
    if not args.feedback or not args.after_feedback:
        raise UserError("--feedback and --after-feedback must be positive")
    return feedback_queue(offered=args.offered, reduced=args.reduced, capacity=args.capacity,
                          feedback_ns=args.feedback, after_ns=args.after_feedback, initial_bytes=args.initial_queue,
                          buffer_bytes=args.buffer)


def _record(text):
    """[NAME=]COUNT:EXCHANGE:RECOVERY:READY,READY,...: late-rank=1:400us:0s:0s,0s,0s,2ms."""
    name, eq, body = text.rpartition("=")
    parts = body.split(":")
    try:
        count = int(parts[0]) if len(parts) == 4 and parts[0].isdigit() else 0
        if not count or len(text) > 4000:
            raise argparse.ArgumentTypeError(text)
        exchange, recovery = _ns(parts[1]), _ns(parts[2])
        ready = [_ns(t) for t in parts[3].split(",")]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be [NAME=]COUNT:EXCHANGE:RECOVERY:READY,READY,... with times in units "
                                         f"(normal=98:400us:0s:0s,0s,0s,0s), got '{text}'")
    return name or "observation", count, ready, exchange, recovery


def _payload_options(q, what):
    q.add_argument("--model", default=None, help=f"a bundled model: {what} is BF16 [tokens, hidden] (optional)")
    q.add_argument("--tokens", type=common.positive_int, default=1, help="tokens of that payload (default 1)")


def _payload(args):
    if args.model is None:
        return None
    from ..load.models import load_model

    return 2 * args.tokens * load_model(args.model).hidden_size


def _collective_tail_arguments(q):
    q.add_argument("--record", dest="records", type=_checked(_record), action="append", required=True,
                   metavar="[NAME=]COUNT:EXCHANGE:RECOVERY:READY,...",
                   help="an observation repeated COUNT times: exchange and recovery times, each rank's ready time")
    q.add_argument("--exchange-speedup", type=_speedup, default=Fraction(2), metavar="S",
                   help="the faster-exchange counterfactual's factor (default 2)")
    q.add_argument("--post-compute", type=_ns, default=0, metavar="T", help="compute after the collective (default 0s)")
    _payload_options(q, "each rank's payload")


def _speedup(text):
    try:
        value = Fraction(text) if len(text) <= 40 else None
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(f"must be a factor of at least 1 such as 2 or 3/2, got '{text}'")
    return value


def _collective_tail(args):
    from ..analyses.collective_tail import collective_tail
    from ..errors import UserError

    records = [_record(r) for r in args.records]
    if len({len(r[2]) for r in records}) != 1:
        raise UserError("every --record must give the same number of ranks")
    return collective_tail(observations=records, speedup=args.exchange_speedup, post_ns=args.post_compute,
                           payload_bytes=_payload(args))


def _read_witness(text):
    """SAMPLE:DATA:FLAG:FLAGREAD:RESPONSE:REREAD: 1us:2us:3us:4us:5us:2us."""
    parts = text.split(":")
    try:
        if len(parts) != 6:
            raise argparse.ArgumentTypeError(text)
        s, d, f, g, t, reread = (_ns(p) for p in parts)
        if not (d <= f <= g <= t and s <= g):
            raise argparse.ArgumentTypeError(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be SAMPLE:DATA:FLAG:FLAGREAD:RESPONSE:REREAD times with DATA <= FLAG <= "
                                         f"FLAGREAD <= RESPONSE and SAMPLE <= FLAGREAD (1us:2us:3us:4us:5us:2us), "
                                         f"got '{text}'")
    return s, d, f, g, t, reread


def _ordering_arguments(q):
    for flag, text in (("--write", "data write (20us)"), ("--recovery", "recovery until the data is visible (80us)"),
                       ("--notification", "notification publish (2us)"),
                       ("--independent", "the independent transfer (10us)")):
        q.add_argument(flag, type=_ns, required=True, metavar="T", help=text)
    q.add_argument("--shared-resource", action="store_true",
                   help="the independent transfer shares the publication resource")
    q.add_argument("--read", type=_checked(_read_witness), default=None, metavar="SAMPLE:DATA:FLAG:FLAGREAD:RESPONSE:REREAD",
                   help="a speculative-read witness: sample D, D visible, F visible, read F, respond, re-read latency")
    _payload_options(q, "each data transfer")


def _ordering(args):
    from ..analyses.operation_ordering import ordering_schedules, stale_read

    out = {}
    if args.model is not None:
        out["transfer_bytes"] = _payload(args)
    out.update(ordering_schedules(write_ns=args.write, recovery_ns=args.recovery, notification_ns=args.notification,
                                  independent_ns=args.independent, shared_resource=args.shared_resource))
    if args.read is not None:
        keys = ("sample_ns", "data_visible_ns", "flag_visible_ns", "flag_read_ns", "response_ns", "reread_ns")
        out["stale_read"] = stale_read(**dict(zip(keys, _read_witness(args.read))))
    return out


def _completion_reclaim_arguments(q):
    q.add_argument("--operations", type=common.positive_int, required=True, help="operations offered (16)")
    q.add_argument("--slots", type=common.positive_int, required=True, help="credits, each held until consumed (8)")
    q.add_argument("--submit-interval", type=_ns, required=True, metavar="T",
                   help="offer spacing and minimum submit interval (1us)")
    q.add_argument("--latency", type=_ns, required=True, metavar="T", help="fixed transfer latency (5us)")
    q.add_argument("--poll-interval", type=_ns, required=True, metavar="T", help="completion poll period, first at T (20us)")
    q.add_argument("--poll-batch", type=common.positive_int, required=True, metavar="B",
                   help="completions one poll consumes at most (4)")
    q.add_argument("--entry-bytes", type=common.positive_int, default=64, metavar="BYTES",
                   help="bytes of one completion entry (default 64)")
    _payload_options(q, "each operation's payload")


def _completion_reclaim(args):
    from ..analyses.completion_reclaim import completion_reclaim
    from ..errors import UserError

    if not args.poll_interval:
        raise UserError("--poll-interval must be positive")
    if max(args.operations, args.slots) > 100_000:
        raise UserError("--operations and --slots take at most 100,000")
    return completion_reclaim(operations=args.operations, slots=args.slots, submit_interval_ns=args.submit_interval,
                              latency_ns=args.latency, poll_interval_ns=args.poll_interval, poll_batch=args.poll_batch,
                              entry_bytes=args.entry_bytes, payload_bytes=_payload(args))


def _remote_state_arguments(q):
    common.add_model(q, required=False)
    q.add_argument("--context", type=common.tokens, default=None, help="tokens of the snapshot (with --model)")
    q.add_argument("--payload-bytes", type=common.byte_size, default=None, metavar="BYTES",
                   help="a declared snapshot instead of --model's KV cache")
    q.set_defaults(weight_dtype=None, act_dtype="bf16")
    q.add_argument("--kv-dtype", default=None, metavar="FMT", help="KV cache format (default bf16)")
    q.add_argument("--reuses", type=common.positive_int, required=True, metavar="N", help="reads of the snapshot")
    q.add_argument("--remote-bandwidth", type=byte_rate, required=True, metavar="R", help="remote link bytes/s (40GB/s)")
    q.add_argument("--latency", type=_ns, required=True, metavar="T", help="remote transaction latency (2us)")
    q.add_argument("--transaction-bytes", type=common.positive_int, required=True, metavar="S", help="bytes per transaction (256)")
    q.add_argument("--transactions", type=common.positive_int, required=True, metavar="N", help="transactions in flight (313)")
    q.add_argument("--bulk-bandwidth", type=byte_rate, required=True, metavar="R", help="staging copy bytes/s (25GB/s)")
    q.add_argument("--local-bandwidth", type=byte_rate, required=True, metavar="R", help="local memory bytes/s (1TB/s)")
    for flag, text in (("--remote-startup", "per remote read"), ("--bulk-startup", "of the staging copy"),
                       ("--local-startup", "per local read")):
        q.add_argument(flag, type=_ns, default=0, metavar="T", help=f"declared start {text} (default 0s)")
    q.add_argument("--local-available", type=byte_count_text, default=None, metavar="BYTES",
                   help="local bytes available for the copy (default unlimited)")


def _remote_state(args):
    from ..analyses.remote_state import remote_state
    from ..errors import UserError

    if (args.model is None) == (args.payload_bytes is None):
        raise UserError("give --model (with --context) for a request's KV cache, or --payload-bytes")
    payload = args.payload_bytes
    if args.model is not None:
        from ..analyses.kv import bytes_per_request
        from ..load.models import load_model

        if args.context is None:
            raise UserError("--model needs --context (tokens of the snapshot)")
        arch = load_model(args.model)
        payload = bytes_per_request(arch, common.workload(args, arch, 1, 1, 0), args.context)
    if not (args.remote_bandwidth and args.bulk_bandwidth and args.local_bandwidth and args.latency):
        raise UserError("the bandwidths and --latency must be positive")
    return remote_state(payload_bytes=payload, reuses=args.reuses, remote_bandwidth=args.remote_bandwidth,
                        latency_ns=args.latency, transaction_bytes=args.transaction_bytes, transactions=args.transactions,
                        remote_startup_ns=args.remote_startup, bulk_bandwidth=args.bulk_bandwidth,
                        bulk_startup_ns=args.bulk_startup, local_bandwidth=args.local_bandwidth,
                        local_startup_ns=args.local_startup, local_available_bytes=args.local_available)


def _fifo_pipeline_arguments(q):
    common.add_model(q)
    q.add_argument("--groups", type=common.positive_int, required=True, metavar="G", help="request groups (micro-batches)")
    q.add_argument("--requests-per-group", type=common.positive_int, default=1, metavar="R", help="requests per group (default 1)")
    q.add_argument("--steps", type=common.positive_int, required=True, help="decode steps per group")
    q.add_argument("--stage-times", type=_list_ns, required=True, metavar="T,T,...", help="one per stage (1ms,1ms,1ms,1ms)")
    q.add_argument("--transfer-times", type=_list_ns, default=(), metavar="T,T,...",
                   help="one per stage boundary (100us,100us,100us)")
    q.add_argument("--feedback", type=_ns, default=0, metavar="T", help="completion to the group's next step (default 0s)")
    q.add_argument("--buffer-slots", type=common.positive_int, default=None, metavar="N",
                   help="sender and receiver slots per boundary (default unbounded)")


def _fifo_pipeline(args):
    from ..analyses.fifo_pipeline import fifo_pipeline
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    stages = len(args.stage_times)
    if len(args.transfer_times) != stages - 1:
        raise UserError(f"--transfer-times needs {stages - 1} times, one per boundary of the {stages} stages")
    if stages > len(arch.layers):
        raise UserError(f"{stages} stages exceed the {len(arch.layers)} layers of {arch.id}")
    if not all(args.stage_times):
        raise UserError("--stage-times must be positive")
    if args.groups * args.steps * stages > 10**6:
        raise UserError("at most 10^6 stage operations (groups x steps x stages)")
    return fifo_pipeline(stage_ns=args.stage_times, transfer_ns=args.transfer_times, groups=args.groups, steps=args.steps,
                         feedback_ns=args.feedback, activation_bytes=2 * args.requests_per_group * arch.hidden_size,
                         slots=args.buffer_slots)


def _moe_dedup_arguments(q):
    common.add_model(q)
    q.add_argument("--ranks", type=common.positive_int, required=True, metavar="P", help="expert-parallel ranks (8)")
    q.add_argument("--tokens-per-rank", type=common.positive_int, required=True, metavar="T", help="tokens on each rank (64)")
    q.add_argument("--pattern", choices=("clustered", "spread"), required=True,
                   help="each token's experts all on one rank, or one per rank in turn")
    q.add_argument("--combine-bytes", type=common.positive_int, default=4, metavar="B",
                   help="bytes of a returned element (default 4; dispatch is BF16)")
    q.add_argument("--bandwidth", type=byte_rate, default=None, metavar="R",
                   help="per-rank link bytes/s for the pairwise all-to-all times (50GB/s; default: no times)")
    q.add_argument("--startup", type=_ns, default=0, metavar="T", help="per-round startup (2us; default 0s)")


def _moe_dedup(args):
    from ..analyses.moe_dedup import moe_dedup
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    moe = next((b for layer in arch.layers for b in layer.blocks if hasattr(b, "experts") and hasattr(b, "top_k")), None)
    if moe is None:
        raise UserError(f"model '{arch.id}' has no MoE layer")
    if moe.experts % args.ranks:
        raise UserError(f"--ranks {args.ranks} does not divide the {moe.experts} experts")
    if args.ranks * args.tokens_per_rank > 10**6:
        raise UserError("at most 10^6 tokens in all (--ranks x --tokens-per-rank)")
    if args.bandwidth == 0:
        raise UserError("--bandwidth must be positive")
    try:
        return moe_dedup(ranks=args.ranks, tokens_per_rank=args.tokens_per_rank, experts=moe.experts, top_k=moe.top_k,
                         hidden=arch.hidden_size, pattern=args.pattern, combine_bytes=args.combine_bytes,
                         bandwidth=args.bandwidth, startup_ns=args.startup)
    except ValueError as e:
        raise UserError(str(e))


def _staging_arguments(q):
    common.add_model(q)
    q.add_argument("--tokens", type=common.positive_int, required=True, help="tokens of the all-reduced BF16 activation")
    q.add_argument("--gpu-numa", type=_names, default=("A", "A", "B", "B"), metavar="NODE,...",
                   help="each GPU's NUMA node (default A,A,B,B)")
    q.add_argument("--ring", type=_gpu_list, default=None, metavar="GPU,...", help="the GPU of each ring rank (default 0,1,...)")
    q.add_argument("--buffer", default="sender", metavar="sender|NODE",
                   help="host buffer of every edge: the sender's node (default) or one node for all")
    q.add_argument("--pcie", type=byte_rate, required=True, metavar="R", help="each GPU's PCIe, per direction (12GB/s)")
    q.add_argument("--dram", type=byte_rate, required=True, metavar="R", help="each node's DRAM read + write (40GB/s)")
    q.add_argument("--intersocket", type=byte_rate, required=True, metavar="R", help="each node-to-node direction (8GB/s)")
    q.add_argument("--startup", type=_ns, default=0, metavar="T", help="per ring round (default 0s)")


def _names(text):
    names = tuple(t.strip() for t in text.split(","))
    if not all(n.isalnum() for n in names) or len(names) > 64:
        raise argparse.ArgumentTypeError(f"must be node names separated by commas (A,A,B,B), got '{text}'")
    return names


def _gpu_list(text):
    items = text.split(",")
    if len(items) > 64 or not all(t.strip().isdigit() for t in items):
        raise argparse.ArgumentTypeError(f"must be GPU indices separated by commas (0,2,1,3), got '{text}'")
    return tuple(int(t) for t in items)


def _staging(args):
    from ..analyses.host_staging import host_staging
    from ..errors import UserError
    from ..load.models import load_model

    numa = args.gpu_numa
    ring = args.ring if args.ring is not None else tuple(range(len(numa)))
    if sorted(ring) != list(range(len(numa))) or len(ring) < 2:
        raise UserError(f"--ring must order each of the {len(numa)} GPUs (0 to {len(numa) - 1}) once")
    if args.buffer != "sender" and args.buffer not in numa:
        raise UserError(f"--buffer must be sender or one of the nodes {', '.join(sorted(set(numa)))}")
    if not (args.pcie and args.dram and args.intersocket):
        raise UserError("--pcie, --dram and --intersocket must be positive")
    hidden = load_model(args.model).hidden_size
    return host_staging(message_bytes=2 * args.tokens * hidden, numa=numa, ring=ring,
                        buffer_node=None if args.buffer == "sender" else args.buffer, pcie=args.pcie, dram=args.dram,
                        link=args.intersocket, startup_ns=args.startup)


def _packet_reorder_arguments(q):
    common.add_model(q)
    q.add_argument("--tokens", type=common.positive_int, default=1, help="tokens of the BF16 message (default 1)")
    q.add_argument("--packet-bytes", type=common.positive_int, required=True, metavar="B", help="payload per packet (1024)")
    q.add_argument("--path-delays", type=_list_ns, required=True, metavar="T,T,...", help="one delay per path (1us,9us)")
    q.add_argument("--path-rate", type=byte_rate, required=True, metavar="R", help="each path's bytes/s (1GB/s)")
    q.add_argument("--lost", type=_gpu_list, default=(), metavar="I,...", help="original packets lost (0)")
    q.add_argument("--recovery", type=_ns, default=0, metavar="T", help="original end to its resend being ready (20us)")


def _packet_reorder(args):
    from ..analyses.packet_reorder import packet_reorder
    from ..errors import UserError
    from ..load.models import load_model
    from ..splits import ceil_div

    payload = 2 * args.tokens * load_model(args.model).hidden_size
    n = ceil_div(payload, args.packet_bytes)
    if n > 100_000:
        raise UserError(f"{n:,} packets: at most 100,000 (raise --packet-bytes)")
    if len(set(args.lost)) != len(args.lost) or any(i >= n for i in args.lost):
        raise UserError(f"--lost must name distinct packets of the {n} (0 to {n - 1})")
    if not args.path_rate:
        raise UserError("--path-rate must be positive")
    return packet_reorder(payload_bytes=payload, packet_bytes=args.packet_bytes, path_delays_ns=args.path_delays,
                          path_rate=args.path_rate, lost=args.lost, recovery_ns=args.recovery)


def _memory_pool_arguments(q):
    q.add_argument("--node-capacity", type=_byte_list, required=True, metavar="BYTES,...", help="each node (64GiB,64GiB,...)")
    q.add_argument("--demand", type=_byte_list, required=True, metavar="BYTES,...", help="each node's job (80GiB,48GiB,...)")
    q.add_argument("--copies", type=common.positive_int, default=1, help="full copies of borrowed bytes (default 1)")
    q.add_argument("--bandwidths", type=_list(byte_rate), required=True, metavar="R,...", help="interfaces (10GB/s,40GB/s)")
    q.add_argument("--latencies", type=_list_ns, required=True, metavar="T,...", help="transaction latencies (2us,20us)")
    q.add_argument("--transactions", type=_list(common.positive_int), required=True, metavar="N,...", help="in flight (128,4096)")
    q.add_argument("--transaction-bytes", type=common.positive_int, required=True, metavar="S", help="bytes each (256)")
    q.add_argument("--startup", type=_ns, default=0, metavar="T", help="per read (5us; default 0s)")
    q.add_argument("--reads-per-second", type=_list(_rate_fraction), required=True, metavar="F,...",
                   help="read frequencies of the borrowed bytes (1/60,1,20)")


def _list(parse):
    from .budget_values import _list as listed

    return listed(parse)


def _byte_list(text):
    items = text.split(",")
    if len(items) > 64:
        raise argparse.ArgumentTypeError("at most 64 nodes")
    return tuple(byte_count_text(t.strip()) for t in items)


def _rate_fraction(text):
    try:
        value = Fraction(text) if len(text) <= 40 else None
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive frequency such as 1/60 or 20, got '{text}'")
    return value


def _memory_pool(args):
    from ..analyses.memory_pool import access, failures, pool_capacity
    from ..errors import UserError

    if len(args.node_capacity) != len(args.demand):
        raise UserError(f"--demand gives {len(args.demand)} jobs for {len(args.node_capacity)} nodes")
    if len(args.node_capacity) > 12:
        raise UserError("at most 12 nodes (the failure table lists every set of nodes)")
    if not all(args.bandwidths) or not all(args.latencies):
        raise UserError("--bandwidths and --latencies must be positive")
    try:
        cap = pool_capacity(args.node_capacity, args.demand, args.copies)
    except ValueError as e:
        raise UserError(str(e))
    reads = [access(payload_bytes=cap["borrowed_bytes"], bandwidth=b, latency_ns=lat, transactions=n,
                    transaction_bytes=args.transaction_bytes, startup_ns=args.startup, reads_per_s=f)
             for b in args.bandwidths for lat in args.latencies for n in args.transactions for f in args.reads_per_second]
    if not cap["borrowed_bytes"]:
        reads = []
    donors = cap["donors"]
    cap = dict(cap, donors=[{"node": i, "donors": d} for i, d in donors.items()],
               whole_job_fits_on=[{"node": i, "nodes": d} for i, d in cap["whole_job_fits_on"].items()])
    return dict(cap, access=reads, failures=failures(len(args.node_capacity), donors))


def _growing_kv_arguments(q):
    common.add_model(q)
    q.set_defaults(weight_dtype=None, act_dtype="bf16", kv_dtype=None)
    q.add_argument("--batch", type=common.positive_int, default=1, help="requests (default 1)")
    q.add_argument("--prompt", type=common.tokens, required=True, metavar="P", help="KV positions already produced (8192)")
    q.add_argument("--steps", type=common.non_negative_int, required=True, metavar="N", help="decode steps (128)")
    q.add_argument("--copies", type=common.positive_int, default=1, help="remote replicas (default 1)")
    q.add_argument("--placement", choices=("remote-all", "remote-prefix"), default="remote-all",
                   help="the whole history remote, or only the prompt (new positions stay local)")
    q.add_argument("--bandwidth", type=byte_rate, required=True, metavar="R", help="the sender link's bytes/s (40GB/s)")
    q.add_argument("--startup", type=_ns, default=0, metavar="T", help="per message (5us; default 0s)")
    q.add_argument("--local-tail-budget", type=byte_count_text, default=2**30, metavar="BYTES",
                   help="local bytes for the new positions (default 1GiB)")


def _growing_kv(args):
    from ..analyses.growing_kv import growing_kv
    from ..analyses.kv import sizing_record, merge, terms
    from ..errors import UserError
    from ..load.models import load_model

    arch = load_model(args.model)
    full = [b for layer in arch.layers for b in layer.blocks
            if "Attention" in type(b).__name__ and hasattr(b, "heads") and hasattr(b, "head_dim")]
    if not full or args.bandwidth == 0:
        raise UserError("needs a model with full-attention layers and a positive --bandwidth")
    w = common.workload(args, arch, 1, 1, 0)
    sizing = sizing_record(merge(terms([(layer, count) for layer, count, _ in arch.layer_groups()], w, 1)))
    return growing_kv(kv_per_position=sizing["bytes_per_token"],
                      attention_flops_per_pair=sum(4 * b.heads * b.head_dim for b in full),
                      state_bytes=sizing["state_bytes_per_request"], batch=args.batch, prompt=args.prompt,
                      steps=args.steps, copies=args.copies, remote_all=args.placement == "remote-all",
                      bandwidth=args.bandwidth, startup_ns=args.startup, tail_budget_bytes=args.local_tail_budget)

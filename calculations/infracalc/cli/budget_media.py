"""The request, stream and environment `budget` kinds of chapters 9, 11 and 12 (image-request, audio, ack-window, ec-pool, retry, ...): arguments and run.

Each `_<kind>_arguments(q)` adds the kind's options, each `_<kind>(args)` returns its result record;
cli/budget.py lists the kinds and finds them here (a '-' in a kind's name is '_' here).
"""

import argparse
from fractions import Fraction

from . import common
from .budget_values import _byte_rate, _exact, _list, _retry_node, _share, byte_count, exact_ns, exact_seconds


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

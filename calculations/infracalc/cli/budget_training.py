"""The training `budget` kinds of chapters 3 and 10 (straggler, pipeline, optimizer, checkpoint, ...): arguments and run.

Each `_<kind>_arguments(q)` adds the kind's options, each `_<kind>(args)` returns its result record;
cli/budget.py lists the kinds and finds them here (a '-' in a kind's name is '_' here).
"""

import argparse
from fractions import Fraction

from . import common
from .budget_values import _history_model, _list, _params, byte_count, seconds_at_most

# A declared step, stage, round or preparation time (chapters 3 and 10): exact, at most 10^6 s.
declared_time = seconds_at_most(10**6)


def long_duration(text):
    """A mean time between failures or a recovery time: 28440s, 365d, 2min (unit required)."""
    return common._time(text, "a time with a unit such as 30s, 8h or 365d, at most 1e12 s", 1e12)


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
        q.add_argument(flag, dest=flag[2:].replace("-", "_") + "_s", type=declared_time, default=0, metavar="T",
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
        q.add_argument(flag, dest=dest, type=declared_time, required=default is None, default=default, metavar="T",
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
            out += [(int(tokens), int(stored), declared_time(prep))] * times
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
        q.add_argument(flag, dest=dest, type=declared_time, required=True, metavar="T", help=what)
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
    times = _list(declared_time)
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
    q.add_argument("--setup-time", dest="setup_time_s", type=declared_time, default=0, metavar="T",
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
    q.add_argument("--startup", type=declared_time, default=0, metavar="T", help="per round (e.g. 833ns; default 0)")
    q.add_argument("--budget", type=declared_time, default=None, metavar="T", help="a declared time budget (3ms)")


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


GRADIENT_RING_MAX_RANKS = 128   # ranks per server: every round of the 2R-rank rings is listed (R^2 rows)


def _gradient_ring(args, organization=None):
    from ..analyses.gradient_rings import gradient_rings
    from ..errors import UserError

    if args.ranks_per_server > GRADIENT_RING_MAX_RANKS:
        raise UserError(f"--ranks-per-server {args.ranks_per_server:,}: at most {GRADIENT_RING_MAX_RANKS} (every round "
                        "of the rings is listed; the rows grow as R^2)")
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
    q.add_argument("--compute-time", type=declared_time, required=True, metavar="T",
                   help="compute seconds of a reference step, kept exact (52.2s or a ratio such as 261/5s; scales "
                        "as 1 / cards under strong scaling)")
    q.add_argument("--overhead-time", type=declared_time, default=0, metavar="T",
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

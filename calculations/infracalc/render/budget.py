"""`budget` records -> Markdown and CSV: the inputs, one quantity per row, the conventions."""

from .table import inline, markdown_table

# Conventions that live in an analysis module: imported when their kind runs (importing all of them cost
# every budget command several milliseconds). conventions(kind) resolves them.
_HOME = {
    "ACK_WINDOW_CONVENTIONS": "ack_window",
    "AUDIO_CONVENTIONS": "audio_timing",
    "COLLECTIVE_TAIL_CONVENTIONS": "collective_tail",
    "COMPLETION_CONVENTIONS": "completion_reclaim",
    "CONNECTION_CONVENTIONS": "connection_states",
    "FIFO_PIPELINE_CONVENTIONS": "fifo_pipeline",
    "ENVIRONMENT_CONVENTIONS": "environment_budget",
    "FLUID_CONVENTIONS": "fluid_queue",
    "FP8_CONVENTIONS": "merge_numerics",
    "FUSION_CONVENTIONS": "fusion",
    "GROWING_KV_CONVENTIONS": "growing_kv",
    "STAGING_CONVENTIONS": "host_staging",
    "IMAGE_REQUEST_CONVENTIONS": "image_request",
    "IMAGE_STREAM_CONVENTIONS": "image_stream",
    "KDA_CHUNK_CONVENTIONS": "kda_chunk",
    "BATCH_REUSE_CONVENTIONS": "batch_reuse",
    "MEMORY_POOL_CONVENTIONS": "memory_pool",
    "MOE_DEDUP_CONVENTIONS": "moe_dedup",
    "NUMERICS_CONVENTIONS": "merge_numerics",
    "ORDERING_CONVENTIONS": "operation_ordering",
    "PACKET_CONVENTIONS": "packet_budget",
    "PACKET_REORDER_CONVENTIONS": "packet_reorder",
    "PIPELINE_CONVENTIONS": "training_pipeline",
    "OPTIMIZER_CONVENTIONS": "optimizer_groups",
    "CAST_CONVENTIONS": "gradient_cast",
    "ROUTING_METADATA_CONVENTIONS": "routing_metadata",
    "EXPERT_EXECUTION_CONVENTIONS": "expert_execution",
    "RESHARD_CONVENTIONS": "checkpoint_reshard",
    "ASYNC_CHECKPOINT_CONVENTIONS": "checkpoint_async",
    "HANDOFF_CONVENTIONS": "weight_handoff",
    "INPUT_SUPPLY_CONVENTIONS": "input_supply",
    "BANK_CONVENTIONS": "bank_mapping",
    "QUANT_GEMM_CONVENTIONS": "quant_gemm",
    "SPLIT_REDUCTION_CONVENTIONS": "split_reduction",
    "REMOTE_STATE_CONVENTIONS": "remote_state",
    "RETRY_CONVENTIONS": "retry_paths",
    "SAMPLING_CONVENTIONS": "speculative_sampling",
    "ROUTING_CONVENTIONS": "routing_cost",
    "SEQUENCE_TOY_CONVENTIONS": "sequence_toy",
    "EC_POOL_CONVENTIONS": "ec_pool",
    "SERVER_SCOPE_CONVENTIONS": "server_scope",
    "VOICE_DEMAND_CONVENTIONS": "voice_demand",
    "TRACE_CONVENTIONS": "worker_trace",
    "SUPERNODE_CONVENTIONS": "supernode",
    "RL_SUPPLY_CONVENTIONS": "rl_supply",
    "DECISION_CONVENTIONS": "decision_request",
    "INCAST_CONVENTIONS": "incast",
    "SCALING_FIT_CONVENTIONS": "scaling_fit",
    "COPY_COORDINATES_CONVENTIONS": "copy_coordinates",
    "SM_OCCUPANCY_CONVENTIONS": "sm_occupancy",
    "UB_FABRIC_CONVENTIONS": "ub_fabric",
    "SCALING_LIFECYCLE_CONVENTIONS": "scaling_lifecycle",
    "WAN_LOSS_CONVENTIONS": "wan_loss",
    "HASH_COLLISION_CONVENTIONS": "hash_collision",
    "CLOS_CONVENTIONS": "clos_cut",
    "RAIL_CONVENTIONS": "rail_pairing",
    "SWITCH_REDUCE_CONVENTIONS": "switch_reduce",
    "TASK_GRAPH_CONVENTIONS": "task_graph",
    "PERSISTENT_CONVENTIONS": "persistent_tiles",
    "FIFO_CONVENTIONS": "slot_pipelines",
    "HOST_TRANSFER_CONVENTIONS": "slot_pipelines",
    "INPUT_SLOT_CONVENTIONS": "attention_handoff",
    "MATRIX_VECTOR_CONVENTIONS": "attention_handoff",
    "SM_BALANCE_CONVENTIONS": "sm_balance",
    "DEPLOYMENT_CONVENTIONS": "runtime_choices",
    "ZERO_STATE_CONVENTIONS": "zero_state",
    "GRADIENT_RING_CONVENTIONS": "gradient_rings",
    "MOE_LAYER_TRAINING_CONVENTIONS": "moe_layer_training",
    "GRAPH_CONVENTIONS": "runtime_choices",
    "SPECIALIZATION_CONVENTIONS": "runtime_choices",
    "TILE_ORDER_CONVENTIONS": "tile_order",
    "REQUEST_CONVENTIONS": "request_work",
    "CHIP_POWER_CONVENTIONS": "chip_power",
}


def _lazy(name):
    return ("analyses", name)


def conventions(kind):
    """The conventions of one budget kind (its analysis module imported on first use)."""
    value = CONVENTIONS[kind]
    if isinstance(value, tuple):
        import importlib

        value = CONVENTIONS[kind] = getattr(importlib.import_module(f"..analyses.{_HOME[value[1]]}", __package__),
                                            value[1])
    return value


CONVENTIONS = {
    "straggler": [
        "A synchronous step waits for its slowest rank: each rank's compute time is declared independent normal "
        "N(mu, sigma^2); E[step] = mu + sigma E[Z_(N)] + overhead, E[Z_(N)] = int z N phi(z) Phi(z)^(N-1) dz (the "
        "largest of N standard normals), by composite Simpson quadrature on [-12, 12], 4,000 intervals, rounded "
        "to 12 decimals.",
        "The mean rank waits sigma E[Z_(N)]; P(some rank beyond mu + k sigma) = 1 - Phi(k)^N. One rank at "
        "mu + k sigma: waiting costs max(mu + k sigma, mu + sigma E[Z_(N-1)]) + overhead; redistributing its work "
        "over N - 1 ranks mu N/(N-1) + sigma E[Z_(N-1)] + overhead (no migration cost); evicting it is a restart "
        "from the last checkpoint (budget checkpoint). The others wait max(0, k sigma - sigma E[Z_(N-1)]) for it; "
        "ratios: E[step] / (mu + overhead) and the mean rank's wait / mu.",
    ],
    "batch": [
        "Critical batch (McCandlish et al. 2018, arXiv:1812.06162; Kaplan et al. 2020, sec. 5.1): "
        "(S/S_min - 1)(E/E_min - 1) = 1 with B_noise = E_min/S_min: S(B) = S_min (1 + B_noise/B), "
        "E(B) = E_min (1 + B/B_noise); the noise scale is declared, not measured.",
        "The reference run (B_ref tokens per step, S_ref = ceil(D / B_ref) steps) is taken as exactly reaching "
        "the target: S_min = S_ref / (1 + B_noise/B_ref). Weak scaling keeps each card's micro-batches and the "
        "step time (compute + overhead); its speedup ceiling is S_ref / S_min. Strong scaling keeps B_ref: "
        "compute x reference cards / cards + overhead per step. Parallel efficiency 1; times declared.",
    ],
    "capacity": [
        "A = tokens x top-k assignments over E experts; the declared loads split A into whole tokens per expert "
        "(relative loads in expert order). Capacity per expert C = ceil(f x A / E) for a capacity factor f.",
        "Dropped = sum over experts of max(0, load - C) (fraction of A); padding = sum of max(0, C - load) "
        "(fraction of the E x C executed slots): the expert GEMMs compute the padding and skip the drops.",
        "With --model: expert matrix FLOPs per MoE layer = slots x 2 x 3 h I (gate, up, down); forward's "
        "ledger counts the routed tokens (no capacity limit).",
        "Executed slots over assignments E x C / A; the busiest expert runs min(max load, C) rows. Expert rows: "
        "per run of consecutive experts with one load n, each one's executed min(n, C), dropped max(0, n - C) "
        "and padded max(0, C - n). C rounds up; a floor (the book's rule) differs only when f x A / E is not whole.",
    ],
    "fusion": _lazy("FUSION_CONVENTIONS"),
    "zero-state": _lazy("ZERO_STATE_CONVENTIONS"),
    "gradient-ring": _lazy("GRADIENT_RING_CONVENTIONS"),
    "moe-layer-training": _lazy("MOE_LAYER_TRAINING_CONVENTIONS"),
    "tile-order": _lazy("TILE_ORDER_CONVENTIONS"),
    "request": _lazy("REQUEST_CONVENTIONS"),
    "chip-power": _lazy("CHIP_POWER_CONVENTIONS"),
    "quant-gemm": _lazy("QUANT_GEMM_CONVENTIONS"),
    "rmsnorm": _lazy("SPLIT_REDUCTION_CONVENTIONS"),
    "bank": _lazy("BANK_CONVENTIONS"),
    "dag": _lazy("TASK_GRAPH_CONVENTIONS"),
    "microbatch": _lazy("TASK_GRAPH_CONVENTIONS"),
    "graph": _lazy("GRAPH_CONVENTIONS"),
    "deployment": _lazy("DEPLOYMENT_CONVENTIONS"),
    "specialization": _lazy("SPECIALIZATION_CONVENTIONS"),
    "persistent": _lazy("PERSISTENT_CONVENTIONS"),
    "stream-buffer": _lazy("FIFO_CONVENTIONS"),
    "host-transfer": _lazy("HOST_TRANSFER_CONVENTIONS"),
    "attention-input": _lazy("INPUT_SLOT_CONVENTIONS"),
    "matrix-vector": _lazy("MATRIX_VECTOR_CONVENTIONS"),
    "sm-balance": _lazy("SM_BALANCE_CONVENTIONS"),
    "online-softmax": _lazy("NUMERICS_CONVENTIONS"),
    "fp8-scale": _lazy("FP8_CONVENTIONS"),
    "nic": _lazy("PACKET_CONVENTIONS"),
    "kda-chunk": _lazy("KDA_CHUNK_CONVENTIONS"),
    "batch-reuse": _lazy("BATCH_REUSE_CONVENTIONS"),
    "connections": _lazy("CONNECTION_CONVENTIONS"),
    "environments": _lazy("ENVIRONMENT_CONVENTIONS"),
    "periodic-queue": _lazy("FLUID_CONVENTIONS"),
    "feedback-queue": _lazy("FLUID_CONVENTIONS"),
    "collective-tail": _lazy("COLLECTIVE_TAIL_CONVENTIONS"),
    "ordering": _lazy("ORDERING_CONVENTIONS"),
    "completion-reclaim": _lazy("COMPLETION_CONVENTIONS"),
    "remote-state": _lazy("REMOTE_STATE_CONVENTIONS"),
    "fifo-pipeline": _lazy("FIFO_PIPELINE_CONVENTIONS"),
    "moe-dedup": _lazy("MOE_DEDUP_CONVENTIONS"),
    "staging": _lazy("STAGING_CONVENTIONS"),
    "packet-reorder": _lazy("PACKET_REORDER_CONVENTIONS"),
    "memory-pool": _lazy("MEMORY_POOL_CONVENTIONS"),
    "growing-kv": _lazy("GROWING_KV_CONVENTIONS"),
    "pipeline": _lazy("PIPELINE_CONVENTIONS"),
    "optimizer": _lazy("OPTIMIZER_CONVENTIONS"),
    "cast": _lazy("CAST_CONVENTIONS"),
    "routing-metadata": _lazy("ROUTING_METADATA_CONVENTIONS"),
    "expert-execution": _lazy("EXPERT_EXECUTION_CONVENTIONS"),
    "reshard": _lazy("RESHARD_CONVENTIONS"),
    "async-checkpoint": _lazy("ASYNC_CHECKPOINT_CONVENTIONS"),
    "handoff": _lazy("HANDOFF_CONVENTIONS"),
    "input-supply": _lazy("INPUT_SUPPLY_CONVENTIONS"),
    "ack-window": _lazy("ACK_WINDOW_CONVENTIONS"),
    "audio": _lazy("AUDIO_CONVENTIONS"),
    "image-request": _lazy("IMAGE_REQUEST_CONVENTIONS"),
    "image-stream": _lazy("IMAGE_STREAM_CONVENTIONS"),
    "retry": _lazy("RETRY_CONVENTIONS"),
    "sampling": _lazy("SAMPLING_CONVENTIONS"),
    "routing": _lazy("ROUTING_CONVENTIONS"),
    "sequence-toy": _lazy("SEQUENCE_TOY_CONVENTIONS"),
    "ec-pool": _lazy("EC_POOL_CONVENTIONS"),
    "server-scope": _lazy("SERVER_SCOPE_CONVENTIONS"),
    "voice-demand": _lazy("VOICE_DEMAND_CONVENTIONS"),
    "trace": _lazy("TRACE_CONVENTIONS"),
    "supernode": _lazy("SUPERNODE_CONVENTIONS"),
    "scaling-fit": _lazy("SCALING_FIT_CONVENTIONS"),
    "copy-coordinates": _lazy("COPY_COORDINATES_CONVENTIONS"),
    "sm-occupancy": _lazy("SM_OCCUPANCY_CONVENTIONS"),
    "ub-fabric": _lazy("UB_FABRIC_CONVENTIONS"),
    "scaling-lifecycle": _lazy("SCALING_LIFECYCLE_CONVENTIONS"),
    "rl-supply": _lazy("RL_SUPPLY_CONVENTIONS"),
    "decision": _lazy("DECISION_CONVENTIONS"),
    "incast": _lazy("INCAST_CONVENTIONS"),
    "wan-loss": _lazy("WAN_LOSS_CONVENTIONS"),
    "hash-collision": _lazy("HASH_COLLISION_CONVENTIONS"),
    "clos": _lazy("CLOS_CONVENTIONS"),
    "rail-pairing": _lazy("RAIL_CONVENTIONS"),
    "switch-reduce": _lazy("SWITCH_REDUCE_CONVENTIONS"),
    "history": [
        "Published figures only, each row with its source; null = not disclosed there (never filled in). "
        "Proxy work 6ND uses the stated parameter proxy N (a nominal dense size, or the activated "
        "parameters of an MoE) and the published tokens D: not the model's operator-by-operator training "
        "FLOPs (attention, MTP, recomputation are not in it). D/N is exact with the same N.",
        "days = GPU-hours / devices / 24 only where a device count is published: under a constant "
        "allocation (reported configuration), or a lower bound when the count is a reported maximum and "
        "both cover the same scope; never a measured date. GPU-hours on A100, H100 and H800 are not a "
        "normalized comparison; no whole-run MFU is computed (stage_mfu are a paper's stage observations).",
        "Declared operations (each null where a figure it needs is unknown): --compare growth = N_t/N_b, "
        "D_t/D_b and 6N_tD_t/(6N_bD_b), exact; --count-range days = GPU-hours / (count x 24) at the declared "
        "MAX (fewest days) and MIN counts, not a measured date; --lifecycle scoped cost = GPU-hours x price + "
        "service usage x price + other cost, in the caller's declared unit (no price is bundled; quality is "
        "not matched, so not an efficiency ranking).",
    ],
    "decode": [
        "Nominal dense model: N parameters and a storage width only (no layers, attention or head): "
        "2 N B matrix FLOPs per step, ceil(N x bits / 8) weight bytes read once for the batch, each "
        "request's declared KV history read and append written. Not a real model's count (`forward`).",
        "Compute service = FLOPs / bf16 dense peak (weights dequantized to bf16); memory service = bytes / "
        "bandwidth; the lower bound is their max (the units overlap). Capacity = the device's labelled "
        "memory in 10^9 B (or --memory-bytes) against weights + metadata + KV + workspace.",
        "Crossover batch: the smallest B with B x 2N / peak >= (weights + metadata + B x KV) / bandwidth; "
        "none when each request's KV outweighs its compute (the step never becomes compute-bound).",
    ],
    "transfer": [
        "Nominal weights: ceil(N x bits / 8) bytes; each card holds its shard's packed bytes (no scales, "
        "padding or replication); a fit is against the declared budget per card.",
        "Serial transfer = messages x startup + payload / (bandwidth x efficiency); the payload at which "
        "both terms are equal is startup x bandwidth x efficiency. A link's Gb/s is read / 8 as bytes/s "
        "in one direction.",
    ],
    "training": [
        "Nominal dense training work 6ND (no attention correction, no head distinction); D = the task "
        "tokens or K x N. Efficiency is the MFU of this numerator at the device's bf16 dense peak.",
        "Devices for a deadline: ceil(6ND / (peak x efficiency x useful seconds)), useful seconds = "
        "(deadline - unavailable days) x 86,400; for the state: ceil(state bytes x N / labelled memory); "
        "lower bounds, not a deployment.",
        "Largest N by the deadline on the fleet: floor(fleet x peak x efficiency x useful seconds / (6D)), "
        "or the integer square root of that over 6K when D = K x N; largest N its memory holds: "
        "floor(fleet x memory / state bytes per parameter).",
    ],
    "training-cost": [
        "Cost (with --price-per-device-hour, a declared price): device-hours = 6ND / (peak x efficiency) "
        "/ 3600 (the same on any fleet size), dollars = device-hours x price, per million tokens trained "
        "x 10^6 / D. No price is bundled.",
    ],
    "window": [
        "Little's law: with n transactions of s bytes in flight, each taking latency L, the delivered "
        "bandwidth is at most n s / L; with a serialized issue interval tau, at most s / tau; and at most "
        "the interface bandwidth B. The window that lets the interface run at B is B L bytes, "
        "ceil(B L / s) transactions.",
        "Payload = the model's KV cache of the requests (`kv` bytes per request x batch, one logical "
        "visit per stored K/V) or a declared one; its service takes at least payload / the bound and "
        "never less than one latency. Declared interface figures, not measurements.",
    ],
    "checkpoint": [
        "Payload per parameter: BF16 weights 2 B, BF16 gradients 2 B (unless --saved weights+optimizer), "
        "FP32 master, Adam m and v 12 B; the save blocks training for c = payload / write bandwidth.",
        "Failure rate lambda = devices / device MTBF + 1 / job MTBF (independent exponential failures; "
        "the job-level shock counted once). Young's first-order interval sqrt(2 c / lambda) minimises "
        "c / tau + lambda tau / 2 + lambda r (exact for the declared inputs); a failure loses tau / 2 of useful "
        "work on average, so a restart from the last checkpoint costs tau / 2 + r.",
        "Poisson retry model (work and saves fail, a failure loses the round, the restart r never "
        "fails): a round takes E = (exp(lambda (tau + c)) - 1)(1 / lambda + r); its optimum y = lambda tau "
        "solves y - 1 + exp(-y - lambda c) = 0 (bisection). With no failures neither has an optimum.",
    ],
    "energy": [
        "Energy ledger: each of `forward`'s byte and FLOP totals x a sourced energy: every ledger byte "
        "(weights, KV, activations read; all writes) is off-chip traffic at the HBM figure, matrix FLOPs "
        "at the FP16 FMA figure; vector FLOPs have no sourced figure and are left out (unknown). The "
        "figures are of older processes (45 nm SRAM and FMA, HBM2), not of the device: a first-order "
        "ledger, the book's chapter-4 method.",
        "Sources: L1 5 pJ/32-bit word and L2 50 pJ/word, HFMA 1.5 pJ (2 FLOPs): W. Dally, Hot Chips 2023 "
        "keynote (after Horowitz, ISSCC 2014); HBM2 3.97 pJ/bit: O'Connor et al., Fine-Grained DRAM, "
        "MICRO 2017; NVLink-C2C 1.3 pJ/bit: NVIDIA Grace Hopper architecture blog; register file and NIC: "
        "unknown. The levels table prices every weight and KV byte at one level (a ladder, not a path).",
        "Board power: TDP (device file) x a stated time of the pass; the energy the rated power draws "
        "over that time, not a measurement; beside it the ledger's average power, ledger joules / time. "
        "Per token: / (batch x new tokens); per request: / batch.",
        "Cost (with --price-per-device-hour, a declared price): devices x time / 3600 x price; per million "
        "tokens x 10^6 / tokens. No price is bundled.",
    ],
}


def _value(v):
    if isinstance(v, bool) or v is None:
        return "-" if v is None else ("yes" if v else "no")
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:.9g}"
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v))
    return str(v)


def _rows(result):
    rows, tables = [], []
    for k, v in result.items():
        if isinstance(v, dict):
            rows.extend([f"{k}: {kk}", _value(vv)] for kk, vv in v.items())
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            tables.append((k, v))
        else:
            rows.append([k, _value(v)])
    return rows, tables


def _verdict(rec):
    """The answer first: energy per token (ledger and TDP x bound) and, when priced, $ per Mtok."""
    from . import verdict as v

    r = rec["result"]
    bound = r["board"][0]
    lines = [f"ledger: {r['known_joules']:.6g} J per pass, {r['known_joules_per_request']:.6g} J per request "
             f"(known terms; unknown: {', '.join(r['unknown_terms']) or 'none'})"]
    if bound["joules"] is not None:
        lines.append(f"board power: {r['tdp_watts']} W TDP x {bound['seconds'] * 1e3:.6g} ms lower bound = "
                     f"{bound['joules_per_token']:.6g} J per token (the ledger averages "
                     f"{bound['ledger_watts']:.6g} W over that time)")
    if not r["fits_one_device"]:
        lines.append(f"the pass {v.DOES_NOT_FIT} on one {r['device']} (weights + KV): a ledger of the work, "
                     "not of a deployment")
    for c in r.get("cost", []):
        lines.append(f"cost at the {c['time']} time: ${c['dollars_per_million_tokens']:.6g} per million tokens")
    return v.block(f"Energy: {r['known_joules_per_token']:.6g} J per token (energy ledger)", lines)


def markdown(rec):
    lines = [f"# budget {rec['kind']}", ""]
    if rec["kind"] == "energy":
        lines += _verdict(rec)
    given = ", ".join(f"{k} {inline(_value(v))}" for k, v in rec["inputs"].items() if v not in (None, (), []))
    lines += [f"- Inputs: {given}"]
    for d in rec.get("devices") or ([rec["device"]] if "device" in rec else []):
        lines += [f"- Device: {inline(d['name'])} (`{inline(d['id'])}`): bf16 dense matrix peak "
                  f"{d['bf16_matrix_flops_per_s'] / 1e12:g} TFLOP/s, memory bandwidth "
                  f"{d['memory_bandwidth_bytes_per_s'] / 1e9:g} GB/s, capacity {d['capacity_bytes']:,} B"]
    rows, tables = _rows(rec["result"])
    lines += [""]
    if rows:
        lines += ["## Result", "", markdown_table(["quantity", "value"], rows, "lr"), ""]
    for name, table in tables:
        header = list(table[0])
        lines += [f"## {name}", "", markdown_table(header, [[_value(r[h]) for h in header] for r in table]), ""]
    lines += ["## Conventions", ""] + [f"- {c}" for c in rec["conventions"]]
    return "\n".join(lines) + "\n"


def csv(rec):
    import csv as _csv
    import io

    out = io.StringIO()
    w = _csv.writer(out, lineterminator="\n")
    rows, tables = _rows(rec["result"])
    if rows:
        w.writerow(["quantity", "value"])
        w.writerows(rows)
    for name, table in tables:
        w.writerow([name] + list(table[0]))
        w.writerows([[name] + [_value(r[h]) for h in table[0]] for r in table])
    return out.getvalue()

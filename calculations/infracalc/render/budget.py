"""`budget` records -> Markdown and CSV: the inputs, one quantity per row, the conventions."""

from .table import inline, markdown_table

from ..analyses.ack_window import ACK_WINDOW_CONVENTIONS
from ..analyses.audio_timing import AUDIO_CONVENTIONS
from ..analyses.collective_tail import COLLECTIVE_TAIL_CONVENTIONS
from ..analyses.completion_reclaim import COMPLETION_CONVENTIONS
from ..analyses.connection_states import CONNECTION_CONVENTIONS
from ..analyses.fifo_pipeline import FIFO_PIPELINE_CONVENTIONS
from ..analyses.environment_budget import ENVIRONMENT_CONVENTIONS
from ..analyses.fluid_queue import FLUID_CONVENTIONS
from ..analyses.fusion import FUSION_CONVENTIONS
from ..analyses.growing_kv import GROWING_KV_CONVENTIONS
from ..analyses.host_staging import STAGING_CONVENTIONS
from ..analyses.image_request import IMAGE_REQUEST_CONVENTIONS
from ..analyses.image_stream import IMAGE_STREAM_CONVENTIONS
from ..analyses.kda_chunk import KDA_CHUNK_CONVENTIONS
from ..analyses.memory_pool import MEMORY_POOL_CONVENTIONS
from ..analyses.moe_dedup import MOE_DEDUP_CONVENTIONS
from ..analyses.operation_ordering import ORDERING_CONVENTIONS
from ..analyses.packet_budget import PACKET_CONVENTIONS
from ..analyses.packet_reorder import PACKET_REORDER_CONVENTIONS
from ..analyses.training_pipeline import PIPELINE_CONVENTIONS
from ..analyses.optimizer_groups import OPTIMIZER_CONVENTIONS
from ..analyses.gradient_cast import CAST_CONVENTIONS
from ..analyses.routing_metadata import ROUTING_METADATA_CONVENTIONS
from ..analyses.checkpoint_reshard import RESHARD_CONVENTIONS
from ..analyses.checkpoint_async import ASYNC_CHECKPOINT_CONVENTIONS
from ..analyses.weight_handoff import HANDOFF_CONVENTIONS
from ..analyses.bank_mapping import BANK_CONVENTIONS
from ..analyses.quant_gemm import QUANT_GEMM_CONVENTIONS
from ..analyses.split_reduction import SPLIT_REDUCTION_CONVENTIONS
from ..analyses.remote_state import REMOTE_STATE_CONVENTIONS
from ..analyses.retry_paths import RETRY_CONVENTIONS
from ..analyses.speculative_sampling import SAMPLING_CONVENTIONS
from ..analyses.routing_cost import ROUTING_CONVENTIONS
from ..analyses.sequence_toy import SEQUENCE_TOY_CONVENTIONS
from ..analyses.ec_pool import EC_POOL_CONVENTIONS
from ..analyses.server_scope import SERVER_SCOPE_CONVENTIONS
from ..analyses.voice_demand import VOICE_DEMAND_CONVENTIONS
from ..analyses.worker_trace import TRACE_CONVENTIONS
from ..analyses.task_graph import TASK_GRAPH_CONVENTIONS
from ..analyses.persistent_tiles import PERSISTENT_CONVENTIONS
from ..analyses.slot_pipelines import FIFO_CONVENTIONS, HOST_TRANSFER_CONVENTIONS
from ..analyses.attention_handoff import INPUT_SLOT_CONVENTIONS, MATRIX_VECTOR_CONVENTIONS
from ..analyses.sm_balance import SM_BALANCE_CONVENTIONS
from ..analyses.merge_numerics import FP8_CONVENTIONS, NUMERICS_CONVENTIONS
from ..analyses.runtime_choices import DEPLOYMENT_CONVENTIONS, GRAPH_CONVENTIONS, SPECIALIZATION_CONVENTIONS

CONVENTIONS = {
    "straggler": [
        "A synchronous step waits for its slowest rank: each rank's compute time is declared independent normal "
        "N(mu, sigma^2); E[step] = mu + sigma E[Z_(N)] + overhead, E[Z_(N)] = int z N phi(z) Phi(z)^(N-1) dz (the "
        "largest of N standard normals), by composite Simpson quadrature on [-12, 12], 4,000 intervals, rounded "
        "to 12 decimals.",
        "The mean rank waits sigma E[Z_(N)]; P(some rank beyond mu + k sigma) = 1 - Phi(k)^N. One rank at "
        "mu + k sigma: waiting costs max(mu + k sigma, mu + sigma E[Z_(N-1)]) + overhead; redistributing its work "
        "over N - 1 ranks mu N/(N-1) + sigma E[Z_(N-1)] + overhead (no migration cost); evicting it is a restart "
        "from the last checkpoint (budget checkpoint).",
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
    ],
    "fusion": FUSION_CONVENTIONS,
    "quant-gemm": QUANT_GEMM_CONVENTIONS,
    "rmsnorm": SPLIT_REDUCTION_CONVENTIONS,
    "bank": BANK_CONVENTIONS,
    "dag": TASK_GRAPH_CONVENTIONS,
    "microbatch": TASK_GRAPH_CONVENTIONS,
    "graph": GRAPH_CONVENTIONS,
    "deployment": DEPLOYMENT_CONVENTIONS,
    "specialization": SPECIALIZATION_CONVENTIONS,
    "persistent": PERSISTENT_CONVENTIONS,
    "stream-buffer": FIFO_CONVENTIONS,
    "host-transfer": HOST_TRANSFER_CONVENTIONS,
    "attention-input": INPUT_SLOT_CONVENTIONS,
    "matrix-vector": MATRIX_VECTOR_CONVENTIONS,
    "sm-balance": SM_BALANCE_CONVENTIONS,
    "online-softmax": NUMERICS_CONVENTIONS,
    "fp8-scale": FP8_CONVENTIONS,
    "nic": PACKET_CONVENTIONS,
    "kda-chunk": KDA_CHUNK_CONVENTIONS,
    "connections": CONNECTION_CONVENTIONS,
    "environments": ENVIRONMENT_CONVENTIONS,
    "periodic-queue": FLUID_CONVENTIONS,
    "feedback-queue": FLUID_CONVENTIONS,
    "collective-tail": COLLECTIVE_TAIL_CONVENTIONS,
    "ordering": ORDERING_CONVENTIONS,
    "completion-reclaim": COMPLETION_CONVENTIONS,
    "remote-state": REMOTE_STATE_CONVENTIONS,
    "fifo-pipeline": FIFO_PIPELINE_CONVENTIONS,
    "moe-dedup": MOE_DEDUP_CONVENTIONS,
    "staging": STAGING_CONVENTIONS,
    "packet-reorder": PACKET_REORDER_CONVENTIONS,
    "memory-pool": MEMORY_POOL_CONVENTIONS,
    "growing-kv": GROWING_KV_CONVENTIONS,
    "pipeline": PIPELINE_CONVENTIONS,
    "optimizer": OPTIMIZER_CONVENTIONS,
    "cast": CAST_CONVENTIONS,
    "routing-metadata": ROUTING_METADATA_CONVENTIONS,
    "reshard": RESHARD_CONVENTIONS,
    "async-checkpoint": ASYNC_CHECKPOINT_CONVENTIONS,
    "handoff": HANDOFF_CONVENTIONS,
    "ack-window": ACK_WINDOW_CONVENTIONS,
    "audio": AUDIO_CONVENTIONS,
    "image-request": IMAGE_REQUEST_CONVENTIONS,
    "image-stream": IMAGE_STREAM_CONVENTIONS,
    "retry": RETRY_CONVENTIONS,
    "sampling": SAMPLING_CONVENTIONS,
    "routing": ROUTING_CONVENTIONS,
    "sequence-toy": SEQUENCE_TOY_CONVENTIONS,
    "ec-pool": EC_POOL_CONVENTIONS,
    "server-scope": SERVER_SCOPE_CONVENTIONS,
    "voice-demand": VOICE_DEMAND_CONVENTIONS,
    "trace": TRACE_CONVENTIONS,
    "history": [
        "Published figures only, each row with its source; null = not disclosed there (never filled in). "
        "Proxy work 6ND uses the stated parameter proxy N (a nominal dense size, or the activated "
        "parameters of an MoE) and the published tokens D: not the model's operator-by-operator training "
        "FLOPs (attention, MTP, recomputation are not in it). D/N is exact with the same N.",
        "days = GPU-hours / devices / 24 only where a device count is published: under a constant "
        "allocation (reported configuration), or a lower bound when the count is a reported maximum and "
        "both cover the same scope; never a measured date. GPU-hours on A100, H100 and H800 are not a "
        "normalized comparison; no whole-run MFU is computed (stage_mfu are a paper's stage observations).",
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
        "c / tau + lambda tau / 2 + lambda r.",
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

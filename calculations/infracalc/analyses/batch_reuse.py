"""Dense decode batch reuse (`budget batch-reuse`): one decode step of B requests of a dense
model, each with H tokens of history, shares one read of the weights and reads its own KV.

From the ledger of one step (`forward --tokens 1 --history H --new-kv on-chip`) at batch 1 and 2:
the weight bytes one request adds (w2 - w1: its embedding row) and the shared rest
(w1 - that), the matrix FLOPs F of one request, the KV bytes per token u, the history read H u
and the new K/V written u. Then, exactly (rationals), with peak P, bandwidth W, capacity C and
workspace S:

    per request       r = embedding row + H u + u
    traffic(B)        = shared + B r                  saved weight reads (B - 1) shared
    resident(B)       = weights + B (H + 1) u + S     (the KV at the end of the step)
    max batch         = floor((C - weights - S) / ((H + 1) u))
    KV = weights      = ceil(shared / (H u))          (none without history)
    crossover         = max(1, ceil(shared / (F W / P - r)))  where F W / P > r, else none:
                        the least B with B F / P >= (shared + B r) / W (matrix FLOPs only)
    bound(B)          = max(B F / P, traffic(B) / W), the resource that sets it, and B / bound(B)
                        tokens/s (an upper bound) where resident(B) <= C

Worked case (Qwen3-8B, H 2048, BF16, 80 GB): shared 15,136,811,008 B, r = 8,192 + 301,989,888 +
147,456; KV = weights at ceil(15,136,811,008 / 301,989,888) = 51; max batch
floor((80e9 - 16,381,470,720) / (2,049 x 147,456)) = 210; no crossover (F W / P < r)."""

from fractions import Fraction

from ..errors import UserError
from ..splits import ceil_div

BATCH_REUSE_CONVENTIONS = [
    "One decode step of B requests of one new token each, all with the same history H; BF16 weights, activations "
    "and KV unless declared; a dense model only (an MoE's experts touched grow with B).",
    "Weights: every tensor is read once per step and shared by the batch except the embedding, of which each "
    "request reads its own row (the ledger's weight bytes at batch 2 minus batch 1); resident = the whole "
    "checkpoint.",
    "KV: each request reads its H history tokens once and writes its new token's K/V once; the new K/V stay on "
    "chip for the current attention (--new-kv on-chip). Activations, intermediates and vector FLOPs are not "
    "counted: the traffic is the declared interface bytes, not a measured HBM figure.",
    "Capacity: the device's labelled memory (or --memory-bytes) holds the weights, every request's KV at the end "
    "of the step ((H + 1) tokens) and the declared workspace.",
    "Crossover: the least B at which the matrix FLOPs at the dense matrix peak take as long as the declared "
    "traffic at the memory bandwidth (none when one request's bytes per FLOP exceed the device's); KV = "
    "weights: the least B whose history reads reach the shared weight read. The bound is max(compute, memory): "
    "a lower bound on the step's time, so its tokens/s are an upper bound.",
]


def batch_reuse(*, resident, shared, embedding_row, kv_per_token, history, matrix_flops, peak, bandwidth,
                capacity, workspace, batches):
    """The `budget batch-reuse` record (module docstring): the summary, then one row per batch."""
    if resident + workspace > capacity:
        raise UserError(f"the weights ({resident:,} B) and workspace ({workspace:,} B) exceed the capacity "
                        f"{capacity:,} B")
    peak, bandwidth = Fraction(peak), Fraction(bandwidth)
    history_read = history * kv_per_token
    per_request = embedding_row + history_read + kv_per_token
    held = (history + 1) * kv_per_token
    maximum = (capacity - resident - workspace) // held
    room = Fraction(matrix_flops) * bandwidth / peak - per_request
    crossover = max(1, ceil_div(shared * room.denominator, room.numerator)) if room > 0 else None
    rows = []
    for b in batches:
        traffic = shared + b * per_request
        footprint = resident + b * held + workspace
        compute_s, memory_s = b * matrix_flops / peak, traffic / bandwidth
        bound = max(compute_s, memory_s)
        feasible = footprint <= capacity
        rows.append({"batch": b, "matrix_flops": b * matrix_flops, "shared_weight_read_bytes": shared,
                     "embedding_read_bytes": b * embedding_row, "kv_history_read_bytes": b * history_read,
                     "kv_append_write_bytes": b * kv_per_token, "declared_traffic_bytes": traffic,
                     "saved_weight_read_bytes": (b - 1) * shared, "declared_resident_bytes": footprint,
                     "capacity_feasible": feasible, "compute_s": float(compute_s), "memory_s": float(memory_s),
                     "bound_s": float(bound) if feasible else None,
                     "tokens_per_s_upper_bound": float(b / bound) if feasible else None,
                     "bound_by": "compute" if compute_s >= memory_s else "memory"})
    return {"weight_resident_bytes": resident, "shared_decode_weight_read_bytes": shared,
            "embedding_row_bytes": embedding_row, "kv_bytes_per_token": kv_per_token,
            "history_read_bytes_per_request": history_read, "bytes_per_request": per_request,
            "single_request_matrix_flops": matrix_flops, "capacity_bytes": capacity, "workspace_bytes": workspace,
            "matrix_peak_flops_per_s": float(peak), "memory_bandwidth_bytes_per_s": float(bandwidth),
            "ridge_flops_per_byte_exact": str(peak / bandwidth),
            "capacity_max_batch": maximum,
            "kv_history_equals_weights_batch": ceil_div(shared, history_read) if history_read else None,
            "compute_memory_crossover_batch": crossover,
            "crossover_fits": crossover is not None and crossover <= maximum,
            "rows": rows}

"""The kernel view: tile candidates of one GEMM or one attention head under a
declared on-chip capacity, and the bytes each moves to the next memory level.

The boundary is a working buffer (registers + shared memory, taken together as
one declared capacity) and the level below it (L2 or HBM: not said which). A
candidate fits when its reserved working bytes are at most the capacity; among
the candidates that fit, the one moving the fewest next-level bytes is named
(ties: the first given). That is the best of the candidates, not a global I/O
lower bound, and no time is predicted. Masked tails are neither read nor
written; the work of fully padded tiles is reported apart from the valid work.

GEMM [M,K] x [K,N], tiles tm x tk x tn, s_A, s_B, s_C bytes per element of the
input, weight and output, FP32 accumulator (4 B), bm = ceil(M/tm),
bk = ceil(K/tk), bn = ceil(N/tn). No input is kept from one output tile to the
next, so every output column block re-reads A and every row block re-reads B:

    A read   = s_A * M * K * bn
    B read   = s_B * K * N * bm
    C write  = s_C * M * N
    partials = 4 * M * N * (bk - 1), stored and loaded again (k-outer only: the
               accumulator leaves the buffer between K tiles; output-stationary
               keeps it for the whole K loop: 0)
    next-level bytes = A read + B read + C write + 2 * partials
    working bytes    = buffers * (s_A * tm * tk + s_B * tk * tn) + 4 * tm * tn
    padded FLOPs     = 2 * bm * bk * bn * tm * tk * tn   (valid: 2 * M * K * N)

Attention, one query head of one request (its K/V head; GQA reuse across the
heads of a group is not modelled), T queries over K keys, head dim d, s_Q bytes
per Q/O element, s_KV per K/V element; per KV block of b rows the buffer holds
`slots` K/V tiles (1: K and V take turns in one slot; 2: both resident), and per
query row its Q row, a score/probability row of b FP32 (one slot for S and P),
an FP32 partial output row and three FP32 row statistics:

    fixed      = s_KV * b * d * slots
    per query  = s_Q * d + 4 * b + 4 * d + 12
    query block a = min(T, floor((capacity - fixed) / per query))   (a < 1: no fit)

Each query block [q0, q1) scans the KV blocks it can see: all ceil(K/b) of them,
or causally (the queries are the last T of the K positions, history H = K - T,
query i sees keys 0..H+i) ceil((H + q1) / b) of them, reading the covered rows
min(K, blocks * b) of K and V once:

    KV read    = sum over query blocks of 2 * s_KV * covered * d
    Q read = O write = s_Q * T * d;  interface bytes = Q read + O write + KV read
    valid FLOPs = 4 * d * pairs (QK^T and PV; pairs T*K, or T*H + T(T+1)/2 causal)
    visited-tile FLOPs = 4 * d * sum(rows of the block * covered)
    padded FLOPs = 4 * d * a * b * (block pairs visited)
    row-state updates = per query row, one per KV block holding a key it sees:
                        T * ceil(K/b), causal sum_i ceil((H + i) / b), i = 1..T
    old-output rescales = (row-state updates - T) * d multiplications
"""

from ..errors import UserError
from ..splits import ceil_div

ACCUMULATOR_BYTES = 4   # FP32 accumulator, partial sums, S/P and row statistics
SCHEDULES = ("output-stationary", "k-outer")

TILE_CONVENTIONS = (
    "Tile view: the boundary is a working buffer of the declared capacity (registers and shared "
    "memory taken together) and the next level (L2 or HBM, not said which); masked tails are "
    "neither read nor written; no input is kept from one output tile to the next; accumulators, "
    "partial sums, scores/probabilities and row statistics are FP32. The named tile is the "
    "candidate that fits and moves the fewest next-level bytes (the first given on a tie): the best "
    "of the candidates, not a global I/O lower bound, and no time is predicted.",
)


def element_bytes(fmt, role):
    """Bytes per element of a format the tile view can count whole elements of."""
    if fmt.group or fmt.block or fmt.bits % 8:
        raise UserError(f"the tile view counts whole elements: {role} format {fmt.name} has "
                        f"sub-byte values or scales; use a plain format (bf16, fp16, fp32, fp8, int8)")
    return fmt.bits // 8


def padded_flops(m, k, n, tile):
    """2 * bm tm * bk tk * bn tn: the work of every tile that holds a valid element, padding included."""
    tm, tk, tn = tile
    return 2 * ceil_div(m, tm) * tm * ceil_div(k, tk) * tk * ceil_div(n, tn) * tn


def gemm_tile(m, k, n, tile, *, a_bytes, b_bytes, c_bytes, schedule="output-stationary", buffers=1):
    """One GEMM tile candidate (tm, tk, tn): its next-level bytes and working bytes."""
    tm, tk, tn = tile
    bm, bk, bn = ceil_div(m, tm), ceil_div(k, tk), ceil_div(n, tn)
    a_read = a_bytes * m * k * bn
    b_read = b_bytes * k * n * bm
    c_write = c_bytes * m * n
    partials = ACCUMULATOR_BYTES * m * n * (bk - 1) if schedule == "k-outer" else 0
    next_level = a_read + b_read + c_write + 2 * partials
    return {
        "tile": [tm, tk, tn], "m_blocks": bm, "k_blocks": bk, "n_blocks": bn, "output_tiles": bm * bn,
        "working_bytes": buffers * (a_bytes * tm * tk + b_bytes * tk * tn) + ACCUMULATOR_BYTES * tm * tn,
        "a_read_bytes": a_read, "b_read_bytes": b_read, "c_write_bytes": c_write,
        "partial_store_bytes": partials, "partial_load_bytes": partials,
        "next_level_bytes": next_level,
        "valid_matrix_flops": 2 * m * k * n,
        "padded_matrix_flops": padded_flops(m, k, n, tile),
        "arithmetic_intensity_flops_per_byte": 2 * m * k * n / next_level,
    }


def _choose(rows, capacity, cost):
    for r in rows:
        r["fits"] = r.get("working_bytes") is not None and r["working_bytes"] <= capacity
    fitting = [r for r in rows if r["fits"]]
    best = min(fitting, key=lambda r: r[cost]) if fitting else None   # min keeps the first on a tie
    return fitting, best


def gemm_tiles(m, k, n, tiles, capacity, *, a_bytes, b_bytes, c_bytes, schedule="output-stationary",
               buffers=1):
    """Every candidate of `tiles`, which fit `capacity`, and the best that fits."""
    rows = [gemm_tile(m, k, n, t, a_bytes=a_bytes, b_bytes=b_bytes, c_bytes=c_bytes, schedule=schedule,
                      buffers=buffers) for t in tiles]
    fitting, best = _choose(rows, capacity, "next_level_bytes")
    return {
        "kind": "gemm", "capacity_bytes": capacity, "schedule": schedule, "input_buffers": buffers,
        "one_read_write_bytes": a_bytes * m * k + b_bytes * k * n + c_bytes * m * n,
        "candidates": rows, "fitting_candidates": len(fitting),
        "best_tile": best["tile"] if best else None,
        "best_next_level_bytes": best["next_level_bytes"] if best else None,
    }


def _ceil_sum(count, b):
    """sum of ceil(j / b) for j = 1..count."""
    q, r = divmod(count, b)
    return b * q * (q + 1) // 2 + r * (q + 1)


def attention_tile(queries, keys, head_dim, kv_block, capacity, *, causal, q_bytes, kv_bytes, slots=1):
    """One KV-block candidate b for one head: its query block and next-level bytes."""
    t, kk, d, b = queries, keys, head_dim, kv_block
    fixed = kv_bytes * b * d * slots
    per_query = q_bytes * d + ACCUMULATOR_BYTES * (b + d) + 3 * ACCUMULATOR_BYTES
    a = min(t, (capacity - fixed) // per_query) if capacity >= fixed else 0
    if a < 1:
        return {"kv_block": b, "query_block": None, "working_bytes": None}
    history = kk - t if causal else 0
    kv_read = tile_pairs = visits = 0
    for q0 in range(0, t, a):
        q1 = min(q0 + a, t)
        blocks = ceil_div(history + q1, b) if causal else ceil_div(kk, b)
        covered = min(kk, blocks * b)
        visits += blocks
        kv_read += 2 * kv_bytes * covered * d
        tile_pairs += (q1 - q0) * covered
    pairs = t * history + t * (t + 1) // 2 if causal else t * kk
    updates = (_ceil_sum(history + t, b) - _ceil_sum(history, b)) if causal else t * ceil_div(kk, b)
    q_read = q_bytes * t * d
    return {
        "kv_block": b, "query_block": a, "query_blocks": ceil_div(t, a), "kv_block_visits": visits,
        "working_bytes": q_bytes * a * d + fixed + ACCUMULATOR_BYTES * (a * b + a * d + 3 * a),
        "q_read_bytes": q_read, "o_write_bytes": q_read, "kv_read_bytes": kv_read,
        "interface_bytes": 2 * q_read + kv_read,
        "valid_matrix_flops": 4 * d * pairs,
        "visited_tile_matrix_flops": 4 * d * tile_pairs,
        "padded_matrix_flops": 4 * d * a * b * visits,
        "row_state_updates": updates,
        "old_output_rescales": (updates - t) * d,
    }


def attention_tiles(queries, keys, head_dim, kv_blocks, capacity, *, causal, q_bytes, kv_bytes, slots=1):
    """Every KV-block candidate, which fit `capacity`, and the best that fits."""
    rows = [attention_tile(queries, keys, head_dim, b, capacity, causal=causal, q_bytes=q_bytes,
                           kv_bytes=kv_bytes, slots=slots) for b in kv_blocks]
    fitting, best = _choose(rows, capacity, "interface_bytes")
    return {
        "kind": "attention", "capacity_bytes": capacity, "kv_slots": slots,
        "one_read_write_bytes": 2 * q_bytes * queries * head_dim + 2 * kv_bytes * keys * head_dim,
        "candidates": rows, "fitting_candidates": len(fitting),
        "best_kv_block": best["kv_block"] if best else None,
        "best_interface_bytes": best["interface_bytes"] if best else None,
    }

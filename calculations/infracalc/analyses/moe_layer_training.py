"""One MoE layer's fixed-selection training step (`budget moe-layer-training`): the forward and the
main-loss VJP of a top-k (or hash-routed) MoE layer with shared experts, every count a closed form
of the shapes (the book's chapter-10 DeepSeek-V4-Flash MoE training reference,
bojieli/ai-infra-book:calculations/src/infra_calc/topics/v4_moe_training.py).

r rows (batch x tokens) of width h; E routed experts of width f, top-k, a = r k assignments; one
shared expert of width S on every row. The selection is fixed (a declared histogram): `balanced`
lets row i pick experts (i k + j) mod E, j < k; `concentrated` sends every row to experts 0..k-1.
An expert with n rows runs [n, h] x [h, f] twice (gate, up) and [n, f] x [f, h] once:

  forward matrix  6 n h f,  backward (dX and dW of each product) 12 n h f;
  router          2 r h E forward, 4 r h E backward; shared 6 r h S and 12 r h S.

Scalar work (the reference graph's elementwise arithmetic; F = a f + r S expert elements):
  SiLU and product 2F; the route weight on the routed F-wide activation a f; the output
  accumulation (a + r) h; backward SwiGLU 6F; the route-weight adjoint a (3f - 1); the input
  branches and scatter (2a + 3r) h; the router r (3k - 1) forward (+ r E scores unless hashed) and
  r (5k - 1 + 3E) backward.
Non-FLOP operations: F sigmoids, 3F clamp comparisons, 2F backward mask selects, r top-k rows (0
when hashed) or a hash lookups, a score gathers and bincount entries, visited x r x k candidate
tests. Parameters: router E h, routed E 3 h f, shared 3 h S, selection bias E (none when hashed),
a hash table of vocab x k int32 entries (not parameters), the visited experts' 3 h f each.
Saved (an FP32 mathematical save set, not an allocator peak): X 4rh, the selected ids a x (8 B
top-k int64, 4 B hash int32), dispatch token/slot pairs 16a, logits and scores 4rE each, selected
probabilities and weights 4a each, the denominator 4r, gate/sigmoid/up 12F, the unweighted product
4F, the routed weighted down input 4af, two clip masks 2F (bool). Zeroed: the output and the input
gradient, 4rh each.
"""

SCOPE = ("fixed selection: the top-k / hash choice and its boundary are not differentiated; auxiliary "
         "losses, bias updates, quantization and communication are outside this layer ledger")


def histogram(rows, experts, top_k, routing):
    """Rows per expert of a declared fixed selection (module docstring), in closed form: balanced
    assignments t = i k + j run over 0 .. a - 1 (a = r k), so expert x gets floor(a / E) of them plus
    one when x < a mod E; concentrated, experts j < k get all r rows."""
    if routing == "balanced":
        whole, extra = divmod(rows * top_k, experts)
        return [whole + (x < extra) for x in range(experts)]
    return [rows if x < top_k else 0 for x in range(experts)]


def moe_layer_training(*, rows, hidden, expert_width, shared_width, experts, top_k, hashed, vocab, routing):
    """The `budget moe-layer-training` record (module docstring)."""
    r, h, f, s, e, k = rows, hidden, expert_width, shared_width, experts, top_k
    a = r * k
    hist = histogram(r, e, k, routing)
    visited = sum(n > 0 for n in hist)
    elements = a * f + r * s
    router = {"forward_matrix_flops": 2 * r * h * e, "backward_matrix_flops": 4 * r * h * e,
              "forward_scalar_flops": r * (3 * k - 1) + (0 if hashed else r * e),
              "backward_scalar_flops": r * (5 * k - 1 + 3 * e),
              "forward_softplus_calls": r * e, "forward_sqrt_calls": r * e, "backward_sigmoid_calls": r * e}
    scalar = {"forward_silu_and_product_flops": 2 * elements, "forward_route_weight_product_flops": a * f,
              "forward_output_accumulation_flops": (a + r) * h, "backward_swiglu_flops": 6 * elements,
              "backward_route_weight_flops": a * (3 * f - 1),
              "backward_input_branches_and_scatter_flops": (2 * a + 3 * r) * h}
    saved = {"x_fp32": 4 * r * h, "selected_ids": (4 if hashed else 8) * a, "dispatch_token_slot_int64": 16 * a,
             "router_logits_fp32": 4 * r * e, "router_scores_fp32": 4 * r * e,
             "selected_probabilities_fp32": 4 * a, "selected_weights_fp32": 4 * a, "selected_denominator_fp32": 4 * r,
             "gate_sigmoid_up_fp32": 12 * elements, "unweighted_product_fp32": 4 * elements,
             "routed_weighted_down_input_fp32": 4 * a * f, "clip_masks_bool": 2 * elements}
    expert_rows = [{"expert": i, "rows": n, "gate_up_input": [n, h], "gate_up_weight": [f, h], "down_input": [n, f],
                    "down_weight": [h, f], "forward_matrix_flops": 6 * n * h * f,
                    "backward_matrix_flops": 12 * n * h * f} for i, n in enumerate(hist)]
    return {
        "rows": r, "assignments": a, "visited_experts": visited, "routing": routing,
        "selection": "hash table" if hashed else "top-k with selection bias",
        "router": router,
        "shared_forward_matrix_flops": 6 * r * h * s, "shared_backward_matrix_flops": 12 * r * h * s,
        "scalar": scalar,
        "nonflop": {"expert_sigmoid_calls": elements, "clamp_comparisons": 3 * elements,
                    "backward_clamp_mask_selects": 2 * elements, "topk_selection_rows": 0 if hashed else r,
                    "hash_lookup_entries": a if hashed else 0, "selected_score_gathers": a,
                    "bincount_entries": a, "candidate_tests": visited * r * k},
        "selected_id_bytes_each": 4 if hashed else 8,
        "parameters": {"router": e * h, "routed_experts": e * 3 * h * f, "shared_experts": 3 * h * s,
                       "selection_bias": 0 if hashed else e, "hash_table_int32_entries": vocab * k if hashed else 0,
                       "visited_expert_gradient": visited * 3 * h * f},
        "saved": saved, "saved_total_bytes": sum(saved.values()),
        "zeroed_output_bytes": 4 * r * h, "zeroed_input_gradient_bytes": 4 * r * h,
        "totals": {"forward_matrix_flops": router["forward_matrix_flops"] + 6 * (a * f + r * s) * h,
                   "backward_matrix_flops": router["backward_matrix_flops"] + 12 * (a * f + r * s) * h,
                   "forward_scalar_flops": router["forward_scalar_flops"]
                   + sum(v for key, v in scalar.items() if key.startswith("forward_")),
                   "backward_scalar_flops": router["backward_scalar_flops"]
                   + sum(v for key, v in scalar.items() if key.startswith("backward_"))},
        "scope": SCOPE,
        "histogram": hist,
        "experts": expert_rows,
    }


MOE_LAYER_TRAINING_CONVENTIONS = [
    "One MoE layer, fixed selection (balanced: row i picks (i k + j) mod E; concentrated: experts 0..k-1): per "
    "expert of n rows 6 n h f forward and 12 n h f backward matrix FLOPs (dX and dW of gate, up, down); router "
    "2 r h E / 4 r h E; shared 6 r h S / 12 r h S.",
    "Scalar counts of the reference graph (the book's v4_moe_training): SiLU and product 2F, route weight a f, "
    "output accumulation (a + r) h, backward SwiGLU 6F, route-weight adjoint a (3f - 1), input branches and scatter "
    "(2a + 3r) h, router r (3k - 1) (+ r E unless hashed) forward and r (5k - 1 + 3E) backward; F = a f + r S.",
    "Saved bytes are an FP32 mathematical save set (ids int64 from top-k, int32 from the hash table), not an "
    "allocator peak; the selection boundary, auxiliary losses, quantization and communication are not in it.",
]

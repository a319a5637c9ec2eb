"""A synchronous pipeline-parallel training step (`budget pipeline`): GPipe or 1F1B event times
from declared stage durations, the bubble, and the activation buffers each stage holds.

P stages of L/P consecutive decoder layers (the embedding on the first, the final norm, head and
loss on the last), M micro-batches of b sequences of T tokens. Every duration is declared: F_s, B_s
(forward, backward of one micro-batch on stage s), a_s, g_s (the activation s -> s+1 and the
gradient s+1 -> s of one micro-batch), U_s (the optimizer update) and a setup time. Nothing is
derived from FLOPs or a device.

Events and their dependencies (one compute stream per stage, one serial resource per link):

    F(s,m) after the stage's previous event and A(s-1,m);   A(s,m) after F(s,m)
    B(s,m) after the stage's previous event, F(s,m) and G(s+1,m)
    G(s,m) after B(s,m);   U(s) after every B;   everything after the setup.

Stage orders: GPipe runs F(0..M-1) then B(M-1..0) (Huang et al. 2019); 1F1B (PipeDream-Flush,
Narayanan et al. 2021) runs w_s = min(P-1-s, M) warm-up forwards, then F(m+w_s), B(m) pairs, then
the remaining backwards in micro-batch order. Links: `independent` gives each boundary and
direction its own link; `shared` is one half-duplex resource for every transfer. The schedule is
deterministic list scheduling: repeatedly start the ready event with the earliest possible start
(its resource free, its dependencies done), ties by kind (activation, gradient, backward, forward,
update), stage and micro-batch, so a link with several messages waiting sends the lowest-numbered
first. With independent links every start is the max-plus recurrence start = max(resource free,
dependencies' ends); when each link is no slower than the stage feeding it (a_s <= F_s,
g_s <= B_{s+1}) it carries its messages in order and GPipe has the flow-shop closed form

    gradient ready = setup + sum_s (F_s + B_s) + sum_s (a_s + g_s) + (M - 1) (max_s F_s + max_s B_s),

so with equal stages (M + P - 1)(F + B) + (P - 1)(a + g); with transfers of zero duration and equal
stages both schedules give setup + (M + P - 1)(F + B), the bubble (P - 1) / (M + P - 1).
Step makespan = the last update's end; idle_s = gradient ready - setup -
M (F_s + B_s); bubble = total idle / (P x (gradient ready - setup)); exposed transfer = makespan -
the makespan rescheduled with every transfer of zero duration (a counterfactual, not link busy time).

Buffers (declared reservations, the book's chapter-10 rule; FP32 objects, 4 B per element):

    saved(s,m): [start of F(s,m), end of B(s,m)), per layer, b sequences of T tokens:
        input and post-attention RMSNorm z and r: 2 (T h + T);  q/k norms (if the model has them)
        T n_q d + T n_q and T n_kv d + T n_kv;  attention probabilities n_q T (T + 1) / 2 (causal
        pairs);  SwiGLU gate, sigmoid, up 3 T I (recompute-silu keeps gate and up, 2 T I, and holds
        a workspace of two T x I FP32 vectors, 8 b T I bytes, over B(s,m)); the last stage adds the
        final norm T h + T and the softmax probabilities T V. Plus declared extra bytes per stage.
    activation send [end of F(s,m), end of A(s,m)) on s, receive [start of A(s,m), start of
        F(s+1,m)) on s+1: BF16 b T h bytes; gradient send/receive likewise with B: FP32 4 b T h bytes.

GEMM inputs (`--gemm-inputs`, the book's pipeline-gemm rule; FP32, 4 B per element): each linear's
weight gradient needs its forward input and each bilinear attention matmul both operands, so a
layer adds 7 saved-input identities beyond the nonlinear objects: the two RMSNorms' weighted
outputs T h (the norm's z is pre-gamma, not the GEMM input), Q and K after norm and RoPE T n_q d
and T n_kv d, V T n_kv d, the attention context T n_q d and the SwiGLU product a u T I; the head
adds the final norm's weighted output T h (36 x 7 + 1 = 253 for Qwen3-8B). `save` keeps them all
with the micro-batch's saved set; `recompute-products` keeps Q, K, V and the context and rebuilds
the weighted norm outputs and a u (one multiply per element, T (2h + I) per layer and T h for the
head) just before their backward GEMMs, holding one product buffer, the largest of T h and T I,
over each backward.

A stage's peak is the largest sum of its reservations live at one instant (an interval holds
[start, end): releases come before allocations at equal times). Weights, optimizer state, GEMM
inputs, temporaries and allocator workspace are outside this ledger: a partial peak, not a device's.
"""

from fractions import Fraction
from math import lcm

from ..errors import UserError

FP32 = 4
KIND_ORDER = {"setup": 0, "A": 1, "G": 2, "B": 3, "F": 4, "U": 5}   # tie order of equal starts


def layer_saved_elements(layer, tokens, policy="save"):
    """FP32 elements one sequence of `tokens` keeps in one decoder layer (module docstring);
    the layer must be RMSNorm + full causal softmax attention + SwiGLU MLP (Qwen3 / Llama dense)."""
    from ..blocks.attention import Attention
    from ..blocks.basic import Residual, RMSNorm
    from ..blocks.mlp import GatedMLP

    t, total = tokens, 0
    for b in layer.blocks:
        kind = type(b)
        if kind is RMSNorm:
            total += t * b.width + t
        elif kind is Attention and b.window is None and b.chunk is None and not b.softcap and not b.sinks:
            if b.qk_norm:
                total += (t * b.heads * b.head_dim + t * b.heads) + (t * b.kv_heads * b.head_dim + t * b.kv_heads)
            total += b.heads * t * (t + 1) // 2
        elif kind is GatedMLP and b.act == "swiglu":
            total += (2 if policy == "recompute-silu" else 3) * t * b.inter
        elif kind is not Residual:
            raise UserError(f"budget pipeline's saved-object rule covers RMSNorm, full causal softmax attention "
                            f"and SwiGLU layers (Qwen3, Llama dense); this model has {b.label or kind.__name__}")
    return total


def gemm_input_elements(layer, tokens, policy):
    """(FP32 elements kept, saved-input identities, elements rebuilt before backward, largest rebuilt
    product) of one decoder layer's GEMM inputs per sequence under `policy` (module docstring)."""
    from ..blocks.attention import Attention
    from ..blocks.basic import RMSNorm
    from ..blocks.mlp import GatedMLP

    t, kept, identities, rebuilt, largest = tokens, 0, 0, 0, 0
    for b in layer.blocks:
        if isinstance(b, RMSNorm) or isinstance(b, GatedMLP):
            n = t * (b.width if isinstance(b, RMSNorm) else b.inter)   # weighted norm output, or a u
            identities += 1
            if policy == "save":
                kept += n
            else:
                rebuilt, largest = rebuilt + n, max(largest, n)
        elif isinstance(b, Attention):
            kept += 2 * t * b.heads * b.head_dim + 2 * t * b.kv_heads * b.head_dim   # Q, context; K, V
            identities += 4
    return kept, identities, rebuilt, largest


def head_saved_elements(arch, tokens):
    """The last stage's extra FP32 elements per sequence: final norm z and r, softmax probabilities."""
    return tokens * arch.hidden_size + tokens + tokens * arch.vocab_size


def stage_order(schedule, stage, stages, microbatches):
    """[(kind, micro-batch)] in the order stage `stage` runs them (module docstring)."""
    m = microbatches
    if schedule == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in reversed(range(m))]
    warm = min(stages - 1 - stage, m)
    order = [("F", i) for i in range(warm)]
    for i in range(m - warm):
        order += [("F", i + warm), ("B", i)]
    return order + [("B", i) for i in range(m - warm, m)]


def _nodes(*, schedule, link, stages, microbatches, forward, backward, act, grad, update, setup):
    """{(kind, stage, micro-batch): (duration, resource, dependencies)} of one step."""
    p, m = stages, microbatches
    nodes = {("setup", 0, 0): (setup, "setup", ())}
    for s in range(p):
        previous = ("setup", 0, 0)
        for kind, i in stage_order(schedule, s, p, m):
            deps = [previous]
            if kind == "F" and s:
                deps.append(("A", s - 1, i))
            if kind == "B":
                deps.append(("F", s, i))
                if s < p - 1:
                    deps.append(("G", s + 1, i))
            nodes[(kind, s, i)] = ((forward if kind == "F" else backward)[s], ("compute", s), tuple(deps))
            previous = (kind, s, i)
        nodes[("U", s, 0)] = (update[s], ("compute", s), tuple(("B", q, i) for q in range(p) for i in range(m)))
    for s in range(p - 1):
        for i in range(m):
            nodes[("A", s, i)] = (act[s], "link" if link == "shared" else ("A", s), (("F", s, i),))
            nodes[("G", s + 1, i)] = (grad[s], "link" if link == "shared" else ("G", s), (("B", s + 1, i),))
    return nodes


def list_schedule(nodes, order=None):
    """{key: (start, end)}: start the ready event with the earliest possible start (its resource
    free, its dependencies ended), ties by `order` of the key's kind (default KIND_ORDER), then the
    key's other fields; nonpreemptive. Durations may be integers (ticks of a common unit, as
    `pipeline` passes them) or Fractions."""
    order = order or KIND_ORDER
    waiting = {k: len(set(deps)) for k, (_, _, deps) in nodes.items()}
    users = {}
    for k, (_, _, deps) in nodes.items():
        for d in set(deps):
            users.setdefault(d, []).append(k)
    ready = {k: 0 for k, n in waiting.items() if n == 0}   # ready event -> its dependencies' last end
    free, times = {}, {}
    while ready:
        k = min(ready, key=lambda k: (max(free.get(nodes[k][1], 0), ready[k]), order[k[0]], k[1], k[2]))
        duration, resource, _ = nodes[k]
        begin = max(free.get(resource, 0), ready.pop(k))
        times[k] = (begin, begin + duration)
        free[resource] = begin + duration
        for u in users.get(k, ()):
            waiting[u] -= 1
            if not waiting[u]:
                ready[u] = max(times[d][1] for d in nodes[u][2])
    return times


def peak(intervals):
    """(largest live sum, first instant it is reached) of [(start, end, bytes)]: an interval holds
    [start, end), so at equal times releases come first; empty intervals hold nothing."""
    events = sorted([(a, 1, n) for a, b, n in intervals if b > a] + [(b, 0, -n) for a, b, n in intervals if b > a])
    live, best, when = 0, 0, 0
    for t, _, n in events:
        live += n
        if live > best:
            best, when = live, t
    return best, when


def pipeline(*, arch, schedule, link, stages, microbatches, microbatch_size, tokens, forward, backward, act, grad,
             update, setup, activations="save", gemm_inputs="none", extra_saved=None):
    """The step's events, per-stage buffers and totals (module docstring). Durations are Fractions
    of a second; forward/backward/update per stage, act/grad per boundary."""
    p, m, b, t = stages, microbatches, microbatch_size, tokens
    layers = len(arch.layers)
    if layers % p:
        raise UserError(f"{layers} layers do not split into {p} equal stages (choose --stages dividing {layers})")
    per = layers // p
    extra_saved = extra_saved or (0,) * p
    saved, gemm_saved, identities, rebuilt, largest = [], [], 0, 0, 0
    for s in range(p):
        stage_layers = arch.layers[s * per:(s + 1) * per]
        elements = sum(layer_saved_elements(layer, t, activations) for layer in stage_layers)
        gemm = 0
        if gemm_inputs != "none":
            for layer in stage_layers:
                kept, ids, rb, big = gemm_input_elements(layer, t, gemm_inputs)
                gemm, identities, rebuilt, largest = gemm + kept, identities + ids, rebuilt + rb, max(largest, big)
        if s == p - 1:
            elements += head_saved_elements(arch, t)
            if gemm_inputs != "none":   # the final norm's weighted output, the head's input
                head = t * arch.hidden_size
                identities += 1
                if gemm_inputs == "save":
                    gemm += head
                else:
                    rebuilt, largest = rebuilt + head, max(largest, head)
        gemm_saved.append(FP32 * b * gemm)
        saved.append(FP32 * b * (elements + gemm) + extra_saved[s])
    inter = {blk.inter for layer in arch.layers for blk in layer.blocks if hasattr(blk, "inter")}
    workspace = (2 * FP32 * b * t * max(inter) if activations == "recompute-silu" else 0) + FP32 * b * largest
    act_bytes, grad_bytes = 2 * b * t * arch.hidden_size, FP32 * b * t * arch.hidden_size

    # exact times as integers of 1/unit s (unit = the denominators' lcm): the schedule compares integers
    unit = lcm(*(Fraction(x).denominator for x in (*forward, *backward, *act, *grad, *update, setup)))

    def ticks(values):
        return tuple(int(Fraction(x) * unit) for x in values)

    def seconds(t):
        return float(Fraction(t, unit))

    forward, backward, act, grad, update, (setup,) = map(ticks, (forward, backward, act, grad, update, (setup,)))
    durations = dict(schedule=schedule, link=link, stages=p, microbatches=m, forward=forward, backward=backward,
                     act=act, grad=grad, update=update, setup=setup)
    times = list_schedule(_nodes(**durations))
    zero = list_schedule(_nodes(**dict(durations, act=(0,) * (p - 1), grad=(0,) * (p - 1))))
    ready = max(end for k, (_, end) in times.items() if k[0] == "B")
    makespan = max(end for _, end in times.values())
    zero_makespan = max(end for _, end in zero.values())

    held = [[] for _ in range(p)]
    for s in range(p):
        for i in range(m):
            f, bw = times[("F", s, i)], times[("B", s, i)]
            held[s].append((f[0], bw[1], saved[s]))
            if workspace:
                held[s].append((bw[0], bw[1], workspace))
    for s in range(p - 1):
        for i in range(m):
            a, g = times[("A", s, i)], times[("G", s + 1, i)]
            held[s].append((times[("F", s, i)][1], a[1], act_bytes))
            held[s + 1].append((a[0], times[("F", s + 1, i)][0], act_bytes))
            held[s + 1].append((times[("B", s + 1, i)][1], g[1], grad_bytes))
            held[s].append((g[0], times[("B", s, i)][0], grad_bytes))

    busy = [m * (forward[s] + backward[s]) for s in range(p)]
    span = ready - setup
    rows = []
    for s in range(p):
        top, when = peak(held[s])
        rows.append({"stage": s, "layers": f"{s * per}-{(s + 1) * per - 1}",
                     "forward_backward_s": seconds(busy[s]), "idle_s": seconds(span - busy[s]),
                     "update_s": seconds(update[s]), "saved_bytes_per_microbatch": saved[s],
                     "gemm_input_bytes_per_microbatch": gemm_saved[s],
                     "peak_reserved_bytes": top, "peak_at_s": seconds(when)})
    events = [{"event": f"{k[0]}:{k[1]}" + ("" if k[0] == "U" else f":{k[2]}"),
               "start_s": seconds(times[k][0]), "end_s": seconds(times[k][1])}
              for k in sorted(times, key=lambda k: (times[k][0], KIND_ORDER[k[0]], k[1], k[2])) if k[0] != "setup"]
    return {
        "model": arch.id, "schedule": schedule, "link": link, "activations": activations,
        "stages": p, "layers_per_stage": per, "microbatches": m, "microbatch_size": b, "tokens_per_sequence": t,
        "sequences": m * b, "tokens": m * b * t,
        "activation_bytes_per_message": act_bytes, "gradient_bytes_per_message": grad_bytes,
        "forward_messages": (p - 1) * m, "backward_messages": (p - 1) * m,
        "transfer_payload_bytes": (p - 1) * m * (act_bytes + grad_bytes),
        "gemm_inputs": gemm_inputs, "gemm_input_identities": identities,
        "rebuilt_product_flops_per_microbatch": b * rebuilt,
        "recompute_workspace_bytes": workspace,
        "gradient_ready_s": seconds(ready), "step_makespan_s": seconds(makespan),
        "zero_transfer_makespan_s": seconds(zero_makespan), "exposed_transfer_s": seconds(makespan - zero_makespan),
        "useful_device_s": seconds(sum(busy)), "bubble_fraction": float(1 - Fraction(sum(busy), p * span))
        if span else 0.0,
        "stage_rows": rows, "events": events,
    }


PIPELINE_CONVENTIONS = [
    "Declared durations, not derived from FLOPs or a device: F_s, B_s per micro-batch and stage, a_s, g_s per "
    "boundary transfer, U_s the update, a setup. GPipe: all forwards, then backwards in reverse micro-batch "
    "order; 1F1B (PipeDream-Flush): min(P-1-s, M) warm-up forwards, F/B pairs, cool-down backwards. One "
    "compute stream per stage; independent links (one per boundary and direction) or one shared half-duplex "
    "link; deterministic earliest-start list scheduling, ties by kind (transfer, backward, forward, update), "
    "stage, micro-batch. Events: F:s:m, B:s:m, A:s:m (activation s -> s+1), G:s:m (gradient s -> s-1), U:s.",
    "Gradient ready = the last backward's end; makespan adds the updates. Idle per stage = gradient ready - "
    "setup - M (F_s + B_s); bubble = summed idle / (P x (gradient ready - setup)); exposed transfer = makespan "
    "minus the makespan rescheduled with zero-duration transfers (a counterfactual, not link busy time).",
    "Buffers are declared reservations (FP32 4 B per element): a micro-batch's saved objects from its forward's "
    "start to its backward's end (norm z and r, q/k norm, causal attention probabilities n_q T(T+1)/2, SwiGLU "
    "gate/sigmoid/up, on the last stage the final norm and T x V softmax; recompute-silu keeps gate and up and "
    "holds 8 b T I bytes over the backward); BF16 activation and FP32 gradient messages on the sender from "
    "producer end to transfer end, on the receiver from transfer start to consumer start. Peak = the largest "
    "live sum (releases first at equal times); weights, optimizer state, GEMM inputs (unless --gemm-inputs) and "
    "workspaces are outside it: a partial ledger, not a device's peak.",
    "--gemm-inputs save adds each layer's 7 FP32 GEMM inputs to the saved set (weighted outputs of both norms T h, "
    "Q and context T n_q d, K and V T n_kv d, the SwiGLU product T I; the head's input T h); recompute-products "
    "keeps Q, K, V and the context, rebuilds the other products (one multiply per element) before their backward "
    "GEMMs and holds the largest, max(T h, T I), over each backward. The declared times must include the rebuild.",
]

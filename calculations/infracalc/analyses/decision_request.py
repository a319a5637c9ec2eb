"""A decision request against an LLM request on one device (the book's chapter-8 decision requests): a
state and Q typed questions read as Q output distributions of one forward pass, no token generated,
priced in GPU-seconds at a declared rental price and against a declared list price. Exact fractions.

Decision path (P input tokens, Q questions): one prefill whose head runs at the Q answer positions,

    F = F_prefill(P, last-position head) + (Q - 1) F_head,      F_head = the head's FLOPs at one position,
    compute = F / (peak x e_c),   memory = weight bytes read / (bandwidth x e_b),
    latency = max(compute, memory),   GPU-seconds = compute (a batch of such prefills shares the weights).

LLM path for each output length G: the same prefill, then s = G - 1 decode steps at the midpoint history
H = P + floor(s / 2), each step max(F_step / (peak e_c), (weights + KV read) / (bandwidth e_b)):

    latency = decision latency + s x step(batch 1),   GPU-seconds = decision compute + s x step(batch B) / B.

Price: USD = GPU-seconds x (price per GPU-hour / 3600); per million input tokens x 10^6 / P; a declared list
price L per million input tokens gives L P / 10^6 per request and its ratio to the decision path's floor.

A second model's decision path (the book: DeepSeek-V4.1-Flash under its CED schedule) is priced the same way
from its own prefill's matrix FLOPs F' (its ledger, its head at the last position only): GPU-seconds
F' / (peak e_c), its $ per million input tokens, F' / F and the list price over that floor. An escalation
price E per request (what the request costs on the LLM it would escalate to) gives the escalation share
that doubles the cost, L P / 10^6 / E: the fraction of requests that may escalate before the bill doubles.

Worked case: F = 10^12 FLOPs at peak 10^15 and e_c = 1/2 take 1/500 s of compute; 10^10 weight bytes at
10^12 B/s and e_b = 1/2 take 1/50 s; the latency is 1/50 s, the GPU-seconds 1/500, at $2 an hour 1/900,000 $.
A second model with F' = 3/2 10^12 takes 3/1000 GPU-seconds, 1/600,000 $, F' / F = 3/2; with P = 1000 and
L = 1 $/M the list price 1/1000 $ is 600 times that floor, and E = 1/20 $ gives an escalation share 1/50.
"""

from fractions import Fraction


def _money(seconds, price_per_hour):
    return seconds * price_per_hour / 3600


def _pair(name, value, places):
    return {name: round(float(value), places), f"{name}_exact": str(value)}


def step_seconds(flops, read_bytes, compute_rate, byte_rate):
    """(max(FLOPs / compute rate, bytes / byte rate), 'compute' | 'memory')."""
    c, m = Fraction(flops) / compute_rate, Fraction(read_bytes) / byte_rate
    return (c, "compute") if c >= m else (m, "memory")


def decision_request(*, input_tokens, questions, prefill_flops, head_flops, weight_bytes, llm_steps, decode_batch,
                     peak, bandwidth, compute_efficiency, memory_efficiency, price_per_gpu_hour,
                     list_price_per_million=None, compare=None, escalation_price=None):
    """llm_steps: [(G, H, (FLOPs, read bytes) at batch 1, (FLOPs, read bytes) at the decode batch)];
    compare: None or {"model", "schedule", "matrix_flops"} of a second model's decision prefill;
    escalation_price: None or the declared USD per request of the LLM escalated to (needs the list price)."""
    compute_rate, byte_rate = peak * compute_efficiency, bandwidth * memory_efficiency
    flops = prefill_flops + (questions - 1) * head_flops
    compute, memory = Fraction(flops) / compute_rate, Fraction(weight_bytes) / byte_rate
    latency = max(compute, memory)
    usd = _money(compute, price_per_gpu_hour)
    out = {"input_tokens": input_tokens, "questions": questions, "decision_matrix_flops": flops,
           "head_flops_per_position": head_flops, "decision_weight_read_bytes": weight_bytes,
           **_pair("decision_compute_s", compute, 9), **_pair("decision_memory_s", memory, 9),
           "decision_bound": "compute" if compute >= memory else "memory",
           **_pair("decision_latency_s", latency, 9), **_pair("decision_gpu_s", compute, 9),
           **_pair("decision_usd", usd, 12), **_pair("decision_usd_per_million_input", usd * 10**6 / input_tokens, 9)}
    if list_price_per_million is not None:
        listed = list_price_per_million * input_tokens / 10**6
        out.update({**_pair("list_usd_per_request", listed, 12), **_pair("list_over_decision_floor", listed / usd, 9)})
    if compare is not None:
        other = Fraction(compare["matrix_flops"]) / compute_rate
        other_usd = _money(other, price_per_gpu_hour)
        out.update({"compare_model": compare["model"], "compare_schedule": compare["schedule"],
                    "compare_matrix_flops": compare["matrix_flops"], **_pair("compare_gpu_s", other, 9),
                    **_pair("compare_usd", other_usd, 12),
                    **_pair("compare_usd_per_million_input", other_usd * 10**6 / input_tokens, 9),
                    **_pair("compare_flops_over_decision", Fraction(compare["matrix_flops"], flops), 9)})
        if list_price_per_million is not None:
            out.update(_pair("list_over_compare_floor", listed / other_usd, 9))
    if escalation_price is not None:
        out.update({**_pair("escalation_usd_per_request", escalation_price, 12),
                    **_pair("escalation_share_doubling_cost", listed / escalation_price, 9)})
    rows = []
    for total, history, single, batched in llm_steps:
        steps = total - 1
        one, one_bound = step_seconds(*single, compute_rate, byte_rate)
        many, many_bound = step_seconds(*batched, compute_rate, byte_rate)
        llm_latency, gpu = latency + steps * one, compute + steps * many / decode_batch
        rows.append({"output_tokens": total, "decode_steps": steps, "midpoint_history": history,
                     "step_s_batch_1": round(float(one), 9), "step_bound_batch_1": one_bound,
                     "step_s_batch": round(float(many), 9), "step_bound_batch": many_bound,
                     "step_read_bytes_batch": batched[1],
                     "latency_s": round(float(llm_latency), 9), "latency_s_exact": str(llm_latency),
                     "gpu_s": round(float(gpu), 9), "gpu_s_exact": str(gpu),
                     "gpu_s_over_decision": round(float(gpu / compute), 6),
                     "usd": round(float(_money(gpu, price_per_gpu_hour)), 12)})
    out["llm_path"] = rows
    return out


DECISION_CONVENTIONS = [
    "Decision request: one forward over the state and the questions, the head at each question's last "
    "position, no token generated and no KV kept. GPU-seconds = matrix FLOPs / (bf16 dense peak x compute "
    "efficiency) (a compute-bound prefill's share, whatever the batch); its latency = max(compute, weights "
    "read / (bandwidth x memory efficiency)). The efficiencies are declared inputs, not measurements.",
    "LLM path: the same prefill, then G - 1 decode steps at the midpoint history P + floor((G - 1) / 2), "
    "each step max(compute, (weights + KV read, the new key included) / effective bandwidth); latency at "
    "batch 1, GPU-seconds at the declared decode batch shared by its requests.",
    "Compared model (optional): its own decision prefill (its ledger, under the named schedule, the head at the "
    "last position only), priced as GPU-seconds = matrix FLOPs / (bf16 dense peak x compute efficiency) on the "
    "same device: a compute share only (no single-device latency: its weights need not fit one device).",
    "Prices are declared: a rental price per GPU-hour, an optional list price per million input tokens and an "
    "optional escalation price per request (the LLM a decision escalates to); not quotes. Escalation share that "
    "doubles the cost = list price per request / escalation price. No quality, queueing or batching gain of the "
    "prefill is modelled.",
]

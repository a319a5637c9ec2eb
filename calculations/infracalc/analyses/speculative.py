"""Speculative decoding: a draft model proposes k tokens, the target verifies them.

Model (Leviathan, Kalman and Matias, "Fast Inference from Transformers via
Speculative Decoding", ICML 2023): each drafted token is accepted with
probability alpha, independently; a verification step yields the accepted
prefix plus one token from the target, in expectation
    E = (1 - alpha^(k+1)) / (1 - alpha)    (k + 1 when alpha = 1)
tokens. One verification step at history h costs k draft decode steps
(histories h .. h+k-1, summed in closed form) plus one target pass over k + 1
new tokens after h cached ones. The G - 1 tokens after the prefill take
(G - 1) / E steps; each is charged the cost at the mid-generation history
P + (G - 1) // 2 (exact where costs are linear in the history and no operator
changes bound between the ends). Draft and target share the device; both
prefill the prompt.
"""

from .. import ledger
from ..errors import UserError
from . import decode_sum
from .decode import cached_tokens, phase_record
from .memory import cache_room, request_bytes, requests_in


def expected_tokens(alpha, k):
    """E = (1 - alpha^(k+1)) / (1 - alpha): tokens one verification step yields."""
    if alpha >= 1:
        return float(k + 1)
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def verification_step(target, draft, w, wd, history, k, r):
    """(draft record, verify record) of one verification step at `history`."""
    drafting = phase_record(decode_sum.decode_pieces(draft, wd, history, history + k - 1), r)
    return drafting, verify_record(target, w, history, k, r)


def verify_record(target, w, history, k, r):
    """The target's pass over k + 1 tokens after `history` cached ones."""
    return phase_record(decode_sum.single(ledger.operators(target, w.replace(tokens=k + 1, history=history))), r)


def _step_record(history, drafting, verify, e):
    time = drafting["time_s"] + verify["time_s"]
    return {
        "history": history,
        "draft_s": drafting["time_s"],
        "verify_s": verify["time_s"],
        "time_s": time,
        "tpot_s": time / e,
        "draft_matrix_flops": drafting["linear_flops"] + drafting["attention_flops_causal"],
        "verify_matrix_flops": verify["linear_flops"] + verify["attention_flops_causal"],
        "verify_bound": verify["bound"],
    }


def speculative(target, draft, w, wd, device, input_len, output_len, alpha, k, r, plain):
    """The speculative-decoding record; `plain` is the ordinary decode record."""
    if target.vocab_size != draft.vocab_size:
        raise UserError(f"draft model {draft.id} has vocabulary {draft.vocab_size:,}, the target "
                        f"{target.vocab_size:,}: speculative decoding needs a shared tokenizer")
    if not 0 <= alpha <= 1:
        raise UserError(f"acceptance rate must be in [0, 1], got {alpha}")
    e = expected_tokens(alpha, k)
    steps = output_len - 1
    mid = input_len + steps // 2
    first = _step_record(input_len, *verification_step(target, draft, w, wd, input_len, k, r), e)
    middle = _step_record(mid, *verification_step(target, draft, w, wd, mid, k, r), e)
    draft_prefill = phase_record(decode_sum.single(ledger.operators(draft, wd.replace(tokens=input_len))), r)
    context = cached_tokens(input_len, output_len) + k   # drafted tokens are cached until rejected
    weights = target.weight_bytes(w) + draft.weight_bytes(wd)
    per_request = request_bytes(target, w, context) + request_bytes(draft, wd, context)
    plain_tpot = plain["latency"]["tpot_mean_s"]
    decode_s = steps / e * middle["time_s"] if steps else 0.0
    return {
        "draft_model": draft.id,
        "draft_params": draft.params,
        "acceptance_rate": alpha,
        "draft_tokens": k,
        "expected_tokens_per_step": e,
        "verification_steps": steps / e,
        "first_step": first,
        "mid_step": middle,
        "ttft_s": plain["prefill"]["time_s"] + draft_prefill["time_s"],
        "decode_s": decode_s,
        "tpot_s": middle["tpot_s"] if steps else None,
        "speedup_vs_plain_decode": plain_tpot / middle["tpot_s"] if steps and plain_tpot else None,
        "draft_weight_bytes": draft.weight_bytes(wd),
        "cache_bytes_per_request": per_request,
        "max_requests": requests_in(cache_room(device.memory_bytes, weights), per_request),
        "assumptions": [
            "Each drafted token is accepted with probability alpha, independently "
            "(Leviathan et al. 2023); expected tokens per verification step "
            "E = (1 - alpha^(k+1)) / (1 - alpha).",
            "A verification step = k draft decode steps + one target pass over k + 1 tokens; "
            f"every step is charged its cost at history {mid} (mid-generation), "
            "decode time = (G - 1) / E steps.",
            "Draft and target run on the same device, one after the other; both prefill the "
            "prompt (TTFT includes the draft's prefill); drafted tokens are cached until "
            "rejected (k extra tokens per request in the capacity).",
            "No tree or multi-candidate drafting; sampling and acceptance tests are not costed.",
        ],
    }

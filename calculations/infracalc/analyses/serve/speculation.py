"""Speculative decoding in a serving system: expected tokens per verify step with an
acceptance rate per draft position, the draft's and the verify step's cost from the
ledger, and the best draft length.

A draft proposes k tokens; the target verifies them in one pass over k + 1 tokens and
keeps the accepted prefix plus one token of its own. With a_i the probability that draft
token i is accepted given tokens 1..i-1 were (the i.i.d. case a_i = a is Leviathan,
Kalman and Matias, ICML 2023), the step yields j + 1 tokens with j accepted, so

    P(at least j accepted) = a_1 a_2 ... a_j,
    E(k) = sum_{j=0}^{k} a_1 ... a_j = 1 + a_1 + a_1 a_2 + ... + a_1 ... a_k,

which is (1 - a^(k+1)) / (1 - a) for a constant a (speculative.expected_tokens). A
position beyond the given list keeps the last rate. A verify step at history h and batch
B costs k draft decode steps (histories h .. h + k - 1) plus one target pass over k + 1
tokens (analyses/speculative.verification_step, both from the ledger); TPOT = its time /
E(k), charged at the mid-generation history. The best k minimises TPOT.

A DFlash drafter (load/dflash.py) drafts all k tokens in one forward of a block of k + 1
positions (analyses/serve/dflash.py) instead of k decode steps: at history h it fuses the
target features of the k + 1 tokens a fully accepted previous round commits (the most
fusion work) and attends to h context rows, so its round is dflash.round_time_s(h - (k+1),
k + 1, k + 1); k runs to the drafter's block_size - 1.
"""

from .. import speculative
from ...summation import plain_sum


def rates_for(alphas, k):
    """a_1 .. a_k: the given per-position rates, the last repeated beyond the list."""
    return [alphas[min(i, len(alphas) - 1)] for i in range(k)]


def at_least(alphas, k):
    """[P(at least j accepted) for j = 0..k]: the running products of the rates."""
    out, p = [1.0], 1.0
    for a in rates_for(alphas, k):
        p *= a
        out.append(p)
    return out


def expected_tokens(alphas, k):
    """E(k) = sum_{j=0}^{k} a_1 ... a_j: tokens one verify step yields."""
    return plain_sum(at_least(alphas, k))


def position_table(alphas, k):
    """Per position j = 0..k: P(exactly j accepted) = P(>= j) - P(>= j + 1) (all k: P(>= k))."""
    ge = at_least(alphas, k) + [0.0]
    return [{"accepted": j, "tokens": j + 1, "at_least_probability": ge[j],
             "probability": ge[j] - ge[j + 1]} for j in range(k + 1)]


def dflash_round_s(drafter, history, k, r):
    """One DFlash round drafting k tokens at `history` (module docstring)."""
    from . import dflash

    new = min(k + 1, history)
    return dflash.round_time_s(drafter, history - new, new, k + 1, r)


def draft_lengths(target, draft, w, wd, input_len, output_len, alphas, max_k, r, plain_step_s):
    """One row per k = 1 .. max_k: E(k), the draft's and the verify step's time (operator-sum
    estimate, at the mid-generation history), TPOT and the speed-up over a plain decode step.
    `draft` is a causal draft architecture or a DFlash Drafter (then wd is unused)."""
    from ...load.dflash import Drafter

    mid = input_len + (output_len - 1) // 2
    rows = []
    for k in range(1, max_k + 1):
        if isinstance(draft, Drafter):
            verify = speculative.verify_record(target, w, mid, k, r)
            draft_s = dflash_round_s(draft, mid, k, r)
        else:
            drafting, verify = speculative.verification_step(target, draft, w, wd, mid, k, r)
            draft_s = drafting["time_s"]
        e = expected_tokens(alphas, k)
        step = draft_s + verify["time_s"]
        rows.append({"draft_tokens": k, "expected_tokens_per_step": e, "draft_s": draft_s,
                     "verify_s": verify["time_s"], "step_s": step, "tpot_s": step / e,
                     "speedup_vs_plain": plain_step_s / (step / e) if step else None,
                     "verify_bound": verify["bound"]})
    return rows


def best(rows):
    """The row with the smallest TPOT (ties: the shorter draft)."""
    return min(rows, key=lambda row: (row["tpot_s"], row["draft_tokens"]))


def mtp_drafter(target):
    """The draft architecture of the target's multi-token-prediction module: the main embedding,
    the MTP input (blocks.mtp), one decoder layer of the target's last layer's kind (DeepSeek-V3:
    one full decoder layer per module, README_WEIGHTS), shared_head.norm (the target's final norm
    kind) and the main output head; each draft token is one pass through it. Where the adapter
    builds the module (DeepSeek-V4: HCMTPInput and the layer of compress_ratios[n]), that layer
    runs on the embedding rows, and the target's hc_head and norm kind end it."""
    from ...arch import Layer
    from ...blocks.mtp import MTPInput
    from ...errors import UserError

    if not any(getattr(p, "name", "") == "MTP" for p in target.parts):
        raise UserError(f"{target.id}: no multi-token-prediction module is modelled (num_nextn_predict_layers of "
                        "DeepSeek-V3/V4 and GLM-4.5 is; Qwen3.5's mtp_num_hidden_layers is not yet); "
                        "give --draft-model instead")
    part = next(p for p in target.parts if getattr(p, "name", "") == "MTP")
    if part.module is not None:   # DeepSeek-V4: the adapter's MTP block, on the plain embedding rows
        from ...blocks.basic import Embedding
        emb = target.embedding
        return target.replace(id=f"{target.id}-mtp", layers=(part.module,), parts=(),
                              embedding=Embedding(vocab=emb.vocab, hidden=emb.hidden),
                              notes=(f"One call of {target.id}'s multi-token-prediction module: {part.note}.",))
    layer = Layer(blocks=(MTPInput(hidden=target.hidden_size),) + tuple(target.layers[-1].blocks))
    return target.replace(id=f"{target.id}-mtp", layers=(layer,), parts=())

"""One server against two for the same cards: per-card capacity and a declared serial communication
path of a dense model's decode forwards (the book's chapter-1 UB scope exercise).

C cards either form one server running TP C, or two servers running TP C/2 x PP 2. Each card holds
its stage's weights (`kv`'s layout rules), the KV of B requests at the last step's history
H + S positions for its layers and KV heads, and a declared workspace; it fits when that is at most
a declared capacity. A decode forward of B tokens (hidden rows of h bf16 values, m = 2 h B bytes)
runs, on local collective edges of a server (startup a_l, bandwidth b_l):

    the vocabulary-parallel embedding and every layer's attention and FFN outputs: ring all-reduces
        over the p TP ranks, 2 (p - 1) startups and 2 (p - 1) m / p bytes each;
    the last-position logits: an all-gather of FP32 logits, p - 1 startups, (p - 1) 4 V B / p bytes;
    the sampled token to the first stage's ranks: a tree broadcast, ceil(log2 p) startups of 4 B B each;

and across servers one shared egress (a_r, b_r), used serially: each pipeline hop sends p copies of
the hidden rows (p m bytes, one startup) and the sampled token returns (4 B bytes, one startup).
Each operation costs startups x a + bytes / b; a forward is their sum; S forwards S times that.
The two-server path is cheaper above the remote bandwidth payload / (T_1 - L_2 - calls a_r) and
below the remote startup (T_1 - L_2 - payload / b_r) / calls (T_1 the one-server path, L_2 the
two-server local part). Communication only: compute, overlap and queueing are not in it, and a
candidate that does not fit is not a choice. Exact fractions.
"""

from fractions import Fraction


def _log2_ceil(p):
    return (p - 1).bit_length()


def decode_collectives(*, layers_per_stage, tp, pp, hidden, vocab, batch):
    """[(name, stage, layer, remote, startups, bytes)] of one decode forward."""
    m = 2 * hidden * batch
    ring = (2 * (tp - 1), Fraction(2 * (tp - 1) * m, tp))
    ops = [("vocabulary_embedding_reduce", 0, None, False) + ring]
    layer = 0
    for stage, count in enumerate(layers_per_stage):
        for _ in range(count):
            ops.append(("attention_output_reduce", stage, layer, False) + ring)
            ops.append(("ffn_output_reduce", stage, layer, False) + ring)
            layer += 1
        if stage + 1 < pp:
            ops.append(("pipeline_hidden_transfer", stage, None, True, 1, tp * m))
    ops.append(("last_position_logits_all_gather", pp - 1, None, False, tp - 1,
                Fraction((tp - 1) * 4 * vocab * batch, tp)))
    if pp > 1:
        ops.append(("selected_token_to_first_stage", pp - 1, None, True, 1, 4 * batch))
    rounds = _log2_ceil(tp)
    ops.append(("selected_token_first_stage_broadcast", 0, None, False, rounds, rounds * 4 * batch))
    return [op for op in ops if op[3] or op[4]]


def operation_seconds(startups, size, startup, bandwidth):
    """startups x startup time + bytes / bandwidth."""
    return startups * startup + Fraction(size) / bandwidth


def path_seconds(ops, local_startup, local_bw, remote_startup, remote_bw):
    """(local seconds, remote payload bytes, remote startups, remote seconds) of one forward."""
    local = sum((operation_seconds(n, size, local_startup, local_bw) for _, _, _, remote, n, size in ops if not remote),
                Fraction(0))
    payload = sum(size for *_, remote, n, size in ops if remote)
    calls = sum(n for *_, remote, n, size in ops if remote)
    return local, payload, calls, calls * remote_startup + Fraction(payload) / remote_bw


def crossover(single_s, local_two_s, payload, calls, remote_startup, remote_bw):
    """The remote bandwidth above and startup below which the two-server path is cheaper (None if none)."""
    room = single_s - local_two_s - calls * remote_startup
    startup = (single_s - local_two_s - Fraction(payload) / remote_bw) / calls if calls else None
    return (Fraction(payload) / room if room > 0 else None), (startup if startup is not None and startup >= 0 else None)


SERVER_SCOPE_CONVENTIONS = [
    "Candidates: one server of C cards at TP C against two servers at TP C/2 x PP 2. Per card: its stage's "
    "weights (kv's layout), the KV of the requests at the last step's history + decode steps for its layers and "
    "KV heads, and the declared workspace, against a declared capacity; a candidate that does not fit is not a "
    "choice, whatever its communication.",
    "A decode forward's path: ring all-reduces of the embedding and of each layer's attention and FFN outputs "
    "(2 (p - 1) startups, 2 (p - 1) m / p bytes), an FP32 logits all-gather, a tree broadcast of the sampled token "
    "(4 B per request) on local edges; pipeline hops (p copies of the hidden rows) and the token's return on one "
    "shared inter-server egress, used serially. startups x startup time + bytes / bandwidth, summed; communication "
    "only (no compute, overlap or queueing). Declared link figures; exact fractions.",
]

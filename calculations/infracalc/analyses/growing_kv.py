"""A growing KV history kept on remote replicas during decode: per-step reads of the history, appends
committed to every replica, the serial communication skeleton (the book's chapter-6 growing remote KV
example). Closed forms in the step count; exact bytes and fractions of seconds.

u = batch x the model's KV bytes per position (full-attention layers only; recurrent and convolution
state stays local), P prompt positions already produced, N decode steps, c replicas, one sender link of
B bytes/s with a startup s per message (a message of x > 0 bytes takes s + x / B, all serial):

    initial copy   c (s + P u / B),
    all remote     step n reads (P + n) u from one replica, then sends u to each replica (all commit
                   before step n + 1): N s + (N P + N (N - 1) / 2) u / B + N c (s + u / B);
                   step n commits at initial + (n + 1)(s + c (s + u / B)) + ((n + 1) P + n (n + 1) / 2) u / B,
    remote prefix  the prompt stays remote, new positions stay local: N (s + P u / B), no appends,
    full-attention QK/PV FLOPs  batch x 4 heads head_dim x layers x (N (P + 1) + N (N - 1) / 2).

Not a decode time: compute, overlap, control messages and failures are not modelled.
"""

from fractions import Fraction


def growing_kv(*, kv_per_position, attention_flops_per_pair, state_bytes, batch, prompt, steps, copies, remote_all,
               bandwidth, startup_ns, tail_budget_bytes):
    u, p, n, c = batch * kv_per_position, prompt, steps, copies
    s, per_byte = Fraction(startup_ns, 10**9), Fraction(1, bandwidth)
    pairs = n * p + n * (n - 1) // 2                      # sum over steps of the prior positions
    initial = c * (s + p * u * per_byte) if p else Fraction(0)
    if remote_all:
        token = n * s + pairs * u * per_byte + n * c * (s + u * per_byte)
        remote_read, appends, per_replica = pairs * u, n * c * u, (p + n) * u
    else:
        token = n * (s + p * u * per_byte) if p else Fraction(0)
        remote_read, appends, per_replica = n * p * u, 0, p * u
    tail = 0 if remote_all else n * u
    out = {
        "kv_bytes_per_position": kv_per_position,
        "full_attention_qk_pv_flops": batch * attention_flops_per_pair * (n * (p + 1) + n * (n - 1) // 2),
        "initial_copy_network_bytes": c * p * u, "prior_history_read_bytes": pairs * u,
        "remote_prior_read_bytes": remote_read, "local_prior_read_bytes": pairs * u - remote_read,
        "current_kv_operand_bytes": n * u, "append_replica_network_bytes": appends,
        "total_network_bytes": c * p * u + remote_read + appends,
        "remote_final_bytes_per_replica": per_replica, "remote_physical_final_bytes": c * per_replica,
        "local_tail_final_bytes": tail, "local_fixed_state_bytes": batch * state_bytes,
        "local_append_buffer_bytes": u if n else 0, "final_unique_history_bytes": (p + n) * u,
        "local_tail_fits": tail <= tail_budget_bytes,
        "communication_skeleton_s": str(initial + token), "initial_copy_s": str(initial), "token_communication_s": str(token),
    }
    if remote_all and n:
        out["first_step_commit_s"] = str(step_commit(initial, 0, p, u, c, s, per_byte))
        out["last_step_commit_s"] = str(step_commit(initial, n - 1, p, u, c, s, per_byte))
    return out


def step_commit(initial, step, p, u, c, s, per_byte):
    """All replicas committed after step `step` (all-remote placement)."""
    k = step + 1
    return initial + k * (s + c * (s + u * per_byte)) + (k * p + step * k // 2) * u * per_byte


GROWING_KV_CONVENTIONS = [
    "Full-attention KV only (BF16 per layer and KV head, `kv`'s bytes per position); recurrent and convolution "
    "state stays on the compute node (`kv`'s state per request). The prompt's KV is copied to each replica first; "
    "each step reads all prior positions from one replica (all remote) or the prompt only, the new positions "
    "staying local (remote prefix), and the all-remote placement sends the new position to every replica, all "
    "committing before the next step. One serial sender link, startup + bytes / bandwidth per message.",
    "A communication skeleton, not a decode time: compute time, overlap, control messages, ACKs, retries and "
    "failures are not modelled; no consistency protocol is claimed. The local tail is checked against a declared "
    "budget (new full-attention KV only, not the machine's memory).",
]

"""One request's matrix work and state from the ledger (`budget request`; the book's four-model
request, chapter 2): a restored prefix of S cached tokens, P new input tokens, G returned tokens,
B requests in lockstep.

    input stage   one pass of P tokens over the S cached (its head on the last position gives the
                  first returned token); with sequential input, P one-token passes at histories
                  S .. S + P - 1 (a reference implementation without cached-prefix chunk prefill)
    decode        G - 1 one-token steps at histories S + P .. S + P + G - 2 (the last returned
                  token is never fed back), summed in closed form (analyses/decode_sum)
    forward calls 1 (or P) + G - 1;  retained positions S + P + G - 1
    states        restored = the cache and state of S tokens (0 without a prefix), final = of
                  S + P + G - 1, growth = final - restored (per request, as `kv` counts them)
    weights       uniform BF16 comparison = 2 bytes x parameters (not the checkpoint's formats)

Matrix work of a pass = linear + attention FLOPs, attention counted over its causal pairs, or
(`attention="rectangular"`) over the whole query-key rectangle a reference einsum computes. With
`kda="block"` a Kimi Delta Attention layer's `delta_rule` rows leave the matrix work (the recurrence
is scalar arithmetic for one token) and a pass of T > 1 tokens is charged the KDA block
algorithm's matrix work instead (analyses/kda_chunk at the layer's chunk size).

Worked case: Qwen3-8B, S 125, P 3, G 4: input 43,143,987,200 + decode 45,638,615,040 =
88,782,602,240 FLOPs in 4 calls; 131 positions x 147,456 B = 19,316,736 B final, 18,432,000 B
restored (125 positions), growth 884,736 B.
"""

from .. import ledger
from . import decode_sum
from .kda_chunk import kda_chunk
from .memory import request_bytes

ATTENTION_COUNTS = ("causal", "rectangular")
KDA_WORK = ("ledger", "block")

REQUEST_CONVENTIONS = [
    "A request: S restored cached tokens, P new input tokens, G returned tokens; the input stage is one "
    "pass of P tokens over S (or, with --sequential-input, P one-token passes), its last logits give the "
    "first returned token, then G - 1 one-token decode steps; the last returned token is not fed back, so "
    "S + P + G - 1 positions are retained.",
    "Matrix work = linear + attention FLOPs (attention over its causal pairs; --attention-count rectangular: "
    "the whole query-key rectangle). --kda-work block: the KDA recurrence as scalar (its delta_rule rows "
    "leave the matrix work) and a pass of T > 1 tokens charged the block algorithm's matrix work "
    "(budget kda-chunk). States are `kv`'s per-request cache and recurrent state; the weight comparison "
    "is 2 bytes per parameter, not the checkpoint's formats. Not a latency and not HBM traffic.",
]


def _kda_blocks(arch):
    return [b for layer in arch.layers for b in layer.blocks if getattr(b, "kind", None) == "KDA"]


def pass_matrix(arch, rows, attention, kda, tokens, batch):
    """Matrix FLOPs of operator rows (one pass, or steps summed) under the two conventions;
    `tokens`: the pass's new tokens per request (1 for decode steps)."""
    t = ledger.op_totals(rows)
    work = t["linear_flops"] + t["attention_flops_" + attention]
    if kda == "block":
        work -= sum(op.matrix_flops for op in rows if op.name == "delta_rule")
        blocks = _kda_blocks(arch)
        if blocks and tokens > 1:
            b = blocks[0]
            work += kda_chunk(batch=batch, tokens=tokens, chunk=b.chunk, heads=b.heads, d=b.head_dim,
                              layers=len(blocks))["block_matrix_flops"]
    return work


def request(arch, w, *, prefix, inputs, outputs, attention="causal", kda="ledger", sequential=False):
    """The request record: stage work, calls, positions and states (w: batch and formats)."""
    one = w.replace(tokens=1, logits="last")
    if sequential:
        steps = decode_sum.decode_pieces(arch, one, prefix, prefix + inputs - 1)
        input_work = pass_matrix(arch, decode_sum.summed_ops(steps), attention, kda, 1, w.batch)
        input_calls = inputs
    else:
        rows = ledger.operators(arch, w.replace(tokens=inputs, history=prefix, logits="last"))
        input_work = pass_matrix(arch, rows, attention, kda, inputs, w.batch)
        input_calls = 1
    first, last = prefix + inputs, prefix + inputs + outputs - 2
    decode_work = 0
    if last >= first:
        steps = decode_sum.decode_pieces(arch, one, first, last)
        decode_work = pass_matrix(arch, decode_sum.summed_ops(steps), attention, kda, 1, w.batch)
    retained = prefix + inputs + outputs - 1
    restored = request_bytes(arch, w, prefix) if prefix else 0
    final = request_bytes(arch, w, retained)
    return {"prefix_tokens": prefix, "input_tokens": inputs, "output_tokens": outputs, "batch": w.batch,
            "input_forward_calls": input_calls, "decode_forward_calls": outputs - 1,
            "forward_calls": input_calls + outputs - 1, "retained_positions": retained,
            "input_matrix_flops": input_work, "decode_matrix_flops": decode_work,
            "request_matrix_flops": input_work + decode_work,
            "restored_state_bytes": restored, "final_state_bytes": final, "state_growth_bytes": final - restored,
            "uniform_bf16_weight_bytes": 2 * arch.params}

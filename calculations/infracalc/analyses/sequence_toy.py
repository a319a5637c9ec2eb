"""Work and state of a toy recurrent network against a toy causal Transformer over the same tokens
(the countable part of the book's chapter-2 sequence dependencies; no values are evaluated).

Both have L layers of width D; the Transformer has one head and a feed-forward width F. A
multiply-add is 2 FLOPs; a call evaluates the listed query positions (zero-based) of one sequence.

    RNN, per position and layer: input and state projections, 2 x 2 D^2;
    Transformer, per call of n positions and layer: Q, K, V, O 4 x 2 n D^2 and the feed-forward
        2 x 2 n D F (weights), and per position t the causal scores and values 2 x 2 D (t + 1);
    parameters: RNN 2 L D^2, Transformer L (4 D^2 + 2 D F), the shared input table V D.

Modes over T known tokens and one supplied next token: the T positions in one call; every prefix
recomputed (calls of 1 .. T positions); state reused (T calls of one position each); the next token
by recomputing the T + 1 prefix or from the reused state. State after n tokens: the RNN keeps L D
hidden values (overwritten each token), the Transformer 2 L n D keys and values (growing by 2 L D);
8-byte (binary64) elements. With unit cost per layer-token cell the RNN's dependency chain is
L + T - 1 cells long (depth and time), the Transformer's L (all positions of a layer in parallel).
"""

ELEMENT_BYTES = 8


def call_flops(model, positions, layers, d, f):
    """(weight, attention) matrix FLOPs of one call over the zero-based positions."""
    n = len(positions)
    if model == "rnn":
        return layers * n * 2 * 2 * d * d, 0
    weights = layers * (4 * 2 * n * d * d + 2 * 2 * n * d * f)
    return weights, layers * sum(2 * 2 * d * (t + 1) for t in positions)


def modes(tokens):
    return (("known_tokens", [list(range(tokens))]),
            ("every_prefix_recomputed", [list(range(k)) for k in range(1, tokens + 1)]),
            ("state_reused", [[t] for t in range(tokens)]),
            ("next_token_prefix_recomputed", [list(range(tokens + 1))]),
            ("next_token_state_reused", [[tokens]]))


def sequence_toy(*, tokens, layers, d, f, vocabulary):
    work = []
    for model in ("rnn", "transformer"):
        for mode, calls in modes(tokens):
            w = a = 0
            for positions in calls:
                cw, ca = call_flops(model, positions, layers, d, f)
                w, a = w + cw, a + ca
            work.append({"model": model, "mode": mode, "matrix_flops": w + a, "weight_matrix_flops": w,
                         "attention_matrix_flops": a})
    states = []
    for model in ("rnn", "transformer"):
        for n in range(1, tokens + 2):
            held = layers * d if model == "rnn" else 2 * layers * n * d
            written = layers * d if model == "rnn" else 2 * layers * d
            states.append({"model": model, "after_tokens": n, "state_elements": held,
                           "state_bytes": ELEMENT_BYTES * held, "written_bytes": ELEMENT_BYTES * written,
                           "growth_bytes": 0 if model == "rnn" else ELEMENT_BYTES * written,
                           "next_token_history_read_bytes": ELEMENT_BYTES * held,
                           "next_token_current_kv_read_bytes": 0 if model == "rnn" else ELEMENT_BYTES * written})
    return {"rnn_parameters": 2 * layers * d * d, "transformer_parameters": layers * (4 * d * d + 2 * d * f),
            "input_table_parameters": vocabulary * d, "rnn_critical_path_cells": layers + tokens - 1,
            "transformer_critical_path_cells": layers, "work": work, "states": states}


SEQUENCE_TOY_CONVENTIONS = [
    "Toy networks (no checkpoint): an RNN h = tanh(x Wx + h Wh) and a one-head causal Transformer (Q, K, V, O, "
    "tanh feed-forward), L layers of width D, no norms, biases or head. Matrix FLOPs 2 m n k: RNN 2 x 2 D^2 per "
    "position and layer; Transformer 8 n D^2 + 4 n D F per call and layer plus 4 D (t + 1) per causal position t.",
    "State: the RNN overwrites L D hidden values per token, the Transformer keeps 2 L n D keys and values; "
    "binary64 elements. Unit-cell dependency chains: L + T - 1 (RNN) against L (Transformer). Values are not "
    "evaluated.",
]

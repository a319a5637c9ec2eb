"""Work and state of a toy recurrent network against a toy causal Transformer over the same tokens
(the book's chapter-2 sequence dependencies).

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

Values (T below the vocabulary and at most 64): both networks evaluated in binary64 with fixed
teaching weights (below), the last position's output after each prefix of tokens 0 .. T, once by
recomputing the prefix and once from the reused state (RNN hidden vectors, Transformer K/V cache),
and their largest absolute difference (outputs printed to 12 significant digits: the last binary
digits of tanh and exp differ between platforms' math libraries).
"""

from ..summation import plain_sum

ELEMENT_BYTES = 8


def call_flops(model, positions, layers, d, f):
    """(weight, attention) matrix FLOPs of one call over the zero-based positions."""
    n = len(positions)
    if model == "rnn":
        return layers * n * 2 * 2 * d * d, 0
    weights = layers * (4 * 2 * n * d * d + 2 * 2 * n * d * f)
    return weights, layers * plain_sum(2 * 2 * d * (t + 1) for t in positions)


def call_matrices(model, positions, layers, d, f):
    """Every matrix product of one call, layer by layer: [m, k] x [k, n], 2 m k n FLOPs, binary64 operands."""
    rows = []
    for layer in range(layers):
        shapes = []
        if model == "rnn":
            for t in positions:
                shapes += [(f"input_projection_t{t}", 1, d, d, "weight"), (f"state_projection_t{t}", 1, d, d, "weight")]
        else:
            n = len(positions)
            shapes += [(name, n, d, d, "weight") for name in ("q", "k", "v", "o")]
            shapes += [("ff_up", n, d, f, "weight"), ("ff_down", n, f, d, "weight")]
            for t in positions:
                shapes += [(f"qk_t{t}", 1, d, t + 1, "activation"), (f"av_t{t}", 1, t + 1, d, "activation")]
        for name, m, k, n, rhs in shapes:
            rows.append({"layer": layer, "operation": name, "m": m, "k": k, "n": n, "flops": 2 * m * k * n,
                         "rhs": rhs, "lhs_bytes": ELEMENT_BYTES * m * k, "rhs_bytes": ELEMENT_BYTES * k * n,
                         "output_bytes": ELEMENT_BYTES * m * n})
    return rows


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
    matrices = [dict(model=model, mode=mode, call=call, **row)
                for model in ("rnn", "transformer") for mode, calls in modes(tokens)
                for call, positions in enumerate(calls)
                for row in call_matrices(model, positions, layers, d, f)]
    out = {"rnn_parameters": 2 * layers * d * d, "transformer_parameters": layers * (4 * d * d + 2 * d * f),
           "input_table_parameters": vocabulary * d, "rnn_critical_path_cells": layers + tokens - 1,
           "transformer_critical_path_cells": layers, "work": work, "states": states, "matrices": matrices}
    if tokens < vocabulary and tokens <= VALUE_TOKENS_MAX:
        rows = toy_values(tokens=tokens, layers=layers, d=d, f=f, vocabulary=vocabulary)
        out["max_abs_difference"] = max(r["max_abs_difference"] for r in rows)
        out["outputs"] = [{"model": r["model"], "prefix_tokens": r["prefix_tokens"],
                           "recomputed": ", ".join(f"{x:.12g}" for x in r["recomputed"]),
                           "reused": ", ".join(f"{x:.12g}" for x in r["reused"]),
                           "max_abs_difference": r["max_abs_difference"]} for r in rows]
    return out


VALUE_TOKENS_MAX = 64   # the values recompute every prefix: cubic in the tokens


SEQUENCE_TOY_CONVENTIONS = [
    "Toy networks (no checkpoint): an RNN h = tanh(x Wx + h Wh) and a one-head causal Transformer (Q, K, V, O, "
    "tanh feed-forward), L layers of width D, no norms, biases or head. Matrix FLOPs 2 m n k: RNN 2 x 2 D^2 per "
    "position and layer; Transformer 8 n D^2 + 4 n D F per call and layer plus 4 D (t + 1) per causal position t.",
    "State: the RNN overwrites L D hidden values per token, the Transformer keeps 2 L n D keys and values; "
    "binary64 elements. Unit-cell dependency chains: L + T - 1 (RNN) against L (Transformer).",
    "Values: fixed teaching weights ((17 (i + 1) + 11 (j + 1) + 7 s) mod 19 - 9) / 32, seeds 2 + 7 l .. 9 + 7 l per "
    "layer l (Wx, Wh, Q, K, V, O, up, down), input table seed 1 plus (p + 1)(j + 1) / 64 at position p; zero "
    "initial RNN state; scaled softmax with the row maximum subtracted. binary64, printed to 12 significant "
    "digits (the last binary digits of tanh and exp differ between platforms' math libraries).",
]


# ---- values: the toy networks evaluated with fixed teaching weights (binary64) ----
#
# Weight w[i][j] of a matrix with seed s: ((17 (i + 1) + 11 (j + 1) + 7 s) mod 19 - 9) / 32; layer l uses
# seeds 2 + 7 l (Wx), 3 + 7 l (Wh), 4 .. 7 + 7 l (Q, K, V, O), 8 + 7 l (up), 9 + 7 l (down); the input of
# token k at position p is row k of the seed-1 table plus (p + 1)(j + 1) / 64 in column j.

def teaching_matrix(rows, cols, seed):
    return [[(((i + 1) * 17 + (j + 1) * 11 + seed * 7) % 19 - 9) / 32 for j in range(cols)] for i in range(rows)]


def _vec_mat(x, m):
    out = []
    for j in range(len(m[0])):
        acc = 0
        for i in range(len(x)):
            acc += x[i] * m[i][j]
        out.append(acc)
    return out


def _layer_weights(layers, d, f):
    names = ("wx", "wh", "q", "k", "v", "o")
    out = []
    for l in range(layers):
        w = {name: teaching_matrix(d, d, 2 + i + 7 * l) for i, name in enumerate(names)}
        w["up"], w["down"] = teaching_matrix(d, f, 8 + 7 * l), teaching_matrix(f, d, 9 + 7 * l)
        out.append(w)
    return out


def _input(table, token, position):
    return [table[token][j] + ((position + 1) * (j + 1)) / 64 for j in range(len(table[0]))]


def _rnn_cell(x, h, w):
    import math

    return [math.tanh(a + b) for a, b in zip(_vec_mat(x, w["wx"]), _vec_mat(h, w["wh"]))]


def _attend(query, keys, values, d):
    import math

    scores = [plain_sum(a * b for a, b in zip(query, key)) / math.sqrt(d) for key in keys]
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = plain_sum(weights)
    weights = [x / total for x in weights]
    return [plain_sum(p * value[j] for p, value in zip(weights, values)) for j in range(d)]


def _block(x, keys, values, w, d):
    import math

    mixed = [a + b for a, b in zip(x, _vec_mat(_attend(_vec_mat(x, w["q"]), keys, values, d), w["o"]))]
    hidden = [math.tanh(a) for a in _vec_mat(mixed, w["up"])]
    return [a + b for a, b in zip(mixed, _vec_mat(hidden, w["down"]))]


def toy_values(*, tokens, layers, d, f, vocabulary):
    """Last-position outputs after each prefix of tokens 0 .. T (T supplied), recomputed and reused."""
    table, params = teaching_matrix(vocabulary, d, 1), _layer_weights(layers, d, f)
    sequence = list(range(tokens + 1))
    inputs = [_input(table, t, p) for p, t in enumerate(sequence)]
    rows = []
    hidden = [[0.0] * d for _ in range(layers)]
    cache = [([], []) for _ in range(layers)]
    for n in range(1, tokens + 2):
        x = inputs[n - 1]                                   # reused: one step on the kept state
        for l, w in enumerate(params):
            hidden[l] = x = _rnn_cell(x, hidden[l], w)
        rnn_reused = x
        x = inputs[n - 1]
        for l, w in enumerate(params):
            cache[l][0].append(_vec_mat(x, w["k"]))
            cache[l][1].append(_vec_mat(x, w["v"]))
            x = _block(x, cache[l][0], cache[l][1], w, d)
        tf_reused = x
        fresh = [[0.0] * d for _ in range(layers)]          # recomputed: the whole prefix again
        for p in range(n):
            x = inputs[p]
            for l, w in enumerate(params):
                fresh[l] = x = _rnn_cell(x, fresh[l], w)
        rnn_full = x
        xs = inputs[:n]
        for w in params:
            keys, values = [_vec_mat(x, w["k"]) for x in xs], [_vec_mat(x, w["v"]) for x in xs]
            xs = [_block(x, keys[:p + 1], values[:p + 1], w, d) for p, x in enumerate(xs)]
        for model, full, reused in (("rnn", rnn_full, rnn_reused), ("transformer", xs[-1], tf_reused)):
            rows.append({"model": model, "prefix_tokens": n, "recomputed": full, "reused": reused,
                         "max_abs_difference": max(abs(a - b) for a, b in zip(full, reused))})
    return rows

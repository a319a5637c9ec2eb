"""Exact numerical witnesses of two chapter-5 fusion claims: online-softmax state merging and
per-row FP8 (E4M3FN) scales computed from a prefix.

Online softmax: a block of (score s_i, value v_i) pairs, masked scores skipped, is the state
(m, l, U): m = max s_i, l = sum exp(s_i - m), U = sum exp(s_i - m) v_i (an empty or fully masked
block has no state, the identity of the merge). Two states merge at their common maximum:

    m = max(m1, m2),  a = exp(m1 - m),  b = exp(m2 - m),  l = a l1 + b l2,  U = a U1 + b U2

and the output is U / l, divided once. Merged left to right, or as a balanced tree (halves
first), the states give the direct softmax of the whole row (up to double rounding: IEEE double
with math.fsum within a block); the equal-weight mean of the blocks' own outputs does not.
Each merge of two states costs 1 comparison, 2 subtractions, 2 exponentials and 3 (w + 1)
weighted-sum FLOPs for a value width w; the finish w divisions.

E4M3FN (the ONNX float8 layout: bias 7, 3 fraction bits, subnormal step 2^-9, largest finite 448,
no infinities, 0x7f NaN): a finite value is rounded to the nearest of the 127 finite non-negative
codes (nearest even code on a tie), saturating at 448, the sign kept (zero unsigned). A row
quantized with the final row scale amax / 448 against one whose scale grows block by block (the
prefix's amax, earlier partial sums rescaled by old / new amax) gives different dot products:

    full row:  sum round(x_i 448 / amax) w_i x amax / 448
    prefix:    per block, amax_b = max(amax_(b-1), max |x| of the block);
               acc = acc x amax_(b-1) / amax_b + sum round(x_i 448 / amax_b) w_i;  result acc amax / 448

Exact rationals throughout (Fractions), the IEEE FP16 of each result beside them.
"""

import math
import struct
from fractions import Fraction

NUMERICS_CONVENTIONS = [
    "Numerical witnesses, not costs: values of a declared row and block split. Softmax states (max, exp-sum, "
    "weighted sum) in IEEE double (math.fsum inside a block); a masked score is skipped, an empty or fully "
    "masked block has no state (the merge identity); the output divides once. Sequential and balanced-tree merges "
    "against the direct row and the mean of the blocks' outputs; merge operation counts per non-trivial merge.",
]

FP8_CONVENTIONS = [
    "E4M3FN (ONNX float8 layout: bias 7, 3 fraction bits, subnormals of 2^-9, largest finite 448, no infinity): "
    "round to the nearest finite code, the even code on a tie, saturating; exact rationals (Fractions), then IEEE "
    "FP16 of the result. Full-row scale amax/448 against a prefix scale updated per block (earlier partial sums "
    "rescaled); the book's witness: a row of two blocks whose only non-zero products are its first elements.",
]


def block_state(scores, values):
    kept = [(s, v) for s, v in zip(scores, values) if s is not None and s != -math.inf]
    if not kept:
        return None
    m = max(s for s, _ in kept)
    weights = [math.exp(s - m) for s, _ in kept]
    width = len(values[0])
    return (m, math.fsum(weights),
            tuple(math.fsum(w * v[j] for w, (_, v) in zip(weights, kept)) for j in range(width)))


def merge(left, right):
    if left is None or right is None:
        return right if left is None else left
    (m1, l1, u1), (m2, l2, u2) = left, right
    m = max(m1, m2)
    a, b = math.exp(m1 - m), math.exp(m2 - m)
    return m, a * l1 + b * l2, tuple(a * x + b * y for x, y in zip(u1, u2))


def finish(state):
    return None if state is None else [u / state[1] for u in state[2]]


def tree(states):
    if len(states) <= 1:
        return states[0] if states else None
    half = len(states) // 2
    return merge(tree(states[:half]), tree(states[half:]))


def online_softmax(scores, values, blocks):
    states, sequential, merges, start, rows = [], None, 0, 0, []
    for size in blocks:
        state = block_state(scores[start:start + size], values[start:start + size])
        merges += sequential is not None and state is not None
        sequential = merge(sequential, state)
        states.append(state)
        rows.append({"block": len(rows), "positions": size, "has_state": state is not None,
                     "block_output": finish(state), "prefix_output": finish(sequential)})
        start += size
    direct = finish(block_state(scores, values))
    outputs = [finish(s) for s in states if s is not None]
    naive = [math.fsum(o[j] for o in outputs) / len(outputs) for j in range(len(outputs[0]))] if outputs else None

    def error(x):
        return None if direct is None else max(abs(a - b) for a, b in zip(x, direct))
    width = len(values[0])
    return {
        "direct_output": direct, "sequential_output": finish(sequential), "tree_output": finish(tree(states)),
        "mean_of_block_outputs": naive, "sequential_max_abs_error": error(finish(sequential)),
        "tree_max_abs_error": error(finish(tree(states))), "mean_max_abs_error": error(naive),
        "blocks_with_state": len(outputs), "merges": merges, "merge_exponentials": 2 * merges,
        "merge_subtractions": 2 * merges, "merge_weighted_sum_flops": 3 * (width + 1) * merges,
        "merge_comparisons": merges, "final_divisions": width, "blocks": rows,
    }


def e4m3fn_values():
    """(code, value) of the 127 finite non-negative E4M3FN codes (0x7f is NaN)."""
    out = []
    for code in range(127):
        exponent, mantissa = divmod(code, 8)
        normal = Fraction(8 + mantissa, 8) * Fraction(2) ** (exponent - 7)
        out.append((code, Fraction(mantissa, 512) if exponent == 0 else normal))
    return out


E4M3FN = e4m3fn_values()
_VALUES = [v for _, v in E4M3FN]   # increasing with the code


def round_e4m3fn(x):
    """Nearest finite code (the even code on a tie), saturating at 448, the sign kept."""
    import bisect

    x = Fraction(x)
    a = abs(x)
    i = bisect.bisect_left(_VALUES, a)
    if i == len(_VALUES):
        value = _VALUES[-1]
    elif _VALUES[i] == a or i == 0:
        value = _VALUES[i]
    else:
        lo, hi = _VALUES[i - 1], _VALUES[i]
        value = lo if (a - lo, (i - 1) % 2) < (hi - a, i % 2) else hi
    return value if x >= 0 else -value


def _quantized_sum(values, weights, scale):
    """sum round(x scale) w over the pairs (a zero weight contributes nothing, whatever its rounding)."""
    return sum((round_e4m3fn(x * scale) * w for x, w in zip(values, weights) if w), Fraction(0))


def fp8_dot(values, weights, block, prefix=False):
    values, weights = [Fraction(v) for v in values], [Fraction(w) for w in weights]
    amax = max(abs(v) for v in values)
    if not amax:
        return Fraction(0)
    if not prefix:
        return _quantized_sum(values, weights, 448 / amax) * amax / 448
    running, acc = Fraction(0), Fraction(0)
    for i in range(0, len(values), block):
        part = values[i:i + block]
        new = max(running, max(abs(v) for v in part))
        if not new:
            continue
        acc = acc * running / new + _quantized_sum(part, weights[i:i + block], 448 / new)
        running = new
    return acc * running / 448


def fp16(x):
    return struct.unpack("e", struct.pack("e", float(x)))[0]


def prefix_scale_witness(block, larger_first=False):
    small, large = [1] + [0] * (block - 1), [10] + [0] * (block - 1)
    w_small, w_large = [1] + [0] * (block - 1), [0] * block
    values = large + small if larger_first else small + large
    weights = w_large + w_small if larger_first else w_small + w_large
    full, prefix = fp8_dot(values, weights, block), fp8_dot(values, weights, block, prefix=True)
    return {"block": block, "larger_first": larger_first, "finite_e4m3fn_codes": len(E4M3FN), "largest_finite": 448,
            "full_row_result": str(full), "prefix_result": str(prefix), "exact_difference": str(prefix - full),
            "full_row_fp16": fp16(full), "prefix_fp16": fp16(prefix), "equal_after_fp16": fp16(full) == fp16(prefix),
            "exact_dot": str(sum(Fraction(v) * w for v, w in zip(values, weights)))}

"""One order of float addition on every supported Python.

`plain_sum(values, start=0)` is start + v0 + v1 + ..., added left to right: what the built-in
sum() computes on Python 3.10 and 3.11. From 3.12 the built-in sums floats with Neumaier's
compensation, so the same terms can differ in the last bits, and a stored result written on one
version would not re-derive on another (`reproduce --check` compares floats by their text).
On 3.10 and 3.11 `plain_sum` is the built-in itself; on 3.12+ it is the same loop in Python.
Integers and Fractions are exact either way.

`compensated_sum(values)` is the other order, spelled out: what the built-in sum() of floats computes
from 3.12 (Neumaier's improved Kahan-Babuska summation, CPython's Python/bltinmodule.c), on every
version; a result written by 3.12+ re-derives with it. Worked case: [1e16, 1.0, -1e16] sums to 0.0
left to right (1e16 + 1 rounds back to 1e16) and to 1.0 compensated."""

import sys

if sys.version_info < (3, 12):
    plain_sum = sum
else:
    def plain_sum(values, start=0):
        for value in values:
            start = start + value
        return start


def compensated_sum(values, start=0):
    """start + v0 + v1 + ... with a running compensation c of each addition's rounding error
    (t = s + x; c += (s - t) + x when |s| >= |x|, else (x - t) + s), added once at the end."""
    total, c = start, 0.0
    for x in values:
        t = total + x
        c += (total - t) + x if abs(total) >= abs(x) else (x - t) + total
        total = t
    return total + c if c else total

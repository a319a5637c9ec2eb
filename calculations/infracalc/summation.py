"""One order of float addition on every supported Python.

`plain_sum(values, start=0)` is start + v0 + v1 + ..., added left to right: what the built-in
sum() computes on Python 3.10 and 3.11. From 3.12 the built-in sums floats with Neumaier's
compensation, so the same terms can differ in the last bits, and a stored result written on one
version would not re-derive on another (`reproduce --check` compares floats by their text).
On 3.10 and 3.11 `plain_sum` is the built-in itself; on 3.12+ it is the same loop in Python.
Integers and Fractions are exact either way."""

import sys

if sys.version_info < (3, 12):
    plain_sum = sum
else:
    def plain_sum(values, start=0):
        for value in values:
            start = start + value
        return start

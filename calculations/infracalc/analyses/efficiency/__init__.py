"""Efficiency models: what a well-tuned software stack achieves, for the `predicted` figure.

The bound (analyses/roofline) runs every operator at the vendor's dense peak and
bandwidth. The prediction runs the same ledger at achievable rates, each from a
published measurement named in the module that holds it:

- matmul.py: the maximum achievable matmul throughput per device and format
  (MAMF tables), and the wave quantisation of output tiles over the SMs;
- memory.py: the achievable HBM bandwidth per device;
- kernel.py: the per-operator fixed cost (kernel launch and tail) of short kernels;
- predict.py: one operator's predicted time from the three, and a pass's sum.

Nothing here changes a bound: the prediction is a separate figure, and every rate
it uses is at most the peak the bound uses (a fraction <= 1), so a predicted time
is never below the operator's bound.
"""

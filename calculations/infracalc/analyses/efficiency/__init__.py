"""Efficiency models: what a well-tuned software stack achieves, for the `predicted` figure.

The bound (analyses/roofline) runs every operator at the vendor's dense peak and
bandwidth. The prediction runs the same ledger at achievable rates, each from a
published measurement named in the module that holds it:

- matmul.py: the maximum achievable matmul throughput per device and format
  (MAMF tables), and the wave quantisation of output tiles over the SMs;
- memory.py: the achievable HBM bandwidth per device, and fused-attention throughput;
- predict.py: one operator's predicted time from those rates plus a fixed cost per kernel,
  and a pass's sum;
- collective.py: a collective as NCCL's tuner prices it (latency per algorithm and protocol,
  LL/LL128/Simple bandwidth shares, NCCL's NVLink figures), with one fitted residual;
- serving.py: a tuned engine's steady state (concurrency, mixed iteration, TP all-reduces,
  host time); training.py: the predicted training step; fit.py: fitting serving's constants
  leave one publication out.

Nothing here changes a bound: the prediction is a separate figure, and every rate
it uses is at most the peak the bound uses (a fraction <= 1), so a predicted time
is never below the operator's bound.
"""

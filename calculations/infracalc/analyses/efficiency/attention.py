"""Fused attention throughput in training, by head dimension and keys per query.

FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608) measures its BF16 kernels on an H100 SXM5 at
fixed 1830 MHz clocks (989 TFLOP/s dense peak), 16k tokens per batch, hidden 2048, per head
dimension and sequence length S (the FA3 bars' labels, TFLOP/s):

    Figure 5(b)(d)(f), forward with causal mask:   S = 512   1k   2k   4k   8k   16k
        head dim  64                                   197  265  371  420  460  473
        head dim 128                                   292  423  521  579  602  616
        head dim 256                                   286  427  537  612  628  642
    Figure 6(a)(b), backward without causal mask:
        head dim  64                                   272  363  422  453  472  474
        head dim 128                                   316  424  501  542  559  561

(the backward's FLOPs are 2.5x the forward's: five matmuls, the scores recomputed). A training
attention row whose queries see on average k keys (pairs / queries: (T + 1) / 2 for a causal
sequence of T, about W for a window of W) runs at the figure of the kernel whose queries see as
many: the causal forward at S = 2k, the backward (published without mask only) at S = k; a causal
backward, whose diagonal tiles are half masked, is a little slower still (stated, not modelled).
Between columns the figure is interpolated linearly in log2(S) and in the head dimension, and
clamped at the table's ends (a shorter key loop than the table's shortest runs no faster).

A device's curve is its own best figure scaled by the table's shape: forward rate = peak x
forward fraction x table(hd, 2k) / 740 (FA3's "up to 740 TFLOPs/s", the H100 forward fraction
efficiency.memory states), backward = peak x backward fraction x table(hd, k) / 561 (Figure 6's
best). Backward fractions: H100 561 / 989 (Figure 6); B200 1000 / 2250 (deepseek-ai/FlashMLA
README.md: the SM100 dense MHA kernel "achieves up to 1460 TFlops in forward and 1000 TFlops in
backward computation on B200"); A100 0.63 (FlashAttention-2, arXiv:2307.08691, section 1: "up to
63% of the theoretical max throughput in the backward pass"). On H100 the curve is the table
itself; elsewhere the shape is FA3's (basis "assumed"). An attention row without a head dimension
(linear, compressed or delta-rule attention) takes the device's best figures.
"""

import math

from ...record import Record
from . import memory

_FA3 = "FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608)"
SEQS = (512, 1024, 2048, 4096, 8192, 16384)
FORWARD_CAUSAL = {64: (197, 265, 371, 420, 460, 473), 128: (292, 423, 521, 579, 602, 616),
                  256: (286, 427, 537, 612, 628, 642)}
BACKWARD = {64: (272, 363, 422, 453, 472, 474), 128: (316, 424, 501, 542, 559, 561)}
FORWARD_BEST, BACKWARD_BEST = 740.0, 561.0   # TFLOP/s: the abstract's forward, Figure 6's backward
SOURCE = (f"{_FA3}, Figure 5 (forward, causal) and Figure 6 (backward) per head dimension and "
          "sequence; backward best per device: FA3 Figure 6 (H100), deepseek-ai/FlashMLA:README.md (B200, "
          "1000 TFLOPS backward), FlashAttention-2 arXiv:2307.08691 section 1 (A100, 63%)")
BACKWARD_MEASURED = {   # (device, format) -> fraction of the dense peak a fused attention backward reaches
    ("a100-sxm-80gb", "bf16"): 0.63,
    ("h100-sxm", "bf16"): BACKWARD_BEST / 989,
    ("b200", "bf16"): 1000 / 2250,
}
BACKWARD_FLOPS = 2.5   # FA's backward work over its forward's (five matmuls against two)


def _interp(xs, ys, x):
    """ys at x, linear between the xs, clamped at the ends."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    i = next(j for j in range(1, len(xs)) if x <= xs[j])
    f = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
    return ys[i - 1] + f * (ys[i] - ys[i - 1])


def table_figure(table, head_dim, seq):
    """TFLOP/s of `table` (FORWARD_CAUSAL or BACKWARD) at a head dimension and sequence, linear in
    log2(seq) and in the head dimension between the table's points, clamped at its ends."""
    logs = [math.log2(s) for s in SEQS]
    dims = sorted(table)
    at_dim = [_interp(logs, table[d], math.log2(max(seq, 1))) for d in dims]
    return _interp(dims, at_dim, head_dim)


class AttentionRates(Record):
    """A device's fused-attention rates in training (FLOP/s at its best shape), with their basis."""
    forward_flops_per_s: float
    backward_flops_per_s: float
    basis: str = ""

    def forward_s(self, flops, head_dim, keys_per_query):
        """Seconds of a forward attention row of `flops` (the ledger's count)."""
        if not head_dim:
            return flops / self.forward_flops_per_s
        shape = table_figure(FORWARD_CAUSAL, head_dim, 2 * keys_per_query) / FORWARD_BEST
        return flops / (self.forward_flops_per_s * shape)

    def backward_s(self, forward_flops, head_dim, keys_per_query):
        """Seconds of the backward of a forward row of `forward_flops`: FA's 2.5x the forward work at
        the backward rate (whatever the ledger's own backward count)."""
        work = BACKWARD_FLOPS * forward_flops
        if not head_dim:
            return work / self.backward_flops_per_s
        shape = table_figure(BACKWARD, head_dim, keys_per_query) / BACKWARD_BEST
        return work / (self.backward_flops_per_s * shape)


def _backward_fraction(device_id):
    for dev in (device_id, memory.ATTENTION_ANALOGY.get(device_id)):
        if dev and (dev, "bf16") in BACKWARD_MEASURED:
            return BACKWARD_MEASURED[(dev, "bf16")], dev
    return None, None


def training_rates(device):
    """AttentionRates of `device` in BF16 (attention runs in BF16 in every training format:
    train_flops.stored_workload), or None without a published forward and backward figure for it or
    its analogy (the row then runs at the matmul rate, as before)."""
    peak = dict(device.matrix_flops_per_s).get("bf16")
    fwd = memory.attention_fraction(device.id, "bf16")
    bwd, twin = _backward_fraction(device.id)
    if not peak or fwd is None or bwd is None:
        return None
    basis = "measured" if device.id == "h100-sxm" else f"assumed ({twin} figures, FA3's shape)"
    return AttentionRates(forward_flops_per_s=peak * fwd[0], backward_flops_per_s=peak * bwd, basis=basis)

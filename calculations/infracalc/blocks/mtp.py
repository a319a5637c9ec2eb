"""The input of a DeepSeek-V3 multi-token-prediction module (DeepSeek-V3 technical report,
section 2.2; README_WEIGHTS: enorm, hnorm, eh_proj): the previous depth's hidden state and the
next token's embedding are each RMS-normalised (enorm, hnorm: 4 FLOPs per element, a weight of
hidden each), concatenated and projected back to the hidden size by eh_proj [hidden, 2 x hidden]:
2 x positions x 2 hidden x hidden matrix FLOPs. The module's decoder layer, its final norm
(shared_head.norm) and the output head and embedding it shares with the main model are the
ordinary blocks.
"""

from ..arch import Block, Tensor
from ..ops import VECTOR_FLOPS, elementwise, gemm, rmsnorm


class MTPInput(Block):
    history_independent = True   # no cache, no position (see Block)
    hidden: int
    label = "MTP input (enorm, hnorm, eh_proj)"

    def tensors(self):
        h = self.hidden
        return (Tensor("enorm.weight", (h,), "vector"), Tensor("hnorm.weight", (h,), "vector"),
                Tensor("eh_proj.weight", (h, 2 * h), "matrix"))

    def ops(self, w):
        enorm, hnorm, proj = self.tensors()
        return [rmsnorm(w, "enorm", w.positions, enorm), rmsnorm(w, "hnorm", w.positions, hnorm),
                gemm(w, "eh_proj", w.positions, proj)]

    def shard(self, tp, ep=1):
        """Replicated: each device holds and runs the whole input projection."""
        return self


class HCMTPInput(Block):
    """The input of a DeepSeek-V4 MTP block (deepseek-ai/DeepSeek-V4-Flash inference/model.py,
    MTPBlock): the next token's embedding e [n, D] is RMS-normalised (enorm) and projected by
    e_proj [D, D]; the previous depth's m residual streams x [n, m, D] are RMS-normalised (hnorm)
    and projected by h_proj [D, D] stream by stream; the streams are e_proj(e) broadcast over
    the m streams + h_proj(x):

        matrix FLOPs  2 n D^2 (e_proj) + 2 n m D^2 (h_proj)
        vector FLOPs  4 n D (enorm) + 4 n m D (hnorm) + n m D (the broadcast add)

    Its decoder layer (compress_ratios[num_hidden_layers], biased routing), hc_head and norm
    follow as ordinary blocks; embedding and output head are the main model's."""
    history_independent = True   # no cache, no position (see Block)
    hidden: int
    streams: int
    label = "MTP input (enorm, hnorm, e_proj, h_proj)"

    def tensors(self):
        d = self.hidden
        return (Tensor("enorm.weight", (d,), "vector"), Tensor("hnorm.weight", (d,), "vector"),
                Tensor("e_proj.weight", (d, d), "matrix"), Tensor("h_proj.weight", (d, d), "matrix"))

    def ops(self, w):
        enorm, hnorm, e_proj, h_proj = self.tensors()
        n, m, d = w.positions, self.streams, self.hidden
        return [rmsnorm(w, "enorm", n, enorm), rmsnorm(w, "hnorm", n * m, hnorm),
                gemm(w, "e_proj", n, e_proj), gemm(w, "h_proj", n * m, h_proj),
                elementwise(w, "mtp_add", n * m * d, VECTOR_FLOPS["residual"], inputs=2,
                            shape=f"[{n},{d}] + [{n},{m},{d}]")]

    def shard(self, tp, ep=1):
        """Replicated: each device holds and runs the whole input projection."""
        return self

"""The input of a DeepSeek-V3 multi-token-prediction module (DeepSeek-V3 technical report,
section 2.2; README_WEIGHTS: enorm, hnorm, eh_proj): the previous depth's hidden state and the
next token's embedding are each RMS-normalised (enorm, hnorm: 4 FLOPs per element, a weight of
hidden each), concatenated and projected back to the hidden size by eh_proj [hidden, 2 x hidden]:
2 x positions x 2 hidden x hidden matrix FLOPs. The module's decoder layer, its final norm
(shared_head.norm) and the output head and embedding it shares with the main model are the
ordinary blocks.
"""

from ..arch import Block, Tensor
from ..ops import gemm, rmsnorm


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

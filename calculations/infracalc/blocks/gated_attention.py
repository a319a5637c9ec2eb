"""Softmax attention with a sigmoid output gate (Qwen3-Next full-attention layers).

Hugging Face `Qwen3NextAttention`: q_proj produces, per head, a query and a
gate of head_dim each (weight [2 * heads * head_dim, hidden]); after
attention the output is multiplied by sigmoid(gate) before o_proj. Everything
else is the parent `Attention` (q/k norms, partial RoPE, grouped KV heads).

Extra work per token: q_proj is twice as wide (2 * hidden * 2 * heads *
head_dim matrix FLOPs) and the gate costs 4 vector FLOPs per output element
(sigmoid = exp, add, divide: 3; multiply: 1), reading the attention output and
the gate and writing the gated output; training keeps both (the output O is
the one the fused attention backward needs too).
"""

from ..arch import Tensor
from ..ops import elementwise, saved_inputs
from .attention import Attention

GATE_FLOPS = 4   # sigmoid(g) * x per element


class GatedAttention(Attention):
    @property
    def kind(self):
        return "gated " + super().kind

    def tensors(self):
        q_name = f"{self.prefix}.q_proj"
        width = 2 * self.heads * self.head_dim
        out = []
        for t in super().tensors():
            if t.name == q_name + ".weight":
                t = t.replace(shape=(width, self.hidden))
            elif t.name == q_name + ".bias":
                t = t.replace(shape=(width,))
            out.append(t)
        return tuple(out)

    def ops(self, w):
        out = list(super().ops(w))
        n, q = w.positions, self.heads * self.head_dim
        gate = elementwise(w, "output_gate", n * q, GATE_FLOPS, inputs=2,
                           shape=f"[{n},{self.heads},{self.head_dim}] sigmoid(gate) * out",
                           kind="activation", saved=saved_inputs(w, n * q, 2))
        at = next(i for i, op in enumerate(out) if op.name == "o_proj")
        out.insert(at, gate)
        return out

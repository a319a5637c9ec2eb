"""Dense gated MLP (SwiGLU / GeGLU): down(act(gate(x)) * up(x))."""


from ..arch import Block, Tensor
from ..errors import UserError
from ..ops import VECTOR_FLOPS, book, elementwise, gemm, saved_inputs, train_rule, train_swiglu

ACTIVATIONS = {"situ": "situ", "silu": "swiglu", "gelu_pytorch_tanh": "geglu_tanh", "gelu_tanh": "geglu_tanh"}


def book_activation(act, elements):
    """The book's count of a gated activation: SiLU(g) * u = g / (1 + exp(-g)) * u, 4 scalar
    FLOPs per element (add, divide, two multiplies) with exp and the negation apart; other
    activations have no book rule here. Its training count: ops.train_swiglu."""
    if act != "swiglu":
        return None
    return {**book(4 * elements, exp=elements, negate=elements), "book_train": train_rule(train_swiglu, elements)}


class GatedMLP(Block):
    """gate/up [inter, hidden], down [hidden, inter]; per token 2*3*hidden*inter
    matrix FLOPs; the gated activation costs VECTOR_FLOPS[act] per element.
    Training keeps gate's input (shared by up), the activation's two inputs and
    down's input; `shares_input`: the attention of a parallel layer (Cohere) reads
    the same normed input and keeps it already, so gate keeps none."""
    history_independent = True   # no cache, no position (see Block)
    hidden: int
    inter: int
    act: str = "swiglu"
    bias: bool = False
    prefix: str = "mlp"
    shares_input: bool = False

    @property
    def label(self):
        return f"MLP {self.inter}"

    def tensors(self):
        p, h, i = self.prefix, self.hidden, self.inter
        out = [Tensor(f"{p}.gate_proj.weight", (i, h)), Tensor(f"{p}.up_proj.weight", (i, h)),
               Tensor(f"{p}.down_proj.weight", (h, i))]
        if self.bias:
            out += [Tensor(f"{p}.gate_proj.bias", (i,), "vector"),
                    Tensor(f"{p}.up_proj.bias", (i,), "vector"),
                    Tensor(f"{p}.down_proj.bias", (h,), "vector")]
        return tuple(out)

    def shard(self, tp, ep=1):
        """Megatron MLP: gate/up column-parallel and down row-parallel, inter / tp
        columns per device (their biases split alike); the down bias (width
        hidden) is replicated. TP must divide the intermediate size."""
        if self.inter % tp:
            raise UserError(f"TP {tp} does not divide the MLP intermediate size {self.inter}")
        return self.replace(inter=self.inter // tp)

    def ops(self, w):
        t = self.tensors()
        gate, up, down = t[:3]
        gb, ub, db = t[3:] if self.bias else (None, None, None)
        n = w.positions
        return [
            gemm(w, "gate_proj", n, gate, gb, replicated=True, saves_input=not self.shares_input),
            gemm(w, "up_proj", n, up, ub, saves_input=False),
            elementwise(w, self.act, n * self.inter, VECTOR_FLOPS[self.act], inputs=2,
                        shape=f"[{n},{self.inter}]", kind="activation",
                        saved=saved_inputs(w, n * self.inter, 2), counted=book_activation(self.act, n * self.inter)),
            gemm(w, "down_proj", n, down, db),
        ]

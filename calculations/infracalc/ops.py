"""Operator records and the few factories every block builds them with.

An `Op` is one row of the ledger: the work of one operator in one layer (the
ledger multiplies by the number of identical layers). Conventions:

- a multiply-add is 2 FLOPs: a [m, k] x [k, n] product is 2*m*k*n matrix FLOPs;
- vector FLOPs per element (transcendentals count 1): see VECTOR_FLOPS;
- fusion model: every operator outside attention reads its inputs from and
  writes its outputs to memory; attention is fused (FlashAttention-style):
  QK^T reads Q and K, softmax stays on chip and moves no bytes, PV reads V and
  writes the output; scores are never written.
"""

from .record import Record

# Vector FLOPs per element. Sources: the operation counts of each formula,
# transcendental functions (exp, tanh, rsqrt) counted as one FLOP.
VECTOR_FLOPS = {
    "rmsnorm": 4,    # x^2, sum, * rsqrt(mean), * weight (per element)
    "residual": 1,   # x + f(x)
    "bias": 1,       # x + b
    "rope": 3,       # x*cos + rotate(x)*sin: 2 mul + 1 add per rotated element
    "softmax": 5,    # max, subtract, exp, sum, scale: per score
    "swiglu": 5,     # silu(g) = g * sigmoid(g) (exp, add, div, mul = 4) then * up
    "geglu_tanh": 10,  # 0.5*g*(1+tanh(c*(g+0.044715 g^3))): 9, then * up
    "scale": 1,      # multiply by a constant
    # GPT-OSS clamped SwiGLU, per element of the expert width: g = min(g, limit) (1),
    # u = clamp(u, -limit, limit) (2), g * sigmoid(alpha * g) (alpha*g 1, exp 1,
    # add 1, div 1, * g 1 = 5), (u + 1) * that (2): 10.
    "swiglu_clamp": 10,
    "l2norm": 3,     # x^2, sum, * rsqrt(mean): RMSNorm without a weight (Llama 4 qk norm)
    "sink": 4,       # per softmax row: the sink logit joins the max, subtract, exp, sum (never scaled)
    "moe_combine": 2,  # per routed expert output value: * routing weight, + into the token's sum
    "sigmoid": 3,    # exp(-x), 1 + that, 1 / that (Qwen3-Next shared-expert gate, one per token)
    "gated_add": 2,  # y + g * x: the sigmoid-gated shared expert added to the routed sum
}

class Op(Record):
    name: str
    category: str            # linear | attention | vector | memory
    shape: str
    matrix_flops: int = 0
    rect_flops: int = 0      # attention only: what an unmasked matmul computes
    vector_flops: int = 0
    weight_read: int = 0
    act_read: int = 0
    kv_read: int = 0
    act_write: int = 0
    kv_write: int = 0
    compute: str = ""        # format whose matrix peak the op runs at
    layers: str = ""         # which layers (filled by the ledger)
    repeats: int = 1

    @property
    def bytes_read(self):
        return self.weight_read + self.act_read + self.kv_read

    @property
    def bytes_written(self):
        return self.act_write + self.kv_write

    @property
    def bytes_moved(self):
        return self.bytes_read + self.bytes_written

    @property
    def flops(self):
        return self.matrix_flops + self.vector_flops

    def times(self, k, layers):
        """This op repeated over k identical layers."""
        return Op(self.name, self.category, self.shape,
                  self.matrix_flops * k, self.rect_flops * k, self.vector_flops * k,
                  self.weight_read * k, self.act_read * k, self.kv_read * k,
                  self.act_write * k, self.kv_write * k, self.compute, layers, k)


def gemm(w, name, m, weight, bias=None, in_features=None, shape=None, out_dtype=None):
    """Tokens [m, k] times a weight stored as [n, k] (Hugging Face layout).

    matrix FLOPs 2*m*k*n; reads the weight (in its stored format), the input
    activations m*k; writes m*n outputs (in the activation format, or
    `out_dtype`); a bias adds m*n vector FLOPs.
    """
    n, k = weight.shape[-2], weight.shape[-1]
    if in_features is not None:
        k = in_features
    act = w.act_dtype
    out = out_dtype or act
    return Op(
        name, "linear", shape or f"[{m},{k}]x[{k},{n}]",
        matrix_flops=2 * m * k * n,
        vector_flops=m * n * VECTOR_FLOPS["bias"] if bias is not None else 0,
        weight_read=w.weight_bytes(weight) + (w.weight_bytes(bias) if bias is not None else 0),
        act_read=act.nbytes_flat(m * k),
        act_write=out.nbytes_flat(m * n),
        compute=w.compute_dtype.name,
    )


def elementwise(w, name, elements, flops_per_element, inputs=1, outputs=1,
                weight=None, shape=None):
    """A vector operator over `elements` values: reads `inputs` tensors of that
    size (plus an optional weight), writes `outputs` tensors of that size."""
    act = w.act_dtype
    return Op(
        name, "vector", shape or f"[{elements}]",
        vector_flops=elements * flops_per_element,
        weight_read=w.weight_bytes(weight) if weight is not None else 0,
        act_read=act.nbytes_flat(elements) * inputs,
        act_write=act.nbytes_flat(elements) * outputs,
    )


def rmsnorm(w, name, rows, weight):
    """RMSNorm over `rows` vectors of the weight's width: 4 FLOPs per element."""
    width = weight.shape[-1]
    return elementwise(w, name, rows * width, VECTOR_FLOPS["rmsnorm"], weight=weight,
                       shape=f"[{rows},{width}]")


def residual(w, rows, width, name="residual_add"):
    """x + f(x): 1 FLOP per element, reads both, writes the sum."""
    return elementwise(w, name, rows * width, VECTOR_FLOPS["residual"], inputs=2,
                       shape=f"[{rows},{width}]")

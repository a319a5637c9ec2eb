"""GPT blocks (GPT-2, GPT-3 and the Megatron-LM training tables): learned
position embeddings, LayerNorm with bias, a non-gated GELU MLP, biases on
every projection, dropout.

Tensors follow Hugging Face `GPT2Model` (wte, wpe, ln_1, attn.c_attn,
attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj, ln_f); GPT-2 stores its projections
as Conv1D [in, out] and its q, k, v fused in c_attn: they are listed as
split [out, in] matrices here (same parameter count and FLOPs). Parameters
per layer: 4h^2 + 4h (attention) + 2*h*f + f + h (MLP) + 4h (two LayerNorms);
at f = 4h that is 12h^2 + 13h.

Training (dropout): the embedding sum and the outputs of attention and MLP
keep a 1-byte mask per element (Korthikanti et al. 2022, arXiv:2205.05198);
the MLP keeps fc's input, the GELU's input and proj's input (its output).
"""

from ..arch import Block, Tensor
from ..errors import UserError
from ..ops import STAT_BYTES, VECTOR_FLOPS, Op, elementwise, gathered_rows, gemm, saved_inputs, with_dropout_mask
from ..splits import ceil_div


class GPTEmbedding(Block):
    """Token embedding wte [vocab, hidden] plus learned positions wpe [positions,
    hidden] (OPT: `offset` more rows): two gathers and one add per element (1 FLOP);
    with dropout, a mask.
    The position rows read are those of the pass's new positions (shared by the
    batch). TP splits wte by vocabulary rows and keeps wpe whole on every rank."""
    vocab: int
    hidden: int
    positions: int
    dropout: bool = False
    offset: int = 0          # extra rows before position 0 (OPT: 2)

    def tensors(self):
        return (Tensor("wte.weight", (self.vocab, self.hidden), "embedding"),
                Tensor("wpe.weight", (self.positions + self.offset, self.hidden), "embedding"))

    def shard(self, tp, ep=1):
        """Vocab-parallel wte (ceil(vocab / tp) rows per TP device, as `Embedding`);
        the position table is replicated."""
        return self.replace(vocab=ceil_div(self.vocab, tp))

    def ops(self, w):
        if w.context > self.positions:
            raise UserError(f"learned position embeddings cover {self.positions:,} positions; "
                            f"a pass reaching position {w.context:,} has no embedding for them")
        n, h = w.positions, self.hidden
        tokens = Tensor("wte.weight", (min(n, self.vocab), h), "embedding")
        where = Tensor("wpe.weight", (w.tokens, h), "embedding")
        gather = Op("embedding", "memory", gathered_rows(n, f"[{self.vocab},{h}]") + " + "
                    + gathered_rows(w.tokens, f"[{self.positions},{h}]"),
                    weight_read=w.weight_bytes(tokens) + w.weight_bytes(where),
                    act_write=w.act_dtype.nbytes_flat(n * h), kind="embedding", weight="wte.weight")
        add = elementwise(w, "position_add", n * h, VECTOR_FLOPS["residual"], inputs=2,
                          shape=f"[{n},{h}] + positions", kind="residual")
        return [gather, with_dropout_mask(add, n * h if self.dropout else 0)]


class LayerNorm(Block):
    """LayerNorm with weight and bias over every position: 7 FLOPs per element;
    training keeps its input and two fp32 statistics (mean, rstd) per row (the
    statistics only with `shares_input`: another norm of the same input keeps
    it, as GPT-NeoX's two norms of a parallel-residual layer)."""
    history_independent = True   # no cache, no position (see Block)
    name: str
    width: int
    shares_input: bool = False
    bias: bool = True            # False: weight only (Cohere's LayerNorm), still 7 FLOPs counted

    def tensors(self):
        weight = Tensor(f"{self.name}.weight", (self.width,), "vector")
        return (weight, Tensor(f"{self.name}.bias", (self.width,), "vector")) if self.bias else (weight,)

    def shard(self, tp, ep=1):
        """Norms are replicated: every TP device holds and applies the whole weight."""
        return self

    def ops(self, w):
        n = w.positions
        saved = (0 if self.shares_input else saved_inputs(w, n * self.width)) + 2 * n * STAT_BYTES
        op = elementwise(w, self.name, n * self.width, VECTOR_FLOPS["layernorm"],
                         shape=f"[{n},{self.width}]", kind="norm", saved=saved, replicated=True)
        return [op.replace(weight_read=sum(w.weight_bytes(t) for t in self.tensors()))]


class GPTMLP(Block):
    """c_fc [inter, hidden] + bias, GELU, c_proj [hidden, inter] + bias:
    per token 2*2*hidden*inter matrix FLOPs."""
    history_independent = True   # no cache, no position (see Block)
    hidden: int
    inter: int
    act: str = "gelu_tanh"   # VECTOR_FLOPS key: gelu_tanh (GPT-2 gelu_new) | gelu_erf (exact gelu) | relu (OPT)
    dropout: bool = False
    prefix: str = "mlp"
    bias: bool = True        # False: no biases (Falcon)
    shares_input: bool = False   # a parallel layer's attention keeps the same normed input (Falcon)

    @property
    def label(self):
        return f"MLP {self.inter} {'ReLU' if self.act == 'relu' else 'GELU'}"

    def tensors(self):
        p, h, i = self.prefix, self.hidden, self.inter
        fc, proj = Tensor(f"{p}.c_fc.weight", (i, h)), Tensor(f"{p}.c_proj.weight", (h, i))
        if not self.bias:
            return (fc, proj)
        return (fc, Tensor(f"{p}.c_fc.bias", (i,), "vector"), proj, Tensor(f"{p}.c_proj.bias", (h,), "vector"))

    def shard(self, tp, ep=1):
        """Megatron MLP: c_fc column-parallel, c_proj row-parallel, inter / tp per
        device (c_fc's bias split alike, c_proj's replicated)."""
        if self.inter % tp:
            raise UserError(f"TP {tp} does not divide the MLP intermediate size {self.inter}")
        return self.replace(inter=self.inter // tp)

    def ops(self, w):
        fc, fc_b, proj, proj_b = self.tensors() if self.bias else (self.tensors()[0], None, self.tensors()[1], None)
        n = w.positions
        return [
            gemm(w, "c_fc", n, fc, fc_b, replicated=True, saves_input=not self.shares_input),
            elementwise(w, self.act, n * self.inter, VECTOR_FLOPS[self.act],
                        shape=f"[{n},{self.inter}]", kind="activation",
                        saved=saved_inputs(w, n * self.inter)),
            with_dropout_mask(gemm(w, "c_proj", n, proj, proj_b), n * self.hidden if self.dropout else 0),
        ]

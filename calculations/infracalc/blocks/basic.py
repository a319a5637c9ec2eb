"""Embedding, norms, residual adds and the output head."""


from ..arch import Block, Tensor
from ..errors import UserError
from ..ops import (VECTOR_FLOPS, Op, elementwise, gathered_rows, gemm, residual, rmsnorm, train_adds, train_rule,
                   with_dropout_mask)
from ..splits import ceil_div


INDEX_BYTES = 8   # an int64 token id


class Embedding(Block):
    """Token embedding [vocab, hidden]: a gather, no FLOPs.

    Reads one row per token, at most `vocab` distinct rows (an upper bound:
    it assumes distinct token ids); `scale` multiplies by sqrt(hidden) (Gemma).
    Training keeps nothing (the backward scatter-adds into the rows by token
    id; the ids are the input batch, not counted), except a 1-byte mask per
    element with `dropout` (GPT-NeoX's embedding dropout).
    """
    history_independent = True   # no cache, no position (see Block)
    vocab: int
    hidden: int
    scale: bool = False
    dropout: bool = False

    def tensors(self):
        return (Tensor("embed_tokens.weight", (self.vocab, self.hidden), "embedding"),)

    def ops(self, w):
        rows = min(w.positions, self.vocab)
        gathered = Tensor("embed_tokens.weight", (rows, self.hidden), "embedding")
        out = [Op("embedding", "memory", gathered_rows(w.positions, f"[{self.vocab},{self.hidden}]"),
                  weight_read=w.weight_bytes(gathered),
                  act_write=w.act_dtype.nbytes_flat(w.positions * self.hidden),
                  kind="embedding", weight=gathered.name,
                  book_extra_bytes=INDEX_BYTES * w.positions,   # the book also reads the int64 token ids
                  # its training count: the backward scatter-adds one value per token and width
                  book_train=train_rule(train_adds, 0, w.positions * self.hidden))]
        if self.dropout:
            out[0] = with_dropout_mask(out[0], w.positions * self.hidden)
        if self.scale:
            out.append(elementwise(w, "embedding_scale", w.positions * self.hidden,
                                   VECTOR_FLOPS["scale"]))
        return out

    def shard(self, tp, ep=1):
        """Vocab-parallel (Megatron VocabParallelEmbedding): each TP device holds
        ceil(vocab / tp) rows, the last one fewer when tp does not divide the
        vocabulary (the count states the largest shard; no padding rows)."""
        return self.replace(vocab=ceil_div(self.vocab, tp))


class WeightsOnly(Block):
    """Tensors a device holds but runs no operator on: a pipeline's last stage
    keeps a copy of a tied embedding matrix for its output head."""
    held: tuple
    label = "held weights"

    def tensors(self):
        return self.held

    def shard(self, tp, ep=1):
        raise UserError("held weights are already a shard")


class RMSNorm(Block):
    """RMSNorm over every position: 4 FLOPs per element, a weight of `width`."""
    history_independent = True   # no cache, no position (see Block)
    name: str
    width: int

    def tensors(self):
        return (Tensor(f"{self.name}.weight", (self.width,), "vector"),)

    def ops(self, w):
        return [rmsnorm(w, self.name, w.positions, self.tensors()[0])]

    def shard(self, tp, ep=1):
        """Norms are replicated: every TP device holds and applies the whole weight."""
        return self


class Residual(Block):
    """Residual add of a sublayer's output into the stream: 1 FLOP per element;
    `scale` "scaled" (Granite's residual_multiplier m, x + m * f(x)): 2;
    "alpha_beta" (MiniMax, alpha * x + beta * f(x)): 3."""
    history_independent = True   # no cache, no position (see Block)
    width: int
    scale: str = ""

    def ops(self, w):
        op = residual(w, w.positions, self.width)
        if self.scale:
            op = op.replace(name=f"{self.scale}_residual_add",
                            vector_flops=w.positions * self.width * VECTOR_FLOPS[f"{self.scale}_residual"])
        return [op]


class LMHead(Block):
    """Output projection [vocab, hidden] on the positions `--logits` selects.

    With tied embeddings it owns no tensor (the embedding is counted once) but
    still reads the shared matrix. `post` names an elementwise step on every
    logit: "scale" (Granite logits_scaling, Cohere logit_scale: 1 FLOP) or
    "softcap" (Gemma 2 final_logit_softcapping: 3).
    """
    history_independent = True   # no cache, no position (see Block)
    vocab: int
    hidden: int
    tied: bool = False
    post: str = ""

    def weight(self):
        if self.tied:
            return Tensor("embed_tokens.weight (tied)", (self.vocab, self.hidden), "embedding")
        return Tensor("lm_head.weight", (self.vocab, self.hidden), "head")

    def tensors(self):
        return () if self.tied else (self.weight(),)

    def ops(self, w):
        rows = w.head_rows
        if not rows:
            return []
        out = [gemm(w, "lm_head", rows, self.weight(), replicated=True)]
        if self.post:
            out.append(elementwise(w, f"logits_{self.post}", rows * self.vocab, VECTOR_FLOPS[self.post],
                                   shape=f"[{rows},{self.vocab}]"))
        return out

    def shard(self, tp, ep=1):
        """Vocab-parallel head (column-parallel over the vocabulary): ceil(vocab / tp)
        rows per TP device, as the embedding."""
        return self.replace(vocab=ceil_div(self.vocab, tp))

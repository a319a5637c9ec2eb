"""IBM Granite 3.x: dense (model_type granite) and MoE (granitemoe).

GraniteForCausalLM (modeling_granite.py) is the Llama layer with four scalars:
`embedding_multiplier` scales the embedding output (1 FLOP per element),
`residual_multiplier` m scales each sublayer's output before its residual add
(x + m * f(x): 2 FLOPs per element), `attention_multiplier` replaces the
softmax scale 1/sqrt(head_dim) (no extra work) and `logits_scaling` divides
every logit (1 FLOP per logit).

GraniteMoeForCausalLM (modeling_granitemoe.py) replaces the MLP by
block_sparse_moe: a router `router.layer` [E, hidden] (no bias), experts
stored fused as input_linear [E, 2 * I, hidden] (gate and up) and
output_linear [E, hidden, I]: the same tensors as E gated MLPs of width
I = intermediate_size, listed split. No shared expert.
"""

from ..blocks.basic import LMHead, Residual, RMSNorm
from ..blocks.mlp import GatedMLP
from ..blocks.moe import MoE
from ..arch import Layer
from .common import activation, attention, model


def _layer(hidden, attn, mlp):
    return Layer((RMSNorm("input_layernorm", hidden), attn, Residual(hidden, scale="scaled"),
                  RMSNorm("post_attention_layernorm", hidden), mlp, Residual(hidden, scale="scaled")))


def _granite(cfg, model_id, mlp, notes=()):
    hidden, vocab = cfg.int("hidden_size"), cfg.int("vocab_size")
    bias = cfg.flag("attention_bias", False)
    attn = attention(cfg, qkv_bias=bias, o_bias=bias)
    for key in ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling"):
        cfg.number(key, 1.0)   # type-checked; their values change no count
    tied = cfg.flag("tie_word_embeddings", False)
    return model(cfg, model_id, [_layer(hidden, attn, mlp)] * cfg.int("num_hidden_layers"),
                 scale_embedding=True, head=LMHead(vocab, hidden, tied, post="scale"),
                 notes=("Granite multipliers: embedding output x embedding_multiplier, each residual "
                        "x + residual_multiplier * f(x), attention_multiplier as the softmax scale, "
                        "logits / logits_scaling.",) + notes)


def granite(cfg, model_id):
    mlp = GatedMLP(cfg.int("hidden_size"), cfg.int("intermediate_size"), activation(cfg),
                   bias=cfg.flag("mlp_bias", False))
    return _granite(cfg, model_id, mlp)


def granitemoe(cfg, model_id):
    moe = MoE(cfg.int("hidden_size"), *cfg.experts("num_local_experts"), cfg.int("intermediate_size"),
              act=activation(cfg), prefix="block_sparse_moe")
    return _granite(cfg, model_id, moe, notes=(
        "GraniteMoE stores each layer's experts fused (input_linear [E, 2I, h] = gate + up, "
        "output_linear [E, h, I]) and its router as router.layer; they are listed split "
        "(same counts and FLOPs).",))


ADAPTERS = {"granite": granite, "granitemoe": granitemoe}

"""Cohere Command R / Aya (model_type cohere; CohereForCausalLM, modeling_cohere.py).

Parallel layer with one norm: h = input_layernorm(x); x += attn(h) + mlp(h).
The norm is CohereLayerNorm: mean-subtracting LayerNorm with a weight and no
bias (counted as a LayerNorm, 7 FLOPs per element), also the final `norm`.
Attention without biases unless `attention_bias`; SwiGLU MLP; the head is tied
to the embedding by default and every logit is multiplied by `logit_scale`
(1 FLOP per logit). Not modelled (an error says so): `use_qk_norm` (Command
R+'s per-head q/k LayerNorms).
"""

from ..arch import Layer
from ..blocks.basic import LMHead, Residual
from ..blocks.gpt import LayerNorm
from ..blocks.mlp import GatedMLP
from .common import activation, attention, model


def cohere(cfg, model_id):
    if cfg.flag("use_qk_norm", False):
        raise cfg.unsupported("use_qk_norm (per-head q/k LayerNorms)")
    hidden, vocab = cfg.int("hidden_size"), cfg.int("vocab_size")
    bias = cfg.flag("attention_bias", False)
    attn = attention(cfg, qkv_bias=bias, o_bias=bias)
    mlp = GatedMLP(hidden, cfg.int("intermediate_size"), activation(cfg), shares_input=True)
    layer = Layer((LayerNorm("input_layernorm", hidden, bias=False), attn, mlp,
                   Residual(hidden), Residual(hidden)))
    tied = cfg.flag("tie_word_embeddings", True)
    cfg.number("logit_scale", 0.0625)
    return model(cfg, model_id, [layer] * cfg.int("num_hidden_layers"), tied_default=True,
                 final_norm=LayerNorm("norm", hidden, bias=False),
                 head=LMHead(vocab, hidden, tied, post="scale"),
                 notes=("Cohere parallel layer: x + attn(ln(x)) + mlp(ln(x)) with one weight-only "
                        "LayerNorm; logits x logit_scale.",))


ADAPTERS = {"cohere": cohere}

"""OLMo 2 (model_type olmo2; Olmo2ForCausalLM, transformers modeling_olmo2.py).

Post-norm layer without an input norm:
    x += post_attention_layernorm(attn(x)); x += post_feedforward_layernorm(mlp(x))
Attention has no biases unless `attention_bias`; q_norm and k_norm are RMSNorms
over each token's whole query (heads x head_dim) and key (kv_heads x head_dim)
vectors, not per head (Olmo2Attention: q_norm = RMSNorm(heads * head_dim)).
SwiGLU MLP, untied head unless tie_word_embeddings.
"""

from ..arch import Layer
from ..blocks.basic import Residual, RMSNorm
from ..blocks.mlp import GatedMLP
from .common import activation, attention, model


def olmo2(cfg, model_id):
    hidden = cfg.int("hidden_size")
    bias = cfg.flag("attention_bias", False)
    attn = attention(cfg, qkv_bias=bias, o_bias=bias, qk_norm=True, qk_norm_full=True)
    mlp = GatedMLP(hidden, cfg.int("intermediate_size"), activation(cfg))
    layer = Layer((attn, RMSNorm("post_attention_layernorm", hidden), Residual(hidden),
                   mlp, RMSNorm("post_feedforward_layernorm", hidden), Residual(hidden)))
    return model(cfg, model_id, [layer] * cfg.int("num_hidden_layers"), notes=(
        "OLMo 2 post-norm layer: x += norm(attn(x)); x += norm(mlp(x)); q/k norms over the whole "
        "query and key vectors of a token (under TP their statistics need the full width: "
        "that reduction is not charged).",))


ADAPTERS = {"olmo2": olmo2}

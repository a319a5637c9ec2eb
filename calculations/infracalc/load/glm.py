"""GLM-4 (model_type glm4; Glm4ForCausalLM, modeling_glm4.py) and GLM-4.5
(glm4_moe; Glm4MoeForCausalLM, modeling_glm4_moe.py).

glm4 layer (Glm4DecoderLayer), four RMSNorms:
    x += post_self_attn_layernorm(attn(input_layernorm(x)))
    x += post_mlp_layernorm(mlp(post_attention_layernorm(x)))
Attention: GQA with biases on q, k and v when `attention_bias` (none on o),
RoPE on partial_rotary_factor of each head (0.5 in the releases); the MLP is
SwiGLU with gate and up fused (gate_up_proj), listed split.

glm4_moe layer: the pre-norm Llama layer with the same attention (q_norm and
k_norm over head_dim when `use_qk_norm`); layer i < first_k_dense_replace has a
dense MLP of intermediate_size, the others a MoE: router gate [E, hidden] with an
FP32 e_score_correction_bias (Glm4MoeTopkRouter, sigmoid scores; group-limited
choice changes which experts, not how many), n_routed_experts experts of
moe_intermediate_size, top num_experts_per_tok, and n_shared_experts x
moe_intermediate_size of shared expert. num_nextn_predict_layers MTP modules
(one MoE decoder layer, enorm, hnorm, eh_proj, shared_head.norm each) are
reported apart, as for DeepSeek-V3 (load.deepseek).
"""

from ..arch import Layer
from ..blocks.basic import Residual, RMSNorm
from ..blocks.mlp import GatedMLP
from ..blocks.moe import MoE
from .common import activation, attention, model, prenorm_layer
from .deepseek import _mtp


def _attention(cfg, qk_norm=False):
    bias = cfg.flag("attention_bias", False)
    return attention(cfg, qkv_bias=bias, o_bias=False, qk_norm=qk_norm)


def glm4(cfg, model_id):
    hidden = cfg.int("hidden_size")
    mlp = GatedMLP(hidden, cfg.int("intermediate_size"), activation(cfg))
    layer = Layer((RMSNorm("input_layernorm", hidden), _attention(cfg),
                   RMSNorm("post_self_attn_layernorm", hidden), Residual(hidden),
                   RMSNorm("post_attention_layernorm", hidden), mlp,
                   RMSNorm("post_mlp_layernorm", hidden), Residual(hidden)))
    return model(cfg, model_id, [layer] * cfg.int("num_hidden_layers"), notes=(
        "GLM-4 layer: four RMSNorms (sublayer outputs normed before each residual add); "
        "gate_up_proj listed split as gate_proj and up_proj (same counts).",))


def glm4_moe(cfg, model_id):
    hidden, act = cfg.int("hidden_size"), activation(cfg)
    attn = _attention(cfg, qk_norm=cfg.flag("use_qk_norm", False))
    inter = cfg.int("moe_intermediate_size")
    moe = MoE(hidden, *cfg.experts("n_routed_experts"), inter,
              shared_inter=cfg.int("n_shared_experts", 0, low=0) * inter, act=act, score_bias=True)
    dense = prenorm_layer(hidden, attn, GatedMLP(hidden, cfg.int("intermediate_size"), act))
    sparse = prenorm_layer(hidden, attn, moe)
    first = cfg.int("first_k_dense_replace", 0, low=0)

    def make_layer(i):
        return sparse if i >= first else dense

    n = cfg.int("num_hidden_layers")
    return model(cfg, model_id, [make_layer(i) for i in range(n)], parts=_mtp(cfg, make_layer), notes=(
        f"GLM-4.5 MoE: layers 0-{first - 1} dense, {first}-{n - 1} MoE with sigmoid routing and an "
        "FP32 e_score_correction_bias per expert; group-limited routing changes which experts are "
        "chosen, not how many.",) if first else (
        "GLM-4.5 MoE with sigmoid routing and an FP32 e_score_correction_bias per expert.",))


ADAPTERS = {"glm4": glm4, "glm4_moe": glm4_moe}

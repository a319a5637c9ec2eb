"""MiniMax-Text-01 / MiniMax-M1 (model_type minimax_text_01, minimax_m1: the
remote code modeling_minimax_text_01.py / modeling_minimax_m1.py; minimax:
transformers' MiniMaxForCausalLM): lightning attention with a softmax layer
after every seven (blocks/lightning.py), Mixtral-style MoE in every layer.

Layer kinds: `attn_type_list` (0 = lightning, 1 = softmax) or, in the
transformers config, `layer_types` (linear_attention | full_attention).
Softmax layers: GQA q/k/v/o without biases, RoPE on `rotary_dim` of each head
(partial_rotary_factor in the transformers config). MoE: `num_local_experts`
experts of `intermediate_size`, top `num_experts_per_tok`, router
block_sparse_moe.gate; a shared expert of `shared_intermediate_size` with a
sigmoid coefficient [1, hidden] when that is > 0.

Layer (postnorm, as every release): h = input_layernorm(x);
x = alpha * h + beta * attn(h); h = post_attention_layernorm(x);
x = alpha' * h + beta' * moe(h): each residual is 3 FLOPs per element
(two multiplies, one add); without postnorm the residual is the un-normed x
(the same cost). Parameters per lightning layer 5 h H d + H d, per softmax
layer h (H + 2 KV) d + H d h.
"""

from ..arch import Layer
from ..errors import quote
from ..blocks.basic import Residual, RMSNorm
from ..blocks.lightning import BLOCK, LightningAttention
from ..blocks.moe import MoE
from .common import activation, attention, head_dim, model

KINDS = {0: "linear_attention", 1: "full_attention"}


def layer_kinds(cfg):
    n = cfg.int("num_hidden_layers")
    if cfg.has("layer_types"):
        return cfg.layer_types(tuple(KINDS.values()))
    value = cfg.require("attn_type_list")
    if not isinstance(value, list) or len(value) != n or any(isinstance(v, bool) or not isinstance(v, int) or v not in KINDS for v in value):
        raise cfg.unsupported(f"attn_type_list (expected {n} entries of 0 or 1)")
    return tuple(KINDS[v] for v in value)


def _shared_inter(cfg):
    value = cfg.get("shared_intermediate_size", 0)
    values = value if isinstance(value, list) else [value]
    if (not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in values)
            or len(set(values)) != 1):
        raise cfg.unsupported(f"shared_intermediate_size {quote(value, 40)} (one width for every layer)")
    return values[0]


def minimax(cfg, model_id):
    hidden, hd = cfg.int("hidden_size"), head_dim(cfg)
    heads = cfg.int("num_attention_heads")
    rope = cfg.int("rotary_dim") if cfg.has("rotary_dim") else int(hd * cfg.fraction("partial_rotary_factor", 1.0))
    softmax = attention(cfg, rope_dim=rope)
    lightning = LightningAttention(hidden, heads, hd, cfg.int("block_size", cfg.int("block", BLOCK)))
    shared = _shared_inter(cfg)
    moe = MoE(hidden, *cfg.experts("num_local_experts"), cfg.int("intermediate_size"), act=activation(cfg),
              shared_inter=shared, shared_gate=bool(shared), shared_name="shared_mlp",
              prefix="block_sparse_moe")
    res = Residual(hidden, scale="alpha_beta")

    def layer(mixer):
        return Layer((RMSNorm("input_layernorm", hidden), mixer, res,
                      RMSNorm("post_attention_layernorm", hidden), moe, res))

    kinds = layer_kinds(cfg)
    lin, full = layer(lightning), layer(softmax)
    layers = [lin if k == "linear_attention" else full for k in kinds]
    n_full = kinds.count("full_attention")
    return model(cfg, model_id, layers, notes=(
        f"{len(kinds) - n_full} lightning-attention layers (fixed fp32 state per request, no KV cache) and "
        f"{n_full} softmax-attention layers (RoPE on {rope} of {hd} dims per head).",
        "MiniMax residuals alpha * x + beta * f(x) (3 vector FLOPs per element); the lightning "
        "layer's qkv_proj is fused (listed as stored).",))


ADAPTERS = {"minimax": minimax, "minimax_m1": minimax, "minimax_text_01": minimax}

"""Mixture-of-experts decoders: Qwen3-MoE, Qwen2-MoE and Mixtral.

- qwen3_moe: Qwen3 attention (q/k norms); layer i is MoE when
  (i + 1) % decoder_sparse_step == 0 and i is not in mlp_only_layers,
  otherwise a dense MLP of intermediate_size (Qwen3MoeDecoderLayer).
- mixtral: Mistral attention (optional sliding window); every layer has
  num_local_experts experts of intermediate_size, top num_experts_per_tok.
- qwen2_moe (Qwen1.5-MoE, Qwen2-MoE; modeling_qwen2_moe.py): Qwen2 attention
  (biases on q, k, v); layer i is MoE as in qwen3_moe, with num_experts experts
  of moe_intermediate_size plus one shared expert of
  shared_expert_intermediate_size scaled by sigmoid(x . shared_expert_gate)
  (Qwen2MoeSparseMoeBlock), else a dense MLP of intermediate_size.
"""

from ..blocks.mlp import GatedMLP
from ..blocks.moe import MoE
from .common import activation, attention, model, prenorm_layer


def qwen3_moe(cfg, model_id):
    bias = cfg.flag("attention_bias", False)
    return _qwen_moe(cfg, model_id, attention(cfg, qkv_bias=bias, o_bias=bias, qk_norm=True))


def qwen2_moe(cfg, model_id):
    shared = cfg.int("shared_expert_intermediate_size", low=0) if cfg.has("shared_expert_intermediate_size") else 0
    return _qwen_moe(cfg, model_id, attention(cfg, qkv_bias=True, o_bias=False),
                     shared_inter=shared, shared_gate=bool(shared), shared_name="shared_expert")


def _qwen_moe(cfg, model_id, attn, **shared):
    """Layer i is MoE when (i + 1) % decoder_sparse_step == 0 and i is not in
    mlp_only_layers, otherwise a dense MLP of intermediate_size."""
    hidden, n = cfg.int("hidden_size"), cfg.int("num_hidden_layers")
    if cfg.flag("use_sliding_window", False):
        raise cfg.unsupported("use_sliding_window")
    act = activation(cfg)
    moe = MoE(hidden, *cfg.experts("num_experts"), cfg.int("moe_intermediate_size"), act=act, **shared)
    step = cfg.int("decoder_sparse_step", 1)
    dense_layers = cfg.layer_indices("mlp_only_layers", n)
    dense = GatedMLP(hidden, cfg.int("intermediate_size"), act) if dense_layers or step > 1 else None
    layers = [prenorm_layer(hidden, attn, moe if (i + 1) % step == 0 and i not in dense_layers else dense)
              for i in range(n)]
    return model(cfg, model_id, layers)


def mixtral(cfg, model_id):
    hidden = cfg.int("hidden_size")
    window = cfg.int("sliding_window") if cfg.has("sliding_window") else None
    attn = attention(cfg, window=window)
    moe = MoE(hidden, *cfg.experts("num_local_experts"), cfg.int("intermediate_size"),
              act=activation(cfg), prefix="block_sparse_moe")
    return model(cfg, model_id, [prenorm_layer(hidden, attn, moe)] * cfg.int("num_hidden_layers"))


ADAPTERS = {"qwen3_moe": qwen3_moe, "qwen2_moe": qwen2_moe, "mixtral": mixtral}

"""GPT-OSS (model_type gpt_oss): alternating sliding / full attention with sinks,
MoE with biased router and experts, clamped SwiGLU, MXFP4 experts.

Facts from transformers modeling_gpt_oss.py and the released checkpoints:
- attention: q/k/v/o projections with biases (`attention_bias`), RoPE over the
  whole head, one learned sink logit per head (`self_attn.sinks` [heads]) that
  joins every softmax row; `layer_types[i]` is sliding_attention (window
  `sliding_window` keys, the query's own included) or full_attention;
- MoE (`mlp`): router Linear(hidden, E) with bias, top `num_experts_per_tok`
  of `num_local_experts`; each expert gate_up [2I, hidden] + bias [2I] and
  down [hidden, I] + bias [hidden] (stored fused as gate_up_proj; listed split
  here: same counts); activation: g = min(g, limit), u = clamp(u, +-limit),
  (u + 1) * g * sigmoid(1.702 g) (VECTOR_FLOPS['swiglu_clamp']);
- quantization_config quant_method mxfp4: expert matrices ship as MXFP4 (E2M1
  values + one E8M0 scale per 32 along the input dimension); attention, router,
  embeddings, head, norms, biases and sinks stay bf16.
"""

from ..blocks.moe import MoE
from ..errors import quote
from .common import attention, model, prenorm_layer

LAYER_TYPES = ("sliding_attention", "full_attention")


def gpt_oss(cfg, model_id):
    hidden, n = cfg.int("hidden_size"), cfg.int("num_hidden_layers")
    kinds = cfg.layer_types(LAYER_TYPES)
    experts, top_k = cfg.experts("num_local_experts")
    if cfg.has("experts_per_token") and cfg.int("experts_per_token") != top_k:
        raise cfg.unsupported("experts_per_token different from num_experts_per_tok")
    bias = cfg.flag("attention_bias", False)
    window = cfg.int("sliding_window")
    full = attention(cfg, qkv_bias=bias, o_bias=bias, sinks=True)
    local = full.replace(window=window)
    moe = MoE(hidden, experts, top_k, cfg.int("intermediate_size"),
              act="swiglu_clamp", router_bias=True, expert_bias=True)
    layers = [prenorm_layer(hidden, local if k == "sliding_attention" else full, moe) for k in kinds]
    n_local = kinds.count("sliding_attention")
    notes = [f"{n_local} sliding-window layers (window {window} keys including the query's own) and "
             f"{n - n_local} full-attention layers (layer_types); every layer has attention sinks "
             "(one logit per head in each softmax row).",
             "Experts: clamped SwiGLU (swiglu_limit "
             f"{cfg.number('swiglu_limit', 7.0)}, alpha 1.702), router and expert biases; "
             "gate_up_proj is stored fused and listed split (same counts).",
             "Active parameters include the input embedding; OpenAI's model-card figure "
             "(3.61B / 5.13B) leaves it out and keeps the unembedding."]
    native = ()
    quant = cfg.get("quantization_config")
    if quant is not None:
        if not isinstance(quant, dict) or quant.get("quant_method") != "mxfp4":
            raise cfg.unsupported(f"quantization_config {quote(quant)}")
        native = (("expert", "mxfp4"),)
        notes.append("Checkpoint stores the expert matrices in MXFP4 (E2M1 + one E8M0 scale per 32 "
                     "values); everything else in bf16.")
    return model(cfg, model_id, layers, native_formats=native, notes=tuple(notes))


ADAPTERS = {"gpt_oss": gpt_oss}

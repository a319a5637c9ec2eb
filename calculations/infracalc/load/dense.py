"""Dense decoder families: Llama 3.x, Mistral, Qwen2/2.5, Qwen3, Phi-3.

All share the pre-norm layer: RMSNorm, attention, residual, RMSNorm, gated
MLP, residual. They differ only in biases, q/k norms and windows:
- llama: `attention_bias` on q, k, v and o; `mlp_bias` on the MLP;
- qwen2: q, k, v always carry a bias, o none (Qwen2Attention); with
  `use_sliding_window`, layer i uses the window when i >= max_window_layers
  (default 28), the rule of transformers' Qwen2Config.layer_types and vLLM
  (some Qwen model-card answers read it the other way round; the output says
  which layers are windowed);
- qwen3: q_norm and k_norm (RMSNorm over head_dim); `attention_bias` on q, k, v, o;
- mistral: `sliding_window` W on every layer when set;
- phi3: fused qkv_proj and gate_up_proj (same counts as split projections),
  `sliding_window` on every layer when set (Phi-3.5 and Phi-4-mini: their
  sliding_window 262144 exceeds the maximum context, so no key ever leaves it);
- internlm2 (InternLM2ForCausalLM, remote code modeling_internlm2.py): the
  Llama layer with a fused wqkv, wo, feed_forward w1/w3/w2, attention_norm and
  ffn_norm, tok_embeddings and output (listed with Llama's names; same counts);
  `bias` puts biases on wqkv and wo.
"""

from ..blocks.mlp import GatedMLP
from .common import activation, attention, model, prenorm_layer


def _window(cfg, gate_key=None):
    """The sliding window when the config enables it (Qwen2 gates it with a flag)."""
    if gate_key is not None and not cfg.flag(gate_key, False):
        return None
    return cfg.int("sliding_window") if cfg.has("sliding_window") else None


def dense(cfg, model_id, *, qkv_bias, o_bias, qk_norm=False, window=None, windowed_from=0, notes=()):
    """Identical pre-norm layers; with a window, layers i >= windowed_from use it."""
    hidden = cfg.int("hidden_size")
    full = attention(cfg, qkv_bias=qkv_bias, o_bias=o_bias, qk_norm=qk_norm)
    local = full.replace(window=window)
    mlp = GatedMLP(hidden, cfg.int("intermediate_size"), activation(cfg),
                   bias=cfg.flag("mlp_bias", False))
    layers = [prenorm_layer(hidden, local if i >= windowed_from else full, mlp)
              for i in range(cfg.int("num_hidden_layers"))]
    return model(cfg, model_id, layers, notes=notes)


def llama(cfg, model_id):
    bias = cfg.flag("attention_bias", False)
    return dense(cfg, model_id, qkv_bias=bias, o_bias=bias)


def mistral(cfg, model_id):
    return dense(cfg, model_id, qkv_bias=False, o_bias=False, window=_window(cfg))


QWEN2_MAX_WINDOW_LAYERS = 28   # Qwen2Config.max_window_layers default


def qwen2(cfg, model_id):
    window = _window(cfg, "use_sliding_window")
    if window is None:
        return dense(cfg, model_id, qkv_bias=True, o_bias=False)
    first, n = cfg.int("max_window_layers", QWEN2_MAX_WINDOW_LAYERS, low=0), cfg.int("num_hidden_layers")
    rule = "layer i is windowed when i >= max_window_layers, as transformers and vLLM apply it"
    if first >= n:
        note = f"use_sliding_window with max_window_layers {first} >= {n} layers: no layer is windowed ({rule})."
    else:
        which = f"layer {first} uses" if first == n - 1 else f"layers {first}-{n - 1} use"
        note = f"use_sliding_window: {which} the {window}-key window ({rule}); the others attend fully."
    return dense(cfg, model_id, qkv_bias=True, o_bias=False, window=window, windowed_from=first,
                 notes=(note,))


def qwen3(cfg, model_id):
    bias = cfg.flag("attention_bias", False)
    window = _window(cfg, "use_sliding_window")
    if window is not None:
        raise cfg.unsupported("use_sliding_window")
    return dense(cfg, model_id, qkv_bias=bias, o_bias=bias, qk_norm=True)


def phi3(cfg, model_id):
    bias = cfg.flag("attention_bias", False)
    return dense(cfg, model_id, qkv_bias=bias, o_bias=bias, window=_window(cfg),
                 notes=("Phi-3 stores fused qkv_proj and gate_up_proj; they are listed "
                        "split (same parameter count and FLOPs).",))


def ministral3(cfg, model_id):
    """Ministral 3 (the text model of mistral3 wrappers since transformers 5): Mistral's
    layer; rope_parameters' llama_4_scaling_beta scales queries by a per-position factor."""
    notes = (("llama_4_scaling_beta: queries scaled by a per-position factor; that one multiply "
              "per query element is not counted.",)
             if isinstance(cfg.get("rope_parameters"), dict) and "llama_4_scaling_beta" in cfg.get("rope_parameters")
             else ())
    return dense(cfg, model_id, qkv_bias=False, o_bias=False, window=_window(cfg), notes=notes)


def internlm2(cfg, model_id):
    bias = cfg.flag("bias", False)
    return dense(cfg, model_id, qkv_bias=bias, o_bias=bias,
                 notes=("InternLM2 stores a fused wqkv and w1/w3/w2; they are listed split with "
                        "Llama's names (same parameter count and FLOPs).",))


ADAPTERS = {"llama": llama, "mistral": mistral, "qwen2": qwen2, "qwen3": qwen3, "phi3": phi3,
            "internlm2": internlm2, "ministral3": ministral3}

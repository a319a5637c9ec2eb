"""Llama 4 (model_type llama4 / llama4_text): chunked RoPE layers, global NoPE
layers, MoE with a shared expert.

Facts from transformers configuration_llama4.py / modeling_llama4.py:
- `no_rope_layers[i]` is 1 when layer i uses RoPE; default
  int((i + 1) % no_rope_layer_interval != 0) with interval 4, so every 4th
  layer (3, 7, ...) is NoPE. `layer_types` defaults to chunked_attention on
  RoPE layers and full_attention on NoPE layers; chunked attention lets the
  query at position p see keys [floor(p/C)*C, p], C = attention_chunk_size;
- `use_qk_norm`: a weightless L2 norm (Llama4TextL2Norm) of q and k, on RoPE
  layers only;
- `moe_layers` default range(step - 1, n, step), step = interleave_moe_layer_step;
  an MoE layer (`feed_forward`) has a router Linear(hidden, E) without bias,
  E experts of intermediate_size (top num_experts_per_tok) and one shared
  expert of intermediate_size; other layers a dense MLP of intermediate_size_mlp;
- tie_word_embeddings defaults to false; attn_temperature_tuning scales NoPE
  layers' queries (one multiply per query element: not counted, see notes).
"""

from ..arch import Part
from ..blocks.mlp import GatedMLP
from ..blocks.moe import MoE
from .common import activation, attention, model, prenorm_layer
from .config import Config

LAYER_TYPES = ("chunked_attention", "full_attention")
NO_ROPE_INTERVAL = 4      # Llama4TextConfig.no_rope_layer_interval default
CHUNK_DEFAULT = 8192      # Llama4TextConfig.attention_chunk_size default


def _flags(tc, key, n):
    value = tc.get(key)
    if not isinstance(value, list) or len(value) != n or any(v not in (0, 1) for v in value):
        raise tc.unsupported(f"{key} (need {n} entries of 0 or 1)")
    return value


def rope_layers(tc, notes):
    """Per layer: True when it uses RoPE (no_rope_layers[i] == 1)."""
    n = tc.int("num_hidden_layers")
    if tc.has("no_rope_layers"):
        return [bool(v) for v in _flags(tc, "no_rope_layers", n)]
    interval = tc.int("no_rope_layer_interval", NO_ROPE_INTERVAL)
    notes.append(f"no_rope_layers absent: transformers Llama4TextConfig default used (layer i is NoPE "
                 f"and global when (i + 1) % {interval} == 0, RoPE and chunked otherwise).")
    return [(i + 1) % interval != 0 for i in range(n)]


def chunked_layers(tc, rope, notes):
    """Per layer: True when attention is chunked."""
    if not tc.has("layer_types"):
        return list(rope)
    return [k == "chunked_attention" for k in tc.layer_types(LAYER_TYPES)]


def moe_layer_set(tc):
    n = tc.int("num_hidden_layers")
    if tc.has("moe_layers"):
        return tc.layer_indices("moe_layers", n)
    step = tc.int("interleave_moe_layer_step", 1)
    return set(range(step - 1, n, step))


def llama4(cfg, model_id):
    tc = cfg
    if cfg.model_type == "llama4":
        sub = cfg.sub("text_config")
        tc = Config(sub.data, sub.source, cfg.model_type)
    hidden, n = tc.int("hidden_size"), tc.int("num_hidden_layers")
    notes = []
    rope = rope_layers(tc, notes)
    chunked = chunked_layers(tc, rope, notes)
    chunk = tc.int("attention_chunk_size", CHUNK_DEFAULT)
    bias = tc.flag("attention_bias", False)
    qk_norm = tc.flag("use_qk_norm", True)
    base = attention(tc, qkv_bias=bias, o_bias=bias)
    act = activation(tc)
    inter = tc.int("intermediate_size")
    moe = MoE(hidden, *tc.experts("num_local_experts"), inter,
              shared_inter=inter, act=act, prefix="feed_forward")
    moe_at = moe_layer_set(tc)
    dense = GatedMLP(hidden, tc.int("intermediate_size_mlp"), act, prefix="feed_forward") \
        if len(moe_at) < n else None
    layers = []
    for i in range(n):
        attn = base.replace(rope_dim=base.rope_dim if rope[i] else 0,
                            chunk=chunk if chunked[i] else None,
                            qk_l2norm=qk_norm and rope[i])
        layers.append(prenorm_layer(hidden, attn, moe if i in moe_at else dense))
    n_chunked = sum(chunked)
    notes.insert(0, f"{n_chunked} chunked-attention layers (chunk {chunk}: the query at position p sees "
                    f"keys floor(p/{chunk})*{chunk} .. p) and {n - n_chunked} full-attention layers; "
                    f"{sum(rope)} RoPE and {n - sum(rope)} NoPE layers.")
    if qk_norm:
        notes.append("use_qk_norm: weightless L2 norm of q and k on RoPE layers (vector FLOPs, no parameters).")
    if tc.flag("attn_temperature_tuning", True) and n > sum(rope):
        notes.append("attn_temperature_tuning: NoPE layers scale queries by a per-position factor; "
                     "that one multiply per query element is not counted.")
    parts, lacking = (), []
    if cfg.model_type == "llama4":
        known = cfg.has("vision_config")
        parts = (Part("vision tower + multimodal projector", None,
                      "not modelled: parameters unknown" if known else
                      "vision_config absent from this config: parameters unknown"),)
        lacking = [k for k in ("vision_config", "no_rope_layers", "moe_layers", "tie_word_embeddings",
                               "attn_temperature_tuning") if not (cfg.has(k) or tc.has(k))]
    if lacking:
        notes.append("This config lacks " + ", ".join(lacking) + "; transformers Llama4Config defaults "
                     "stand in where they affect counts (tie_word_embeddings false).")
    return model(tc, model_id, layers, parts=parts, notes=tuple(notes))


ADAPTERS = {"llama4": llama4, "llama4_text": llama4}

"""Qwen3-Next: a hybrid of Gated DeltaNet and gated full attention, with MoE.

From Hugging Face `configuration_qwen3_next.py` / `modeling_qwen3_next.py`:
- layer_types, when the config has none, is derived from
  full_attention_interval (default 4): layer i is full attention when
  (i + 1) % interval == 0, otherwise linear attention (Gated DeltaNet);
- full attention: `Qwen3NextAttention`, q_proj doubled (query + sigmoid
  output gate), q_norm/k_norm over head_dim, partial RoPE
  (partial_rotary_factor, default 0.25), attention_bias default false;
- linear attention: `Qwen3NextGatedDeltaNet` (see blocks.linear_attention);
- MLP: `Qwen3NextSparseMoeBlock` (router `gate`, experts of
  moe_intermediate_size, one `shared_expert` of
  shared_expert_intermediate_size with a sigmoid `shared_expert_gate`
  [1, hidden]) when i is not in mlp_only_layers and
  (i + 1) % decoder_sparse_step == 0, else a dense MLP of intermediate_size;
- norms are zero-centred RMSNorms (weight stored as w, applied as 1 + w):
  same parameters and per-element cost as RMSNorm.
The published checkpoints also store a multi-token-prediction module (`mtp.*`,
loaded by vLLM/SGLang, ignored by transformers) that the config does not
announce: reported apart, not counted.
"""

from ..arch import Part
from ..blocks.gated_attention import GatedAttention
from ..blocks.linear_attention import GatedDeltaNet
from ..blocks.mlp import GatedMLP
from ..blocks.moe import MoE
from .common import activation, head_counts, head_dim, model, prenorm_layer

LAYER_TYPES = ("linear_attention", "full_attention")
TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def layer_types(cfg):
    if cfg.has("layer_types"):
        return list(cfg.layer_types(LAYER_TYPES))
    n = cfg.int("num_hidden_layers")
    interval = cfg.int("full_attention_interval", 4)
    return ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]


def gated_attention(cfg):
    heads, kv_heads = head_counts(cfg)
    if cfg.flag("attention_bias", False):
        raise cfg.unsupported("attention_bias")
    if cfg.flag("use_sliding_window", False):
        raise cfg.unsupported("use_sliding_window")
    hd = head_dim(cfg)
    return GatedAttention(hidden=cfg.int("hidden_size"), heads=heads, kv_heads=kv_heads, head_dim=hd,
                          rope_dim=int(hd * cfg.fraction("partial_rotary_factor", 0.25)), qk_norm=True)


def gated_deltanet(cfg):
    k_heads, v_heads = cfg.int("linear_num_key_heads"), cfg.int("linear_num_value_heads")
    if v_heads % k_heads:
        raise cfg.unsupported(f"linear_num_value_heads {v_heads} not a multiple of linear_num_key_heads {k_heads}")
    act = cfg.string("hidden_act", "silu")
    if act != "silu":
        raise cfg.unsupported(f"hidden_act '{act}' in the Gated DeltaNet conv and gated norm")
    torch_dtype = cfg.string("torch_dtype", "bfloat16")
    if torch_dtype not in TORCH_DTYPES:
        raise cfg.unsupported(f"torch_dtype '{torch_dtype}'")
    return GatedDeltaNet(hidden=cfg.int("hidden_size"), k_heads=k_heads, v_heads=v_heads,
                         k_dim=cfg.int("linear_key_head_dim"), v_dim=cfg.int("linear_value_head_dim"),
                         conv_kernel=cfg.int("linear_conv_kernel_dim"),
                         conv_dtype=TORCH_DTYPES[torch_dtype])


def moe(cfg, act):
    return MoE(cfg.int("hidden_size"), *cfg.experts("num_experts"),
               cfg.int("moe_intermediate_size"), shared_inter=cfg.int("shared_expert_intermediate_size"),
               shared_gate=True, shared_name="shared_expert", act=act)


def mtp_part(hidden, attn_layer):
    """mtp.fc [H, 2H], pre_fc_norm_embedding, pre_fc_norm_hidden, one full-attention
    MoE decoder layer and mtp.norm (vLLM qwen3_next_mtp.py); embeddings and head shared."""
    params = 2 * hidden * hidden + 3 * hidden + attn_layer.params
    return Part("mtp", params, "multi-token-prediction module in the published checkpoint "
                "(fc, 3 norms, one gated-attention MoE layer; shares embedding and head), "
                "not announced by the config, ignored by transformers")


def qwen3_next(cfg, model_id):
    hidden = cfg.int("hidden_size")
    act = activation(cfg)
    step = cfg.int("decoder_sparse_step", 1)
    dense_layers = cfg.layer_indices("mlp_only_layers", cfg.int("num_hidden_layers"))
    sparse = moe(cfg, act) if cfg.int("num_experts", 0, low=0) else None
    dense = GatedMLP(hidden, cfg.int("intermediate_size"), act) if dense_layers or step > 1 or not sparse else None
    mixers = {"linear_attention": gated_deltanet(cfg), "full_attention": gated_attention(cfg)}
    types = layer_types(cfg)
    layers = [prenorm_layer(hidden, mixers[kind],
                            sparse if sparse and (i + 1) % step == 0 and i not in dense_layers else dense)
              for i, kind in enumerate(types)]
    gdn = mixers["linear_attention"]
    source = ("layer_types" if cfg.has("layer_types") else
              f"full_attention_interval {cfg.int('full_attention_interval', 4)} "
              "(no layer_types key): layer i is full attention when (i + 1) % interval == 0")
    notes = (
        f"Layer types from {source}: {types.count('full_attention')} gated full-attention, "
        f"{types.count('linear_attention')} Gated DeltaNet layers.",
        "Gated DeltaNet core: chunked form (chunk 64) when a request has more than one new token, "
        "recurrent form for one (--delta-form); the other form's FLOPs are in the operator's shape.",
        f"Gated DeltaNet state per request and layer, independent of context and of --kv-dtype: "
        f"recurrent {gdn.v_heads}x{gdn.k_dim}x{gdn.v_dim} in {gdn.state_dtype} "
        f"({gdn.recurrent_state_bytes()} B; HF reference and SGLang default; vLLM's default keeps "
        f"the model dtype) + conv {gdn.conv_kernel - 1}x{gdn.conv_dim} in {gdn.conv_dtype} "
        f"({gdn.conv_state_bytes()} B).",
    )
    mtp = mtp_part(hidden, prenorm_layer(hidden, mixers["full_attention"], sparse or dense))
    return model(cfg, model_id, layers, parts=(mtp,), notes=notes)


ADAPTERS = {"qwen3_next": qwen3_next}


def qwen3_5(cfg, model_id):
    """Qwen3.5 / Qwen3.6 (model_type qwen3_5_moe, qwen3_5; their text models
    qwen3_5_moe_text, qwen3_5_text): the Qwen3-Next layer mix (Gated DeltaNet and gated
    full attention per layer_types, shared-expert MoE or a dense MLP, one MTP layer),
    with the text model nested in `text_config` of the vision-language wrapper. The
    Hugging Face Qwen3.5 modules split in_proj_qkvz and in_proj_ba into in_proj_qkv,
    in_proj_z, in_proj_b and in_proj_a: the same tensors' values, so the counts are
    Qwen3-Next's. The vision tower (vision_config, the Qwen3-VL tower) is counted by
    `vision.qwen3_vl_params` and reported apart."""
    from .vision import qwen3_vl_params, qwen3_vl_tower
    tc = cfg.sub("text_config") if cfg.has("text_config") else cfg
    if not tc.flag("attn_output_gate", True):
        raise tc.unsupported("attn_output_gate false")
    arch = qwen3_next(tc, model_id)
    if tc is not cfg and cfg.has("vision_config"):
        vc = cfg.sub("vision_config")
        params = qwen3_vl_params(vc)
        part = Part("vision", params,
                    f"vision tower ({vc.int('depth')} blocks, hidden {vc.int('hidden_size')}) and patch merger "
                    "(vision_config); images are not part of the text workload, every command runs the text model",
                    tower=qwen3_vl_tower(vc, params))
        arch = arch.replace(parts=arch.parts + (part,), model_type=cfg.model_type)
    return arch


ADAPTERS.update({"qwen3_5_moe": qwen3_5, "qwen3_5_moe_text": qwen3_5, "qwen3_5": qwen3_5, "qwen3_5_text": qwen3_5})

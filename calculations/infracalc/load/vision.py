"""Vision-language wrappers, loaded through their text model: llava, mistral3,
qwen2_5_vl, mllama (text model only; see `mllama`).

The text model (`text_config`, or the top-level keys where the wrapper keeps
them there, as Qwen2.5-VL does) is built by the adapter of its own model_type;
the workloads of every command are text-only. The vision tower and the
projector are counted from `vision_config` and reported apart as a `Part`
(never in the model's parameters or weight bytes), or stated as not modelled
(params unknown) where a formula is not written here.

Sparse text_config (LLaVA-1.5 keeps only the keys that differ): absent keys take
the transformers LlamaConfig defaults (configuration_llama.py), named in the
notes. Vision towers, parameters by formula (d = vision hidden size, I = its
intermediate size, L = layers, p = patch size, C = channels):

- CLIP (clip_vision_model, LlavaForConditionalGeneration): class embedding d,
  patch conv C p^2 d (no bias), position table ((image/p)^2 + 1) d, pre and post
  LayerNorms 2 x 2d; per layer q/k/v/out with biases 4(d^2 + d), two
  LayerNorms 4d, fc1 I d + I, fc2 d I + d. Projector (LlavaMultiModalProjector):
  linear_1 [h, d] + h, linear_2 [h, h] + h (h = text hidden).
- Pixtral (mistral3): patch conv C p^2 d (no bias), ln_pre d; per layer
  attention_norm and ffn_norm 2d, q/k/v/o 4d^2, gated MLP 3 d I (no biases).
  Projector (Mistral3MultiModalProjector): norm d, patch_merger.merging_layer
  [d, d s^2] (s = spatial_merge_size), linear_1 [h, d], linear_2 [h, h]
  (biases when multimodal_projector_bias).
- Qwen2.5-VL vision (Qwen2_5_VisionTransformerPretrainedModel): patch_embed
  Conv3d C t p^2 d (t = temporal_patch_size, no bias); per block norm1, norm2
  2d, qkv 3d^2 + 3d, proj d^2 + d, gated MLP with biases 3 d I + 2 I + d; merger
  ln_q d, mlp [m, m] + m and [o, m] + o with m = d s^2, o = out_hidden_size.
- Qwen3.5 / Qwen3.6 vision (the Qwen3-VL tower, Qwen3_5VisionModel): patch_embed
  Conv3d with bias C t p^2 d + d; learned pos_embed n d (n =
  num_position_embeddings); per block norm1, norm2 LayerNorms 4d, qkv 3d^2 + 3d,
  proj d^2 + d, MLP linear_fc1 [I, d] + I and linear_fc2 [d, I] + d (not gated);
  merger LayerNorm 2d, linear_fc1 [m, m] + m, linear_fc2 [o, m] + o; each
  deepstack merger (one per deepstack_visual_indexes entry) the same with its
  LayerNorm over m (2m). Qwen3-VL (`qwen3_vl`) has the same tower; its FLOPs per
  image: `analyses/vision_encoder.py`.
"""

from ..arch import Part, VisionTower
from .adapters import adapter
from .config import Config

# transformers LlamaConfig.__init__ defaults (configuration_llama.py)
LLAMA_DEFAULTS = {
    "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
    "num_attention_heads": 32, "hidden_act": "silu", "max_position_embeddings": 2048,
    "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
}
TEXT_DEFAULTS = {"llama": LLAMA_DEFAULTS}


def clip_params(vc):
    d, inter, layers = vc.int("hidden_size"), vc.int("intermediate_size"), vc.int("num_hidden_layers")
    patch, image, channels = vc.int("patch_size"), vc.int("image_size"), vc.int("num_channels", 3)
    if image % patch:
        raise vc.unsupported(f"image_size {image} not a multiple of patch_size {patch}")
    positions = (image // patch) ** 2 + 1
    per_layer = 4 * (d * d + d) + 4 * d + (inter * d + inter) + (d * inter + d)
    return d + channels * patch * patch * d + positions * d + 2 * 2 * d + layers * per_layer


def pixtral_params(vc):
    d, inter, layers = vc.int("hidden_size"), vc.int("intermediate_size"), vc.int("num_hidden_layers")
    patch, channels = vc.int("patch_size"), vc.int("num_channels", 3)
    return channels * patch * patch * d + d + layers * (2 * d + 4 * d * d + 3 * d * inter)


def qwen_vl_params(vc):
    d, inter, blocks = vc.int("hidden_size"), vc.int("intermediate_size"), vc.int("depth")
    patch, t = vc.int("patch_size"), vc.int("temporal_patch_size", 2)
    channels = vc.int("in_chans", vc.int("in_channels", 3))
    m, o = d * vc.int("spatial_merge_size", 2) ** 2, vc.int("out_hidden_size")
    block = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (3 * d * inter + 2 * inter + d)
    return channels * t * patch * patch * d + blocks * block + d + (m * m + m) + (o * m + o)


def qwen3_vl_params(vc):
    d, inter, blocks = vc.int("hidden_size"), vc.int("intermediate_size"), vc.int("depth")
    patch, t, channels = vc.int("patch_size"), vc.int("temporal_patch_size", 2), vc.int("in_channels", 3)
    m, o = d * vc.int("spatial_merge_size", 2) ** 2, vc.int("out_hidden_size")
    deepstack = vc.get("deepstack_visual_indexes", [])
    if not isinstance(deepstack, list):
        raise vc.unsupported(f"deepstack_visual_indexes {deepstack!r} (a list of block indices)")
    block = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (2 * d * inter + inter + d)
    projection = (m * m + m) + (o * m + o)
    return (channels * t * patch * patch * d + d + vc.int("num_position_embeddings") * d + blocks * block
            + 2 * d + projection + len(deepstack) * (2 * m + projection))


def _text_config(cfg):
    """The text model's Config (class defaults filled in for a sparse text_config) and the keys defaulted."""
    if not cfg.has("text_config"):
        return Config(cfg.data, cfg.source, cfg.model_type), ()
    tc = cfg.sub("text_config")
    defaults = TEXT_DEFAULTS.get(tc.model_type, {})
    missing = tuple(k for k in defaults if not tc.has(k))
    return tc.with_defaults(defaults) if defaults else tc, missing


def _without_mrope(tc):
    """(config, note): M-RoPE (rope_scaling type mrope) splits the rotary dims over
    time, height and width; for text positions it is ordinary RoPE (no length factor)."""
    rs = tc.get("rope_scaling")
    if isinstance(rs, dict) and (rs.get("type", rs.get("rope_type")) == "mrope" or "mrope_section" in rs):
        data = {k: v for k, v in tc.data.items() if k != "rope_scaling"}
        return Config(data, tc.source, tc.model_type), ("M-RoPE (mrope_section) rotates the same dims "
                                                        "as RoPE: text positions cost as RoPE.")
    return tc, None


def _wrap(cfg, model_id, text_type, part_name, tower, projector, detail):
    """Build the text model with its own adapter; attach the vision part."""
    tc, missing = _text_config(cfg)
    tc, mrope = _without_mrope(tc)
    text_type = text_type or tc.model_type
    build = adapter(text_type)
    if build is None:
        raise cfg.unsupported(f"text model_type {tc.model_type!r}")
    arch = build(tc, model_id)
    extra = [mrope] if mrope else []
    if missing:
        extra.append("text_config omits " + ", ".join(f"{k} (default {TEXT_DEFAULTS[tc.model_type][k]})"
                                                      for k in missing)
                     + f": transformers {tc.model_type.capitalize()}Config defaults used.")
    total = None if tower is None else tower + projector
    note = (f"{detail}; images are not part of the text workload" if total is not None else detail)
    extra.append(f"Text model only ({text_type}); the {part_name} is listed apart.")
    return arch.replace(model_type=cfg.model_type, parts=arch.parts + (Part(part_name, total, note),),
                        notes=arch.notes + tuple(extra))


def llava(cfg, model_id):
    vc = cfg.sub("vision_config")
    if vc.string("model_type", "clip_vision_model") != "clip_vision_model":
        raise vc.unsupported(f"vision model_type {vc.model_type!r} (modelled: clip_vision_model)")
    tc, _ = _text_config(cfg)
    d, h = vc.int("hidden_size"), tc.int("hidden_size")
    tower, projector = clip_params(vc), (h * d + h) + (h * h + h)
    return _wrap(cfg, model_id, None, "vision tower + multimodal projector", tower, projector,
                 f"CLIP vision tower {tower:,} (vision_config) + projector {projector:,} "
                 f"([{h}, {d}] and [{h}, {h}] with biases)")


def mistral3(cfg, model_id):
    vc = cfg.sub("vision_config")
    tc, _ = _text_config(cfg)
    d, h, s = vc.int("hidden_size"), tc.int("hidden_size"), cfg.int("spatial_merge_size", 2)
    bias = cfg.flag("multimodal_projector_bias", False)
    tower = pixtral_params(vc)
    projector = d + d * d * s * s + (h * d + (h if bias else 0)) + (h * h + (h if bias else 0))
    return _wrap(cfg, model_id, None, "vision tower + multimodal projector", tower, projector,
                 f"Pixtral vision tower {tower:,} (vision_config) + projector {projector:,} "
                 f"(norm, {s}x{s} patch merger, [{h}, {d}] and [{h}, {h}])")


def qwen2_5_vl(cfg, model_id):
    tower = qwen_vl_params(cfg.sub("vision_config"))
    return _wrap(cfg, model_id, "qwen2", "vision tower (with its patch merger)", tower, 0,
                 f"Qwen2.5-VL vision transformer and patch merger {tower:,} (vision_config)")


def qwen3_vl(cfg, model_id):
    """Qwen3-VL (Qwen3VLForConditionalGeneration): a Qwen3 text model (text_config,
    model_type qwen3_vl_text) and the Qwen3-VL vision tower with its merger and DeepStack
    mergers (module docstring)."""
    vc = cfg.sub("vision_config")
    tower = qwen3_vl_params(vc)
    layers = tuple(sorted(vc.layer_indices("deepstack_visual_indexes", vc.int("depth"))))
    arch = _wrap(cfg, model_id, "qwen3", "vision tower (patch embed, blocks, merger, DeepStack mergers)", tower, 0,
                 f"Qwen3-VL vision transformer, merger and {len(layers)} DeepStack mergers {tower:,} "
                 f"(vision_config; by formula from transformers' Qwen3VLVisionModel, not checked against "
                 f"the checkpoint index)")
    parts = arch.parts[:-1] + (arch.parts[-1].replace(tower=qwen3_vl_tower(vc, tower)),)
    return arch.replace(parts=parts)


def qwen3_vl_tower(vc, params):
    """The geometry `encode` costs (analyses/vision_encoder.py) of the Qwen3-VL tower, which
    Qwen3.5 and Qwen3.6 carry too (their deepstack_visual_indexes is empty)."""
    return VisionTower(hidden=vc.int("hidden_size"), intermediate=vc.int("intermediate_size"),
                       depth=vc.int("depth"), heads=vc.int("num_heads"), patch=vc.int("patch_size"),
                       temporal_patch=vc.int("temporal_patch_size", 2), channels=vc.int("in_channels", 3),
                       merge=vc.int("spatial_merge_size", 2), out_hidden=vc.int("out_hidden_size"),
                       deepstack=tuple(sorted(vc.layer_indices("deepstack_visual_indexes", vc.int("depth")))),
                       params=params)


MLLAMA_EXTRA_ROWS = 8   # MllamaTextModel: Embedding(vocab_size + 8, hidden)


def mllama(cfg, model_id):
    """Llama 3.2 Vision (MllamaForConditionalGeneration). Text model (MllamaTextModel):
    num_hidden_layers layers of which `cross_attention_layers` are cross-attention
    layers to the image features; a text-only pass skips them (the reference runs
    them only with cross_attention_states or a filled cross-attention cache), so
    the architecture holds the self-attention (Llama) layers and the
    cross-attention layers are a Part: each a Llama layer's tensors plus q_norm,
    k_norm (head_dim each) and two scalar gates (cross_attn_attn_gate,
    cross_attn_mlp_gate). The embedding has vocab_size + 8 rows, the head
    vocab_size. The vision tower (MllamaVisionModel: tiled positional embeddings,
    local and gated global encoders) and its projector are not modelled: their
    parameters are reported as unknown."""
    from .dense import llama

    tc = cfg.sub("text_config")
    n, hidden = tc.int("num_hidden_layers"), tc.int("hidden_size")
    cross = tc.layer_indices("cross_attention_layers", n)
    text = Config({**tc.data, "num_hidden_layers": n - len(cross)}, tc.source, "llama")
    arch = llama(text, model_id)
    layer = arch.layers[0]
    hd = next(b.head_dim for b in layer.blocks if hasattr(b, "head_dim"))
    cross_params = len(cross) * (layer.params + 2 * hd + 2)
    vocab = tc.int("vocab_size")
    notes = (f"{n - len(cross)} self-attention (Llama) layers run on text; the {len(cross)} cross-attention "
             f"layers ({', '.join(map(str, sorted(cross)))}) attend to image features only and are skipped "
             "by a text-only pass, so they are listed apart.",
             f"The embedding has vocab_size + {MLLAMA_EXTRA_ROWS} rows (MllamaTextModel).",
             "Vision tower and projector not modelled: their parameters are unknown here.")
    return arch.replace(
        model_type=cfg.model_type,
        embedding=arch.embedding.replace(vocab=vocab + MLLAMA_EXTRA_ROWS),
        parts=(Part(f"{len(cross)} cross-attention layers", cross_params,
                    "Llama layer tensors + q_norm, k_norm [head_dim] + 2 scalar gates each; run only "
                    "with an image"),
               Part("vision tower + multimodal projector", None, "MllamaVisionModel is not modelled")),
        notes=arch.notes + notes)


ADAPTERS = {"llava": llava, "mistral3": mistral3, "qwen2_5_vl": qwen2_5_vl, "mllama": mllama, "qwen3_vl": qwen3_vl}

"""Gemma (gemma), Gemma 2 (gemma2) and Gemma 3 (gemma3 / gemma3_text).

Gemma (GemmaForCausalLM, configuration_gemma.py / modeling_gemma.py): the
pre-norm Llama layer (input_layernorm, post_attention_layernorm), a GeGLU MLP
whose GELU is the tanh approximation whatever `hidden_act` says (GemmaMLP uses
`hidden_activation`, defaulting to gelu_pytorch_tanh), the embedding output
multiplied by sqrt(hidden), the head tied to the embedding by default.

Gemma 2 (Gemma2DecoderLayer): Gemma 3's four-norm layer below without q/k
norms; layer i uses the `sliding_window` when i is even (Gemma2Attention:
is_sliding = not layer_idx % 2; a `layer_types` list wins), the others attend
fully; `attn_logit_softcapping` c caps every score to c * tanh(s / c) and
`final_logit_softcapping` every logit likewise (3 vector FLOPs each);
query_pre_attn_scalar only changes the softmax scale (no cost).

Gemma 3: the text tower, 5 local : 1 global.

Gemma3ForConditionalGeneration nests the decoder in `text_config`, which the
published configs keep sparse: an absent key takes the transformers
Gemma3TextConfig default (configuration_gemma3.py), listed in DEFAULTS and named
in the model's notes when used.

Decoder layer (Gemma3DecoderLayer): x += post_attention_layernorm(attn(
input_layernorm(x))); x += post_feedforward_layernorm(mlp(
pre_feedforward_layernorm(x))): four RMSNorms of width hidden (Gemma's
(1 + w) * x / rms(x) costs the same 4 FLOPs per element), q_norm and k_norm
over head_dim, no biases, GeGLU with gelu_pytorch_tanh. Layer i is global
(full attention) when (i + 1) % sliding_window_pattern == 0, otherwise it uses
a sliding window of `sliding_window` keys (Gemma3Attention.is_sliding); a
`layer_types` list, when present, wins. The embedding output is multiplied by
sqrt(hidden); the head is tied to the embedding by default.

The vision tower (SigLIP, `vision_config`) and the multimodal projector are a
`Part`: counted from their tensors, reported apart from the text model.
"""

from ..arch import Layer, Part
from ..blocks.basic import LMHead, Residual, RMSNorm
from ..blocks.mlp import ACTIVATIONS, GatedMLP
from .common import activation, attention, model, prenorm_layer
from .config import Config

# Gemma3TextConfig.__init__ defaults (transformers configuration_gemma3.py)
DEFAULTS = {
    "vocab_size": 262208,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 131072,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "sliding_window": 4096,
    "sliding_window_pattern": 6,
}

LAYER_TYPES = ("sliding_attention", "full_attention")


def text_config(cfg):
    """The decoder's config with Gemma3TextConfig defaults filled in, and the keys defaulted."""
    raw = cfg.sub("text_config").data if cfg.model_type == "gemma3" else cfg.data
    missing = tuple(k for k in DEFAULTS if raw.get(k) is None)
    merged = dict(DEFAULTS)
    merged.update({k: v for k, v in raw.items() if v is not None})
    source = f"{cfg.source}:text_config" if cfg.model_type == "gemma3" else cfg.source
    return Config(merged, source, cfg.model_type), missing


def layer_kinds(tc):
    """'sliding_attention' / 'full_attention' for each layer."""
    if tc.has("layer_types"):
        return tc.layer_types(LAYER_TYPES)
    n = tc.int("num_hidden_layers")
    pattern = tc.int("sliding_window_pattern")
    return tuple("full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(n))


def gemma_layer(hidden, attn, mlp):
    return Layer((RMSNorm("input_layernorm", hidden), attn, RMSNorm("post_attention_layernorm", hidden),
                  Residual(hidden), RMSNorm("pre_feedforward_layernorm", hidden), mlp,
                  RMSNorm("post_feedforward_layernorm", hidden), Residual(hidden)))


def siglip_params(vc):
    """Parameters of a SigLIP vision transformer (SiglipVisionModel, no pooling head).

    patch_embedding Conv2d(C, d, p, p) with bias: d*C*p*p + d; position_embedding
    [(image/patch)^2, d]; per layer: layer_norm1/2 (weight + bias) 4d, q/k/v/out
    projections with bias 4(d*d + d), fc1 [I, d] + I, fc2 [d, I] + d;
    post_layernorm 2d.
    """
    d, inter = vc.int("hidden_size"), vc.int("intermediate_size")
    layers, patch, image = vc.int("num_hidden_layers"), vc.int("patch_size"), vc.int("image_size")
    channels = vc.int("num_channels", 3)
    if vc.flag("vision_use_head", True):
        raise vc.unsupported("vision_use_head true (attention-pool head)")
    if image % patch:
        raise vc.unsupported(f"image_size {image} not a multiple of patch_size {patch}")
    positions = (image // patch) ** 2
    per_layer = 4 * d + 4 * (d * d + d) + (inter * d + inter) + (d * inter + d)
    return d * channels * patch * patch + d + positions * d + layers * per_layer + 2 * d


def vision_part(cfg, text_hidden):
    """The SigLIP tower plus Gemma3MultiModalProjector (mm_input_projection_weight
    [vision hidden, text hidden] and mm_soft_emb_norm RMSNorm(vision hidden))."""
    if not cfg.has("vision_config"):
        return ()
    vc = cfg.sub("vision_config")
    d = vc.int("hidden_size")
    tower = siglip_params(vc)
    projector = d * text_hidden + d
    return (Part("vision tower + multimodal projector", tower + projector,
                 f"SigLIP vision tower {tower:,} (vision_config) + projector {projector:,} "
                 f"([{d}, {text_hidden}] projection and a {d}-wide RMSNorm); images are not "
                 "part of the text workload"),)


def gemma3(cfg, model_id):
    tc, defaulted = text_config(cfg)
    hidden = tc.int("hidden_size")
    for key in ("attn_logit_softcapping", "final_logit_softcapping"):
        if tc.has(key):
            raise tc.unsupported(key)
    bias = tc.flag("attention_bias")
    window = tc.int("sliding_window")
    local = attention(tc, window=window, qkv_bias=bias, o_bias=bias, qk_norm=True)
    glob = local.replace(window=None)
    mlp = GatedMLP(hidden, tc.int("intermediate_size"), activation(tc, "hidden_activation"))
    kinds = layer_kinds(tc)
    local_layer, global_layer = gemma_layer(hidden, local, mlp), gemma_layer(hidden, glob, mlp)
    layers = [local_layer if k == "sliding_attention" else global_layer for k in kinds]
    n_global = kinds.count("full_attention")
    notes = [f"{len(kinds) - n_global} sliding-window layers (window {window}, each query sees at most "
             f"{window} keys including itself) and {n_global} global layers "
             + ("(layer_types)." if tc.has("layer_types") else
                f"(layer i global when (i + 1) % {tc.int('sliding_window_pattern')} == 0)."),
             "Embedding output scaled by sqrt(hidden_size); Gemma RMSNorm (1 + w) costs as RMSNorm."]
    if defaulted:
        notes.append("text_config omits " + ", ".join(f"{k} (default {DEFAULTS[k]})" for k in defaulted)
                     + ": transformers Gemma3TextConfig defaults used.")
    if cfg.model_type == "gemma3":
        notes.append("Text tower only; the vision tower and projector are listed apart.")
    if tc.has("rope_scaling"):
        notes.append(f"max_position_embeddings {tc.int('max_position_embeddings'):,} already includes the "
                     "global layers' RoPE scaling factor (as vLLM treats Gemma 3): it is the maximum context.")
    return model(tc, model_id, layers, scale_embedding=True, tied_default=True, rope_scaled_context=False,
                 parts=vision_part(cfg, hidden) if cfg.model_type == "gemma3" else (),
                 notes=tuple(notes))


def _geglu(cfg):
    """Gemma's GeGLU: `hidden_activation` (gelu_pytorch_tanh when absent, as GemmaMLP)."""
    if cfg.has("hidden_activation"):
        return activation(cfg, "hidden_activation")
    return ACTIVATIONS["gelu_pytorch_tanh"]


def gemma(cfg, model_id):
    hidden = cfg.int("hidden_size")
    bias = cfg.flag("attention_bias", False)
    attn = attention(cfg, qkv_bias=bias, o_bias=bias)
    mlp = GatedMLP(hidden, cfg.int("intermediate_size"), _geglu(cfg))
    layers = [prenorm_layer(hidden, attn, mlp)] * cfg.int("num_hidden_layers")
    return model(cfg, model_id, layers, scale_embedding=True, tied_default=True, notes=(
        "Embedding output scaled by sqrt(hidden_size); Gemma RMSNorm (1 + w) costs as RMSNorm; "
        "the GeGLU's GELU is the tanh approximation (GemmaMLP's hidden_activation default).",))


def gemma2(cfg, model_id):
    hidden, n = cfg.int("hidden_size"), cfg.int("num_hidden_layers")
    bias = cfg.flag("attention_bias", False)
    window = cfg.int("sliding_window")
    softcap = cfg.has("attn_logit_softcapping")
    glob = attention(cfg, qkv_bias=bias, o_bias=bias, softcap=softcap)
    local = glob.replace(window=window)
    mlp = GatedMLP(hidden, cfg.int("intermediate_size"), _geglu(cfg))
    kinds = (cfg.layer_types(LAYER_TYPES) if cfg.has("layer_types") else
             tuple("sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)))
    local_layer, global_layer = gemma_layer(hidden, local, mlp), gemma_layer(hidden, glob, mlp)
    layers = [local_layer if k == "sliding_attention" else global_layer for k in kinds]
    final_cap = cfg.has("final_logit_softcapping")
    n_global = kinds.count("full_attention")
    notes = [f"{n - n_global} sliding-window layers (window {window}) and {n_global} global layers "
             + ("(layer_types)." if cfg.has("layer_types") else "(even layers windowed, as Gemma2Attention)."),
             "Embedding output scaled by sqrt(hidden_size); Gemma RMSNorm (1 + w) costs as RMSNorm."]
    if softcap or final_cap:
        notes.append("Soft-capping c * tanh(x / c) (3 vector FLOPs per value) on "
                     + " and ".join(w for w, on in (("attention scores", softcap), ("final logits", final_cap)) if on)
                     + ".")
    tied = cfg.flag("tie_word_embeddings", True)
    vocab = cfg.int("vocab_size")
    return model(cfg, model_id, layers, scale_embedding=True, tied_default=True, notes=tuple(notes),
                 head=LMHead(vocab, hidden, tied, post="softcap" if final_cap else ""))


ADAPTERS = {"gemma": gemma, "gemma2": gemma2, "gemma3": gemma3, "gemma3_text": gemma3}

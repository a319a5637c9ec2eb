"""DeepSeek-V2, DeepSeek-V3 and Kimi K2 (the DeepSeek-V3 architecture).

Layer i (Hugging Face DeepseekV3DecoderLayer): pre-norm, MLA attention
(blocks.mla), then a MoE when n_routed_experts is set, i >= first_k_dense_replace
and i % moe_layer_freq == 0, else a dense gated MLP of intermediate_size.
The MoE: n_routed_experts experts of moe_intermediate_size, top
num_experts_per_tok, one shared expert of n_shared_experts *
moe_intermediate_size, and an e_score_correction_bias per expert when
topk_method is "noaux_tc". Group-limited routing (n_group, topk_group) picks
groups before experts: it changes which experts are chosen, not how many, so
it changes no count here.

Multi-token prediction (num_nextn_predict_layers, DeepSeek-V3 README_WEIGHTS):
each module holds enorm, hnorm [hidden], eh_proj [hidden, 2*hidden], one full
decoder layer and shared_head.norm [hidden]; its embedding and output head are
the main model's. The checkpoint stores copies of both under
model.layers.<n>.embed_tokens and .shared_head.head; they are not counted
again. The module is reported as a Part, outside the parameter count.
"""

from ..arch import Part
from ..blocks.mla import MLA
from ..blocks.mlp import GatedMLP
from ..blocks.moe import MoE
from .common import activation, model, prenorm_layer

TOPK_METHODS = ("greedy", "group_limited_greedy", "noaux_tc")
SCORING = ("softmax", "sigmoid")
FP8_BLOCK = (("matrix", "fp8-block128"), ("expert", "fp8-block128"))


def _mla(cfg):
    if cfg.flag("attention_bias", False):
        raise cfg.unsupported("attention_bias")
    return MLA(hidden=cfg.int("hidden_size"), heads=cfg.int("num_attention_heads"),
               q_lora_rank=cfg.int("q_lora_rank") if cfg.has("q_lora_rank") else 0,
               kv_lora_rank=cfg.int("kv_lora_rank"), qk_nope=cfg.int("qk_nope_head_dim"),
               qk_rope=cfg.int("qk_rope_head_dim"), v_head_dim=cfg.int("v_head_dim"))


def _moe(cfg, act):
    method = cfg.string("topk_method", "greedy")
    if method not in TOPK_METHODS:
        raise cfg.unsupported(f"topk_method '{method}'")
    scoring = cfg.string("scoring_func", "softmax")
    if scoring not in SCORING:
        raise cfg.unsupported(f"scoring_func '{scoring}'")
    inter = cfg.int("moe_intermediate_size")
    return MoE(cfg.int("hidden_size"), *cfg.experts("n_routed_experts"),
               inter, shared_inter=cfg.int("n_shared_experts", 0, low=0) * inter, act=act,
               score_bias=method == "noaux_tc")


def _layer_maker(cfg):
    """layer index -> decoder layer (the MTP modules continue the numbering)."""
    hidden, act = cfg.int("hidden_size"), activation(cfg)
    attn = _mla(cfg)
    dense = prenorm_layer(hidden, attn, GatedMLP(hidden, cfg.int("intermediate_size"), act))
    if not cfg.has("n_routed_experts"):
        return lambda i: dense
    moe = prenorm_layer(hidden, attn, _moe(cfg, act))
    first = cfg.int("first_k_dense_replace", 0, low=0)
    freq = cfg.int("moe_layer_freq", 1)
    return lambda i: moe if i >= first and i % freq == 0 else dense


def _mtp(cfg, make_layer):
    """The multi-token-prediction modules as one Part (or none)."""
    k = cfg.int("num_nextn_predict_layers", 0, low=0)
    if not k:
        return ()
    hidden, n = cfg.int("hidden_size"), cfg.int("num_hidden_layers")
    own = 3 * hidden + 2 * hidden * hidden      # enorm, hnorm, shared_head.norm; eh_proj
    params = sum(own + make_layer(n + j).params for j in range(k))
    stored = params + k * 2 * cfg.int("vocab_size") * hidden
    note = (f"{k} multi-token-prediction module(s): enorm, hnorm, eh_proj [{hidden},{2 * hidden}], "
            f"one decoder layer and shared_head.norm each; the checkpoint also stores copies of the "
            f"main embedding and output head (layers.{n}.embed_tokens, layers.{n}.shared_head.head), "
            f"not counted again ({stored:,} params stored with the copies)")
    return (Part("MTP", params, note),)


def _native_formats(cfg):
    """FP8 E4M3 with 128x128 block scales, as DeepSeek-V3 and Kimi K2 ship."""
    if not cfg.has("quantization_config"):
        return (), ()
    q = cfg.require("quantization_config")
    if (not isinstance(q, dict) or q.get("quant_method") != "fp8"
            or q.get("weight_block_size") != [128, 128]):
        raise cfg.unsupported("quantization_config other than fp8 with weight_block_size [128, 128]")
    return FP8_BLOCK, (
        "Checkpoint weights: every attention, MLP and expert projection is FP8 E4M3 with one "
        "FP32 scale per 128x128 block (weight_scale_inv); embedding, lm_head, norms and the "
        "router weight are BF16, and e_score_correction_bias is FP32.",)


def deepseek(cfg, model_id):
    n = cfg.int("num_hidden_layers")
    make_layer = _layer_maker(cfg)
    formats, fp8_note = _native_formats(cfg)
    notes = ("MLA paths (--mla of forward, decode and kv): absorbed (W_UK/W_UV folded per token) "
             "and expanded (K/V up-projected per pass), both keeping the latent cache, or naive "
             "(expanded K/V cache, as the Hugging Face reference); forward and decode default to "
             "auto (each phase the cheaper of expanded and absorbed), kv to absorbed; train runs "
             "the naive form.",)
    if cfg.has("n_routed_experts") and cfg.int("n_group", 1) > 1:
        notes += (f"Group-limited routing (n_group {cfg.int('n_group')}, topk_group "
                  f"{cfg.int('topk_group')}) changes which experts are chosen, not how many; "
                  "counts and FLOPs are unaffected.",)
    return model(cfg, model_id, [make_layer(i) for i in range(n)],
                 native_formats=formats, parts=_mtp(cfg, make_layer), notes=notes + fp8_note)


ADAPTERS = {"deepseek_v2": deepseek, "deepseek_v3": deepseek, "kimi_k2": deepseek}

"""Kimi K3 (model_type kimi_k3, text model kimi_linear): KDA + gated NoPE MLA hybrid,
latent MoE, attention residuals, MXFP4 experts (blocks.kimi).

From moonshotai/Kimi-K3 `modeling_kimi_linear.py` as the book's checkpoint audit
enumerates it (bojieli/ai-infra-book:calculations/src/infra_calc/topics/k3_checkpoint.py):
- layer i (0-based) is KDA when i + 1 is in linear_attn_config.kda_layers, else MLA
  (full_attn_layers, 1-based); MLA uses mla_use_nope and mla_use_output_gate;
- layers i < first_k_dense_replace: a dense MLP of intermediate_size; the others the
  latent MoE (num_experts, top num_experts_per_token, experts of moe_intermediate_size
  at routed_expert_hidden_size, num_shared_experts x moe_intermediate_size shared,
  sigmoid router with e_score_correction_bias); activation SiTU (hidden_act situ);
- AttnRes with attn_res_block_size: every layer has self_attention_res and mlp_res
  norm [D] and proj [1, D]; the model ends with output_attn_res, then the norm.
The vision tower (vision_config, MoonViT) and projector are not modelled: reported
apart with unknown parameters.
"""

from ..arch import Architecture, Layer, Part
from ..blocks.basic import Embedding, LMHead, RMSNorm
from ..blocks.kimi import KDA, AttnRes, AttnResHeadNorm, GatedMLA, LatentMoE, PrefixAdd
from ..blocks.mlp import GatedMLP
from .common import activation

K3_FORMATS = (("expert", "mxfp4"),)
# Checkpoint shapes that differ from the config (decode --tensor-shapes checkpoint): the official
# moonshotai/Kimi-K3 safetensors headers store every KDA layer's A_log with 128 elements where the
# config and modeling_kimi_linear.py declare num_heads = 96 (69 layers, 2,208 values, 8,832 FP32
# bytes more), per the book's header audit (bojieli/ai-infra-book:calculations/src/infra_calc/
# topics/k3_checkpoint.py, config_shape_mismatches); parameters stay the config's.
CHECKPOINT_A_LOG = {"kimi-k3": 128}


def _formats(tc):
    q = tc.require("quantization_config")
    groups = q.get("config_groups") if isinstance(q, dict) else None
    group = groups.get("group_0") if isinstance(groups, dict) else None
    weights = group.get("weights") if isinstance(group, dict) else None
    if (not isinstance(weights, dict) or q.get("format") != "mxfp4-pack-quantized" or weights.get("num_bits") != 4
            or weights.get("group_size") != 32 or weights.get("type") != "float"):
        raise tc.unsupported("quantization_config other than MXFP4 (4-bit float, group 32) experts")
    return K3_FORMATS


def _mixers(tc):
    la = tc.require("linear_attn_config")
    if not isinstance(la, dict):
        raise tc.unsupported("linear_attn_config that is not an object")
    h = tc.int("hidden_size")
    kda = KDA(hidden=h, heads=la["num_heads"], head_dim=la["head_dim"], conv_kernel=la["short_conv_kernel_size"])
    if not tc.flag("mla_use_nope", False):
        raise tc.unsupported("mla_use_nope false (RoPE MLA in a kimi_linear model)")
    mla = GatedMLA(hidden=h, heads=tc.int("num_attention_heads"), q_lora_rank=tc.int("q_lora_rank"),
                   kv_lora_rank=tc.int("kv_lora_rank"), qk_nope=tc.int("qk_nope_head_dim"),
                   qk_rope=tc.int("qk_rope_head_dim"), v_head_dim=tc.int("v_head_dim"))
    if not tc.flag("mla_use_output_gate", False):
        raise tc.unsupported("mla_use_output_gate false")
    return set(la.get("kda_layers", ())), kda, mla


def kimi_k3(cfg, model_id):
    tc = cfg.sub("text_config") if cfg.has("text_config") else cfg
    h, n, vocab = tc.int("hidden_size"), tc.int("num_hidden_layers"), tc.int("vocab_size")
    act = activation(tc)
    kda_layers, kda, mla = _mixers(tc)
    if model_id in CHECKPOINT_A_LOG:
        kda = kda.replace(a_log_stored=CHECKPOINT_A_LOG[model_id])
    stride = tc.int("attn_res_block_size")
    dense_n = tc.int("first_k_dense_replace", 0, low=0)
    dense = GatedMLP(h, tc.int("intermediate_size"), act)
    inter = tc.int("moe_intermediate_size")
    moe = LatentMoE(h, *tc.experts("num_experts", "num_experts_per_token"), inter,
                    shared_inter=tc.int("num_shared_experts", 0, low=0) * inter, act=act,
                    score_bias=tc.string("topk_method", "noaux_tc") == "noaux_tc",
                    prefix="block_sparse_moe", latent=tc.int("routed_expert_hidden_size"))
    layers, made = [], {}   # one Layer per distinct shape: equal layers are one object
    for i in range(n):
        saved = (i + stride - 1) // stride          # blocks saved before layer i
        boundary = i % stride == 0
        key = (saved, boundary, i + 1 in kda_layers, i < dense_n)
        if key in made:
            layers.append(made[key])
            continue
        blocks = [AttnRes("self_attention_res", h, saved + 1 if saved else 0), RMSNorm("input_layernorm", h),
                  kda if i + 1 in kda_layers else mla]
        if not boundary:
            blocks.append(PrefixAdd(h))
        blocks += [AttnRes("mlp_res", h, saved + boundary + 1, saves_block=boundary),
                   RMSNorm("post_attention_layernorm", h), dense if i < dense_n else moe, PrefixAdd(h)]
        layers.append(made.setdefault(key, Layer(tuple(blocks))))
    final = (n + stride - 1) // stride + 1
    vision = cfg.data.get("vision_config") if cfg is not tc else None
    parts = (Part("vision", None, f"MoonViT vision tower ({vision.get('vt_num_hidden_layers')} layers, hidden "
                  f"{vision.get('vt_hidden_size')}) and projector: not modelled (parameters unknown); every "
                  "command runs the text model"),) if isinstance(vision, dict) else ()
    notes = (
        f"Layers: {len(kda_layers)} KDA ({kda.heads} heads x {kda.head_dim}), {n - len(kda_layers)} gated NoPE MLA; "
        f"AttnRes block size {stride}: {final - 1} saved blocks, the head mixes {final} candidates.",
        "MLA paths (--mla): absorbed = the book's compact path (latent cache), naive = its expanded path "
        "(the Hugging Face cache of expanded K/V).",
        "KDA: recurrent form for one new token, chunked (64) for more (--delta-form); state fp32 plus "
        f"{kda.conv_kernel} conv slots per channel, independent of the context.",
        "Checkpoint formats: routed experts MXFP4 (E2M1 + one E8M0 scale per 32 values); every other "
        "tensor BF16 except the KDA A_log, dt_bias, o_norm and convs (FP32).",
    )
    return Architecture(
        id=model_id, model_type=cfg.model_type, hidden_size=h, vocab_size=vocab,
        max_context=tc.int("max_position_embeddings"), embedding=Embedding(vocab, h), layers=tuple(layers),
        final_norm=AttnResHeadNorm(h, final), head=LMHead(vocab, h, tc.flag("tie_word_embeddings", False)),
        tied_embeddings=tc.flag("tie_word_embeddings", False), native_formats=_formats(tc), parts=parts,
        notes=notes)


ADAPTERS = {"kimi_k3": kimi_k3, "kimi_linear": kimi_k3}

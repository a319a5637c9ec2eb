"""Falcon (model_type falcon, and the original RefinedWeb types; FalconForCausalLM,
modeling_falcon.py).

Keys (FalconConfig): hidden_size, num_attention_heads, num_hidden_layers,
vocab_size, multi_query (one KV head; default true), num_kv_heads (grouped KV
heads with new_decoder_architecture), parallel_attn (default true), bias
(biases on every linear; default false), ffn_hidden_size (default 4 * hidden),
activation (default gelu: the exact erf GELU), max_position_embeddings
(default 2048), alibi (not modelled: an error), new_decoder_architecture.

Layer, by configuration:
- new_decoder_architecture (Falcon-40B/180B): x + attn(ln_attn(x)) + mlp(ln_mlp(x))
  (num_ln_in_parallel_attn 2; with 1, both read input_layernorm(x));
- parallel_attn (Falcon-7B): x + attn(ln(x)) + mlp(ln(x)), one input_layernorm;
- otherwise: x += attn(input_layernorm(x)); x += mlp(post_attention_layernorm(x)).
Fused query_key_value [(heads + 2 * kv_heads) * head_dim, hidden], dense,
dense_h_to_4h, dense_4h_to_h: listed split (same counts). LayerNorms with bias;
ln_f; the head tied to word_embeddings by default.
"""

from ..arch import Layer
from ..blocks.attention import Attention
from ..blocks.basic import Embedding, LMHead, Residual
from ..blocks.gpt import GPTMLP, LayerNorm
from ..arch import Architecture
from . import rope

ACT = {"gelu": "gelu_erf", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh"}
FALCON_MAX_POSITIONS = 2048   # FalconConfig.max_position_embeddings default


def falcon(cfg, model_id):
    if cfg.flag("alibi", False):
        raise cfg.unsupported("alibi (ALiBi position biases)")
    h, heads = cfg.int("hidden_size"), cfg.int("num_attention_heads")
    if h % heads:
        raise cfg.unsupported(f"hidden_size {h} not divisible by num_attention_heads {heads}")
    new_arch = cfg.flag("new_decoder_architecture", False)
    if new_arch:
        kv_heads = cfg.int("num_kv_heads", heads)
    else:
        kv_heads = 1 if cfg.flag("multi_query", True) else heads
    if heads % kv_heads:
        raise cfg.unsupported(f"num_attention_heads {heads} not a multiple of {kv_heads} KV heads")
    bias = cfg.flag("bias", False)
    act = cfg.string("activation", "gelu")
    if act not in ACT:
        raise cfg.unsupported(f"activation '{act}' (modelled: {', '.join(ACT)})")
    hd = h // heads
    attn = Attention(hidden=h, heads=heads, kv_heads=kv_heads, head_dim=hd, rope_dim=hd,
                     qkv_bias=bias, o_bias=bias, prefix="self_attention")
    mlp = GPTMLP(h, cfg.int("ffn_hidden_size", 4 * h), ACT[act], bias=bias)
    if new_arch and cfg.int("num_ln_in_parallel_attn", 2) == 2:
        blocks, form = ((LayerNorm("ln_attn", h), attn, LayerNorm("ln_mlp", h, shares_input=True), mlp,
                         Residual(h), Residual(h)), "x + attn(ln_attn(x)) + mlp(ln_mlp(x))")
    elif new_arch or cfg.flag("parallel_attn", True):   # one norm: the MLP reads the input attention keeps
        blocks, form = ((LayerNorm("input_layernorm", h), attn, mlp.replace(shares_input=True), Residual(h), Residual(h)),
                        "x + attn(ln(x)) + mlp(ln(x))")
    else:
        blocks, form = ((LayerNorm("input_layernorm", h), attn, Residual(h),
                         LayerNorm("post_attention_layernorm", h), mlp, Residual(h)), "sequential")
    vocab, tied = cfg.int("vocab_size"), cfg.flag("tie_word_embeddings", True)
    notes = [f"Falcon layer: {form}; {kv_heads} KV head{'s' if kv_heads > 1 else ''}; fused "
             "query_key_value and dense_h_to_4h / dense_4h_to_h listed split (same counts)."]
    positions = cfg.data.get("max_position_embeddings")
    if positions is None:
        cfg = cfg.with_defaults({"max_position_embeddings": FALCON_MAX_POSITIONS})
        notes.append(f"max_position_embeddings absent: FalconConfig's default {FALCON_MAX_POSITIONS:,}.")
    limit, note = rope.max_context(cfg)
    if note:
        notes.append(note)
    return Architecture(
        id=model_id, model_type=cfg.model_type, hidden_size=h, vocab_size=vocab, max_context=limit,
        embedding=Embedding(vocab, h), layers=(Layer(blocks),) * cfg.int("num_hidden_layers"),
        final_norm=LayerNorm("ln_f", h), head=LMHead(vocab, h, tied), tied_embeddings=tied,
        notes=tuple(notes))


ADAPTERS = {"falcon": falcon, "RefinedWeb": falcon, "RefinedWebModel": falcon}

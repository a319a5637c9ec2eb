"""Pieces every adapter shares: attention geometry, pre-norm layers, the model shell."""

import functools

from ..arch import Architecture, Layer
from ..blocks.attention import Attention
from ..blocks.basic import Embedding, LMHead, Residual, RMSNorm
from ..blocks.mlp import ACTIVATIONS
from . import rope


def activation(cfg, key="hidden_act", default="silu"):
    """The gated activation's vector-cost name for a config's hidden_act."""
    act = cfg.string(key, default)
    if act not in ACTIVATIONS:
        raise cfg.unsupported(f"{key} '{act}'")
    return ACTIVATIONS[act]


def head_dim(cfg):
    """head_dim, or hidden_size / num_attention_heads when the config omits it."""
    if cfg.has("head_dim"):
        return cfg.int("head_dim")
    hidden, heads = cfg.int("hidden_size"), cfg.int("num_attention_heads")
    if hidden % heads:
        raise cfg.unsupported(f"hidden_size {hidden} not divisible by num_attention_heads {heads} without head_dim")
    return hidden // heads


def head_counts(cfg):
    """(query heads, KV heads): num_key_value_heads defaults to the heads and must divide them."""
    heads = cfg.int("num_attention_heads")
    kv_heads = cfg.int("num_key_value_heads", heads)
    if heads % kv_heads:
        raise cfg.unsupported(f"num_attention_heads {heads} not a multiple of num_key_value_heads {kv_heads}")
    return heads, kv_heads


def attention(cfg, window=None, **flags):
    """Softmax attention from the usual keys (num_key_value_heads defaults to heads)."""
    heads, kv_heads = head_counts(cfg)
    hd = head_dim(cfg)
    rope = flags.pop("rope_dim", None)
    if rope is None:
        rope = int(hd * cfg.fraction("partial_rotary_factor", 1.0))
    return Attention(hidden=cfg.int("hidden_size"), heads=heads, kv_heads=kv_heads,
                     head_dim=hd, rope_dim=rope, window=window, **flags)


@functools.lru_cache(maxsize=1 << 12)
def prenorm_layer(hidden, mixer, mlp):
    """x += mixer(norm(x)); x += mlp(norm(x)) (Llama-style pre-norm decoder layer).

    Memoized: equal arguments give the same Layer object, so grouping the
    layers of a model compares identities rather than whole layers."""
    return Layer((RMSNorm("input_layernorm", hidden), mixer, Residual(hidden),
                  RMSNorm("post_attention_layernorm", hidden), mlp, Residual(hidden)))


def model(cfg, model_id, layers, scale_embedding=False, rope_scaled_context=True, head=None,
          final_norm=None, **extra):
    """Wrap layers with embedding, final norm and head from the usual keys. The
    maximum context follows the RoPE scaling rule (load.rope) unless the family's
    max_position_embeddings already counts it (`rope_scaled_context=False`)."""
    hidden, vocab = cfg.int("hidden_size"), cfg.int("vocab_size")
    tied = cfg.flag("tie_word_embeddings", extra.pop("tied_default", False))
    if len(layers) != cfg.int("num_hidden_layers"):
        raise cfg.unsupported(f"{len(layers)} layers built for num_hidden_layers {cfg.int('num_hidden_layers')}")
    limit, note = rope.max_context(cfg) if rope_scaled_context else (cfg.int("max_position_embeddings"), None)
    if note:
        extra["notes"] = tuple(extra.get("notes", ())) + (note,)
    return Architecture(
        id=model_id, model_type=cfg.model_type, hidden_size=hidden, vocab_size=vocab,
        max_context=limit, max_context_source="RoPE-scaled maximum" if limit != cfg.int("max_position_embeddings")
        else "max_position_embeddings",
        embedding=Embedding(vocab, hidden, scale_embedding), layers=tuple(layers),
        final_norm=final_norm or RMSNorm("norm", hidden), head=head or LMHead(vocab, hidden, tied),
        tied_embeddings=tied, **extra)

"""GPT-2-type configs (GPT-2, and the GPT-3 / Megatron-LM shapes bundled for
the training tables): post-2019 pre-LayerNorm layers with learned positions.

Keys (Hugging Face GPT2Config): n_embd, n_head, n_layer, n_positions,
vocab_size, n_inner (null = 4 * n_embd), activation_function (gelu_new,
gelu_pytorch_tanh, gelu_fast = tanh form; gelu = erf form), resid_pdrop,
embd_pdrop, attn_pdrop (a rate > 0 turns that dropout on for training),
tie_word_embeddings (default true). Layer: x += attn(ln_1(x)); x += mlp(ln_2(x));
then ln_f and the head (tied to wte by default).
"""

from ..arch import Architecture, Layer
from ..blocks.attention import Attention
from ..blocks.basic import LMHead, Residual
from ..blocks.gpt import GPTMLP, GPTEmbedding, LayerNorm

GELU = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh",
        "gelu": "gelu_erf"}


def _dropout(cfg, key):
    return cfg.fraction(key, 0.1) > 0   # GPT2Config defaults every rate to 0.1


def gpt2(cfg, model_id):
    h, heads, layers = cfg.int("n_embd"), cfg.int("n_head"), cfg.int("n_layer")
    if h % heads:
        raise cfg.unsupported(f"n_embd {h} not divisible by n_head {heads}")
    if cfg.flag("add_cross_attention", False):
        raise cfg.unsupported("add_cross_attention")
    act = cfg.string("activation_function", "gelu_new")
    if act not in GELU:
        raise cfg.unsupported(f"activation_function '{act}' (modelled: {', '.join(GELU)})")
    vocab, positions = cfg.int("vocab_size"), cfg.int("n_positions")
    inter = cfg.int("n_inner", 4 * h)
    resid = _dropout(cfg, "resid_pdrop")
    attn = Attention(hidden=h, heads=heads, kv_heads=heads, head_dim=h // heads, rope_dim=0,
                     qkv_bias=True, o_bias=True, prefix="attn", dropout=resid,
                     prob_dropout=_dropout(cfg, "attn_pdrop"))
    layer = Layer((LayerNorm("ln_1", h), attn, Residual(h), LayerNorm("ln_2", h),
                   GPTMLP(h, inter, GELU[act], dropout=resid), Residual(h)))
    tied = cfg.flag("tie_word_embeddings", True)
    return Architecture(
        id=model_id, model_type=cfg.model_type, hidden_size=h, vocab_size=vocab,
        max_context=positions,
        embedding=GPTEmbedding(vocab, h, positions, _dropout(cfg, "embd_pdrop")),
        layers=(layer,) * layers, final_norm=LayerNorm("ln_f", h),
        head=LMHead(vocab, h, tied), tied_embeddings=tied,
        notes=("GPT-2 stores fused c_attn and Conv1D [in, out] projections; they are listed "
               "split as [out, in] (same parameter count and FLOPs).",))


ADAPTERS = {"gpt2": gpt2}

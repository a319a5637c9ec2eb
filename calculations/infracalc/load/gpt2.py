"""GPT-2-type configs (GPT-2, and the GPT-3 / Megatron-LM shapes bundled for
the training tables), OPT and GPT-NeoX: pre-LayerNorm layers with biases,
a non-gated MLP and (GPT-2, OPT) learned positions or (GPT-NeoX) partial RoPE.

Keys (Hugging Face GPT2Config): n_embd, n_head, n_layer, n_positions,
vocab_size, n_inner (null = 4 * n_embd), activation_function (gelu_new,
gelu_pytorch_tanh, gelu_fast = tanh form; gelu = erf form), resid_pdrop,
embd_pdrop, attn_pdrop (a rate > 0 turns that dropout on for training),
tie_word_embeddings (default true). Layer: x += attn(ln_1(x)); x += mlp(ln_2(x));
then ln_f and the head (tied to wte by default).

OPT (Hugging Face OPTConfig, model_type opt): the same blocks with
hidden_size, num_attention_heads, num_hidden_layers, ffn_dim, a ReLU MLP,
dropout (`dropout`, also after the embeddings) and attention_dropout, and a
position table of max_position_embeddings + 2 rows (OPT's learned positions
start at offset 2). Not modelled (an error names them): post-LayerNorm
layers (do_layer_norm_before false, OPT-350m), word_embed_proj_dim unlike
hidden_size (project_in/out), no biases, non-affine LayerNorms, no final
LayerNorm, activation dropout.
"""

from ..arch import Architecture, Layer
from ..blocks.attention import Attention
from ..blocks.basic import Embedding, LMHead, Residual
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


OPT_POSITION_OFFSET = 2   # OPTLearnedPositionalEmbedding: max_position_embeddings + 2 rows


def opt(cfg, model_id):
    h, heads = cfg.int("hidden_size"), cfg.int("num_attention_heads")
    if h % heads:
        raise cfg.unsupported(f"hidden_size {h} not divisible by num_attention_heads {heads}")
    for key, default, modelled in (("do_layer_norm_before", True, True), ("enable_bias", True, True),
                                   ("layer_norm_elementwise_affine", True, True),
                                   ("_remove_final_layer_norm", False, False)):
        if cfg.flag(key, default) != modelled:
            raise cfg.unsupported(f"{key} {str(not modelled).lower()}")
    if cfg.int("word_embed_proj_dim", h) != h:
        raise cfg.unsupported("word_embed_proj_dim unlike hidden_size (project_in/project_out)")
    if cfg.fraction("activation_dropout", 0.0) > 0:
        raise cfg.unsupported("activation_dropout > 0")
    act = cfg.string("activation_function", "relu")
    if act != "relu":
        raise cfg.unsupported(f"activation_function '{act}' (modelled: relu)")
    vocab = cfg.int("vocab_size")
    context = cfg.int("max_position_embeddings")
    resid = cfg.fraction("dropout", 0.1) > 0
    attn = Attention(hidden=h, heads=heads, kv_heads=heads, head_dim=h // heads, rope_dim=0,
                     qkv_bias=True, o_bias=True, prefix="self_attn", dropout=resid,
                     prob_dropout=cfg.fraction("attention_dropout", 0.0) > 0)
    layer = Layer((LayerNorm("self_attn_layer_norm", h), attn, Residual(h),
                   LayerNorm("final_layer_norm", h),
                   GPTMLP(h, cfg.int("ffn_dim"), "relu", dropout=resid), Residual(h)))
    tied = cfg.flag("tie_word_embeddings", True)
    return Architecture(
        id=model_id, model_type=cfg.model_type, hidden_size=h, vocab_size=vocab, max_context=context,
        embedding=GPTEmbedding(vocab, h, context, resid, OPT_POSITION_OFFSET),
        layers=(layer,) * cfg.int("num_hidden_layers"), final_norm=LayerNorm("final_layer_norm", h),
        head=LMHead(vocab, h, tied), tied_embeddings=tied,
        notes=(f"OPT's position table has max_position_embeddings + {OPT_POSITION_OFFSET} rows "
               "(positions start at offset 2); tensors are listed with GPT-2's names "
               "(wte, wpe, c_fc, c_proj; same counts).",))


def gpt_neox(cfg, model_id):
    """GPT-NeoX (Hugging Face GPTNeoXConfig): hidden_size, num_attention_heads,
    num_hidden_layers, intermediate_size, rotary_pct (RoPE on that fraction of
    each head, default 0.25), hidden_act, use_parallel_residual (default true:
    x + attn(ln1(x)) + mlp(ln2(x)), both norms of the same x), attention_bias
    (default true; the output projection keeps its bias), hidden_dropout and
    attention_dropout (current transformers' keys, default 0.0; the legacy
    *_prob keys are not read by it, nor here), tie_word_embeddings (default false)."""
    h, heads = cfg.int("hidden_size"), cfg.int("num_attention_heads")
    if h % heads:
        raise cfg.unsupported(f"hidden_size {h} not divisible by num_attention_heads {heads}")
    act = cfg.string("hidden_act", "gelu")
    if act not in GELU:
        raise cfg.unsupported(f"hidden_act '{act}' (modelled: {', '.join(GELU)})")
    hd = h // heads
    resid = cfg.fraction("hidden_dropout", 0.0) > 0
    bias = cfg.flag("attention_bias", True)
    attn = Attention(hidden=h, heads=heads, kv_heads=heads, head_dim=hd,
                     rope_dim=int(hd * cfg.fraction("rotary_pct", 0.25)), qkv_bias=bias, o_bias=bias,
                     prefix="attention", dropout=resid,
                     prob_dropout=cfg.fraction("attention_dropout", 0.0) > 0)
    mlp = GPTMLP(h, cfg.int("intermediate_size"), GELU[act], dropout=resid)
    parallel = cfg.flag("use_parallel_residual", True)
    ln1 = LayerNorm("input_layernorm", h)
    ln2 = LayerNorm("post_attention_layernorm", h, shares_input=parallel)
    blocks = ((ln1, attn, ln2, mlp, Residual(h), Residual(h)) if parallel else
              (ln1, attn, Residual(h), ln2, mlp, Residual(h)))
    vocab, tied = cfg.int("vocab_size"), cfg.flag("tie_word_embeddings", False)
    return Architecture(
        id=model_id, model_type=cfg.model_type, hidden_size=h, vocab_size=vocab,
        max_context=cfg.int("max_position_embeddings"),
        embedding=Embedding(vocab, h, dropout=resid),
        layers=(Layer(blocks),) * cfg.int("num_hidden_layers"), final_norm=LayerNorm("final_layer_norm", h),
        head=LMHead(vocab, h, tied), tied_embeddings=tied,
        notes=(("parallel residual: x + attention(ln1(x)) + mlp(ln2(x))" if parallel else
                "sequential residual (use_parallel_residual false)")
               + "; GPT-NeoX stores a fused query_key_value and dense_h_to_4h / dense_4h_to_h, "
                 "listed split with GPT-2's names (same counts).",))


ADAPTERS = {"gpt2": gpt2, "opt": opt, "gpt_neox": gpt_neox}

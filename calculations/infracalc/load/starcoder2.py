"""StarCoder2 (model_type starcoder2; Starcoder2ForCausalLM, modeling_starcoder2.py).

Pre-norm layer with LayerNorms (weight and bias): x += attn(input_layernorm(x));
x += mlp(post_attention_layernorm(x)); the final `norm` is a LayerNorm too.
Attention with GQA and RoPE, biases on q, k, v and o when `use_bias` (default
true), every layer windowed by `sliding_window` when set. The MLP is not gated:
c_fc [I, h] and c_proj [h, I] with biases when `use_bias`, activation
`hidden_act` (gelu_pytorch_tanh: the tanh GELU). The head is tied to the
embedding by default (Starcoder2Config). Dropout rates apply to training only.
"""

from ..arch import Layer
from ..blocks.basic import LMHead, Residual
from ..blocks.gpt import GPTMLP, LayerNorm
from .common import attention, model
from .gpt2 import GELU


def starcoder2(cfg, model_id):
    hidden, vocab = cfg.int("hidden_size"), cfg.int("vocab_size")
    bias = cfg.flag("use_bias", True)
    window = cfg.int("sliding_window") if cfg.has("sliding_window") else None
    attn = attention(cfg, window=window, qkv_bias=bias, o_bias=bias)
    act = cfg.string("hidden_act", "gelu_pytorch_tanh")
    if act not in GELU:
        raise cfg.unsupported(f"hidden_act '{act}' (modelled: {', '.join(GELU)})")
    mlp = GPTMLP(hidden, cfg.int("intermediate_size"), GELU[act], bias=bias)
    layer = Layer((LayerNorm("input_layernorm", hidden), attn, Residual(hidden),
                   LayerNorm("post_attention_layernorm", hidden), mlp, Residual(hidden)))
    tied = cfg.flag("tie_word_embeddings", True)
    return model(cfg, model_id, [layer] * cfg.int("num_hidden_layers"), tied_default=True,
                 final_norm=LayerNorm("norm", hidden), head=LMHead(vocab, hidden, tied),
                 notes=("StarCoder2: LayerNorms with bias, non-gated GELU MLP (c_fc, c_proj)"
                        + (f", every layer windowed to {window:,} keys" if window else "") + ".",))


ADAPTERS = {"starcoder2": starcoder2}

"""Tiny hand-made Gemma 3 / GPT-OSS / Llama 4 configs loaded through the adapters."""

import json
import os
import tempfile

from support import load_model

# Tiny configs (hidden 8, 2 query heads of width 4 sharing 1 KV head, vocabulary 10) whose
# counts are derived by hand in the tests; window and chunk are 4.
TINY = {
    "gemma3_text": {
        "model_type": "gemma3_text", "hidden_size": 8, "intermediate_size": 16,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
        "num_hidden_layers": 6, "vocab_size": 10, "sliding_window": 4,
        "max_position_embeddings": 64,
    },
    "gpt_oss": {
        "model_type": "gpt_oss", "hidden_size": 8, "intermediate_size": 6,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
        "num_hidden_layers": 4, "vocab_size": 10, "sliding_window": 4,
        "layer_types": ["sliding_attention", "full_attention"] * 2,
        "num_local_experts": 4, "num_experts_per_tok": 2, "experts_per_token": 2,
        "attention_bias": True, "tie_word_embeddings": False, "max_position_embeddings": 64,
        "quantization_config": {"quant_method": "mxfp4"},
    },
    "llama4_text": {
        "model_type": "llama4_text", "hidden_size": 8, "intermediate_size": 6,
        "intermediate_size_mlp": 12, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 4, "num_hidden_layers": 4, "vocab_size": 10, "attention_chunk_size": 4,
        "num_local_experts": 4, "num_experts_per_tok": 1, "interleave_moe_layer_step": 1,
        "max_position_embeddings": 64,
    },
}


def write_config(data):
    """Write a config dict to a fresh temporary JSON file; returns its path."""
    fd, path = tempfile.mkstemp(suffix=".json", prefix="tiny-")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    return path


def tiny_model(kind, **changes):
    data = dict(TINY[kind])
    data.update(changes)
    path = write_config(data)
    try:
        return load_model(path)
    finally:
        os.unlink(path)

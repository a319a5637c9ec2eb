"""model_type -> the family module that adapts it (imported only when needed).

Each family module exports an ADAPTERS table {model_type: function(cfg, id)};
register a new model_type here with the name of its module.
"""

import importlib

FAMILIES = {
    "llama": "dense", "mistral": "dense", "qwen2": "dense", "qwen3": "dense", "phi3": "dense",
    "qwen3_moe": "moe", "mixtral": "moe",
    "deepseek_v2": "deepseek", "deepseek_v3": "deepseek", "kimi_k2": "deepseek",
    "deepseek_v4": "deepseek_v4",
    "qwen3_next": "qwen3_next",
    "gemma3": "gemma", "gemma3_text": "gemma", "gpt_oss": "gpt_oss",
    "llama4": "llama4", "llama4_text": "llama4",
    "gpt2": "gpt2", "opt": "gpt2", "gpt_neox": "gpt2",
}


def adapter(model_type):
    """The adapter function for a model_type, or None if it is not modelled."""
    family = FAMILIES.get(model_type)
    if family is None:
        return None
    return importlib.import_module(f"{__package__}.{family}").ADAPTERS[model_type]

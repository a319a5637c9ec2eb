"""model_type -> the family module that adapts it (imported only when needed).

Each family module exports an ADAPTERS table {model_type: function(cfg, id)};
register a new model_type here with the name of its module.
"""

import importlib

FAMILIES = {
    "llama": "dense", "mistral": "dense", "qwen2": "dense", "qwen3": "dense", "phi3": "dense",
    "qwen3_moe": "moe", "mixtral": "moe",
    "deepseek_v2": "deepseek", "deepseek_v3": "deepseek", "kimi_k2": "deepseek",
    "deepseek_v4": "deepseek_v4", "deepseek_v41": "deepseek_v41", "kimi_k3": "kimi_k3", "kimi_linear": "kimi_k3",
    "qwen3_next": "qwen3_next", "qwen3_5_moe": "qwen3_next", "qwen3_5_moe_text": "qwen3_next",
    "qwen3_5": "qwen3_next", "qwen3_5_text": "qwen3_next",
    "gemma3": "gemma", "gemma3_text": "gemma", "gpt_oss": "gpt_oss",
    "gemma": "gemma", "gemma2": "gemma",
    "internlm2": "dense", "qwen2_moe": "moe", "olmo2": "olmo", "granite": "granite", "granitemoe": "granite",
    "cohere": "cohere", "starcoder2": "starcoder2",
    "falcon": "falcon", "RefinedWeb": "falcon", "RefinedWebModel": "falcon",
    "minimax": "minimax", "minimax_m1": "minimax", "minimax_text_01": "minimax",
    "ministral3": "dense", "llava": "vision", "mistral3": "vision", "qwen2_5_vl": "vision",
    "glm4": "glm", "glm4_moe": "glm", "mllama": "vision", "qwen3_vl": "vision",
    "llama4": "llama4", "llama4_text": "llama4",
    "gpt2": "gpt2", "opt": "gpt2", "gpt_neox": "gpt2",
}


def nearest(model_type, n=3):
    """The n supported model_types closest to `model_type` (difflib similarity; ties
    alphabetical), for the error naming an unsupported one."""
    import difflib  # only on the error path

    text = model_type.lower()
    score = {t: difflib.SequenceMatcher(None, text, t).ratio() for t in FAMILIES}
    return sorted(FAMILIES, key=lambda t: (-score[t], t))[:n]


def adapter_name(model_type):
    """'load.<module>.<function>' of a supported model_type's adapter."""
    fn = adapter(model_type)
    return f"load.{FAMILIES[model_type]}.{fn.__name__}"


def adapter(model_type):
    """The adapter function for a model_type, or None if it is not modelled."""
    family = FAMILIES.get(model_type)
    if family is None:
        return None
    return importlib.import_module(f"{__package__}.{family}").ADAPTERS[model_type]

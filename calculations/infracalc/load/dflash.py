"""A DFlash drafter's config -> its geometry (z-lab, "DFlash: Block Diffusion for Flash
Speculative Decoding", arXiv:2602.06036).

A DFlash drafter is a Hugging Face config (`model_type` qwen3) whose `architectures`
name DFlashDraftModel: a few decoder layers of the target's width that denoise a whole
block of positions at once, conditioned on the target's hidden states taken at
`dflash_config.target_layer_ids`; it has no embedding and no output head of its own (the
target's are shared). It is not a causal LM: `load_model` refuses it, `serve
--draft-model` takes it. `block_size` may sit at the top level or in `dflash_config`.

Bundled drafters live in models/drafters/<id>.json (models/SOURCES.md names each source).
"""

import os

from ..errors import UserError, quote, unknown
from ..record import Record
from .config import Config
from .jsonfile import read_json
from .models import MODELS_DIR, looks_like_path

DRAFTERS_DIR = os.path.join(MODELS_DIR, "drafters")
ARCHITECTURE = "DFlashDraftModel"


class Drafter(Record):
    """A DFlash drafter's geometry (the config's keys, in its own names)."""
    id: str
    hidden: int             # hidden_size
    layers: int             # num_hidden_layers
    heads: int              # num_attention_heads
    kv_heads: int           # num_key_value_heads
    head_dim: int
    intermediate: int       # intermediate_size
    vocab: int              # vocab_size (the target's: the head is shared)
    block_size: int
    target_layer_ids: tuple
    weight_bytes_per_param: int = 2   # the checkpoint's bfloat16


def drafter_ids():
    if not os.path.isdir(DRAFTERS_DIR):
        return []
    return sorted(f[:-5] for f in os.listdir(DRAFTERS_DIR) if f.endswith(".json"))


def _path(spec):
    bundled = os.path.join(DRAFTERS_DIR, spec + ".json")
    if not looks_like_path(spec) and os.path.isfile(bundled):
        return spec, bundled
    if os.path.isdir(spec):
        spec = os.path.join(spec, "config.json")
    if looks_like_path(spec) and os.path.isfile(spec):
        name = os.path.basename(spec)[:-5] if spec.endswith(".json") else os.path.basename(spec)
        return name, spec
    return None, None


def is_dflash(spec):
    """True when `spec` names a bundled drafter or a config whose architectures name DFlashDraftModel."""
    _, path = _path(spec)
    if path is None:
        return False
    data = read_json(path, "model config file")
    return isinstance(data, dict) and is_dflash_config(data)


def is_dflash_config(data):
    return isinstance(data.get("architectures"), list) and ARCHITECTURE in data["architectures"]


def load_drafter(spec):
    """A bundled drafter id or a DFlash config path -> Drafter."""
    name, path = _path(spec)
    if path is None:
        raise unknown("DFlash drafter", spec, drafter_ids())
    data = read_json(path, "model config file")
    if not isinstance(data, dict) or not is_dflash_config(data):
        raise UserError(f"{quote(spec)}: not a DFlash drafter (architectures must name {ARCHITECTURE})")
    cfg = Config(data, name)
    inner = Config(cfg.require("dflash_config"), f"{name}:dflash_config")
    block = inner.int("block_size") if inner.has("block_size") else cfg.int("block_size")
    if block < 2:
        raise UserError(f"{name}: block_size {block}: a block drafts block_size - 1 tokens, so at least 2")
    targets = inner.require("target_layer_ids")
    if (not isinstance(targets, list) or not targets
            or any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in targets)):
        raise UserError(f"{name}: dflash_config.target_layer_ids must be a non-empty list of layer indices")
    hidden, heads = cfg.int("hidden_size"), cfg.int("num_attention_heads")
    kv_heads = cfg.int("num_key_value_heads")
    if heads % kv_heads:
        raise UserError(f"{name}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
    dtype = cfg.get("dtype", cfg.get("torch_dtype", "bfloat16"))
    if dtype not in ("bfloat16", "float16"):
        raise UserError(f"{name}: dtype {quote(str(dtype))}: the drafter is costed in 2-byte weights "
                        "(bfloat16 or float16)")
    return Drafter(id=name, hidden=hidden, layers=cfg.int("num_hidden_layers"), heads=heads,
                   kv_heads=kv_heads, head_dim=cfg.int("head_dim", hidden // heads),
                   intermediate=cfg.int("intermediate_size"), vocab=cfg.int("vocab_size"),
                   block_size=block, target_layer_ids=tuple(targets))

"""The model registry: bundled ids, config paths, and the adapter per model_type."""

import os

from ..errors import UserError, quote, unknown
from ..paths import data_dir
from .config import Config
from .jsonfile import read_json, regular_file  # noqa: F401  (read_json: the one JSON reader)

MODELS_DIR = data_dir("models")


def bundled_ids():
    return sorted(f[:-5] for f in os.listdir(MODELS_DIR) if f.endswith(".json"))


def looks_like_path(spec):
    """A path is a path: it names a directory or file by a separator or a `.json` ending
    (`./gpt2`, `models/x.json`, `config.json`). A bare word is an id."""
    return spec.endswith(".json") or os.sep in spec or (os.altsep or os.sep) in spec


def resolve(spec):
    """A bundled id, a path to a config.json, or a directory holding one (a
    Hugging Face snapshot) -> (id, path).

    A bundled id always means the bundled model, whatever the working directory
    holds: a file or folder named `gpt2` there is reached as `./gpt2`. A bare
    word that is no bundled id is tried as a path only when something of that
    name exists (a `--local-dir` download), so no bundled result can depend on
    the working directory."""
    bundled = os.path.join(MODELS_DIR, spec + ".json")
    if not looks_like_path(spec) and os.path.isfile(bundled):
        return spec, bundled
    if not looks_like_path(spec) and not os.path.lexists(spec):
        raise unknown("model", spec, bundled_ids())
    if os.path.isdir(spec):
        inner = os.path.join(spec, "config.json")
        if not os.path.lexists(inner):
            raise UserError(f"{quote(spec)} is a directory without a config.json")
        spec = inner
    regular_file(spec, "model config file")
    name = os.path.basename(spec)
    name = name[:-5] if name.endswith(".json") else name
    if name == "config":
        name = os.path.basename(os.path.dirname(os.path.abspath(spec))) or name
    return name, spec


def bundled_types():
    """[(id, top-level model_type)] of the bundled configs (read, not built)."""
    out = []
    for model_id in bundled_ids():
        data = read_json(os.path.join(MODELS_DIR, model_id + ".json"), "model config file")
        out.append((model_id, data.get("model_type") if isinstance(data, dict) else None))
    return out


_CACHE = {}


def load_model(spec):
    """A bundled id or config path -> a normalized Architecture."""
    model_id, path = resolve(spec)
    key = (model_id, os.path.abspath(path))   # a relative path means another file in another directory
    if key in _CACHE:
        return _CACHE[key]
    from .adapters import FAMILIES, adapter, nearest

    cfg = Config(read_json(path, "model config file"), model_id)
    model_type = cfg.string("model_type")
    adapt = adapter(model_type)
    if adapt is None:
        raise UserError(f"{model_id}: unsupported model_type {quote(model_type)}; nearest supported: "
                        f"{', '.join(nearest(model_type))} (all {len(FAMILIES)} are listed in docs/models.md)")
    arch = adapt(cfg, model_id)
    _CACHE[key] = arch
    return arch

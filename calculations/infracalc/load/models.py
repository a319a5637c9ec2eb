"""The model registry: bundled ids, config paths, and the adapter per model_type."""

import json
import os

from ..errors import UserError, unknown
from ..paths import data_dir
from .config import Config

MODELS_DIR = data_dir("models")


def bundled_ids():
    return sorted(f[:-5] for f in os.listdir(MODELS_DIR) if f.endswith(".json"))


def resolve(spec):
    """A bundled id, a path to a config.json, or a directory holding one (a
    Hugging Face snapshot) -> (id, path)."""
    if os.path.isdir(spec):
        inner = os.path.join(spec, "config.json")
        if not os.path.isfile(inner):
            raise UserError(f"{spec} is a directory without a config.json")
        spec = inner
    if spec.endswith(".json") or os.sep in spec or os.path.isfile(spec):
        if not os.path.isfile(spec):
            raise UserError(f"model config file not found: {spec}")
        name = os.path.basename(spec)
        name = name[:-5] if name.endswith(".json") else name
        if name == "config":
            name = os.path.basename(os.path.dirname(os.path.abspath(spec))) or name
        return name, spec
    path = os.path.join(MODELS_DIR, spec + ".json")
    if not os.path.isfile(path):
        raise unknown("model", spec, bundled_ids())
    return spec, path


def _refuse_constant(name):
    raise UserError(f"{name} is not a JSON number")


def read_json(path):
    """Parse a JSON file; malformed JSON (and the NaN / Infinity that Python's
    parser would accept) is a UserError naming the file."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f, parse_constant=_refuse_constant)
    except UserError as e:
        raise UserError(f"{path}: {e}") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text (byte {e.start}: {e.reason})") from None


_CACHE = {}


def load_model(spec):
    """A bundled id or config path -> a normalized Architecture."""
    if spec in _CACHE:
        return _CACHE[spec]
    from .adapters import FAMILIES, adapter

    model_id, path = resolve(spec)
    cfg = Config(read_json(path), model_id)
    model_type = cfg.string("model_type")
    adapt = adapter(model_type)
    if adapt is None:
        raise UserError(f"{model_id}: unsupported model_type '{model_type}' "
                        f"(supported: {', '.join(sorted(FAMILIES))})")
    arch = adapt(cfg, model_id)
    _CACHE[spec] = arch
    return arch

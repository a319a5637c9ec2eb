"""The model registry: bundled ids, config paths, and the adapter per model_type."""

import os

from ..errors import UserError, quote, unknown
from ..memo import remember
from ..paths import data_dir
from .config import Config
from .jsonfile import read_json, regular_file  # noqa: F401  (read_json: the one JSON reader)

MODELS_DIR = data_dir("models")


def bundled_ids():
    return sorted(f[:-5] for f in os.listdir(MODELS_DIR) if f.endswith(".json"))


def config_crc32(model_id):
    """CRC-32 of a bundled config file's bytes (zlib: no import beyond the interpreter's own):
    what the stored model summaries are keyed by, to notice an edited config."""
    import zlib

    with open(os.path.join(MODELS_DIR, model_id + ".json"), "rb") as f:
        return zlib.crc32(f.read())


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
    alias = hf_names().get(spec.lower()) if not spec.endswith(".json") else None
    if alias:   # a Hugging Face id or casing of a bundled model: the bundled (verbatim) config
        return alias, os.path.join(MODELS_DIR, alias + ".json")
    if is_hf_repo(spec) and not os.path.lexists(spec):
        snapshot = hf_cache_snapshot(spec)
        if snapshot is None:
            from ..errors import suggest
            raise UserError(f"unknown model {quote(spec)}: not bundled and not in the local Hugging Face "
                            f"cache ({hf_cache_dir()}): download its config.json or give a path to it"
                            f"{suggest(spec.lower(), hf_names())}")
        return spec, os.path.join(snapshot, "config.json")
    if not looks_like_path(spec) and not os.path.lexists(spec):
        raise unknown("model", spec, bundled_ids())
    if os.path.isdir(spec) and os.path.basename(os.path.normpath(spec)).startswith("models--"):
        snapshot = _snapshot(spec)   # a repo folder of the Hugging Face cache
        if snapshot is None:
            raise UserError(f"{quote(spec)}: a Hugging Face cache folder without a snapshot")
        spec = snapshot
    if os.path.isdir(spec):
        inner = os.path.join(spec, "config.json")
        if not os.path.lexists(inner):
            raise UserError(f"{quote(spec)} is a directory without a config.json")
        spec = inner
    regular_file(spec, "model config file")
    name = os.path.basename(spec)
    name = name[:-5] if name.endswith(".json") else name
    if name == "config":
        folder = os.path.dirname(os.path.abspath(spec))
        name = os.path.basename(folder) or name
        repo = os.path.basename(os.path.dirname(os.path.dirname(folder)))
        if repo.startswith("models--") and os.path.basename(os.path.dirname(folder)) == "snapshots":
            name = repo[len("models--"):].replace("--", "/", 1)   # a Hugging Face cache snapshot
    return name, spec


def bundled_types():
    """[(id, top-level model_type)] of the bundled configs (read, not built)."""
    out = []
    for model_id in bundled_ids():
        data = read_json(os.path.join(MODELS_DIR, model_id + ".json"), "model config file")
        out.append((model_id, data.get("model_type") if isinstance(data, dict) else None))
    return out


_REPO_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def is_hf_repo(text):
    """owner/name as the Hugging Face Hub spells a repository id (letters, digits, '_', '.', '-';
    each part starting with a letter or digit). No `re`: its import would cost every command."""
    parts = text.split("/")
    return len(parts) == 2 and all(p and p[0].isalnum() and p.isascii() and set(p) <= _REPO_CHARS
                                   for p in parts)


def _repo_in(text):
    """The first owner/name in a table cell of models/SOURCES.md, or None."""
    for word in text.replace("*", "").replace("(", " ").replace(")", " ").split():
        if is_hf_repo(word.rstrip(",;")):
            return word.rstrip(",;")
    return None

# Repositories whose config has the bundled model's architecture besides the one named in
# models/SOURCES.md: the Hub's renamed Llama 3.1 repositories and the Instruct variants,
# whose configs differ only in their token ids.
HF_SAME_ARCHITECTURE = {
    "llama-3.1-8b": ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct",
                     "meta-llama/Meta-Llama-3.1-8B-Instruct"),
    "llama-3.1-70b": ("meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct",
                      "meta-llama/Meta-Llama-3.1-70B-Instruct"),
    "llama-3.1-405b": ("meta-llama/Llama-3.1-405B", "meta-llama/Llama-3.1-405B-Instruct",
                       "meta-llama/Meta-Llama-3.1-405B-Instruct"),
    "llama-3.2-1b": ("meta-llama/Llama-3.2-1B-Instruct",),
}

_NAMES = []


def hf_names():
    """{lower-cased name: bundled id}: every bundled id, the Hugging Face repository of its
    config (the 'HF repo of the config' column of models/SOURCES.md), the repositories of
    HF_SAME_ARCHITECTURE, and each repository's name without its owner."""
    if _NAMES:
        return _NAMES[0]
    names = {i.lower(): i for i in bundled_ids()}
    repos = {i: list(HF_SAME_ARCHITECTURE.get(i, ())) for i in names.values()}
    try:
        with open(os.path.join(MODELS_DIR, "SOURCES.md"), encoding="utf-8") as f:
            for line in f:
                cells = [c.strip() for c in line.split("|")]
                if len(cells) > 3 and cells[1] in repos:
                    found = _repo_in(cells[2])
                    if found:
                        repos[cells[1]].append(found)
    except OSError:
        pass
    for model_id, ids in repos.items():
        for repo in ids:
            names.setdefault(repo.lower(), model_id)
            names.setdefault(repo.split("/")[1].lower(), model_id)
    _NAMES.append(names)
    return names


def hf_cache_dir():
    """The Hugging Face hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    env = os.environ
    if env.get("HF_HUB_CACHE"):
        return env["HF_HUB_CACHE"]
    home = env.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return os.path.join(home, "hub")


def _snapshot(repo_dir):
    """The snapshot folder of a cache repository folder: the revision refs/main names, else
    the only snapshot; None when there is neither."""
    snapshots = os.path.join(repo_dir, "snapshots")
    try:
        with open(os.path.join(repo_dir, "refs", "main"), encoding="utf-8") as f:
            revision = f.read().strip()
        if revision and os.path.isdir(os.path.join(snapshots, revision)):
            return os.path.join(snapshots, revision)
    except OSError:
        pass
    try:
        found = sorted(os.listdir(snapshots))
    except OSError:
        return None
    return os.path.join(snapshots, found[0]) if len(found) == 1 else None


def hf_cache_snapshot(repo):
    """The cached snapshot of repository `owner/name` that holds a config.json, or None."""
    owner, name = repo.split("/")
    snapshot = _snapshot(os.path.join(hf_cache_dir(), f"models--{owner}--{name}"))
    if snapshot and os.path.isfile(os.path.join(snapshot, "config.json")):
        return snapshot
    return None


_CACHE = {}
_CACHE_KEPT = 1 << 8   # architectures kept (memo.remember): reproduce loads a few dozen


def load_model(spec):
    """A bundled id or config path -> a normalized Architecture."""
    if not looks_like_path(spec) and os.path.isfile(os.path.join(MODELS_DIR, "drafters", spec + ".json")):
        raise UserError(f"{spec}: a bundled DFlash block-diffusion drafter, not a causal LM: give it to "
                        "serve --draft-model")
    model_id, path = resolve(spec)
    key = (model_id, os.path.abspath(path))   # a relative path means another file in another directory
    if key in _CACHE:
        return _CACHE[key]
    from .adapters import FAMILIES, adapter, nearest

    data = read_json(path, "model config file")
    if isinstance(data, dict) and "DFlashDraftModel" in (data.get("architectures") or ()):
        raise UserError(f"{model_id}: a DFlash block-diffusion drafter (DFlashDraftModel), not a causal LM: "
                        "give it to serve --draft-model")
    cfg = Config(data, model_id)
    model_type = cfg.string("model_type")
    adapt = adapter(model_type)
    if adapt is None:
        raise UserError(f"{model_id}: unsupported model_type {quote(model_type)}; nearest supported: "
                        f"{', '.join(nearest(model_type))} (all {len(FAMILIES)} are listed in docs/models.md)")
    arch = adapt(cfg, model_id)
    return remember(_CACHE, _CACHE_KEPT, key, arch)

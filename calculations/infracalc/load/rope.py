"""RoPE scaling: the longest context a config declares.

A config states `max_position_embeddings` P and, optionally, `rope_scaling`
(`rope_parameters` in transformers 5) with a `rope_type` (older files: `type`)
and a `factor` f. The maximum context reported follows the rule serving
engines apply when they size a model (vLLM's `_get_and_verify_max_len`):

- linear, dynamic (NTK): P * f;
- yarn: original_max_position_embeddings * f (P when the original is absent);
- llama3, longrope (su): P (their configs already state the extended length;
  the factor rescales frequencies only);
- default / none: P.

The reported maximum is never below P. When the scaling raises it above P the
model's notes state the rule and the figures; a context beyond the maximum is
stated as such by every command (the figures extend the architecture past
what it was trained for).
"""

from ..errors import quote

FACTOR_MAX = 2**20   # far above any published scaling (YaRN and llama3 configs use 4 to 64)

# rope_type -> how the factor sets the maximum context
TYPES = {
    "default": "none", "linear": "times factor", "dynamic": "times factor", "yarn": "original times factor",
    "llama3": "as declared", "longrope": "as declared", "su": "as declared",
}


def scaling(cfg):
    """The rope_scaling (or rope_parameters) dict, or None."""
    for key in ("rope_scaling", "rope_parameters"):
        value = cfg.get(key)
        if value is not None:
            if not isinstance(value, dict):
                raise cfg.unsupported(f"{key} {quote(value, 40)} (expected an object)")
            return key, value
    return None, None


def max_context(cfg):
    """(maximum context in tokens, note or None) from max_position_embeddings and rope scaling."""
    declared = cfg.int("max_position_embeddings")
    key, rs = scaling(cfg)
    if rs is None:
        return declared, None
    kind = rs.get("rope_type", rs.get("type", "default"))
    if not isinstance(kind, str) or kind not in TYPES:
        raise cfg.unsupported(f"{key} type {quote(kind, 40)} (modelled: {', '.join(sorted(TYPES))})")
    rule = TYPES[kind]
    if rule in ("none", "as declared"):
        return declared, None
    factor = rs.get("factor")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 1 <= factor <= FACTOR_MAX:
        raise cfg.unsupported(f"{key} factor {quote(factor, 40)} (expected a number from 1 to {FACTOR_MAX:,})")
    if rule == "original times factor" and rs.get("original_max_position_embeddings") is not None:
        base, base_name = rs["original_max_position_embeddings"], "original_max_position_embeddings"
        if isinstance(base, bool) or not isinstance(base, int) or base < 1:
            raise cfg.unsupported(f"{key} original_max_position_embeddings {quote(base, 40)}")
    else:
        base, base_name = declared, "max_position_embeddings"
    scaled = int(base * factor)
    limit = max(declared, scaled)
    if limit == declared:
        return declared, None
    return limit, (f"RoPE scaling {kind} factor {factor:g}: maximum context {limit:,} = "
                   f"{base_name} {base:,} x {factor:g} (max_position_embeddings {declared:,}).")

"""Typed, validated access to the keys of a Hugging Face config.json.

Every getter checks the JSON type and range of one key and raises a one-line
UserError naming the key otherwise, so adapters never meet a list where they
expect a string. Integers are bounded above (INT_MAX; layer counts LAYERS_MAX,
since one record is built per layer) so that no count, however large the
config's numbers, overflows a float when turned into a time.
"""

from ..errors import UserError, quote

INT_MAX = 2**31 - 1          # int32, the type of every size in a Hugging Face config
LAYERS_MAX = 2**16           # layer counts: one record per layer is built
_LIMITS = {"num_hidden_layers": LAYERS_MAX, "num_nextn_predict_layers": LAYERS_MAX, "n_layer": LAYERS_MAX}


def _show(value, limit=60):
    """repr(value) cut to `limit` characters, for one-line messages."""
    return quote(value, limit)


class Config:
    """A config dict plus the name to blame in error messages."""

    def __init__(self, data, source, model_type=None):
        if not isinstance(data, dict):
            raise UserError(f"{source}: config must be a JSON object")
        self.data = data
        self.source = source
        model_type = model_type or data.get("model_type")
        self.model_type = model_type if isinstance(model_type, str) else None   # for messages

    def _model_type(self):
        return f" (model_type {self.model_type})" if self.model_type else ""

    def _where(self, key):
        return f"{self.source}: field '{key}'{self._model_type()}"

    def has(self, key):
        return self.data.get(key) is not None

    def get(self, key, default=None):
        value = self.data.get(key)
        return default if value is None else value

    def require(self, key):
        if self.data.get(key) is None:
            raise UserError(f"{self.source}: missing required field '{key}'{self._model_type()}")
        return self.data[key]

    def int(self, key, default=None, low=1):
        """A required (or defaulted) integer in [low, INT_MAX] (layer counts: LAYERS_MAX)."""
        value = self.require(key) if default is None else self.get(key, default)
        high = _LIMITS.get(key, INT_MAX)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise UserError(f"{self._where(key)} must be an integer from {low} to {high:,}, "
                            f"got {_show(value)}")
        return value

    def experts(self, experts_key, top_k_key="num_experts_per_tok"):
        """(E, k): routed experts per MoE layer and experts chosen per token, k <= E."""
        experts, top_k = self.int(experts_key), self.int(top_k_key)
        if top_k > experts:
            raise UserError(f"{self._where(top_k_key)} is {top_k:,}, more than the {experts:,} experts "
                            f"of '{experts_key}': a token cannot choose more experts than there are")
        return experts, top_k

    def string(self, key, default=None):
        """A required (or defaulted) string."""
        value = self.require(key) if default is None else self.get(key, default)
        if not isinstance(value, str):
            raise UserError(f"{self._where(key)} must be a string, got {_show(value)}")
        return value

    def flag(self, key, default=False):
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise UserError(f"{self._where(key)} must be true or false, got {_show(value)}")
        return value

    def number(self, key, default):
        """A finite number (JSON's NaN and Infinity are refused when the file is read)."""
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(f"{self._where(key)} must be a number, got {_show(value)}")
        return value

    def fraction(self, key, default):
        """A number in [0, 1] (partial_rotary_factor)."""
        value = self.number(key, default)
        if not 0 <= value <= 1:
            raise UserError(f"{self._where(key)} must be a number from 0 to 1, got {_show(value)}")
        return value

    def layer_indices(self, key, layers):
        """A list of layer indices in 0..layers-1 (absent: empty), as a set."""
        value = self.get(key, [])
        if not isinstance(value, list) or any(isinstance(i, bool) or not isinstance(i, int)
                                              or not 0 <= i < layers for i in value):
            raise UserError(f"{self._where(key)} must be a list of layer indices from 0 to "
                            f"{layers - 1}, got {_show(value)}")
        return set(value)

    def layer_types(self, choices):
        """`layer_types`: one of `choices` for each of num_hidden_layers layers, as a tuple.
        A kind outside `choices` is an architecture the adapter does not model."""
        n, value = self.int("num_hidden_layers"), self.require("layer_types")
        if not isinstance(value, list) or len(value) != n:
            raise UserError(f"{self._where('layer_types')} must be a list of {n} entries "
                            f"(num_hidden_layers), got {_show(value)}")
        for i, kind in enumerate(value):
            if kind not in choices:
                raise self.unsupported(f"layer_types[{i}] {_show(kind)} (modelled: {', '.join(choices)})")
        return tuple(value)

    def with_defaults(self, defaults):
        """This config with `defaults` filling the keys it omits (a family's class defaults)."""
        merged = dict(defaults)
        merged.update({k: v for k, v in self.data.items() if v is not None})
        return Config(merged, self.source, self.model_type)

    def sub(self, key):
        """A nested config (text_config of a multimodal model)."""
        return Config(self.require(key), f"{self.source}:{key}",
                      self.data[key].get("model_type") if isinstance(self.data[key], dict) else None)

    def unsupported(self, what):
        return UserError(f"{self.source}: {what} is not modelled yet (model_type {self.model_type})")

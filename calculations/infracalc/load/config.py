"""Typed, validated access to the keys of a Hugging Face config.json."""

from ..errors import UserError


class Config:
    """A config dict plus the name to blame in error messages."""

    def __init__(self, data, source, model_type=None):
        if not isinstance(data, dict):
            raise UserError(f"{source}: config must be a JSON object")
        self.data = data
        self.source = source
        self.model_type = model_type or data.get("model_type")

    def _where(self, key):
        mt = f" (model_type {self.model_type})" if self.model_type else ""
        return f"{self.source}: field '{key}'{mt}"

    def has(self, key):
        return self.data.get(key) is not None

    def get(self, key, default=None):
        value = self.data.get(key)
        return default if value is None else value

    def require(self, key):
        if self.data.get(key) is None:
            mt = f" (model_type {self.model_type})" if self.model_type else ""
            raise UserError(f"{self.source}: missing required field '{key}'{mt}")
        return self.data[key]

    def int(self, key, default=None, low=1):
        """A required (or defaulted) integer >= low."""
        value = self.require(key) if default is None else self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise UserError(f"{self._where(key)} must be an integer >= {low}, got {value!r}")
        return value

    def flag(self, key, default=False):
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise UserError(f"{self._where(key)} must be true or false, got {value!r}")
        return value

    def number(self, key, default):
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(f"{self._where(key)} must be a number, got {value!r}")
        return value

    def sub(self, key):
        """A nested config (text_config of a multimodal model)."""
        return Config(self.require(key), f"{self.source}:{key}",
                      self.data[key].get("model_type") if isinstance(self.data[key], dict) else None)

    def unsupported(self, what):
        return UserError(f"{self.source}: {what} is not modelled yet (model_type {self.model_type})")

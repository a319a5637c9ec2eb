"""Frozen records without the start-up cost of `dataclasses`.

`dataclasses` imports `inspect` and compiles code for every class at import
time, which alone costs more than this tool's whole budget of ~30 ms per
command. A `Record` subclass declares its fields as annotated class attributes
(a value is the default), exactly like a frozen dataclass, and gets keyword or
positional construction, equality and hashing by type and values, a repr, and
`replace()`. Instances are immutable.
"""


class Record:
    _fields = ()
    _field_set = frozenset()
    _defaults = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = [name for name in cls.__dict__.get("__annotations__", {}) if not name.startswith("_")]
        fields = list(cls._fields) + [f for f in own if f not in cls._fields]
        defaults = dict(cls._defaults)
        for name in own:
            if name in cls.__dict__:
                defaults[name] = cls.__dict__[name]
        cls._fields = tuple(fields)
        cls._field_set = frozenset(fields)
        cls._defaults = defaults

    def __init__(self, *args, **kwargs):
        fields = self._fields
        d = self.__dict__   # written directly: __setattr__ refuses all writes
        d.update(self._defaults)
        if args:
            if len(args) > len(fields):
                raise TypeError(f"{type(self).__name__} takes at most {len(fields)} fields")
            d.update(zip(fields, args))
        if kwargs:
            given = fields[:len(args)]   # empty for keyword-only construction (the common case)
            if not self._field_set.issuperset(kwargs) or (given and not set(given).isdisjoint(kwargs)):
                bad = [k for k in kwargs if k not in self._field_set or k in given]
                raise TypeError(f"{type(self).__name__}: bad or repeated fields {bad}")
            d.update(kwargs)
        if len(d) < len(fields):
            missing = [f for f in fields if f not in d]
            raise TypeError(f"{type(self).__name__}: missing fields {missing}")
        self._check()

    def _check(self):
        """Validate after construction (override as needed)."""

    def _values(self):
        d = self.__dict__
        return tuple([d[f] for f in self._fields])

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other):
        if self is other:
            return True
        return type(self) is type(other) and hash(self) == hash(other) and self._values() == other._values()

    def __hash__(self):
        h = self.__dict__.get("_hash")
        if h is None:   # immutable, so the hash is computed once
            h = hash((type(self).__name__,) + self._values())
            object.__setattr__(self, "_hash", h)
        return h

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"

    def replace(self, **changes):
        values = {f: getattr(self, f) for f in self._fields}
        values.update(changes)
        return type(self)(**values)

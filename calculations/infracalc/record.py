"""Frozen records without the start-up cost of `dataclasses`.

`dataclasses` imports `inspect` and compiles code for every class at import
time, which alone costs more than this tool's whole budget of ~30 ms per
command. A `Record` subclass declares its fields as annotated class attributes
(a value is the default), exactly like a frozen dataclass, and gets keyword or
positional construction, equality and hashing by type and values, a repr, and
`replace()`. Instances are immutable.

Records are built in the ledger's inner loops (thousands per command), so the
constructor does the least it can: the defaults and the given values go into
the instance dict in two updates, and the field names are checked only by set
operations. `replace` copies the instance dict instead of reading each field.
A class built thousands of times per command (the ledger's `Op`) sets `_hot`:
after HOT_AFTER constructions its constructor is compiled with the fields as
parameters (as dataclasses does for every class at import, which would cost
more than it saves for the many classes built a few times).
"""

from operator import itemgetter

HOT_AFTER = 200


def _fields_of(fields):
    """A function of an instance dict giving the tuple of `fields`' values in order, in C
    (operator.itemgetter: a third of a comprehension's cost; equality and the first hash of a
    record read every field, and memo keys meet equal records hundreds of times per command)."""
    if len(fields) > 1:
        return itemgetter(*fields)
    if fields:
        name = fields[0]
        return lambda d: (d[name],)
    return lambda d: ()


def _compiled_init(cls):
    """cls's constructor with its fields as parameters, in order (Python then
    matches and checks the arguments); None when a field without a default
    follows one with a default (no such signature)."""
    fields, defaults = cls._fields, cls._defaults
    required = [f for f in fields if f not in defaults]
    if list(fields[:len(required)]) != required:
        return None
    params = ", ".join(required + [f"{f}=_defaults[{f!r}]" for f in fields[len(required):]])
    values = ", ".join(f"{f!r}: {f}" for f in fields)
    namespace = {"_defaults": defaults}
    check = "    self._check()\n" if cls._checked else ""
    exec(f"def __init__(self, {params}):\n"
         f"    self.__dict__.update({{{values}}})\n"
         f"{check}", namespace)
    init = namespace["__init__"]
    init.hot_of = cls
    return init


def _counting_init(cls):
    """Record.__init__ that swaps itself for `_compiled_init(cls)` after HOT_AFTER calls."""
    made = [0]

    def __init__(self, *args, **kwargs):
        Record.__init__(self, *args, **kwargs)
        made[0] += 1
        if made[0] == HOT_AFTER:
            cls.__init__ = _compiled_init(cls) or Record.__init__

    __init__.hot_of = cls
    return __init__


class Record:
    _checked = False   # the class overrides _check (set per class)
    _fields = ()
    _field_set = frozenset()
    _defaults = {}
    _values_of = staticmethod(_fields_of(()))

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
        cls._values_of = staticmethod(_fields_of(cls._fields))
        cls._defaults = defaults
        cls._checked = cls._check is not Record._check   # construction calls _check only when it checks
        if cls.__dict__.get("_hot"):
            cls.__init__ = _counting_init(cls)
        elif getattr(cls.__init__, "hot_of", None) is not None:   # a hot class's subclass: its own fields
            cls.__init__ = Record.__init__

    def __init__(self, *args, **kwargs):
        fields = self._fields
        d = self.__dict__   # written directly: __setattr__ refuses all writes
        d.update(self._defaults)
        if args:
            if len(args) > len(fields):
                raise TypeError(f"{type(self).__name__} takes at most {len(fields)} fields")
            d.update(zip(fields, args))
            if kwargs and not kwargs.keys().isdisjoint(fields[:len(args)]):
                raise TypeError(f"{type(self).__name__}: repeated fields "
                                f"{[k for k in kwargs if k in fields[:len(args)]]}")
        if kwargs:
            if not self._field_set.issuperset(kwargs):
                raise TypeError(f"{type(self).__name__}: bad fields {[k for k in kwargs if k not in self._field_set]}")
            d.update(kwargs)
        if len(d) < len(fields):
            raise TypeError(f"{type(self).__name__}: missing fields {[f for f in fields if f not in d]}")
        if self._checked:
            self._check()

    def _check(self):
        """Validate after construction (override as needed)."""

    def _values(self):
        return self._values_of(self.__dict__)

    def _field_dict(self):
        """{field: value}, a fresh dict (without the cached hash or other private entries)."""
        d = self.__dict__
        if len(d) == len(self._fields):   # nothing but the fields (the common case)
            return d.copy()
        return {f: d[f] for f in self._fields}

    @classmethod
    def _from_fields(cls, values):
        """A record from a complete {field: value} dict known to hold exactly the
        fields (what `replace` and the ledger's copies build): no name checks."""
        obj = cls.__new__(cls)
        obj.__dict__.update(values)
        if cls._checked:
            obj._check()
        return obj

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other):
        if self is other:
            return True
        return (type(self) is type(other) and hash(self) == hash(other)
                and self._values_of(self.__dict__) == other._values_of(other.__dict__))

    def __hash__(self):
        h = self.__dict__.get("_hash")
        if h is None:   # immutable, so the hash is computed once
            h = hash((type(self).__name__,) + self._values_of(self.__dict__))
            self.__dict__["_hash"] = h
        return h

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"

    def replace(self, **changes):
        if not self._field_set.issuperset(changes):
            raise TypeError(f"{type(self).__name__}: bad fields {[k for k in changes if k not in self._field_set]}")
        values = self._field_dict()
        values.update(changes)
        return self._from_fields(values)

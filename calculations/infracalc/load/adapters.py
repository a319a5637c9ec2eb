"""model_type -> adapter. Each family module exports its own ADAPTERS table."""

from . import dense

ADAPTERS = {}
for _module in (dense,):
    ADAPTERS.update(_module.ADAPTERS)

"""model_type -> adapter. Each family module exports its own ADAPTERS table."""

from . import dense, moe

ADAPTERS = {}
for _module in (dense, moe):
    ADAPTERS.update(_module.ADAPTERS)

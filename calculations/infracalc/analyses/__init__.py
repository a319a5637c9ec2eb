"""Pure functions from a ledger (and a device) to result records."""

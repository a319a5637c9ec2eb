"""`serve`: serving systems composed from the ledger, roofline, layout and communication models.

iteration: one engine iteration's work and times; batching: fixed, continuous and chunked
schedulers in steady state; queueing: load, Little's law, M/G/1 waiting; system: the
single-replica record.
"""

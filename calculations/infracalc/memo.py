"""Bounded memo tables for results that are pure functions of immutable records."""

from itertools import islice


def remember(table, kept, key, value):
    """table[key] = value, first dropping the oldest half of `table` when it holds
    `kept` entries (dropping one entry per insertion would rescan the deleted
    slots at the front of the dict every time). Returns value."""
    if len(table) >= kept:
        for old in list(islice(table, kept // 2)):
            del table[old]
    table[key] = value
    return value

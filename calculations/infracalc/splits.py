"""Integer splits that every layer of the package shares (one definition each)."""


def ceil_div(a, b):
    """ceil(a / b) of integers, exactly (no float): the largest share when a splits b ways."""
    return -(-a // b)


def expert_tp(tp, ep):
    """Ways each routed expert is tensor-split when EP ranks are carved out of the TP group
    first, then out of data-parallel replicas (the layout library's convention): tp / ep when
    ep <= tp, else 1 (each expert held whole)."""
    return tp // ep if ep <= tp else 1

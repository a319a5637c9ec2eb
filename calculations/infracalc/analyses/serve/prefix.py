"""Which independent prefixes to keep in a cache of fixed size (the book's chapter-8
`prefix-value` group).

A candidate prefix of p tokens, reused r times in expectation by requests adding s tokens
after it, saves per reuse the matrix FLOPs of a cold prefill of p + s tokens less those of the
s tokens after p cached (the ledger's two passes: the suffix still attends to the prefix), and
holds `kv`'s cache of one request at p tokens in whole pages (ceil(p / page) x page x c under
full attention, c the cache bytes of one token; windows, compressed entries and fixed states as
each block keeps them). Keeping a set is worth
the sum of r x saved over it. The exact choice is the 0/1 knapsack over the budget (a dynamic
programme over the held bytes, dominated states dropped; the most value, then the fewest bytes,
then the earliest candidates); the greedy choice takes candidates by value per byte while they
fit. Both are exact rationals.
"""

from fractions import Fraction

PREFIX_CONVENTION = (
    "Prefix value: a candidate of p tokens reused r times by requests of s more tokens saves r x "
    "(matrix FLOPs of a (p + s)-token prefill - of s tokens after p cached) and holds kv's cache at p "
    "tokens in whole pages (ceil(p / page) x page x cache bytes per token under full attention); exact choice = the 0/1 knapsack within the budget (most value, "
    "then fewest bytes); greedy = by value per byte while it fits.")


def exact_choice(rows, budget):
    """(chosen indices, bytes, value): the best 0/1 subset within `budget` bytes."""
    states = {0: (Fraction(0), ())}
    for i, row in enumerate(rows):
        grown = dict(states)
        for held, (value, chosen) in states.items():
            n = held + row["resident_bytes"]
            v = value + row["expected_saved_flops"]
            if n <= budget and v > grown.get(n, (Fraction(-1), ()))[0]:
                grown[n] = (v, chosen + (i,))
        states, top = {}, Fraction(-1)
        for held, entry in sorted(grown.items()):   # keep a state only if it beats every lighter one
            if entry[0] > top:
                states[held], top = entry, entry[0]
    held, (value, chosen) = max(states.items(), key=lambda e: (e[1][0], -e[0]))
    return list(chosen), held, value


def greedy_choice(rows, budget):
    left, chosen, value = budget, [], Fraction(0)
    for i in sorted(range(len(rows)), key=lambda j: -rows[j]["value_per_byte"]):
        row = rows[i]
        if row["resident_bytes"] <= left and row["expected_saved_flops"] > 0:
            left -= row["resident_bytes"]
            chosen.append(i)
            value += row["expected_saved_flops"]
    return chosen, budget - left, value


def choose(rows, budget):
    ids = [r["id"] for r in rows]
    e, eb, ev = exact_choice(rows, budget)
    g, gb, gv = greedy_choice(rows, budget)
    return {"exact": [ids[i] for i in e], "exact_bytes": eb, "exact_saved_flops": ev,
            "greedy": [ids[i] for i in g], "greedy_bytes": gb, "greedy_saved_flops": gv,
            "exact_minus_greedy_flops": ev - gv}

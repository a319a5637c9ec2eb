"""A finite retry graph: every terminal path of declared attempts, its probability and the resources
it consumed (the book's chapter-11 retry paths).

Each attempt node n costs c_n dollars, t_n wall seconds, u_n CPU core-seconds and holds b_n bytes
for its t_n seconds; its outcomes lead to other nodes or to the terminals success and failure with
probabilities conditional on reaching n (summing to 1). The graph must be acyclic (a retry is an
explicit node, never a loop). For a terminal path through nodes n_1 ... n_k:

    P(path) = prod of its edge probabilities,   cost = sum c_n,   seconds = sum t_n,
    CPU = sum u_n,   resident byte-seconds = sum b_n t_n;
    P(reach n) = sum of P over the paths through n (each path visits n at most once);

a path is a quality-and-deadline success when it ends in success with seconds <= the deadline
(the deadline judges, it never stops an attempt). Then

    P(success) = sum of P over success paths,   P(timely) = over the timely ones,
    E[resource] = sum P(path) x resource(path),   E[attempts] = sum P(path) x k,
    cost per success = E[cost] / P(success)   (every attempt's cost counted, failures included),
    for N submitted tasks: N E[cost] dollars and N P(success) successes.

Exact fractions of the declared figures; a zero denominator is reported as none.
"""

from fractions import Fraction

TERMINALS = ("success", "failure")
MAX_PATHS = 10_000


def terminal_paths(nodes, start):
    """[(node ids, terminal, probability, cost, seconds, cpu_seconds, byte_seconds)] in outcome order.
    nodes: {id: {"cost", "seconds", "cpu_seconds", "resident_bytes", "outcomes": [(target, p)]}}."""
    paths = []

    def walk(name, p, seen, cost, seconds, cpu, byte_s):
        if name in TERMINALS:
            paths.append((tuple(seen), name, p, cost, seconds, cpu, byte_s))
            if len(paths) > MAX_PATHS:
                raise ValueError(f"more than {MAX_PATHS:,} terminal paths")
            return
        if name in seen:
            raise ValueError(f"the retry graph has a cycle through '{name}': unroll each retry as its own node")
        n = nodes[name]
        for target, q in n["outcomes"]:
            if q:
                walk(target, p * q, seen + [name], cost + n["cost"], seconds + n["seconds"],
                     cpu + n["cpu_seconds"], byte_s + n["resident_bytes"] * n["seconds"])

    walk(start, Fraction(1), [], Fraction(0), Fraction(0), Fraction(0), Fraction(0))
    return paths


def _ratio(a, b):
    return str(a / b) if b else None


def retry_paths(*, nodes, start, deadline_s, tasks):
    paths = terminal_paths(nodes, start)
    rows = [{"nodes": " > ".join(ids), "terminal": end, "probability_exact": str(p), "cost_exact": str(cost),
             "seconds_exact": str(s), "cpu_seconds_exact": str(cpu), "resident_byte_seconds_exact": str(bs),
             "quality_and_deadline": end == "success" and s <= deadline_s}
            for ids, end, p, cost, s, cpu, bs in paths]
    success = sum((p for _, end, p, *_ in paths if end == "success"), Fraction(0))
    timely = sum((path[2] for path, row in zip(paths, rows) if row["quality_and_deadline"]), Fraction(0))
    expect = lambda i: sum((path[2] * path[i] for path in paths), Fraction(0))  # noqa: E731
    cost = expect(3)
    return {
        "terminal_paths": len(paths),
        "success_probability_exact": str(success),
        "quality_and_deadline_probability_exact": str(timely),
        "expected_attempts_exact": str(sum((p * len(ids) for ids, _, p, *_ in paths), Fraction(0))),
        "expected_per_task": {"cost_exact": str(cost), "seconds_exact": str(expect(4)),
                              "cpu_seconds_exact": str(expect(5)), "resident_byte_seconds_exact": str(expect(6))},
        "total_expected_cost_exact": str(tasks * cost),
        "expected_successes_exact": str(tasks * success),
        "cost_per_success_exact": _ratio(cost, success),
        "cost_per_quality_and_deadline_success_exact": _ratio(cost, timely),
        "node_reach_probabilities": {name: str(sum((p for ids, _, p, *_ in paths if name in ids), Fraction(0)))
                                     for name in nodes},
        "paths": rows,
    }


RETRY_CONVENTIONS = [
    "A finite acyclic retry graph of declared attempts: outcome probabilities are conditional on reaching the "
    "attempt; each terminal path's probability is the product of its edges, its cost, seconds, CPU seconds and "
    "resident byte-seconds (bytes x the attempt's seconds) the sums over its attempts. Attempts run one after "
    "another, each after the previous outcome is known (no speculation, no timeout stops an attempt).",
    "P(success) sums the success paths; quality and deadline also needs the path's seconds <= the deadline. "
    "Expected resources sum probability x path resource (every attempt's cost counted, failed paths included); "
    "cost per success = expected cost / P(success) (none when zero); a node's reach probability sums the paths "
    "through it. Declared teaching figures, exact "
    "fractions; not prices or measured retries.",
]

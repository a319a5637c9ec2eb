"""Physical paths of a collective's rounds on a bidirectional ring of n nodes (`collective
--topology ring`): which directed links each message crosses, and the bytes each link carries.

The logical pattern says who sends to whom; the topology says which links that takes. On a ring
of n nodes each node has two directed links, i -> i+1 (clockwise) and i -> i-1 (anticlockwise),
each its own resource of bandwidth B. A message from r to q takes the unique shortest path
(d = (q - r) mod n hops clockwise when d < n - d, else n - d anticlockwise); a peer at n/2 has
two shortest paths and is refused (which of them a real router takes is not the pattern's).

Patterns (reduce-scatter by recursive halving; round s = 0, 1, ..., message m_s = S / 2^(s+1),
S the per-rank buffer, so round s moves half of what round s-1 kept):
  recursive   peer(r, s) = r XOR 2^s                          (Thakur et al. 2005, halving)
  swing       peer(r, s) = r + rho(s) if r even, r - rho(s) if r odd (mod n),
              rho(s) = sum_{i=0..s} (-2)^i = (1 - (-2)^(s+1)) / 3 = 1, -1, 3, -5, 11, ...
              (De Sensi et al., "Swing", NSDI 2024, eq. 2)

Per round: n messages of m_s bytes; a message of h hops puts m_s on each of its h links, so the
physical link bytes are m_s x sum of hops (a link crossed counts once; the receive side is not
counted again); the busiest link carries L_s = (messages through it) x m_s, and the round
takes at least L_s / B (links run in parallel; rounds are separated by a barrier). Over the
rounds: the sum of the round bounds, and the aggregate bound max over links of (bytes over all
rounds) / B, which the barrier sum can never beat. Latency, per-hop delay, the reduction and
packet-level effects are not modelled.
"""

from ..errors import UserError

PATTERNS = ("recursive", "swing")


def rho(step):
    """Swing's offset at round `step`: sum_{i=0}^{step} (-2)^i."""
    return (1 - (-2) ** (step + 1)) // 3


def peer(pattern, rank, step, n):
    if pattern == "recursive":
        return rank ^ (1 << step)
    if pattern == "swing":
        return (rank + rho(step) if rank % 2 == 0 else rank - rho(step)) % n
    from ..errors import unknown
    raise unknown("pattern", pattern, PATTERNS)


def route(sender, receiver, n):
    """The directed links (a, b) of the unique shortest ring path from sender to receiver."""
    clockwise = (receiver - sender) % n
    anticlockwise = (sender - receiver) % n
    if clockwise == 0:
        raise UserError(f"rank {sender} would send to itself")
    if clockwise == anticlockwise:
        raise UserError(f"ranks {sender} and {receiver} are {clockwise} hops apart both ways on the {n}-node "
                        f"ring: two shortest paths (use fewer --rounds)")
    step = 1 if clockwise < anticlockwise else -1
    links, here = [], sender
    for _ in range(min(clockwise, anticlockwise)):
        nxt = (here + step) % n
        links.append((here, nxt))
        here = nxt
    return links


def check(n, rounds, size):
    if n < 2 or n & (n - 1):
        raise UserError(f"--topology ring takes a power-of-two number of ranks (recursive halving), got {n}")
    if rounds > n.bit_length() - 1:
        raise UserError(f"--rounds {rounds} exceeds log2({n}) = {n.bit_length() - 1} halving rounds")
    if size % (1 << rounds):
        raise UserError(f"the buffer of {size} B does not halve into whole bytes over {rounds} rounds "
                        f"(it must be a multiple of {1 << rounds})")


def pattern_rounds(pattern, n, size, rounds, link_bw):
    """One row per round of `pattern`, plus the pattern's totals (module docstring)."""
    check(n, rounds, size)
    out, total = [], {}
    for s in range(rounds):
        message = size >> (s + 1)
        counts, hops = {}, set()
        for r in range(n):
            path = route(r, peer(pattern, r, s, n), n)
            hops.add(len(path))
            for link in path:
                counts[link] = counts.get(link, 0) + 1
        crossings = sum(counts.values())
        peak = max(counts.values())
        for link, c in counts.items():
            total[link] = total.get(link, 0) + c * message
        out.append({"round": s, "message_bytes": message, "messages": n, "hops": sorted(hops),
                    "injected_bytes": n * message, "physical_link_bytes": crossings * message,
                    "links_used": len(counts), "peak_link_messages": peak, "peak_link_bytes": peak * message,
                    "round_lower_bound_s": peak * message / link_bw})
    return {"pattern": pattern, "rounds": out,
            "messages": n * rounds,
            "injected_bytes": sum(r["injected_bytes"] for r in out),
            "physical_link_bytes": sum(r["physical_link_bytes"] for r in out),
            "barrier_lower_bound_s": sum(r["round_lower_bound_s"] for r in out),
            "aggregate_lower_bound_s": max(total.values()) / link_bw}


def record(operation, n, sizes, rounds, patterns, link_bw):
    """The `collective --topology ring` record: per message size S, each pattern's rounds and totals;
    `messages` counts every enumerated message of a size (all patterns)."""
    from .records import SCHEMA_VERSION

    if operation != "reduce_scatter":
        raise UserError(f"--topology ring enumerates reduce-scatter rounds (recursive halving); "
                        f"got {operation}")
    table = []
    for size in sizes:
        rows = [pattern_rounds(p, n, size, rounds, link_bw) for p in patterns]
        table.append({"bytes": size, "messages": sum(p["messages"] for p in rows), "patterns": rows})
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "collective",
        "view": "ring-paths",
        "inputs": {"operation": operation, "ranks": n, "topology": "ring", "rounds": rounds,
                   "patterns": list(patterns), "link_bw_bytes_per_s": link_bw},
        "sizes": table,
        "conventions": list(CONVENTIONS),
    }


CONVENTIONS = (
    "Bidirectional ring: node i has the directed links i->i+1 and i->i-1, each its own resource at the "
    "declared bandwidth; a message takes its unique shortest path (a peer n/2 away is refused).",
    "Reduce-scatter by recursive halving: round s sends S / 2^(s+1) bytes to peer r XOR 2^s (recursive) or "
    "r +/- rho(s), rho(s) = sum_{i<=s} (-2)^i, + for even r (Swing, De Sensi et al. NSDI 2024, eq. 2).",
    "Physical link bytes count a message once per link it crosses (not again at the receiver); a round takes at "
    "least its busiest link's bytes / B; rounds are barrier-separated, so their bounds add. Latency, per-hop "
    "delay, the reduction and packet effects are not modelled.",
)

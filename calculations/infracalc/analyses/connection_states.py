"""Connection state of one host: local endpoints x remote peers, per-relation transports against
transports shared within an isolation class (the book's chapter-7 connection-state example).

T local endpoints (threads) talk to a set A of directed (thread, peer) relations, by default all
T x P of P peers. Each endpoint holds e bytes, each active relation a binding of b bytes. A
transport holds t bytes and is either

- per relation (one transport per active relation, as one queue pair per connection): |A| of them;
- shared: one per (peer, thread mod K) of the K isolation classes that occur among A (sharing
  never crosses a class).

    per-relation bytes = T e + |A| b + |A| t,    shared bytes = T e + |A| b + G t,
    G = |{(peer, thread mod K) : (thread, peer) in A}|.

All endpoints count (allocated or not), bindings stay per relation. e, b and t are declared
teaching sizes, not a NIC's or a protocol's structures; the counts are exact. The book's default:
64 threads, 128 peers, K = 1, e = 256, b = 64, t = 1024 B, a 1 MiB budget: 8,192 relations, 128
shared transports, 671,744 B shared against 8,929,280 B per relation.
"""


def connection_states(*, threads, peers, classes=1, relations=None, endpoint_bytes=256, relation_bytes=64,
                      transport_bytes=1024, budget_bytes=None):
    """relations: (thread, peer) pairs, distinct and in range; None = every pair."""
    if relations is None:
        pairs = [(t, p) for t in range(threads) for p in range(peers)]
    else:
        pairs = list(relations)
    groups = {}
    for t, p in pairs:
        groups.setdefault((p, t % classes), []).append(t)
    active = len(pairs)
    base = threads * endpoint_bytes + active * relation_bytes
    per_relation = base + active * transport_bytes
    shared = base + len(groups) * transport_bytes
    out = {
        "possible_relations": threads * peers,
        "active_relations": active,
        "active_threads": len({t for t, _ in pairs}),
        "active_peers": len({p for _, p in pairs}),
        "per_relation_transports": active,
        "shared_transports": len(groups),
        "largest_shared_group": max((len(v) for v in groups.values()), default=0),
        "endpoint_bytes": threads * endpoint_bytes,
        "relation_bytes": active * relation_bytes,
        "per_relation_total_bytes": per_relation,
        "shared_total_bytes": shared,
        "saved_bytes": per_relation - shared,
    }
    if budget_bytes is not None:
        out["budget_bytes"] = budget_bytes
        out["per_relation_fits"] = per_relation <= budget_bytes
        out["shared_fits"] = shared <= budget_bytes
    return out


CONNECTION_CONVENTIONS = [
    "Directed (local thread, remote peer) relations of one host (default every thread to every peer); not a "
    "cluster-wide count, the receiver's state is not added.",
    "Per-relation organisation: one transport per active relation; shared: one per (peer, thread mod K) that "
    "occurs, never across the K isolation classes. Both keep every endpoint's state and every relation's "
    "binding: bytes = T x endpoint + relations x binding + transports x transport.",
    "Endpoint, binding and transport sizes are declared teaching sizes, not a NIC's or protocol's structures; "
    "the counts say nothing of throughput, fairness or head-of-line blocking.",
]

"""One gradient all-reduced over two servers (`budget gradient-ring`): flat rings or the two-level
hierarchy, every message on its physical path, each round bounded by its busiest resource (the
book's chapter-7 real-gradient collectives).

Two servers of R ranks (p = 2R); every rank holds the same G elements of w bytes (one gradient
tensor), cut into p chunks of G / p. Organizations:

- flat ring over the rank order 0, 1, ..., p - 1 (contiguous) or 0, R, 1, R + 1, ... (interleaved):
  p - 1 reduce-scatter rounds then p - 1 all-gather rounds; in every round each rank sends one chunk
  to its ring successor;
- hierarchical: a reduce-scatter inside each server over pairs of chunks (R - 1 rounds), a two-rank
  all-reduce between the servers' corresponding owners (a reduce-scatter round and an all-gather
  round, one chunk each way), then an all-gather inside each server (R - 1 rounds): 2R rounds.

Paths and resources. A message inside a server uses rank{s}.tx, local.{s}->{r} and rank{r}.rx at the
local rate. A message between servers a -> b leaves rank{s}.tx, crosses server{a}.nic{i}.tx, an
optional shared server{a}.egress, the cut cut.{a}->{b} (the NICs' summed rate, capped by the
egress), the bidirectional cut (twice that), an optional server{b}.ingress and server{b}.nic{j}.rx,
and enters rank{r}.rx. With one NIC per rank, i = s mod R and j = r mod R; with K < R NICs a server
message is striped evenly over NIC pairs (k, k), k = 0 .. K - 1 (G / p must split into K whole
pieces).

A round's resource bound is max over resources of its bytes / rate; with the declared startup it is
the round's barrier bound, and the serial bound is their sum. The aggregate bound is max over
resources of all rounds' bytes / rate (no schedule beats it). Sends: 2 (p - 1) G w in every
organization; between servers 4 (p - 1) G w / p (contiguous), 2 (p - 1) G w (interleaved) or 2 G w
(hierarchical); reduction adds (p - 1) G. Also the NICs that send between the servers (a NIC index
used on either server counts once). Exact fractions; nothing is measured.
"""

from collections import Counter
from fractions import Fraction

from ..errors import UserError

ORGANIZATIONS = ("flat-contiguous", "flat-interleaved", "hierarchical")


def _ring_rounds(groups):
    """Rounds of a ring reduce-scatter then all-gather run in parallel on each group: [(phase, [(sender,
    receiver, chunks)])]; a group is (ranks in ring order, its logical chunks, each a tuple of chunks)."""
    n = len(groups[0][0])
    rounds = []
    for phase in ("reduce_scatter", "all_gather"):
        for step in range(n - 1):
            edges = []
            for ranks, chunks in groups:
                for i in range(n):
                    c = (i - step) % n if phase == "reduce_scatter" else (i + 1 - step) % n
                    edges.append((ranks[i], ranks[(i + 1) % n], chunks[c]))
            rounds.append((phase, edges))
    return rounds


def schedule(organization, ranks_per_server):
    """[(stage, phase, [(sender, receiver, chunks)])] of one organization (module docstring)."""
    r, p = ranks_per_server, 2 * ranks_per_server
    if organization == "hierarchical":
        local = [(list(range(s * r, s * r + r)), [(2 * c, 2 * c + 1) for c in range(r)]) for s in (0, 1)]
        pairs = [([(c - 1) % r, r + (c - 1) % r], [(2 * c,), (2 * c + 1,)]) for c in range(r)]
        local_rounds = _ring_rounds(local)
        pair_rounds = _ring_rounds(pairs)
        return ([("local_reduce_scatter", ph, e) for ph, e in local_rounds[:r - 1]]
                + [("cross_server_allreduce", ph, e) for ph, e in pair_rounds]
                + [("local_all_gather", ph, e) for ph, e in local_rounds[r - 1:]])
    order = list(range(p)) if organization == "flat-contiguous" else \
        [rank for pair in zip(range(r), range(r, p)) for rank in pair]
    return [("flat", ph, e) for ph, e in _ring_rounds([(order, [(c,) for c in range(p)])])]


def gradient_rings(*, elements, width, organization, ranks_per_server, nics_per_server, nic_rate, local_rate,
                   egress_rate=None, startup_s=0, budget_s=None):
    """The `budget gradient-ring` record (module docstring)."""
    r, p = ranks_per_server, 2 * ranks_per_server
    if organization not in ORGANIZATIONS:
        raise UserError(f"unknown organization '{organization}' (choose from {', '.join(ORGANIZATIONS)})")
    if not 1 <= nics_per_server <= r:
        raise UserError(f"--nics-per-server must be from 1 to the {r} ranks per server")
    striped = nics_per_server < r
    if elements % (p * (nics_per_server if striped else 1)):
        raise UserError(f"{elements:,} elements do not split into {p} chunks"
                        + (f" of {nics_per_server} whole NIC stripes" if striped else ""))
    chunk = elements // p
    cut = nics_per_server * nic_rate if egress_rate is None else min(nics_per_server * nic_rate, egress_rate)
    rates = {}

    def use(name, rate):
        rates.setdefault(name, rate)
        return name

    def paths(s, t, nbytes):
        a, b = s // r, t // r
        if a == b:
            return [([use(f"rank{s}.tx", local_rate), use(f"local.{s}->{t}", local_rate),
                      use(f"rank{t}.rx", local_rate)], nbytes)]
        lanes = [(k, k) for k in range(nics_per_server)] if striped else [(s % r, t % r)]
        out = []
        for i, j in lanes:
            path = [use(f"rank{s}.tx", local_rate), use(f"server{a}.nic{i}.tx", nic_rate)]
            path += [use(f"server{a}.egress", egress_rate)] if egress_rate is not None else []
            path += [use(f"cut.{a}->{b}", cut), use("shared_cut.bidirectional", 2 * cut)]
            path += [use(f"server{b}.ingress", egress_rate)] if egress_rate is not None else []
            path += [use(f"server{b}.nic{j}.rx", nic_rate), use(f"rank{t}.rx", local_rate)]
            out.append((path, nbytes // len(lanes)))
        return out

    totals, rows, stages = Counter(), [], {}
    sends = remote = adds = 0
    nics_used, barrier = set(), Fraction(0)
    for index, (stage, phase, edges) in enumerate(schedule(organization, r)):
        counts = Counter()
        round_remote = 0
        for s, t, chunks in edges:
            nbytes = len(chunks) * chunk * width
            sends += nbytes
            far = s // r != t // r
            remote += nbytes if far else 0
            round_remote += far
            adds += len(chunks) * chunk if phase == "reduce_scatter" else 0
            for path, piece in paths(s, t, nbytes):
                for name in path:
                    counts[name] += piece
                nics_used |= {int(name.split(".nic")[1][:-3]) for name in path if name.endswith(".tx") and ".nic" in name}
        totals.update(counts)
        bound = max(Fraction(n, rates[k]) for k, n in counts.items())
        barrier += bound + startup_s
        rows.append({"round": index, "stage": stage, "phase": phase, "messages": len(edges),
                     "remote_messages": round_remote, "resource_lower_s_exact": str(bound),
                     "barrier_lower_s_exact": str(bound + startup_s)})
        st = stages.setdefault(stage, {"stage": stage, "rounds": 0, "send_bytes": 0, "remote_send_bytes": 0,
                                       "barrier_lower_s": Fraction(0)})
        st["rounds"] += 1
        st["send_bytes"] += sum(len(c) * chunk * width for _, _, c in edges)
        st["remote_send_bytes"] += sum(len(c) * chunk * width for s, t, c in edges if s // r != t // r)
        st["barrier_lower_s"] += bound + startup_s
    aggregate = max(Fraction(n, rates[k]) for k, n in totals.items())
    resource_sum = sum(Fraction(row["resource_lower_s_exact"]) for row in rows)
    out = {"elements": elements, "bytes_per_element": width, "bytes_per_rank": elements * width, "ranks": p,
           "chunk_elements": chunk, "chunk_bytes": chunk * width, "rounds": len(rows),
           "network_send_bytes": sends, "local_send_bytes": sends - remote, "remote_send_bytes": remote,
           "remote_send_bytes_per_direction": remote // 2, "reduction_adds": adds,
           "first_round_remote_messages": rows[0]["remote_messages"], "sending_nics_per_server": len(nics_used),
           "aggregate_lower_s": float(aggregate), "aggregate_lower_s_exact": str(aggregate),
           "largest_resources": [k for k, n in sorted(totals.items()) if Fraction(n, rates[k]) == aggregate],
           "sum_round_resource_lower_s": float(resource_sum),
           "serial_barrier_lower_s": float(barrier), "serial_barrier_lower_s_exact": str(barrier)}
    if budget_s is not None:
        out["budget_not_excluded"] = barrier <= budget_s
    out["stages"] = [dict(v, barrier_lower_s=str(v["barrier_lower_s"])) for v in stages.values()]
    out["resources"] = [{"resource": k, "bytes": n, "bytes_per_s": rates[k], "service_s_exact": str(Fraction(n, rates[k]))}
                        for k, n in sorted(totals.items())]
    out["round_bounds"] = rows
    return out


GRADIENT_RING_CONVENTIONS = [
    "One gradient tensor of G elements on every rank of two servers of R ranks, p = 2R chunks of G / p. Flat "
    "ring (contiguous 0..p-1 or interleaved 0, R, 1, R+1, ...): p - 1 reduce-scatter then p - 1 all-gather rounds; "
    "hierarchical: a reduce-scatter inside each server over chunk pairs, a two-rank all-reduce between the "
    "servers' corresponding owners, an all-gather inside each server.",
    "Paths: inside a server rank tx, the local link, rank rx at the local rate; between servers rank tx, the "
    "sender's NIC (one per rank: s mod R; fewer NICs: the message striped evenly over NIC pairs k -> k), an "
    "optional shared egress, the cut (the NICs' sum, capped by the egress), the bidirectional cut (twice), the "
    "optional ingress, the receiver's NIC and rank rx.",
    "A round's bound: max over its resources of bytes / rate, plus the declared startup; the serial bound sums "
    "the rounds; the aggregate bound is the max over resources of all bytes / rate. Lower bounds of declared "
    "rates, not a measured or scheduled time; no reduction compute, propagation or interference.",
]

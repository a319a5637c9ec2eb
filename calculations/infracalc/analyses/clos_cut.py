"""A folded Clos of k-port switches (the book's chapter-7 network): the leaf's ports, the switches and
endpoints of two and three tiers, the bisection, a partition's cut and the egress of supernodes.
Exact rationals.

Oversubscription r applies at the leaf only: d = k r / (1 + r) ports down, u = k / (1 + r) up (both whole);
the tiers above are non-blocking to the leaf uplinks (Al-Fares et al., "A scalable, commodity data center
network architecture", 2008: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores, k^3/4 hosts
when r = 1):

    two tiers:    k leaves, u spines,                               endpoints k d,        leaf uplinks k u
    three tiers:  k^2/2 edge, k u aggregation, u k/2 core, k pods,  endpoints k^2/2 d,    uplinks k^2/2 u
    bisection = uplinks / 2 x link,   non-blocking = endpoints / 2 x link,   fraction = their ratio
    partition of E endpoints: ceil(E / d) whole leaves, cut = their uplinks (three tiers: the smaller of
    that and ceil(E / (k/2 d)) pods x u k/2 pod-to-core links) x link, per endpoint cut / E
    supernode of s cards with a NIC of B each: nominal egress s B, behind the leaf s B / r, per card / s;
    a declared remote byte count over either gives its time.

Worked case: k = 4, r = 1: d = u = 2; two tiers 4 leaves + 2 spines, 8 endpoints, 8 uplinks, bisection
4 links; three tiers 8 edge + 8 aggregation + 4 core = 20 switches, 16 endpoints (k^3/4), 4 per pod; a
partition of 3 endpoints takes 2 leaves, 4 uplinks in its cut, 4/3 links per endpoint.
"""

from fractions import Fraction

from ..splits import ceil_div


def leaf_ports(radix, oversubscription):
    """(down, up): k r / (1 + r) and k / (1 + r); None when either is not a whole port count >= 1."""
    down, up = Fraction(radix) * oversubscription / (1 + oversubscription), Fraction(radix) / (1 + oversubscription)
    if down.denominator != 1 or up.denominator != 1 or down < 1 or up < 1:
        return None
    return int(down), int(up)


def tier(*, radix, down, up, tiers, link):
    if tiers == 2:   # leaves (the edge) and spines
        leaves, pods, above = radix, None, {"spine": up, "aggregation": None, "core": None}
    else:            # k pods of k/2 edge switches, the aggregation and the core
        leaves, pods, above = radix * radix // 2, radix, {"spine": None, "aggregation": radix * up, "core": up * radix // 2}
    endpoints, uplinks = leaves * down, leaves * up
    bisection, full = Fraction(uplinks, 2) * link, Fraction(endpoints, 2) * link
    return {"tiers": tiers, "leaf_switches": leaves, "pods": pods, **{f"{k}_switches": v for k, v in above.items()},
            "total_switches": leaves + sum(v for v in above.values() if v), "endpoints": endpoints,
            "endpoints_per_pod": radix // 2 * down if pods else None, "leaf_uplinks": uplinks,
            "bisection_bytes_per_s": str(bisection), "nonblocking_bisection_bytes_per_s": str(full),
            "bisection_fraction": str(bisection / full)}


def partition(*, radix, down, up, tiers, link, endpoints):
    leaves = ceil_div(endpoints, down)
    leaf_cut = leaves * up
    if tiers == 3:
        pods = ceil_div(endpoints, radix // 2 * down)
        pod_cut = pods * up * (radix // 2)
        links = min(leaf_cut, pod_cut)
    else:
        pods, pod_cut, links = None, None, leaf_cut
    return {"tiers": tiers, "endpoints": endpoints, "leaves_used": leaves, "pods_used": pods,
            "leaf_uplinks_in_cut": leaf_cut, "pod_core_links_in_cut": pod_cut, "cut_links": links,
            "cut_bytes_per_s": str(links * link), "cut_bytes_per_s_per_endpoint": str(Fraction(links * link, endpoints))}


def supernode_egress(*, size, gpus, nic, oversubscription, remote_bytes):
    nominal = size * nic
    egress = nominal / oversubscription
    row = {"supernode_gpus": size, "supernodes": gpus // size, "nominal_egress_bytes_per_s": str(nominal),
           "oversubscribed_egress_bytes_per_s": str(egress), "oversubscribed_egress_float": float(egress),
           "egress_per_gpu_bytes_per_s": str(egress / size), "remote_bytes": remote_bytes,
           "remote_s_at_nominal": None, "remote_s_at_oversubscribed": None}
    if remote_bytes is not None:
        row["remote_s_at_nominal"] = str(Fraction(remote_bytes) / nominal)
        row["remote_s_at_oversubscribed"] = str(Fraction(remote_bytes) / egress)
    return row


def clos_cut(*, radix, oversubscription, tiers, link, partition_endpoints, gpus, nic, supernodes):
    """supernodes: [(size, remote bytes or None)]; the caller checks leaf_ports and divisibility."""
    down, up = leaf_ports(radix, oversubscription)
    rows = [tier(radix=radix, down=down, up=up, tiers=t, link=link) for t in tiers]
    cuts = [partition(radix=radix, down=down, up=up, tiers=r["tiers"], link=link, endpoints=partition_endpoints)
            for r in rows if partition_endpoints <= r["endpoints"]]
    return {"radix": radix, "oversubscription": str(oversubscription), "leaf_downlinks": down, "leaf_uplinks": up,
            "link_bytes_per_s": link, "tier_rows": rows, "partition_cuts": cuts,
            "supernode_egress": [supernode_egress(size=s, gpus=gpus, nic=nic, oversubscription=oversubscription,
                                                  remote_bytes=b) for s, b in supernodes]}


CLOS_CONVENTIONS = [
    "Folded Clos of k-port switches: the leaf has d = k r / (1 + r) ports down and u = k / (1 + r) up for a "
    "declared oversubscription r (whole ports); higher tiers are non-blocking to the leaf uplinks. Two tiers: "
    "leaf-spine; three: the fat-tree pods of Al-Fares et al. (k/2 edge switches per pod).",
    "Bisection = half the leaf uplinks x the link rate (top-tier links; no routing, ECMP collision or queue). A "
    "partition's cut counts whole leaves (or pods), rounded up; per endpoint = cut / endpoints.",
    "Supernode egress = cards x NIC rate / r; remote bytes are declared (the book takes them from its "
    "supernode-scaling results), their time = bytes / egress, exact.",
]

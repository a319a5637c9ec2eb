"""Agent environments: clone placement, snapshot and prewarm budgets from declared sizes and times
(the declared part of the book's chapter-11 environment lifecycle).

N environments clone a template of T bytes of which an environment touches t (dirty d plus hot
read-only r, d + r <= t <= T); each private copy also carries an overhead o. Four placements keep
privately: the full copy T, the touched pages t, the dirty pages d (read-only shared), or d + r:

    per environment p = data + o,   total N p,   with the shared template T + N p,
    environments a local budget M holds: floor(M / p),   install bytes N data,
    serial transfer lower bound N data / B at a declared effective byte service B.

Creation paths fetch then install (cold template T then t; warm 0 then t; pause-resume and
snapshot clone t then t; clean rebuild T then T): (fetch + install) / B seconds of byte service,
not a startup time. Snapshots of N branches: T + N delta against N T, one delta upload delta / B.

Prewarm: a predicted environment starts preparing (p_s seconds) a lead l before the call; with
hit probability h it is the right one and lives until max(p_s, l) after its launch; a wrong one
is cancelled a timeout c after the call and the demanded one is prepared then:

    avoided wait h min(p_s, l),   expected wait p_s - h min(p_s, l),
    allocated h max(p_s, l) + (1 - h)(l + c + p_s),   unused h max(l - p_s, 0) + (1 - h)(l + c),

and x the environment's W bytes for byte-seconds (the extra over demand preparation (allocated - p_s) W).
Exact fractions; the declared figures are teaching inputs, nothing is measured.
"""

from fractions import Fraction

PLACEMENTS = ("full_copy", "install_touched", "share_readonly_copy_dirty", "localize_hot_readonly")


def clone_placements(*, environments, template, touched, dirty, hot_readonly, overhead, local_budget, bytes_per_s):
    data = {"full_copy": template, "install_touched": touched, "share_readonly_copy_dirty": dirty,
            "localize_hot_readonly": dirty + hot_readonly}
    rows = []
    for name in PLACEMENTS:
        private = data[name] + overhead
        rows.append({"placement": name, "per_environment_bytes": private, "total_local_bytes": environments * private,
                     "with_shared_template_bytes": template + environments * private,
                     "environments_in_budget": local_budget // private if private else None,
                     "install_bytes": environments * data[name],
                     "serial_transfer_s_exact": str(Fraction(environments * data[name], bytes_per_s))})
    return rows


def creation_paths(template, touched, bytes_per_s):
    return [{"path": name, "fetch_bytes": fetch, "install_bytes": install,
             "byte_service_s_exact": str(Fraction(fetch + install, bytes_per_s))}
            for name, fetch, install in (("cold_template", template, touched), ("warm_template", 0, touched),
                                         ("pause_resume", touched, touched), ("snapshot_clone", touched, touched),
                                         ("clean_rebuild", template, template))]


def prewarm(*, preparation_s, lead_s, hit, timeout_s, environment_bytes):
    saved = hit * min(preparation_s, lead_s)
    allocated = hit * max(preparation_s, lead_s) + (1 - hit) * (lead_s + timeout_s + preparation_s)
    unused = hit * max(lead_s - preparation_s, 0) + (1 - hit) * (lead_s + timeout_s)
    return {"expected_wait_s_exact": str(preparation_s - saved), "expected_avoided_wait_s_exact": str(saved),
            "expected_allocated_s_exact": str(allocated), "expected_unused_s_exact": str(unused),
            "expected_byte_seconds_exact": str(allocated * environment_bytes),
            "extra_byte_seconds_vs_demand_exact": str((allocated - preparation_s) * environment_bytes),
            "unused_byte_seconds_exact": str(unused * environment_bytes)}


def environment_budget(*, environments, template, touched, dirty, hot_readonly, overhead, local_budget, delta,
                       bytes_per_s, preparation_s, lead_s, hit, timeout_s, environment_bytes):
    return {
        "placements": clone_placements(environments=environments, template=template, touched=touched, dirty=dirty,
                                       hot_readonly=hot_readonly, overhead=overhead, local_budget=local_budget,
                                       bytes_per_s=bytes_per_s),
        "creation_paths": creation_paths(template, touched, bytes_per_s),
        "snapshot": {"shared_base_bytes": template, "branch_delta_bytes": delta, "branches": environments,
                     "base_plus_deltas_bytes": template + environments * delta,
                     "independent_snapshots_bytes": environments * template,
                     "one_delta_upload_s_exact": str(Fraction(delta, bytes_per_s))},
        "prewarm": prewarm(preparation_s=preparation_s, lead_s=lead_s, hit=hit, timeout_s=timeout_s,
                           environment_bytes=environment_bytes),
    }


ENVIRONMENT_CONVENTIONS = [
    "Clone placements keep privately the full template, the touched pages, the dirty pages (read-only shared) or "
    "dirty + hot read-only pages, each + a per-environment overhead; totals x environments, with the shared "
    "template beside; floor(local budget / per environment) fit; install bytes / a declared effective byte "
    "service is a serial lower bound. Creation paths (fetch + install) / service: byte service, not startup time.",
    "Prewarm starts preparing a predicted environment a lead before the call: a hit lives max(preparation, lead), "
    "a miss is cancelled a timeout after the call and the demanded one prepared; expectations over the declared "
    "hit probability, byte-seconds at the environment's bytes. Declared teaching inputs; exact fractions.",
]

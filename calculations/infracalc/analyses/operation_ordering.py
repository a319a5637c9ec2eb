"""Publication dependencies of remote operations and a stale speculative-read witness (the book's
chapter-7 operation-ordering example). Declared times in integer ns.

Four operations, each on one serial resource: write the data (W), recover and make it visible (R,
after W), publish the notification (N, after R), all three on the publication resource; and an
independent transfer (I) with no data dependency, on its own resource or (shared) on the publication
one. Two schedules by the list scheduler of `task_graph` (earliest start first, ties in this order):

    strict                  I also waits for N:   all done = W + R + N + I,
    necessary dependencies  I free:               all done = max(W + R + N, I) on its own resource.

Witness (two 4-byte scalars D and F, both 0; D = 1 becomes visible at d, F = 1 at f >= d): a reader
samples D speculatively at s, reads F = 1 at g >= f (and g >= s), delivers at t >= g. The sample is
stale iff s < d (a write at the same instant counts as before the sample): delivering in response
order alone hands out D = 0 though F = 1 was seen. With conflict detection it re-reads after g,
delivering at max(t, g + L) (L the re-read latency) and reading 4 more bytes; reading D only after F
(source order) delivers at g + L.
"""

from .task_graph import list_schedule, task


def ordering_schedules(*, write_ns, recovery_ns, notification_ns, independent_ns, shared_resource=False):
    tasks = [task("write_data", write_ns, "publication"),
             task("recover_and_make_visible", recovery_ns, "publication", ["write_data"]),
             task("publish_notification", notification_ns, "publication", ["recover_and_make_visible"]),
             task("independent_transfer", independent_ns, "publication" if shared_resource else "independent")]
    strict = tasks[:3] + [dict(tasks[3], deps=("publish_notification",))]

    def run(graph):
        s = list_schedule(graph)
        return s, {r["task"]: r["end_ns"] for r in s["schedule"]}

    (before, b_end), (after, a_end) = run(strict), run(tasks)
    return {"strict_all_done_ns": before["finish_ns"], "dependency_all_done_ns": after["finish_ns"],
            "strict_independent_done_ns": b_end["independent_transfer"],
            "dependency_independent_done_ns": a_end["independent_transfer"],
            "notification_visible_ns": a_end["publish_notification"],
            "all_done_saved_ns": before["finish_ns"] - after["finish_ns"],
            "strict": before["schedule"], "necessary_dependencies": after["schedule"]}


def stale_read(*, sample_ns, data_visible_ns, flag_visible_ns, flag_read_ns, response_ns, reread_ns):
    stale = sample_ns < data_visible_ns
    return {"speculative_sample": 0 if stale else 1, "response_order_only_valid": not stale,
            "reread_required": stale,
            "validated_delivery_ns": max(response_ns, flag_read_ns + reread_ns) if stale else response_ns,
            "source_ordered_delivery_ns": flag_read_ns + reread_ns,
            "response_order_read_bytes": 8, "validated_read_bytes": 12 if stale else 8}


ORDERING_CONVENTIONS = [
    "Declared durations on abstract serial resources (write, recovery and notification on 'publication'; the "
    "independent transfer on its own, or shared): strict = the independent transfer also waits for the "
    "notification; necessary dependencies keep only the publication chain. List scheduling as in `budget dag`.",
    "Stale-read witness: scalars D and F start at 0; D = 1 is visible before F = 1; a speculative sample of D "
    "earlier than D's visibility is stale even when the response is delivered in F-then-D order. The repair "
    "assumes complete conflict detection and re-reads after F (4 more bytes); no protocol, NIC or memory model "
    "is claimed to implement either.",
]

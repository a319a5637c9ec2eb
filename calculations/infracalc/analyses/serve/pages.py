"""A paged KV cache under declared branch events (the book's chapter-8 KV pages group).

A page holds P tokens of one request's cache across every layer (P x the model's KV bytes per
token, c). Events, in order, on an optional capacity of floor(capacity / (P c)) pages:

- create ID N: a new request of N tokens on ceil(N / P) new pages;
- fork PARENT ID: ID shares every page of PARENT (each page's reference count + 1; no new page);
- append ID N: N more tokens at the tail. A tail page that is not full and is shared is copied
  first (one new page; its u valid tokens' u c bytes are the copied bytes), then the tail is
  filled to P and ceil(rest / P) new pages follow;
- cancel ID: the request's references go; pages whose count reaches 0 are freed.

An event whose new pages exceed the free pages is rejected whole (nothing changes). New pages
take the lowest free ids. After each event, with L_r a request's length and u_p a page's valid
tokens: logical bytes = c sum_r L_r, unique live bytes = c sum_p u_p, allocated = pages x P c,
unused = allocated - unique live, private paged (no sharing) = P c sum_r ceil(L_r / P), fixed
reservation = active requests x R c for a declared reservation of R tokens.
"""

from ...splits import ceil_div
from ...summation import plain_sum

PAGES_CONVENTION = (
    "KV pages (analyses/serve/pages.py): a page holds P tokens of one request across all layers (P c bytes); "
    "fork shares every page, append copies a shared tail page that is not full (its valid tokens) before "
    "writing, cancel frees pages no request references; an event needing more pages than are free is "
    "rejected whole. Logical = c sum L_r, unique live = c sum u_p, allocated = pages x P c, unused = "
    "allocated - live, private paged = P c sum ceil(L_r / P), fixed reservation = requests x R c.")


def replay(events, *, page_tokens, token_bytes, reservation_tokens, capacity_bytes=None):
    """(per-event rows, summary) of the module docstring. events: ("create", id, n),
    ("fork", parent, id), ("append", id, n), ("cancel", id)."""
    page_bytes = page_tokens * token_bytes
    cap = None if capacity_bytes is None else capacity_bytes // page_bytes
    tables, used, refs = {}, {}, {}   # request -> page ids; page -> valid tokens, references
    rows, copied_total, peak = [], 0, 0

    def new_page(tokens):
        pid = next(i for i in range(len(used) + 1) if i not in used)
        used[pid], refs[pid] = tokens, 1
        return pid

    for index, event in enumerate(events):
        op, reason, need, copied, freed = event[0], None, 0, 0, []
        if op == "create":
            _, rid, n = event
            need = ceil_div(n, page_tokens)
            reason = "request_exists" if rid in tables else None
        elif op == "fork":
            _, parent, rid = event
            reason = "unknown_parent" if parent not in tables else "request_exists" if rid in tables else None
        elif op == "append":
            _, rid, n = event
            if rid not in tables:
                reason = "unknown_request"
            else:
                tail = tables[rid][-1]
                room = page_tokens - used[tail]
                cow = room > 0 and refs[tail] > 1
                need = int(cow) + ceil_div(max(0, n - room), page_tokens)
        else:
            _, rid = event
            reason = "unknown_request" if rid not in tables else None
        if reason is None and cap is not None and need > cap - len(used):
            reason = "insufficient_page_capacity"
        if reason is None:
            if op == "create":
                tables[rid] = [new_page(min(page_tokens, n - k)) for k in range(0, n, page_tokens)]
            elif op == "fork":
                tables[rid] = list(tables[parent])
                for pid in tables[rid]:
                    refs[pid] += 1
            elif op == "append":
                table, tail = tables[rid], tables[rid][-1]
                if cow:
                    refs[tail] -= 1
                    copied = used[tail] * token_bytes
                    table[-1] = tail = new_page(used[tail])
                fill = min(room, n)
                used[tail] += fill
                table += [new_page(min(page_tokens, n - k)) for k in range(fill, n, page_tokens)]
            else:
                for pid in tables.pop(rid):
                    refs[pid] -= 1
                    if not refs[pid]:
                        freed.append(pid)
                        del refs[pid], used[pid]
        copied_total += copied
        lengths = {r: plain_sum(used[p] for p in t) for r, t in tables.items()}
        live = plain_sum(used.values()) * token_bytes
        allocated = len(used) * page_bytes
        peak = max(peak, allocated)
        rows.append({
            "event": index, "operation": list(event), "accepted": reason is None, "additional_pages_required": need,
            "rejection_reason": reason, "request_lengths": lengths, "page_tables": {r: list(t) for r, t in tables.items()},
            "pages": [{"id": p, "used_tokens": used[p], "references": refs[p]} for p in sorted(used)],
            "active_requests": len(tables), "logical_request_bytes": plain_sum(lengths.values()) * token_bytes,
            "unique_live_bytes": live, "allocated_page_bytes": allocated, "unused_page_bytes": allocated - live,
            "private_paged_bytes": plain_sum(ceil_div(n, page_tokens) for n in lengths.values()) * page_bytes,
            "fixed_reservation_bytes": len(tables) * reservation_tokens * token_bytes,
            "copied_valid_bytes": copied, "freed_page_ids": sorted(freed)})
    last = rows[-1] if rows else {}
    summary = {"kv_bytes_per_token": token_bytes, "page_bytes": page_bytes, "capacity_pages": cap,
               "unusable_capacity_bytes": None if cap is None else capacity_bytes - cap * page_bytes,
               "rejected_events": plain_sum(not r["accepted"] for r in rows), "peak_allocated_page_bytes": peak,
               **{f"final_{k}": last.get(k, 0) for k in ("allocated_page_bytes", "logical_request_bytes",
                                                          "unique_live_bytes", "unused_page_bytes",
                                                          "private_paged_bytes", "fixed_reservation_bytes")},
               "total_copied_valid_bytes": copied_total}
    return rows, summary

"""`serve --page-event`: a paged KV cache under branch events, derived by hand on pages of 4
tokens of 10 B each (page 40 B)."""

import json
import unittest

from support import run_cli
from infracalc.analyses.serve.pages import replay


def run(events, cap=None):
    return replay(events, page_tokens=4, token_bytes=10, reservation_tokens=8, capacity_bytes=cap)


class ByHand(unittest.TestCase):
    def test_fork_copy_on_write_and_cancel(self):
        # create a:5 -> pages 0 (4 tokens), 1 (1); fork b shares both (refs 2);
        # append a:1 -> page 1 is shared and not full: copied to page 2 (1 valid token, 10 B), then 2 tokens;
        # append b:4 -> page 1 now only b's: filled to 4 (3 tokens), 1 more on new page 3; cancel a frees page 2
        rows, s = run([("create", "a", 5), ("fork", "a", "b"), ("append", "a", 1), ("append", "b", 4), ("cancel", "a")])
        self.assertEqual([r["additional_pages_required"] for r in rows], [2, 0, 1, 1, 0])
        self.assertEqual(rows[2]["page_tables"], {"a": [0, 2], "b": [0, 1]})
        self.assertEqual(rows[2]["copied_valid_bytes"], 10)
        self.assertEqual(rows[3]["page_tables"]["b"], [0, 1, 3])
        self.assertEqual(rows[4]["freed_page_ids"], [2])
        # after the fork: logical 2 x 5 x 10 = 100, unique live 50, allocated 80, unused 30, private 2 x 2 x 40
        self.assertEqual([rows[1][k] for k in ("logical_request_bytes", "unique_live_bytes", "allocated_page_bytes",
                                               "unused_page_bytes", "private_paged_bytes", "fixed_reservation_bytes")],
                         [100, 50, 80, 30, 160, 160])
        # final: b has 9 tokens on pages 0, 1, 3 (4 + 4 + 1): 90 live in 120 allocated
        self.assertEqual((s["final_unique_live_bytes"], s["final_allocated_page_bytes"], s["final_unused_page_bytes"]),
                         (90, 120, 30))
        self.assertEqual((s["total_copied_valid_bytes"], s["peak_allocated_page_bytes"]), (10, 160))

    def test_a_full_shared_tail_is_not_copied(self):
        rows, _ = run([("create", "a", 4), ("fork", "a", "b"), ("append", "a", 1)])
        self.assertEqual((rows[2]["copied_valid_bytes"], rows[2]["page_tables"]["a"]), (0, [0, 1]))

    def test_capacity_rejects_whole_events(self):
        # 90 B hold 2 pages (10 B unusable): the copy-on-write append needs a third and is rejected unchanged
        rows, s = run([("create", "a", 5), ("fork", "a", "b"), ("append", "a", 1)], cap=90)
        self.assertEqual((rows[2]["accepted"], rows[2]["rejection_reason"]), (False, "insufficient_page_capacity"))
        self.assertEqual(rows[2]["request_lengths"], {"a": 5, "b": 5})
        self.assertEqual((s["capacity_pages"], s["unusable_capacity_bytes"], s["rejected_events"]), (2, 10, 1))

    def test_invariants(self):
        rows, _ = run([("create", "a", 7), ("fork", "a", "b"), ("fork", "b", "c"), ("append", "c", 9),
                       ("append", "a", 2), ("cancel", "b"), ("cancel", "a"), ("cancel", "c")])
        for r in rows:
            self.assertLessEqual(r["unique_live_bytes"], r["logical_request_bytes"])
            self.assertEqual(r["unused_page_bytes"], r["allocated_page_bytes"] - r["unique_live_bytes"])
        self.assertEqual(rows[-1]["allocated_page_bytes"], 0)


class Command(unittest.TestCase):
    def test_book_branches(self):
        events = ["create:a:17", "fork:a:b", "fork:a:c", "append:a:1", "append:b:16", "cancel:c"]
        argv = ["serve", "--model", "qwen3-8b", "--reservation-tokens", "64", "--format", "json"]
        for e in events:
            argv += ["--page-event", e]
        status, out, _ = run_cli(*argv)
        self.assertEqual(status, 0)
        k = json.loads(out)["kv_pages"]
        self.assertEqual(k["page_bytes"], 16 * 147456)
        self.assertEqual((k["final_allocated_page_bytes"], k["final_unused_page_bytes"], k["total_copied_valid_bytes"]),
                         (4 * 2359296, 4276224, 2 * 147456))

    def test_refusals(self):
        for e in ("create:a", "fork:a", "append:a:0", "drop:a"):
            status, _, _ = run_cli("serve", "--model", "qwen3-8b", "--page-event", e)
            self.assertEqual(status, 2, e)


if __name__ == "__main__":
    unittest.main()

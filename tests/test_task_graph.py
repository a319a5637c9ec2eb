"""`budget dag` and `budget microbatch`: list scheduling of declared task graphs; every expected
value derived by hand in its comment."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import budget_result, run_cli  # noqa: E402  (support puts calculations/ on sys.path)

from infracalc.analyses.task_graph import list_schedule, microbatch_overlap, request_dag, task  # noqa: E402

BOOK = ["--task", "prepare:10us:host", "--task", "hotspot:60us:compute:prepare",
        "--task", "parallel:40us:transfer:prepare", "--task", "finish:10us:host:hotspot+parallel"]


budget = budget_result


def book_graph():
    return [task("prepare", 10, "host"), task("hotspot", 60, "compute", ["prepare"]),
            task("parallel", 40, "transfer", ["prepare"]), task("finish", 10, "host", ["hotspot", "parallel"])]


class ListSchedule(unittest.TestCase):
    def test_book_graph(self):
        # prepare 0-10; hotspot and parallel both start at 10 (hotspot first: input order), end 70 and 50;
        # finish waits for both: 70-80, its critical predecessor hotspot; serial work 10 + 60 + 40 + 10 = 120.
        r = list_schedule(book_graph())
        self.assertEqual((r["finish_ns"], r["critical_path"], r["serial_work_ns"]),
                         (80, ["prepare", "hotspot", "finish"], 120))

    def test_a_shared_resource_serializes_and_joins_the_path(self):
        # hotspot 15 and parallel moved onto 'compute': hotspot 10-25 (first on the tie), parallel 25-65 waits on
        # the resource, finish 65-75: path prepare, hotspot, parallel, finish.
        r = request_dag(book_graph(), durations={"hotspot": 15}, resources={"parallel": "compute"})
        self.assertEqual((r["changed_finish_ns"], r["changed_critical_path"]),
                         (75, "prepare -> hotspot -> parallel -> finish"))
        self.assertEqual(r["request_speedup_exact"], "16/15")

    def test_the_path_moves_when_the_hotspot_shrinks(self):
        # hotspot 60 -> 15: parallel (10-50) now ends last before finish: 50-60; frozen old path 10 + 15 + 10 = 35
        r = budget("dag", *BOOK, "--change", "hotspot=15us")
        self.assertEqual((r["changed_finish_ns"], r["changed_critical_path"]), (60000, "prepare -> parallel -> finish"))
        self.assertEqual((r["frozen_old_path_ns"], r["serial_work_after_ns"]), (35000, 75000))

    def test_shrinking_an_off_path_task_gains_nothing(self):
        # parallel 40 -> 10 is off the critical path: still 80; serial work 90 (Amdahl's view would promise 4/3)
        r = budget("dag", *BOOK, "--change", "parallel=10us")
        self.assertEqual((r["changed_finish_ns"], r["serial_work_after_ns"], r["frozen_old_path_ns"]), (80000, 90000, 80000))

    def test_ready_tasks_start_earliest_first_not_in_input_order(self):
        # b (after a, 0-5) starts at 5; c (no deps) is ready at 0 on the same resource and goes first: c 0-3 on r,
        # then b 5-7 (its dependency a ends at 5, later than c); a is unconstrained.
        r = list_schedule([task("a", 5), task("b", 2, "r", ["a"]), task("c", 3, "r")])
        self.assertEqual([(x["task"], x["start_ns"], x["end_ns"]) for x in r["schedule"]],
                         [("a", 0, 5), ("c", 0, 3), ("b", 5, 7)])

    def test_the_path_ends_at_the_task_ending_last(self):
        # a and b start at 0 (a first); b, scheduled last, ends at 5, a at 10: the path is [a], the finish 10
        r = list_schedule([task("a", 10), task("b", 5)])
        self.assertEqual((r["finish_ns"], r["critical_path"]), (10, ["a"]))

    def test_dependency_on_a_later_task_is_an_error(self):
        status, _, err = run_cli("budget", "dag", "--task", "a:1us::b", "--task", "b:1us")
        self.assertEqual(status, 2)
        self.assertIn("not a task given before it", err)


class MicrobatchOverlap(unittest.TestCase):
    def test_book_split(self):
        # full 400 + 800 = 1,200 us; serial 200 + 480 + 200 + 480 = 1,360; ideal: C0 200-680, N1 200-400, C1 680-1,160;
        # paired: N0 200, joint 600 -> 800, C1 -> 1,280; bound 1,200 - 200 - 480 = 520; compute +160.
        r = microbatch_overlap(full=(400, 800), split_n=(200, 200), split_c=(480, 480), joint_window=600)
        self.assertEqual([r[k] for k in ("full_finish_ns", "split_serial_finish_ns", "split_ideal_finish_ns",
                                         "split_paired_finish_ns", "joint_window_strict_bound_ns",
                                         "split_compute_increase_ns")], [1200, 1360, 1160, 1280, 520, 160])
        self.assertFalse(r["paired_beats_full"])

    def test_ideal_last_compute_waits_for_its_own_load(self):
        # N1 = 600 ends at 800, after C0 (200-500): C1 runs 800-1,100, not 500-800
        r = microbatch_overlap(full=(400, 800), split_n=(200, 600), split_c=(300, 300), joint_window=600)
        self.assertEqual(r["split_ideal_finish_ns"], 1100)

    def test_window_at_the_bound_ties(self):
        # J = 520: 200 + 520 + 480 = 1,200, not strictly faster; J = 500: 1,180, faster
        self.assertFalse(microbatch_overlap(full=(400, 800), split_n=(200, 200), split_c=(480, 480),
                                            joint_window=520)["paired_beats_full"])
        self.assertTrue(microbatch_overlap(full=(400, 800), split_n=(200, 200), split_c=(480, 480),
                                           joint_window=500)["paired_beats_full"])

    def test_uneven_split_and_ffn_work(self):
        # Qwen3-8B FFN 3 x 4,096 x 12,288 = 150,994,944 parameters, 301,989,888 B; 257 rows = 128 + 129:
        # 2 x 128 x P = 38,654,705,664 and 2 x 129 x P = 38,956,695,552 FLOPs. Serial 200 + 480 + 210 + 490 = 1,380;
        # ideal: N1 200-410 ends before C0 (680): C1 680-1,170; paired 200 + 600 + 490 = 1,290; bound 1,200 - 690 = 510.
        r = budget("microbatch", "--model", "qwen3-8b", "--tokens", "257", "--first-tokens", "128",
                   "--full", "400us,800us", "--split-n", "200us,210us", "--split-c", "480us,490us",
                   "--joint-window", "600us")
        self.assertEqual((r["ffn_parameters"], r["weight_bytes"]), (150994944, 301989888))
        self.assertEqual(r["micro_batch_matrix_flops"], [38654705664, 38956695552])
        self.assertEqual([r[k] for k in ("split_serial_finish_ns", "split_ideal_finish_ns", "split_paired_finish_ns",
                                         "joint_window_strict_bound_ns")], [1380000, 1170000, 1290000, 510000])


def rescanned_schedule(tasks):
    """The rule as the module docstring states it, by rescanning every ready task at each step
    (O(n^2)): the earliest start next, ties in input order."""
    pending, done, last_on = list(tasks), {}, {}
    while pending:
        best = None
        for i, t in enumerate(pending):
            if all(d in done for d in t["deps"]):
                before = list(t["deps"]) + ([last_on[t["resource"]]] if t["resource"] in last_on else [])
                critical = max(before, key=lambda d: done[d]["end_ns"]) if before else None
                start = done[critical]["end_ns"] if critical else 0
                if best is None or start < best[0]:
                    best = (start, i, critical)
        start, i, critical = best
        t = pending.pop(i)
        done[t["task"]] = {"task": t["task"], "resource": t["resource"], "start_ns": start,
                           "end_ns": start + t["duration_ns"], "critical_predecessor": critical}
        if t["resource"] is not None:
            last_on[t["resource"]] = t["task"]
    return list(done.values())


class HeapEqualsRescan(unittest.TestCase):
    def test_random_graphs_schedule_alike(self):
        # random graphs with shared resources, equal durations (ties) and fan-in: the heap's
        # schedule (order, starts, critical predecessors) equals the rescan's
        import random
        rng = random.Random(5)
        for _ in range(300):
            n = rng.randint(1, 25)
            tasks = []
            for i in range(n):
                deps = rng.sample([f"t{j}" for j in range(i)], rng.randint(0, min(i, 3)))
                tasks.append(task(f"t{i}", rng.choice([0, 1, 2, 5]), rng.choice([None, "a", "b", "c"]), deps))
            self.assertEqual(list_schedule(tasks)["schedule"], rescanned_schedule(tasks))

    def test_a_cycle_is_an_error_not_a_short_schedule(self):
        with self.assertRaises(ValueError):
            list_schedule([task("a", 1, None, ["b"]), task("b", 1, None, ["a"])])


if __name__ == "__main__":
    unittest.main()

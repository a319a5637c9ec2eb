"""Per-test timings of the unit-test suite: the slowest tests, classes and modules.

    python3 scripts/test_times.py                 # the whole suite (tests/), top 25 of each
    python3 scripts/test_times.py test_fuzz test_prediction.Fit --top 10
    python3 scripts/test_times.py --csv times.csv # every test's figure, for diffing two runs

Runs the same tests as `python3 -m unittest discover -s tests` (or the named modules,
classes or tests), through a TextTestResult subclass that records each test's time from
startTest to stopTest: wall time, or with --cpu the CPU time of this process plus that
of the child processes the test waited for (user + system; the figure to compare on a
busy machine, where wall time also counts waiting for a core). Class and module fixtures (setUpClass, setUpModule) run
between tests, outside any test's span: the time between one test's end and the next
test's start is charged to the next test's class as its "fixture" share, so a class's
figure is its tests plus its fixtures. Import time of the test modules (discovery) is
printed apart. The exit status is 1 when a test fails or errs, as unittest's own.
"""

import argparse
import collections
import os
import sys
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests")


class TimingResult(unittest.TextTestResult):
    """A TextTestResult that records (test id, seconds) per test and the fixture gaps."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.times = []                                  # (test id, seconds) in run order
        self.fixtures = collections.Counter()            # class id -> seconds between tests
        self._started = None
        self._last_stop = None

    clock = staticmethod(time.perf_counter)

    def startTest(self, test):
        now = self.clock()
        if self._last_stop is not None:
            self.fixtures[class_id(test.id())] += now - self._last_stop
        self._started = now
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        now = self.clock()
        self.times.append((test.id(), now - self._started))
        self._last_stop = now


def cpu_clock():
    """CPU seconds of this process and of its waited-for children (user + system)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class CpuTimingResult(TimingResult):
    clock = staticmethod(cpu_clock)


def class_id(test_id):
    """'module.Class.test_name' -> 'module.Class'."""
    return test_id.rsplit(".", 1)[0]


def module_id(test_id):
    return test_id.split(".", 1)[0]


def table(title, rows, top):
    print(f"\n{title}")
    for name, seconds in sorted(rows.items(), key=lambda r: -r[1])[:top]:
        print(f"{seconds:8.3f} s  {name}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="modules, classes or tests (default: discover tests/)")
    parser.add_argument("--top", type=int, default=25, help="rows per table (default 25)")
    parser.add_argument("--csv", metavar="FILE", help="write every test's seconds to FILE")
    parser.add_argument("--cpu", action="store_true",
                        help="CPU time (this process + waited-for children) instead of wall time")
    parser.add_argument("-v", "--verbose", action="store_true", help="unittest's verbose listing")
    args = parser.parse_args(argv)

    if TESTS not in sys.path:
        sys.path.insert(0, TESTS)
    os.chdir(ROOT)
    loader = unittest.TestLoader()
    t0 = time.perf_counter()
    if args.names:
        suite = loader.loadTestsFromNames(args.names)
    else:
        suite = loader.discover(TESTS, top_level_dir=TESTS)
    imported = time.perf_counter() - t0

    resultclass = CpuTimingResult if args.cpu else TimingResult
    runner = unittest.TextTestRunner(resultclass=resultclass, verbosity=2 if args.verbose else 1)
    t0 = time.perf_counter()
    result = runner.run(suite)
    total = time.perf_counter() - t0

    per_class, per_module = collections.Counter(), collections.Counter()
    for test_id, seconds in result.times:
        per_class[class_id(test_id)] += seconds
        per_module[module_id(test_id)] += seconds
    for cls, seconds in result.fixtures.items():
        per_class[cls] += seconds
        per_module[module_id(cls)] += seconds

    table(f"slowest tests (of {len(result.times)})", dict(result.times), args.top)
    table("slowest fixtures (setUpClass / setUpModule, charged to the next class)",
          dict(result.fixtures), min(args.top, 10))
    table("slowest classes (tests + fixtures)", per_class, args.top)
    table("slowest modules (tests + fixtures)", per_module, args.top)
    kind = "CPU" if args.cpu else "wall"
    print(f"\n({kind} time) import of test modules {imported:.2f} s wall; run {total:.2f} s wall; "
          f"tests {sum(s for _, s in result.times):.2f} s, fixtures {sum(result.fixtures.values()):.2f} s")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("test,seconds\n")
            for test_id, seconds in result.times:
                f.write(f"{test_id},{seconds:.6f}\n")
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())

"""Issue 22 (hardening, round 2): one test class per point of the issue. Each test
fails on the main the issue was filed against."""

import json
import os
import shutil
import subprocess
import sys
import unittest
from fractions import Fraction

from support import CALC, run_cli as run
from fuzz import default_signals
from test_hardening import CALC_PY, Case as Round1, bundled


def link_or_copy(src, dst):
    """A private tree's file as a hard link to the source (no test writes into a copied file:
    the trees' own files, .pyc caches and results/, are new), or a copy across file systems."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


class Case(Round1):
    def calc_at(self, calc_py, *args):
        """A private copy's calc.py, run from an empty directory."""
        return subprocess.run([sys.executable, calc_py, *args], capture_output=True, text=True,
                              cwd=self.folder())

    def calc(self, *args, cwd=None, env=None, **kw):
        return subprocess.run([sys.executable, CALC_PY, *args], cwd=cwd, env=env,
                              capture_output=True, text=True, **kw)


class WorkingDirectory(Case):
    """Point 1: a bundled id means the bundled model, whatever the working directory holds."""

    def setUp(self):
        self.cwd = self.folder()
        open(os.path.join(self.cwd, "gpt2"), "w").close()              # touch gpt2
        os.mkdir(os.path.join(self.cwd, "llama-3.1-8b"))               # an empty --local-dir
        os.mkdir(os.path.join(self.cwd, "qwen3-8b"))                   # a 2-layer look-alike
        cfg = bundled("models", "qwen3-8b")
        cfg["num_hidden_layers"] = 2
        with open(os.path.join(self.cwd, "qwen3-8b", "config.json"), "w") as f:
            json.dump(cfg, f)
        self.old = os.getcwd()
        os.chdir(self.cwd)
        self.addCleanup(os.chdir, self.old)

    def test_bundled_ids_win_over_local_files(self):
        status, out, err = run("models", "--model", "qwen3-8b", "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["model"]["layers"], 36)
        status, out, err = run("models")
        self.assertEqual(status, 0, err)
        self.assertNotIn("malformed", out)

    def test_a_path_is_a_path(self):
        status, out, err = run("models", "--model", "./qwen3-8b", "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertIn('"layers": 2', out)
        status, out, err = run("models", "--model", "./gpt2")
        self.assertEqual(status, 2)
        self.assertIn("./gpt2", err)

    def test_reproduce_and_validate_ignore_the_working_directory(self):
        p = self.calc("reproduce", "--check", "--only", "kv-qwen3-8b-32k-b8-h100", cwd=self.cwd)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = self.calc("validate", "--format", "csv", cwd=self.cwd)
        self.assertEqual(p.returncode, 0, p.stderr)


class BytecodeCache(Case):
    """Point 2: the user's bytecode setting is honoured, and a truncated cache file
    (CPython < 3.12 ignores short writes: python/cpython#126606) never breaks a run."""

    def copy(self):
        root = self.folder()
        dst = os.path.join(root, "calculations")
        os.mkdir(dst)
        shutil.copy(CALC_PY, dst)
        for name in ("infracalc", "models", "hardware"):
            shutil.copytree(os.path.join(CALC, name), os.path.join(dst, name),
                            ignore=shutil.ignore_patterns("__pycache__"), copy_function=link_or_copy)
        return os.path.join(dst, "calc.py")

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
        env.update(extra)
        return env

    def pycs(self, calc_py):
        return [os.path.join(d, f) for d, _, files in os.walk(os.path.dirname(calc_py))
                for f in files if f.endswith(".pyc")]

    def run_copy(self, calc_py, *args, env=None, limit=None):
        def cap():
            import resource
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        return subprocess.run([sys.executable, calc_py, *args], capture_output=True, text=True,
                              env=env or self.env(), cwd=self.folder(),
                              preexec_fn=cap if limit else None)

    def test_dont_write_bytecode_is_honoured(self):
        calc_py = self.copy()
        p = self.run_copy(calc_py, "models", env=self.env(PYTHONDONTWRITEBYTECODE="1"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.pycs(calc_py), [])
        p = subprocess.run([sys.executable, "-B", calc_py, "models"], capture_output=True,
                           text=True, env=self.env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.pycs(calc_py), [])

    def test_a_run_under_a_file_size_limit_leaves_later_runs_working(self):
        calc_py = self.copy()
        p = self.run_copy(calc_py, "forward", "--model", "qwen3-8b", "--device", "h100-sxm",
                          limit=4096)
        self.assertEqual(p.returncode, 0, p.stderr)
        sizes = [os.path.getsize(f) for f in self.pycs(calc_py)]
        if sys.version_info < (3, 12):
            self.assertIn(4096, sizes)    # truncated files are left (python/cpython#126606)
        for argv in (["--help"], ["forward", "--model", "qwen3-8b", "--device", "h100-sxm"]):
            p = self.run_copy(calc_py, *argv)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn("Traceback", p.stderr)
        self.assertNotIn(4096, [os.path.getsize(f) for f in self.pycs(calc_py)])

    def test_truncated_cache_of_every_module_including_the_package_init(self):
        calc_py = self.copy()
        self.assertEqual(self.run_copy(calc_py, "models").returncode, 0)
        pycs = self.pycs(calc_py)
        self.assertTrue(any("__init__" in f for f in pycs))
        for f in pycs:
            with open(f, "r+b") as fh:
                fh.truncate(40)          # a valid 16-byte header, then too little marshal data
        p = self.run_copy(calc_py, "models")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("Traceback", p.stderr)


class NestedDeviceFields(Case):
    """Point 3: every field of every link is checked by one schema; a positive time is never 0."""

    def device(self, edit):
        d = bundled("hardware", "h100-sxm")
        edit(d)
        path = os.path.join(self.folder(), "dev.json")
        with open(path, "w") as f:
            json.dump(d, f)
        return path

    def refused(self, path, *fragments):
        for argv in (["hardware", "--device", path],
                     ["parallel", "--model", "qwen3-8b", "--device", path, "--devices", "8", "--tp", "8",
                      "--input-len", "128", "--output-len", "8", "--algorithm", "ring"],
                     ["parallel", "--model", "qwen3-8b", "--device", path, "--devices", "8", "--search",
                      "--input-len", "128", "--output-len", "8"],
                     ["train", "--model", "qwen3-8b", "--device", path, "--devices", "16", "--tp", "8",
                      "--seq", "1024"]):
            status, out, err = run(*argv)
            self.assertEqual((status, out), (2, ""), (argv, err))
            self.assertEqual(len(err.splitlines()), 1, err)
            for fragment in fragments:
                self.assertIn(fragment, err)

    def test_in_network_reduce_needs_its_efficiency_and_latency(self):
        for field in ("in_network_efficiency", "in_network_alpha_s"):
            self.refused(self.device(lambda d: d["scale_up"].pop(field)), "in_network_reduce", field)

    def test_topology_must_be_a_string(self):
        for bad in ([], {}, 3, True):
            self.refused(self.device(lambda d: d["scale_up"].__setitem__("topology", bad)), "topology")

    def test_every_link_field_is_type_checked(self):
        bad = {"name": 7, "bytes_per_s_per_direction": "fast", "domain_size": 0, "links_per_device": -1,
               "bytes_per_s_per_link": 1.5, "wraparound_axis": [], "in_network_reduce": "yes",
               "in_network_efficiency": 2, "in_network_alpha_s": {}, "alpha_s": -1e-6,
               "nics_per_device": True, "topology": "ring"}
        from infracalc.load.hardware import LINK_SCHEMA
        self.assertEqual(set(bad), set(LINK_SCHEMA))      # every field of the schema is tried
        for field, value in bad.items():
            self.refused(self.device(lambda d: d["scale_up"].__setitem__(field, value)), field)

    def test_unknown_fields_are_refused_not_skipped(self):
        self.refused(self.device(lambda d: d["scale_out"].__setitem__("alpha", 1e-6)), "alpha")
        self.refused(self.device(lambda d: d.__setitem__("memory_bandwith_bytes_per_s", 1)),
                     "memory_bandwith_bytes_per_s", "did you mean")
        self.refused(self.device(lambda d: d.__setitem__("scale_up", [])), "scale_up")
        self.refused(self.device(lambda d: d.__setitem__("sources", [])), "sources")

    def test_a_device_at_the_limit_never_prints_a_zero_time(self):
        def huge(d):
            def big(x):
                if isinstance(x, dict):
                    return {k: big(v) for k, v in x.items()}
                return 10**30 if isinstance(x, int) and not isinstance(x, bool) else x
            d.update(big({k: v for k, v in d.items() if k != "sources"}))
        path = self.device(huge)
        for fmt in ("md", "json", "csv"):
            status, out, err = run("train", "--model", "qwen3-8b", "--device", path, "--seq", "4096",
                                   "--format", fmt)
            self.assertEqual(status, 0, err)
        rec = json.loads(run("train", "--model", "qwen3-8b", "--device", path, "--seq", "4096",
                             "--format", "json")[1])
        self.assertGreater(rec["time"]["step_s"], 0)
        self.assertGreater(rec["lower_bound"]["step_s"], 0)


class ExitStatusWithABadStderr(Case):
    """Point 4: with stderr closed, full or a broken pipe, an error still exits 2 (not 120),
    under Python's default buffering."""

    def status(self, **kw):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
        return subprocess.run([sys.executable, CALC_PY, "models", "--model", "no-such-model"],
                              stdout=subprocess.DEVNULL, env=env, **kw).returncode

    def test_closed_stderr(self):
        self.assertEqual(self.status(preexec_fn=lambda: os.close(2)), 2)

    @unittest.skipUnless(os.path.exists("/dev/full"), "needs /dev/full")
    def test_full_stderr(self):
        with open("/dev/full", "w") as full:
            self.assertEqual(self.status(stderr=full), 2)

    def test_broken_pipe_on_stderr(self):
        r, w = os.pipe()
        os.close(r)
        try:
            self.assertEqual(self.status(stderr=w), 2)
        finally:
            os.close(w)


def copy_tree(case):
    """A private copy of calculations/ whose results/ holds one scenario, `hardware`, and its two
    stored files (its scenario list cut to that one): `reproduce --check` over the whole of it
    takes the paths of the real one (stray, stale, symlink checks) without re-deriving the
    3,000 stored results of the real tree. Returns its calc.py."""
    import json

    dst = os.path.join(case.folder(), "calculations")
    shutil.copytree(CALC, dst, ignore=lambda d, names: [n for n in names if n == "__pycache__" or (
        n == "results" and os.path.samefile(d, CALC))], copy_function=link_or_copy)
    results = os.path.join(dst, "results")
    os.mkdir(results)
    with open(os.path.join(CALC, "results", "scenarios.json"), encoding="utf-8") as f:
        kept = [s for s in json.load(f)["scenarios"] if s["name"] == "hardware"]
    with open(os.path.join(results, "scenarios.json"), "w", encoding="utf-8") as f:
        json.dump({"scenarios": kept}, f)
    for name in ("hardware.md", "hardware.json"):
        shutil.copy(os.path.join(CALC, "results", name), results)
    return os.path.join(dst, "calc.py")


def _reap(p):
    """Kill a child process if it still runs, and wait for it."""
    if p.poll() is None:
        p.kill()
    p.communicate()


class Signals(Case):
    """Point 5: SIGTERM and SIGHUP during a write leave no temporary file, and
    `reproduce --check` reports one that an older run left."""

    def test_sigterm_and_sighup_while_writing_leave_no_temporary_file(self):
        import signal
        import time
        for signum in (signal.SIGTERM, signal.SIGHUP):
            d = self.folder()
            fifo = os.path.join(d, "out.md")
            os.mkfifo(fifo)   # the --output write blocks here, after the plot is staged
            p = subprocess.Popen([sys.executable, CALC_PY, "decode", "--model", "qwen3-0.6b",
                                  "--input-len", "16", "--output-len", "4", "--batch-sweep",
                                  "--plot", os.path.join(d, "plot.svg"), "--output", fifo],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 preexec_fn=default_signals)
            # Whatever happens below, the child (blocked on the FIFO for ever otherwise) dies
            # with the test, and it holds no pipe of the test runner's.
            self.addCleanup(_reap, p)
            deadline = time.time() + 120   # generous: a loaded 2-core machine
            while time.time() < deadline and not any(f.endswith(".tmp") for f in os.listdir(d)):
                time.sleep(0.02)
            self.assertTrue(any(f.endswith(".tmp") for f in os.listdir(d)), "the plot was never staged")
            p.send_signal(signum)
            _, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 128 + signum, err)
            self.assertNotIn(b"Traceback", err)
            self.assertEqual(sorted(os.listdir(d)), ["out.md"])

    def test_check_reports_a_leftover_temporary_file(self):
        calc_py = copy_tree(self)
        results = os.path.join(os.path.dirname(calc_py), "results")
        open(os.path.join(results, ".hardware.md.abc123.tmp"), "w").close()
        p = self.calc_at(calc_py, "reproduce", "--check")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("STRAY .hardware.md.abc123.tmp", p.stdout)


class SymlinksAndReadOnlyFiles(Case):
    """Point 6: no write through a symlink in results/, no diff of its target; --output
    refuses a read-only file and keeps hard links."""

    def test_reproduce_refuses_a_symlink_in_results(self):
        calc_py = copy_tree(self)
        results = os.path.join(os.path.dirname(calc_py), "results")
        secret = os.path.join(self.folder(), "secret.txt")
        with open(secret, "w") as f:
            f.write("TOP SECRET\n")
        os.remove(os.path.join(results, "hardware.md"))
        os.symlink(secret, os.path.join(results, "hardware.md"))
        p = self.calc_at(calc_py, "reproduce", "--only", "hardware")
        self.assertEqual(p.returncode, 2)
        self.assertIn("symlink", p.stderr)
        with open(secret) as f:
            self.assertEqual(f.read(), "TOP SECRET\n")
        p = self.calc_at(calc_py, "reproduce", "--check")
        self.assertEqual(p.returncode, 1)
        self.assertNotIn("TOP SECRET", p.stdout)
        self.assertIn("symlink", p.stdout)

    def test_output_refuses_a_read_only_file(self):
        path = os.path.join(self.folder(), "out.md")
        with open(path, "w") as f:
            f.write("keep\n")
        os.chmod(path, 0o444)
        status, out, err = run("models", "--output", path)
        self.assertEqual(status, 2)
        self.assertIn("read-only", err)
        with open(path) as f:
            self.assertEqual(f.read(), "keep\n")

    def test_output_keeps_hard_links(self):
        d = self.folder()
        path, other = os.path.join(d, "out.md"), os.path.join(d, "other-name.md")
        open(path, "w").close()
        os.link(path, other)
        status, out, err = run("models", "--output", path)
        self.assertEqual(status, 0, err)
        self.assertEqual(os.stat(path).st_ino, os.stat(other).st_ino)
        with open(other) as f:
            self.assertIn("qwen3-8b", f.read())


class BadStoredFiles(Case):
    """Point 7: a FIFO or non-UTF-8 text in place of a stored result is reported, never a
    hang or a traceback."""

    def test_fifo_and_non_utf8_stored_results(self):
        calc_py = copy_tree(self)
        target = os.path.join(os.path.dirname(calc_py), "results", "hardware.md")
        os.remove(target)
        os.mkfifo(target)
        p = subprocess.run([sys.executable, calc_py, "reproduce", "--check", "--only", "hardware"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("BAD hardware.md: not a regular file", p.stdout)
        os.remove(target)
        with open(target, "wb") as f:
            f.write(b"\xff\xfe not text")
        p = self.calc_at(calc_py, "reproduce", "--check", "--only", "hardware")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("BAD hardware.md: not UTF-8", p.stdout)
        self.assertNotIn("Traceback", p.stderr)


class Smaller(Case):
    """Point 9: MemoryError, escapes in notes, attention's option name, the search's verdict,
    deep pipelines."""

    def deep_model(self, layers):
        cfg = bundled("models", "qwen3-0.6b")
        cfg["num_hidden_layers"] = layers
        cfg.pop("layer_types", None)
        path = os.path.join(self.folder(), "deep.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def test_out_of_memory_is_one_line(self):
        import resource
        deep = self.deep_model(1024)
        argv = ["parallel", "--model", deep, "--devices", "1024", "--pp", "1024", "--input-len", "16",
                "--output-len", "4", "--format", "json"]

        def under(mb, *args):
            def cap():
                resource.setrlimit(resource.RLIMIT_AS, (mb * 2**20, mb * 2**20))
            return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                                  preexec_fn=cap)
        # From the least address space in which the bare interpreter starts, upward (in 2 MB
        # steps) until the 1,024-stage pipeline fits: the run at the largest limit still too
        # small fails inside the tool and must say so in one line. (Near the floor the
        # interpreter itself fails before the tool runs; the pipeline's margin over a models
        # listing is only 2-12 MB depending on the Python version, so neither makes a fixed
        # limit.) The limit is found by doubling the step from the floor until a run fits, then
        # bisecting: a run that fits at one limit fits at every higher one, so this is the
        # limit the step-by-step walk stopped below, in ~10 runs of the pipeline, not ~20.
        floor = next(mb for mb in range(8, 400, 2) if under(mb, "-c", "pass").returncode == 0)
        runs = {}

        def fails(limit):
            runs[limit] = under(limit, CALC_PY, *argv)
            return runs[limit].returncode != 0

        self.assertTrue(fails(floor), "the pipeline fits wherever the interpreter starts")
        low, step = floor, 2   # low fails; find a high that fits, within the walk's 400 MB
        while low + step < floor + 400 and fails(low + step):
            low, step = low + step, 2 * step
        high = min(low + step, floor + 400)
        while high - low > 2:   # low fails, high fits (or is past the walk's end)
            mid = low + (high - low) // 4 * 2
            if fails(mid):
                low = mid
            else:
                high = mid
        p = runs[low]
        self.assertEqual(p.returncode, 2, p.stderr[-500:])
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr[-500:])
        self.assertIn("out of memory", p.stderr)

    def test_device_id_escapes_never_reach_the_terminal(self):
        d = bundled("hardware", "h100-sxm")
        d["id"], d["name"] = "evil\x1b[31mred", "N\x1b[2J"
        path = os.path.join(self.folder(), "esc.json")
        with open(path, "w") as f:
            json.dump(d, f)
        for argv in (["decode", "--model", "llama-3.1-405b", "--input-len", "100", "--output-len", "10"],
                     ["forward", "--model", "llama-3.1-405b"],
                     ["kv", "--model", "llama-3.1-405b", "--context", "1000"],
                     ["parallel", "--model", "llama-3.1-405b", "--devices", "2", "--tp", "2",
                      "--input-len", "100", "--output-len", "10"],
                     ["train", "--model", "llama-3.1-405b", "--seq", "1024"]):
            status, out, err = run(*argv, "--device", path)
            self.assertEqual(status, 0, err)
            self.assertNotIn("\x1b", out, argv)

    def test_attention_names_its_own_compute_option(self):
        status, out, err = run("attention", "--queries", "1", "--keys", "8", "--heads", "1",
                               "--head-dim", "8", "--act-dtype", "int4")
        self.assertEqual(status, 2)
        self.assertIn("--act-dtype", err)
        self.assertNotIn("--compute-dtype", err)

    def test_a_search_names_why_no_layout_is_admitted(self):
        status, out, err = run("train", "--model", "llama-3.1-70b", "--devices", "8", "--seq", "4096",
                               "--global-batch", "7", "--search")
        self.assertEqual(status, 0, err)
        self.assertNotIn("admits this model", out)
        self.assertIn("global batch is not a multiple of dp x micro-batch", out.split("## Rejected")[0])
        status, out, err = run("parallel", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--devices", "1",
                               "--search", "--input-len", "128", "--output-len", "2")
        self.assertEqual(status, 0, err)
        self.assertNotIn("admits this model", out)
        self.assertIn("does not fit", out.split("## Rejected")[0].split("- Model:")[0])

    def test_pipelines_deeper_than_the_limit_are_refused(self):
        from infracalc.layout import PP_MAX
        deep = self.deep_model(PP_MAX * 2)
        for argv in (["parallel", "--model", deep, "--devices", str(2 * PP_MAX), "--pp", str(2 * PP_MAX),
                      "--input-len", "16", "--output-len", "4"],
                     ["train", "--model", deep, "--devices", str(2 * PP_MAX), "--pp", str(2 * PP_MAX),
                      "--seq", "16"]):
            status, out, err = run(*argv)
            self.assertEqual(status, 2, err)
            self.assertIn(f"{PP_MAX:,} stages", err)


class NestedConfigFields(Case):
    """Point 10's nested config mutations found: rope_scaling with a non-string type or an
    overflowing factor was a TypeError / OverflowError."""

    def test_rope_scaling_fields_are_type_checked(self):
        cfg = bundled("models", "llama-3.1-8b")
        for bad in ({"rope_type": {}}, {"type": ["x"]}, {"rope_type": "linear", "factor": 1e308},
                    {"rope_type": "dynamic", "factor": float("1e30")}):
            cfg["rope_scaling"] = bad
            path = os.path.join(self.folder(), "rope.json")
            with open(path, "w") as f:
                json.dump(cfg, f)
            status, out, err = run("forward", "--model", path, "--format", "json")
            self.assertEqual((status, out), (2, ""), err)
            self.assertIn("rope_scaling", err)


class SessionOptionsReview(Case):
    """The review of the options added after de78bae: conflicting or malformed input is one
    line and status 2 (each vector below was accepted, or crashed, before the fix)."""

    REFUSED = (
        # two serve questions at once: the first answered, the other silently ignored
        (("serve", "--model", "qwen3-8b", "--input-len", "1024", "--verify-ns", "100000",
          "--baseline-token-ns", "50000", "--accepted-counts", "2,1", "--draft-ns", "40000",
          "--draft-model", "qwen3-0.6b", "--acceptance", "0.5"), "--accepted-counts and --draft-model"),
        (("serve", "--model", "qwen3-8b", "--input-len", "8192", "--handoff-bw", "25GB/s",
          "--offload-kv", "0.5", "--host-link-bw", "pcie5", "--output-len", "16"), "--handoff-bw and --offload-kv"),
        (("serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "129", "--worker",
          "p:4:16384:64", "--network-bw", "25GB/s", "--rate", "4", "--draft-model", "qwen3-0.6b",
          "--acceptance", "0.5"), "--worker and --draft-model"),
        # repeated names
        (("serve", "--model", "qwen3-8b", "--baseline-token-ns", "1000000", "--output-len", "16",
          "--spec-option", "d:100000:1000000:1,3", "--spec-option", "d:100000:1000000:1,3"), "'d' is given twice"),
        (("serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "129", "--network-bw", "25GB/s",
          "--worker", "p:4:16384:64", "--worker", "p:4:16384:64"), "'p' is given twice"),
        # --decode-batch rates device workers only
        (("serve", "--model", "qwen3-8b", "--input-len", "8192", "--output-len", "1025", "--decode-batch", "32",
          "--worker", "A100:4:16384:64", "--network-bw", "25GB/s"), "--decode-batch"),
        # budget: a zero compute time divided by; --model and --experts both; a repeat count left off
        (("budget", "batch", "--train-tokens", "100B", "--seq", "8192", "--reference-sequences", "384",
          "--reference-cards", "48", "--compute-time", "0s", "--cards", "32", "--noise-scale", "2M"), "--compute-time"),
        (("budget", "capacity", "--model", "qwen3-235b-a22b", "--tokens", "8192", "--loads", "3x64,1x64",
          "--capacity-factor", "1", "--experts", "4"), "drop --experts"),
        (("budget", "capacity", "--experts", "2", "--top-k", "1", "--tokens", "128", "--loads", "3x,1",
          "--capacity-factor", "1"), "--loads"),
        # a question's own option without the question (it was ignored)
        (("serve", "--model", "qwen3-8b", "--input-len", "1024", "--output-len", "16", "--remote-bw", "5GB/s"),
         "--remote-bw is read only with --cache-route"),
        (("serve", "--model", "qwen3-235b-a22b", "--expert-tokens", "128", "--routing", "balanced",
          "--host-link-bw", "pcie5"), "--host-link-bw is read only with one of"),
        (("serve", "--model", "qwen3-235b-a22b", "--expert-tokens", "128", "--routing", "balanced",
          "--copy-bw", "25GB/s"), "--copy-bw is read only with --payback-batches"),
        (("serve", "--model", "qwen3-8b", "--input-len", "1024", "--output-len", "16", "--draft-ns", "1000"),
         "--draft-ns is read only with --accepted-counts"),
        (("serve", "--model", "qwen3-8b", "--input-len", "1024", "--output-len", "16", "--prefix-budget", "1GiB"),
         "--prefix-budget is read only with --prefix-candidate"),
        (("budget", "straggler", "--mean-time", "0s", "--sigma", "1s", "--ranks", "8"), "--mean-time"),
        (("serve", "--model", "qwen3-8b", "--reconfigure", "tp4", "tp8", "--handoff-bw", "25GB/s", "--input-len", "10"),
         "--handoff-bw and --reconfigure"),
        (("serve", "--model", "qwen3-8b", "--input-len", "10", "--output-len", "5", "--fabric-bw", "25GB/s"),
         "--fabric-bw is read only with --reconfigure"),
        (("serve", "--model", "qwen3-8b", "--reconfigure", "tp4", "tp8", "--switch-overhead-s", "1"),
         "--switch-overhead-s and --step-saving-s go together"),
        (("serve", "--model", "qwen3-8b", "--reconfigure", "tp4", "tp8", "--reconfigure-capacity", "1GB@zz"),
         "'zz' is in neither layout"),
        # Qwen3.5 declares an MTP module (mtp_num_hidden_layers) the tool does not model: not "has none"
        (("serve", "--model", "qwen3.5-397b-a17b", "--mtp", "--acceptance", "0.8", "--input-len", "1024",
          "--output-len", "16"), "mtp_num_hidden_layers is not yet"),
        # collective: --algorithm belongs to the reconfiguration rows
        (("collective", "all_reduce", "--ranks", "8", "--bytes", "8MiB", "--algorithm", "tree"), "--algorithm"),
    )

    def test_refused_in_one_line(self):
        for argv, needle in self.REFUSED:
            with self.subTest(argv=argv):
                status, out, err = run(*argv)
                self.assertEqual(status, 2, (out[:200], err))
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertNotIn("Traceback", err)
                self.assertIn(needle, err)

    def test_prefix_value_holds_the_paged_cache_kv_reports(self):
        # DeepSeek-V4-Flash's cache is not tokens x its one-token cache (sliding windows,
        # compressed entries, fixed compressor states): a 512-token prefix in 16-token pages
        # holds what `kv --context 512 --page-size 16` reports per request (23,072,768 B),
        # not 512 x the one-token cache (6.27 GB before the fix).
        status, out, err = run("kv", "--model", "deepseek-v4-flash", "--context", "512", "--page-size", "16",
                               "--format", "json")
        self.assertEqual(status, 0, err)
        expected = json.loads(out)["capacity"]["kv_bytes_per_request_per_device"]
        status, out, err = run("serve", "--model", "deepseek-v4-flash", "--prefix-candidate", "a:512:1:1",
                               "--prefix-budget", "1GiB", "--page-tokens", "16", "--format", "json")
        self.assertEqual(status, 0, err)
        row = json.loads(out)["prefix_value"]["candidates"][0]
        self.assertEqual(row["resident_bytes"], expected)
        self.assertEqual(expected, 23072768)

    def test_kimi_k3_quantization_config_of_the_wrong_shape(self):
        # The fuzzer's find: config_groups (or its group_0, or weights) not an object crashed
        # the K3 adapter with AttributeError instead of naming the unsupported field.
        for path, value in ((("config_groups",), 7), (("config_groups", "group_0"), []),
                            (("config_groups", "group_0", "weights"), "x")):
            with self.subTest(path=path):
                cfg = bundled("models", "kimi-k3")
                target = cfg["text_config"]["quantization_config"]
                for key in path[:-1]:
                    target = target[key]
                target[path[-1]] = value
                status, out, err = run("forward", "--model", self.file(json.dumps(cfg)), "--tokens", "1")
                self.assertEqual(status, 2, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn("quantization_config", err)

    def test_kv_offload_of_an_mla_model_states_its_path(self):
        # serve --offload-kv built the step's ledger with --mla auto unresolved: every MLA model
        # (DeepSeek-V3, Kimi K3) ended in a ValueError traceback. The step now takes the cheaper
        # path, as decode does, and says so in both formats.
        argv = ("serve", "--model", "deepseek-v3", "--offload-kv", "0.5", "--host-link-bw", "pcie5",
                "--input-len", "1024", "--output-len", "16")
        status, md, err = run(*argv)
        self.assertEqual(status, 0, err)
        status, out, err = run(*argv, "--format", "json")
        self.assertEqual(status, 0, err)
        rec = json.loads(out)
        note = next(n for n in rec["notes"] if n.startswith("MLA path for the decode step: absorbed"))
        self.assertIn(note, md)
        # what the record leaves out is printed too, not only in JSON
        for line in rec["left_out"]:
            self.assertIn(line, md)

    def test_train_markdown_states_the_recipe_options(self):
        # --supervised-tokens, --recompute-modules, --activation-func-fp8-input-store and
        # --cpu-offloading-num-layers change the figures but were echoed in JSON only.
        argv = ("train", "--model", "qwen3-8b", "--seq", "8192", "--supervised-tokens", "4096",
                "--recompute-modules", "layernorm", "--activation-func-fp8-input-store",
                "--cpu-offloading-num-layers", "4")
        status, md, err = run(*argv)
        self.assertEqual(status, 0, err)
        for text in ("output head and loss on 4,096 supervised tokens per sequence", "recompute `none` + modules layernorm",
                     "activation inputs kept in FP8", "each stage's first 4 layers' activations in host memory"):
            self.assertIn(text, md)
        status, out, err = run(*argv, "--format", "json")
        i = json.loads(out)["inputs"]
        self.assertEqual((i["supervised_tokens"], i["recompute_modules"], i["fp8_activation_input"],
                          i["cpu_offloading_num_layers"]), (4096, ["layernorm"], True, 4))

    def test_offload_ffn_and_stage_bounds_of_an_mla_model(self):
        # Two more --mla auto tracebacks (the fuzzer's model swap): the offload's layer time from
        # the decode step, and device-rated PD workers under --decode-batch. Under auto a stage
        # bound is the cheaper path's: the least of the two forced paths' bounds.
        status, out, err = run("serve", "--model", "deepseek-v3", "--offload-ffn-layers", "1", "--input-len", "1024",
                               "--host-link-bw", "pcie5", "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertTrue(json.loads(out)["notes"][0].startswith("MLA path for the decode step: absorbed"))
        argv = ("serve", "--model", "deepseek-v3", "--input-len", "8192", "--output-len", "1025",
                "--decode-batch", "32", "--new-kv", "on-chip", "--worker", "A:4:h100-sxm", "--format", "json")
        bounds = {}
        for mla in ("auto", "absorbed", "expanded"):
            status, out, err = run(*argv, "--mla", mla)
            self.assertEqual(status, 0, err)
            st = json.loads(out)["workers"]["stage_bounds"][0]
            bounds[mla] = (Fraction(st["prefill_pass"]["lower_bound_s_exact"]), Fraction(st["decode_step"]["lower_bound_s_exact"]))
        for i in (0, 1):
            self.assertEqual(bounds["auto"][i], min(bounds["absorbed"][i], bounds["expanded"][i]))

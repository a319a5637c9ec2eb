"""Shared test helpers: import path, temp configs, running the CLI."""

import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALC = os.path.join(ROOT, "calculations")
if CALC not in sys.path:
    sys.path.insert(0, CALC)


def _bytecode_in_a_temporary_folder():
    """Under -B or PYTHONDONTWRITEBYTECODE every calc.py process a test starts compiled the whole
    package from source again (25-80 ms a process, ~100 processes a run). Then the children
    share bytecode in a temporary folder of this run instead (a mirror of the source paths,
    PYTHONPYCACHEPREFIX; the first to import a module writes it), removed when the run ends:
    never beside the sources, nothing kept from one run to the next, and this process itself
    as the user started it. The tests of the bytecode settings give their children the user's
    environment back (test_hardening2.BytecodeCache.env)."""
    if not sys.flags.dont_write_bytecode and "PYTHONDONTWRITEBYTECODE" not in os.environ:
        return   # bytecode beside the sources, as Python writes it by default
    if sys.pycache_prefix is not None or os.environ.get("PYTHONPYCACHEPREFIX"):
        return   # a folder of the user's own
    import atexit
    import shutil

    try:
        folder = tempfile.mkdtemp(prefix="infracalc-tests-pycache-")
    except OSError:   # no writable temporary directory: the children compile as before
        return
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["PYTHONPYCACHEPREFIX"] = folder
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


_bytecode_in_a_temporary_folder()

from infracalc.dtypes import DTYPES  # noqa: E402
from infracalc.ledger import build  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.workload import Workload  # noqa: E402


_CORPUS = []


def corpus():
    """validate over the whole corpus (analyses.validate.validate()), evaluated once for the test
    run: the modules that read it (test_prediction, test_docs) share one record and never change it."""
    if not _CORPUS:
        from infracalc.analyses import validate
        _CORPUS.append(validate.validate())
    return _CORPUS[0]


def write_config(test, data):
    """Write a config dict to a temp JSON file removed after the test; return its path."""
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f) if not isinstance(data, str) else f.write(data)
    test.addCleanup(os.remove, path)
    return path


def totals(model, **workload):
    return build(load_model(model), Workload(**workload)).totals


def run_cli(*argv):
    """main() in this process: (status, stdout, stderr). An uncaught exception
    (a traceback for the user) fails the test that calls it."""
    import contextlib
    import io

    from infracalc.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def budget_result(*argv):
    """`budget ARGV --format json` run in this process: its "result" record (the run must succeed)."""
    import json

    status, out, err = run_cli("budget", *argv, "--format", "json")
    assert status == 0, err
    return json.loads(out)["result"]


def cli(*args):
    """Run calc.py in a fresh process: (exit status, stdout, stderr)."""
    p = subprocess.run([sys.executable, os.path.join(CALC, "calc.py"), *args],
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr

"""`reproduce`: regenerate every stored result, or (--check) diff against them.

calculations/results/scenarios.json lists scenarios: a name, the command-line
arguments, and the formats to store. Each is written to results/NAME.FORMAT.
A subdirectory may hold its own list (results/book/scenarios.json); its
scenarios are named DIR/NAME and written to results/DIR/NAME.FORMAT.
--check recomputes them all in memory and exits 1 on any drift, printing a
unified diff of what changed; it also flags, in every directory that has a
scenario list, stored files no scenario makes (README.md is prose, not a result).
"""

import os

from ..paths import data_dir
from . import common

RESULTS_DIR = data_dir("results")
SCENARIOS = "scenarios.json"
NOT_RESULTS = (SCENARIOS, "README.md")
MAX_DIFF_LINES = 40


def add_arguments(p):
    p.add_argument("--check", action="store_true",
                   help="recompute and compare with the stored files; exit 1 on any drift")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="only this scenario (repeatable)")
    p.add_argument("--list", action="store_true", help="list the scenarios and their commands")
    p.add_argument("--out", metavar="DIR", type=common.file_name,
                   help="write the results under DIR (same layout as the stored ones) instead of "
                        "over the stored files; required in an installed package, which is never "
                        "written to")


def scenario_dirs():
    """Directories (relative to results/, "" for results/ itself) that hold a scenario list."""
    dirs = [""]
    for entry in sorted(os.listdir(RESULTS_DIR)):
        if os.path.isfile(os.path.join(RESULTS_DIR, entry, SCENARIOS)):
            dirs.append(entry)
    return dirs


def load_scenarios(subdir=""):
    """The scenarios of one directory, each named DIR/NAME outside results/ itself."""
    from ..errors import UserError
    from ..load.models import read_json

    path = os.path.join(RESULTS_DIR, subdir, SCENARIOS)
    data = read_json(path, "scenario list")
    if not isinstance(data, dict) or not isinstance(data.get("scenarios"), list):
        raise UserError(f"{path}: expected an object with a 'scenarios' list")
    for s in data["scenarios"]:
        if (not isinstance(s, dict) or not isinstance(s.get("name"), str)
                or not isinstance(s.get("args"), list) or not all(isinstance(a, str) for a in s["args"])):
            raise UserError(f"{path}: every scenario needs a 'name' string and an 'args' list of strings")
    prefix = f"{subdir}/" if subdir else ""
    return [dict(s, name=prefix + s["name"], dir=os.path.join(RESULTS_DIR, subdir)) for s in data["scenarios"]]


MISSING = "not stored (run `reproduce` to create it)"


def read_stored(path):
    """(text, None) for a stored result, or (None, why not): never follows a symlink,
    never opens anything but a regular file (a FIFO would block for ever), and
    reports text that is not UTF-8 instead of failing on it."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None, MISSING
    except OSError as e:
        return None, f"cannot read: {e.strerror or e}"
    if stat.S_ISLNK(mode):
        return None, "a symlink (results are regular files; not followed)"
    if not stat.S_ISREG(mode):
        return None, "not a regular file"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            raw = f.read()
    except OSError as e:
        return None, f"cannot read: {e.strerror or e}"
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return None, f"not UTF-8 text (byte {e.start}: {e.reason})"


def stray_files(dirs):
    """{path relative to results/: why} for what no result should be: a temporary file
    left by an interrupted write (.NAME.XXXX.tmp), and a symlink or anything but a
    regular file or directory (a committed link could point a write anywhere)."""
    import stat

    stray = {}
    for d in dirs:
        top = os.path.join(RESULTS_DIR, d)
        for f in sorted(os.listdir(top)):
            rel = f"{d}/{f}" if d else f
            mode = os.lstat(os.path.join(top, f)).st_mode
            if stat.S_ISLNK(mode):
                stray[rel] = "a symlink (results are regular files; refused)"
            elif f.startswith(".") and f.endswith(".tmp"):
                stray[rel] = "a temporary file left by an interrupted write; remove it"
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                stray[rel] = "not a regular file"
    return stray


def outputs(scenario):
    """[(file name, text)] for one scenario, rendered in-process."""
    from . import render_formats

    result = []
    here = os.getcwd()
    # A path in a scenario's arguments (an edited config) is relative to its scenario list's directory
    # (results/book/configs/...), wherever `reproduce` runs, so the stored results never name a machine path.
    os.chdir(scenario.get("dir", RESULTS_DIR))
    try:
        formats = scenario.get("formats", ["md", "json"])
        texts = render_formats(scenario["args"], formats)
        result.extend((f"{scenario['name']}.{fmt}", texts[fmt]) for fmt in formats)
    finally:
        os.chdir(here)
    return result


def _diff(name, old, new):
    import difflib

    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(),
                                      f"stored/{name}", f"recomputed/{name}", lineterm="", n=1))
    more = len(lines) - MAX_DIFF_LINES
    return lines[:MAX_DIFF_LINES] + ([f"... ({more} more diff lines)"] if more > 0 else [])


def _target(args):
    """The directory results are written under: --out, else the stored results of a checkout.
    An installed package is never written to (its files belong to the package manager)."""
    from ..errors import UserError
    from ..paths import installed

    if args.out is not None:
        if args.check:
            raise UserError("--check compares with the stored results and writes nothing; drop --out")
        return args.out
    if installed() and not args.check and not args.list:
        raise UserError(f"the stored results are inside the installed package ({RESULTS_DIR}), which "
                        "reproduce never writes to: give --out DIR to write them there, or --check "
                        "to compare")
    return RESULTS_DIR


def run(args):
    from ..errors import UserError, quote

    dirs = scenario_dirs()
    scenarios = [s for d in dirs for s in load_scenarios(d)]
    if args.list:
        return "".join(f"{s['name']}: infra-calc {' '.join(s['args'])}\n" for s in scenarios)
    if args.only:
        known = {s["name"] for s in scenarios}
        for name in args.only:
            if name not in known:
                from ..errors import unknown
                raise unknown("scenario", name, known, "`reproduce --list`")
        scenarios = [s for s in scenarios if s["name"] in args.only]
    target = _target(args)
    report, drift, expected, writes = [], 0, set(), []
    for s in scenarios:
        for name, text in outputs(s):
            expected.add(name)
            path = os.path.join(RESULTS_DIR, *name.split("/"))
            if not args.check:
                out = os.path.join(target, *name.split("/"))
                link = next((p for p in (out, os.path.dirname(out)) if os.path.islink(p)), None)
                if link:
                    raise UserError(f"{quote(os.path.relpath(link, target))} in {quote(target)} is a "
                                    "symlink; results are regular files (remove the link, then "
                                    "run `reproduce`)")
                writes.append(("result", out, text))
                continue
            stored, problem = read_stored(path)
            if problem:
                report.append(f"{'MISSING' if stored is None and problem == MISSING else 'BAD'} "
                              f"{name}: {problem}")
                drift += 1
                continue
            if stored != text:
                drift += 1
                report.append(f"DRIFT {name}")
                report.extend(_diff(name, stored, text))
    if not args.only:
        stale = [f"{d}/{f}" if d else f for d in dirs
                 for f in sorted(os.listdir(os.path.join(RESULTS_DIR, d)))
                 if f not in NOT_RESULTS and f.endswith((".md", ".json", ".csv"))]
        stale = [f for f in stale if f not in expected]
        for f in stale:
            report.append(f"STALE {f}: no scenario produces it")
        stray = {f: why for f, why in stray_files(dirs).items() if f not in expected}
        for f in stray:
            report.append(f"STRAY {f}: {stray[f]}")
        drift += len(stale) + len(stray) if args.check else 0
    if args.check:
        if drift:
            args.exit_status = 1
            report.append(f"reproduce --check: {drift} of {len(expected)} stored results differ")
        else:
            report.append(f"reproduce --check: all {len(expected)} stored results match "
                          f"({len(scenarios)} scenarios)")
    else:
        report.append(f"reproduce: wrote {len(expected)} files for {len(scenarios)} scenarios "
                      f"to {target if args.out else os.path.relpath(target)}")
    if not scenarios:
        raise UserError("no scenarios selected")
    if writes:   # every result or none (cli/files.py), once all were computed
        from .files import write_files
        for folder in sorted({os.path.dirname(path) for _, path, _ in writes}):
            os.makedirs(folder, exist_ok=True)
        write_files(writes)
    return "\n".join(report) + "\n"

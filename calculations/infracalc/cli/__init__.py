"""Command-line dispatch: one module per subcommand, imported only when used."""

import importlib
import os
import sys


def _import_argparse():
    """argparse, imported without `gettext`: argparse takes its `_` and `ngettext` from it at
    import, and gettext compiles its plural-forms tokenizer (a verbose regular expression)
    as it loads (about 4 M instructions, 1.5 ms, every command). Both names are replaced
    below, so a stand-in serves the import and is removed at once: a later `import gettext`
    anywhere loads the real module."""
    if "argparse" in sys.modules or "gettext" in sys.modules:
        import argparse
        return argparse
    stand_in = type(sys)("gettext")
    stand_in.gettext = lambda message: message
    stand_in.ngettext = lambda singular, plural, n: singular if n == 1 else plural
    sys.modules["gettext"] = stand_in
    try:
        import argparse
    finally:
        del sys.modules["gettext"]
    return argparse


argparse = _import_argparse()

from ..errors import UserError, one_line, quote

COMMANDS = {
    "models": "bundled models and their exact parameter counts",
    "forward": "per-operator ledger of one forward pass with roofline times",
    "decode": "TTFT and per-token time bounds of B requests on one device (or --batch-sweep)",
    "kv": "KV cache per layer type and request capacity on a device layout",
    "train": "training step on a layout: FLOPs, memory per device, step time, MFU; --search over layouts",
    "gemm": "one GEMM [M,K]x[K,N]: FLOPs, bytes by operand, intensity, ridge point, roofline per device",
    "attention": "one attention core (QK^T, softmax, PV): FLOPs, bytes, intensity, roofline per device",
    "parallel": "serve a model on N devices under a layout (TP, PP, DP, CP, EP): per-device time, communication, capacity; or --search",
    "serve": "a serving system: fixed / continuous / chunked batching side by side, load and "
             "queueing, and the fewest devices meeting --ttft-limit / --tpot-limit",
    "budget": "first-order budgets with declared inputs, one KIND each: nominal dense models, memory "
              "concurrency, checkpoints, host and network queues, serving and training pipelines, kernel views",
    "collective": "one collective (all_reduce, all_gather, reduce_scatter, all_to_all, send_recv) over N ranks "
                  "on a device's links, nccl-tests style: time, algbw, busbw per algorithm and the bound",
    "encode": "a vision-language model's vision encoder per image and per request: patches, blocks, merger, "
              "DeepStack; encoder-cache and KV bytes; with --output-len the whole request",
    "hardware": "the bundled accelerators and their specs",
    "reproduce": "regenerate the stored results (--check: diff against them)",
    "report": "any command's result as one self-contained HTML page with SVG charts: report COMMAND [options]",
    "validate": "published measurements (calculations/validation/) against our bounds; exit 3 if one beats its bound",
}

PROG = "infra-calc"

# argparse passes its own words ("usage: ", "options", its error messages) through
# gettext, whose catalogue search imports `locale` (about 1 ms, every command) to
# find translations that CPython does not ship; everything printed is in English.
argparse._ = lambda message: message
argparse.ngettext = lambda singular, plural, n: singular if n == 1 else plural


def _terminal_columns():
    """shutil.get_terminal_size().columns (COLUMNS, else the terminal of stdout,
    else 80), without importing shutil (and its compression modules)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter with the terminal width asked once per process:
    argparse builds a formatter for every add_argument (to check its metavar)."""

    width = None

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            if _Formatter.width is None:
                _Formatter.width = _terminal_columns() - 2   # as HelpFormatter's own default
            width = _Formatter.width
        super().__init__(prog, indent_increment, max_help_position, width)


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit status 2."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        if message.startswith("unrecognized arguments: "):
            message += self._hint(message[len("unrecognized arguments: "):].split())
        raise UserError(message)

    def _check_value(self, action, value):
        """argparse's choice check; past 12 choices (budget's kinds) the message names the closest
        ones and where the whole list is, instead of every choice on one line."""
        choices = action.choices
        if choices is not None and len(choices) > 12 and value not in choices:
            from ..errors import suggest

            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{suggest(value, choices)} "
                                                 f"({len(choices)} choices: `{self.prog} --help` lists them)")
        super()._check_value(action, value)

    def _hint(self, words):
        """For the first unknown option: the option of another tool it stands for (and that this
        command lacks it), else the closest options of this command."""
        from ..errors import suggest
        from .aliases import RENAMES, TRANSLATIONS

        flags = [w.split("=", 1)[0] for w in words if w.startswith("-")]
        if not flags:
            return ""
        flag = flags[0]
        ours = RENAMES.get(flag) or TRANSLATIONS.get(flag, (None,))[0]
        if ours:
            return f" ({flag} is {ours} here, which `{self.prog.split()[-1]}` does not take)"
        options = [o for o in self._option_string_actions if o.startswith("--")]
        starting = sorted(o for o in options if o.startswith(flag))   # what prefix matching took
        if starting:
            return f"; did you mean {', '.join(starting[:3])}? (options are never abbreviated)"
        return suggest(flag, options)

    def _print_message(self, message, file=None):
        """--help text goes out under main's stream policy (argparse's own print
        swallows a failed write, and a full disk would exit 0)."""
        if file is not None and file is not sys.stdout:
            return super()._print_message(message, file)
        status = _flush(message)
        if status is not None:
            raise SystemExit(status)


def _top_help():
    width = max(len(c) for c in COMMANDS)
    lines = [f"usage: {PROG} COMMAND [options]   ({PROG} COMMAND --help for a command's options; "
             f"{PROG} --version)", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
    return "\n".join(lines) + "\n"


def version():
    from .. import __version__
    return f"{PROG} {__version__}\n"


_PARSERS = {}   # one parser per subcommand per process (`reproduce` parses hundreds of scenarios)


def _parser(name, module):
    """The subcommand's argument parser, built once (parse_args leaves it unchanged)."""
    parser = _PARSERS.get(name)
    if parser is None:
        from . import aliases, scenario

        # allow_abbrev off: --comp must not silently mean --compute-efficiency
        parser = Parser(prog=f"{PROG} {name}", description=COMMANDS[name], allow_abbrev=False)
        module.add_arguments(parser)
        aliases.register(parser)
        scenario.add_argument(parser)
        if "--format" in parser._option_string_actions:
            parser.add_argument("--full", action="store_true",
                                help="Markdown: every table whole and every cell in full (wide); the default "
                                     f"view fits 100 columns")
            parser.add_argument("--explain", action="store_true",
                                help="Markdown: print every convention after the results (default: one line)")
        _PARSERS[name] = parser
    return parser


def parse(argv):
    """argv -> (module, args) for one subcommand."""
    if not argv or argv[0] in ("-h", "--help"):
        return None, None
    if argv[0] in ("--version", "-V"):
        return "version", None
    if argv[0] == "report":   # `report COMMAND ...` = `COMMAND ... --format html`
        if len(argv) < 2 or argv[1] not in COMMANDS or argv[1] in ("report", "reproduce"):
            from ..errors import UserError
            raise UserError("report needs a command to report on: report COMMAND [options] "
                            "(e.g. report train --model llama-3.1-8b --seq 4096 --output train.html)")
        argv = argv[1:] + ["--format", "html"]
    name = argv[0]
    if name not in COMMANDS:
        from ..errors import unknown
        raise unknown("command", name, COMMANDS)
    module = importlib.import_module(f"{__name__}.{name}")
    parser = _parser(name, module)
    from . import aliases, scenario

    args = parser.parse_args(scenario.expand(name, argv[1:]))
    aliases.translate(args)
    if hasattr(args, "format"):
        from .common import output_format
        output_format(args)
    return module, args


def run(module, args):
    """The command's output text, in the Markdown view its --full asks for."""
    from ..render.table import view

    with view(getattr(args, "full", False), getattr(args, "explain", False)):
        return module.run(args)


def render(argv):
    """Run one subcommand and return its output text (used by `reproduce`)."""
    module, args = parse(argv)
    return run(module, args)


def render_formats(argv, formats):
    """{format: text} of one subcommand in each of `formats`, computed once and rendered from
    the one record (common.emit); a command that does not emit a record runs once per format."""
    module, args = parse(list(argv) + ["--format", formats[0]])
    args.formats = tuple(formats)
    out = run(module, args)
    if isinstance(out, dict):
        return out
    return {fmt: render(list(argv) + ["--format", fmt]) for fmt in formats}


def _say(message):
    """One line on stderr, written unbuffered (os.write): when stderr is closed, full or
    a broken pipe the line is lost, never the exit status; nothing is left in a buffer
    for the interpreter's final flush to fail on again (which would exit 120)."""
    data = f"{PROG}: error: {one_line(message)}\n"
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):   # closed at start (None), or not a file (StringIO)
        try:
            sys.stderr.write(data)
        except (AttributeError, OSError, ValueError):
            pass
        return
    try:
        sys.stderr.flush()
        view = memoryview(data.encode("utf-8", "backslashreplace"))
        while view:
            view = view[os.write(fd, view):]
    except (OSError, ValueError):
        pass


def _silence_stdout():
    """Point fd 1 at /dev/null so that the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


def _write_stdout(text):
    """text to stdout as UTF-8 whatever the locale (an unencodable character, such
    as an undecodable byte of a file name, is written as a backslash escape), with
    every byte checked: os.write reports a full disk or a file-size limit that a
    buffered flush can let pass after a partial write."""
    if sys.stdout is None:
        raise UserError("standard output is closed; use --output FILE")
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):   # not a file (in-process runs: a StringIO)
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    sys.stdout.flush()
    view = memoryview(text.encode("utf-8", "backslashreplace"))
    while view:
        view = view[os.write(fd, view):]


def _flush(text=""):
    """Write text to stdout under the stream policy of `main`; the exit status to
    report, or None when all went out."""
    try:
        _write_stdout(text)
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except OSError as e:
        _silence_stdout()
        _say(f"cannot write to standard output: {e.strerror or e}")
        return 2
    return None


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds like Ctrl-C, so that files being written are
    left as they were and their temporary files removed (cli/files.py)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum, frame):
    raise Terminated(signum)


def _catch_signals():
    """Turn SIGTERM and SIGHUP (what a CI runner, `kill` or a closed terminal send)
    into Terminated, unless the caller ignores them (nohup); returns what to restore.
    Uses `_signal`, the C module under `signal`: the same calls with plain-integer
    handlers, without `signal`'s enum classes (their import cost 3.6 M instructions,
    ~1 ms, on every command)."""
    import _signal as signal

    saved = []
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        try:
            if signal.getsignal(signum) == signal.SIG_DFL:
                saved.append((signum, signal.signal(signum, _on_signal)))
        except ValueError:   # not the main thread: signals stay as they are
            pass
    return saved


def _restore_signals(saved):
    import _signal as signal

    for signum, handler in saved:
        signal.signal(signum, handler)


def _collect_less():
    """One command is a short-lived process whose records form no reference cycles that
    matter: the cyclic collector is told to leave the imported modules' objects alone
    (gc.freeze) and to run a tenth as often (gen-0 threshold 7,000 for CPython's 700),
    which saves about 4% of a command's instructions and changes no output."""
    import gc

    gc.freeze()
    gc.set_threshold(7000, 10, 10)


def main(argv=None):
    """Run one command; return the exit status.

    Stream policy: a reader that stops early (broken pipe: `... | head -1`) is
    not an error: output stops quietly with the command's own status (0, or 1
    for `reproduce --check` drift). Output that cannot be written (a full disk,
    a closed stdout) is one line on stderr and status 2. A closed or broken
    stderr loses the message, never the status, and no traceback is printed.
    Ctrl-C exits 130 (128 + SIGINT), SIGTERM 143 and SIGHUP 129, without a
    traceback; files being written are left as they were and no temporary file
    is left behind (cli/files.py).
    """
    if argv is None:   # a process of its own (not a caller's main(argv))
        _collect_less()
    argv = sys.argv[1:] if argv is None else argv
    saved = _catch_signals()
    try:
        return _main(argv)
    except Terminated as e:
        return 128 + e.signum
    finally:
        _restore_signals(saved)


def console():
    """The process entry point (calc.py, the `infra-calc` script): main(), then the exit without
    tearing the interpreter down. Everything is written by then (stdout and stderr through
    os.write, files closed by cli/files.py), and freeing every object of the process one by one
    (the modules, the memo tables) cost 10-15% of a command's own instructions (parallel --tp 8:
    10.4 M of 85.3 M). Under a tracer or profiler (coverage, cProfile), or when a stream will
    not flush, the interpreter exits as usual."""
    status = main()
    monitoring = getattr(sys, "monitoring", None)   # 3.12+: coverage may trace through it
    traced = sys.gettrace() is not None or sys.getprofile() is not None or (
        monitoring is not None and any(monitoring.get_tool(i) for i in range(6)))
    if not traced:
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except (OSError, ValueError):
            pass
        else:
            os._exit(status)
    sys.exit(status)


def _main(argv):
    status = 0
    try:
        try:
            module, args = parse(argv)
        except SystemExit as e:   # --help, already written by Parser._print_message
            return e.code if isinstance(e.code, int) else 2
        if module is None:
            return _flush(_top_help()) or 0
        if module == "version":
            return _flush(version()) or 0
        text = run(module, args)
        status = getattr(args, "exit_status", 0)
        outputs = list(getattr(args, "files", ()))
        out = getattr(args, "output", None)
        if out is not None:
            outputs.append(("--output", out, text))
        if outputs:
            from .files import write_files
            write_files(outputs)
        return _flush("" if out is not None else text) or status
    except UserError as e:
        _say(str(e))
        return 2
    except RecursionError:
        _say("input nested too deeply")
        return 2
    except MemoryError:   # under a memory limit (ulimit -v, a container's cgroup)
        _say("out of memory: the inputs need more memory than this process may use "
             "(smaller sizes, or a higher memory limit)")
        return 2
    except BrokenPipeError:
        _silence_stdout()
        return status
    except KeyboardInterrupt:   # Ctrl-C: the conventional 128 + SIGINT, no traceback
        return 130
    except OSError as e:
        _say(f"{e.strerror or e}" + (f": {quote(e.filename)}" if e.filename else ""))
        return 2

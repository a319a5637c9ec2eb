"""Command-line dispatch: one module per subcommand, imported only when used."""

import argparse
import importlib
import sys

from ..errors import UserError

COMMANDS = {
    "models": "bundled models and their exact parameter counts",
    "forward": "per-operator ledger of one forward pass with roofline times",
    "decode": "TTFT and per-token time bounds of B requests on one device (or --batch-sweep)",
    "kv": "KV cache per layer type and request capacity on a device layout",
    "train": "training step on a layout: FLOPs, memory per device, step time, MFU; --search over layouts",
    "gemm": "one GEMM [M,K]x[K,N]: FLOPs, bytes by operand, intensity, ridge point, roofline per device",
    "attention": "one attention core (QK^T, softmax, PV): FLOPs, bytes, intensity, roofline per device",
    "hardware": "the bundled accelerators and their specs",
    "reproduce": "regenerate the stored results (--check: diff against them)",
    "validate": "published measurements (calculations/validation/) against our bounds; exit 1 if one beats its bound",
}

PROG = "infra-calc"


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit status 2."""

    def error(self, message):
        raise UserError(message)


def _top_help():
    width = max(len(c) for c in COMMANDS)
    lines = [f"usage: {PROG} COMMAND [options]   ({PROG} COMMAND --help for a command's options)", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
    return "\n".join(lines) + "\n"


def parse(argv):
    """argv -> (module, args) for one subcommand."""
    if not argv or argv[0] in ("-h", "--help"):
        return None, None
    name = argv[0]
    if name not in COMMANDS:
        from ..errors import unknown
        raise unknown("command", name, COMMANDS)
    module = importlib.import_module(f"{__name__}.{name}")
    parser = Parser(prog=f"{PROG} {name}", description=COMMANDS[name])
    module.add_arguments(parser)
    return module, parser.parse_args(argv[1:])


def render(argv):
    """Run one subcommand and return its output text (used by `reproduce`)."""
    module, args = parse(argv)
    return module.run(args)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        module, args = parse(argv)
        if module is None:
            sys.stdout.write(_top_help())
            return 0
        text = module.run(args)
        out = getattr(args, "output", None)
        if out:
            try:
                with open(out, "w", encoding="utf-8") as f:
                    f.write(text)
            except OSError as e:
                raise UserError(f"cannot write --output {out}: {e.strerror or e}") from None
        elif text:
            sys.stdout.write(text)
        return getattr(args, "exit_status", 0)
    except UserError as e:
        sys.stderr.write(f"{PROG}: error: {e}\n")
        return 2
    except BrokenPipeError:
        return 0
    except OSError as e:
        sys.stderr.write(f"{PROG}: error: {e.strerror or e}: {e.filename or ''}\n")
        return 2

"""`--scenario FILE.json`: a command's options kept in a file, so a deployment or training plan
can be kept, diffed and rerun.

The file is one JSON object whose keys are the command's option names, as on the command line
with or without the leading dashes (`"tp": 8`, `"--input-len": "2k"`, `"tpot_limit": "50ms"`):
a string or number is the option's value, `true` a flag that is set, `false` or `null` an
option left out, and a list an option given once per item (`"device": ["h100-sxm", "b200"]`).
An optional `"command"` names the command the plan is for and must match it. Flags on the
command line override the file: its options are read first, as if typed before them.
"""

FLAG = "--scenario"


def add_argument(parser):
    parser.add_argument(FLAG, metavar="FILE.json",
                        help="read options from a JSON object of option names and values "
                             "(command-line flags override it)")


def _split(argv):
    """(the scenario path or None, argv without it)."""
    path, rest, i = None, [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        if arg == FLAG or arg.startswith(FLAG + "="):
            from ..errors import UserError
            if path is not None:
                raise UserError(f"{FLAG} given twice; keep one")
            if arg == FLAG:
                if i + 1 == len(argv):
                    raise UserError(f"argument {FLAG}: expected one argument")
                path, i = argv[i + 1], i + 2
            else:
                path, i = arg[len(FLAG) + 1:], i + 1
            continue
        rest.append(arg)
        i += 1
    return path, rest


def options(command, data, source):
    """The argv a scenario object stands for."""
    from ..errors import UserError, quote

    if not isinstance(data, dict):
        raise UserError(f"{source}: a scenario must be a JSON object of option names and values")
    argv = []
    for key, value in data.items():
        if key == "command":
            if value != command:
                raise UserError(f"{source}: the scenario is for {quote(value)}, not {command!r}")
            continue
        flag = "--" + key.lstrip("-").replace("_", "-")
        if flag == FLAG:
            raise UserError(f"{source}: a scenario cannot name another scenario")
        items = value if isinstance(value, list) else [value]
        for item in items:
            if item is True:
                argv.append(flag)
            elif item is False or item is None:
                continue
            elif isinstance(item, (str, int, float)):
                argv += [flag, item if isinstance(item, str) else repr(item)]
            else:
                raise UserError(f"{source}: option {quote(key)} must be a string, number, boolean "
                                f"or list of them, got {quote(item)}")
    return argv


def expand(command, argv):
    """argv with the scenario file's options in front of the command line's own."""
    path, rest = _split(argv)
    if path is None:
        return argv
    from ..errors import quote
    from ..load.jsonfile import read_json

    return options(command, read_json(path, "scenario file"), quote(path)) + rest

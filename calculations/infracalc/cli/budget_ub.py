"""The UB fabric `budget` kind (ub-fabric): arguments and run.

`_ub_fabric_arguments(q)` adds the kind's options, `_ub_fabric(args)` returns its result record;
cli/budget.py lists the kinds and dispatches to them.
"""

import argparse


def _setting(text):
    """NAME=VALUE, VALUE a non-negative whole number (bytes, ns, cycles, Hz, counts)."""
    from ..analyses.ub_fabric import INPUTS

    name, _, value = text.partition("=")
    if name not in INPUTS:
        import difflib
        near = difflib.get_close_matches(name, INPUTS, 3)
        raise argparse.ArgumentTypeError(f"unknown input '{name}'" + (f"; did you mean {', '.join(near)}?" if near
                                                                       else f"; one of {', '.join(INPUTS)}"))
    if not value.isdigit() or len(value) > 15:
        raise argparse.ArgumentTypeError(f"{name} must be a whole number, got '{value}'")
    return name, int(value)


def _ub_fabric_arguments(q):
    q.add_argument("--set", type=_setting, action="append", default=[], metavar="NAME=VALUE",
                   help="override one declared input (e.g. apps_per_host=64, context_cache_bytes=1048576); "
                        "the inputs and their defaults are listed in the output")


def _ub_fabric(args):
    from ..analyses.ub_fabric import INPUTS, ub_fabric
    from ..errors import UserError

    values = {k: d for k, (d, _) in INPUTS.items()}
    values.update(args.set)
    for k in ("clock_hz", "endpoints", "apps_per_host", "setup_cores", "channel_bytes", "qp_bytes", "fpga_luts",
              "ub_initiation_interval_cycles", "roce_cycles_per_request"):
        if values[k] <= 0:
            raise UserError(f"{k} must be positive")
    if values["endpoints"] > 10**6 or values["context_cache_bytes"] > 10**15:
        raise UserError("endpoints at most 10^6 and context_cache_bytes at most 10^15")
    out = ub_fabric(values)
    return dict({"declared": [{"input": k, "value": values[k], "meaning": m} for k, (_, m) in INPUTS.items()]}, **out)

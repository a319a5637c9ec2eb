"""`validate`: every published measurement in calculations/validation/ against our bound."""

from . import common

# Exit status when a measurement beats its bound: a defect of the model, distinct from
# bad input (2) and from a crash (1, with a traceback: a bug). docs/validation.md.
BOUND_BEATEN = 3


def add_arguments(p):
    p.add_argument("--case", metavar="ID", help="one case (a file name under calculations/validation/)")
    common.add_output(p)


def run(args):
    from ..analyses.validate import validate
    from ..render import validate as render

    rec = validate(args.case)
    args.exit_status = BOUND_BEATEN if rec["failures"] else 0
    return common.emit(args, rec, render.markdown, render.csv)

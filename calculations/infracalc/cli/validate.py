"""`validate`: every published measurement in calculations/validation/ against our bound."""

from . import common


def add_arguments(p):
    p.add_argument("--case", metavar="ID", help="one case (a file name under calculations/validation/)")
    common.add_output(p)


def run(args):
    from ..analyses.validate import validate
    from ..render import validate as render

    rec = validate(args.case)
    args.exit_status = 1 if rec["failures"] else 0
    return common.emit(args, rec, render.markdown, render.csv)

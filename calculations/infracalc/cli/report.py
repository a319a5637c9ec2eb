"""`report COMMAND [options]`: that command's result as one self-contained HTML page.

`cli.parse` turns `report COMMAND ...` into `COMMAND ... --format html` before any parsing
(render/html.py draws the page), so this module only describes the command."""


def add_arguments(p):
    p.usage = "infra-calc report COMMAND [options]   (any command but reproduce; e.g. --output page.html)"


def run(args):   # reached only through a bare `report` (parse refuses it first)
    from ..errors import UserError
    raise UserError("report needs a command to report on: report COMMAND [options]")

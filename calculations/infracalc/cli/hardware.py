"""`hardware`: the bundled devices (or the ones named) and their specs."""

from . import common


def add_arguments(p):
    p.add_argument("--device", action="append", metavar="ID|DEVICE.json",
                   help="show only this device (repeatable); default: all bundled devices")
    common.add_output(p)


def run(args):
    from ..analyses.hardware import listing
    from ..load.hardware import device_ids, load_device
    from ..render import hardware as render

    ids = args.device or device_ids()
    return common.emit(args, listing([load_device(i) for i in ids]), render.markdown, render.csv)

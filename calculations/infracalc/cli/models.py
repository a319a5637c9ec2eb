"""`models`: the bundled models, or one model's architecture and tensors."""

from . import common


def add_arguments(p):
    common.add_model(p, required=False)
    common.add_output(p)


def run(args):
    from ..analyses import models
    from ..load.models import bundled_ids, load_model
    from ..render import models as render

    if args.model:
        rec = models.detail(load_model(args.model))
        return common.emit(args, rec, render.detail_markdown, render.detail_csv)
    rec = models.listing(bundled_ids(), load_model)
    return common.emit(args, rec, render.listing_markdown, render.listing_csv)

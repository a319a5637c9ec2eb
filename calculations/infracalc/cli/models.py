"""`models`: the bundled models, or one model's architecture and tensors."""

from ..errors import UserError
from . import common


def add_arguments(p):
    common.add_model(p, required=False)
    p.add_argument("--types", action="store_true",
                   help="list every supported model_type with its adapter and the bundled configs "
                        "whose parameter counts are checked against the published totals")
    common.add_output(p)


def run(args):
    from ..analyses import models
    from ..load.models import bundled_ids, load_model
    from ..render import models as render

    if args.types:
        if args.model:
            raise UserError("--types lists every model_type; it takes no --model")
        from ..analyses import model_types
        from ..load.adapters import FAMILIES, adapter_name
        from ..load.models import MODELS_DIR, bundled_types
        rec = model_types.listing(FAMILIES, adapter_name, bundled_types(), load_model,
                                  model_types.published_counts(MODELS_DIR))
        return common.emit(args, rec, render.types_markdown, render.types_csv)
    if args.model:
        rec = models.detail(load_model(args.model))
        return common.emit(args, rec, render.detail_markdown, render.detail_csv)
    rec = models.listing(bundled_ids(), load_model)
    return common.emit(args, rec, render.listing_markdown, render.listing_csv)

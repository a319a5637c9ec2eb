"""`models`: the bundled models, or one model's architecture and tensors."""

from ..errors import UserError
from . import common


def add_arguments(p):
    common.add_model(p, required=False)
    p.add_argument("--types", action="store_true",
                   help="list every supported model_type with its adapter and the bundled configs "
                        "whose parameter counts are checked against the published totals")
    p.add_argument("--summaries", action="store_true",
                   help="JSON: every bundled model's listing row with the CRC-32 of its config, "
                        "computed: the stored result results/model-summaries.json that the listing "
                        "reads a row from while the config is unchanged")
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
    from ..load.models import config_crc32
    if args.summaries:
        if args.model or args.format != "json":
            raise UserError("--summaries is the listing's stored JSON; it takes no --model and "
                            "only --format json")
        return common.emit(args, models.summaries(bundled_ids(), load_model, config_crc32),
                           None, None)
    rec = models.listing(bundled_ids(), load_model, config_crc32, _stored_summaries())
    return common.emit(args, rec, render.listing_markdown, render.listing_csv)


def _stored_summaries():
    """The stored summaries record, or None when it is missing or unreadable (every row is
    then computed)."""
    import os

    from ..load.jsonfile import read_json
    from ..paths import data_dir

    path = os.path.join(data_dir("results"), STORED_SUMMARIES)
    try:
        return read_json(path, "stored model summaries") if os.path.isfile(path) else None
    except UserError:
        return None


STORED_SUMMARIES = "model-summaries.json"   # the scenario model-summaries (results/scenarios.json)

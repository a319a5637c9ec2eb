"""The schema of a validation case file (calculations/validation/<id>.json; documented in
calculations/validation/SOURCES.md), checked before `validate` computes anything.

Every field of every object is listed here with its type and range; a field not listed
is refused (a misspelt optional field would otherwise be silently ignored), and so is a
value of the wrong type, so that a malformed or hostile case file is one line naming
the file and the field, never a traceback. A case's model is a bundled id or the file
name of a config beside the case (`<name>.config.json`): no directory part, so a case
can never read outside the corpus.
"""

import math
import os

from ..errors import UserError, quote, unknown

MAX_COUNT = 2**48   # far above any published run (devices, tokens, batch sizes)


def _positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_COUNT


def _count(what="a positive integer"):
    return (_positive_int, what)


def _non_negative_int():
    return (lambda v: v == 0 or _positive_int(v), "a non-negative integer")


def _text():
    return (lambda v: isinstance(v, str) and bool(v.strip()), "a non-empty string")


def _positive_number(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


LAYOUT_FIELDS = ("tp", "pp", "dp", "cp", "ep", "vp")
SOURCE_FIELDS = ("title", "publisher", "url_or_ref", "locator", "version_or_date")

# setup field -> (check, what it must be); which are required depends on the kind
# (analyses/validate.SETUP_REQUIRED).
SETUP_FIELDS = {
    "model": _text(), "device": _text(), "devices": _count(),
    "weight_dtype": _text(), "act_dtype": _text(), "kv_dtype": _text(),
    "input_len": _count(), "output_len": _count(),
    "batch_or_load": _text(), "scenario": _text(),
    # a serving run's published request count (a finite run: at most this many in flight)
    "requests": _count(),
    "layout": (lambda v: isinstance(v, dict), "an object of " + ", ".join(LAYOUT_FIELDS)),
    "global_batch": _count(), "micro_batch": _count(), "seq_len": _count(),
    "reserve_bytes": _non_negative_int(), "routing": _text(), "mla": _text(),
    "optimizer": _text(), "master_bytes": _count(), "grad_bytes": _count(), "recompute": _text(),
    "overlap_ep": (lambda v: isinstance(v, bool), "true or false"),
    # the row's TP communication overlap where its published recipe departs from the publisher's
    # (Megatron Bridge's NVFP4 recipes turn tp_comm_overlap off)
    "overlap_tp": (lambda v: isinstance(v, bool), "true or false"),
    # the EP dispatcher of the row's published recipe (efficiency.collective.EP_DISPATCHERS)
    "ep_dispatcher": (lambda v: v in _ep_dispatchers(), "one of alltoall, hybridep, deepep"),
    # collective cases: ranks per node, operation, S (nccl-tests' bytes), the cluster's NIC figure
    "ranks_per_node": _count(), "operation": _text(), "bytes": (_positive_int, "a positive integer (bytes)"),
    "link_bw_out_bytes_per_s": (_positive_number, "a positive number (bytes/s per direction per device)"),
    # the NCCL_ALGO the run forced (NCCL's names in lower case; efficiency.collective.NCCL_ALGOS)
    "nccl_algo": (lambda v: v in _nccl_algos(), "one of ring, tree, nvls, nvlstree, collnet"),
}


def _ep_dispatchers():
    from .efficiency.collective import EP_DISPATCHERS
    return EP_DISPATCHERS


def _nccl_algos():
    from .efficiency.collective import NCCL_ALGOS
    return NCCL_ALGOS


def _fail(name, field, what, value):
    return UserError(f"{name}: field {field!r} must be {what}, got {quote(value, 60)}")


def _fields(name, prefix, obj, allowed):
    for key in obj:
        if key not in allowed:
            raise UserError(f"{name}: {unknown(prefix + ' field', key, allowed)}")


def check(data, name, directory, kinds, required):
    """Refuse (UserError) a case that is not of the schema. `kinds`: the allowed kinds;
    `required`: kind -> its required setup fields."""
    if not isinstance(data, dict):
        raise UserError(f"{name}: a validation case must be a JSON object")
    for key in ("id", "kind", "source", "setup", "measured", "assumptions", "exemption"):
        if key not in data:
            raise UserError(f"{name}: missing required field '{key}'")
    _fields(name, "case", data, ("id", "kind", "source", "setup", "measured", "assumptions", "exemption"))
    if not isinstance(data["id"], str) or data["id"] + ".json" != name:
        raise UserError(f"{name}: id {quote(data['id'], 60)} must equal the file name without .json")
    if not isinstance(data["kind"], str) or data["kind"] not in kinds:
        raise UserError(f"{name}: {unknown('kind', str(data['kind']), kinds)}")
    source = data["source"]
    if not isinstance(source, dict) or not all(isinstance(v, str) for v in source.values()):
        raise UserError(f"{name}: 'source' must be an object of strings ({', '.join(SOURCE_FIELDS)})")
    _fields(name, "source", source, SOURCE_FIELDS)
    setup = data["setup"]
    if not isinstance(setup, dict):
        raise _fail(name, "setup", "an object", setup)
    _fields(name, "setup", setup, SETUP_FIELDS)
    for key in required[data["kind"]]:
        if key not in setup:
            raise UserError(f"{name}: missing required field 'setup.{key}'")
    for key, value in setup.items():
        ok, what = SETUP_FIELDS[key]
        if not ok(value):
            raise _fail(name, f"setup.{key}", what, value)
    for key, value in setup.get("layout", {}).items():
        if key not in LAYOUT_FIELDS:
            raise UserError(f"{name}: {unknown('setup.layout field', key, LAYOUT_FIELDS)}")
        if not _positive_int(value):
            raise _fail(name, f"setup.layout.{key}", "a positive integer", value)
    model = setup.get("model", "")
    if os.sep in model or "/" in model or model in (".", ".."):
        raise UserError(f"{name}: 'setup.model' {quote(model, 60)} must be a bundled id or the file "
                        "name of a config beside the case (no directory part)")
    if model.endswith(".json") and not os.path.isfile(os.path.join(directory, model)):
        raise UserError(f"{name}: 'setup.model' {quote(model, 60)} is not a file beside the case")
    if os.sep in setup["device"] or "/" in setup["device"] or setup["device"].endswith(".json"):
        raise UserError(f"{name}: 'setup.device' must be a bundled device id, got {quote(setup['device'], 60)}")
    measured = data["measured"]
    if not isinstance(measured, dict):
        raise _fail(name, "measured", "an object with 'value' and 'unit'", measured)
    _fields(name, "measured", measured, ("value", "unit"))
    if not _positive_number(measured.get("value")):
        raise UserError(f"{name}: 'measured.value' must be a positive number")
    if not isinstance(measured.get("unit"), str):
        raise _fail(name, "measured.unit", "a string", measured.get("unit"))
    assumptions = data["assumptions"]
    if not isinstance(assumptions, list) or not all(isinstance(a, str) for a in assumptions):
        raise UserError(f"{name}: 'assumptions' must be a list of strings")
    ex = data["exemption"]
    if ex is not None and not (isinstance(ex, dict) and set(ex) == {"reason"}
                               and isinstance(ex["reason"], str) and ex["reason"].strip()):
        raise UserError(f"{name}: 'exemption' must be null or {{\"reason\": \"...\"}} with a reason")

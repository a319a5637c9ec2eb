"""Device JSON -> a frozen Device (calculations/hardware/<id>.json)."""

import os
from ..record import Record

from ..errors import UserError, quote, unknown
from ..memo import remember
from ..paths import data_dir
from .jsonfile import read_json, regular_file

# Keys of a device file's peak tables: the formats dtypes.DTYPES compute at, and the
# non-tensor (vector) peaks the roofline uses, FP32 preferred.
PEAK_FORMATS = ("fp32", "bf16", "fp16", "fp8", "int8", "fp4")
VECTOR_FORMATS = ("fp32", "bf16")

HARDWARE_DIR = data_dir("hardware")


TOPOLOGIES = ("switch", "mesh", "torus")


class Link(Record):
    """One interconnect tier of a device as its JSON states it. A field the data lacks (not
    published) is None (0 for counts); `comm.links` says which stated default replaces it."""
    name: str
    bytes_per_s: int          # one direction, per device
    domain_size: int = 1
    topology: str = ""        # switch | mesh | torus; "" = not stated
    links_per_device: int = 0
    bytes_per_s_per_link: int = 0   # one direction
    wraparound_axis: int = 0  # torus: axis lengths that are multiples of this have wraparound
    in_network_reduce: bool = False
    in_network_efficiency: float = None
    in_network_alpha_s: float = None
    alpha_s: float = None     # per-step latency (seconds)
    nics_per_device: int = 0  # scale-out only


class Device(Record):
    id: str
    name: str
    vendor: str
    matrix_flops_per_s: tuple   # ((format, dense FLOP/s or None = exists, not published), ...)
    vector_flops_per_s: int     # non-tensor peak (FP32, else BF16); 0 when none is published
    vector_peak_kind: str       # "fp32", "bf16" or "" (none published)
    memory_bytes: int           # the convention's capacity (see MEMORY_CONVENTIONS)
    memory_bandwidth_bytes_per_s: int
    scale_up: Link = None
    scale_out: Link = None
    host_link: Link = None    # the device's link to host memory (PCIe, NVLink-C2C); None: unknown
    tdp_watts: int = 0
    memory_label_bytes: int = 0   # the vendor's label (80 GB -> 80e9 B)
    memory_physical_bytes: int = 0   # the largest capacity a server can allocate (file's memory_bytes)
    memory_convention: str = "physical"
    source: str = ""          # how messages name it: the bundled id, or the quoted path given

    def peak(self, dtype):
        """Dense matrix FLOP/s at a format's peak. None when the device file lists
        the format with a null peak (the precision exists but no figure is
        published): the compute side is then unknown, never a stand-in figure.
        A format the device lacks, or a storage-only format, is a UserError."""
        key = dtype.peak
        peaks = dict(self.matrix_flops_per_s)
        if key in peaks:
            return peaks[key]
        have = ", ".join(peaks)
        what = f"{dtype.name} matrix peak" if key else f"matrix peak for {dtype.name} (storage-only format)"
        raise UserError(f"device {self.source or self.id} has no {what}; it has: {have}")

    def ridge_points(self):
        """((format, peak / bandwidth in FLOP per byte), ...) for every published peak:
        the arithmetic intensity above which a kernel at that peak is compute-bound."""
        bw = self.memory_bandwidth_bytes_per_s
        return tuple((k, None if v is None else v / bw) for k, v in self.matrix_flops_per_s)


# Names of a part family that mean one bundled part (each output names the part it used:
# "NVIDIA H100 SXM5 80GB (`h100-sxm`)"). The other H100 parts are h100-pcie and h100-nvl.
DEVICE_ALIASES = {"h100": "h100-sxm", "h100-sxm5": "h100-sxm", "a100": "a100-sxm-80gb",
                  "a100-80gb": "a100-sxm-80gb", "a100-sxm": "a100-sxm-80gb", "v100": "v100-sxm2"}


def device_ids():
    return sorted(f[:-5] for f in os.listdir(HARDWARE_DIR) if f.endswith(".json"))


# Which capacity a Device's memory_bytes holds (--memory-convention):
# physical: the largest capacity a server can allocate: the driver-reported total where a
#   public report exists (H100 SXM: nvidia-smi 81,559 MiB), else the binary capacity of the
#   label (80 GB of HBM -> 80 GiB), which bounds the driver's figure from above;
# label: the vendor's label read as 10^9 bytes (80 GB -> 80e9), as the book's tables use it.
MEMORY_CONVENTIONS = ("physical", "label")

MAX_FIGURE = 10**30   # far above any device figure; keeps rates times efficiencies finite floats


def _int(data, key, source, required=True):
    value = data.get(key)
    if value is None:
        if required:
            raise UserError(f"{source}: missing required field '{key}' (a positive integer)")
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_FIGURE:
        raise UserError(f"{source}: field '{key}' must be a positive integer up to 10^30, got {quote(value)}")
    return value


def _text(data, key, default, source):
    """A string field (name, vendor, id); absent: the default."""
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, str) or not value:
        raise UserError(f"{source}: field '{key}' must be a non-empty string, got {quote(value)}")
    return value


def _known_keys(table, choices, source):
    """Every key of a peak table names a format the tool knows (no silent skip)."""
    for key in table:
        if key not in choices:
            raise UserError(f"{source}: {unknown('format', key, choices)}")


def _fraction(data, key, source):
    """An optional number in (0, 1]: a latency in seconds or an efficiency; absent: None."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise UserError(f"{source}: field '{key}' must be a number in (0, 1], got {quote(value)}")
    return float(value)


def _count(data, key, source):
    """An optional positive integer (a count or a rate); absent: 0."""
    return _int(data, key, source, required=False)


def _required(data, key, source):
    return _int(data, key, source)


def _topology(data, key, source):
    value = data.get(key, "")
    if not isinstance(value, str):
        raise UserError(f"{source}: field '{key}' must be a string ({', '.join(TOPOLOGIES)}), "
                        f"got {quote(value)}")
    if value and value not in TOPOLOGIES:
        raise UserError(f"{source}: {unknown('topology', value, TOPOLOGIES)}")
    return value


def _flag(data, key, source):
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise UserError(f"{source}: field '{key}' must be true or false, got {quote(value)}")
    return value


def _name(data, key, source):
    return _text(data, key, None, source)


# The one schema of a link tier (scale_up, scale_out): every field the JSON may hold,
# with its reader (type and range). A field not listed is refused, never skipped.
LINK_SCHEMA = {
    "name": _name,                                  # non-empty string; default: the tier's key
    "bytes_per_s_per_direction": _required,         # positive integer, one direction, per device
    "domain_size": _count,                          # positive integer; default 1
    "topology": _topology,                          # switch | mesh | torus
    "links_per_device": _count,
    "bytes_per_s_per_link": _count,
    "wraparound_axis": _count,
    "in_network_reduce": _flag,
    "in_network_efficiency": _fraction,             # (0, 1]; required with in_network_reduce
    "in_network_alpha_s": _fraction,                # seconds in (0, 1]; required with it too
    "alpha_s": _fraction,
    "nics_per_device": _count,
}
# What in-network reduction needs (its cost divides by the efficiency, adds the latency).
IN_NETWORK_NEEDS = ("in_network_efficiency", "in_network_alpha_s")


def _link(data, key, source):
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise UserError(f"{source}: field '{key}' must be an object or null, got {quote(value)}")
    where = f"{source}:{key}"
    for field in value:
        if field not in LINK_SCHEMA:
            raise UserError(f"{where}: {unknown('link field', field, LINK_SCHEMA)}")
    fields = {field: read(value, field, where) for field, read in LINK_SCHEMA.items()}
    if fields["in_network_reduce"]:
        for field in IN_NETWORK_NEEDS:
            if fields[field] is None:
                raise UserError(f"{where}: 'in_network_reduce' is true but field '{field}' is missing "
                                "(a number in (0, 1])")
    fields["name"] = fields["name"] or key
    fields["domain_size"] = fields["domain_size"] or 1
    fields["bytes_per_s"] = fields.pop("bytes_per_s_per_direction")
    return Link(**fields)


# Every top-level field a device file may hold (each read and checked below; the links by
# LINK_SCHEMA); any other is refused, so that a misspelt field is never silently ignored.
DEVICE_FIELDS = ("id", "name", "vendor", "matrix_flops_per_s", "vector_flops_per_s", "memory_bytes",
                 "memory_label_bytes", "memory_bandwidth_bytes_per_s", "scale_up", "scale_out",
                 "host_link", "tdp_watts", "sources")

_CACHE = {}
_CACHE_KEPT = 1 << 8   # devices kept (memo.remember)


def load_device(spec, memory_convention="physical"):
    """A device id or a path to a device JSON -> Device, its memory_bytes per the
    memory convention (MEMORY_CONVENTIONS).

    Messages about a device file name the path the user gave (not the file's
    `id`, which may be wrong or missing); a bundled device is named by its id."""
    if memory_convention not in MEMORY_CONVENTIONS:
        raise unknown("memory convention", memory_convention, MEMORY_CONVENTIONS)
    dev = _load(spec)
    if memory_convention == "label":
        dev = dev.replace(memory_bytes=dev.memory_label_bytes, memory_convention="label")
    return dev


def _load(spec):
    is_path = spec.endswith(".json") or os.sep in spec
    key = os.path.abspath(spec) if is_path else spec   # a relative path: another file elsewhere
    if key in _CACHE:
        return _CACHE[key]
    if is_path:
        regular_file(spec, "device file")
        path, source = spec, quote(spec)
    else:
        path, source = os.path.join(HARDWARE_DIR, spec + ".json"), spec
        if not os.path.isfile(path):
            alias = DEVICE_ALIASES.get(spec.lower(), spec.lower())
            path, source = os.path.join(HARDWARE_DIR, alias + ".json"), alias
            if not os.path.isfile(path):
                raise unknown("device", spec, device_ids())
    data = read_json(path, "device file")
    if not isinstance(data, dict):
        raise UserError(f"{source}: device file must be a JSON object")
    for field in data:
        if field not in DEVICE_FIELDS:
            raise UserError(f"{source}: {unknown('device field', field, DEVICE_FIELDS)}")
    if not isinstance(data.get("sources", {}), dict):
        raise UserError(f"{source}: field 'sources' must be an object (field -> its source)")
    peaks = data.get("matrix_flops_per_s")
    if not isinstance(peaks, dict) or not peaks:
        raise UserError(f"{source}: field 'matrix_flops_per_s' must be an object with at least one "
                        f"peak ({', '.join(PEAK_FORMATS)})")
    vector = data.get("vector_flops_per_s")
    if not isinstance(vector, dict):
        raise UserError(f"{source}: missing required field 'vector_flops_per_s' (an object, may be empty)")
    _known_keys(peaks, PEAK_FORMATS, f"{source}:matrix_flops_per_s")
    _known_keys(vector, VECTOR_FORMATS, f"{source}:vector_flops_per_s")
    physical = _int(data, "memory_bytes", source)
    vector_kind = next((k for k in VECTOR_FORMATS if k in vector), "")
    dev_id = _text(data, "id", spec, source)
    dev = Device(
        id=dev_id, name=_text(data, "name", dev_id, source), vendor=_text(data, "vendor", "", source),
        matrix_flops_per_s=tuple((k, None if peaks[k] is None else _int(peaks, k, f"{source}:matrix_flops_per_s"))
                                 for k in peaks),
        vector_flops_per_s=_int(vector, vector_kind, f"{source}:vector_flops_per_s") if vector_kind else 0,
        vector_peak_kind=vector_kind,
        memory_bytes=physical, memory_physical_bytes=physical,
        memory_label_bytes=_int(data, "memory_label_bytes", source, required=False) or physical,
        memory_bandwidth_bytes_per_s=_int(data, "memory_bandwidth_bytes_per_s", source),
        scale_up=_link(data, "scale_up", source), scale_out=_link(data, "scale_out", source),
        host_link=_link(data, "host_link", source), tdp_watts=_int(data, "tdp_watts", source, required=False), source=source)
    return remember(_CACHE, _CACHE_KEPT, key, dev)

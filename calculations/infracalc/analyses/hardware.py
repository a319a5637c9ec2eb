"""`hardware`: device records for listing."""

from .records import SCHEMA_VERSION


def _link(link, scale_up):
    """A link's figures; a field the device data does not publish is None."""
    if link is None:
        return None
    out = {"name": link.name, "bytes_per_s_per_direction": link.bytes_per_s}
    if scale_up:
        out.update({
            "domain_size": link.domain_size,
            "topology": link.topology or None,
            "links_per_device": link.links_per_device or None,
            "bytes_per_s_per_link": link.bytes_per_s_per_link or None,
            "wraparound_axis": link.wraparound_axis or None,
            "in_network_reduce": link.in_network_reduce,
            "in_network_efficiency": link.in_network_efficiency,
            "in_network_alpha_s": link.in_network_alpha_s})
    else:
        out["nics_per_device"] = link.nics_per_device or None
    out["alpha_s"] = link.alpha_s
    return out


def device_summary(d):
    peaks = dict(d.matrix_flops_per_s)
    return {
        "id": d.id,
        "name": d.name,
        "vendor": d.vendor,
        "matrix_flops_per_s": peaks,
        "ridge_point_flops_per_byte": dict(d.ridge_points()),
        "vector_flops_per_s": d.vector_flops_per_s or None,
        "vector_peak_kind": d.vector_peak_kind or None,
        "memory_bytes": d.memory_bytes,
        "memory_label_bytes": d.memory_label_bytes,
        "memory_bandwidth_bytes_per_s": d.memory_bandwidth_bytes_per_s,
        "scale_up": _link(d.scale_up, True),
        "scale_out": _link(d.scale_out, False),
        "tdp_watts": d.tdp_watts or None,
    }


def listing(devices):
    return {"schema_version": SCHEMA_VERSION, "command": "hardware",
            "devices": [device_summary(d) for d in devices]}

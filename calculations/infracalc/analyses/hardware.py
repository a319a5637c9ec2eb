"""`hardware`: device records for listing."""

from .records import SCHEMA_VERSION


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
        "memory_bandwidth_bytes_per_s": d.memory_bandwidth_bytes_per_s,
        "scale_up": None if d.scale_up is None else {
            "name": d.scale_up.name, "bytes_per_s_per_direction": d.scale_up.bytes_per_s,
            "domain_size": d.scale_up.domain_size},
        "scale_out": None if d.scale_out is None else {
            "name": d.scale_out.name, "bytes_per_s_per_direction": d.scale_out.bytes_per_s},
        "tdp_watts": d.tdp_watts or None,
    }


def listing(devices):
    return {"schema_version": SCHEMA_VERSION, "command": "hardware",
            "devices": [device_summary(d) for d in devices]}

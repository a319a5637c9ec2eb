"""Logical checkpoint reshard (`budget reshard`): which byte ranges of which source files each new rank
reads when a checkpoint saved over S ranks is loaded by T ranks (the book's chapter-10 reshard plan).

The tensor is one gate projection (rows I x columns h, a routed expert's in an MoE), stored row-major,
one raw file per state and source rank: BF16 weights (2 B per element) and, unless weights only,
FP32 master weights, Adam m and v (4 B each): 14 B per parameter. A layout splits the tensor into
contiguous ranges over P ranks by quotient and remainder, the first (n mod P) ranks one unit more:
`rows` in whole rows (units of h elements), `flat` in single elements (a range may cross rows).

    source range s = [a_s, b_s), target range t = [c_t, d_t)  ->  one read per non-empty
    [max(a_s, c_t), min(b_s, d_t)): source file offset (start - a_s) x bytes, target buffer offset
    (start - c_t) x bytes, length (end - start) x bytes; its first and last (row, column) are
    divmod(start, h) and divmod(end - 1, h).

Every element is read exactly once: requested bytes = logical bytes = destination bytes. No
container header, padding, alignment or I/O time: a layout plan, not a restore measurement.
"""

from .gradient_cast import gate_shape

STATES = (("weight_bf16", 2), ("master_fp32", 4), ("adam_m_fp32", 4), ("adam_v_fp32", 4))


def ranges(rows, columns, parts, layout):
    """[(start, end)] element ranges of `parts` ranks (module docstring)."""
    from ..errors import UserError

    count, unit = (rows, columns) if layout == "rows" else (rows * columns, 1)
    if parts > count:
        raise UserError(f"{parts} ranks exceed the {count:,} {'rows' if layout == 'rows' else 'elements'} to split")
    q, r = divmod(count, parts)
    out, start = [], 0
    for rank in range(parts):
        end = start + (q + (rank < r)) * unit
        out.append((start, end))
        start = end
    return out


def reshard(arch, *, source_parts, target_parts, source_layout="rows", target_layout="rows", weights_only=False):
    rows, columns = gate_shape(arch)
    sources = ranges(rows, columns, source_parts, source_layout)
    targets = ranges(rows, columns, target_parts, target_layout)
    states = STATES[:1] if weights_only else STATES
    pieces, shards = [], []
    for state, width in states:
        shards.append({"state": state, "bytes_per_element": width,
                       "source_shard_bytes": [(b - a) * width for a, b in sources],
                       "target_shard_bytes": [(d - c) * width for c, d in targets]})
        for t, (c, d) in enumerate(targets):
            for s, (a, b) in enumerate(sources):
                start, end = max(a, c), min(b, d)
                if start < end:
                    pieces.append({"source_file": f"{state}.rank{s}.bin", "target_rank": t, "element_start": start,
                                   "element_end": end, "first_coordinate": list(divmod(start, columns)),
                                   "last_coordinate": list(divmod(end - 1, columns)),
                                   "source_offset_bytes": (start - a) * width,
                                   "target_offset_bytes": (start - c) * width, "length_bytes": (end - start) * width})
    per_param = sum(w for _, w in states)
    return {"model": arch.id, "gate_shape": [rows, columns], "parameters": rows * columns,
            "bytes_per_parameter": per_param, "logical_bytes": rows * columns * per_param,
            "requested_read_bytes": sum(p["length_bytes"] for p in pieces),
            "read_ranges": len(pieces), "source_files": source_parts * len(states),
            "target_payload_bytes": [sum(sh["target_shard_bytes"][t] for sh in shards) for t in range(target_parts)],
            "shards": shards, "reads": pieces}


RESHARD_CONVENTIONS = [
    "One gate projection (I x h, a routed expert's in an MoE), row-major, one raw file per state and source rank: "
    "BF16 weights 2 B and (unless --weights-only) FP32 master, Adam m and v 4 B each, 14 B per parameter. Ranges by "
    "quotient and remainder, the first (n mod P) ranks one unit more: rows = whole rows, flat = single elements.",
    "One contiguous read per non-empty intersection of a source and a target range, with its offset in the source "
    "file and in the target buffer; every element is read once. No header, padding, alignment or I/O time.",
]

"""Routing replay metadata (`budget routing-metadata`): the bytes a trainer must store and move to
replay the inference engine's expert choices (the book's chapter-10 routing-metadata budget).

For T recorded token positions of a model with L_moe routed MoE layers (dense layers and shared
experts choose nothing; DeepSeek-V4's hash-routed layers do record their ids) and top-k experts,
the routed ids form a [T, L_moe, k] tensor of entries E = T L_moe k, each stored in a whole-byte
encoding that must hold the largest id (uint8 up to 255, uint16 up to 65,535, int32 up to 2^31 - 1):

    ids = E x bytes per id;   payload = header + T x identity + ceil(T / 8) + ids

with a declared stream header (default 128 B) and per-token identity fields (default 24 B:
sequence id, position, weight version, 8 B each) and a validity bitset of one bit per position.
Retained copies multiply the stored bytes only; the transport needs payload / T x token rate bytes
per second, strictly below the declared bandwidth to have slack; one payload takes payload /
bandwidth. The expert geometry is the config's; the layout is a declared teaching format, not a
framework's.
"""

from fractions import Fraction

from ..errors import UserError

ENCODINGS = {"uint8": (1, 255), "uint16": (2, 65535), "int32": (4, 2**31 - 1)}


def moe_geometry(arch):
    """(MoE layer indices, routed experts, top-k, hash-routed layer count, shared expert width)."""
    from ..blocks.moe import MoE

    layers, blocks = [], []
    for i, layer in enumerate(arch.layers):
        moe = [b for b in layer.blocks if isinstance(b, MoE)]
        if moe:
            layers.append(i)
            blocks.append(moe[0])
    if not blocks:
        raise UserError(f"{arch.id} has no routed MoE layer: nothing to replay")
    experts, top_k = {b.experts for b in blocks}, {b.top_k for b in blocks}
    if len(experts) > 1 or len(top_k) > 1:
        raise UserError(f"{arch.id}'s MoE layers differ in experts or top-k: one id tensor cannot hold them")
    return layers, experts.pop(), top_k.pop(), sum(1 for b in blocks if b.hash_vocab), blocks[0].shared_inter


def routing_metadata(arch, *, tokens, encoding="uint16", token_rate, retained=1, bandwidth, header_bytes=128,
                     identity_bytes=24):
    layers, experts, top_k, hashed, shared = moe_geometry(arch)
    width, largest = ENCODINGS[encoding]
    if experts - 1 > largest:
        fitting = [e for e, (_, top) in ENCODINGS.items() if experts - 1 <= top]
        raise UserError(f"{encoding} holds ids up to {largest:,}; {arch.id} has {experts} experts "
                        f"(choose {' or '.join(fitting)})")
    entries = tokens * len(layers) * top_k
    ids = entries * width
    identity = tokens * identity_bytes
    bitset = (tokens + 7) // 8
    payload = header_bytes + identity + bitset + ids
    per_token = Fraction(payload, tokens)
    required = per_token * token_rate
    return {
        "model": arch.id, "moe_layers": len(layers), "moe_layer_ids": layers, "routed_experts": experts,
        "top_k": top_k, "dense_layers": len(arch.layers) - len(layers), "hash_routed_layers": hashed,
        "shared_expert_inter": shared, "id_entries": entries, "routed_id_bytes": ids,
        "token_identity_bytes": identity, "validity_bitset_bytes": bitset, "header_bytes": header_bytes,
        "payload_bytes": payload, "minimum_bits_per_id": (experts - 1).bit_length(),
        "retained_bytes": retained * payload, "bytes_per_token_exact": str(per_token),
        "required_bytes_per_s_exact": str(required), "transport_has_slack": required < bandwidth,
        "one_payload_s_exact": str(Fraction(payload, bandwidth)),
        "encodings": [{"encoding": name, "bytes_per_id": size, "largest_id": top, "holds_all_experts": experts - 1 <= top,
                       "routed_id_bytes": entries * size if experts - 1 <= top else None}
                      for name, (size, top) in ENCODINGS.items()],
    }


ROUTING_METADATA_CONVENTIONS = [
    "Routed ids [T, MoE layers, top-k] of the config's geometry (dense layers and shared experts choose nothing; "
    "hash-routed layers count), whole-byte encodings (uint8 <= 255, uint16 <= 65,535, int32 <= 2^31 - 1); payload = "
    "header + T x identity + ceil(T/8) validity bits + ids, with a declared header (128 B) and identity fields "
    "(24 B per token: sequence id, position, weight version). A declared teaching layout, not a framework's format.",
    "Retained copies multiply storage only; transport needs payload / T x token rate, with slack only when strictly "
    "below the declared bandwidth; one payload takes payload / bandwidth. No scores, probabilities or KV included.",
]

"""Capacity arithmetic on one device: the workspace reserve, the room left for caches beside
the weights, how many requests fit in it, and which pipeline stage binds (pure integers; the
layout library and analyses/memory both use them).

The reserve covers activations, the CUDA context, allocator slack and fragmentation.
Default: 10% of device memory, mirroring vLLM's default gpu_memory_utilization of 0.9; it is
an explicit input wherever it is used."""


def default_reserve(memory_bytes):
    """Workspace reserve in bytes: 10% of capacity, rounded down."""
    return memory_bytes // 10


def reserve_of(memory_bytes, reserve_bytes=None):
    """The workspace reserve: `reserve_bytes` when given, else the default."""
    return default_reserve(memory_bytes) if reserve_bytes is None else reserve_bytes


def cache_room(memory_bytes, weight_bytes, reserve_bytes=None):
    """Room for caches on one device: memory - weights - reserve (the default
    reserve when None); negative when weights and reserve alone do not fit."""
    return memory_bytes - weight_bytes - reserve_of(memory_bytes, reserve_bytes)


def requests_in(room_bytes, per_request):
    """Requests that fit in the room: floor(room / per request); 0 when the
    room is negative, None when a request keeps no cache (memory does not bound
    the batch)."""
    if room_bytes < 0:
        return 0
    return room_bytes // per_request if per_request else None


def binding_stage(left, fits=None):
    """Index of the binding (fullest) stage: the fewest requests fit (`fits[i]`;
    None, unbounded, ranks last), then the least memory left (`left[i]`, at that
    count); ties: the first stage."""
    if fits is None:
        return min(range(len(left)), key=left.__getitem__)
    return min(range(len(left)), key=lambda i: (fits[i] is None, fits[i] or 0, left[i]))

"""FFN weights kept in host memory and streamed over the host link before each use (the book's
chapter-8 `weight-offload` group).

The FFN weights of the chosen layers (w bytes each: the layer's MLP or MoE tensors in the
weight format) live on the host; the device keeps S slots of w bytes. Each pass copies every
offloaded layer's weights in layer order over one host-to-device link (copy = w / bandwidth)
while the device runs its layers one after the other (t per layer). A copy starts when the
link is free and, from the (S+1)-th copy on, when the layer that used its slot S copies earlier
has finished; a layer starts when the one before it has finished and, if offloaded, when its
copy has landed. With copies c_j issued in order and u_j the layer using copy j:

    copy_start_j = max(copy_end_{j-1}, end(u_{j-S}))       (j >= S; else copy_end_{j-1})
    start(layer) = max(end(layer - 1), copy_end_j)          (its own copy j, if offloaded)

Every figure is exact (rationals of ns). The device saves (offloaded layers - S) w bytes; a
pass moves (offloaded layers) w bytes over the link; the exposed wait is the finish minus
passes x layers x t. The prefetch depth that hides the copies is the fewest slots with no
exposed wait (none when even one slot per offloaded layer leaves one).
"""

from fractions import Fraction

from ...errors import UserError
from ...summation import plain_sum

OFFLOAD_CONVENTION = (
    "Weight offload: the FFN weights of the offloaded layers (w bytes each) live on the host; S device "
    "slots; copies in layer order over one host link (w / bandwidth each), copy j waiting for the link "
    "and for the layer that used its slot S copies earlier; layers in order, t each, an offloaded one "
    "waiting for its copy; every pass copies again; saved = (layers offloaded - S) w, exposed wait = "
    "finish - passes x layers x t, exact rationals of ns.")


def ffn_bytes(arch, w, layer):
    """Bytes of one layer's FFN (its MLP or MoE block's tensors) in the weight format."""
    for block in arch.layers[layer].blocks:
        if type(block).__name__ in ("GatedMLP", "GPTMLP", "MoE"):
            return plain_sum(w.weight_bytes(t) for t in block.tensors())
    raise UserError(f"layer {layer} of {arch.id} has no FFN block to offload")


def schedule(layers, offloaded, slots, passes, layer_ns, copy_ns):
    """(finish ns, [(pass, layer, slot, copy start, copy end, use start, use end)])."""
    gpu = Fraction(0)
    link = Fraction(0)
    uses = []     # end of the layer using each copy, in copy order
    rows = []
    for p in range(passes):
        for layer in range(layers):
            start = gpu
            if layer in offloaded:
                j = len(uses)
                c0 = max(link, uses[j - slots]) if j >= slots else link
                link = c0 + copy_ns
                start = max(start, link)
                uses.append(start + layer_ns)
                rows.append((p, layer, j % slots, c0, link, start, start + layer_ns))
            gpu = start + layer_ns
    return gpu, rows


def plan(arch, w, offloaded, slots, passes, layer_ns, bandwidth):
    """The offload record: bytes, the schedule, the exposed wait and the depth that hides it."""
    n = len(arch.layers)
    if not offloaded or max(offloaded) >= n or len(set(offloaded)) != len(offloaded):
        raise UserError(f"--offload-ffn-layers must name distinct layers in 0..{n - 1}")
    sizes = {ffn_bytes(arch, w, layer) for layer in offloaded}
    if len(sizes) != 1:
        raise UserError("the offloaded layers' FFNs differ in size; slots of one size need equal layers")
    group = sizes.pop()
    if slots > len(offloaded):
        raise UserError(f"--offload-slots {slots} exceeds the {len(offloaded)} offloaded layers")
    copy_ns = Fraction(group * 10**9) / Fraction(bandwidth)
    layer_ns = Fraction(layer_ns)
    done = set(offloaded)
    finish, rows = schedule(n, done, slots, passes, layer_ns, copy_ns)
    compute = passes * n * layer_ns
    hide = next((s for s in range(1, len(offloaded) + 1)
                 if schedule(n, done, s, passes, layer_ns, copy_ns)[0] == compute), None)
    return {"offloaded_layers": sorted(offloaded), "ffn_bytes_per_layer": group,
            "host_bytes": len(offloaded) * group, "slot_bytes": slots * group,
            "device_bytes_saved": (len(offloaded) - slots) * group,
            "link_bytes_per_pass": len(offloaded) * group, "copy_ns": copy_ns,
            "link_ns_per_pass": copy_ns * len(offloaded), "layer_ns": layer_ns,
            "compute_ns": compute, "finish_ns": finish, "exposed_wait_ns": finish - compute,
            "slots_that_hide": hide,
            "copies": [{"pass": p, "layer": layer, "slot": s, "copy_start_ns": c0, "copy_end_ns": c1,
                        "use_start_ns": u0, "use_end_ns": u1} for p, layer, s, c0, c1, u0, u1 in rows]}


KV_OFFLOAD_CONVENTION = (
    "KV offload: a fraction f of every request's cache lives in host memory and is read over the host "
    "link at each decode step (batch B at the middle history P + floor((G - 1) / 2)); the step's lower "
    "bound is max(matrix FLOPs / matrix peak, vector FLOPs / vector peak, (weights + (1 - f) KV read + "
    "KV written) / memory bandwidth, f KV read / link bandwidth), the link and the device overlapped; "
    "the device holds (1 - f) of each request's cache at P + G - 1 tokens, so floor(cache room / "
    "((1 - f) x that)) requests fit (all of them on the host at f = 1).")


def kv_step(totals, f, r, link_bw):
    """(step lower bound s, host bytes, link s) of one decode step with a fraction f of the KV
    read from the host; `totals` = (matrix FLOPs, vector FLOPs, weights read, KV read, KV written)."""
    mf, vf, wr, kr, kw = totals
    host = f * kr
    link = host / link_bw
    return max(r.compute_s(mf, 0), r.compute_s(0, vf), (wr + kr - host + kw) / r.bytes_per_s, link), host, link

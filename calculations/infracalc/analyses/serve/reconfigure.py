"""TP/EP reconfiguration: the bytes each rank must receive to move a quiescent serving group from one
TP x EP layout to another, their time over declared links, the memory held during the move, and
the payback (the book's chapter-9 reconfiguration ledger).

State. Every tensor of the checkpoint, the cache of `batch` requests of `history` tokens and a flat
auxiliary state of A bytes, each as intervals on one invariant sharding axis (other axes folded
into the unit bytes u of one index of that axis):

- embedding and output head rows (vocabulary), q/k/v and gate/up rows, o/down columns: TP rank t
  of T holds [t n / T, (t + 1) n / T) of the axis of length n; k/v by whole KV heads: with
  q = H / T query heads per rank and g = H / H_kv, rank t holds heads [t q // g, ((t + 1) q - 1) // g
  + 1) (a KV head replicates when T > H_kv);
- the KV cache: the same KV-head range, u = 2 (K and V) * b_kv * layers * batch * history * head_dim;
- routed experts: EP rank e of E_p holds the contiguous quotient/remainder range of expert ids
  [e Q + min(e, R), (e + 1) Q + min(e + 1, R)) with Q, R = divmod(experts, E_p), each expert split
  over TP as above; everything else (norms, router) and the KV cache replicate over EP;
- the auxiliary state: device i of N holds [i Q + min(i, R), ...) with Q, R = divmod(A, N).

Devices are named; layout rank (e, t) is device e T + t (EP-major). The plan: every target
interval is cut at the source owners' boundaries; each piece is taken from the target device itself
if it already holds it (a local copy: it still writes a new buffer), else from the
lexicographically first source device that holds it (direct unicast, not an optimal schedule).
Network bytes are the non-local pieces; S_d and R_d the bytes device d sends and receives.

Time over the links (lower bound, every rate declared): T_move = max(sum_d S_d / B_fabric,
max_d S_d / B_send, max_d R_d / B_recv); a rate not given leaves the bound unknown (unless nothing
moves). Memory: device d holds old + new + declared extra bytes until the old buffers are released.
Declared serial switch (not a bound): the declared transfer time (at least T_move) plus the declared
sum of the other serial steps (drain, group setup, repack, validation, graph compile, cut-over, replay,
queue clearance, local copies); T_move plus that sum is its lower bound under the declared steps.
Payback: a switch costing X seconds that saves s seconds per step breaks even after ceil(X / s)
steps and is strictly better after floor(X / s) + 1.
"""

from fractions import Fraction

from ...errors import UserError
from ...summation import plain_sum

# How each sharded tensor splits over TP: (name suffix, axis). Others replicate whole.
ROW_SPLIT = (".q_proj.weight", ".k_proj.weight", ".v_proj.weight", ".gate_proj.weight", ".up_proj.weight")
COLUMN_SPLIT = (".o_proj.weight", ".down_proj.weight")
REPLICATED_ROLES = ("vector", "router")


class Layout:
    """One TP x EP group: tp, ep and the tp * ep device names, EP-major then TP-major."""

    def __init__(self, tp, ep, devices):
        if len(devices) != tp * ep or len(set(devices)) != len(devices):
            raise UserError(f"layout tp{tp}ep{ep} needs {tp * ep} distinct devices, got {len(devices)}")
        self.tp, self.ep, self.devices = tp, ep, tuple(devices)

    def label(self):
        return f"tp{self.tp}ep{self.ep}"


def split(n, parts, i):
    """[start, stop) of part i of n in the quotient/remainder split (the first n mod parts get one more)."""
    q, r = divmod(n, parts)
    return i * q + min(i, r), (i + 1) * q + min(i + 1, r)


def kv_head_range(heads, kv_heads, tp, t):
    """The KV heads TP rank t needs for its heads // tp query heads (whole heads)."""
    q, g = heads // tp, heads // kv_heads
    return t * q // g, ((t + 1) * q - 1) // g + 1


def _attention(arch):
    """The one attention geometry every layer shares (heads, kv_heads, head_dim), or an error."""
    from ...blocks.attention import Attention

    seen = set()
    for layer in arch.layers:
        blocks = [b for b in layer.blocks if isinstance(b, Attention)]
        if len(blocks) != 1 or type(blocks[0]) is not Attention or blocks[0].window or blocks[0].qkv_bias:
            raise UserError(f"reconfiguration models full GQA attention without biases in every layer; "
                            f"{arch.id} has another kind")
        seen.add((blocks[0].heads, blocks[0].kv_heads, blocks[0].head_dim))
    if len(seen) != 1:
        raise UserError(f"reconfiguration needs one attention geometry in every layer; {arch.id} has {len(seen)}")
    return seen.pop()


def _experts(arch):
    from ...blocks.moe import MoE

    counts = {b.experts for layer in arch.layers for b in layer.blocks if isinstance(b, MoE)}
    return counts.pop() if len(counts) == 1 else 0


def check(arch, lay):
    """TP divides the heads, the FFN widths and the vocabulary; EP only with routed experts, each
    EP rank owning at least one."""
    heads, kv_heads, _ = _attention(arch)
    experts = _experts(arch)
    if (experts == 0 and lay.ep != 1) or lay.ep > max(experts, 1):
        raise UserError(f"{lay.label()}: EP needs routed experts and at most one rank per expert "
                        f"({arch.id} has {experts})")
    for t in arch.tensors():
        axis = _axis(t)
        if axis is not None and not t.name.endswith((".k_proj.weight", ".v_proj.weight")) and t.shape[axis] % lay.tp:
            raise UserError(f"{lay.label()}: TP {lay.tp} does not divide {t.name} {t.shape}")
    if heads % lay.tp:
        raise UserError(f"{lay.label()}: TP {lay.tp} does not divide the {heads} query heads")


def _axis(t):
    """(axis, length) a tensor splits on over TP (None: replicated); expert tensors' axis skips the
    stacked expert index."""
    if t.role in REPLICATED_ROLES:
        return None
    off = 1 if t.role == "expert" else 0
    if t.role in ("embedding", "head") or t.name.endswith(ROW_SPLIT):
        return off
    if t.name.endswith(COLUMN_SPLIT):
        return off + 1
    raise UserError(f"reconfiguration has no sharding rule for {t.name} (role {t.role})")


def state(arch, lay, chunks, batch, history, aux_bytes, weight_bytes, kv_bytes):
    """name -> (kind, unit bytes, [(device, start, stop)]) for the layout `lay`. `chunks` are the
    expert-id ranges (the union of both layouts' EP boundaries) an expert tensor is kept in."""
    heads, kv_heads, head_dim = _attention(arch)
    experts = _experts(arch)
    ranges = [split(experts, lay.ep, e) for e in range(lay.ep)]
    chunk_ranks = [[e for e, (a, b) in enumerate(ranges) if a <= c0 < b] for c0, _ in chunks]
    out = {}
    for t in arch.tensors():
        axis = _axis(t)
        if axis is None:
            unit, length = weight_bytes * t.params, 1
        else:
            length = t.shape[axis]
            unit = weight_bytes * t.params // length // (t.shape[0] if t.role == "expert" else 1)
        kvh = t.name.endswith((".k_proj.weight", ".v_proj.weight"))

        def owners(ranks):
            rows = []
            for e in ranks:
                for r in range(lay.tp):
                    if axis is None:
                        a, b = 0, 1
                    elif kvh:
                        h0, h1 = kv_head_range(heads, kv_heads, lay.tp, r)
                        a, b = h0 * head_dim, h1 * head_dim
                    else:
                        a, b = r * length // lay.tp, (r + 1) * length // lay.tp
                    rows.append((lay.devices[e * lay.tp + r], a, b))
            return rows

        if t.role != "expert":
            out[t.name] = ("weight", unit, owners(range(lay.ep)))
            continue
        for (c0, c1), ranks in zip(chunks, chunk_ranks):
            out[f"{t.name}[{c0}:{c1}]"] = ("weight", unit * (c1 - c0), owners(ranks))
    if batch * history:
        unit = 2 * kv_bytes * len(arch.layers) * batch * history * head_dim
        out["request_kv"] = ("kv", unit, [(lay.devices[e * lay.tp + r], *kv_head_range(heads, kv_heads, lay.tp, r))
                                          for e in range(lay.ep) for r in range(lay.tp)])
    if aux_bytes:
        n = len(lay.devices)
        out["auxiliary_state"] = ("auxiliary", 1, [(d, *split(aux_bytes, n, i)) for i, d in enumerate(lay.devices)])
    return out


def expert_chunks(experts, source, target):
    """Expert-id ranges on which both layouts' EP ownership is constant."""
    cuts = sorted({0, experts} | {split(experts, lay.ep, e)[k] for lay in (source, target)
                                  for e in range(lay.ep) for k in (0, 1)})
    return list(zip(cuts, cuts[1:]))


def plan(old, new):
    """Pieces (kind, source, target, bytes, local): every target interval once, from itself when it
    already holds it, else from the first source device by name."""
    pieces = []
    for name, (kind, unit, owners) in new.items():
        held = old[name][2]
        for dev, a, b in owners:
            cuts = sorted({a, b} | {x for _, s, e in held for x in (s, e) if a < x < b})
            for lo, hi in zip(cuts, cuts[1:]):
                have = [d for d, s, e in held if s <= lo and e >= hi]
                src = dev if dev in have else min(have)
                pieces.append((kind, src, dev, (hi - lo) * unit, src == dev))
    return pieces


def resident(entries):
    """device -> the bytes it holds."""
    out = {}
    for _, unit, owners in entries.values():
        for d, a, b in owners:
            out[d] = out.get(d, 0) + (b - a) * unit
    return out


def payback(overhead_s, saving_s):
    """Steps until a switch costing X seconds, saving s per step, breaks even (ceil(X / s)) and is
    strictly better (floor(X / s) + 1); None without a positive saving."""
    if overhead_s is None or saving_s is None:
        return None
    if saving_s <= 0:
        return {"overhead_s": overhead_s, "saving_per_step_s": saving_s, "break_even_steps": None,
                "strictly_better_steps": None}
    ratio = Fraction(overhead_s) / Fraction(saving_s)
    return {"overhead_s": Fraction(overhead_s), "saving_per_step_s": Fraction(saving_s),
            "steps": ratio, "break_even_steps": -(-ratio.numerator // ratio.denominator),
            "strictly_better_steps": ratio.numerator // ratio.denominator + 1}


def reconfigure(arch, source, target, *, batch=1, history=0, aux_bytes=0, weight_bytes=2, kv_bytes=2,
                replay=False, rates=None, capacity=None, extra=None, runtime_s=None, transfer_s=None,
                overhead_s=None, saving_s=None):
    """The ledger of one move (see the module docstring); every time an exact Fraction of seconds."""
    for lay in (source, target):
        check(arch, lay)
    chunks = expert_chunks(_experts(arch), source, target) if _experts(arch) else []
    old = state(arch, source, chunks, batch, history, aux_bytes, weight_bytes, kv_bytes)
    new = state(arch, target, chunks, batch, history, aux_bytes, weight_bytes, kv_bytes)
    pieces = plan(old, new)
    if replay:   # the target recomputes the cache from the token log: no old KV moves
        pieces = [p for p in pieces if p[0] != "kv"]
    totals = {k: {"local_bytes": 0, "network_bytes": 0} for k in ("weight", "kv", "auxiliary")}
    sent, received = {}, {}
    for kind, src, dst, nbytes, local in pieces:
        totals[kind]["local_bytes" if local else "network_bytes"] += nbytes
        if not local:
            sent[src] = sent.get(src, 0) + nbytes
            received[dst] = received.get(dst, 0) + nbytes
    network = plain_sum(sent.values())
    rates = rates or {}
    loads = {"fabric": network, "sender": max(sent.values(), default=0), "receiver": max(received.values(), default=0)}
    bounds = {k: (Fraction(v, rates[k]) if rates.get(k) else (Fraction(0) if not network else None))
              for k, v in loads.items()}
    known = [b for b in bounds.values() if b is not None]
    bound = max(known) if len(known) == 3 else None
    devices = sorted(set(source.devices) | set(target.devices))
    cards = []
    held_old, held_new = resident(old), resident(new)
    for d in devices:
        peak = held_old.get(d, 0) + held_new.get(d, 0) + (extra or {}).get(d, 0)
        cap = (capacity or {}).get(d)
        cards.append({"device": d, "old_bytes": held_old.get(d, 0), "new_bytes": held_new.get(d, 0),
                      "peak_bytes": peak, "capacity_bytes": cap, "fits": None if cap is None else peak <= cap})
    declared = serial_bound = None
    if transfer_s is not None:
        if bound is not None and transfer_s < bound:
            raise UserError(f"--transfer-s {float(transfer_s):g} s is below the transfer lower bound "
                            f"{float(bound):g} s")
    elif not network:   # nothing moves: no transfer time
        transfer_s = Fraction(0)
    if runtime_s is not None:
        declared = None if transfer_s is None else transfer_s + runtime_s
        serial_bound = None if bound is None else bound + runtime_s
    fits = [c["fits"] for c in cards]
    return {"source": source.label(), "target": target.label(),
            "source_devices": list(source.devices), "target_devices": list(target.devices),
            "totals": totals, "network_bytes": network,
            "local_read_write_bytes": 2 * plain_sum(t["local_bytes"] for t in totals.values()),
            "sent_bytes": dict(sorted(sent.items())), "received_bytes": dict(sorted(received.items())),
            "bounds_s": bounds, "transfer_lower_bound_s": bound, "runtime_s": runtime_s,
            "declared_transfer_s": transfer_s, "declared_serial_s": declared, "serial_lower_bound_s": serial_bound, "devices": cards,
            "all_fit": False if False in fits else (None if None in fits else True),
            "payback": payback(overhead_s, saving_s)}

"""First-order budgets of a nominal dense model of N parameters (the book's chapter 1 and 10).

A nominal model is a parameter count and a storage width, nothing else: no layers, no
attention, no output head. Its work is the dense rule 2N FLOPs per token forward and 6N per
token trained (6ND for D tokens); its weights are ceil(N x bits / 8) bytes. It is a teaching
unit for "how big, how long, how many devices" before a real architecture is chosen, and is
always printed as nominal: a real model's counts come from its config (`forward`, `train`).

Exact where the inputs are exact: bytes, FLOPs and device counts are integers (ceil and floor
of exact fractions); times are seconds as floats. Peaks are the device's dense matrix peak of
the compute format (declare another figure with --matrix-peak); capacities are the device's
vendor label in decimal bytes, as the book reads them.
"""

from fractions import Fraction
from math import isqrt

from ..splits import ceil_div

SECONDS_PER_DAY = 86400


def weight_bytes(params, bits):
    """ceil(N x bits / 8): the packed bytes of N values (no scales, no padding)."""
    return ceil_div(params * bits, 8)


def ceil_frac(x):
    return -((-x.numerator) // x.denominator)


def floor_frac(x):
    return x.numerator // x.denominator


def decode_budget(*, params, weight_bits, batch, kv_history_bytes, kv_append_bytes, metadata_bytes,
                  workspace_bytes, peak, bandwidth, capacity):
    """One decode step of B requests on a nominal dense model.

    matrix FLOPs F = 2 N B; bytes moved M = W + metadata + B (KV history + KV append), the
    weights read once for the batch; resident R = M + workspace (the step's end state).
    compute service F / peak, memory service M / bandwidth, lower bound their max (the units
    overlap). The compute/memory crossover is the smallest batch B with
    B x 2N / peak >= (W + metadata + B x KV) / bandwidth, i.e.
    B >= (W + metadata) / (2N x bandwidth / peak - KV), with KV = history + append per
    request; none when the denominator is not positive (the step never becomes compute-bound).
    """
    w = weight_bytes(params, weight_bits)
    shared = w + metadata_bytes
    per_request = kv_history_bytes + kv_append_bytes
    flops = 2 * params * batch
    moved = shared + batch * per_request
    resident = moved + workspace_bytes
    compute_s = Fraction(flops) / peak
    memory_s = Fraction(moved) / bandwidth
    bound = max(compute_s, memory_s)
    fits = resident <= capacity
    slope = Fraction(2 * params * bandwidth, peak) - per_request
    crossover = None if slope <= 0 else max(1, ceil_frac(shared / slope))
    return {
        "matrix_flops": flops,
        "weight_bytes": w,
        "bytes_moved": moved,
        "resident_bytes": resident,
        "capacity_bytes": capacity,
        "fits": fits,
        "arithmetic_intensity_flops_per_byte": float(Fraction(flops, moved)) if moved else None,
        "compute_s": float(compute_s),
        "memory_s": float(memory_s),
        "lower_bound_s": float(bound),
        "bound": "compute" if compute_s > memory_s else "memory",
        "tokens_per_s_upper": float(batch / bound) if fits and bound else None,
        "crossover_batch": crossover,
        "crossover_fits": None if crossover is None else shared + crossover * per_request + workspace_bytes <= capacity,
    }


def transfer_budget(*, params, weight_bits, shards, card_capacity, payload_bytes, link_bandwidth,
                    link_efficiency, startup_s, messages):
    """Weights against cards and one serial transfer (the book's chapter-1 units).

    Each card holds ceil(shard x bits / 8) bytes of its shard (shards sum to N); the aggregate
    fits when W <= cards x capacity, every card when each shard fits its card. A serial
    transfer of P bytes in k messages takes k x startup + P / (bandwidth x efficiency); the
    payload at which startup and bandwidth terms are equal is startup x bandwidth x efficiency.
    """
    w = weight_bytes(params, weight_bits)
    cards = [{"card": i, "parameters": n, "weight_bytes": weight_bytes(n, weight_bits),
              "left_bytes": card_capacity - weight_bytes(n, weight_bits)} for i, n in enumerate(shards)]
    rate = link_bandwidth * link_efficiency
    bandwidth_s = payload_bytes / rate
    return {
        "weight_bytes": w,
        "weight_gb": w / 1e9,
        "weight_gib": w / 2 ** 30,
        "aggregate_capacity_bytes": card_capacity * len(shards),
        "aggregate_fits": w <= card_capacity * len(shards),
        "every_card_fits": all(c["left_bytes"] >= 0 for c in cards),
        "cards": cards,
        "payload_bytes": payload_bytes,
        "bandwidth_s": bandwidth_s,
        "startup_s": messages * startup_s,
        "serial_transfer_s": messages * startup_s + bandwidth_s,
        "startup_bandwidth_crossover_bytes": startup_s * rate,
    }


def training_scale(*, params, tokens, tokens_per_param, peak, efficiency, deadline_days, unavailable_days,
                   cards, state_bytes_per_param, capacity):
    """Nominal dense training: work 6ND, devices for a deadline, days on a fleet, size bounds.

    D is the stated task tokens, or k x N when tokens_per_param k is given (the work then grows
    as N^2). With useful seconds T = (deadline - unavailable days) x 86,400 and the per-device
    rate peak x efficiency (the efficiency the 6ND numerator's MFU): devices for compute
    ceil(6ND / (rate x T)), for the persistent state ceil(state x N / capacity), needed the
    larger; training days on `cards` devices 6ND / (cards x rate) / 86,400 (the calendar adds the
    unavailable days). The
    largest N the fleet trains by the deadline: floor(cards x rate x T / (6D)) at fixed D,
    isqrt(floor(cards x rate x T / (6k))) when D = kN; the largest its memory holds:
    floor(cards x capacity / state).
    """
    eff = Fraction(efficiency)
    rate = peak * eff
    d = tokens if tokens_per_param is None else tokens_per_param * params
    work = 6 * params * d
    useful = (deadline_days - unavailable_days) * SECONDS_PER_DAY
    compute_cards = ceil_frac(Fraction(work) / (rate * useful)) if useful > 0 else None
    state = state_bytes_per_param * params
    capacity_cards = ceil_div(state, capacity)
    budget = cards * rate * useful
    if tokens_per_param is None:
        compute_params = floor_frac(budget / (6 * tokens))
    else:
        compute_params = isqrt(floor_frac(budget / (6 * tokens_per_param)))
    capacity_params = cards * capacity // state_bytes_per_param
    return {
        "tokens": d,
        "work_flops": work,
        "state_bytes": state,
        "training_days_on_cards": float(Fraction(work) / (cards * rate) / SECONDS_PER_DAY),
        "fleet_capacity_fits": state <= cards * capacity,
        "compute_cards": compute_cards,
        "capacity_cards": capacity_cards,
        "needed_cards": None if compute_cards is None else max(compute_cards, capacity_cards),
        "compute_params_bound": compute_params,
        "capacity_params_bound": capacity_params,
        "params_bound": min(compute_params, capacity_params),
    }

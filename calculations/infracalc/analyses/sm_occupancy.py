"""Resident blocks and warps of one GEMM tile's kernel on one SM, the limit that binds, whether the resident
warps keep enough loads in flight to cover a declared memory latency, and the tile's MMA instruction count
(the book's chapter-4 SM occupancy example). Exact integers and fractions.

    shared per block   = 2 (m k + k n) operand bytes (BF16) + [4 m n accumulator bytes if kept in shared]
                         + extra
    registers / thread = declared + [m n / threads if the FP32 accumulator is kept in registers]
    blocks by limit    threads:   max warps x warp size // threads per block
                       registers: registers per SM // (threads x registers per thread)
                       shared:    shared per SM // (shared per block + reserved per block)
                       blocks:    max blocks per SM
    resident blocks    = the least of them (every limit reaching it binds); warps = blocks x threads / warp
    occupancy          = resident warps / max warps per SM
    needed in flight   = bandwidth x latency / SMs      (Little's law, bytes per SM)
    available          = resident warps x loads per warp x warp size x bytes per thread load
    MMA per tile       = (m / M)(n / N)(k / K) for the instruction shape M x N x K; tile FLOPs 2 m n k

Worked case (by hand): 256 threads at 128 registers, a 128 x 128 x 64 tile with the accumulator in
shared: 32,768 operand + 65,536 accumulator = 98,304 B; 2,048 / 256 = 8 blocks by threads, 65,536 /
32,768 = 2 by registers, 233,472 // 99,328 = 2 by shared memory, 32 by blocks: 2 blocks, 16 warps,
occupancy 1/4 (registers and shared memory bind). At 3.35 TB/s and 600 ns over 132 SMs a SM needs
2,010,000 / 132 = 167,500/11 B in flight; 16 warps x 4 loads x 32 x 16 B = 32,768 B cover it.

SM limits of compute capability 9.0 (NVIDIA CUDA C++ Programming Guide, compute capabilities table;
Hopper tuning guide): 64 warps, 65,536 registers, 32 blocks and 228 KiB of shared memory per SM, 227 KiB
per block with 1 KiB reserved per block, 255 registers per thread. As the book's calculator takes them
(`899ms/ai-infra-book:calculations/src/infra_calc/topics/sm_occupancy.py`); registers are threads x
registers per thread (no allocation granularity).
"""

from fractions import Fraction

CC90 = {"max_warps_per_sm": 64, "registers_per_sm": 65536, "max_registers_per_thread": 255,
        "max_blocks_per_sm": 32, "shared_memory_per_sm_bytes": 228 * 1024,
        "max_shared_memory_per_block_bytes": 227 * 1024, "reserved_shared_per_block_bytes": 1024}


def block_resources(*, tile, threads, registers, accumulator_in_shared, extra_shared_bytes):
    """(shared bytes per block, registers per thread) of the tile's kernel."""
    m, n, k = tile
    operands = 2 * m * k + 2 * k * n
    shared = operands + (4 * m * n if accumulator_in_shared else 0) + extra_shared_bytes
    return shared, registers + (0 if accumulator_in_shared else m * n // threads)


def residency(*, threads, registers_per_thread, shared_per_block, warp_size, limits=CC90):
    """{limit: blocks it allows}, the resident blocks and the limits that bind."""
    by = {"threads": limits["max_warps_per_sm"] * warp_size // threads,
          "registers": limits["registers_per_sm"] // (threads * registers_per_thread),
          "shared_memory": limits["shared_memory_per_sm_bytes"] // (shared_per_block
                                                                    + limits["reserved_shared_per_block_bytes"]),
          "blocks": limits["max_blocks_per_sm"]}
    least = min(by.values())
    return by, least, [name for name, value in by.items() if value == least]


def sm_occupancy(*, tile, threads, registers, accumulator_in_shared, extra_shared_bytes, warp_size, bandwidth,
                 sms, latency_ns, loads_per_warp, load_bytes, mma_shape, limits=CC90):
    m, n, k = tile
    shared, regs = block_resources(tile=tile, threads=threads, registers=registers,
                                   accumulator_in_shared=accumulator_in_shared, extra_shared_bytes=extra_shared_bytes)
    by, blocks, binding = residency(threads=threads, registers_per_thread=regs, shared_per_block=shared,
                                    warp_size=warp_size, limits=limits)
    warps = blocks * (threads // warp_size)
    needed = Fraction(bandwidth) * latency_ns / 10**9 / sms
    available = warps * loads_per_warp * warp_size * load_bytes
    per_warp = loads_per_warp * warp_size * load_bytes
    mm, mn, mk = mma_shape
    mma = (m // mm) * (n // mn) * (k // mk)
    return {
        "resident_blocks": blocks, "resident_warps": warps, "occupancy": str(Fraction(warps, limits["max_warps_per_sm"])),
        "binding_limits": binding, "shared_bytes_per_block": shared, "registers_per_thread": regs,
        "needed_bytes_in_flight_per_sm": str(needed), "needed_bytes_in_flight_per_sm_decimal": float(needed),
        "available_bytes_in_flight_per_sm": available, "covers_latency": available >= needed,
        "min_resident_warps_to_cover": -(-needed // per_warp),
        "mma_instructions_per_tile": mma, "mma_per_warp": str(Fraction(mma, threads // warp_size)),
        "tile_flops": 2 * m * n * k,
        "blocks_by_limit": [{"limit": name, "blocks": value} for name, value in by.items()],
    }


SM_OCCUPANCY_CONVENTIONS = [
    "One kernel of declared threads per block and registers per thread on one SM of compute capability 9.0 "
    "(64 warps, 65,536 registers, 32 blocks, 228 KiB shared, 1 KiB reserved per block): resident blocks are the "
    "least of the thread, register, shared-memory and block limits (registers = threads x registers per thread, "
    "no allocation granularity); shared per block = BF16 operands 2 (m k + k n) [+ FP32 accumulator 4 m n] + extra, "
    "or the accumulator in registers adds m n / threads per thread.",
    "Latency hiding by Little's law: bytes needed in flight per SM = bandwidth x declared latency / SMs; available "
    "= resident warps x declared loads per warp x warp size x bytes per load (no TMA bulk copies). MMA "
    "instructions = the tile over a declared instruction shape; a count, not a throughput.",
]

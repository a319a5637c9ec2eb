"""Shared-memory bank service of one warp's scalar word requests (the book's chapter-5 bank example).

A staging tile of R rows of C 32-bit words is stored row after row with a row stride of s >= C
words (s - C padding words per row). L lanes each request one word; word address a lives in bank
a mod B. Each bank serves p requests per round, all banks at once:

    requests(bank) = lanes whose word is in the bank          (broadcast off)
                   = distinct words of the bank they ask for   (broadcast on: a repeated word once)
    rounds         = max over banks of ceil(requests(bank) / p)

Access patterns, lane i = 0..L-1: row (row 0: word i), column (column 0: word i s), same-word
(word 0 for every lane). Allocated bytes = R s w, padding = R (s - C) w, requested = L w for
w-byte words. The book's tile: 32 x 32 FP32, 32 lanes and 32 banks, one port: a column at
stride 32 lands in bank 0 for every lane (32 rounds), at stride 33 in 32 different banks (1).
"""

from ..splits import ceil_div

BANK_CONVENTIONS = [
    "Bank service of one request of L lanes, one scalar w-byte word each: word address a is in bank a mod B; "
    "every bank serves p requests a round, all at once; rounds = max over banks of ceil(requests / p). "
    "Broadcast on merges lanes reading the same word (never different words of one bank).",
    "Tile of R x C words stored with a row stride of s words: allocated R s w bytes (padding R (s - C) w). Row = "
    "row 0, column = column 0 (word i s for lane i), same-word = word 0 for all lanes. A port-service count "
    "of one request, not a kernel's time: no instruction splitting, no TMA swizzle, no other warps. Ports > 1 "
    "is a declared variant, not a GPU's specification.",
]

ACCESSES = ("row", "column", "same-word")


def addresses(access, lanes, stride):
    """Word address of each lane's request."""
    if access == "row":
        return list(range(lanes))
    if access == "column":
        return [i * stride for i in range(lanes)]
    return [0] * lanes


def bank_service(words, *, banks, ports, broadcast):
    """Per-bank requests and rounds of one set of lane word addresses."""
    per_bank = [[] for _ in range(banks)]
    for a in words:
        per_bank[a % banks].append(a)
    rows = []
    for bank, asked in enumerate(per_bank):
        served = len(set(asked)) if broadcast else len(asked)
        if asked:
            rows.append({"bank": bank, "lane_requests": len(asked), "distinct_words": len(set(asked)),
                         "served_requests": served, "rounds": ceil_div(served, ports)})
    return rows


def bank_budget(*, access, stride_words, rows=32, columns=32, lanes=32, banks=32, ports=1, broadcast=False,
                word_bytes=4):
    words = addresses(access, lanes, stride_words)
    per_bank = bank_service(words, banks=banks, ports=ports, broadcast=broadcast)
    return {
        "access": access, "lanes": lanes, "banks": banks, "ports": ports, "broadcast": broadcast,
        "logical_tile_bytes": rows * columns * word_bytes,
        "allocated_tile_bytes": rows * stride_words * word_bytes,
        "padding_bytes": rows * (stride_words - columns) * word_bytes,
        "lane_requested_bytes": lanes * word_bytes,
        "distinct_requested_bytes": len(set(words)) * word_bytes,
        "served_word_bytes": sum(r["served_requests"] for r in per_bank) * word_bytes,
        "banks_touched": len(per_bank),
        "service_rounds": max(r["rounds"] for r in per_bank),
        "busy_banks": per_bank,
    }

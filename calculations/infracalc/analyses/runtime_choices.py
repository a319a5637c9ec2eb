"""Runtime choices paid for once and repaid per call, with declared costs (the book's chapter-5
graph boundary, candidate deployment and shape specialization examples). Every time is exact
(fractions of nanoseconds); no rate or duration here is a device's figure or a measurement.

Amortization of a one-off preparation P against a per-call saving s > 0:

    break-even calls      = max(1, ceil(P / s))       (total cost <= the baseline's)
    strictly faster calls = max(1, floor(P / s) + 1)  (total cost <  the baseline's)

none when s <= 0 (break-even 1 only when s = P = 0).

Graph boundary (one layer's external input of T tokens, BF16, hidden H): the eager path pays the
device time and an exposed submission (D + S); a captured graph replays it (D + R + metadata M)
and reaches a new input by a copy into its static buffer (read + write 2 x 2TH bytes at the
declared copy rate), by an indirect pointer (+ I), or, when the producer writes the static buffer
itself, directly. Each graph path pays the capture P once; over n calls a path costs P + n t.
The steady choice is the fastest per call and the lifetime choice the cheapest over n calls among
eager, copy and indirect. Padding a batch of r real rows to p rows adds 2 (p - r) 3HF FLOPs in the
layer's FFN. A configuration pipeline of k segments of host time h and device time g finishes in
h + g + (k - 1) max(h, g) (serial: k (h + g)).

Deployment: shapes with call counts, a baseline time each and candidate times (a failed validation
falls back to the baseline). A uniform candidate costs the count-weighted sum of its times; per-shape
dispatch takes the fastest valid time of each shape plus a dispatch cost per call. The extra
preparation of dispatching is repaid by the saving per call against the best uniform candidate.

Shape specialization of one FFN layer (6HF FLOPs per row): generic runs every shape as is;
bucket pads each shape to the smallest bucket holding it (generic beyond the largest); specialized
compiles the listed shapes (generic for the others). Each artifact used is prepared once (0 when
cached); a policy's lifetime = preparation + repetitions x its execution at its declared rate.
"""

from fractions import Fraction

RUNTIME_CHOICE_CONVENTIONS = [
    "Declared teaching costs (integer nanoseconds, rates in FLOP/s and bytes/s), serial sums, exact fractions; "
    "not a device's figures or measurements. A one-off preparation P repaid by a saving s per call: break-even "
    "after max(1, ceil(P / s)) calls, strictly faster after max(1, floor(P / s) + 1); none when s <= 0.",
]

GRAPH_CONVENTIONS = RUNTIME_CHOICE_CONVENTIONS + [
    "Eager = device + exposed submission; a graph replays (device + replay + metadata) after a one-off capture, "
    "with its new input copied (2 x 2TH bytes, read and write, at the copy rate), addressed indirectly, or written "
    "in place by its producer (direct output: not an external-input path). Steady path = fastest per call; "
    "lifetime path = cheapest capture + calls x time; among eager, copy and indirect.",
    "Padding r real rows to p adds 2 (p - r) x 3HF matrix FLOPs in one layer's FFN (no attention, no request "
    "slots). The configuration pipeline assumes independent segments and resources: h + g + (k - 1) max(h, g).",
]

DEPLOYMENT_CONVENTIONS = RUNTIME_CHOICE_CONVENTIONS + [
    "A candidate failing validation, or missing for a shape, runs at the baseline time there. Shape-mean ratio = "
    "the mean over shapes of baseline / time (a failed candidate scores 0, for the score only). Dispatch picks "
    "the fastest valid time per shape and adds the dispatch cost per call; its extra preparation is repaid by "
    "the mean saving per call against the best uniform candidate (whole cohorts: the cohort's saving).",
]

SPECIALIZATION_CONVENTIONS = RUNTIME_CHOICE_CONVENTIONS + [
    "One dense FFN layer, 6HF matrix FLOPs per row. Bucket pads each shape to the smallest bucket holding it "
    "(generic beyond the largest), specialized compiles the listed shapes (generic for others); each artifact "
    "used is prepared once per instance (0 when declared cached, no load time); lifetime = preparation + "
    "repetitions x execution at the policy's declared rate; the cheapest lifetime is selected (first on a tie).",
]


def amortized_calls(setup, saving):
    """(break-even calls, strictly faster calls) of a preparation `setup` against `saving` per call."""
    if saving <= 0:
        return (1 if saving == 0 and setup == 0 else None), None
    ratio = Fraction(setup) / Fraction(saving)
    return max(1, -(-ratio.numerator // ratio.denominator)), max(1, ratio.numerator // ratio.denominator + 1)


def exact(x):
    """An exact value as JSON: an int when whole, else its fraction text."""
    x = Fraction(x)
    return x.numerator if x.denominator == 1 else str(x)


def graph_boundary(*, hidden, inter, input_tokens, real_tokens, padded_tokens, copy_bytes_per_s, device_ns,
                   submit_ns, replay_ns, metadata_ns, indirect_ns, setup_ns, calls, config_ns, segments,
                   device_speedup, config_speedup):
    copy_bytes = 2 * (2 * input_tokens * hidden)
    copy_ns = Fraction(copy_bytes * 10**9, copy_bytes_per_s)
    eager = Fraction(device_ns + submit_ns)
    replay = Fraction(device_ns + replay_ns + metadata_ns)
    paths = []
    for name, t, prep in (("eager", eager, 0), ("copy", replay + copy_ns, setup_ns),
                          ("indirect", replay + indirect_ns, setup_ns), ("direct output", replay, setup_ns)):
        even, strict = amortized_calls(prep, eager - t)
        paths.append({"path": name, "per_call_ns": exact(t), "setup_ns": prep, "lifetime_ns": exact(prep + calls * t),
                      "saving_per_call_ns": exact(eager - t), "break_even_calls": even,
                      "strictly_faster_calls": strict})
    external = paths[:3]
    pipeline = []
    for name, h, g in (("base", Fraction(config_ns), Fraction(device_ns)),
                       ("faster device", Fraction(config_ns), Fraction(device_ns, device_speedup)),
                       ("faster both", Fraction(config_ns, config_speedup), Fraction(device_ns, device_speedup))):
        pipeline.append({"variant": name, "config_ns": exact(h), "device_ns": exact(g),
                         "serial_ns": exact(segments * (h + g)),
                         "overlapped_ns": exact(h + g + (segments - 1) * max(h, g))})
    ffn = 3 * hidden * inter
    return {
        "input_tensor_bytes": 2 * input_tokens * hidden, "extra_copy_bytes": copy_bytes,
        "extra_copy_ns": exact(copy_ns),
        "ffn_parameters": ffn, "real_ffn_matrix_flops": 2 * real_tokens * ffn,
        "padding_ffn_matrix_flops": 2 * (padded_tokens - real_tokens) * ffn,
        "steady_path": min(external, key=lambda r: Fraction(r["per_call_ns"]))["path"],
        "lifetime_path": min(external, key=lambda r: Fraction(r["lifetime_ns"]))["path"],
        "paths": paths, "configuration_pipeline": pipeline,
    }


def deployment(shapes, *, dispatch_ns=0, extra_setup_ns=0, repetitions=1):
    """shapes: (name, count, baseline_ns, {candidate: ns}, {failed candidates})."""
    calls = sum(count for _, count, _, _, _ in shapes)
    names = ["baseline"] + sorted({c for _, _, _, cands, _ in shapes for c in cands})
    times = {}
    rows = []
    for name in names:
        t, ratios, fallback = [], [], 0
        for _, count, base, cands, failed in shapes:
            valid = name == "baseline" or (name in cands and name not in failed)
            t.append(cands[name] if valid and name != "baseline" else base)
            ratios.append(Fraction(base, t[-1]) if valid else Fraction(0))
            fallback += 0 if valid else count
        times[name] = t
        total = sum(s[1] * x for s, x in zip(shapes, t))
        rows.append({"candidate": name, "shape_mean_ratio": exact(sum(ratios) / len(shapes)), "cohort_ns": total,
                     "mean_ns": exact(Fraction(total, calls)), "fallback_calls": fallback})
    best = min(rows, key=lambda r: r["cohort_ns"])
    selections, mixed = [], 0
    for i, (shape, count, _, _, _) in enumerate(shapes):
        winner = min(names, key=lambda n: times[n][i])
        mixed += count * (times[winner][i] + dispatch_ns)
        selections.append({"shape": shape, "calls": count, "selected": winner,
                           "deployed_ns": times[winner][i] + dispatch_ns})
    saving = best["cohort_ns"] - mixed
    even, strict = amortized_calls(extra_setup_ns, Fraction(saving, calls))
    cohort_even, cohort_strict = amortized_calls(extra_setup_ns, saving)
    return {
        "calls_per_cohort": calls, "best_uniform": best["candidate"], "best_uniform_cohort_ns": best["cohort_ns"],
        "dispatch_cohort_ns": mixed, "dispatch_mean_ns": exact(Fraction(mixed, calls)),
        "saving_per_call_ns": exact(Fraction(saving, calls)),
        "dispatch_lifetime_ns": extra_setup_ns + repetitions * mixed,
        "uniform_lifetime_ns": repetitions * best["cohort_ns"],
        "break_even_calls": even, "strictly_faster_calls": strict,
        "break_even_cohorts": cohort_even, "strictly_faster_cohorts": cohort_strict,
        "candidates": rows, "selections": selections,
    }


def specialization(*, hidden, inter, shapes, buckets, specialized, cached, repetitions, rates, compile_ns):
    """shapes: (tokens, count); rates / compile_ns: {'generic', 'bucket', 'specialized'}."""
    per_row = 6 * hidden * inter
    rows = []
    for policy in ("generic", "bucket", "specialized"):
        artifacts, execution, work, padding, fallback = {}, Fraction(0), 0, 0, 0
        for tokens, count in shapes:
            kind, run = "generic", tokens
            if policy == "bucket":
                fit = next((b for b in sorted(buckets) if b >= tokens), None)
                if fit is not None:
                    kind, run = "bucket", fit
            elif policy == "specialized" and tokens in specialized:
                kind = "specialized"
            artifact = kind if kind == "generic" else f"{kind}:{run}"
            fallback += count if policy != "generic" and kind == "generic" else 0
            artifacts[artifact] = 0 if artifact in cached else compile_ns[kind]
            execution += count * Fraction(per_row * run * 10**9, rates[kind])
            work += count * per_row * run
            padding += count * per_row * (run - tokens)
        prepare = sum(artifacts.values())
        rows.append({"policy": policy, "artifacts": ", ".join(artifacts), "prepare_ns": prepare,
                     "cohort_ns": exact(execution), "lifetime_ns": exact(prepare + repetitions * execution),
                     "cohort_matrix_flops": work, "padding_matrix_flops": padding, "fallback_calls": fallback})
    return {
        "calls_per_cohort": sum(c for _, c in shapes),
        "real_matrix_flops": sum(t * c for t, c in shapes) * per_row,
        "selected_policy": min(rows, key=lambda r: Fraction(r["lifetime_ns"]))["policy"],
        "policies": rows,
    }

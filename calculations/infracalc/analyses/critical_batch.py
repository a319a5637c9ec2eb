"""Critical batch size (`budget batch`): how many optimizer steps and examples a data-parallel run
needs at batch B, from the gradient noise scale (McCandlish et al., "An Empirical Model of
Large-Batch Training", arXiv:1812.06162, eq. 2.7-2.8 and sec. 2.3; Kaplan et al., "Scaling Laws for
Neural Language Models", arXiv:2001.08361, sec. 5.1):

  (S / S_min - 1)(E / E_min - 1) = 1,  B_noise = E_min / S_min, E = B S, so
  S(B) = S_min (1 + B_noise / B)      E(B) = E_min (1 + B / B_noise)

The noise scale B_noise (tokens) is a declared input. A reference run of batch B_ref tokens that
needs S_ref = ceil(D / B_ref) steps for D tokens is taken as exactly reaching the target, which
fixes S_min = S_ref / (1 + B_noise / B_ref) and E_min = S_min B_noise.

Weak scaling (each card keeps its micro-batches, so B grows with the cards; the step time t stays
the reference's): steps S(B), wall time S(B) t. Its ceiling is S_ref / S_min = 1 + B_noise / B_ref
(no batch beats S_min steps). Strong scaling (B fixed at B_ref): S_ref steps of
compute x cards_ref / cards + overhead seconds. Parallel efficiency is 1 in both; all times are
declared. Exact rationals; floats only in the output.
"""

from fractions import Fraction

from ..errors import UserError
from ..splits import ceil_div


def critical_batch(*, noise_tokens, tokens, sequence_tokens, reference_sequences, reference_cards,
                   compute_s, overhead_s, cards):
    """The `budget batch` record: the reference, one row per card count, the summary. Exact rationals are
    printed beside their floats (`*_exact`)."""
    if reference_sequences % reference_cards:
        raise UserError(f"--reference-sequences {reference_sequences} is not a whole number of micro-batches "
                        f"per card over --reference-cards {reference_cards}")
    per_card = reference_sequences // reference_cards
    noise = Fraction(noise_tokens)
    compute, overhead = Fraction(compute_s), Fraction(overhead_s)
    b_ref = reference_sequences * sequence_tokens
    s_ref = ceil_div(tokens, b_ref)
    e_ref = s_ref * b_ref
    s_min = s_ref / (1 + noise / b_ref)
    e_min = s_min * noise
    step = compute + overhead
    rows = []
    for n in cards:
        batch = n * per_card * sequence_tokens
        weak_steps = s_min * (1 + noise / batch)
        weak_examples = e_min * (1 + batch / noise)
        strong_step = compute * reference_cards / n + overhead
        rows.append({"cards": n, "weak_batch_tokens": batch, "weak_batch_sequences": n * per_card,
                     "weak_batch_over_noise_scale": float(batch / noise),
                     "weak_steps": float(weak_steps), "weak_steps_exact": str(weak_steps),
                     "weak_examples_tokens": float(weak_examples),
                     "weak_examples_over_reference": float(weak_examples / e_ref),
                     "weak_wall_s": float(weak_steps * step), "weak_wall_days": float(weak_steps * step / 86400),
                     "weak_speedup": float(s_ref / weak_steps),
                     "strong_step_s": float(strong_step), "strong_step_s_exact": str(strong_step),
                     "strong_wall_s": float(s_ref * strong_step), "strong_wall_days": float(s_ref * strong_step / 86400),
                     "strong_speedup": float(step / strong_step)})
    ceiling = s_ref / s_min
    return {"reference_batch_tokens": b_ref, "reference_steps": s_ref, "reference_examples_tokens": e_ref,
            "reference_batch_over_noise_scale_exact": str(b_ref / noise),
            "s_min": float(s_min), "s_min_exact": str(s_min),
            "e_min_tokens": float(e_min), "e_min_tokens_exact": str(e_min),
            "reference_step_s": float(step), "reference_step_s_exact": str(step),
            "reference_wall_s": float(s_ref * step), "reference_wall_days": float(s_ref * step / 86400),
            "weak_scaling_speedup_ceiling": float(ceiling), "weak_scaling_speedup_ceiling_exact": str(ceiling),
            "cards_where_batch_equals_noise_scale": float(noise / (per_card * sequence_tokens)),
            "rows": rows}

"""One step of speculative sampling on a small vocabulary, exactly (Leviathan, Kalman and
Matias, ICML 2023, Algorithm 1 and Appendix A.1; the book's chapter-8 sampling group).

The draft proposes token x with probability q(x); the target keeps it with probability
min(1, p(x) / q(x)); on a rejection it samples from the residual r(y) = max(0, p(y) - q(y)) /
sum_z max(0, p(z) - q(z)). With exact fractions on one prefix:

    accepted mass     a(x) = q(x) min(1, p(x)/q(x)) = min(p(x), q(x)),
    acceptance        beta = sum_x min(p(x), q(x)),  rejection 1 - beta,
    output            o(y) = a(y) + (1 - beta) r(y) = p(y)   (the theorem),
    wrong output      w(y) = a(y) + (1 - beta) p(y)   (resampling from p after a rejection),
    total variation   TV(u, p) = 1/2 sum_y |u(y) - p(y)|.

Each rejection branch (a proposal x with q(x) - a(x) > 0, then a replacement y) has corrected
mass (q(x) - a(x)) r(y) and wrong mass (q(x) - a(x)) p(y). A proposal with q(x) = 0 is never
made: its conditional acceptance is none; with no rejection mass the residual is none (no 0/0).
"""

from fractions import Fraction

SAMPLING_CONVENTIONS = [
    "Speculative sampling, one step (Leviathan et al. 2023, Algorithm 1): accept a proposal x ~ q with "
    "probability min(1, p(x)/q(x)); on rejection sample r = max(0, p - q) / sum max(0, p - q). Accepted mass "
    "min(p, q), acceptance beta = sum min(p, q); output = min(p, q) + (1 - beta) r, which equals p.",
    "The wrong variant resamples from p after a rejection: min(p, q) + (1 - beta) p; total variation "
    "TV(u, p) = 1/2 sum |u - p|. Exact fractions of the declared normalized distributions; an unreachable "
    "quantity (q(x) = 0, or no rejection mass for the residual) is none.",
]


def total_variation(u, p):
    return sum((abs(a - b) for a, b in zip(u, p)), Fraction(0)) / 2


def sampling(*, target, draft):
    """The step's per-token masses, rejection branches and summary (module docstring)."""
    accepted = [min(a, b) for a, b in zip(target, draft)]
    beta = sum(accepted, Fraction(0))
    excess = [max(Fraction(0), a - b) for a, b in zip(target, draft)]
    mass = sum(excess, Fraction(0))
    residual = [e / mass for e in excess] if mass else None
    output = [a + (1 - beta) * (residual[y] if residual else 0) for y, a in enumerate(accepted)]
    wrong = [a + (1 - beta) * p for a, p in zip(accepted, target)]
    tokens = [{"token": y, "target_exact": str(p), "draft_exact": str(q),
               "conditional_accept_exact": str(min(Fraction(1), p / q)) if q else None,
               "accepted_mass_exact": str(a), "residual_exact": str(residual[y]) if residual else None,
               "output_exact": str(o), "wrong_output_exact": str(w)}
              for y, (p, q, a, o, w) in enumerate(zip(target, draft, accepted, output, wrong))]
    branches = [{"proposal_token": x, "replacement_token": y,
                 "corrected_mass_exact": str((q - a) * residual[y]), "wrong_mass_exact": str((q - a) * target[y])}
                for x, (q, a) in enumerate(zip(draft, accepted)) if q > a for y in range(len(target))]
    return {"vocabulary_size": len(target), "acceptance_exact": str(beta), "rejection_exact": str(1 - beta),
            "output_mass_exact": str(sum(output, Fraction(0))), "output_matches_target": output == list(target),
            "total_variation_exact": str(total_variation(output, target)),
            "wrong_total_variation_exact": str(total_variation(wrong, target)),
            "sampling_tokens": tokens, "rejection_branches": branches}

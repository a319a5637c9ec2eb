"""Speculative rounds with declared costs: an observed round ledger, and the best policy for a
finite output (the book's chapter-8 `speculative-round` and `speculative-budget` groups).

A draft option of k tokens is a histogram n_0..n_k: in n_a of its rounds exactly a drafts were
accepted. A round produces a + 1 tokens (the accepted drafts and the target's own next token)
and costs draft + verify + commit ns, whatever is accepted.

Round ledger (one option, the rounds as observed): R = sum n_a rounds deliver
D = sum n_a min(a + 1, M) tokens (M: the output still allowed, unlimited by default); the
acceptance is sum a n_a / (R k), the mean delivered D / R, the time per delivered token
R (draft + verify + commit) / D, and the speed-up over plain decoding at `baseline` ns per
token D baseline / (R (draft + verify + commit)).

Finite-output budget (Bellman, exact rationals): the state is (r tokens left, drafter
prepared). Plain decoding costs `baseline` and delivers one token; a draft option costs its
round plus `setup` once, the first time any option runs, and with probability n_a / R
delivers min(a + 1, r). The expected time to finish is

    V(0, w) = 0,
    V(r, w) = min over actions x of  cost_x + setup [x drafts and not w]
                                     + sum_a p_x(a) V(r - min(a + 1, r), w or x drafts),

ties going to the earlier action ("baseline", plain decoding, first; then the options in the
order given). Every fixed policy (one action throughout) is solved the same way beside it.
"""

from fractions import Fraction
from ...summation import plain_sum

ROUND_CONVENTION = (
    "Speculative round ledger (declared costs): n_a rounds accepted exactly a of k drafts; a round "
    "delivers min(a + 1, M) tokens and costs draft + verify + commit ns; acceptance = sum a n_a / "
    "(R k), time per delivered token = R x round / D, speed-up = D x baseline / (R x round); the "
    "target's verify pass is the ledger's k + 1 tokens at history P (--input-len), logits on every "
    "row.")

BUDGET_CONVENTION = (
    "Speculative budget (declared costs): state (tokens left r, drafter prepared w); plain decoding "
    "costs --baseline-token-ns per token; a --spec-option round costs draft + verify ns plus "
    "--setup-ns the first time any option runs and delivers min(a + 1, r) tokens with probability "
    "n_a / sum n; V(r, w) = the least expected time over the actions (Bellman, exact rationals; ties "
    "to the earlier action, baseline (plain decoding) first); each fixed policy solved beside it.")


def round_ledger(counts, draft_ns, verify_ns, commit_ns, baseline_ns, remaining=None):
    """The observed rounds' totals (exact rationals as Fractions)."""
    k = len(counts) - 1
    rounds = plain_sum(counts)
    accepted = plain_sum(a * n for a, n in enumerate(counts))
    delivered = plain_sum(n * (a + 1 if remaining is None else min(a + 1, remaining)) for a, n in enumerate(counts))
    round_ns = draft_ns + verify_ns + commit_ns
    total = rounds * round_ns
    return {"draft_tokens": k, "rounds": rounds, "accepted_drafts": accepted,
            "acceptance": Fraction(accepted, rounds * k), "mean_accepted": Fraction(accepted, rounds),
            "delivered_tokens": delivered, "mean_delivered": Fraction(delivered, rounds),
            "round_ns": round_ns, "total_ns": total, "baseline_ns": delivered * baseline_ns,
            "ns_per_delivered_token": Fraction(total, delivered),
            "speedup": Fraction(delivered * baseline_ns, total)}


class Action:
    """Plain decoding (drafts 0, counts [1]) or one draft option."""

    def __init__(self, name, cost_ns, counts):
        self.name, self.cost, self.counts = name, cost_ns, tuple(counts)
        self.drafts = len(counts) - 1
        total = plain_sum(counts)
        self.outcomes = [(a + 1, Fraction(n, total)) for a, n in enumerate(counts) if n]


def _value(r, warm, act, table, setup_ns):
    """(expected ns, expected rounds, expected clipped tokens) of taking `act` at (r, warm)."""
    drafting = act.drafts > 0
    ns = Fraction(act.cost + (setup_ns if drafting and not warm else 0))
    rounds, clipped = Fraction(1), Fraction(0)
    for produced, p in act.outcomes:
        got = min(produced, r)
        nxt = table[r - got, warm or drafting]
        ns += p * nxt[0]
        rounds += p * nxt[1]
        clipped += p * (produced - got + nxt[2])
    return ns, rounds, clipped


def budget(output_tokens, baseline_ns, setup_ns, options):
    """The adaptive policy's expected time and first action, each fixed policy's, and the action
    chosen at every state. `options`: (name, draft_ns + verify_ns, counts) per option."""
    actions = [Action("baseline", baseline_ns, [1])] + [Action(*o) for o in options]
    zero = (Fraction(0),) * 3
    best = {(0, False): zero, (0, True): zero}
    chosen = {}
    for r in range(1, output_tokens + 1):
        for warm in (False, True):
            values = [_value(r, warm, act, best, setup_ns) for act in actions]
            i = min(range(len(actions)), key=lambda j: values[j][0])   # first of the least
            best[r, warm], chosen[r, warm] = values[i], actions[i].name
    fixed = []
    for act in actions:
        table = {(0, False): zero, (0, True): zero}
        for r in range(1, output_tokens + 1):
            for warm in (False, True):
                table[r, warm] = _value(r, warm, act, table, setup_ns)
        fixed.append({"policy": act.name, "expected_ns": table[output_tokens, False][0],
                      "expected_rounds": table[output_tokens, False][1]})
    top = best[output_tokens, False]
    plain = output_tokens * baseline_ns
    return {"output_tokens": output_tokens, "plain_ns": plain, "expected_ns": top[0],
            "expected_rounds": top[1], "expected_clipped_tokens": top[2],
            "speedup": Fraction(plain) / top[0] if top[0] else None,
            "first_action": chosen.get((output_tokens, False)),
            "fixed_best": min(fixed[1:], key=lambda f: f["expected_ns"])["policy"] if len(fixed) > 1 else None,
            "fixed": fixed,
            "prepared_actions": [{"tokens_left": r, "action": chosen[r, True]}
                                 for r in range(1, min(output_tokens, 16) + 1)]}

"""The one exception type that means "the user's input is wrong".

The command-line entry point turns it into a single line on stderr and exit
status 2; everything else is a bug and keeps its traceback.
"""


class UserError(Exception):
    """Bad input: an unknown id, an impossible size, a malformed config."""


class MissingLink(UserError):
    """A collective's group spans a link tier the device does not have: a search reads the
    tier (and the canonical `reason`) from the error instead of parsing its text."""

    def __init__(self, tier, collective):
        self.tier, self.collective = tier, collective
        super().__init__(f"'{collective}' crosses the scale-{tier} tier, but the device has no such link; "
                         f"give --link-bw-{tier}")

    @property
    def reason(self):
        """The message without the collective's name: the same for every layout it refuses."""
        return f"a collective crosses the scale-{self.tier} tier, but the device has no such link; " \
               f"give --link-bw-{self.tier}"


def quote(value, limit=80):
    """User input for a one-line message: repr-style (quotes; newlines, escape
    sequences and other unprintable characters escaped), cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def one_line(text):
    """A message made safe for one terminal line: control characters escaped
    as repr would (a last guard behind `quote`, for text from argparse)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def suggest(word, choices, n=3):
    """Return '; did you mean a, b?' for the closest choices, or ''."""
    import difflib  # only on the error path

    close = difflib.get_close_matches(word, list(choices), n=n, cutoff=0.5)
    return f"; did you mean {', '.join(close)}?" if close else ""


def unknown(kind, word, choices, listing=None):
    """A UserError for an unknown id, naming the closest valid ones; with no close one,
    every choice, or, past 30 of them, their number and `listing` (how to list them),
    so that the message stays one readable line."""
    choices = list(choices)
    hint = suggest(word, choices)
    if not hint and listing and len(choices) > 30:
        hint = f"; none of the {len(choices)} {kind}s is close ({listing} lists them)"
    elif not hint:
        hint = f"; choose from {', '.join(sorted(choices))}"
    return UserError(f"unknown {kind} {quote(word)}{hint}")

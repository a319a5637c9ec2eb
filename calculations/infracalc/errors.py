"""The one exception type that means "the user's input is wrong".

The command-line entry point turns it into a single line on stderr and exit
status 2; everything else is a bug and keeps its traceback.
"""


class UserError(Exception):
    """Bad input: an unknown id, an impossible size, a malformed config."""


def suggest(word, choices, n=3):
    """Return '; did you mean a, b?' for the closest choices, or ''."""
    import difflib  # only on the error path

    close = difflib.get_close_matches(word, list(choices), n=n, cutoff=0.5)
    return f"; did you mean {', '.join(close)}?" if close else ""


def unknown(kind, word, choices):
    """A UserError for an unknown id, naming the closest valid ones."""
    hint = suggest(word, choices)
    if not hint:
        hint = f"; choose from {', '.join(sorted(choices))}"
    return UserError(f"unknown {kind} '{word}'{hint}")

"""Where the bundled data lives: model configs, device files, stored results,
the validation corpus.

In a source checkout they sit beside the package (calculations/models,
calculations/hardware, calculations/results, calculations/validation). A built wheel carries them inside
the package as infracalc/bundled/<name> (pyproject.toml maps those package
directories to the checkout's folders), so an installed `infra-calc` works
from any directory. The bundled copy is looked for first: it exists only in
an installed package, and a sibling folder of site-packages must never be
mistaken for the data.
"""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def data_dir(name):
    """The directory of one kind of bundled data: 'models', 'hardware', 'results' or 'validation'."""
    bundled = os.path.join(_HERE, "bundled", name)
    if os.path.isdir(bundled):
        return bundled
    return os.path.join(os.path.dirname(_HERE), name)


def installed():
    """True in an installed package (the data is infracalc/bundled/, inside site-packages),
    where nothing may be written: `reproduce` writes to a directory the user names."""
    return os.path.isdir(os.path.join(_HERE, "bundled"))

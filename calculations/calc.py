#!/usr/bin/env python3
"""infra-calc entry point: python3 calculations/calc.py SUBCOMMAND [options]."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# Bytecode caching follows the user's choice (-B, PYTHONDONTWRITEBYTECODE). A bad
# cache file of a module is recovered from by the package itself (infracalc/__init__.py);
# one of the package's own __init__ is removed here and the import tried once more.
try:
    from infracalc.cli import console
except (EOFError, ValueError, TypeError):
    import glob

    for stale in glob.glob(os.path.join(HERE, "infracalc", "__pycache__", "__init__.*.pyc")):
        try:
            os.unlink(stale)
        except OSError:
            pass
    for name in [m for m in sys.modules if m == "infracalc" or m.startswith("infracalc.")]:
        del sys.modules[name]
    sys.dont_write_bytecode = True
    from infracalc.cli import console

if __name__ == "__main__":
    console()

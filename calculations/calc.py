#!/usr/bin/env python3
"""infra-calc entry point: python3 calculations/calc.py SUBCOMMAND [options]."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Compiling the package's modules costs more than running them: cache their
# bytecode (in calculations/infracalc/__pycache__, git-ignored) even when
# PYTHONDONTWRITEBYTECODE is set in the environment.
sys.dont_write_bytecode = False

from infracalc.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

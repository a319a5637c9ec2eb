"""Packaging: the wheel's package list covers the code, and the data is found
both in a checkout and inside an installed package (infracalc/bundled/<name>).
The wheel itself is built, installed and run from another directory in .ci/run."""

import os
import tempfile
import unittest

from support import CALC, ROOT


class Packaging(unittest.TestCase):
    def test_every_code_package_is_listed(self):
        # pyproject.toml lists packages explicitly (the data folders are mapped in as
        # infracalc.bundled.*); a new code package missing from it would be left out of
        # the wheel.
        with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
            text = f.read()
        for folder, _, files in os.walk(os.path.join(CALC, "infracalc")):
            if "__init__.py" in files:
                name = os.path.relpath(folder, CALC).replace(os.sep, ".")
                self.assertIn(f'"{name}"', text, f"{name} missing from pyproject.toml packages")
        for name in ("models", "hardware", "results", "validation"):
            self.assertIn(f'"infracalc.bundled.{name}" = "calculations/{name}"', text)

    def test_every_data_file_is_package_data(self):
        # Each file under a bundled data folder must match one of its package-data
        # patterns (fnmatch on the path relative to the folder, as setuptools globs it),
        # or the installed wheel lacks it: a scenario's declared device file once did.
        # pyproject.toml is read as text (tomllib is Python 3.11+; the project supports 3.10):
        # each package-data line is `"infracalc.bundled.NAME" = ["glob", ...]`.
        import fnmatch
        import json
        with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
            lines = f.read().split("[tool.setuptools.package-data]", 1)[1].splitlines()
        patterns = {}
        for line in lines:
            if line.startswith('"infracalc.bundled.'):
                key, value = line.split(" = ", 1)
                patterns[json.loads(key)] = json.loads(value)
        for name in ("models", "hardware", "results", "validation"):
            globs = patterns[f"infracalc.bundled.{name}"]
            top = os.path.join(CALC, name)
            for folder, _, files in os.walk(top):
                for file in files:
                    rel = os.path.relpath(os.path.join(folder, file), top).replace(os.sep, "/")
                    if file.endswith(".py") or "__pycache__" in rel:
                        continue
                    depth = rel.count("/")
                    self.assertTrue(any(g.count("/") == depth and fnmatch.fnmatch(rel, g)
                                        for g in globs),
                                    f"{name}/{rel} matches no package-data pattern")

    def test_data_dir_in_a_checkout_and_installed(self):
        from infracalc import paths
        self.assertEqual(paths.data_dir("hardware"), os.path.join(CALC, "hardware"))
        with tempfile.TemporaryDirectory() as pkg:
            os.makedirs(os.path.join(pkg, "bundled", "models"))
            old = paths._HERE
            paths._HERE = pkg
            try:
                self.assertEqual(paths.data_dir("models"), os.path.join(pkg, "bundled", "models"))
            finally:
                paths._HERE = old


if __name__ == "__main__":
    unittest.main()

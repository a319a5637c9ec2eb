"""Issue 22 (hardening, round 2): one test class per point of the issue. Each test
fails on the main the issue was filed against."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from support import CALC, ROOT, run_cli as run

CALC_PY = os.path.join(CALC, "calc.py")


def bundled(kind, name):
    with open(f"{ROOT}/calculations/{kind}/{name}.json", encoding="utf-8") as f:
        return json.load(f)


class Case(unittest.TestCase):
    def folder(self):
        d = tempfile.mkdtemp(prefix="harden2-")
        self.addCleanup(shutil.rmtree, d, True)
        return d

    def calc(self, *args, cwd=None, env=None, **kw):
        return subprocess.run([sys.executable, CALC_PY, *args], cwd=cwd, env=env,
                              capture_output=True, text=True, **kw)


class WorkingDirectory(Case):
    """Point 1: a bundled id means the bundled model, whatever the working directory holds."""

    def setUp(self):
        self.cwd = self.folder()
        open(os.path.join(self.cwd, "gpt2"), "w").close()              # touch gpt2
        os.mkdir(os.path.join(self.cwd, "llama-3.1-8b"))               # an empty --local-dir
        os.mkdir(os.path.join(self.cwd, "qwen3-8b"))                   # a 2-layer look-alike
        cfg = bundled("models", "qwen3-8b")
        cfg["num_hidden_layers"] = 2
        with open(os.path.join(self.cwd, "qwen3-8b", "config.json"), "w") as f:
            json.dump(cfg, f)
        self.old = os.getcwd()
        os.chdir(self.cwd)
        self.addCleanup(os.chdir, self.old)

    def test_bundled_ids_win_over_local_files(self):
        status, out, err = run("models", "--model", "qwen3-8b", "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["model"]["layers"], 36)
        status, out, err = run("models")
        self.assertEqual(status, 0, err)
        self.assertNotIn("malformed", out)

    def test_a_path_is_a_path(self):
        status, out, err = run("models", "--model", "./qwen3-8b", "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertIn('"layers": 2', out)
        status, out, err = run("models", "--model", "./gpt2")
        self.assertEqual(status, 2)
        self.assertIn("./gpt2", err)

    def test_reproduce_and_validate_ignore_the_working_directory(self):
        p = self.calc("reproduce", "--check", "--only", "kv-qwen3-8b-32k-b8-h100", cwd=self.cwd)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = self.calc("validate", "--format", "csv", cwd=self.cwd)
        self.assertEqual(p.returncode, 0, p.stderr)

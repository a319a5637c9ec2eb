"""Issue 12: no traceback, no hang, no half-written file, whatever the input or
the environment. One test class per point of the issue; the decode-sum cost
(point 1) is tested in test_decode (RepeatedChunks)."""

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
        d = tempfile.mkdtemp(prefix="harden-")
        self.addCleanup(shutil.rmtree, d)
        return d

    def file(self, text, name="x.json", mode="w"):
        path = os.path.join(self.folder(), name)
        with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            f.write(text)
        return path

    def assertOneLine(self, argv, *fragments):
        status, out, err = run(*argv)
        self.assertEqual((status, out), (2, ""), err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.isprintable() or err[:-1].isprintable(), repr(err))
        for fragment in fragments:
            self.assertIn(fragment, err)
        return err


class Tracebacks(Case):
    """Point 2: inputs that raised RecursionError, ValueError, OverflowError."""

    def test_deep_nesting_in_every_json_input(self):
        deep = self.file("[" * 100_000 + "]" * 100_000)
        shallow_but_deep = self.file('{"loads": ' + "[" * 70 + "1" + "]" * 70 + "}")
        for argv in (["models", "--model", deep], ["forward", "--model", "qwen3-8b", "--device", deep],
                     ["forward", "--model", "qwen3-30b-a3b", "--routing", deep],
                     ["forward", "--model", "qwen3-30b-a3b", "--routing", shallow_but_deep]):
            with self.subTest(argv=argv[1:3]):
                self.assertOneLine(argv, "nested more than 64 deep")

    def test_nesting_limit_is_exact_whether_or_not_the_walk_runs(self):
        # read_json walks the tree only when the text has more than 64 opening brackets
        # (depth <= brackets); 64 levels pass, 65 fail, and brackets inside strings only
        # make the walk run, never change the answer.
        from infracalc.errors import UserError
        from infracalc.load.jsonfile import MAX_DEPTH, read_json
        self.assertEqual(MAX_DEPTH, 64)
        ok = "[" * 64 + "]" * 64
        self.assertEqual(read_json(self.file(ok)), json.loads(ok))
        with self.assertRaises(UserError):
            read_json(self.file("[" * 65 + "]" * 65))
        inner = "[" * 63 + "]" * 63   # 64 levels with the object around it
        noisy = '{"note": "' + "[" * 100 + '", "x": ' + inner + "}"
        self.assertEqual(read_json(self.file(noisy))["x"], json.loads(inner))

    def test_integer_of_more_than_4300_digits(self):
        cfg = json.dumps(bundled("models", "qwen3-8b"))
        path = self.file(cfg[:-1] + ', "rope_theta": ' + "7" * 4301 + "}")
        self.assertOneLine(["models", "--model", path], "an integer of 4,301 digits (at most 4,300)")
        huge = self.file('{"loads": [' + "1" * 5000 + "]}")
        self.assertOneLine(["forward", "--model", "qwen3-30b-a3b", "--routing", huge], "5,000 digits")

    def test_float_overflowing_to_infinity(self):
        path = self.file('{"loads": [1, 1e999]}')
        self.assertOneLine(["forward", "--model", "qwen3-30b-a3b", "--routing", path], "'1e999' is too large")

    def test_more_experts_per_token_than_experts_in_every_moe_loader(self):
        # (bundled model, key of the routed experts, where the keys live)
        cases = (("qwen3-30b-a3b", "num_experts", None), ("mixtral-8x7b", "num_local_experts", None),
                 ("gpt-oss-20b", "num_local_experts", None), ("deepseek-v3", "n_routed_experts", None),
                 ("qwen3-next-80b-a3b", "num_experts", None),
                 ("llama-4-scout", "num_local_experts", "text_config"))
        for model, key, sub in cases:
            with self.subTest(model=model):
                cfg = bundled("models", model)
                inner = cfg[sub] if sub else cfg
                experts = inner[key]
                inner["num_experts_per_tok"] = experts + 1
                if "experts_per_token" in inner:
                    inner["experts_per_token"] = experts + 1
                path = self.file(json.dumps(cfg))
                self.assertOneLine(["models", "--model", path], "num_experts_per_tok",
                                   f"is {experts + 1:,}, more than the {experts:,} experts")


class Cost(Case):
    """Point 1 beyond decode (whose sum is tested in test_decode.RepeatedChunks): cost
    grows with the distinct stages of a layout, not with its pipeline depth."""

    def test_parallel_serving_bound_once_per_distinct_stage(self):
        # 2,048 equal layers over 512 stages: the first stage holds the embedding, the last
        # the final norm and head, the 510 others the same 4-layer shard. serving_record
        # keyed its cache by layer range, so every stage had its own bound (parallel
        # --pp 4096 on 65,536 layers ran over a minute; now about 3 s, mostly JSON).
        from infracalc.analyses import serving

        cfg = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
               "head_dim": 16, "intermediate_size": 128, "num_hidden_layers": 2048, "vocab_size": 1000,
               "max_position_embeddings": 4096, "hidden_act": "silu"}
        path = self.file(json.dumps(cfg))
        calls, real = [], serving.serving_bound

        def counted(*args, **kwargs):
            calls.append(1)
            return real(*args, **kwargs)

        serving.serving_bound = counted
        try:
            status, out, err = run("parallel", "--model", path, "--devices", "512", "--pp", "512",
                                   "--input-len", "16", "--output-len", "16", "--format", "json")
        finally:
            serving.serving_bound = real
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(len(calls), 3)
        stages = json.loads(out)["serving"]["stages"]
        self.assertEqual([s["stage"] for s in stages], list(range(512)))
        middle = {json.dumps({k: v for k, v in s.items() if k != "stage"}) for s in stages[1:-1]}
        self.assertEqual(len(middle), 1)
        self.assertNotIn(json.dumps({k: v for k, v in stages[0].items() if k != "stage"}), middle)


def _cli(args, shell_suffix="", **kwargs):
    """calc.py in a fresh process through sh (for redirections a Popen cannot express)."""
    cmd = " ".join([sys.executable, CALC_PY, *args]) + shell_suffix
    return subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120, **kwargs)


class Streams(Case):
    """Point 3 (and 'closed stdout' of point 2): the stream policy of cli.main."""

    def test_broken_pipe_exits_quietly_with_status_0(self):
        p = subprocess.Popen([sys.executable, CALC_PY, "models", "--format", "json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdout.close()     # the reader is gone before the first write
        err = p.stderr.read()
        p.stderr.close()
        self.assertEqual((p.wait(timeout=120), err), (0, b""))

    def test_full_disk_on_stdout_is_one_line_status_2(self):
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full")
        for args in (["models"], ["forward", "--help"], []):
            with self.subTest(args=args):
                p = _cli(args, " > /dev/full")
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(p.stderr, "infra-calc: error: cannot write to standard output: "
                                           "No space left on device\n")

    def test_closed_stdout_and_stderr(self):
        p = _cli(["models"], " >&-")
        self.assertEqual((p.returncode, p.stderr),
                         (2, "infra-calc: error: standard output is closed; use --output FILE\n"))
        p = _cli(["forward", "--model", "nope"], " 2>&-")
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        p = _cli(["hardware"], " 2>&-")
        self.assertEqual(p.returncode, 0)
        self.assertTrue(p.stdout.startswith("# Bundled devices"))


    def test_file_size_limit_on_stdout_is_one_line(self):
        # A partial write to a size-limited file used to pass a buffered flush silently (exit 0,
        # output cut at the limit).
        try:
            import resource
        except ImportError:
            self.skipTest("no resource module")
        path = os.path.join(self.folder(), "out.md")
        # The size limit also cuts the bytecode calc.py caches (CPython writes a .pyc without
        # checking for a short write): on a cold cache the package's __pycache__ kept truncated
        # files and every later run died with "EOFError: marshal data too short". The child's
        # bytecode goes to a throwaway folder instead.
        env = dict(os.environ, PYTHONPYCACHEPREFIX=self.folder())
        with open(path, "wb") as out:
            p = subprocess.run([sys.executable, CALC_PY, "forward", "--model", "qwen3-8b"], stdout=out,
                               stderr=subprocess.PIPE, text=True, timeout=120, env=env,
                               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048)))
        self.assertEqual((p.returncode, p.stderr),
                         (2, "infra-calc: error: cannot write to standard output: File too large\n"))

    def test_output_is_utf8_whatever_the_locale(self):
        dev = bundled("hardware", "h100-sxm")
        dev["name"] = "H100 \u00d7"
        path = self.file(json.dumps(dev))
        p = subprocess.run([sys.executable, CALC_PY, "forward", "--model", "qwen3-0.6b", "--device", path],
                           capture_output=True, timeout=120, env=dict(os.environ, PYTHONIOENCODING="ascii"))
        self.assertEqual((p.returncode, p.stderr), (0, b""))
        self.assertIn("- Device: H100 \u00d7 (`h100-sxm`)".encode(), p.stdout)

    def test_undecodable_file_name_gives_valid_json(self):
        if sys.platform == "win32" or os.fsencode("\udcff") != b"\xff":
            self.skipTest("file names are not bytes here")
        folder = self.folder()
        name = os.path.join(folder, "\udcff.json")   # the byte 0xff, not UTF-8
        shutil.copy(os.path.join(CALC, "models", "qwen3-0.6b.json"), name)
        p = subprocess.run([sys.executable, CALC_PY, "models", "--model", name, "--format", "json"],
                           capture_output=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout.decode("utf-8"))["model"]["id"], "\udcff")


class NotRegularFiles(Case):
    """Point 4: a FIFO hung forever; anything but a regular file is refused unopened."""

    def test_fifo_device_and_directory(self):
        if not hasattr(os, "mkfifo"):
            self.skipTest("no FIFOs")
        fifo = os.path.join(self.folder(), "loads.json")
        os.mkfifo(fifo)
        # In a fresh process with a time limit: a regression would block on open().
        p = subprocess.run([sys.executable, CALC_PY, "forward", "--model", "qwen3-8b", "--routing", fifo],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual((p.returncode, p.stderr),
                         (2, f"infra-calc: error: routing file '{fifo}' is a FIFO (named pipe), not a "
                             "regular file\n"))
        self.assertOneLine(["models", "--model", fifo], "model config file", "is a FIFO")
        self.assertOneLine(["forward", "--model", "qwen3-8b", "--device", fifo], "device file", "is a FIFO")
        self.assertOneLine(["forward", "--model", "qwen3-8b", "--device", os.devnull],
                           f"device file '{os.devnull}' is a character device")
        folder = self.folder()
        os.mkdir(os.path.join(folder, "d.json"))
        self.assertOneLine(["forward", "--model", "qwen3-30b-a3b", "--routing", os.path.join(folder, "d.json")],
                           "is a directory, not a regular file")
        self.assertOneLine(["forward", "--model", "qwen3-8b", "--routing", "/no/such.json"],
                           "routing file not found: '/no/such.json'")


# Both commands that draw a --plot (decode's and parallel's batch sweeps).
SWEEPS = (["decode", "--model", "qwen3-8b", "--input-len", "8", "--output-len", "4", "--batch-sweep"],
          ["parallel", "--model", "qwen3-8b", "--devices", "8", "--tp", "8", "--input-len", "8",
           "--output-len", "4", "--batch-sweep"])


class AllOrNothing(Case):
    """Point 5: outputs are renamed into place only when the command succeeded."""

    def test_failed_command_leaves_the_old_output(self):
        path = self.file("good\n", "out.md")
        status, _, _ = run("forward", "--model", "qwen3-7b", "--output", path)
        self.assertEqual(status, 2)
        with open(path) as f:
            self.assertEqual(f.read(), "good\n")

    def test_failed_output_leaves_no_plot(self):
        # parallel wrote its --plot in place before the --output failed (found in the issue 12 audit)
        for sweep in SWEEPS:
            with self.subTest(command=sweep[0]):
                folder = self.folder()
                plot = os.path.join(folder, "p.svg")
                self.assertOneLine(sweep + ["--plot", plot, "--output", os.path.join(folder, "no", "x.md")],
                                   "cannot write --output")
                self.assertEqual(os.listdir(folder), [])
                status, _, err = run(*sweep, "--plot", plot, "--output", os.path.join(folder, "x.md"))
                self.assertEqual((status, err), (0, ""))
                self.assertEqual(sorted(os.listdir(folder)), ["p.svg", "x.md"])

    def test_failed_write_keeps_the_target_and_removes_the_temporary(self):
        from infracalc.cli import files

        folder = self.folder()
        a, b = os.path.join(folder, "a.md"), os.path.join(folder, "b.md")
        for p in (a, b):
            with open(p, "w") as f:
                f.write("old\n")
        os.chmod(a, 0o640)
        real = os.fsync
        calls = []

        def full_on_second(fd):
            calls.append(fd)
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
            return real(fd)

        os.fsync = full_on_second
        try:
            with self.assertRaises(Exception) as caught:
                files.write_files([("--output", a, "new\n"), ("--plot", b, "new\n")])
        finally:
            os.fsync = real
        self.assertEqual(str(caught.exception), f"cannot write --plot '{b}': No space left on device")
        for p in (a, b):
            with open(p) as f:
                self.assertEqual(f.read(), "old\n")
        self.assertEqual(sorted(os.listdir(folder)), ["a.md", "b.md"])
        files.write_files([("--output", a, "new\n")])
        with open(a) as f:
            self.assertEqual(f.read(), "new\n")
        self.assertEqual(os.stat(a).st_mode & 0o777, 0o640)   # the replaced file's permissions

    def test_reproduce_writes_through_the_one_writer(self):
        from infracalc.cli import files

        seen = []
        real = files.write_files
        files.write_files = seen.append
        try:
            status, out, err = run("reproduce", "--only", "models")
        finally:
            files.write_files = real
        self.assertEqual(status, 0, err)
        self.assertEqual([(flag, os.path.basename(p)) for flag, p, _ in seen[0]],
                         [("result", "models.md"), ("result", "models.json")])


class RawInput(Case):
    """Point 6: input quoted in messages; Markdown cells and lines escaped."""

    def test_newline_and_escape_sequence_in_arguments(self):
        err = self.assertOneLine(["forward", "--model", "a\nb\x1b[31m"], r"unknown model 'a\nb\x1b[31m'")
        self.assertNotIn("\x1b", err)
        self.assertOneLine(["forward", "--model", "qwen3-8b", "--batch", "1\n2"], r"got '1\n2'")
        self.assertOneLine(["forward", "--model", "qwen3-8b", "--x\ny"], r"--x\ny")

    def test_device_id_and_name_with_newline_and_pipe(self):
        from infracalc.render.table import cell, markdown_table

        self.assertEqual(cell("a|b\nc\x1b"), r"a\|b\nc\x1b")
        self.assertEqual(markdown_table(["k", "v"], [["x|y", 1]]), "| k    |   v |\n| ---- | --: |\n| x\\|y |   1 |")
        dev = bundled("hardware", "h100-sxm")
        plain = run("forward", "--model", "qwen3-0.6b", "--device", self.file(json.dumps(dev)))[1]
        dev.update(id="a|b\nc\x1b[2J", name="x|y\nz")
        status, out, err = run("forward", "--model", "qwen3-0.6b", "--device", self.file(json.dumps(dev)))
        self.assertEqual(status, 0, err)
        self.assertEqual(len(out.splitlines()), len(plain.splitlines()))
        self.assertNotIn("\x1b", out)
        self.assertIn(r"- Device: x|y\nz (`a|b\nc\x1b[2J`)", out)


    def test_every_markdown_header_escapes_ids_names_and_links(self):
        # parallel and train printed a device's id, name and link names and a model's id
        # raw in their titles and header lines (found in the issue 12 audit).
        dev = bundled("hardware", "h100-sxm")
        plain_dev = self.file(json.dumps(dev))
        dev.update(id="a|b\nc\x1b[2J", name="x|y\nz")
        dev["scale_up"]["name"], dev["scale_out"]["name"] = "p\nq\x1b[1m", "s\nt"
        evil_dev = self.file(json.dumps(dev))
        cfg = json.dumps(bundled("models", "qwen3-0.6b"))
        plain_model, evil_model = self.file(cfg, "m.json"), self.file(cfg, "m\x1b[3m\nn.json")
        for argv in (["forward"], ["parallel", "--devices", "2", "--tp", "2", "--input-len", "8", "--output-len", "4"],
                     ["parallel", "--devices", "2", "--search", "--input-len", "8", "--output-len", "4"],
                     ["train", "--seq", "16"], ["train", "--seq", "16", "--devices", "2", "--tp", "2"],
                     ["train", "--seq", "16", "--devices", "2", "--search", "--global-batch", "4"]):
            with self.subTest(argv=argv):
                plain = run(*argv, "--model", plain_model, "--device", plain_dev)
                status, out, err = run(*argv, "--model", evil_model, "--device", evil_dev)
                self.assertEqual((status, err, plain[0]), (0, "", 0))
                self.assertEqual(len(out.splitlines()), len(plain[1].splitlines()))
                self.assertNotIn("\x1b", out)
                self.assertIn(r"m\x1b[3m\nn on ", out.splitlines()[0])
                self.assertIn(r"a|b\nc\x1b[2J", out.splitlines()[0])
        # encode's title printed a VL model's id raw (fuzz seed 33)
        vl = json.dumps(bundled("models", "qwen3-vl-4b"))
        plain = run("encode", "--model", self.file(vl, "v.json"), "--image", "64x64")
        status, out, err = run("encode", "--model", self.file(vl, "v\x1b[2J\nw.json"), "--image", "64x64")
        self.assertEqual((status, err, plain[0]), (0, "", 0))
        self.assertEqual(len(out.splitlines()), len(plain[1].splitlines()))
        self.assertNotIn("\x1b", out)
        self.assertIn(r"# encode: v\x1b[2J\nw vision encoder", out)


class InputSize(Case):
    """Point 7: input files are bounded (8 MiB) and the message says so."""

    def test_oversized_config_refused_unread(self):
        path = self.file(" " * (8 * 2**20) + "{}")
        self.assertOneLine(["models", "--model", path], "larger than 8 MiB", "refused unread")
        at_bound = self.file(" " * (8 * 2**20 - 2) + "{}")
        self.assertOneLine(["models", "--model", at_bound], "missing required field 'model_type'")


class Smaller(Case):
    """Point 8."""

    def test_device_without_scale_up_in_every_format(self):
        # Found by the fuzzer: `hardware --device FILE --format csv` raised TypeError when the
        # file's scale_up is null (no scale-up link published).
        dev = bundled("hardware", "h100-sxm")
        dev["scale_up"] = None
        path = self.file(json.dumps(dev))
        for fmt in ("md", "json", "csv"):
            with self.subTest(fmt=fmt):
                status, out, err = run("hardware", "--device", path, "--format", fmt)
                self.assertEqual((status, err), (0, ""))
        row = dict(zip(*(line.split(",") for line in out.splitlines()[:2])))
        self.assertEqual((row["scale_up_bytes_per_s_per_direction"], row["scale_up_domain_size"]), ("", ""))

    def test_empty_csv_table_keeps_its_header(self):
        # Found by the fuzzer: a shared prefix past the model's maximum context leaves no
        # row in kv's concurrency table, and the CSV was empty (not even a header).
        status, out, err = run("kv", "--model", "deepseek-v3", "--context", "1000000000000000",
                               "--shared-prefix", "1000000000000000", "--format", "csv")
        self.assertEqual((status, out, err), (0, "context,max_requests,binding_stage\n", ""))

    def test_empty_file_names_refused(self):
        self.assertOneLine(["models", "--output", ""], "argument --output: needs a file name")
        for sweep in SWEEPS:   # parallel --plot '' was silently ignored
            with self.subTest(command=sweep[0]):
                self.assertOneLine(sweep + ["--plot", ""], "argument --plot: needs a file name")

    def test_plot_to_a_full_device_names_the_file(self):
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full")
        for sweep in SWEEPS:   # parallel said only 'No space left on device'
            with self.subTest(command=sweep[0]):
                self.assertOneLine(sweep + ["--plot", "/dev/full", "--format", "json"],
                                   "cannot write --plot '/dev/full': No space left on device")

    def test_device_errors_name_the_path_given(self):
        dev = bundled("hardware", "h100-sxm")
        dev["memory_bytes"] = -1
        path = self.file(json.dumps(dev))
        err = self.assertOneLine(["forward", "--model", "qwen3-8b", "--device", path],
                                 f"'{path}': field 'memory_bytes'")
        self.assertNotIn("h100-sxm", err)
        dev["memory_bytes"] = 80 * 10**9
        path = self.file(json.dumps(dev))
        self.assertOneLine(["forward", "--model", "qwen3-8b", "--device", path, "--act-dtype", "fp4"],
                           f"device '{path}' has no fp4 matrix peak")

    def test_integer_options_take_ascii_digits_only(self):
        for value in ("1,0,0", "_1", "1_0", "\u0661\u0660", "\uff11", " 1", "+1", "1e3"):
            with self.subTest(value=value):
                self.assertOneLine(["forward", "--model", "qwen3-8b", "--batch", value],
                                   "argument --batch", "ASCII digits only")
        for value in ("1,0,0", "_80GiB", "\u0668\u0660GiB", "1e3"):
            with self.subTest(value=value):
                self.assertOneLine(["kv", "--model", "qwen3-8b", "--context", "8", "--memory-bytes", value],
                                   "argument --memory-bytes")
        self.assertEqual(run("forward", "--model", "qwen3-8b", "--batch", "007", "--format", "json")[0], 0)

    def test_integer_lists_take_ascii_digits_only(self):
        # parallel --pp-layers and train --cp-values read each item with int(): '1_8' and
        # Arabic-Indic '١٨,١٨' were 18,18 (found in the issue 12 audit).
        pp = ["parallel", "--model", "qwen3-8b", "--devices", "2", "--pp", "2", "--input-len", "8",
              "--output-len", "4", "--format", "json", "--pp-layers"]
        cp = ["train", "--model", "qwen3-8b", "--seq", "16", "--devices", "2", "--search", "--global-batch", "4",
              "--format", "json", "--cp-values"]
        for value in ("\u0661\u0668,\u0661\u0668", "1_8,18", "+18,18", "18,,18", "0,36", "1e1,26"):
            with self.subTest(value=value):
                self.assertOneLine(pp + [value], "argument --pp-layers", "ASCII digits")
                self.assertOneLine(cp + [value], "--cp-values", "ASCII digits")
        status, out, err = run(*pp, "20, 16")
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(json.loads(out)["layout"]["pp_layers"], [20, 16])
        status, out, err = run(*cp, "2,1,2")
        self.assertEqual((status, err), (0, ""))

    def test_token_counts_take_ascii_digits_only(self):
        argv = ["train", "--model", "qwen3-8b", "--seq", "16", "--format", "json", "--train-tokens"]
        for value in ("1_0T", "1,0T", "\u0661\u0660T", " 15T", "1e3", ".5T"):
            with self.subTest(value=value):
                self.assertOneLine(argv + [value], "argument --train-tokens", "ASCII digits")
        status, out, err = run(*argv, "2.5T")
        self.assertEqual(status, 0, err)

    def test_link_bandwidth_below_one_byte_per_second(self):
        # --link-bw-up 1e-300 truncated to 0 B/s and divided by it (ZeroDivisionError).
        self.assertOneLine(["train", "--model", "qwen3-8b", "--seq", "16", "--tp", "8", "--devices", "16",
                            "--link-bw-up", "1e-300"], "--link-bw-up must be a bandwidth from 1 to 1e30")

    def test_memory_bytes_bound_is_the_device_file_bound(self):
        # 10^30 B: the largest memory_bytes a device file may state (load/hardware.py MAX_FIGURE).
        argv = ["kv", "--model", "qwen3-8b", "--context", "8", "--format", "json", "--memory-bytes"]
        status, out, err = run(*argv, str(10**30))
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["inputs"]["memory_bytes"], 10**30)
        self.assertOneLine(argv + [str(10**30 + 1)], "up to 10^30")
        self.assertOneLine(argv + ["1000000000000000001TB"], "up to 10^30")

    def test_duplicate_keys_refused_and_bom_accepted(self):
        cfg = json.dumps(bundled("models", "qwen3-8b"))
        dup = self.file(cfg[:-1] + ', "num_hidden_layers": 2}')
        self.assertOneLine(["models", "--model", dup], "key 'num_hidden_layers' appears twice in one object")
        bom = self.file(b"\xef\xbb\xbf" + cfg.encode(), mode="wb")
        status, out, err = run("models", "--model", bom, "--format", "json")
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["model"]["params"], 8_190_735_360)


if __name__ == "__main__":
    unittest.main()

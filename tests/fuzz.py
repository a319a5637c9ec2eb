"""The project's own fuzzer (stdlib only): generated argument vectors, mutated
config, device and routing files, and hostile paths, checked against the
error contract.

Flags are drawn per subcommand from that subcommand's own argparse definition
(cli.COMMANDS and each module's add_arguments), so a new command or option is
covered as soon as it is registered. Values come from pools chosen by the
option's type (its converter's name) or destination: boundary and malformed
integers, numbers, choices and near-misses, bundled ids, mutated files and
special paths (FIFO, device, directory, missing file, /dev/full).

The contract, per call, within a time limit: exit status 0 with valid output
(JSON that parses, without NaN or Infinity; Markdown without a control
character but its line breaks; any output file written) and nothing on
stderr, or exit status 2 with exactly one printable line on stderr, nothing
on stdout and no new --output or --plot file. `reproduce` is drawn with --check or --list only (it
would otherwise rewrite the stored results) and mostly with --only, `validate`
mostly with --case (a whole stored corpus per call would dominate the time).

Calls run in this process (cli.main with redirected streams), which keeps a
vector to a few milliseconds; the time limit is a SIGALRM timer where one
exists. Used by tests/test_fuzz.py (a small fixed-seed sample) and
scripts/fuzz.py (a larger one).
"""

import argparse
import contextlib
import importlib
import io
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALC = os.path.join(ROOT, "calculations")
if CALC not in sys.path:
    sys.path.insert(0, CALC)

from infracalc import cli  # noqa: E402

INTS = ("0", "1", "2", "3", "7", "64", "1000", "4096", "65536", "1000000", "1000000000000000",
        "1000000000000001", "-1", "1,0,0", "_1", "1_0", "\u0661\u0660", "\uff18", " 8", "+8", "1e3",
        "1.5", "", "nan", "9" * 30, "8\n", "0x10")
NUMBERS = ("0", "1", "0.5", "1e-6", "1e-7", "1.0000001", "-0", "nan", "inf", "-inf", "1e308",
           "", "x", "0,5")
STRINGS = ("", "x", "-", "--", "a\nb", "\x1b[31mred", "|", "../..", "\u202eevil", "x" * 300, "%s", "{}")
BYTE_SIZES = ("1", "0", "80GiB", "141GB", "1TB", "1000000000000000000000000000000",
              "1000000000000000000000000000001", "80 GiB", "80gib", "GiB", "1,0", "-5", "5%", "7.5%",
              "99.9%", "100%", "1_0%", ".5%")
GOOD_INTS = ("1", "2", "3", "7", "16", "64", "128", "1000", "4096", "8192", "32768", "131072",
             "1000000", "10000000000", "1000000000000000")
GOOD_NUMBERS = ("1", "0.5", "0.9", "1e-6", "0.25")
GOOD_BYTES = ("80GiB", "141GB", "1", "1000000000000000000000000000000", "0", "10%", "7.5%", "0%")
GARBAGE = ("--nope", "-x", "extra", "--format=xml", "--", "-h?", "\x00")

# Config fields worth breaking (any bundled config may hold them).
FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
          "intermediate_size", "vocab_size", "max_position_embeddings", "num_experts",
          "num_local_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
          "sliding_window", "attention_chunk_size", "layer_types", "model_type", "tie_word_embeddings",
          "partial_rotary_factor", "rope_theta", "quantization_config", "decoder_sparse_step",
          "mlp_only_layers", "kv_lora_rank", "q_lora_rank", "first_k_dense_replace", "text_config",
          "linear_num_value_heads", "full_attention_interval", "experts_per_token")
VALUES = (0, 1, -1, 2, 3, 7, 2**31 - 1, 2**31, 65536, 65537, 10**30, 1.5, 0.0, True, False, None, "x", "",
          [], {}, [0], [1, 2], "llama", "qwen3_moe", "gpt_oss", {"quant_method": "fp8"})
DEVICE_FIELDS = ("id", "name", "vendor", "memory_bytes", "memory_bandwidth_bytes_per_s",
                 "matrix_flops_per_s", "vector_flops_per_s", "scale_up", "scale_out", "tdp_watts")
DEVICE_VALUES = (0, 1, -1, 10**30, 10**30 + 1, 1.5, True, None, "", "a|b\nc", "\x1b[2J", [], {},
                 {"bf16": 1}, {"fp9": 1}, {"fp32": 0}, {"name": "x", "bytes_per_s_per_direction": 1})


# Every field a link tier may hold (load/hardware.LINK_SCHEMA), and values to break them.
LINK_FIELDS = ("name", "bytes_per_s_per_direction", "domain_size", "topology", "links_per_device",
               "bytes_per_s_per_link", "wraparound_axis", "in_network_reduce", "in_network_efficiency",
               "in_network_alpha_s", "alpha_s", "nics_per_device")
LINK_VALUES = (0, 1, -1, 2, 8, 72, 10**30, 10**30 + 1, 0.5, 1.5, 2.5e-05, 1e-300, True, False, None, "",
               "switch", "torus", "mesh", "ring", [], {}, [8], "x\x1b[2J")
# Nested config objects (rope_scaling, quantization_config, text_config's own) and values.
NESTED_VALUES = (0, 1, -1, 8.0, 0.5, 1e30, True, None, "", "yarn", "llama3", "linear", "dynamic",
                 "fp8", "mxfp4", [], {}, [128, 128], {"type": "yarn"})

# Well-formed values of the structured options (drawn now and then instead of the generic
# pools, so the fuzzer reaches their computations, not only their parsers), by destination.
EXAMPLES = {
    "worker": ("p:4:16384:64", "d:2:4096:256", "A:2:h100-sxm", "B:1:a100-sxm-80gb", "q:1:3/2:1"),
    "accepted_counts": ("2,1,1,2,4", "10,0", "0,1"),
    "spec_option": ("d1:100000:1000000:1,3", "d2:100000:1150000:4,3,9"),
    "cache_route": ("250000000:20000000:180000000:10000000:10000000", "5:1:4:1:1"),
    "offload_ffn_layers": ("3:36:4", "0,1", "1"),
    "tile": ("64x32x128", "8x32x128", "32x32x32"),
    "replica": ("0:1", "1:2", "7:0"),
    "prefix_candidate": ("a:512:1:1", "b:1024:16:2", "c:16:1:1/2"),
    "acceptance": ("0.8", "0.7,0.6", "1"),
    "hit_probability": ("9/10", "0.5", "1"),
    "host_link_bw": ("pcie5", "25GB/s"),
    "image": ("640x640", "256x256", "512x320"),
    "loads": ("3x64,1x64", "3,1", "1x128"),
    "capacity_factor": ("1", "1,1.25,2"),
    "cards": ("32,48,96", "48"),
    "ranks": ("8", "16", "1,8,1024"),
    "recompute_modules": ("layernorm", "core_attn,moe_act", "mla_up_proj"),
    "patterns": ("recursive", "swing", "recursive,swing"),
    # budget kinds of session 5 (supernode, rl-supply, decision, history, chip-power, gradient-ring, incast,
    # wan-loss) and kv --screen: structured values that reach their computations
    "candidate": ("8:20ms:6ms", "4:30ms:10ms", "2:48ms:16ms"),   # supernode's (routing's is NAME,KEY=VALUE)
    "deadline": ("80ms", "250ms", "6s"),
    "min_valid": ("3/4", "1"),
    "rate": ("rollout-prefill=actor:200T", "rollout-decode=actor:20T", "policy-update=learner:200T", "100T"),
    "verifier": ("verifier:50ms:8",),
    "sync": ("weight_link:50GB/s",),
    "speedup": ("actor=2",),
    "compare": ("llama1-7b:llama2-7b", "llama2-7b:qwen3-8b-proxy"),
    "count_range": ("llama2-7b:6:7",),
    "lifecycle": ("llama2-7b", "deepseek-v3-pretraining"),
    "voltage": ("0.85,0.55",),
    "power_area": ("0.75,0.60",),
    "rack": ("120,12,1.2",),
    "bus": ("4,16",),
    "pin_rate": ("10.7Gb/s",),
    "matrix_peak": ("bf16=989.4T",),
    "nic_bw": ("50GB/s",),
    "local_bw": ("450GB/s",),
    "startup": ("833ns", "2us"),
    "budget": ("3ms",),
    "sender_rate": ("50GB/s",),
    "egress": ("50GB/s",),
    "rtt": ("20us", "0.2s"),
    "knee": ("333Mb/s",),
    "loss": ("0.14", "0.036"),
    "compute_efficiency": ("2/5", "1"),
    "memory_efficiency": ("1/2", "1"),
    "screen": ("80GiB,141GB", "24GB"),
}


def _bundled(kind):
    folder = os.path.join(CALC, kind)
    out = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                out[name[:-5]] = json.load(f)
    return out


class Files:
    """A temporary folder of hostile inputs, made on demand from a Random."""

    def __init__(self, rnd):
        self.rnd = rnd
        self.dir = tempfile.mkdtemp(prefix="infracalc-fuzz-")
        self.models = _bundled("models")
        self.devices = _bundled("hardware")
        folder = os.path.join(CALC, "validation")
        self.cases = tuple(sorted(n[:-5] for n in os.listdir(folder) if n.endswith(".json"))
                           if os.path.isdir(folder) else ())
        self.n = 0
        self.fifo = os.path.join(self.dir, "fifo.json")
        if hasattr(os, "mkfifo"):
            os.mkfifo(self.fifo)
        os.mkdir(os.path.join(self.dir, "folder.json"))

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, suffix=".json"):
        """A fresh file name; now and then one with a newline, '|', an escape sequence or an
        undecodable byte (a surrogate in Python) in it."""
        self.n += 1
        odd = self.rnd.choice(("", "", "", "", "\n|", "\x1b[2J", "\udcff", " x"))
        try:
            os.fsencode(odd)
        except UnicodeError:   # a file system that cannot name it
            odd = ""
        return os.path.join(self.dir, f"f{self.n}{odd}{suffix}")

    def write(self, data, suffix=".json"):
        path = self.path(suffix)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
        return path

    def special(self):
        return self.rnd.choice([self.fifo, os.devnull, os.path.join(self.dir, "folder.json"),
                                os.path.join(self.dir, "missing.json"), self.dir])

    def raw(self, text):
        """Byte-level mutations of a JSON text (the cases of issue 12 among them)."""
        r = self.rnd
        kind = r.randrange(12)
        if kind == 0:
            return b"\xef\xbb\xbf" + text.encode()                    # byte-order mark: accepted
        if kind == 1:
            return (text[:-1] + ', "hidden_size": 8}').encode()       # duplicate key
        if kind == 2:
            n = r.choice((70, 5000, 200000))
            return ("[" * n + "]" * n).encode()                       # nesting
        if kind == 3:
            return (text[:-1] + ', "big": ' + "9" * r.choice((4300, 4301, 100000)) + "}").encode()
        if kind == 4:
            return text[:r.randrange(len(text))].encode()             # truncated
        if kind == 5:
            return (text[:-1] + ', "x": ' + r.choice(("NaN", "Infinity", "-Infinity", "1e999")) + "}").encode()
        if kind == 6:
            return text.encode() + b"\xff"                            # not UTF-8
        if kind == 7:
            return b""
        if kind == 8:
            return b" " * (8 * 2**20 + 1)                             # over the size bound
        if kind == 9:
            return r.choice((b"[]", b"null", b"1", b'"x"', b"{}"))
        return text.encode()

    def config(self):
        r = self.rnd
        cfg = json.loads(json.dumps(self.models[r.choice(sorted(self.models))]))
        target = cfg["text_config"] if isinstance(cfg.get("text_config"), dict) and r.random() < 0.7 else cfg
        for _ in range(r.randrange(4)):
            key = r.choice(FIELDS)
            if r.random() < 0.25:
                target.pop(key, None)
            elif key == "num_experts_per_tok":
                experts = next((target[k] for k in ("num_experts", "num_local_experts", "n_routed_experts")
                                if isinstance(target.get(k), int)), 8)
                target[key] = r.choice((experts, experts + 1, 2 * experts, 0))
            elif key == "layer_types" and isinstance(target.get(key), list) and target[key]:
                target[key] = target[key][:-1] if r.random() < 0.5 else target[key] + ["weird"]
            else:
                target[key] = r.choice(VALUES)
        nested = [v for v in (target.get("rope_scaling"), target.get("quantization_config"),
                              target.get("text_config"), target.get("vision_config")) if isinstance(v, dict)]
        for _ in range(r.randrange(3) if nested else 0):
            obj = r.choice(nested)
            key = r.choice(sorted(obj) + ["factor", "rope_type", "type", "quant_method", "weight_block_size"])
            if r.random() < 0.2:
                obj.pop(key, None)
            else:
                obj[key] = r.choice(NESTED_VALUES)
        text = json.dumps(cfg)
        if r.random() < 0.35:
            return self.write(self.raw(text))
        return self.write(text)

    def device(self):
        r = self.rnd
        dev = json.loads(json.dumps(self.devices[r.choice(sorted(self.devices))]))
        for _ in range(r.randrange(3)):
            key = r.choice(DEVICE_FIELDS)
            if r.random() < 0.2:
                dev.pop(key, None)
            else:
                dev[key] = r.choice(DEVICE_VALUES)
        for _ in range(r.randrange(3)):   # nested: a link tier's fields, a peak table's entries
            tier = r.choice(("scale_up", "scale_out", "matrix_flops_per_s", "vector_flops_per_s"))
            if not isinstance(dev.get(tier), dict):
                continue
            keys = LINK_FIELDS if tier.startswith("scale") else ("fp32", "bf16", "fp16", "fp8", "int8", "fp4")
            key = r.choice(keys + ("extra", "Alpha_s"))
            if r.random() < 0.2:
                dev[tier].pop(key, None)
            else:
                dev[tier][key] = r.choice(LINK_VALUES)
        text = json.dumps(dev)
        return self.write(self.raw(text) if r.random() < 0.3 else text)

    def routing(self):
        r = self.rnd
        loads = [r.choice((0, 1, 2, 0.5, 1e300)) for _ in range(r.choice((0, 1, 8, 64, 128, 256, 384)))]
        data = r.choice((loads, {"loads": loads}, {"loads": [-1] + loads}, {"x": 1}, [True], ["1"]))
        text = json.dumps(data)
        return self.write(self.raw(text) if r.random() < 0.3 else text)


def _id_or_file(files, bundled, mutated, near_misses):
    """A bundled id (55%), a mutated file (37%), a special path (4%) or a near miss."""
    r = files.rnd
    x = r.random()
    if x < 0.55:
        return r.choice(sorted(bundled))
    if x < 0.92:
        return mutated()
    if x < 0.96:
        return files.special()
    return r.choice(near_misses)


def _model_value(files):
    return _id_or_file(files, files.models, files.config,
                       ("qwen3-7b", "llama", "", "a\nb", CALC, os.path.join(CALC, "models")))


def _device_value(files):
    return _id_or_file(files, files.devices, files.device, ("h100", "", "tpu", "x|y"))


def _output_value(files):
    r = files.rnd
    return r.choice(("", "/dev/full", os.devnull, os.path.join(files.dir, "no", "such", "x"),
                     os.path.join(files.dir, "folder.json"), files.fifo + ".never"))


def value_for(action, files, hostile):
    """A value for one option, from the pool its converter or destination suggests;
    `hostile`: the chance of a malformed or out-of-range value instead of a valid one."""
    r = files.rnd
    bad = r.random() < hostile
    if bad and r.random() < 0.2:
        return r.choice(STRINGS)
    if not bad and action.dest in EXAMPLES and r.random() < 0.8:
        return r.choice(EXAMPLES[action.dest])
    if action.choices is not None:
        choices = [str(c) for c in action.choices]
        return r.choice(choices) if not bad else r.choice(choices).upper() + r.choice(("", "x"))
    kind = getattr(action.type, "__name__", "")
    dest = action.dest
    if kind in ("fraction", "unit_interval", "float") or "fraction" in kind:
        return r.choice(NUMBERS) if bad else r.choice(GOOD_NUMBERS)
    if kind in ("positive_int", "non_negative_int", "int") or kind.endswith("_int"):
        return r.choice(INTS) if bad else r.choice(GOOD_INTS)
    if kind in ("byte_size", "reserve") or "bytes" in dest or dest == "reserve":
        return r.choice(BYTE_SIZES) if bad else r.choice(GOOD_BYTES)
    if "model" in dest:
        return _model_value(files)
    if "device" in dest:
        return _device_value(files)
    if dest == "routing":
        x = r.random()
        return (r.choice(("uniform", "balanced", "concentrated", "skewed")) if x < 0.5 else
                files.routing() if x < 0.9 else files.special())
    if dest in ("output", "plot"):
        return _output_value(files) if bad else files.path(r.choice((".out", ".svg")))
    if "dtype" in dest:
        return r.choice(("bf16", "fp16", "fp8", "fp32", "int8", "fp4", "mxfp4", "fp8-block128") + (("fp9", "") if bad else ()))
    if dest == "only":
        return r.choice(("models", "hardware", "qwen3-8b-prefill-8192", "nope"))
    if dest == "case":
        return r.choice(files.cases + ("nope", "../x", ""))
    return r.choice(INTS + STRINGS) if bad else r.choice(GOOD_INTS + ("x",))


def command_actions(name):
    """(options, positionals) of a subcommand, from its own argparse definition."""
    module = importlib.import_module(f"infracalc.cli.{name}")
    parser = cli.Parser(prog=f"infra-calc {name}")
    module.add_arguments(parser)
    options = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    positionals = [a for a in parser._actions if not a.option_strings]
    return options, positionals


def draw(rnd, files, actions_of, commands=None):
    """One argument vector: a subcommand (of `commands`, default all), its required options
    (almost always), some optional ones, now and then a garbage token."""
    name = rnd.choice(sorted(commands or cli.COMMANDS))
    options, positionals = actions_of(name)
    hostile = rnd.choice((0.0, 0.0, 0.02, 0.1, 0.3))
    optional = rnd.choice((0.0, 0.1, 0.25))   # chance of each optional option
    argv = [name]
    for a in positionals:
        if isinstance(a, argparse._SubParsersAction) and rnd.random() < 0.95:
            # a subcommand (budget's kinds): its name, then options drawn from its own parser
            kind = rnd.choice(sorted(a.choices))
            argv.append(kind)
            options = options + [x for x in a.choices[kind]._actions if x.option_strings and x.dest != "help"]
        elif rnd.random() < 0.95:
            argv.append(value_for(a, files, hostile))
    for a in options:
        if a.required and rnd.random() < 0.97 or not a.required and rnd.random() < optional:
            flag = rnd.choice(a.option_strings)
            if a.nargs == 0:
                argv.append(flag)
            else:
                argv += [flag, value_for(a, files, hostile)]
    if name == "reproduce":   # never rewrite the stored results
        if "--check" not in argv and "--list" not in argv:
            argv.append("--check")
        if "--only" not in argv and "--list" not in argv:
            argv += ["--only", rnd.choice(("models", "hardware", "kv-qwen3-8b-32k-b8-h100"))]
    if name == "validate" and "--case" not in argv and files.cases and rnd.random() < 0.9:
        argv += ["--case", rnd.choice(files.cases)]   # the whole corpus takes ~0.3 s a call
    if "--format" not in argv and rnd.random() < 0.6 and name != "reproduce":
        argv += ["--format", "json"]
    if rnd.random() < 0.05:
        argv.insert(rnd.randrange(1, len(argv) + 1), rnd.choice(GARBAGE))
    if rnd.random() < 0.03:   # top level: no command, help, an unknown one
        argv = rnd.choice(([], ["--help"], ["forwrd"], ["-x"]))
    return argv


class Timeout(Exception):
    pass


def _asks_help(arg):
    """-h, --help, or a short-option cluster that starts with -h (`-h?`): Python 3.13's argparse
    prints the help for such a cluster where 3.10 and 3.11 refuse it; either is a valid answer."""
    return arg == "--help" or (arg.startswith("-h") and not arg.startswith("--"))


def _strict_json(text):
    def refuse(name):
        raise ValueError(f"{name} in JSON output")
    return json.loads(text, parse_constant=refuse)


def call(argv, limit_s):
    """(status, stdout, stderr, seconds, exception) of cli.main(argv) in this process."""
    out, err = io.StringIO(), io.StringIO()
    alarm = hasattr(signal, "setitimer")
    if alarm:
        def on_alarm(*_):
            raise Timeout(f"over {limit_s} s")
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, limit_s)
    t0 = time.perf_counter()
    status, error = None, None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(list(argv))
    except BaseException as e:   # noqa: BLE001 - anything escaping main is a contract breach
        error = e
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return status, out.getvalue(), err.getvalue(), time.perf_counter() - t0, error


def new_files(argv):
    """The files an --output or --plot of argv names that do not exist yet."""
    return [argv[k + 1] for k, a in enumerate(argv[:-1])
            if a in ("--output", "--plot") and not os.path.lexists(argv[k + 1])]


def breach(argv, status, out, err, seconds, error, limit_s, fresh=()):
    """Why a call breaks the contract, or None. `fresh`: output files absent before the
    call (a failed call must leave them absent)."""
    if error is not None:
        return f"{type(error).__name__}: {error}"
    if seconds > limit_s:
        return f"took {seconds:.2f} s"
    if status == 2:
        if out:
            return "status 2 with output on stdout"
        if err.count("\n") != 1 or not err.endswith("\n") or not err[:-1].isprintable():
            return f"status 2 without exactly one printable stderr line: {err!r}"
        written = [p for p in fresh if os.path.lexists(p)]
        if written:
            return f"status 2 but wrote {written!r}"
        return None
    if status != 0:
        return f"status {status}"
    if err:
        return f"status 0 with stderr {err!r}"
    texts = [out]
    if "--output" in argv:
        path = argv[argv.index("--output") + 1]
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                texts = [f.read()]
    fmt = argv[argv.index("--format") + 1] if "--format" in argv else None
    if argv and argv[0] != "reproduce" and not any(_asks_help(a) for a in argv) and argv[0] in cli.COMMANDS:
        if not texts[0].strip() and "--output" in argv and argv[argv.index("--output") + 1] in (os.devnull,):
            return None
        if not texts[0].strip():
            return "status 0 with empty output"
        if fmt in (None, "md") and not texts[0].replace("\n", "").isprintable():
            return "Markdown output with a control character (a newline or escape from an input unescaped)"
        if fmt == "json":
            try:
                _strict_json(texts[0])
            except ValueError as e:
                return f"invalid JSON output: {e}"
    return None


def _tally(failures, argv, reason, report, label):
    """One vector's outcome: 1 when clean (no reason), else 0 with (argv, reason) kept in
    `failures` and reported as [label]."""
    if not reason:
        return 1
    failures.append((argv, reason))
    if report:
        report(f"[{label}] {reason}: {argv!r}")
    return 0


def run(seed, count, limit_s=5.0, report=None, seen=None, commands=None):
    """Draw and check `count` vectors from `seed`: (clean count, [(argv, reason)]).
    `seen`, a dict, collects {command: set of exit statuses}; `commands` limits the draw."""
    rnd = random.Random(seed)
    files = Files(rnd)
    cache = {}

    def actions_of(name):
        if name not in cache:
            cache[name] = command_actions(name)
        return cache[name]

    failures, clean = [], 0
    cwd = os.getcwd()
    os.chdir(files.dir)   # an output named by a drawn string ('x', '|', ...) lands in the temporary folder
    try:
        for i in range(count):
            argv = draw(rnd, files, actions_of, commands)
            fresh = new_files(argv)
            result = call(argv, limit_s)
            reason = breach(argv, *result, limit_s, fresh)
            if seen is not None and argv and argv[0] in cli.COMMANDS:
                seen.setdefault(argv[0], set()).add(result[0])
            clean += _tally(failures, argv, reason, report, i)
    finally:
        os.chdir(cwd)
        files.close()
    return clean, failures


# --- Beyond argument vectors (issue 22.10): validation case files, the working
# directory, and signals during writes.

CASE_VALUES = ("output_tokens_per_s", "requests_per_s", "ttft_s", "step_time_s", "tokens_per_s_per_device",
               "megatron_eq3_flops_per_s_per_device", "training-step", "serving-throughput",
               "serving-latency", "qwen3-30b-a3b", "deepseek-v3", "gpt2", "b200", "tpu-v5e", "int8",
               "mxfp4", "fp8", "bf16", "../llama-2-7b.config.json", "/etc/passwd", "llama-2-7b.config.json",
               "missing.config.json", "nope", 0, 1, -1, 2, 3, 8, 64, 10**6, 10**30, 1.5, 0.0, 1e308, -1e-9,
               True, False, None, "", [], {}, [0], {"a": 1}, {"reason": ""})
CASE_KEYS = ("extra", "tp", "pp", "dp", "ep", "cp", "vp", "reserve_bytes", "routing", "mla", "optimizer",
             "grad_bytes", "master_bytes", "unit", "value", "title")


def _mutate_case(rnd, case):
    setup = case.get("setup") if isinstance(case.get("setup"), dict) else {}
    objs = [o for o in (case, setup, case.get("measured"), case.get("source"), setup.get("layout"))
            if isinstance(o, dict)]
    for _ in range(rnd.randrange(1, 4)):
        o = rnd.choice(objs)
        key = rnd.choice(sorted(o) + list(CASE_KEYS))
        if rnd.random() < 0.2:
            o.pop(key, None)
        else:
            o[key] = rnd.choice(CASE_VALUES)
    return case


def fuzz_cases(seed, count, report=None):
    """Mutated validation case files (nested fields included), each evaluated alone from a
    copy of the corpus: (clean count, [(case, reason)]). Clean: a record, or a UserError
    (one line: `validate` prints it and exits 2); anything else is a crash."""
    from infracalc.analyses import validate as V
    from infracalc.errors import UserError

    rnd = random.Random(seed)
    src = V.VALIDATION_DIR
    names = sorted(n for n in os.listdir(src) if n.endswith(".json") and not n.endswith(".config.json"))
    folder = tempfile.mkdtemp(prefix="infracalc-cases-")
    failures, clean = [], 0
    try:
        for n in os.listdir(src):
            if n.endswith(".config.json"):
                shutil.copy(os.path.join(src, n), folder)
        for i in range(count):
            name = rnd.choice(names)
            with open(os.path.join(src, name), encoding="utf-8") as f:
                case = _mutate_case(rnd, json.load(f))
            path = os.path.join(folder, name)
            with open(path, "w", encoding="utf-8") as f:
                json.dump(case, f)
            try:
                V.validate(name[:-5], directory=folder)
                clean += 1
            except UserError as e:
                if "\n" in str(e):
                    failures.append((case, f"a message of several lines: {e}"))
                else:
                    clean += 1
            except Exception as e:   # noqa: BLE001 - a crash is what this looks for
                failures.append((case, f"{type(e).__name__}: {e}"))
                if report:
                    report(f"[case {i}] {type(e).__name__}: {e}: {name}")
            os.remove(path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return clean, failures


def look_alikes(folder, rnd):
    """Files and folders named like bundled ids in `folder` (what `touch gpt2` or
    `huggingface-cli download ... --local-dir llama-3.1-8b` leave in a working directory)."""
    models = sorted(n[:-5] for n in os.listdir(os.path.join(CALC, "models")) if n.endswith(".json"))
    devices = sorted(n[:-5] for n in os.listdir(os.path.join(CALC, "hardware")) if n.endswith(".json"))
    for name in models + devices:
        path = os.path.join(folder, name)
        kind = rnd.randrange(3)
        if kind == 0:
            with open(path, "w") as f:
                f.write("not json")
        elif kind == 1:
            os.mkdir(path)
        else:
            os.mkdir(path)
            with open(os.path.join(path, "config.json"), "w") as f:
                json.dump({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64}, f)
        with open(path + ".json", "w") as f:
            f.write("{}")


def _forget_loaded():
    """Empty the loaders' caches, so that a run resolves its ids again."""
    from infracalc.load import hardware, models
    models._CACHE.clear()
    hardware._CACHE.clear()


def cwd_independent(seed, count, limit_s=5.0, report=None):
    """Valid vectors over bundled ids, each run in an empty working directory and in one
    full of look-alikes (look_alikes): the outputs must be byte-identical. Returns
    (clean count, [(argv, reason)])."""
    rnd = random.Random(seed)
    files = Files(rnd)
    plain = tempfile.mkdtemp(prefix="infracalc-cwd-")
    crowded = tempfile.mkdtemp(prefix="infracalc-cwd-")
    look_alikes(crowded, rnd)
    cache = {}

    def actions_of(name):
        if name not in cache:
            cache[name] = command_actions(name)
        return cache[name]

    failures, clean, cwd = [], 0, os.getcwd()
    try:
        while clean + len(failures) < count:
            argv = draw(rnd, files, actions_of)
            if any(a.startswith(files.dir) for a in argv) or "--output" in argv or "--plot" in argv:
                continue    # bundled ids only, results on stdout
            results = []
            for folder in (plain, crowded):
                os.chdir(folder)
                _forget_loaded()
                results.append(call(argv, limit_s)[:3])
            if results[0] != results[1]:
                failures.append((argv, "the output depends on the working directory"))
                if report:
                    report(f"cwd: {argv!r}")
            else:
                clean += 1
    finally:
        os.chdir(cwd)
        files.close()
        shutil.rmtree(plain, ignore_errors=True)
        shutil.rmtree(crowded, ignore_errors=True)
    return clean, failures


SIGNAL_COMMANDS = (
    ["models"],
    ["hardware"],
    ["forward", "--model", "qwen3-0.6b", "--tokens", "64"],
    ["decode", "--model", "qwen3-0.6b", "--input-len", "16", "--output-len", "4", "--batch-sweep",
     "--plot", "{dir}/plot.svg"],
)


def default_signals():
    """In a child process (preexec_fn): SIGTERM and SIGHUP at their default, as a user's
    shell leaves them. Under `nohup` or a runner that ignores SIGHUP the child would inherit
    SIG_IGN, and the tool rightly leaves an ignored signal ignored."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def signal_writes(seed, count, report=None):
    """Commands writing --output (and --plot) killed by SIGTERM or SIGHUP after a random
    delay, in a fresh process each: no temporary file may remain, the exit status is 0
    (done first), 128 + the signal, or the signal itself (killed before the handler was
    set, before any write), and each target holds its old text or the whole new one.
    Returns (clean count, [(argv, reason)])."""
    import subprocess

    rnd = random.Random(seed)
    calc = os.path.join(CALC, "calc.py")
    failures, clean = [], 0
    for i in range(count):
        folder = tempfile.mkdtemp(prefix="infracalc-sig-")
        try:
            template = rnd.choice(SIGNAL_COMMANDS)
            argv = [a.replace("{dir}", folder) for a in template] + ["--output", os.path.join(folder, "out.md")]
            targets = [argv[k + 1] for k, a in enumerate(argv) if a in ("--output", "--plot")]
            for t in targets:
                with open(t, "w") as f:
                    f.write("OLD\n")
            signum = rnd.choice((signal.SIGTERM, signal.SIGHUP))
            p = subprocess.Popen([sys.executable, calc, *argv], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, preexec_fn=default_signals)
            try:
                time.sleep(rnd.uniform(0.0, 0.25))
                p.send_signal(signum)
                _, err = p.communicate(timeout=120)
            finally:   # never leave a child behind (it would hold the runner's pipes)
                if p.poll() is None:
                    p.kill()
                    p.communicate()
            reason = None
            left = sorted(f for f in os.listdir(folder) if f.endswith(".tmp"))
            if left:
                reason = f"left {left}"
            elif p.returncode not in (0, 128 + signum, -signum):
                reason = f"status {p.returncode}: {err.decode(errors='replace')[-200:]}"
            elif b"Traceback" in err:
                reason = "traceback"
            else:
                for t in targets:
                    with open(t, encoding="utf-8") as f:
                        text = f.read()
                    if text != "OLD\n" and not (text.endswith("\n") and len(text) > 100):
                        reason = f"{os.path.basename(t)} half written ({len(text)} characters)"
            clean += _tally(failures, argv, reason, report, f"signal {i}")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return clean, failures

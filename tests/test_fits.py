"""Output that fits a terminal: the default Markdown view's tables fit 100 columns for every
bundled example (every stored result, and each command run directly), the answer comes first,
and --full keeps the wide tables."""

import os
import unittest

from support import ROOT, run_cli

RESULTS = os.path.join(ROOT, "calculations", "results")
WIDTH = 100

# Each command once, beside the stored scenarios (which reproduce --check keeps current).
COMMANDS = [
    ("models",), ("models", "--model", "deepseek-v3"), ("models", "--types"), ("hardware",),
    ("validate",), ("forward", "--model", "qwen3-30b-a3b", "--tokens", "8K"),
    ("kv", "--model", "deepseek-v3", "--context", "32K", "--device", "h200", "--tp", "8", "--page-size", "64"),
    ("decode", "--model", "qwen3-8b", "--input-len", "1K", "--output-len", "1K", "--batch-sweep"),
    ("parallel", "--model", "deepseek-v3", "--device", "h200", "--devices", "16", "--tp", "8", "--pp", "2",
     "--input-len", "2K", "--output-len", "1K", "--batch", "32"),
    ("parallel", "--model", "llama-3.1-70b", "--device", "h100", "--devices", "8", "--search",
     "--input-len", "2K", "--output-len", "256", "--tpot-limit", "50ms"),
    ("train", "--model", "llama-3.1-8b", "--device", "h100", "--devices", "256", "--seq", "8K",
     "--global-batch", "512", "--train-tokens", "1T"),
    ("train", "--model", "qwen3-30b-a3b", "--device", "h100", "--devices", "64", "--seq", "4K",
     "--global-batch", "256", "--search"),
    ("gemm", "--m", "256", "--k", "4096", "--n", "4096", "--device", "all"),
    ("attention", "--queries", "1", "--keys", "8K", "--heads", "32", "--kv-heads", "8", "--head-dim", "128",
     "--device", "all"),
    ("budget", "decode", "--params", "70B", "--weight-bits", "8"),
    ("budget", "energy", "--model", "qwen3-8b", "--history", "8K", "--price-per-device-hour", "2.5"),
    ("budget", "training", "--params", "1T,5T,10T", "--train-tokens", "20T", "--efficiency", "3/10,1/2",
     "--days", "90", "--cards", "16384", "--device", "a100-sxm-80gb", "--device", "b200"),
    ("serve", "--model", "llama-3.1-70b", "--device", "h100", "--input-len", "2K", "--output-len", "256",
     "--tpot-limit", "50ms"),
    ("collective", "all_reduce", "--ranks", "16", "--ranks-per-node", "8"),
    ("collective", "reduce_scatter", "--ranks", "16", "--topology", "ring", "--rounds", "3", "--bytes", "8MiB",
     "--link-bw-ring", "50GB/s"),
    ("encode", "--model", "qwen3-vl-4b", "--image", "640x640", "--images", "2", "--text-tokens", "400",
     "--output-len", "128"),
]


def wide_table_lines(text):
    return [line for line in text.split("\n") if line.startswith("|") and len(line) > WIDTH]


class Fits(unittest.TestCase):
    def test_stored_results_fit(self):
        checked = 0
        for folder, _, files in os.walk(RESULTS):
            for name in files:
                if name.endswith(".md") and name != "README.md":
                    with open(os.path.join(folder, name), encoding="utf-8") as f:
                        self.assertEqual(wide_table_lines(f.read()), [], name)
                    checked += 1
        self.assertGreater(checked, 100)

    def test_every_command_fits(self):
        from infracalc.cli import COMMANDS as ALL
        self.assertLessEqual({c for c in ALL if c not in ("reproduce", "report")}, {argv[0] for argv in COMMANDS})
        for argv in COMMANDS:
            with self.subTest(argv=" ".join(argv)):
                status, out, err = run_cli(*argv)
                self.assertEqual(status, 0, err)
                self.assertEqual(wide_table_lines(out), [])

    def test_full_keeps_one_wide_table(self):
        argv = ("forward", "--model", "qwen3-8b")
        _, default, _ = run_cli(*argv)
        _, full, _ = run_cli(*argv, "--full")
        self.assertTrue(wide_table_lines(full))
        self.assertEqual(full.count("| operator"), 1)
        self.assertGreater(default.count("| operator"), 1)   # split into tables led by the name

    def test_long_cells_are_cut_and_given_in_full_below(self):
        from infracalc.render.table import markdown_table
        long = "word " * 30
        text = markdown_table(["name", "a", "b"], [[long.strip(), "x" * 40, "y" * 40]])
        self.assertIn("[1] " + long.strip(), text)
        self.assertEqual(wide_table_lines(text), [])

    def test_padded_columns(self):
        from infracalc.render.table import markdown_table
        self.assertEqual(markdown_table(["k", "value"], [["long key", 1]]),
                         "| k        | value |\n| -------- | ----: |\n| long key |     1 |")


class AnswerFirst(unittest.TestCase):
    def head(self, *argv, lines=15):
        status, out, err = run_cli(*argv)
        self.assertEqual(status, 0, err)
        return out.split("\n")[:lines]

    def test_train_that_does_not_fit_says_so_beside_every_time(self):
        head = self.head("train", "--model", "llama-3.1-8b", "--device", "h100", "--devices", "256",
                         "--seq", "8192", "--global-batch", "512", "--train-tokens", "1T")
        self.assertTrue(head[2].startswith("**Does not fit: stage 0 needs 157.733 GiB of 79.647 GiB"))
        bullets = "\n".join(head[3:]).split("\n\n")[0].replace("\n  ", " ").split("\n")
        for line in bullets:   # every time or rate of the block says so beside it
            if any(w in line for w in (" s ", " ms ", "tokens/s", "days")):
                self.assertIn("does not fit", line)
        self.assertTrue(all(len(line) <= 100 for line in head[:len(bullets) + 3]))
        # 8,030,261,248 params x (2 + 2 + 12 / 256) B under ZeRO 1 + 38.072 GiB of activations
        self.assertIn("Would fit: `--zero 1` (68.338 GiB)", "\n".join(head))

    def test_kv_answers_how_many_requests(self):
        head = self.head("kv", "--model", "qwen3-235b-a22b", "--device", "h200", "--tp", "8",
                         "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--context", "32768")
        # floor((151,397,597,184 - 29,685,472,256 - 15,139,759,718) / 788,529,152) = 135
        self.assertEqual(head[2], "**Fits: at most 135 requests of 32,768 tokens at once**")

    def test_kv_that_does_not_fit(self):
        head = self.head("kv", "--model", "qwen3-235b-a22b", "--device", "h200", "--context", "32768")
        self.assertTrue(head[2].startswith("**Does not fit: not one request"))

    def test_serving_and_search_answer_first(self):
        head = self.head("parallel", "--model", "llama-3.1-70b", "--device", "h100", "--devices", "8",
                         "--search", "--input-len", "2K", "--output-len", "256", "--tpot-limit", "50ms")
        self.assertTrue(head[2].startswith("**Best of 8 devices (TPOT limit 50.000 ms): "))
        head = self.head("forward", "--model", "deepseek-v3", "--device", "h100")
        self.assertTrue(head[2].startswith("**Does not fit"))
        self.assertIn("(does not fit)", next(line for line in head if line.startswith("- Pass time")))

    def test_bound_and_prediction_side_by_side(self):
        head = self.head("decode", "--model", "qwen3-8b", "--input-len", "1024", "--output-len", "1024")
        self.assertRegex(head[3], r"^- TTFT: [\d.]+ ms lower bound, [\d.]+ ms predicted$")


if __name__ == "__main__":
    unittest.main()

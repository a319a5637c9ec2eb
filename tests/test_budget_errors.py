"""The error contract on the `budget` kinds: bad input as a user types it (a missing required option,
zero, a negative, a non-number, a malformed fraction or unit, an empty or malformed list, a value too
large, an inconsistent pair) is one line on stderr naming the option, exit status 2, no traceback.
One test per family of kinds (cli/budget.py, cli/budget_net.py, cli/budget_kernel.py)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402  (support puts calculations/ on sys.path)


def with_value(argv, option, value):
    """argv with `option`'s value replaced (value None: the option and its value dropped)."""
    k = argv.index(option)
    return argv[:k] + ([] if value is None else [option, value]) + argv[k + 2:]


class Contract(unittest.TestCase):
    def assert_refused(self, base, cases):
        status, _, err = run_cli("budget", *base)
        self.assertEqual(status, 0, err)   # the base invocation is valid
        for option, value, named in cases:
            with self.subTest(option=option, value=value):
                status, out, err = run_cli("budget", *with_value(base, option, value))
                self.assertEqual(status, 2, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertNotIn("Traceback", err)
                self.assertIn(named, err)


class BudgetKinds(Contract):
    def test_unknown_kind_names_the_closest(self):
        # 60-odd kinds: the closest ones and where the list is, not every kind on one line
        status, _, err = run_cli("budget", "memory-pol")
        self.assertEqual((status, len(err.strip().splitlines())), (2, 1))
        self.assertIn("did you mean memory-pool", err)
        self.assertIn("`infra-calc budget --help` lists them", err)
        self.assertLess(len(err), 200)

    def test_checkpoint(self):
        base = ["checkpoint", "--model", "qwen3-8b", "--write-bandwidth", "8GB/s", "--intervals", "60,600",
                "--job-mtbf", "28440s"]
        # --intervals was read by a helper that returns None (not an argparse type): a traceback before
        self.assert_refused(base, [("--intervals", "abc", "--intervals"), ("--intervals", "-5", "--intervals"),
                                   ("--intervals", "60,", "--intervals"), ("--intervals", "0", "--intervals"),
                                   ("--write-bandwidth", None, "--write-bandwidth"),
                                   ("--write-bandwidth", "-5MB", "--write-bandwidth"),
                                   ("--job-mtbf", "1/0s", "--job-mtbf")])

    def test_ec_pool(self):
        base = ["ec-pool", "--model", "qwen3-vl-4b", "--image", "640x640", "--images", "4", "--text-tokens", "400",
                "--workers", "4", "--encoder-rate", "12", "--pd-rate", "4", "--network", "300MB",
                "--compressed-bytes", "800000", "--uplink-rate", "6400000b/s"]
        # --compressed-bytes 0 divided the EC bytes by zero before
        self.assert_refused(base, [("--compressed-bytes", "0", "--compressed-bytes"),
                                   ("--workers", "1", "--workers"), ("--encoder-rate", "abc", "--encoder-rate"),
                                   ("--image", "640x", "--image"), ("--network", "1/0", "--network")])

    def test_straggler_and_cast(self):
        self.assert_refused(["straggler", "--mean-time", "52.2s", "--sigma", "1.044s", "--ranks", "8,48"],
                            [("--mean-time", "0s", "--mean-time"), ("--ranks", "", "--ranks"),
                             ("--ranks", "99999999999999999999", "--ranks"), ("--sigma", "abc", "--sigma")])
        self.assert_refused(["cast", "--model", "qwen3-8b", "--link-bw", "32GB/s", "--cpu-cast-rate", "100GB/s",
                             "--gpu-cast-rate", "1500GB/s", "--gpu-budget", "256MiB", "--host-budget", "512MiB"],
                            [("--link-bw", "0", "--link-bw"), ("--gpu-budget", "-5MB", "--gpu-budget"),
                             ("--model", "qwen3-7b", "qwen3-8b"), ("--host-budget", None, "--host-budget")])


class NetworkKinds(Contract):
    def test_periodic_queue_and_packet_reorder(self):
        self.assert_refused(["periodic-queue", "--job", "100ms:20ms:0ms:40GB/s", "--capacity", "50GB/s"],
                            [("--job", "100ms:20ms", "--job"), ("--job", "0ms:20ms:0ms:40GB/s", "--job"),
                             ("--capacity", "abc", "--capacity"), ("--capacity", "-5MB", "--capacity")])
        self.assert_refused(["packet-reorder", "--model", "qwen3-8b", "--packet-bytes", "1024", "--path-rate",
                             "1GB/s", "--path-delays", "1us,1us"],
                            [("--packet-bytes", "0", "--packet-bytes"), ("--path-delays", "", "--path-delays"),
                             ("--path-delays", "1us,-1us", "--path-delays"), ("--path-rate", "1/0s", "--path-rate")])

    def test_fifo_pipeline_and_moe_dedup(self):
        self.assert_refused(["fifo-pipeline", "--model", "qwen3-8b", "--steps", "4", "--feedback", "100us",
                             "--groups", "1", "--stage-times", "1ms,1ms,1ms,1ms", "--transfer-times",
                             "100us,100us,100us"],
                            [("--transfer-times", "100us,100us", "transfer"), ("--steps", "-5", "--steps"),
                             ("--stage-times", "abc", "--stage-times")])
        self.assert_refused(["moe-dedup", "--model", "qwen3-235b-a22b", "--ranks", "8", "--tokens-per-rank", "64",
                             "--pattern", "clustered", "--bandwidth", "50GB/s", "--startup", "2us"],
                            [("--ranks", "0", "--ranks"), ("--pattern", "clusterd", "clustered"),
                             ("--bandwidth", "-5MB", "--bandwidth")])


class KernelKinds(Contract):
    def test_specialization_and_attention_input(self):
        base = ["specialization", "--model", "qwen3-8b", "--shape", "256:8", "--shape", "2048:1", "--buckets",
                "512,2048", "--specialized", "256,2048", "--repetitions", "10"]
        # --buckets and --specialized were read by a helper that returns None: a traceback before
        self.assert_refused(base, [("--buckets", "abc", "--buckets"), ("--buckets", "", "--buckets"),
                                   ("--specialized", "-5", "--specialized"), ("--shape", "256:", "--shape"),
                                   ("--repetitions", "0", "--repetitions")])
        self.assert_refused(["attention-input", "--model", "qwen3-8b", "--slots", "1,2"],
                            [("--slots", "0", "--slots"), ("--slots", "1,,2", "--slots")])

    def test_dag_and_online_softmax(self):
        self.assert_refused(["dag", "--task", "a:10us:host", "--task", "b:60us:compute:a"],
                            [("--task", "a:10us:host:zz", "zz"), ("--task", "a:-1us:host", "--task")])
        self.assert_refused(["online-softmax", "--scores", "0,ln2,ln4", "--values", "1,3,-2", "--blocks", "2,1"],
                            [("--blocks", "2,2", "blocks summing to 4"), ("--values", "1,3", "2 values"),
                             ("--scores", "0,ln2,abc", "--scores")])


class SessionKinds(Contract):
    """The kinds added in session 5 (batch-reuse .. decision): one case per class of bad input."""

    def test_batch_reuse_and_zero_state(self):
        self.assert_refused(["batch-reuse", "--model", "qwen3-8b", "--history", "2048", "--memory-bytes", "80GB",
                             "--matrix-peak", "bf16=989.4T"],
                            [("--history", "-1", "--history"), ("--history", "abc", "--history"),
                             ("--memory-bytes", "80XB", "--memory-bytes"), ("--history", None, "--history"),
                             ("--matrix-peak", "bf17=989.4T", "--matrix-peak"), ("--model", "qwen3-7b", "qwen3-8b")])
        self.assert_refused(["zero-state", "--model", "qwen3-8b", "--ranks", "8", "--shard", "flat",
                             "--capacity", "24GiB"],
                            [("--ranks", "0", "--ranks"), ("--ranks", None, "--ranks"), ("--shard", "flatt", "flat"),
                             ("--capacity", "-24GiB", "--capacity"), ("--capacity", "1e40GB", "--capacity")])

    def test_gradient_ring_and_incast(self):
        self.assert_refused(["gradient-ring", "--model", "qwen3-8b", "--grad-dtype", "fp32", "--organization",
                             "flat-contiguous", "--nic-bw", "50GB/s", "--local-bw", "450GB/s", "--startup", "833ns",
                             "--budget", "3ms"],
                            [("--nic-bw", "0", "--nic-bw"), ("--nic-bw", "50GB", "--nic-bw"),
                             ("--organization", "flat", "flat-contiguous"), ("--startup", "-1ns", "--startup"),
                             ("--budget", "3", "--budget"), ("--local-bw", None, "--local-bw")])
        # 131,072 ranks per server listed every ring round (R^2 rows) for minutes, switch-reduce too (fuzz seed 42)
        for kind in ("gradient-ring", "switch-reduce"):
            status, _, err = run_cli("budget", kind, "--model", "qwen3-8b", "--ranks-per-server", "131072",
                                     "--nic-bw", "50GB/s", "--local-bw", "450GB/s",
                                     *(["--organization", "hierarchical"] if kind == "gradient-ring" else []))
            self.assertEqual((status, len(err.strip().splitlines())), (2, 1), err)
            self.assertIn("--ranks-per-server 131,072: at most 128", err)
        self.assert_refused(["incast", "--groups", "8,16,64", "--sender-rate", "50GB/s", "--egress", "50GB/s",
                             "--buffer", "1MiB", "--cable-m", "30", "--mtu", "1500", "--rtt", "20us"],
                            [("--groups", "", "--groups"), ("--groups", "8,,16", "--groups"),
                             ("--groups", "0", "--groups"), ("--egress", "x", "--egress"),
                             ("--rtt", "20", "--rtt"), ("--mtu", "-1500", "--mtu")])

    def test_request_chip_power_and_history(self):
        self.assert_refused(["request", "--model", "qwen3-8b", "--input-len", "128", "--output-len", "4"],
                            [("--input-len", "0", "--input-len"), ("--output-len", "1.5", "--output-len"),
                             ("--output-len", None, "--output-len"), ("--model", "qwen3-7b", "qwen3-8b")])
        # --kda-work block on a model without KDA layers was accepted and named in the conventions
        status, _, err = run_cli("budget", "request", "--model", "qwen3-8b", "--input-len", "128", "--output-len", "4",
                                 "--kda-work", "block")
        self.assertEqual((status, len(err.strip().splitlines())), (2, 1), err)
        self.assertIn("has no KDA", err)
        self.assertEqual(run_cli("budget", "request", "--model", "kimi-k3", "--input-len", "128", "--output-len",
                                 "4", "--kda-work", "block")[0], 0)
        self.assert_refused(["chip-power", "--voltage", "0.85,0.55", "--power-area", "0.75,0.60", "--rack",
                             "120,12,1.2", "--rack-cards", "64,72,96", "--cooling", "40", "--bus", "4,16",
                             "--pin-rate", "10.7Gb/s", "--payload-bytes", "15136819200"],
                            [("--voltage", "0.85", "--voltage"), ("--voltage", "0.85,-0.55", "--voltage"),
                             ("--rack", "120,12", "--rack"), ("--rack-cards", "", "--rack-cards"),
                             ("--pin-rate", "10.7GB", "--pin-rate"), ("--bus", "4", "--bus"),
                             ("--payload-bytes", "0", "--payload-bytes")])
        self.assert_refused(["history", "--compare", "llama1-7b:llama2-7b", "--count-range", "llama2-7b:6:7"],
                            [("--compare", "llama1-7b", "--compare"), ("--compare", "llama1-7b:llama9-7b", "llama"),
                             ("--count-range", "llama2-7b:7:6", "--count-range"),
                             ("--count-range", "llama2-7b:x:7", "--count-range")])

    def test_moe_layer_training_and_supernode(self):
        self.assert_refused(["moe-layer-training", "--model", "deepseek-v4-flash", "--layer", "3", "--tokens", "128"],
                            [("--layer", "9999", "MoE layer"), ("--tokens", "0", "--tokens"),
                             ("--layer", "-1", "--layer"), ("--model", "qwen3-8b", "MoE")])
        self.assert_refused(["supernode", "--model", "qwen3-8b", "--requests", "1", "--prompt", "256", "--outputs",
                             "8", "--deadline", "80ms", "--candidate", "8:20ms:6ms", "--card-memory", "24GB",
                             "--reserve", "2GiB", "--price-per-card-second", "1", "--min-valid", "3/4"],
                            [("--candidate", "3:20ms:6ms", "does not divide"), ("--candidate", "8:20ms", "--candidate"),
                             ("--deadline", "80", "--deadline"), ("--min-valid", "5/4", "--min-valid"),
                             ("--requests", "100001", "--requests"), ("--price-per-card-second", "-1",
                                                                      "--price-per-card-second")])

    def test_rl_supply_and_decision(self):
        rates = ["--rate", "rollout-prefill=actor:200T", "--rate", "rollout-decode=actor:20T", "--rate",
                 "reference-scoring=reference:200T", "--rate", "teacher-scoring=teacher:200T", "--rate",
                 "policy-update=learner:200T"]
        self.assert_refused(["rl-supply", "--model", "qwen3-8b", "--prompt-tokens", "1024", "--output-tokens", "256",
                             "--prompts", "8", "--samples-per-prompt", "4", "--accepted", "16", *rates,
                             "--verifier", "verifier:50ms:8", "--sync", "weight_link:50GB/s"],
                            [("--accepted", "33", "--accepted"), ("--verifier", "verifier:50ms", "--verifier"),
                             ("--sync", "weight_link:0GB/s", "--sync"), ("--prompts", "0", "--prompts"),
                             ("--verifier", None, "--verifier")])
        self.assert_refused(["decision", "--model", "qwen3-8b", "--device", "h100-sxm", "--input-tokens", "1929",
                             "--compute-efficiency", "2/5", "--questions", "8", "--outputs", "64,512",
                             "--decode-batch", "64", "--memory-efficiency", "1/2", "--price-per-gpu-hour", "2"],
                            [("--compute-efficiency", "0", "--compute-efficiency"),
                             ("--compute-efficiency", "3/2", "--compute-efficiency"), ("--outputs", "", "--outputs"),
                             ("--price-per-gpu-hour", "x", "--price-per-gpu-hour"),
                             ("--device", "h10", "did you mean"), ("--decode-batch", None, "--decode-batch")])


if __name__ == "__main__":
    unittest.main()

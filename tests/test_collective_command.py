"""`collective` prints what `parallel` and `train` charge for the same collective (one function,
comm.run_s), and its rows follow the formulas of docs/communication.md."""

import json
import unittest

from support import run_cli

US = 1e-6


def cli_json(*argv):
    status, out, err = run_cli(*argv, "--format", "json")
    assert status == 0, (argv, err)
    return json.loads(out)


def collective_rows(operation, size, ranks, per_node, device, *extra):
    rec = cli_json("collective", operation, "--ranks", str(ranks), "--ranks-per-node", str(per_node),
                   "--device", device, "--min-bytes", str(size), "--max-bytes", str(size), *extra)
    return {r["algorithm"]: r for r in rec["rows"]}


class SameFiguresAsParallelAndTrain(unittest.TestCase):
    def test_parallel_ep64_on_h800(self):
        # Qwen3-30B-A3B decode on 64 H800 (EP 64 over DP 64: 8 EP ranks per node).
        common = ("parallel", "--model", "qwen3-30b-a3b", "--device", "h800", "--devices", "64", "--ep", "64",
                  "--input-len", "128", "--output-len", "2", "--batch", "64")
        for algorithm, column in (("ring", "ring"), ("best", None)):
            r = cli_json(*common, "--algorithm", algorithm)
            stage = r["phases"]["prefill"]["stages"][0]
            self.assertTrue(stage["collectives"])
            bound = 0.0
            for c in stage["collectives"]:
                ep = ("--experts", "128", "--top-k", "8") if c["kind"] == "all_to_all" else ()
                rows = collective_rows(c["kind"], c["bytes_per_run"], c["group"], 8, "h800", *ep)
                pick = column or next(name for name, row in rows.items() if row["estimate"])
                with self.subTest(algorithm=algorithm, collective=c["name"]):
                    self.assertEqual(rows[pick]["time_s"] * c["runs"], c["time_s"])
                bound += rows["bound"]["time_s"] * c["runs"]
            self.assertAlmostEqual(stage["comm_fastest_s"], bound, delta=1e-15 * max(bound, 1))

    def test_train_dp_and_ep_on_h800(self):
        r = cli_json("train", "--model", "qwen3-30b-a3b", "--device", "h800", "--devices", "64", "--ep", "64",
                     "--seq", "4096", "--global-batch", "64")
        seen = set()
        for c in r["time"]["collectives"]:
            ep = ("--experts", "128", "--top-k", "8") if c["kind"] == "all_to_all" else ()
            rows = collective_rows(c["kind"], c["bytes"], c["group"], 8, "h800", *ep)
            with self.subTest(collective=c["name"], phase=c["phase"]):
                self.assertEqual(rows["ring"]["time_s"] * c["count"], c["time_s"])
            seen.add(c["kind"])
        self.assertEqual(seen, {"all_to_all", "all_reduce"})


class Rows(unittest.TestCase):
    def test_ep64_all_to_all_by_hand(self):
        # 7,569,408 B (DeepEP's 128 tokens x 8 x 7,392 B), EP 64 on H800, 8 per node:
        # direct max(7/64 S/200e9, 56/64 S/50e9) + 2.7 us = 132.465 + 2.7 us; busbw = S/t x 63/64.
        rows = collective_rows("all_to_all", 7569408, 64, 8, "h800")
        t = 56 / 64 * 7569408 / 50e9 + 2.7 * US
        self.assertAlmostEqual(rows["direct"]["time_s"], t, places=15)
        self.assertTrue(rows["direct"]["estimate"])
        self.assertAlmostEqual(rows["direct"]["busbw_bytes_per_s"], 7569408 / t * 63 / 64, delta=1e-3)
        self.assertEqual(rows["bound"]["time_s"], rows["direct"]["time_s"])

    def test_one_node_and_errors(self):
        rec = cli_json("collective", "all_reduce", "--ranks", "8", "--min-bytes", "8GiB", "--max-bytes", "8GiB")
        self.assertEqual((rec["inputs"]["tier"], rec["inputs"]["nodes"]), ("up", 1))
        rows = {r["algorithm"]: r for r in rec["rows"]}
        # NVLS: 8 GiB / (450e9 x 0.85) + 25 us: the estimate's pick and the bound on one node.
        self.assertAlmostEqual(rows["in_network"]["time_s"], (8 << 30) / 382.5e9 + 25 * US, places=12)
        self.assertTrue(rows["in_network"]["estimate"])
        for argv in (("--ranks", "12", "--ranks-per-node", "8"), ("--ranks", "16", "--ranks-per-node", "16"),
                     ("--ranks", "4", "--ranks-per-node", "8")):
            status, _, err = run_cli("collective", "all_reduce", *argv)
            self.assertEqual(status, 2, argv)
            self.assertEqual(len(err.strip().split("\n")), 1, err)

    def test_every_bundled_device_runs(self):
        from infracalc.load.hardware import device_ids, load_device
        for dev in device_ids():
            d = load_device(dev)
            domain = d.scale_up.domain_size if d.scale_up else 1
            ranks = 2 * domain if d.scale_out else domain
            if ranks < 2:
                ranks = 2
            argv = ["collective", "all_reduce", "--ranks", str(ranks), "--device", dev, "--min-bytes", "1MiB",
                    "--max-bytes", "1MiB"]
            if ranks > domain:
                argv += ["--ranks-per-node", str(domain)]
            if not d.scale_out and ranks > domain:
                argv += ["--link-bw-out", "10GB/s"]
            with self.subTest(device=dev):
                status, out, err = run_cli(*argv)
                self.assertEqual(status, 0, err)


class ValidateFamily(unittest.TestCase):
    def test_a_measurement_faster_than_the_bound_fails(self):
        import os
        import shutil
        import tempfile

        from support import ROOT
        from infracalc.analyses.validate import validate

        src = os.path.join(ROOT, "calculations", "validation", "nccl1221-allreduce-h100-sxm-x32.json")
        with open(src) as f:
            case = json.load(f)
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        # 4 nodes of 8 H100: the bound's busbw is 516.6 GB/s; a claimed 600 GB/s beats it.
        case["id"], case["measured"]["value"] = "too-fast", 600
        with open(os.path.join(d, "too-fast.json"), "w") as f:
            json.dump(case, f)
        shutil.copy(src, d)
        rec = validate(directory=d)
        self.assertEqual(rec["failures"], ["too-fast"])
        ok = next(c for c in rec["cases"] if c["id"] != "too-fast")
        self.assertAlmostEqual(ok["bound"], 516.6, delta=0.05)
        self.assertEqual(ok["status"], "ok")


class WireFormats(unittest.TestCase):
    def test_train_fp8_dispatch_bf16_combine(self):
        # Qwen3-30B-A3B (hidden 2048, top-8), EP 8, 4,096 tokens per micro-batch: an FP8 copy is
        # 2048 + 4 x 16 = 2,112 B, so the dispatch is 4096 x 8 x 2112 = 69,206,016 B; the combine
        # stays in the activation format: 4096 x 8 x 4096 = 134,217,728 B.
        r = cli_json("train", "--model", "qwen3-30b-a3b", "--device", "h100-sxm", "--devices", "8", "--ep", "8",
                     "--seq", "4096", "--global-batch", "8", "--dispatch-dtype", "fp8")
        sizes = {(c["name"], c["phase"]): c["bytes"] for c in r["time"]["collectives"] if c["dim"] == "ep"}
        self.assertEqual(sizes[("EP dispatch all-to-all", "forward")], 69_206_016)
        self.assertEqual(sizes[("EP dispatch all-to-all", "backward")], 69_206_016)
        self.assertEqual(sizes[("EP combine all-to-all", "forward")], 134_217_728)

    def test_parallel_echoes_the_formats(self):
        r = cli_json("parallel", "--model", "qwen3-30b-a3b", "--devices", "8", "--ep", "8", "--input-len", "128",
                     "--output-len", "2", "--dispatch-dtype", "fp8", "--combine-dtype", "bf16")
        self.assertEqual((r["inputs"]["dispatch_dtype"], r["inputs"]["combine_dtype"]), ("fp8", "bf16"))
        c = next(c for c in r["phases"]["prefill"]["stages"][0]["collectives"] if c["name"] == "EP dispatch all-to-all")
        self.assertEqual(c["bytes_per_run"], 128 * 8 * 2112)     # 128 tokens x 8 copies x 2,112 B


class Reconfiguration(unittest.TestCase):
    """`--reconfigure-bw` / `--setup-cost`: the book's topology-allocation rows (bojieli/ai-infra-book
    calculations/results/README.md, "周期位置分配、割集与重构")."""

    def run_rows(self, size, new_bw, *extra):
        return cli_json("collective", "all_reduce", "--ranks", "8", "--bytes", size, "--alpha-up", "5us",
                        "--link-bw-up", "25GB/s", "--reconfigure-bw", new_bw, "--setup-cost", "100ms",
                        *extra)["reconfiguration"][0]

    def test_ring_by_hand(self):
        # Ring all-reduce over 8 ranks: 2 x 7 = 14 steps of alpha 5 us = 70 us, and 2 x 7/8 x S per rank:
        # S = 8 MiB -> 14,680,064 B; at 25 GB/s 587.20256 us, at 75 GB/s 195.734187 us. Before 657.20256 us,
        # after 265.734187 us, saving 391.468373 us; 100 ms / 391.468373 us = 255.45 -> strict payback 256.
        # Over 256 calls: 100 ms + 256 x 265.73 us = 168.03 ms < 256 x 657.20 us = 168.24 ms: the new path wins.
        r = self.run_rows("8MiB", "75GB/s", "--calls", "256")
        self.assertAlmostEqual(r["before_s"], 657.20256e-6, places=15)
        self.assertAlmostEqual(r["after_s"], 70e-6 + 14_680_064 / 75e9, places=15)
        self.assertEqual((r["payback_calls"], r["wins_within_calls"]), (256, True))
        # Decode, S = 8,192 B: sends 14,336 B; saving 14,336 x (1/25e9 - 1/75e9) = 382.293 ns;
        # 1e8 / 382.293 = 261,579.5 -> 261,580.
        self.assertEqual(self.run_rows("8KiB", "75GB/s")["payback_calls"], 261_580)
        # No bandwidth gain: no saving, no finite payback.
        self.assertIsNone(self.run_rows("8MiB", "25GB/s")["payback_calls"])

    def test_options_go_together(self):
        status, _, err = run_cli("collective", "all_reduce", "--ranks", "8", "--reconfigure-bw", "75GB/s")
        self.assertEqual(status, 2)
        self.assertIn("--setup-cost", err)


if __name__ == "__main__":
    unittest.main()

"""The efficiency models' figures the README and docs/prediction.md state, against the code's
constants (analyses/efficiency): a refit or a new measurement that leaves a stated figure stale
fails here, naming the row. Each expected text is formatted from the constant itself."""

import os
import unittest

from support import ROOT  # noqa: F401  (sets the path)

from infracalc.analyses.efficiency import collective, dispatcher, matmul, memory, predict, serving, training  # noqa: E402


def _rows(path, header):
    """{first cell: the whole row} of the Markdown table under `header` in `path`."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        lines = f.read().splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith(header))
    out = {}
    for line in lines[at + 2:]:
        if not line.startswith("|"):
            break
        out[line.strip("|").split("|")[0].strip()] = line
    return out


def _us(x):
    return f"{x * 1e6:.0f} us"


def _ms(x):
    """'2.5 ms', '3.0 ms' below 10 ms; '24 ms' above (the docs' precision, the fit's grid steps)."""
    return f"{x * 1e3:.1f} ms" if x < 0.01 else f"{x * 1e3:.0f} ms"


def _vllm():
    """The held-out vLLM constants as the docs state them: (host s, one value; the per-request host
    time's text, '38.4 us' or a range '24.0-38.4 us' when the fits differ)."""
    fits = {v for k, v in serving.FITTED.items() if "vLLM" in k}
    hosts, per_request = {f[1] for f in fits}, sorted({f[4] for f in fits})
    assert len(hosts) == 1, hosts
    lo, hi = per_request[0] * 1e6, per_request[-1] * 1e6
    text = f"{lo:.1f} us" if lo == hi else f"{lo:.0f}-{hi:.1f} us"
    return hosts.pop(), text


def _expert_host_range(stack):
    vals = training.EXPERT_HOST_FITTED[stack].values()
    return f"{min(vals) * 1e6:.0f}-{max(vals) * 1e6:.0f} us"


class Readme(unittest.TestCase):
    def setUp(self):
        self.rows = _rows("README.md", "| efficiency model |")

    def check(self, row, *texts):
        line = self.rows[row]
        for t in texts:
            self.assertIn(t, line, f"README row '{row}' states no '{t}' (the code's figure)")

    def test_mamf(self):
        m = matmul.MEASURED
        self.check("maximum achievable matmul (MAMF)",
                   f"H100 SXM {m[('h100-sxm', 'bf16')][0]} (BF16), {m[('h100-sxm', 'fp8')][0]} (FP8)",
                   f"A100 SXM {m[('a100-sxm-80gb', 'bf16')][0]}",
                   f"MI300X {m[('mi300x', 'bf16')][0]}, {m[('mi300x', 'fp8')][0]:g}",
                   f"MI325X {m[('mi325x', 'bf16')][0]}, {m[('mi325x', 'fp8')][0]:g}",
                   f"Gaudi 3 {m[('gaudi3', 'bf16')][0]}")
        self.check("wave quantisation", f"{matmul.TILE} x {matmul.TILE} output tiles")

    def test_hbm_and_attention(self):
        bw = memory.HBM_MEASURED[memory.HBM_DEFAULT][0]
        self.check("sustained HBM bandwidth", f"{bw / 1e9:.0f} of 3350 GB/s (H800")
        a = memory.ATTENTION_MEASURED
        self.check("fused attention", f"A100 {a[('a100-sxm-80gb', 'bf16')][0] * 100:.0f}% of peak",
                   # the fractions' denominators are the papers' dense peaks (efficiency.memory)
                   f"H100 {a[('h100-sxm', 'bf16')][0] * 989:.0f} TFLOP/s (BF16)",
                   f"{a[('h100-sxm', 'fp8')][0] * 1979 / 1000:.1f} PFLOP/s (FP8)",
                   f"B200 {a[('b200', 'bf16')][0] * 2250:.0f} TFLOP/s")

    def test_fitted(self):
        k, host, seq, tok, _ = serving.FITTED["all"]
        self.assertEqual(k, predict.KERNEL_S)
        self.check("fixed cost per kernel", _us(k))
        vhost, vreq = _vllm()
        self.check("serving engine: host per iteration, work per request in flight, per prompt token",
                   f"TensorRT-LLM {_ms(host)}, {seq * 1e6:.2f} us per layer, {tok * 1e6:.2f} us per layer",
                   f"vLLM (held out) {_ms(vhost)}, {vreq} per request")
        self.check("collective residual on NCCL's bandwidth", f"{collective.FITTED['all']:.3f}")
        self.check("training step factor", f"{training.FITTED['all']:.3f}")
        self.check("MoE host cost per local expert", _us(training.EXPERT_HOST_FITTED["all"]))

    def test_nccl_figures(self):
        n = collective.NVLINK_NCCL_GBPS
        self.check("collective: latency and bandwidth per algorithm and protocol",
                   f"{n['sm80']} / {n['sm90']} / {n['sm100']} GB/s")
        (r4, b4), (r8, b8) = collective.A2A_NVLINK_BUSBW_GBPS["sm100"]
        self.check("NCCL all-to-all on SM100 NVLink", f"{b4:.2f} ({r4} ranks) / {b8:.2f} ({r8}+)")

    def test_dispatcher_rates(self):
        r = dispatcher.RATES
        (_, nd, nc), = r[("deepep", "h800", "up")][1]
        _, d64, c64 = r[("deepep", "h800", "out")][1][-1]
        _, gd, gc = r[("hybridep", "gb200", "up")][1][0]
        (_, bd, bc), = r[("hybridep", "b200", "up")][1]
        self.check("EP dispatch by the flex dispatcher's backends",
                   f"DeepEP {nd:g} / {nc:g} GB/s over H800 NVLink", f"{d64:g} / {c64:g} GB/s over RDMA at EP 64",
                   f"HybridEP {gd:.2f} / {gc:.2f} GB/s on GB200 at 8 ranks", f"{bd:.2f} / {bc:.2f} on B200",
                   f"{dispatcher.SMS['deepep']} and {dispatcher.SMS['hybridep']} SMs")


class PredictionDoc(unittest.TestCase):
    """docs/prediction.md's table of rates (its fitted rows)."""

    def setUp(self):
        self.rows = _rows("docs/prediction.md", "| rate | value | source | basis |")

    def check(self, prefix, *texts):
        line = next(v for k, v in self.rows.items() if k.startswith(prefix))
        for t in texts:
            self.assertIn(t, line, f"docs/prediction.md row '{prefix}' states no '{t}' (the code's figure)")

    def test_fitted_rows(self):
        k, host, seq, tok, _ = serving.FITTED["all"]
        _, vreq = _vllm()
        self.check("kernel cost", _us(k))
        self.check("host time per serving iteration",
                   f"{_ms(host)}; {seq * 1e6:.2f} us (vLLM: {vreq} per request); {tok * 1e6:.2f} us")
        self.check("collective residual", f"{collective.FITTED['all']:.3f}")
        self.check("training step factor", f"{training.FITTED['all']:.3f}")
        self.check("host cost per local expert", _us(training.EXPERT_HOST_FITTED["all"]),
                   f"per model {_expert_host_range('NVIDIA: Megatron Bridge Performance Summary')}")

    def test_measured_rows(self):
        m = matmul.MEASURED
        self.check("matmul, H100 SXM BF16", f"{m[('h100-sxm', 'bf16')][0]} TFLOP/s")
        self.check("matmul, H100 SXM FP8", f"{m[('h100-sxm', 'fp8')][0]} TFLOP/s")
        self.check("matmul, A100 SXM BF16", f"{m[('a100-sxm-80gb', 'bf16')][0]} TFLOP/s")
        self.check("matmul, MI325X BF16", f"{m[('mi325x', 'bf16')][0]} TFLOP/s")
        self.check("matmul, MI300X BF16", f"{m[('mi300x', 'bf16')][0]} TFLOP/s")
        self.check("matmul, Gaudi 3 BF16", f"{m[('gaudi3', 'bf16')][0]} TFLOP/s")
        self.check("matmul, MI300X and MI325X FP8", f"{m[('mi300x', 'fp8')][0]:g} and {m[('mi325x', 'fp8')][0]:g}")
        self.check("HBM, H800 SXM5", f"{memory.HBM_MEASURED['h800'][0] / 1e9:.0f} GB/s")
        self.check("matmul, L40S FP8", f"{m[('l40s', 'fp8')][0]:.1f} TFLOP/s of {m[('l40s', 'fp8')][1]:g}")
        self.check("matmul, L40S BF16 and FP16", f"{m[('l40s', 'bf16')][0]} and {m[('l40s', 'fp16')][0]} TFLOP/s")
        share = memory.ECC_DATA_SHARE["l40s"][0]
        self.check("inline ECC", f"| {round(share * 16)}/16 |")
        (_, b4), (_, b8) = collective.A2A_NVLINK_BUSBW_GBPS["sm100"]
        self.check("NCCL all-to-all on SM100 NVLink", f"{b4:.2f} / {b8:.2f} GB/s")

    def test_dispatcher_rows(self):
        r = dispatcher.RATES
        text = lambda rows: ", ".join(f"{d:.2f} / {c:.2f}" for _, d, c in rows)
        self.check("EP dispatch / combine, DeepEP", " / ".join(f"{x:g}" for x in r[("deepep", "h800", "up")][1][0][1:]),
                   ", ".join(f"{d:g} / {c:g}" for _, d, c in r[("deepep", "h800", "out")][1]))
        self.check("EP dispatch / combine, HybridEP", text(r[("hybridep", "gb200", "up")][1]),
                   f"B200 at 8 ranks {text(r[('hybridep', 'b200', 'up')][1])}",
                   f"H100 RDMA at 16, 32, 64 ranks {text(r[('hybridep', 'h100', 'out')][1])}",
                   "B200 at 8 ranks, 24 SMs, " + " / ".join(f"{x:g}" for x in r[("deepep", "b200", "up")][1][0][1:]))
        self.check("SMs the flex dispatcher's kernels take", f"DeepEP {dispatcher.SMS['deepep']}, "
                   f"HybridEP {dispatcher.SMS['hybridep']}")


if __name__ == "__main__":
    unittest.main()

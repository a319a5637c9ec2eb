"""Decode sums per operator (each block over its own pieces and period) equal an
explicit loop over the steps, exactly: FLOPs, bytes, compute-bound step counts and
the summed times, which both sides compute from the same exact integer sums per
bound class (decode_sum.bound_sums), so they agree to the last bit."""

import json
import os
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "calculations"))
sys.path.insert(0, str(ROOT / "tests"))

from infracalc import ledger  # noqa: E402
from infracalc.analyses import decode as D  # noqa: E402
from infracalc.analyses import decode_sum as S  # noqa: E402
from infracalc.analyses.efficiency import predict  # noqa: E402
from infracalc.analyses.roofline import Roof, roof  # noqa: E402
from infracalc.load.hardware import load_device  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.workload import Workload  # noqa: E402
from test_decode import patched_model  # noqa: E402

V4 = ROOT / "calculations" / "models" / "deepseek-v4-flash.json"
MF, RECT, VF, WR, AR, KR, AW, KW = range(8)


def tiny_v4():
    """DeepSeek-V4-Flash cut to 4 layers with ratios 0/4/8/4/0, window 6, top-k 3."""
    cfg = json.loads(V4.read_text())
    cfg.update(num_hidden_layers=4, compress_ratios=[0, 4, 8, 4, 0], sliding_window=6, index_topk=3,
               num_hash_layers=1)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "config.json")
        Path(path).write_text(json.dumps(cfg))
        return load_model(path)


def step_rows(arch, w, lo, hi):
    """[(history, [FIELDS of each operator])] from one ledger per step."""
    return [(h, [S._vector(op) for op in ledger.operators(arch, w.replace(tokens=1, history=h))])
            for h in range(lo, hi + 1)]


def add(a, b):
    return tuple(x + y for x, y in zip(a, b))


def loop_accounts(steps, r):
    """decode.operator_accounts by the loop: each step's bound of each operator on its
    own values, the FIELDS summed per operator and class, then turned into seconds."""
    bw = r.bytes_per_s
    n = len(steps[0][1])
    on_c, on_m, counts = [S._ZEROS] * n, [S._ZEROS] * n, [0] * n
    for _, rows in steps:
        for i, v in enumerate(rows):
            if r.compute_s(v[MF], v[VF]) > (v[WR] + v[AR] + v[KR] + v[AW] + v[KW]) / bw:
                on_c[i], counts[i] = add(on_c[i], v), counts[i] + 1
            else:
                on_m[i] = add(on_m[i], v)
    return [((r.compute_s(c[MF], c[VF]) if k else 0.0, m[WR] / bw, (m[KR] + m[KW]) / bw, (m[AR] + m[AW]) / bw), k)
            for c, m, k in zip(on_c, on_m, counts)]


def loop_ideal(steps, r):
    """decode.ideal_time by the loop: each step's totals on the side that bounds them."""
    on_c = on_m = S._ZEROS
    k = 0
    for _, rows in steps:
        t = tuple(map(sum, zip(*rows)))
        if r.compute_s(t[MF], t[VF]) > (t[WR] + t[KR] + t[KW]) / r.bytes_per_s:
            on_c, k = add(on_c, t), k + 1
        else:
            on_m = add(on_m, t)
    c = r.compute_s(on_c[MF], on_c[VF]) if k else 0.0
    return c + (on_m[WR] + on_m[KR] + on_m[KW]) / r.bytes_per_s if k < len(steps) else c


class OwnPeriodsEqualTheLoop(unittest.TestCase):
    def check(self, arch, w, lo, hi, *roofs):
        """The sums, and each roof's accounts and ideal time, of steps lo..hi against the loop
        (the steps' ledgers and the pieces do not depend on the roof: built once)."""
        steps = step_rows(arch, w, lo, hi)
        fast = S.decode_pieces(arch, w, lo, hi)
        self.assertEqual(fast.count, hi - lo + 1)
        self.assertEqual([S._vector(op) for op in S.summed_ops(fast)],
                         [tuple(map(sum, zip(*col))) for col in zip(*(rows for _, rows in steps))])
        for r in roofs:
            with self.subTest(r=r):
                self.assertEqual(D.operator_accounts(fast, r), loop_accounts(steps, r))
                self.assertEqual(D.ideal_time(fast, r), loop_ideal(steps, r))
        self.assertEqual(fast.last_step().starts(), tuple(steps[-1][1]))
        return fast

    def test_v4_ratios_window_and_saturation(self):
        """Across the window (6), the ratio-4 and ratio-8 periods and the top-k
        saturation (history 11); long runs summed as repeats of each block's own
        period; histories 10^10 and 10^15."""
        arch, w = tiny_v4(), Workload(batch=2)
        roofs = (roof(load_device("h100-sxm"), w.compute_dtype), Roof(3.3e12, 1e12, 1e12))
        for lo, hi in ((0, 90), (11, 60), (0, 700), (10**10, 10**10 + 300), (10**15 + 3, 10**15 + 260)):
            with self.subTest(lo=lo, hi=hi):
                fast = self.check(arch, w, lo, hi, *roofs)
                if hi - lo > 200:   # the ratio-4 blocks' runs repeat every 4 steps
                    self.assertTrue(any(run.repeats > 1 and run.period == 4 for runs in fast.runs
                                        for run in runs))

    def test_chunked_attention_with_a_bound_flip_in_every_repeat(self):
        """Llama 4 Scout with 32-token chunks on a roof where a chunk's attention turns
        compute-bound part-way (test_decode.RepeatedChunks derives it)."""
        arch = patched_model("llama-4-scout", attention_chunk_size=32)
        for batch, lo, hi, r in ((1, 2, 300, Roof(3.3e12, 1e12, 1e12)),
                                 (64, 5, 250, roof(load_device("h100-sxm"), Workload().compute_dtype))):
            with self.subTest(batch=batch):
                self.check(arch, Workload(batch=batch), lo, hi, r)

    def test_window_and_full_attention(self):
        for model, lo, hi in (("mistral-7b-v0.1", 4000, 4200), ("qwen3-8b", 2, 30)):
            with self.subTest(model=model):
                self.check(load_model(model), Workload(batch=3), lo, hi, Roof(3.3e12, 1e12, 1e12))

    def test_predicted_times_equal_the_loop(self):
        """predict.piece_times against the loop: per operator, the compute time of its
        compute-side steps' summed FLOPs plus the memory time of its memory-side steps'
        summed bytes at the achievable rates, plus repeats x kernel_s per step that
        moves bytes."""
        arch, w = tiny_v4(), Workload(batch=2)
        p = predict.achievable(load_device("h100-sxm"), w.compute_dtype)
        lo, hi = 3, 300
        fast = S.decode_pieces(arch, w, lo, hi)
        steps = step_rows(arch, w, lo, hi)
        want = []
        for i, op in enumerate(fast.ops):
            rate = predict._matrix_rate(op, p)
            on_c = on_m = None
            kernels = 0
            for _, rows in steps:
                v = rows[i]
                moved = v[WR] + v[AR] + v[KR] + v[AW] + v[KW]
                if v[MF] / rate + v[VF] / p.vector_flops_per_s > moved / p.bytes_per_s:
                    on_c = v if on_c is None else add(on_c, v)
                else:
                    on_m = v if on_m is None else add(on_m, v)
                kernels += moved > 0
            t = on_c[MF] / rate + on_c[VF] / p.vector_flops_per_s if on_c else 0.0
            if on_m:
                t += (on_m[WR] + on_m[AR] + on_m[KR] + on_m[AW] + on_m[KW]) / p.bytes_per_s
            want.append(t + kernels * op.repeats * p.kernel_s if kernels else t)
        self.assertEqual(predict.piece_times(fast, p), want)

    def test_held_cache_summed_block_by_block_equals_the_loop(self):
        """serving.held_sum (decode_sum.block_sum: each block's cache over its own
        pieces and period) against c(n) = arch.kv_bytes(n) summed one n at a time."""
        from infracalc.analyses import serving

        arch, w = tiny_v4(), Workload(batch=2)
        for first, last in ((1, 90), (12, 700), (10**10, 10**10 + 300), (10**15 + 3, 10**15 + 260)):
            with self.subTest(first=first):
                want = sum(serving.held(arch, w, n) for n in range(first, last + 1))
                self.assertEqual(serving.held_sum(arch, w, first, last), want)

    def test_one_sided_ideal_bound_equals_the_split(self):
        """decode.ideal_time answers from the summed totals when Steps.total_range puts
        every step on one side; that answer equals the split over the common pieces
        (decode_sum.bound_sums of total_runs), on roofs where either side holds."""
        arch, w = tiny_v4(), Workload(batch=2)
        shortcuts = 0
        for r in (roof(load_device("h100-sxm"), w.compute_dtype), Roof(1e9, 1e9, 1e15), Roof(1e18, 1e18, 1e9)):
            for lo, hi in ((0, 700), (10**10, 10**10 + 300)):
                steps = S.decode_pieces(arch, w, lo, hi)

                def compute_s(v):
                    return r.compute_s(v[MF], v[VF])

                def unique_s(v):
                    return (v[WR] + v[KR] + v[KW]) / r.bytes_per_s

                low, high, scale = steps.total_range(lambda v: compute_s(v) - unique_s(v))
                shortcuts += high < -1e-9 * scale or low > 1e-9 * scale
                c, m, k = S.bound_sums(steps.total_runs(), compute_s, unique_s)
                split = (compute_s(c) if k else 0.0) + (unique_s(m) if k < steps.count else 0.0)
                self.assertEqual(D.ideal_time(steps, r), split)
        self.assertGreaterEqual(shortcuts, 4)

    def test_totals_without_rows_equal_the_rows_totals(self):
        """ledger.field_sums and decode_sum.steps_totals (each distinct block once,
        times the layers holding it) against the sums over the ledger's rows."""
        for arch in (tiny_v4(), load_model("kimi-k3"), load_model("qwen3-30b-a3b")):
            for w in (Workload(batch=3, tokens=40, history=9), Workload(batch=64, tokens=1, history=8192)):
                rows = ledger.operators(arch, w)
                self.assertEqual(ledger.field_sums(arch, w, S.FIELDS),
                                 tuple(ledger.sum_field(rows, f) for f in S.FIELDS))
            w = Workload(batch=2)
            for lo, hi in ((0, 90), (10**10, 10**10 + 5000)):
                self.assertEqual(S.steps_totals(arch, w, lo, hi), S.summed_totals(S.decode_pieces(arch, w, lo, hi)))

    def test_block_evaluations_are_flat_in_steps_and_history(self):
        """Each block is evaluated a fixed number of times per run of its own, so a
        million steps cost what a thousand do, at history 10^4 or 10^12."""
        arch = tiny_v4()
        real, built = S._values, []

        def counting(*args):
            built[-1] += 1
            return real(*args)

        S._values = counting
        try:
            for lo, n in ((10**4, 10**3), (10**4, 10**6), (10**12, 10**3), (10**12, 10**6)):
                built.append(0)
                S.decode_pieces(arch, Workload(batch=5 + len(built)), lo, lo + n - 1)
        finally:
            S._values = real
        self.assertEqual(len(set(built)), 1, built)


if __name__ == "__main__":
    unittest.main()

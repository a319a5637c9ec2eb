"""MLA per phase: the expanded path's exact work, and --mla auto never charging the dearer path."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "calculations"))

from infracalc import ledger  # noqa: E402
from infracalc.analyses import mla_path  # noqa: E402
from infracalc.analyses.forward import forward  # noqa: E402
from infracalc.analyses.roofline import roof  # noqa: E402
from infracalc.load.hardware import load_device  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.workload import Workload  # noqa: E402


def op(ops, name, layers="0-60"):   # DeepSeek-V3's MLA block: one row group over its 61 layers
    return next(o for o in ops if o.name == name and o.layers == layers)


class Expanded(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.arch = load_model("deepseek-v3")
        cls.r = roof(load_device("h100-sxm"), Workload().compute_dtype)

    def test_prefill_work_by_hand(self):
        # DeepSeek-V3: 128 heads, kv_lora 512, qk 128 + 64, v 128. A prefill of T = 4096 tokens:
        # kv_b_proj up-projects 4096 latents: 2 x 4096 x 512 x 128 x (128 + 128) per layer (61 layers);
        # QK^T 2 x 128 x 192 per causal pair, PV 2 x 128 x 128 per pair, pairs = 4096 x 4097 / 2;
        # the cache written is the latent: 4096 x (512 + 64) x 2 B per layer (bf16).
        ops = ledger.operators(self.arch, Workload(tokens=4096, mla="expanded"))
        pairs = 4096 * 4097 // 2
        self.assertEqual(op(ops, "kv_b_proj").matrix_flops, 61 * 2 * 4096 * 512 * 128 * 256)
        self.assertEqual(op(ops, "attn_qk").matrix_flops, 61 * 2 * 128 * 192 * pairs)
        self.assertEqual(op(ops, "attn_pv").matrix_flops, 61 * 2 * 128 * 128 * pairs)
        self.assertEqual(op(ops, "kv_store").kv_write, 61 * 4096 * 576 * 2)
        self.assertEqual(op(ops, "kv_b_proj").kv_read, 0)      # no history to read
        # same matrix FLOPs as the naive path (HF reference), same cache as the absorbed path
        naive = ledger.operators(self.arch, Workload(tokens=4096, mla="naive"))
        absorbed = ledger.operators(self.arch, Workload(tokens=4096, mla="absorbed"))
        self.assertEqual(sum(o.matrix_flops for o in ops), sum(o.matrix_flops for o in naive))
        self.assertEqual(sum(o.kv_write for o in ops), sum(o.kv_write for o in absorbed))

    def test_history_is_up_projected_from_the_cache(self):
        # T = 512 new tokens over H = 1024 cached: kv_b_proj runs on 1536 keys and reads 1024
        # cached latents of 576 values x 2 B per layer
        ops = ledger.operators(self.arch, Workload(tokens=512, history=1024, mla="expanded"))
        self.assertEqual(op(ops, "kv_b_proj").matrix_flops, 61 * 2 * 1536 * 512 * 128 * 256)
        self.assertEqual(op(ops, "kv_b_proj").kv_read, 61 * 1024 * 576 * 2)

    def test_auto_picks_expanded_for_prefill_absorbed_for_steps(self):
        w, choice = mla_path.for_pass(self.arch, Workload(tokens=4096, mla="auto"), self.r)
        self.assertEqual(w.mla, "expanded")
        self.assertLess(choice["time_s"], choice["other_time_s"])
        rec = forward(self.arch, Workload(tokens=4096, mla="auto"), load_device("h100-sxm"))
        self.assertEqual(rec["inputs"]["mla"], "expanded")
        self.assertTrue(any("cheaper of the two" in n for n in rec["notes"]))
        for history in (1, 100, 4096, 32768):   # one-token passes: the cheaper, never the dearer
            step = Workload(batch=8, tokens=1, history=history, mla="auto")
            w, choice = mla_path.for_pass(self.arch, step, self.r)
            self.assertLessEqual(choice["time_s"], choice["other_time_s"])
            times = {p: mla_path.pass_time(self.arch, step.replace(mla=p), self.r)
                     for p in ("expanded", "absorbed")}
            self.assertEqual(choice["time_s"], min(times.values()))
            if history >= 4096:   # over a long history the up-projection is far dearer
                self.assertEqual(w.mla, "absorbed")
        self.assertEqual(mla_path.cheaper(self.arch, Workload(mla="naive"), None)[0].mla, "naive")

    def test_decode_auto_states_both_choices(self):
        from infracalc.analyses import decode as D

        rec = D.decode(load_model("deepseek-v2-lite"), Workload(mla="auto"), load_device("h100-sxm"), 4096, 256)
        self.assertEqual(rec["inputs"]["mla"], "auto: expanded for the prefill, absorbed for the decode steps")
        forced = D.decode(load_model("deepseek-v2-lite"), Workload(mla="absorbed"), load_device("h100-sxm"), 4096, 256)
        self.assertLess(rec["prefill"]["time_s"], forced["prefill"]["time_s"])
        self.assertEqual(rec["decode"]["time_s"], forced["decode"]["time_s"])

    def test_auto_caches_the_latent(self):
        self.assertEqual(self.arch.kv_bytes_per_token(Workload().kv_dtype, "auto"), 61 * 576 * 2)


if __name__ == "__main__":
    unittest.main()

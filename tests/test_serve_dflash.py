"""`serve --draft-model DFLASH`: a DFlash block-diffusion drafter's round on a toy geometry
derived by hand, the bundled Qwen3-8B drafter against its checkpoint's published counts, and
the drafter in the speculative table."""

import json
import unittest

from support import load_model, run_cli, write_config
from infracalc.analyses.roofline import Roof
from infracalc.analyses.serve import dflash, speculation
from infracalc.load.dflash import is_dflash, load_drafter

# A toy drafter: hidden H 8, one layer, 2 query heads of 4 sharing 1 KV head, MLP 16, vocabulary
# 10, two target layers tapped (F 2), a block of 4.
TOY = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 8, "num_hidden_layers": 1,
       "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 16,
       "vocab_size": 10, "block_size": 4, "dflash_config": {"target_layer_ids": [0, 1]}}
# One round at C = 3 cached rows, N = 2 new rows, B = 4 positions, by hand (2 m k n count):
# fusion 2 x 2 x 16 x 8 = 512; q 2 x 4 x 8 x 8 = 512; K and V 2 x (2 + 4) x 8 x 4 x 2 = 768;
# o 2 x 4 x 8 x 8 = 512; gate and up 2 x 4 x 8 x 16 x 2 = 2,048; down 2 x 4 x 16 x 8 = 1,024;
# QK and PV each 2 x 4 x 4 x (3 + 2 + 4 = 9 context rows) x 2 heads = 576; the shared head on
# B - 1 = 3 rows: 2 x 3 x 8 x 10 = 480.
TOY_FLOPS = {"target_feature_fusion": 512, "draft_q": 512, "context_and_noise_kv": 768, "draft_o": 512,
             "draft_gate_up": 2048, "draft_down": 1024, "noncausal_qk": 576, "noncausal_pv": 576,
             "shared_target_head": 480}
# Parameters: fusion F H^2 = 128, two norms 2 H = 16; the layer: q and o 2 x 64, k and v 2 x 32,
# MLP 3 x 128, q_norm and k_norm 2 x 4, two layer norms 2 x 8 = 128 + 64 + 384 + 8 + 16 = 600.
TOY_PARAMS = 128 + 16 + 600


class ToyRound(unittest.TestCase):
    def setUp(self):
        self.d = load_drafter(write_config(self, TOY))

    def test_matrix_flops_by_hand(self):
        rows = dflash.rows(self.d, 3, 2, 4)
        self.assertEqual({r["operator"]: r["matrix_flops"] for r in rows}, TOY_FLOPS)
        self.assertEqual(sum(TOY_FLOPS.values()), 7008)

    def test_operand_bytes(self):
        # draft_q: 2 x (4 x 8 + 8 x 8 + 4 x 8) = 256 B; noncausal_qk: 2 x (4 x 4 + 4 x 9 + 4 x 9) = 176 B
        by_name = {r["operator"]: r["logical_operand_bytes_per_instance"] for r in dflash.rows(self.d, 3, 2, 4)}
        self.assertEqual(by_name["draft_q"], 256)
        self.assertEqual(by_name["noncausal_qk"], 176)

    def test_params_tensors_and_kv(self):
        self.assertEqual(dflash.params(self.d), TOY_PARAMS)
        self.assertEqual(dflash.tensors(self.d), 14)           # fc, hidden_norm, norm + 11 per layer
        self.assertEqual(dflash.kv_bytes_per_row(self.d), 16)  # K and V: 2 x 1 layer x 1 head x 4 x 2 B

    def test_context_enters_only_attention(self):
        # one more cached row adds 2 x B x d x (L n_q) for QK and as much for PV: 2 x 2 x 4 x 4 x 2 = 128
        a = sum(r["matrix_flops"] for r in dflash.rows(self.d, 3, 2, 4))
        b = sum(r["matrix_flops"] for r in dflash.rows(self.d, 4, 2, 4))
        self.assertEqual(b - a, 128)

    def test_round_time_is_the_operator_sum(self):
        # compute-bound roof at 1e12 FLOP/s: the time is the FLOPs over the peak
        self.assertAlmostEqual(dflash.round_time_s(self.d, 3, 2, 4, Roof(1e12, 1e30, 1e30)), 7008 / 1e12, places=20)
        # memory-bound roof at 1 B/s: the sum of count x operand bytes
        rows = dflash.rows(self.d, 3, 2, 4)
        self.assertEqual(dflash.round_time_s(self.d, 3, 2, 4, Roof(1e30, 1e30, 1.0)),
                         sum(r["count"] * r["logical_operand_bytes_per_instance"] for r in rows))

    def test_block_size_in_dflash_config_and_refusals(self):
        inner = dict(TOY, dflash_config={"target_layer_ids": [0], "block_size": 8})
        del inner["block_size"]
        self.assertEqual(load_drafter(write_config(self, inner)).block_size, 8)
        plain = dict(TOY, architectures=["Qwen3ForCausalLM"])
        self.assertFalse(is_dflash(write_config(self, plain)))
        status, _, err = run_cli("forward", "--model", write_config(self, TOY))
        self.assertEqual(status, 2)
        self.assertIn("DFlash", err)


class BundledQwen3Drafter(unittest.TestCase):
    """z-lab/Qwen3-8B-DFlash-b16: its safetensors header holds 58 tensors of 1,048,626,432
    parameters (the book's pinned header, bojieli/ai-infra-book:calculations/results/dflash-work-book.json)."""

    def setUp(self):
        self.d = load_drafter("qwen3-8b-dflash-b16")

    def test_checkpoint_counts(self):
        self.assertEqual(dflash.tensors(self.d), 58)
        self.assertEqual(dflash.params(self.d), 1048626432)

    def test_round_at_1020_cached_4_new_block_16(self):
        # by hand: fusion 2 x 4 x 20,480 x 4,096 = 671,088,640; QK 2 x 16 x 128 x 1,040 x 160 = 681,574,400;
        # head 2 x 15 x 4,096 x 151,936 = 18,669,895,680
        by_name = {r["operator"]: r["matrix_flops"] for r in dflash.rows(self.d, 1020, 4, 16)}
        self.assertEqual(by_name["target_feature_fusion"], 671088640)
        self.assertEqual(by_name["noncausal_qk"], 681574400)
        self.assertEqual(by_name["shared_target_head"], 18669895680)
        self.assertEqual(sum(by_name.values()), 51909754880)
        self.assertEqual(dflash.kv_bytes_per_row(self.d), 20480)   # 2 x 5 x 8 x 128 x 2 B

    def test_record_verify_is_the_forward_ledger(self):
        status, out, _ = run_cli("serve", "--model", "qwen3-8b", "--draft-model", "qwen3-8b-dflash-b16",
                                 "--draft-round", "1020:4:16", "--format", "json")
        self.assertEqual(status, 0)
        d = json.loads(out)["dflash"]
        status, fwd, _ = run_cli("forward", "--model", "qwen3-8b", "--tokens", "16", "--history", "1024",
                                 "--logits", "all", "--format", "json")
        self.assertEqual(d["target_verify_matrix_flops"], json.loads(fwd)["totals"]["matrix_flops"])
        self.assertEqual(d["target_verify_peak_kv_bytes"], 1040 * 147456)   # Qwen3-8B: 36 x 2 x 8 x 128 x 2 B
        self.assertEqual((d["draft_kv_peak_bytes"], d["draft_kv_after_crop_bytes"]), (1040 * 20480, 1024 * 20480))
        self.assertEqual(d["new_target_feature_bytes"], 4 * 5 * 4096 * 2)

    def test_refusals(self):
        status, _, err = run_cli("forward", "--model", "qwen3-8b-dflash-b16")   # a drafter, not a causal LM
        self.assertEqual(status, 2)
        self.assertIn("serve --draft-model", err)
        for extra, text in ((("--draft-round", "0:0:4"), "context"), (("--draft-round", "1:1:17"), "block_size"),
                            (("--draft-round", "1:1:4", "--acceptance", "0.8"), "--acceptance")):
            status, _, err = run_cli("serve", "--model", "qwen3-8b", "--draft-model", "qwen3-8b-dflash-b16", *extra)
            self.assertEqual(status, 2, extra)
            self.assertIn(text, err)
        status, _, err = run_cli("serve", "--model", "llama-3.1-8b", "--draft-model", "qwen3-8b-dflash-b16",
                                 "--draft-round", "1:1:4")
        self.assertEqual(status, 2)
        self.assertIn("vocabulary", err)


class InTheSpeculativeTable(unittest.TestCase):
    def test_one_block_forward_per_round(self):
        d = load_drafter("qwen3-8b-dflash-b16")
        r = Roof(1e15, 1e14, 3e12)
        # k drafts at history h: a block of k + 1 at h - (k + 1) cached and k + 1 new rows
        self.assertEqual(speculation.dflash_round_s(d, 1000, 3, r), dflash.round_time_s(d, 996, 4, 4, r))
        self.assertEqual(speculation.dflash_round_s(d, 2, 3, r), dflash.round_time_s(d, 0, 2, 4, r))

    def test_serve_rows(self):
        args = ("serve", "--model", "qwen3-8b", "--draft-model", "qwen3-8b-dflash-b16", "--acceptance", "0.8",
                "--input-len", "1024", "--output-len", "256", "--format", "json")
        status, out, _ = run_cli(*args, "--max-draft-tokens", "15")
        self.assertEqual(status, 0)
        sp = json.loads(out)["speculative"]
        self.assertEqual((sp["drafter"], sp["draft_params"], len(sp["rows"])), ("dflash", 1048626432, 15))
        # E(k) = (1 - 0.8^(k+1)) / 0.2
        self.assertAlmostEqual(sp["rows"][2]["expected_tokens_per_step"], (1 - 0.8 ** 4) / 0.2)
        status, _, err = run_cli(*args, "--max-draft-tokens", "16")
        self.assertEqual(status, 2)
        self.assertIn("block_size - 1 = 15", err)
        status, _, err = run_cli(*args, "--spec-batch", "2")
        self.assertEqual(status, 2)


if __name__ == "__main__":
    unittest.main()

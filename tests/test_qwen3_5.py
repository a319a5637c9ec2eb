"""Qwen3.5 / Qwen3.6 (model_type qwen3_5_moe and its text model qwen3_5_moe_text): the
vision-language wrapper is loaded through its text model, whose layer mix is Qwen3-Next's
(Gated DeltaNet, gated full attention, shared-expert MoE, one MTP layer); the vision
tower (the Qwen3-VL tower) is counted by formula and reported apart. Bundled: the
official config.json of Qwen/Qwen3.5-397B-A17B and of Qwen/Qwen3.6-35B-A3B, each
byte-identical to the file the book pins (sha256 in models/SOURCES.md)."""

import hashlib
import os

import unittest

from support import Workload, build, load_model, write_config

from infracalc.load.models import MODELS_DIR

TEXT = {"hidden_size": 8, "num_hidden_layers": 4, "layer_types": ["linear_attention"] * 3 + ["full_attention"],
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "partial_rotary_factor": 0.5,
        "linear_num_key_heads": 1, "linear_num_value_heads": 2, "linear_key_head_dim": 4,
        "linear_value_head_dim": 4, "linear_conv_kernel_dim": 4, "num_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 4, "shared_expert_intermediate_size": 4, "vocab_size": 10,
        "max_position_embeddings": 64, "attn_output_gate": True, "mtp_num_hidden_layers": 1}

# A tiny Qwen3-VL vision tower: d 8, I 16, 2 blocks, patch 2, t 2, C 3, 4 positions,
# merge 2 (m = 32), out 8, one deepstack merger. By hand:
#   patch_embed 3*2*2*2*8 + 8 = 200; pos_embed 4*8 = 32;
#   block 4*8 + (3*64 + 24) + (64 + 8) + (2*8*16 + 16 + 8) = 32 + 216 + 72 + 280 = 600, x2 = 1200;
#   merger LayerNorm 16 + fc1 32*32 + 32 = 1056 + fc2 8*32 + 8 = 264 -> 1336;
#   deepstack merger LayerNorm over m 64 + 1056 + 264 = 1384;
#   total 200 + 32 + 1200 + 1336 + 1384 = 4152.
VISION = {"depth": 2, "hidden_size": 8, "intermediate_size": 16, "num_heads": 2, "patch_size": 2, "temporal_patch_size": 2,
          "in_channels": 3, "num_position_embeddings": 4, "spatial_merge_size": 2, "out_hidden_size": 8,
          "deepstack_visual_indexes": [1]}


class Bundled(unittest.TestCase):
    """The book's figures (bojieli/ai-infra-book): Qwen3.5-397B-A17B base text 396,346,350,336
    parameters (1,038 tensors matched against the shard headers), vision 456,010,480, MTP
    6,595,568,128, whole checkpoint 403,397,928,944 elements
    (calculations/research/f02-qwen35-inputs/REVIEW.md, results/qwen35-prefill-8192.md);
    Qwen3.6-35B-A3B base text weights 69,321,221,376 bytes, whole checkpoint 71,903,645,408
    bytes, the difference = vision 893,142,496 + MTP bytes, every tensor BF16
    (results/qwen36-capacity-*.md, sources/qwen3.6-35b-a3b/headers/)."""

    def test_configs_are_the_pinned_official_files(self):
        # sha256 of config.json as pinned by the book: calculations/configs/sources.lock.json
        # (Qwen3.5, 4,177 bytes) and the provenance list of results/qwen36-*.md (Qwen3.6).
        for model, digest in (("qwen3.5-397b-a17b", "3ae7fa89c2f7d1354096418ddaf1331e9e0898a8ca11e804fb6dbaa087efb7da"),
                              ("qwen3.6-35b-a3b", "93a4693fa9d8392fbfccd4b3c9873f4bfdcb14fdede978b123d07d19675efe99")):
            with open(os.path.join(MODELS_DIR, model + ".json"), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), digest, model)

    def test_qwen3_5_397b(self):
        arch = load_model("qwen3.5-397b-a17b")
        parts = {p.name: p.params for p in arch.parts}
        self.assertEqual(arch.params, 396_346_350_336)
        self.assertEqual(parts, {"mtp": 6_595_568_128, "vision": 456_010_480})
        self.assertEqual(arch.params + sum(parts.values()), 403_397_928_944)

    def test_qwen3_6_35b(self):
        arch = load_model("qwen3.6-35b-a3b")
        parts = {p.name: p.params for p in arch.parts}
        self.assertEqual(2 * arch.params, 69_321_221_376)
        self.assertEqual(2 * parts["vision"], 893_142_496)
        self.assertEqual(2 * (arch.params + parts["mtp"] + parts["vision"]), 71_903_645_408)


class BookReferencePath(unittest.TestCase):
    """bojieli/ai-infra-book:calculations/results/README.md, the qwen35-* rows (matrix FLOPs of
    the book's Qwen3.5-397B-A17B reference path, output head on every position, BF16).

    Every operator we share with that path is equal: our matrix FLOPs without the
    `delta_rule` rows are the book's projection, attention (valid pairs), MoE and head
    FLOPs to the FLOP. The rest is the reference fallback's own arithmetic, which the book
    counts as matrix FLOPs (its calculations/src/infra_calc/topics/qwen35_forward.py):
      - the depthwise conv as 2 x 12,288 channels x (taps the fallback computes) per
        request and linear layer: (T + 3) x 4 positions x taps for a cold prefill (T >= 4),
        7 x 4 for a cold single token (cache padded to 4), (T + 7) x 4 after a cached
        history (4 cached slots + T, padded), 2 x 4 for a decode step (update path);
      - the DeltaNet core: chunked with every chunk padded to 64 tokens, 9,437,184 FLOPs
        per chunk and value head (Kbeta K^T and Q K^T 64x128x64, K S and Q S 64x128x128,
        intra 64x64x128, K^T V 128x64x128, each 2mkn); a decode step is the recurrence,
        6 dk dv per head = our `delta_rule`;
      - the eager rectangle: the masked query-key pairs (the `attn_qk`/`attn_pv` rows'
        rectangular minus causal FLOPs);
      - the M-RoPE frequency products, 2 x 3 axes x 32 frequencies = 192 per position.
    The book's -record-past rows are the same passes with fewer conv taps (not stored)."""

    CASES = {   # name: (batch, tokens, history, conv taps per channel, book matrix FLOPs)
        "qwen35-prefill-8192": (1, 8192, 0, (8192 + 3) * 4, 304_038_065_373_184),
        "qwen35-chunk-tail-65": (1, 65, 0, (65 + 3) * 4, 2_179_531_092_160),
        "qwen35-cold-single-token": (1, 1, 0, 7 * 4, 59_868_938_432),
        "qwen35-decode-b1": (1, 1, 8192, 2 * 4, 36_977_377_472),
        "qwen35-decode-b64": (64, 1, 8192, 2 * 4, 2_366_552_158_208),
        "qwen35-prefix-6144-2048": (1, 2048, 6144, (2048 + 7) * 4, 76_009_543_991_296),
    }

    def test_book_totals_by_the_stated_terms(self):
        arch = load_model("qwen3.5-397b-a17b")
        for name, (b, t, h, taps, book) in self.CASES.items():
            with self.subTest(name):
                led = build(arch, Workload(batch=b, tokens=t, history=h, logits="all"))
                delta = sum(op.matrix_flops for op in led.ops if op.name == "delta_rule")
                ours = led.totals.matrix_flops - delta
                conv = 45 * b * 2 * 12288 * taps
                core = delta if h and t == 1 else 45 * b * 64 * -(-t // 64) * 9_437_184
                rect = sum(op.rect_flops - op.matrix_flops for op in led.ops if op.name in ("attn_qk", "attn_pv"))
                self.assertEqual(ours + conv + core + rect + 192 * b * t, book)

    def test_recurrent_core_is_ours(self):
        # decode: 45 layers x 64 value heads x 6 x 128 x 128 = 283,115,520 (the book's three
        # state products of 2 dk dv each)
        led = build(load_model("qwen3.5-397b-a17b"), Workload(tokens=1, history=8192))
        self.assertEqual(sum(op.matrix_flops for op in led.ops if op.name == "delta_rule"), 283_115_520)


class Qwen36BookFigures(unittest.TestCase):
    """bojieli/ai-infra-book:calculations/results/qwen36-prefill-8192.md (matrix FLOPs
    60,426,170,793,984), qwen36-decode-b1.md (7,331,184,832, history 8192) and
    qwen36-capacity-b1-n32768.md (H100 80 GB: 7,795,325,696 B left, so a necessary budget of
    72,204,674,304 B = base text weights 69,321,221,376 + 20,480 x 32,768 KV + 62,914,560
    recurrent + 1,966,080 conv + 2 GiB reserve). The forward terms are those of
    BookReferencePath with this model's 30 linear layers, 32 value heads and 8,192 conv
    channels; the conv state differs by convention: the book's reference path keeps all 4
    kernel slots, we keep 3 (vLLM's layout), 30 x 8,192 x 2 B = 491,520 B less per request."""

    def test_forward_totals(self):
        arch = load_model("qwen3.6-35b-a3b")
        for t, h, taps, book in ((8192, 0, (8192 + 3) * 4, 60_426_170_793_984), (1, 8192, 2 * 4, 7_331_184_832)):
            led = build(arch, Workload(tokens=t, history=h, logits="all"))
            delta = sum(op.matrix_flops for op in led.ops if op.name == "delta_rule")
            core = delta if h else 30 * 32 * -(-t // 64) * 9_437_184
            rect = sum(op.rect_flops - op.matrix_flops for op in led.ops if op.name in ("attn_qk", "attn_pv"))
            self.assertEqual(led.totals.matrix_flops - delta + 30 * 2 * 8192 * taps + core + rect + 192 * t, book)

    def test_capacity_budget(self):
        from support import run_cli
        import json
        status, out, _ = run_cli("kv", "--model", "qwen3.6-35b-a3b", "--context", "32768", "--memory-bytes", "80GB",
                                 "--reserve", "2GiB", "--format", "json")
        left = json.loads(out)["capacity"]["memory_left_bytes_at_batch"]
        self.assertEqual(status, 0)
        self.assertEqual(left - 491_520, 7_795_325_696)


class Qwen35(unittest.TestCase):
    def test_wrapper_is_its_text_model(self):
        wrapped = load_model(write_config(self, {"model_type": "qwen3_5_moe", "vision_config": VISION,
                                                 "text_config": {**TEXT, "model_type": "qwen3_5_moe_text"}}))
        next_ = load_model(write_config(self, {**TEXT, "model_type": "qwen3_next"}))
        self.assertEqual(wrapped.params, next_.params)
        self.assertEqual([p.name for p in wrapped.parts], ["mtp", "vision"])
        self.assertEqual(wrapped.parts[1].params, 4152)   # VISION, worked by hand above
        w = Workload(tokens=5)
        self.assertEqual(build(wrapped, w).totals.matrix_flops, build(next_, w).totals.matrix_flops)
        # the text model alone loads too
        text = load_model(write_config(self, {**TEXT, "model_type": "qwen3_5_moe_text"}))
        self.assertEqual(text.params, next_.params)

    def test_output_gate_required(self):
        from support import run_cli
        path = write_config(self, {**TEXT, "model_type": "qwen3_5_moe_text", "attn_output_gate": False})
        status, _, err = run_cli("models", "--model", path)
        self.assertEqual(status, 2)
        self.assertIn("attn_output_gate", err)



class ReferencePathOption(unittest.TestCase):
    """`forward --reference-path` produces the book's totals itself (blocks/reference_path.py); the
    terms are BookReferencePath's, derived by hand above."""

    def test_rules(self):
        from infracalc.blocks import reference_path as ref
        # K 4: cold T 8192 -> 8195 positions; cold T 1 -> max(1, 4) + 3 = 7; after a history T 2048 ->
        # 2048 + 7; one token after a history -> 2 (the update path); x K taps each
        self.assertEqual([ref.conv_taps(8192, 0, 4), ref.conv_taps(1, 0, 4), ref.conv_taps(2048, 6144, 4),
                          ref.conv_taps(1, 8192, 4)], [8195 * 4, 7 * 4, 2055 * 4, 2 * 4])
        # record_past: cold max(T, K) positions; after a history the valid taps min(K, H + i + 1)
        self.assertEqual([ref.conv_taps(1, 0, 4, "record-past"), ref.conv_taps(1, 8192, 4, "record-past"),
                          ref.conv_taps(3, 1, 4, "record-past")], [16, 4, 2 + 3 + 4])
        # one padded chunk and value head at C 64, d 128: 2 x 64 x (2 x 64 x 128 + 64 x 128 + 3 x 128^2)
        self.assertEqual(ref.chunk_flops(64, 128, 128), 9_437_184)

    def test_book_totals(self):
        import json
        from support import run_cli
        for model, args, book in (
                ("qwen3.5-397b-a17b", ("--tokens", "8192"), 304_038_065_373_184),
                ("qwen3.5-397b-a17b", ("--tokens", "1", "--history", "8192"), 36_977_377_472),
                ("qwen3.5-397b-a17b", ("--tokens", "1", "--reference-path", "record-past"), 59_855_667_392),
                ("qwen3.6-35b-a3b", ("--tokens", "65"), 401_830_392_000)):
            status, out, err = run_cli("forward", "--model", model, "--logits", "all", "--reference-path", *args,
                                       "--format", "json")
            self.assertEqual(status, 0, err)
            self.assertEqual(json.loads(out)["totals"]["matrix_flops"], book, (model, args))

    def test_refused_elsewhere(self):
        from support import run_cli
        status, _, err = run_cli("forward", "--model", "qwen3-8b", "--reference-path")
        self.assertEqual(status, 2)
        self.assertIn("qwen3_5_moe", err)


if __name__ == "__main__":
    unittest.main()

"""`encode`: the Qwen3-VL vision encoder per image and per request, and the whole VL request;
every expected value derived by hand in its comment (the book's figures from
bojieli/ai-infra-book:calculations/results/README.md, tables "视觉编码单独计量", "Qwen3-VL完整EC、KV"
and "VL请求阶段连接")."""

import hashlib
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import run_cli  # noqa: E402

from infracalc.analyses import vision_encoder  # noqa: E402
from infracalc.arch import VisionTower  # noqa: E402
from infracalc.errors import UserError  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "calculations")


def encode(*argv):
    status, out, err = run_cli("encode", "--model", "qwen3-vl-4b", *argv, "--format", "json")
    assert status == 0, err
    return json.loads(out)


class Formulas(unittest.TestCase):
    def test_toy_tower_by_hand(self):
        # d 4, I 8, 2 blocks, patch 2, t 2, C 3, merge 2, o 6, one DeepStack merger. A 4x4 image: N = 4
        # patches of 3 x 2 x 2^2 = 24 inputs, T = 1 token. Patch embed 2 x 4 x 24 x 4 = 768; per block
        # qkv 2x4x4x12 = 384, QK 2 x 4^2 x 4 = 128, PV 128, proj 2x4x4x4 = 128, fc1 2x4x4x8 = 256,
        # fc2 256: 1,280, two blocks 2,560; m = 16: merger 2x1x16x16 + 2x1x16x6 = 704, DeepStack 704.
        tower = VisionTower(hidden=4, intermediate=8, depth=2, heads=1, patch=2, temporal_patch=2, channels=3,
                            merge=2, out_hidden=6, deepstack=(0,), params=0)
        n, t, rows = vision_encoder.image_rows(tower, 4, 4)
        self.assertEqual((n, t), (4, 1))
        self.assertEqual({r["name"]: r["matrix_flops"] for r in rows},
                         {"patch_embed": 768, "blocks.qkv": 768, "blocks.attn_qk": 256, "blocks.attn_pv": 256,
                          "blocks.proj": 256, "blocks.mlp_fc1": 512, "blocks.mlp_fc2": 512, "merger": 704,
                          "deepstack_mergers": 704})
        self.assertEqual(sum(r["matrix_flops"] for r in rows), 768 + 2560 + 704 + 704)
        with self.assertRaises(UserError):        # 6 is not a multiple of patch x merge = 4
            vision_encoder.grid(tower, 6, 4)

    def test_qwen3_vl_tower_params_by_hand(self):
        # d = 1024: patch Conv3d 3 x 2 x 16^2 x 1024 + 1024 = 1,573,888; pos_embed 2304 x 1024 = 2,359,296;
        # block 4d + (3d^2 + 3d) + (d^2 + d) + (2 d 4096 + 4096 + d) = 12,596,224, x 24 = 302,309,376;
        # merger 2d + (4096^2 + 4096) + (2560 x 4096 + 2560) = 27,271,680; each DeepStack merger has its
        # LayerNorm over 4096: 27,277,824, x 3 = 81,833,472. Sum 415,347,712.
        arch = load_model("qwen3-vl-4b")
        self.assertEqual(vision_encoder.tower_of(arch).params, 415_347_712)
        self.assertEqual(arch.params, 4_022_468_096)   # the text model (Qwen3, tied embeddings)

    def test_bundled_config_is_the_pinned_official_file(self):
        # bojieli/ai-infra-book:calculations/configs/sources.lock.json pins Qwen/Qwen3-VL-4B-Instruct
        # config.json (revision ebb281ec...) at 1,505 bytes with this sha256.
        with open(os.path.join(ROOT, "models", "qwen3-vl-4b.json"), "rb") as f:
            data = f.read()
        self.assertEqual(len(data), 1505)
        self.assertEqual(hashlib.sha256(data).hexdigest(),
                         "edac7703329133edfc53e46ac0081835144c99d7eebf28b71c732694d435224d")


class Book(unittest.TestCase):
    def test_one_640_image(self):
        # N = 40 x 40 = 1,600 patches, T = 400. Patch embed 2 x 1600 x 1536 x 1024 = 5,033,164,800; a block
        # 2 x 1600 x 1024 x (3072 + 1024 + 2 x 4096) + 4 x 1600^2 x 1024 = 40,265,318,400 + 10,485,760,000,
        # x 24 = 1,218,025,881,600; 4 mergers 4 x (2 x 400 x 4096 x 4096 + 2 x 400 x 4096 x 2560) =
        # 87,241,523,200. Total 1,310,300,569,600 (the book's vision-encoding-book per image). EC
        # 400 x 2560 x 4 x 2 B = 8,192,000; KV 400 x 147,456 = 58,982,400 (multimodal-cache-book).
        r = encode("--image", "640x640", "--images", "4", "--cached", "3")
        image = r["images"][3]
        self.assertEqual((image["patches"], image["tokens"], image["matrix_flops"]), (1600, 400, 1_310_300_569_600))
        self.assertEqual((image["ec_bytes"], image["kv_bytes"]), (8_192_000, 58_982_400))
        self.assertEqual((r["encodes"], r["request_matrix_flops"]), (1, 1_310_300_569_600))   # -three-hits

    def test_larger_and_fp32(self):
        # 672x640: 42 x 40 = 1,680 patches, 420 tokens: 2 x 1680 x 1536 x 1024 + 24 x (2 x 1680 x 1024 x 12288 +
        # 4 x 1680^2 x 1024) + 420 x 4 x 2 x 4096 x 6656 = 1,389,027,655,680; EC 420 x 2560 x 4 x 2 = 8,601,600.
        image = encode("--image", "672x640")["images"][0]
        self.assertEqual((image["matrix_flops"], image["ec_bytes"], image["kv_bytes"]),
                         (1_389_027_655_680, 8_601_600, 420 * 147_456))
        # FP32 activations double the encoder cache (16,384,000); the KV stays BF16.
        image = encode("--image", "640x640", "--act-dtype", "fp32", "--kv-dtype", "bf16")["images"][0]
        self.assertEqual((image["ec_bytes"], image["kv_bytes"]), (16_384_000, 58_982_400))

    def test_whole_request(self):
        # 4 images (1,600 tokens) + 400 text = 2,000 positions, 127 decode calls: vision 4 x 1,310,300,569,600
        # + language (decode --input-len 2000 --output-len 128: 16,890,545,569,792) = 22,131,747,848,192;
        # KV at 2,127 tokens = 2127 x 147,456 = 313,638,912 (vl-request-book).
        q = encode("--image", "640x640", "--images", "4", "--text-tokens", "400", "--output-len", "128")["request"]
        self.assertEqual((q["matrix_flops"], q["language_matrix_flops"], q["final_kv_bytes"]),
                         (22_131_747_848_192, 16_890_545_569_792, 313_638_912))

    def test_errors(self):
        for argv, text in [(("--model", "qwen3-vl-4b", "--image", "641x640"), "multiples of 32"),
                           (("--model", "qwen3-vl-4b", "--image", "640x640", "--cached", "2"), "exceeds"),
                           (("--model", "qwen3-8b", "--image", "640x640"), "no vision encoder"),
                           (("--model", "qwen3-vl-4b", "--image", "640"), "WIDTHxHEIGHT")]:
            status, _, err = run_cli("encode", *argv)
            self.assertEqual(status, 2, argv)
            self.assertIn(text, err)


class Qwen35Towers(unittest.TestCase):
    """Qwen3.5-397B-A17B and Qwen3.6-35B-A3B carry the Qwen3-VL tower without DeepStack
    (vision_config: 27 blocks, d 1152, I 4304, 16 heads, patch 16, t 2, merge 2, out 4096 /
    2048). Its parameters (456,010,480 / 446,571,248) close the official checkpoints'
    totals (test_qwen3_5.Bundled). One 640x640 image, N = 1,600 patches, T = 400, m = 4608:
      patch embed 2 x 1600 x 1536 x 1152                              =     5,662,310,400
      a block: qkv 2 x 1600 x 1152 x 3456 = 12,740,198,400, QK^T + PV 4 x 1600^2 x 1152 =
        11,796,480,000, proj 2 x 1600 x 1152^2 = 4,246,732,800, MLP 4 x 1600 x 1152 x 4304 =
        31,732,531,200: 60,515,942,400, x 27                           = 1,633,930,444,800
      merger 2 x 400 x 4608 x 4608 + 2 x 400 x 4608 x o: o 2048 -> 24,536,678,400,
                                                          o 4096 -> 32,086,425,600
      Qwen3.6 total 1,664,129,433,600; Qwen3.5 total 1,671,679,180,800.
    EC 400 x o x 2 B: 1,638,400 / 3,276,800. KV the image adds: 400 tokens x (10 / 15 gated
    attention layers x 2 KV heads x 256 x 2 x 2 B) = 400 x 20,480 = 8,192,000 / 400 x 30,720 =
    12,288,000; the Gated DeltaNet state is the request's, not the image's."""

    def test_geometry(self):
        for model, out in (("qwen3.6-35b-a3b", 2048), ("qwen3.5-397b-a17b", 4096)):
            t = vision_encoder.tower_of(load_model(model))
            self.assertEqual((t.depth, t.hidden, t.intermediate, t.heads, t.patch, t.temporal_patch, t.merge,
                              t.out_hidden, t.deepstack), (27, 1152, 4304, 16, 16, 2, 2, out, ()), model)

    def test_one_640_image(self):
        for model, flops, ec, kv in (("qwen3.6-35b-a3b", 1_664_129_433_600, 1_638_400, 8_192_000),
                                     ("qwen3.5-397b-a17b", 1_671_679_180_800, 3_276_800, 12_288_000)):
            status, out, err = run_cli("encode", "--model", model, "--image", "640x640", "--format", "json")
            self.assertEqual(status, 0, err)
            rec = json.loads(out)
            image = rec["images"][0]
            self.assertIn("recurrent state", rec["conventions"][-1])
            self.assertEqual((image["patches"], image["tokens"]), (1600, 400), model)
            self.assertEqual((image["matrix_flops"], image["ec_bytes"], image["kv_bytes"]), (flops, ec, kv), model)
            rows = {r["name"]: r["matrix_flops"] for r in image["rows"]}
            self.assertNotIn("deepstack_mergers", rows)
            self.assertEqual(rows["blocks.mlp_fc1"], 27 * 2 * 1600 * 1152 * 4304)


if __name__ == "__main__":
    unittest.main()

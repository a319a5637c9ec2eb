"""Multi-head latent attention and the DeepSeek family (DeepSeek-V2-Lite, DeepSeek-V3, Kimi K2).

Expected values are derived by hand in the comments (tiny config) or from
published checkpoint figures (DeepSeek-V3 safetensors totals, README_WEIGHTS).
"""

import json
import os
import sys
import tempfile
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "calculations"))

from infracalc import ledger  # noqa: E402
from infracalc.arch import Tensor  # noqa: E402
from infracalc.dtypes import DTYPES  # noqa: E402
from infracalc.errors import UserError  # noqa: E402
from infracalc.load.models import load_model  # noqa: E402
from infracalc.workload import Workload  # noqa: E402

BF16 = DTYPES["bf16"]

# hidden 64, heads 4, q_lora 32, kv_lora 16, qk 8+4, v 8; layer 0 dense
# (intermediate 96), layer 1 MoE: 4 experts of 16, top 2, one shared expert of 16.
TINY = {
    "model_type": "deepseek_v3", "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 4, "q_lora_rank": 32, "kv_lora_rank": 16,
    "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8,
    "num_hidden_layers": 2, "first_k_dense_replace": 1, "moe_layer_freq": 1,
    "intermediate_size": 96, "moe_intermediate_size": 16, "n_routed_experts": 4,
    "num_experts_per_tok": 2, "n_shared_experts": 1, "topk_method": "noaux_tc",
    "scoring_func": "sigmoid", "n_group": 1, "topk_group": 1, "vocab_size": 100,
    "max_position_embeddings": 128, "hidden_act": "silu", "tie_word_embeddings": False,
    "num_nextn_predict_layers": 1,
}


_TMP = []


def setUpModule():
    _TMP.append(tempfile.TemporaryDirectory())


def tearDownModule():
    _TMP.pop().cleanup()


def write_config(data):
    """A config file in a directory removed after the module's tests."""
    fd, path = tempfile.mkstemp(suffix=".json", dir=_TMP[0].name)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    return path


def run(arch, **kw):
    kw.setdefault("logits", "none")
    return ledger.build(arch, Workload(**kw))


def op_sum(L, name, attr="matrix_flops"):
    return sum(getattr(o, attr) for o in L.ops if o.name == name)


def deepseek_params(hidden, vocab, layers, dense_layers, heads, q_lora, kv_lora, nope, rope, v,
                    inter, experts, moe_inter, shared, score_bias):
    """Hand formula for a DeepSeek-V2/V3 checkpoint (untied embeddings), written
    from the tensor list, independently of the blocks."""
    q = (q_lora * hidden + q_lora + heads * (nope + rope) * q_lora) if q_lora else heads * (nope + rope) * hidden
    attn = q + (kv_lora + rope) * hidden + kv_lora + heads * (nope + v) * kv_lora + hidden * heads * v
    norms = 2 * hidden
    dense = 3 * hidden * inter
    moe = experts * hidden + (experts if score_bias else 0) + experts * 3 * hidden * moe_inter \
        + 3 * hidden * shared * moe_inter
    return (dense_layers * (attn + norms + dense) + (layers - dense_layers) * (attn + norms + moe)
            + 2 * vocab * hidden + hidden)


class TinyMLA(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.arch = load_model(write_config(TINY))

    def test_params(self):
        # attention: q_a 32*64=2048, q_a_layernorm 32, q_b 4*12*32=1536,
        # kv_a 20*64=1280, kv_a_layernorm 16, kv_b 4*16*16=1024, o 64*32=2048 -> 7984
        # layer 0: 7984 + norms 128 + MLP 3*64*96=18432 -> 26544
        # layer 1: 7984 + 128 + router 256 + bias 4 + experts 4*3*64*16=12288
        #          + shared 3*64*16=3072 -> 23732
        # embed 6400 + head 6400 + norm 64 -> total 63140
        self.assertEqual(self.arch.params, 63140)
        # active: layer 1 uses 2 of 4 experts: 7984+128+260+2*3072+3072 = 17588
        self.assertEqual(self.arch.active_params, 26544 + 17588 + 12864)
        self.assertEqual(self.arch.attention_summary, "MLA")

    def test_mtp_part(self):
        # enorm+hnorm+shared_head.norm 3*64, eh_proj 64*128, one MoE layer 23732
        (part,) = self.arch.parts
        self.assertEqual(part.name, "MTP")
        self.assertEqual(part.params, 192 + 8192 + 23732)

    def test_kv_bytes(self):
        # absorbed: (16 + 4) values * 2 B * 2 layers; naive: 4*(12+8) values * 2 B * 2 layers
        self.assertEqual(self.arch.kv_bytes_per_token(BF16), 80)
        self.assertEqual(self.arch.kv_bytes_per_token(BF16, "absorbed"), 80)
        self.assertEqual(self.arch.kv_bytes_per_token(BF16, "naive"), 320)
        self.assertEqual(self.arch.kv_bytes(BF16, 10, "naive"), 3200)
        self.assertEqual(run(self.arch, mla="naive").totals.kv_bytes_per_token, 320)
        self.assertEqual(run(self.arch, mla="absorbed").totals.kv_bytes_per_token, 80)

    def test_flops_both_paths(self):
        # B=1, T=3, H=5: causal pairs 6+7+8 = 21, rectangular 3*8 = 24, keys 8.
        # Per layer, n = 3 tokens: q_a 2*3*64*32=12288, q_b 2*3*32*48=9216,
        # kv_a 2*3*64*20=7680, o 2*3*32*64=12288 -> 41472 (both paths)
        # naive: kv_b 2*3*16*64 = 6144; QK 2*4*12*21=2016, PV 2*4*8*21=1344
        # absorbed: W_UK 2*3*4*8*16=3072, W_UV 2*3*4*16*8=3072;
        #           QK 2*4*(16+4)*21=3360, PV 2*4*16*21=2688
        # MLP (layer 0) 2*3*3*64*96 = 110592; MoE (layer 1) router 2*3*64*4=1536,
        # routed 6 * 2*3*64*16 = 36864, shared 2*3*3*64*16 = 18432 -> 56832
        linear = 2 * 41472 + 2 * 6144 + 110592 + 56832
        naive = run(self.arch, tokens=3, history=5, mla="naive")
        absorbed = run(self.arch, tokens=3, history=5, mla="absorbed")
        self.assertEqual(naive.totals.linear_flops, linear)
        self.assertEqual(absorbed.totals.linear_flops, linear)
        self.assertEqual(naive.totals.attention_flops_causal, 2 * (2016 + 1344))
        self.assertEqual(absorbed.totals.attention_flops_causal, 2 * (3360 + 2688))
        self.assertEqual(naive.totals.attention_flops_rectangular, 2 * 2 * 4 * (12 + 8) * 24)
        self.assertEqual(absorbed.totals.attention_flops_rectangular, 2 * 2 * 4 * (20 + 16) * 24)
        self.assertEqual(op_sum(naive, "kv_b_proj"), 2 * 6144)
        self.assertEqual(op_sum(absorbed, "q_absorb (W_UK)"), 2 * 3072)
        self.assertEqual(op_sum(absorbed, "out_absorb (W_UV)"), 2 * 3072)
        self.assertEqual(op_sum(absorbed, "kv_b_proj"), 0)
        self.assertEqual(op_sum(naive, "q_absorb (W_UK)"), 0)
        # KV: naive reads 8 keys * (96 + 64) B, writes 3 * 160 B per layer;
        # absorbed reads the latent once, 8 * 40 B, writes 3 * 40 B per layer
        self.assertEqual(naive.totals.kv_bytes_read, 2 * 8 * 160)
        self.assertEqual(naive.totals.kv_bytes_written, 2 * 3 * 160)
        self.assertEqual(absorbed.totals.kv_bytes_read, 2 * 8 * 40)
        self.assertEqual(absorbed.totals.kv_bytes_written, 2 * 3 * 40)
        self.assertEqual(op_sum(absorbed, "attn_pv", "kv_read"), 0)
        # vector work per layer: RoPE 3 FLOPs x 3 tokens x (4 query heads + 1 shared key) x 4
        # dims = 180; softmax 5 x 4 heads x 21 pairs = 420; norms 4 x 3 x 32 and 4 x 3 x 16
        for L in (naive, absorbed):
            self.assertEqual(op_sum(L, "rope", "vector_flops"), 2 * 180)
            self.assertEqual(op_sum(L, "softmax", "vector_flops"), 2 * 420)
            self.assertEqual(op_sum(L, "q_a_layernorm", "vector_flops"), 2 * 384)
            self.assertEqual(op_sum(L, "kv_a_layernorm", "vector_flops"), 2 * 192)

    def test_absorption_reads_kv_b_once(self):
        # bf16: W_UK 4*8*16*2 = 1024 B, W_UV the other 1024 B of kv_b_proj
        w = run(self.arch, mla="absorbed")
        self.assertEqual(op_sum(w, "q_absorb (W_UK)", "weight_read"), 2 * 1024)
        self.assertEqual(op_sum(w, "out_absorb (W_UV)", "weight_read"), 2 * 1024)
        # fp8-block128: kv_b [64,16] = 1024 B + one 4-byte block scale; the split
        # (W_UK as [4,8,16]: 512 B + 4 scales) still adds up to 1028 B
        fp8 = DTYPES["fp8-block128"]
        w = run(self.arch, weight_dtype=fp8, mla="absorbed")
        self.assertEqual(op_sum(w, "q_absorb (W_UK)", "weight_read"), 2 * 528)
        self.assertEqual(op_sum(w, "out_absorb (W_UV)", "weight_read"), 2 * 500)
        for dt in (BF16, fp8):
            a = run(self.arch, weight_dtype=dt, tokens=4, mla="absorbed").totals
            n = run(self.arch, weight_dtype=dt, tokens=4, mla="naive").totals
            self.assertEqual(a.weight_bytes_read, n.weight_bytes_read)

    def test_prefill_split(self):
        for arch in (self.arch, load_model("deepseek-v3")):
            for mla in ("naive", "absorbed"):
                for p, c in ((5, 3), (1, 1), (64, 17)):
                    whole = run(arch, tokens=p + c, mla=mla).totals
                    first = run(arch, tokens=p, mla=mla).totals
                    rest = run(arch, tokens=c, history=p, mla=mla).totals
                    self.assertEqual(whole.matrix_flops, first.matrix_flops + rest.matrix_flops)
                    self.assertEqual(whole.attention_flops_causal,
                                     first.attention_flops_causal + rest.attention_flops_causal)
                    self.assertEqual(whole.kv_bytes_written,
                                     first.kv_bytes_written + rest.kv_bytes_written)

    def test_q_proj_when_no_q_lora(self):
        arch = load_model(write_config(dict(TINY, q_lora_rank=None)))
        # q_proj 48*64 = 3072 replaces 2048 + 32 + 1536 = 3616 in both layers
        self.assertEqual(arch.params, 63140 - 2 * (3616 - 3072))
        L = run(arch, tokens=3, mla="naive")
        self.assertEqual(op_sum(L, "q_proj"), 2 * 2 * 3 * 64 * 48)
        self.assertEqual(op_sum(L, "q_a_proj"), 0)

    def test_unsupported(self):
        for change in ({"attention_bias": True}, {"topk_method": "mystery"},
                       {"scoring_func": "relu"},
                       {"quantization_config": {"quant_method": "awq"}}):
            with self.assertRaises(UserError, msg=str(change)):
                load_model(write_config(dict(TINY, **change)))


class DeepSeekV3(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.arch = load_model("deepseek-v3")

    def test_params(self):
        # Brief / published exact count of the main model (MTP excluded), with
        # e_score_correction_bias; the hand formula gives the same.
        self.assertEqual(self.arch.params, 671_026_419_200)
        self.assertEqual(deepseek_params(7168, 129280, 61, 3, 128, 1536, 512, 128, 64, 128,
                                         18432, 256, 2048, 1, True), 671_026_419_200)
        # README_WEIGHTS: 36.6B activated including the 0.9B head (embedding excluded)
        self.assertEqual(round((self.arch.active_params - 129280 * 7168) / 1e8), 366)

    def test_mtp(self):
        (part,) = self.arch.parts
        # 3*7168 norms + eh_proj 7168*14336 + one MoE decoder layer (index 61)
        moe_layer = (deepseek_params(7168, 0, 1, 0, 128, 1536, 512, 128, 64, 128, 0, 256, 2048, 1, True)
                     - 7168)
        self.assertEqual(part.params, 3 * 7168 + 7168 * 14336 + moe_layer)
        self.assertEqual(part.params, 11_610_068_224)
        # README_WEIGHTS: "11.5B unique parameters" (to its rounding)
        self.assertEqual(int(part.params / 1e8), 116)
        self.assertAlmostEqual(part.params / 1e9, 11.5, delta=0.15)
        # stored with the embedding/head copies: HF total 684,531,386,000 - main
        # 671,026,419,200 - FP32 block-scale elements 41,540,496 = 13,463,426,304
        self.assertIn("13,463,426,304 params stored", part.note)

    def test_checkpoint_totals(self):
        """The safetensors index of the FP8 checkpoint: 684,531,386,000 elements
        (weights + FP32 block scales, DeepSeek-R1, same architecture) and
        688,574,839,360 bytes (deepseek-ai/DeepSeek-V3). Rebuilt here from the
        main model, the MTP layer and its copies of embedding and head."""
        from infracalc.load.config import Config
        from infracalc.load.deepseek import _layer_maker
        from infracalc.load.models import read_json

        cfg = Config(read_json(os.path.join(ROOT, "calculations", "models", "deepseek-v3.json")), "v3")
        mtp_layer = _layer_maker(cfg)(61)
        tensors = list(self.arch.tensors()) + list(mtp_layer.tensors())
        formats = tuple((role, DTYPES[name]) for role, name in self.arch.native_formats)
        w = Workload(formats=formats)

        def scales(t):
            if t.role not in ("matrix", "expert"):
                return 0
            lead = t.shape[0] if len(t.shape) == 3 else 1
            return lead * -(-t.shape[-2] // 128) * -(-t.shape[-1] // 128)

        hidden, vocab = 7168, 129280
        mtp_own = [Tensor("eh_proj", (hidden, 2 * hidden))] + [Tensor("norm", (hidden,), "vector")] * 3
        copies = [Tensor("copy", (vocab, hidden), "embedding")] * 2
        elements = (sum(t.params + scales(t) for t in tensors)
                    + sum(t.params for t in mtp_own + copies))
        self.assertEqual(elements, 684_531_386_000)
        # eh_proj, MTP norms and the copies are BF16; e_score_correction_bias is FP32
        # in the checkpoint, and so it is sized (Tensor.stored) in all 59 MoE layers
        nbytes = (sum(w.weight_bytes(t) for t in tensors)
                  + sum(BF16.nbytes(t.shape) for t in mtp_own + copies))
        self.assertEqual(nbytes, 688_574_839_360)

    def test_native_formats(self):
        self.assertEqual(dict(self.arch.native_formats),
                         {"matrix": "fp8-block128", "expert": "fp8-block128"})
        roles = {t.name.split(".", 2)[-1]: t.role for t in self.arch.tensors()}
        self.assertEqual(roles["mlp.gate.weight"], "router")
        self.assertEqual(roles["mlp.gate.e_score_correction_bias"], "vector")

    def test_kv_per_token(self):
        # absorbed: 61 * (512 + 64) * 2 = 70,272; naive: 61 * 128 * (192 + 128) * 2 = 4,997,120
        self.assertEqual(self.arch.kv_bytes_per_token(BF16, "absorbed"), 70_272)
        self.assertEqual(self.arch.kv_bytes_per_token(BF16, "naive"), 4_997_120)
        self.assertEqual(run(self.arch, mla="naive").totals.kv_bytes_per_token, 4_997_120)

    def test_paths_change_only_attention_work(self):
        naive = run(self.arch, batch=2, tokens=1, history=4095, mla="naive")
        absorbed = run(self.arch, batch=2, tokens=1, history=4095, mla="absorbed")
        for name in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "o_proj", "experts.gate_proj",
                     "router", "gate_proj"):
            n_ops = [o for o in naive.ops if o.name == name]
            a_ops = [o for o in absorbed.ops if o.name == name]
            self.assertTrue(n_ops)
            self.assertEqual(n_ops, a_ops, name)
        # 2 requests x 4096 pairs x 128 heads x 61 layers
        pairs = 2 * 4096 * 128 * 61
        self.assertEqual(naive.totals.attention_flops_causal, 2 * pairs * (192 + 128))
        self.assertEqual(absorbed.totals.attention_flops_causal, 2 * pairs * (576 + 512))
        # per token: kv_b_proj 2*512*32768 vs W_UK 2*128*128*512 + W_UV 2*128*512*128
        self.assertEqual(op_sum(naive, "kv_b_proj"), 61 * 2 * 2 * 512 * 32768)
        self.assertEqual(op_sum(absorbed, "q_absorb (W_UK)") + op_sum(absorbed, "out_absorb (W_UV)"),
                         61 * 2 * (2 * 128 * 128 * 512 + 2 * 128 * 512 * 128))
        # cache read per request: 4096 keys x bytes per token
        self.assertEqual(naive.totals.kv_bytes_read, 2 * 4096 * 4_997_120)
        self.assertEqual(absorbed.totals.kv_bytes_read, 2 * 4096 * 70_272)


class OtherFamilies(unittest.TestCase):
    def test_deepseek_v2_lite(self):
        arch = load_model("deepseek-v2-lite")
        # q_lora null -> q_proj; 1 dense layer; 64 experts of 1408, 2 shared, no score bias
        expected = deepseek_params(2048, 102400, 27, 1, 16, 0, 512, 128, 64, 128,
                                   10944, 64, 1408, 2, False)
        self.assertEqual(expected, 15_706_484_224)
        self.assertEqual(arch.params, expected)
        self.assertEqual(round(arch.params / 1e8), 157)   # published: 15.7B
        self.assertEqual(arch.parts, ())
        self.assertEqual(arch.native_formats, ())
        # 27 * (512 + 64) * 2
        self.assertEqual(arch.kv_bytes_per_token(BF16), 31_104)
        self.assertFalse(any("e_score_correction_bias" in t.name for t in arch.tensors()))

    def test_kimi_k2(self):
        arch = load_model("kimi-k2")
        expected = deepseek_params(7168, 163840, 61, 1, 64, 1536, 512, 128, 64, 128,
                                   18432, 384, 2048, 1, True)
        self.assertEqual(expected, 1_026_408_232_448)
        self.assertEqual(arch.params, expected)
        self.assertEqual(round(arch.params / 1e10), 103)  # published: ~1.03T
        self.assertEqual(arch.parts, ())                  # num_nextn_predict_layers 0
        # naive: 61 * 64 * 320 * 2
        self.assertEqual(arch.kv_bytes_per_token(BF16, "naive"), 2_498_560)


class CLI(unittest.TestCase):
    def calc(self, *args):
        """One command through main() in this process, as a finished process's fields."""
        from support import run_cli
        status, out, err = run_cli(*args)
        return types.SimpleNamespace(returncode=status, stdout=out, stderr=err)

    def test_forward_paths(self):
        for mla, present, absent in (("naive", "kv_b_proj", "out_absorb"),
                                     ("absorbed", "out_absorb (W_UV)", "| kv_b_proj")):
            r = self.calc("forward", "--model", "deepseek-v3", "--mla", mla, "--tokens", "16")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(present, r.stdout)
            self.assertNotIn(absent, r.stdout)

    def test_models_lists_exact_params(self):
        r = self.calc("models", "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = {m["id"]: m for m in json.loads(r.stdout)["models"]}
        self.assertEqual(rows["deepseek-v3"]["params"], 671_026_419_200)
        self.assertEqual(rows["deepseek-v2-lite"]["params"], 15_706_484_224)
        self.assertEqual(rows["kimi-k2"]["params"], 1_026_408_232_448)
        self.assertEqual(rows["deepseek-v3"]["kv_bytes_per_token_bf16"], 70_272)


if __name__ == "__main__":
    unittest.main()

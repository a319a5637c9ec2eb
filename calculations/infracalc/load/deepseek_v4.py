"""DeepSeek-V4 (model_type deepseek_v4): mHC streams, compressed sparse attention,
hash-routed and biased MoE, FP8/FP4 checkpoint formats, MTP.

From deepseek-ai/DeepSeek-V4-Flash:inference/model.py (pinned with its sha256 in
bojieli/ai-infra-book:calculations/configs/sources.lock.json):
- every layer i: hc_pre, attn_norm, attention (blocks.compressed_attention: a
  sliding window of `sliding_window` tokens, plus, when compress_ratios[i] = r > 0,
  a compressor of ratio r, and for r = 4 an indexer choosing index_topk
  entries), hc_post; then hc_pre, ffn_norm, MoE, hc_post (blocks.hyper_connections);
- MoE in every layer: n_routed_experts experts of moe_intermediate_size (w1, w2, w3
  SwiGLU clamped at swiglu_limit), top num_experts_per_tok, one shared expert of
  the same width; layers i < num_hash_layers route by token id (gate.tid2eid,
  int64 [vocab, top-k], no score bias), the others by score + gate.bias (fp32);
- the embedding is copied into hc_mult streams; the model ends with hc_head, the
  final norm and the output head;
- MTP (num_nextn_predict_layers): one more layer of ratio compress_ratios[n]
  (biased routing) with e_proj, h_proj [D, D], enorm, hnorm, norm and its own
  hc_head; embedding and head shared. Reported apart, not counted.
Checkpoint formats (quantization_config fp8 e4m3, ue8m0 scales, weight_block_size
[128, 128]; expert_dtype fp4): every attention, shared-expert and MTP projection
FP8 E4M3 with one E8M0 scale per 128x128 block (`fp8-b128-e8m0`); routed experts
FP4 E2M1 with one E8M0 scale per 32 values (`mxfp4`); embedding, head, norms,
router, compressor and indexer weights_proj BF16; mHC, sinks, ape and gate.bias
FP32; tid2eid int64.
"""

from ..arch import Architecture, Layer, Part
from ..blocks.basic import LMHead, RMSNorm
from ..blocks.compressed_attention import Compressor, Indexer, WindowAttention
from ..blocks.hyper_connections import HCEmbedding, HCHeadNorm, HCPost, HCPre
from ..blocks.moe import MoE
from ..blocks.mtp import HCMTPInput
from ..errors import UserError

V4_FORMATS = (("matrix", "fp8-b128-e8m0"), ("expert", "mxfp4"))

# DeepSeek-V4.1 keys (bojieli/ai-infra-book: its V4.1-Flash config nests the text model in
# text_config and adds these): layers this adapter does not model.
V41_LAYERS = (
    ("kv_source_layer_ids", "CED cross-layer KV: layers that read another layer's KV"),
    ("index_source_layer_ids", "shared indexer source layers"),
    ("candidate_topk_blocks", "CSA2 block-candidate selection"),
    ("candidate_block_size", "CSA2 block-candidate selection"),
)


def _refuse_v41(cfg):
    """A V4.1 config is an error naming what is not modelled, never a V4 approximation."""
    text = cfg.get("text_config")
    data = text if isinstance(text, dict) else cfg.data
    missing = [f"{key} ({what})" for key, what in V41_LAYERS if key in data]
    missing += [f"{key} (Engram layers)" for key in sorted(data) if key.startswith("engram")]
    if missing or isinstance(text, dict):
        raise cfg.unsupported("DeepSeek-V4.1 architecture: " + "; ".join(
            missing or ["text_config nesting (the V4.1 text/vision wrapper)"])
            + " (modelled: DeepSeek-V4; a V4.1 config is model_type deepseek_v41)")


def _formats(cfg):
    q = cfg.require("quantization_config")
    if (not isinstance(q, dict) or q.get("quant_method") != "fp8" or q.get("fmt") != "e4m3"
            or q.get("scale_fmt") != "ue8m0" or q.get("weight_block_size") != [128, 128]):
        raise cfg.unsupported("quantization_config other than fp8 e4m3 with ue8m0 scales per 128x128 block")
    if cfg.string("expert_dtype", "") != "fp4":
        raise cfg.unsupported(f"expert_dtype {cfg.string('expert_dtype', '')!r} (only fp4 is modelled)")
    return V4_FORMATS


def _ratios(cfg, n, mtp):
    ratios = cfg.require("compress_ratios")
    if (not isinstance(ratios, list) or len(ratios) < n + mtp
            or any(isinstance(r, bool) or not isinstance(r, int) or r < 0 for r in ratios)):
        raise cfg.unsupported(f"compress_ratios: need {n + mtp} non-negative integers "
                              "(num_hidden_layers + num_nextn_predict_layers)")
    return ratios


class V4Shapes:
    """The config's geometry, read and checked once."""

    def __init__(self, cfg):
        self.d = cfg.int("hidden_size")
        self.vocab = cfg.int("vocab_size")
        self.heads = cfg.int("num_attention_heads")
        if cfg.int("num_key_value_heads", 1) != 1:
            raise cfg.unsupported("num_key_value_heads other than 1 (V4 attention keeps one K=V row)")
        if cfg.int("n_shared_experts", 1) != 1:
            raise cfg.unsupported("n_shared_experts other than 1 (the reference asserts one)")
        if cfg.string("hidden_act", "silu") != "silu":
            raise cfg.unsupported(f"hidden_act {cfg.string('hidden_act')!r}")
        if cfg.flag("tie_word_embeddings", False):
            raise cfg.unsupported("tie_word_embeddings")
        self.head_dim, self.rope = cfg.int("head_dim"), cfg.int("qk_rope_head_dim")
        self.q_lora, self.o_groups, self.o_lora = cfg.int("q_lora_rank"), cfg.int("o_groups"), cfg.int("o_lora_rank")
        self.window = cfg.int("sliding_window")
        self.index_heads, self.index_dim = cfg.int("index_n_heads"), cfg.int("index_head_dim")
        self.topk = cfg.int("index_topk")
        self.streams, self.iters = cfg.int("hc_mult"), cfg.int("hc_sinkhorn_iters", 20)
        self.experts, self.top_k = cfg.experts("n_routed_experts")
        self.inter = cfg.int("moe_intermediate_size")
        self.hash_layers = cfg.int("num_hash_layers", 0, low=0)
        self.scoring = cfg.string("scoring_func", "")
        self.act = "swiglu_limit" if cfg.has("swiglu_limit") and cfg.number("swiglu_limit", 0) > 0 else "swiglu"

    def layer(self, ratio, hashed, prefix=""):
        d, m = self.d, self.streams
        attn = WindowAttention(hidden=d, heads=self.heads, head_dim=self.head_dim, rope_dim=self.rope,
                               q_lora=self.q_lora, o_groups=self.o_groups, o_lora=self.o_lora,
                               window=self.window, prefix=prefix + "attn")
        mixer = [attn]
        if ratio:
            mixer.append(Compressor(hidden=d, ratio=ratio, dim=self.head_dim, rope_dim=self.rope,
                                    heads=0 if ratio == 4 else self.heads, prefix=prefix + "attn.compressor"))
        if ratio == 4:
            mixer += [Compressor(hidden=d, ratio=4, dim=self.index_dim, rope_dim=self.rope,
                                 prefix=prefix + "attn.indexer.compressor"),
                      Indexer(hidden=d, q_lora=self.q_lora, heads=self.index_heads, dim=self.index_dim,
                              rope_dim=self.rope, topk=self.topk, attn_heads=self.heads,
                              attn_dim=self.head_dim, prefix=prefix + "attn.indexer")]
        moe = MoE(d, self.experts, self.top_k, self.inter, shared_inter=self.inter, act=self.act,
                  score_bias=not hashed, hash_vocab=self.vocab if hashed else 0, scoring=self.scoring,
                  prefix=prefix + "ffn")
        return Layer((HCPre(prefix + "hc_attn", d, m, self.iters), RMSNorm(prefix + "attn_norm", d), *mixer,
                      HCPost(prefix + "hc_attn", d, m),
                      HCPre(prefix + "hc_ffn", d, m, self.iters), RMSNorm(prefix + "ffn_norm", d), moe,
                      HCPost(prefix + "hc_ffn", d, m)))

    def mtp_params(self, ratio):
        """One MTP block: a layer (biased routing) + e_proj, h_proj [D, D], enorm,
        hnorm, norm [D] and hc_head (fn [m, m D], base [m], scale [1])."""
        d, m = self.d, self.streams
        return self.layer(ratio, False).params + 2 * d * d + 3 * d + m * m * d + m + 1


def deepseek_v4(cfg, model_id):
    _refuse_v41(cfg)
    s = V4Shapes(cfg)
    n = cfg.int("num_hidden_layers")
    mtp = cfg.int("num_nextn_predict_layers", 0, low=0)
    ratios = _ratios(cfg, n, mtp)
    formats = _formats(cfg)
    made = {}   # one Layer per distinct (ratio, hash routing): equal layers are one object
    layers = tuple(made.get(k) or made.setdefault(k, s.layer(*k))
                   for k in ((ratios[i], i < s.hash_layers) for i in range(n)))
    kinds = {0: "window only", 4: "window + ratio-4 compressed entries, top-k indexer",
             128: "window + ratio-128 compressed entries"}
    mix = ", ".join(f"{sum(1 for r in ratios[:n] if r == k)} x {kinds.get(k, f'ratio {k}')}"
                    for k in sorted(set(ratios[:n])))
    notes = (
        f"Attention per layer (compress_ratios): {mix}; sliding window {s.window}, one shared K=V row of "
        f"{s.head_dim} values, index_topk {s.topk}.",
        f"mHC: {s.streams} residual streams, Sinkhorn {s.iters} iterations; first {s.hash_layers} layers "
        "hash-routed (tid2eid, int64: checkpoint bytes, not parameters), the others score + bias routed.",
        "kv: a compressed block's 'bytes per token' is its bytes per cached entry (one entry per r tokens, "
        "floor(context/r) entries); the cache per request is exact.",
        "Checkpoint formats: attention, shared-expert and MTP projections FP8 E4M3 + one E8M0 scale per "
        "128x128 block (fp8-b128-e8m0); routed experts FP4 E2M1 + one E8M0 scale per 32 values (mxfp4); "
        "compressor and indexer weights_proj BF16; mHC, sinks, ape and gate.bias FP32; tid2eid int64. "
        "Scales are bytes, not parameters.",
    )
    parts = ()
    if mtp:
        if mtp != 1:
            raise cfg.unsupported("num_nextn_predict_layers other than 1")
        module = Layer((HCMTPInput(hidden=s.d, streams=s.streams), *s.layer(ratios[n], False).blocks))
        parts = (Part("MTP", s.mtp_params(ratios[n]),
                      f"1 multi-token-prediction block (layer {n}, compress ratio {ratios[n]}, biased routing) "
                      "with e_proj, h_proj, enorm, hnorm, norm and hc_head; embedding and head shared",
                      module=module),)
    d = s.d
    try:
        return Architecture(
            id=model_id, model_type=cfg.model_type, hidden_size=d, vocab_size=s.vocab,
            max_context=cfg.int("max_position_embeddings"),
            embedding=HCEmbedding(s.vocab, d, streams=s.streams), layers=layers,
            final_norm=HCHeadNorm(d, s.streams), head=LMHead(s.vocab, d),
            native_formats=formats, parts=parts, notes=notes)
    except UserError as e:
        raise cfg.unsupported(str(e)) from None


ADAPTERS = {"deepseek_v4": deepseek_v4}

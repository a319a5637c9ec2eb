"""DeepSeek-V4.1 (model_type deepseek_v41; text model in text_config): CSA2 cross-layer KV
sharing, Engram, single-pass mHC, DSpark drafter and a vision tower (blocks.csa2).

From the configuration of deepseek-ai/DeepSeek-V4.1-Flash (pinned by sha256 in
bojieli/ai-infra-book:calculations/configs/sources.lock.json) and the book's counting of its
checkpoint (calculations/src/infra_calc/topics/v41_forward.py, checked there against all 48
shard headers; read in the book's public copy 899ms/ai-infra-book):
- every layer i: [Engram when i is in engram_layer_ids], hc_pre, attn_norm, the V4 window
  attention (blocks.compressed_attention.WindowAttention: wq_a, q_norm, wq_b, wkv, kv_norm,
  wo_a in o_groups, wo_b, attn_sink; sliding_window keys), then by compress_ratios[i] = r:
  r = 0: window only; i in kv_source_layer_ids: the KV source (SourceCompressor); i in
  index_source_layer_ids: an indexer (CandidateIndexer, within the candidate pool after
  candidate_source_layer_id); every r > 0 layer attends index_topk entries of its source's
  cache (the latest source at or before i; its ratio must be r); hc_post; hc_pre,
  ffn_norm, MoE (n_routed_experts of moe_intermediate_size, top num_experts_per_tok, one
  shared expert, router gate.weight + fp32 gate.bias and gate.bias_vl), hc_post;
- the model ends with the streams' weighted sum (single-pass mHC: no hc_head weights), the
  final norm and the output head; embedding and head untied.
Checkpoint formats (quantization_config fp8, ue8m0 scales, weight_block_size [32, 32],
expert_dtype fp4): attention, indexer wq_b, shared-expert and Engram wkv projections FP8
E4M3 + one E8M0 scale per 32x32 block (fp8-b32-e8m0); routed experts MXFP4; the Engram
tables FP8 + one E8M0 scale per 32 values of a row (fp8-g32-e8m0); embedding, head, router,
norms, compressor, indexer wk and weights_proj BF16; mHC, sinks and router biases FP32.
These reproduce the book's checkpoint bytes: 298,309,535,168 B backbone, 203,073,076,240 B
Engram (tests/test_deepseek_v41.py).
Reported apart: DSpark (num_nextn_predict_layers blocks with their own narrower MoE) and the
vision tower, whose parameters follow from their shapes (`dspark_tensors`, `vision_params`); their
checkpoint bytes too: DSpark's tensors in the backbone's formats (7,932,874,632 B), the vision tower
BF16 (the audit's 970,536,960 B = 2 bytes per parameter): with the backbone and Engram, the audit's
tensor payload 510,286,023,000 B.
The CED serving schedule (the decoder's 20 layers over the prompt's last window only) is not
a pass of this architecture: every pass runs all layers on all new tokens, as the released
Transformer.forward does.
"""

from ..arch import Architecture, Layer, Part, Tensor
from ..blocks.basic import LMHead, RMSNorm
from ..blocks.compressed_attention import WindowAttention
from ..blocks.csa2 import CandidateIndexer, Engram, SharedSparseAttention, SourceCompressor
from ..blocks.hyper_connections import HCEmbedding, HCHeadNorm, HCPost, HCPre
from ..blocks.moe import MoE
from ..dtypes import dtype
from ..errors import UserError
from ..workload import Workload

V41_FORMATS = (("matrix", "fp8-b32-e8m0"), ("expert", "mxfp4"))
ENGRAM_TABLE_FORMAT = "fp8-g32-e8m0"


def _formats(cfg):
    q = cfg.require("quantization_config")
    if (not isinstance(q, dict) or q.get("quant_method") != "fp8" or q.get("scale_fmt") != "ue8m0"
            or q.get("weight_block_size") != [32, 32]):
        raise cfg.unsupported("quantization_config other than fp8 with ue8m0 scales per 32x32 block")
    if q.get("expert_dtype") != "fp4":
        raise cfg.unsupported(f"expert_dtype {q.get('expert_dtype')!r} (only fp4 is modelled)")
    return V41_FORMATS


def _ids(tc, key, n):
    """A sorted list of distinct layer indices in 0..n-1."""
    value = tc.require(key)
    if (not isinstance(value, list) or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n
                                           for i in value) or sorted(set(value)) != value):
        raise UserError(f"{tc.source}: field '{key}' must be a sorted list of distinct layer indices "
                        f"from 0 to {n - 1}, got {value!r}")
    return value


class V41Shapes:
    """The text config's geometry, read and checked once."""

    def __init__(self, tc):
        self.d, self.vocab = tc.int("hidden_size"), tc.int("vocab_size")
        self.n = tc.int("num_hidden_layers")
        self.heads = tc.int("num_attention_heads")
        if tc.int("num_key_value_heads", 1) != 1:
            raise tc.unsupported("num_key_value_heads other than 1 (one shared K=V row)")
        if tc.int("n_shared_experts", 1) != 1:
            raise tc.unsupported("n_shared_experts other than 1")
        if tc.string("hidden_act", "silu") != "silu":
            raise tc.unsupported(f"hidden_act {tc.string('hidden_act')!r}")
        if tc.flag("tie_word_embeddings", False):
            raise tc.unsupported("tie_word_embeddings")
        if tc.int("num_hash_layers", 0, low=0):
            raise tc.unsupported("num_hash_layers (hash routing in a V4.1 config)")
        self.head_dim, self.rope = tc.int("head_dim"), tc.int("qk_rope_head_dim")
        self.q_lora, self.o_groups, self.o_lora = tc.int("q_lora_rank"), tc.int("o_groups"), tc.int("o_lora_rank")
        self.window = tc.int("sliding_window")
        self.index_heads, self.index_dim = tc.int("index_n_heads"), tc.int("index_head_dim")
        self.topk = tc.int("index_topk")
        self.streams, self.iters = tc.int("hc_mult"), tc.int("hc_sinkhorn_iters", 20)
        self.experts, self.top_k = tc.experts("n_routed_experts")
        self.inter = tc.int("moe_intermediate_size")
        self.act = "swiglu_limit" if tc.has("swiglu_limit") and tc.number("swiglu_limit", 0) > 0 else "swiglu"
        self.mtp = tc.int("num_nextn_predict_layers", 0, low=0)
        ratios = tc.require("compress_ratios")
        if (not isinstance(ratios, list) or len(ratios) != self.n + self.mtp
                or any(isinstance(r, bool) or not isinstance(r, int) or r < 0 for r in ratios)):
            raise tc.unsupported(f"compress_ratios: need {self.n + self.mtp} non-negative integers "
                                 "(num_hidden_layers + num_nextn_predict_layers)")
        self.ratios = ratios[:self.n]
        self.sources = _ids(tc, "kv_source_layer_ids", self.n)
        self.indexers = _ids(tc, "index_source_layer_ids", self.n)
        self.pool_layer = tc.int("candidate_source_layer_id", low=0)
        self.pool = tc.int("candidate_topk_blocks") * tc.int("candidate_block_size")
        self.engram_layers = _ids(tc, "engram_layer_ids", self.n)
        rows = tc.require("engram_num_embeddings")
        if (not isinstance(rows, list) or len(rows) != len(self.engram_layers)
                or any(isinstance(r, bool) or not isinstance(r, int) or r < 1 for r in rows)):
            raise UserError(f"{tc.source}: field 'engram_num_embeddings' must list one positive row count "
                            f"per engram_layer_ids entry ({len(self.engram_layers)}), got {rows!r}")
        self.engram_rows = dict(zip(self.engram_layers, rows))
        self.engram_orders = tc.int("engram_max_ngram_size", low=2) - 1
        self.engram_heads, self.engram_dim = tc.int("engram_n_heads"), tc.int("engram_head_dim")
        self._check_sharing(tc)

    def _check_sharing(self, tc):
        """Each r > 0 layer reads the latest source (and selection) at or before it, of its ratio."""
        if any(self.ratios[i] == 0 for i in self.sources + self.indexers):
            raise tc.unsupported("a KV or index source layer of compress ratio 0")
        if not set(self.sources) <= set(self.indexers):
            raise tc.unsupported("a KV source layer without its own indexer (index_source_layer_ids)")
        if self.pool_layer not in self.indexers:
            raise tc.unsupported(f"candidate_source_layer_id {self.pool_layer}: not an index source layer")
        for i, r in enumerate(self.ratios):
            if not r:
                continue
            src = self.source_of(i, self.sources)
            idx = self.source_of(i, self.indexers)
            if src is None or idx is None or self.ratios[src] != r or self.ratios[idx] != r:
                raise tc.unsupported(f"layer {i} (compress ratio {r}) without an earlier KV source and indexer "
                                     "of the same ratio")

    @staticmethod
    def source_of(i, owners):
        earlier = [s for s in owners if s <= i]
        return earlier[-1] if earlier else None

    def layer(self, i):
        d, m, r = self.d, self.streams, self.ratios[i]
        blocks = []
        if i in self.engram_rows:
            blocks.append(Engram(hidden=d, streams=m, rows=self.engram_rows[i], orders=self.engram_orders,
                                 heads=self.engram_heads, head_dim=self.engram_dim, table_format=ENGRAM_TABLE_FORMAT,
                                 token_ids=i == self.engram_layers[0]))
        blocks += [HCPre("hc_attn", d, m, self.iters), RMSNorm("attn_norm", d),
                   WindowAttention(hidden=d, heads=self.heads, head_dim=self.head_dim, rope_dim=self.rope,
                                   q_lora=self.q_lora, o_groups=self.o_groups, o_lora=self.o_lora,
                                   window=self.window)]
        if r:
            if i in self.sources:
                blocks.append(SourceCompressor(hidden=d, ratio=r, dim=self.head_dim, index_dim=self.index_dim,
                                               rope_dim=self.rope))
            if i in self.indexers:
                blocks.append(CandidateIndexer(hidden=d, q_lora=self.q_lora, heads=self.index_heads,
                                               dim=self.index_dim, rope_dim=self.rope, ratio=r,
                                               cap=self.pool if i > self.pool_layer else 0,
                                               selects_pool=i == self.pool_layer))
            blocks.append(SharedSparseAttention(heads=self.heads, dim=self.head_dim, ratio=r, topk=self.topk,
                                                source=self.source_of(i, self.sources)))
        moe = MoE(d, self.experts, self.top_k, self.inter, shared_inter=self.inter, act=self.act,
                  score_bias=True, vl_bias=True, prefix="ffn")
        return Layer((*blocks, HCPost("hc_attn", d, m), HCPre("hc_ffn", d, m, self.iters),
                      RMSNorm("ffn_norm", d), moe, HCPost("hc_ffn", d, m)))

    def kind(self, i):
        r = self.ratios[i]
        if not r:
            return "window only"
        if i in self.sources:
            return f"KV source r={r}"
        return f"reindex r={r}" if i in self.indexers else f"reuse r={r}"


def dspark_tensors(s, tc):
    """The DSpark drafter (mtp.*): num_nextn_predict_layers blocks, each a V4.1 layer's window
    attention, mHC and norms with its own MoE of dspark_n_routed_experts routed experts plus one
    shared (router weight and its two fp32 biases); then main_proj [D, len(dspark_target_layer_ids)
    D] with main_norm [D], norm [D], the Markov embedding and head [vocab, dspark_markov_rank]
    each, and the confidence head [D + rank] (BF16). [(tensor, copies)]."""
    experts = tc.int("dspark_n_routed_experts")
    targets = tc.require("dspark_target_layer_ids")
    rank = tc.int("dspark_markov_rank")
    if not isinstance(targets, list) or not targets:
        raise UserError(f"{tc.source}: field 'dspark_target_layer_ids' must be a non-empty list")
    d = s.d
    attn = WindowAttention(hidden=d, heads=s.heads, head_dim=s.head_dim, rope_dim=s.rope, q_lora=s.q_lora,
                           o_groups=s.o_groups, o_lora=s.o_lora, window=s.window)
    moe = MoE(d, experts, tc.int("dspark_num_experts_per_tok"), s.inter, shared_inter=s.inter, act=s.act,
              score_bias=True, vl_bias=True, prefix="ffn")
    block = Layer((HCPre("hc_attn", d, s.streams, s.iters), RMSNorm("attn_norm", d), attn,
                   HCPre("hc_ffn", d, s.streams, s.iters), RMSNorm("ffn_norm", d), moe))
    return [(t, s.mtp) for t in block.tensors()] + [
        (Tensor("main_proj.weight", (d, len(targets) * d)), 1), (Tensor("main_norm.weight", (d,), "vector"), 1),
        (Tensor("norm.weight", (d,), "vector"), 1), (Tensor("markov.embed.weight", (s.vocab, rank), stored="bf16"), 1),
        (Tensor("markov.head.weight", (s.vocab, rank), stored="bf16"), 1),
        (Tensor("confidence_head.weight", (d + rank,), "vector"), 1)]


def vision_params(vc, out_hidden):
    """The vision tower and aligner: a patch embedding [D_v, 3 p^2] + bias, `num_hidden_layers`
    blocks (qkv [3 D_v, D_v] + bias, proj [D_v, D_v] + bias, a SwiGLU MLP of intermediate_size
    without biases, two norms of D_v), a final norm of D_v, the aligner [D, downsample^2 D_v] +
    bias and [D, D] + bias, and the image start / end / newline embeddings of D."""
    dv, inter, p = vc.int("hidden_size"), vc.int("intermediate_size"), vc.int("patch_size")
    k, layers, d = vc.int("downsample_ratio"), vc.int("num_hidden_layers"), out_hidden
    block = 3 * dv * dv + 3 * dv + dv * dv + dv + 3 * dv * inter + 2 * dv
    return 3 * p * p * dv + dv + layers * block + dv + (k * k * dv * d + d) + (d * d + d) + 3 * d


def deepseek_v41(cfg, model_id):
    tc = cfg.sub("text_config")
    s = V41Shapes(tc)
    formats = _formats(cfg)
    made = {}
    layers = []
    for i in range(s.n):
        layer = s.layer(i)
        layers.append(made.setdefault(layer, layer))
    kinds = {}
    for i in range(s.n):
        kinds.setdefault(s.kind(i), []).append(i)
    mix = "; ".join(f"{len(ix)} x {k}" for k, ix in kinds.items())
    notes = (
        f"CSA2 layers (compress_ratios, kv_source_layer_ids {s.sources}, index_source_layer_ids "
        f"{s.indexers}): {mix}; window {s.window} on every layer; each r > 0 layer attends "
        f"index_topk {s.topk} entries of its source's shared cache; indexers after layer {s.pool_layer} score "
        f"within its candidate pool of {s.pool:,} entries.",
        f"Engram layers {s.engram_layers}: tables of {', '.join(f'{r:,}' for r in s.engram_rows.values())} rows x "
        f"{s.engram_dim} (FP8 + E8M0 per 32 values), {s.engram_orders * s.engram_heads} rows gathered per token; "
        "the first keeps the request's int64 token ids for the n-gram hash.",
        f"Single-pass mHC: {s.streams} streams, Sinkhorn {s.iters}; no hc_head weights.",
        "kv: a CSA2 source's 'bytes per token' is one entry + its index key (one per r tokens, floor(context/r) "
        "entries), counted once however many layers read it.",
        f"Every pass runs all layers on every new token (the released Transformer.forward), unless `forward "
        f"--schedule ced`: the CED serving schedule, layers {s.n // 2}-{s.n - 1} (the decoder) over a fresh "
        f"prompt's last {s.window} positions only, layer {s.n // 2}'s source over all of them.",
        "Checkpoint formats: attention, indexer wq_b, shared-expert and Engram wkv projections FP8 E4M3 + one "
        "E8M0 scale per 32x32 block (fp8-b32-e8m0); routed experts MXFP4; Engram tables fp8-g32-e8m0; "
        "compressor, indexer wk and weights_proj, router BF16; mHC, sinks, router biases FP32.",
    )
    # CED (the technical report's causal encoder + decoder, as the book counts it: topics/v41_forward.py
    # `half = layers // 2`; chapter 2: "a first 20-layer causal encoder and a following 20-layer
    # decoder"): the decoder's KV is the source at the split, compressed from the encoder's output.
    split = s.n // 2
    ced = split if [i for i in s.sources if i >= split] == [split] else 0
    vc = cfg.sub("vision_config")
    w = Workload(formats=tuple((role, dtype(name)) for role, name in formats))
    dspark = dspark_tensors(s, tc)
    vision = vision_params(vc, s.d)
    parts = (Part("DSpark", sum(t.params * k for t, k in dspark),
                  f"{s.mtp} DSpark drafter blocks (mtp.*: their own {tc.int('dspark_n_routed_experts')}-expert "
                  "top-" + f"{tc.int('dspark_num_experts_per_tok')} MoE), main_proj, Markov embedding and head, "
                  "confidence head; not costed",
                  checkpoint_bytes=sum(w.weight_bytes(t) * k for t, k in dspark)),
             Part("vision", vision,
                  f"{vc.int('num_hidden_layers')}-layer ViT of {vc.int('hidden_size')} and the aligner, BF16; not costed",
                  checkpoint_bytes=2 * vision))
    try:
        return Architecture(
            id=model_id, model_type=cfg.model_type, hidden_size=s.d, vocab_size=s.vocab,
            max_context=tc.int("max_position_embeddings"),
            embedding=HCEmbedding(s.vocab, s.d, streams=s.streams), layers=tuple(layers),
            final_norm=HCHeadNorm(s.d, s.streams, mixed=False), head=LMHead(s.vocab, s.d),
            native_formats=formats, parts=parts, notes=notes, ced_split=ced, ced_window=s.window if ced else 0)
    except UserError as e:
        raise tc.unsupported(str(e)) from None


ADAPTERS = {"deepseek_v41": deepseek_v41}

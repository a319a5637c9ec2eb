"""Multi-head latent attention (MLA: DeepSeek-V2/V3, Kimi K2).

Tensors (Hugging Face DeepseekV3Attention; q_lora_rank 0 means the config's
null, a plain q_proj):
- q_proj [heads*(qk_nope+qk_rope), hidden], or q_a_proj [q_lora, hidden],
  q_a_layernorm [q_lora], q_b_proj [heads*(qk_nope+qk_rope), q_lora];
- kv_a_proj_with_mqa [kv_lora+qk_rope, hidden] (latent c_kv and one shared
  RoPE key k_pe), kv_a_layernorm [kv_lora];
- kv_b_proj [heads*(qk_nope+v_head_dim), kv_lora]: per head, W_UK
  [qk_nope, kv_lora] then W_UV [v_head_dim, kv_lora] (rows head-major);
- o_proj [hidden, heads*v_head_dim].

Three execution paths (`Workload.mla`, `--mla`), same weights, different work:

naive (the Hugging Face reference with its cache of expanded K/V): kv_b_proj
  up-projects the latent of the T NEW tokens only; the cache holds the
  expanded K (heads*(qk_nope+qk_rope), k_pe copied to every head) and V
  (heads*v_head_dim) per token, and cached tokens are read already expanded.
  QK^T costs 2*heads*(qk_nope+qk_rope) FLOPs per pair, PV 2*heads*v_head_dim.

absorbed (DeepSeek's inference code, attn_impl "absorb"): W_UK is applied
  to each new query (q_nope [qk_nope] -> [kv_lora] per head: 2*heads*qk_nope*
  kv_lora FLOPs per token, operator q_absorb), attention runs in latent space
  (QK^T over kv_lora+qk_rope dims, 2*heads*(kv_lora+qk_rope) per pair; PV over
  kv_lora, 2*heads*kv_lora per pair), then W_UV maps each head's latent output
  to v_head_dim (2*heads*kv_lora*v_head_dim per token, operator out_absorb)
  before o_proj. W_UV is NOT folded into o_proj: that product would be a
  [hidden, heads*kv_lora] matrix, larger than both. The cache holds the
  normalized latent (kv_lora) and the roped k_pe (qk_rope) per token, and the
  latent serves as both key and value: a fused kernel reads it once (charged
  to attn_qk; attn_pv reads no cache).
  The absorption reads kv_b_proj split in two: W_UK's bytes are those of a
  [heads, qk_nope, kv_lora] tensor in the weight format, W_UV's the rest of
  kv_b_proj, so the two reads add up to the stored tensor exactly.

expanded (what serving engines run for prefill, e.g. vLLM's MLA prefill and
  DeepSeek's inference code with attn_impl "naive" on a latent cache): the
  cache holds the latent and k_pe as in the absorbed path, and each pass
  up-projects the latent of every key it attends (the H cached ones read
  from the cache, the T new ones from the activations) with kv_b_proj into
  per-head K_nope and V, written as activations; attention then runs as in the
  naive path over the expanded K (k_pe shared by the heads) and V. Its cost
  per query-key pair is the naive path's, plus 2*heads*kv_lora*(qk_nope +
  v_head_dim) FLOPs per key attended for the up-projection: cheap when the
  new tokens are many (a prefill), dear for one new token over a long history.

Training keeps each projection's input (q_a_proj's shared by kv_a_proj), the
norms' inputs and statistics, what attn_qk and attn_pv read, and one fp32
log-sum-exp per (query, head) row.

Paths: RoPE on heads*qk_rope query values and qk_rope key values per
token; softmax over the causal pairs (blocks.attention.causal_pairs).

Consequences of the formulas: the linear FLOPs per new token are equal
(W_UK + W_UV on the queries is 2*heads*kv_lora*(qk_nope+v_head_dim), exactly
kv_b_proj on the new tokens); per query-key pair the absorbed path costs
(kv_lora+qk_rope+kv_lora)/(qk_nope+qk_rope+v_head_dim) times the naive path's
(1088/320 = 3.4 for DeepSeek-V3) but reads (kv_lora+qk_rope)/(heads*(qk_nope+
qk_rope+v_head_dim)) of its cache bytes (576/40960): absorbed suits decode,
naive long prefills, which is why serving systems often mix the two.
"""

from ..arch import Block, Tensor, history_free_rows
from ..errors import UserError
from ..ops import STAT_BYTES, VECTOR_FLOPS, Op, elementwise, gemm, rmsnorm
from ..workload import MLA_PATHS
from .attention import causal_pairs, keys_touched, rectangular_pairs


class MLA(Block):
    reads_mla = True   # the execution path picks its operators
    hidden: int
    heads: int
    q_lora_rank: int         # 0: no query compression (q_proj)
    kv_lora_rank: int
    qk_nope: int
    qk_rope: int
    v_head_dim: int
    prefix: str = "self_attn"

    kind = "MLA"

    @property
    def label(self):
        q = f"q_lora {self.q_lora_rank}" if self.q_lora_rank else "q full"
        return (f"MLA {self.heads}h {q} kv_lora {self.kv_lora_rank} "
                f"qk {self.qk_nope}+{self.qk_rope} v {self.v_head_dim}")

    def tensors(self):
        p, h, heads = self.prefix, self.hidden, self.heads
        r, qk = self.kv_lora_rank, self.qk_nope + self.qk_rope
        if self.q_lora_rank:
            q = [Tensor(f"{p}.q_a_proj.weight", (self.q_lora_rank, h)),
                 Tensor(f"{p}.q_a_layernorm.weight", (self.q_lora_rank,), "vector"),
                 Tensor(f"{p}.q_b_proj.weight", (heads * qk, self.q_lora_rank))]
        else:
            q = [Tensor(f"{p}.q_proj.weight", (heads * qk, h))]
        return tuple(q + [
            Tensor(f"{p}.kv_a_proj_with_mqa.weight", (r + self.qk_rope, h)),
            Tensor(f"{p}.kv_a_layernorm.weight", (r,), "vector"),
            Tensor(f"{p}.kv_b_proj.weight", (heads * (self.qk_nope + self.v_head_dim), r)),
            Tensor(f"{p}.o_proj.weight", (h, heads * self.v_head_dim)),
        ])

    def cache_values(self, mla):
        """(key values, value values) cached per token: the latent and k_pe when
        absorbed or expanded (one stream read as key and value; `auto` picks one of
        the two per pass, so it caches the latent too), expanded K and V when naive."""
        if mla in ("absorbed", "expanded", "auto"):
            return self.kv_lora_rank, self.qk_rope
        if mla == "naive":
            return self.heads * (self.qk_nope + self.qk_rope), self.heads * self.v_head_dim
        raise ValueError(f"MLA path must be one of {MLA_PATHS}, got {mla!r}")

    def kv_bytes_per_token(self, kv_dtype, mla="absorbed"):
        """absorbed: kv_lora + qk_rope values; naive: heads*(qk_nope+qk_rope+v_head_dim)."""
        a, b = self.cache_values(mla)
        return kv_dtype.nbytes_flat(a) + kv_dtype.nbytes_flat(b)

    def kv_formula(self, kv_dtype, mla="absorbed"):
        """The cache per token as a formula of the shapes, for `kv`."""
        nb = kv_dtype.bits // 8 if kv_dtype.bits % 8 == 0 and not kv_dtype.is_quantized else None
        per = f" x {nb} B ({kv_dtype.name})" if nb else f" values in {kv_dtype.name}"
        total = f" = {self.kv_bytes_per_token(kv_dtype, mla):,} B per token"
        if mla != "naive":
            return (f"(kv_lora {self.kv_lora_rank} + qk_rope {self.qk_rope}){per}{total}: the "
                    f"latent and the shared RoPE key ({mla} path)")
        return (f"{self.heads} heads x (qk_nope {self.qk_nope} + qk_rope {self.qk_rope} + "
                f"v {self.v_head_dim}){per}{total}: expanded K and V (naive path)")

    def shard(self, tp, ep=1):
        """One TP device's MLA (as vLLM and SGLang shard DeepSeek attention):
        q_b_proj (or q_proj), kv_b_proj and o_proj split by heads, heads / tp per
        device; the down-projections q_a_proj and kv_a_proj_with_mqa, their
        norms and the absorbed path's latent cache replicated on every device
        (the naive path's expanded K/V split by heads)."""
        if self.heads % tp:
            raise UserError(f"TP {tp} does not divide the {self.heads} heads of {self.label}")
        return self.replace(heads=self.heads // tp)

    def ops(self, w):
        paths = {"absorbed": self._absorbed, "naive": self._naive, "expanded": self._expanded}
        if w.mla not in paths:
            raise ValueError(f"MLA path {w.mla!r} must be resolved to one of {', '.join(paths)} "
                             "before the ledger is built (analyses/mla_path)")
        pre, post = history_free_rows(self, w, "projections", lambda: self._projections(w))
        return [*pre, *paths[w.mla](w, self._named(), w.positions), *post]

    def _named(self):
        """{tensor name without the layer prefix: tensor} (computed once per instance)."""
        d = self.__dict__
        named = d.get("_named_tensors")
        if named is None:
            named = d["_named_tensors"] = {t.name.split(".", 1)[1]: t for t in self.tensors()}
        return named

    def _projections(self, w):
        """(rows before the path's rows, rows after them): the query projections,
        kv_a_proj_with_mqa and its norm; o_proj. None reads the history."""
        named, n = self._named(), w.positions
        out = self._query(w, named, n)
        out += [gemm(w, "kv_a_proj_with_mqa", n, named["kv_a_proj_with_mqa.weight"], saves_input=False),
                rmsnorm(w, "kv_a_layernorm", n, named["kv_a_layernorm.weight"])]
        return tuple(out), (gemm(w, "o_proj", n, named["o_proj.weight"]),)

    def _query(self, w, named, n):
        if not self.q_lora_rank:
            return [gemm(w, "q_proj", n, named["q_proj.weight"], replicated=True)]
        return [gemm(w, "q_a_proj", n, named["q_a_proj.weight"], replicated=True),
                rmsnorm(w, "q_a_layernorm", n, named["q_a_layernorm.weight"]),
                gemm(w, "q_b_proj", n, named["q_b_proj.weight"], replicated=True)]

    def _rope(self, w, n):
        heads, rope = self.heads, self.qk_rope
        return elementwise(w, "rope", n * (heads + 1) * rope, VECTOR_FLOPS["rope"],
                           shape=f"[{n},{heads}+1,{rope}]", kind="rope")

    def _pairs(self, w):
        return (causal_pairs(w.history, w.tokens), rectangular_pairs(w.history, w.tokens),
                keys_touched(w.history, w.tokens))

    def _softmax(self, w, pairs):
        return Op("softmax", "vector", f"{w.batch}x{self.heads}x{pairs} pairs",
                  vector_flops=VECTOR_FLOPS["softmax"] * w.batch * self.heads * pairs,
                  kind="softmax", saved_bytes=w.positions * self.heads * STAT_BYTES)

    def _naive(self, w, named, n):
        b, t, heads, r = w.batch, w.tokens, self.heads, self.kv_lora_rank
        qk, v, rope = self.qk_nope + self.qk_rope, self.v_head_dim, self.qk_rope
        act, kv = w.act_dtype, w.kv_dtype
        pairs, rect, keys = self._pairs(w)
        k_token, v_token = kv.nbytes_flat(heads * qk), kv.nbytes_flat(heads * v)
        return [
            gemm(w, "kv_b_proj", n, named["kv_b_proj.weight"],
                 shape=f"[{n},{r}]x[{r},{heads}x({self.qk_nope}+{v})], new tokens only", replicated=True),
            self._rope(w, n),
            Op("kv_store", "memory", f"[{n},{heads},{qk}+{v}] expanded K and V",
               act_read=act.nbytes_flat(n * (heads * (self.qk_nope + v) + rope)),
               kv_write=n * (k_token + v_token), kind="memory"),
            Op("attn_qk", "attention", f"{b}x{heads}x[{t},{qk}]x[{qk},{keys}]",
               matrix_flops=2 * b * heads * qk * pairs, rect_flops=2 * b * heads * qk * rect,
               act_read=act.nbytes_flat(n * heads * qk), kv_read=b * (keys - w.new_keys_on_chip) * k_token,
               compute=w.compute_dtype.name, kind="attention",
               saved_bytes=act.nbytes_flat(n * heads * qk) + b * keys * k_token, head_dim=qk),
            self._softmax(w, pairs),
            Op("attn_pv", "attention", f"{b}x{heads}x[{t},{keys}]x[{keys},{v}]",
               matrix_flops=2 * b * heads * v * pairs, rect_flops=2 * b * heads * v * rect,
               kv_read=b * (keys - w.new_keys_on_chip) * v_token, act_write=act.nbytes_flat(n * heads * v),
               compute=w.compute_dtype.name, kind="attention", saved_bytes=b * keys * v_token, head_dim=v),
        ]

    def _expanded(self, w, named, n):
        b, t, heads, r = w.batch, w.tokens, self.heads, self.kv_lora_rank
        nope, rope, v = self.qk_nope, self.qk_rope, self.v_head_dim
        act, kv = w.act_dtype, w.kv_dtype
        pairs, rect, keys = self._pairs(w)
        latent_token = self.kv_bytes_per_token(kv, "absorbed")
        cached = b * (keys - t)   # cached keys the pass attends, read as latents
        up = gemm(w, "kv_b_proj", b * keys, named["kv_b_proj.weight"],
                  shape=f"[{b * keys},{r}]x[{r},{heads}x({nope}+{v})], every key attended", replicated=True)
        up = up.replace(act_read=act.nbytes_flat(n * r), kv_read=cached * latent_token)
        return [
            self._rope(w, n),
            Op("kv_store", "memory", f"[{n},{r}+{rope}] latent and k_pe",
               act_read=act.nbytes_flat(n * (r + rope)), kv_write=n * latent_token, kind="memory"),
            up,
            Op("attn_qk", "attention", f"{b}x{heads}x[{t},{nope}+{rope}]x[{nope}+{rope},{keys}]",
               matrix_flops=2 * b * heads * (nope + rope) * pairs,
               rect_flops=2 * b * heads * (nope + rope) * rect,
               act_read=act.nbytes_flat(n * heads * (nope + rope) + b * keys * (heads * nope + rope)),
               compute=w.compute_dtype.name, kind="attention",
               saved_bytes=act.nbytes_flat(n * heads * (nope + rope) + b * keys * (heads * nope + rope))),
            self._softmax(w, pairs),
            Op("attn_pv", "attention", f"{b}x{heads}x[{t},{keys}]x[{keys},{v}]",
               matrix_flops=2 * b * heads * v * pairs, rect_flops=2 * b * heads * v * rect,
               act_read=act.nbytes_flat(b * keys * heads * v), act_write=act.nbytes_flat(n * heads * v),
               compute=w.compute_dtype.name, kind="attention", saved_bytes=act.nbytes_flat(b * keys * heads * v)),
        ]

    def _absorbed(self, w, named, n):
        b, t, heads, r = w.batch, w.tokens, self.heads, self.kv_lora_rank
        rope = self.qk_rope
        act = w.act_dtype
        pairs, rect, keys = self._pairs(w)
        latent_token = self.kv_bytes_per_token(w.kv_dtype, "absorbed")
        q_absorb, rope_op, kv_store, out_absorb = history_free_rows(
            self, w, "absorbed", lambda: self._absorbed_free(w, named, n))
        return [
            q_absorb,
            rope_op,
            kv_store,
            Op("attn_qk", "attention", f"{b}x{heads}x[{t},{r}+{rope}]x[{r}+{rope},{keys}]",
               matrix_flops=2 * b * heads * (r + rope) * pairs,
               rect_flops=2 * b * heads * (r + rope) * rect,
               act_read=act.nbytes_flat(n * heads * (r + rope)),
               kv_read=b * (keys - w.new_keys_on_chip) * latent_token,
               compute=w.compute_dtype.name, kind="attention",
               saved_bytes=act.nbytes_flat(n * heads * (r + rope)) + b * keys * latent_token),
            self._softmax(w, pairs),
            Op("attn_pv", "attention", f"{b}x{heads}x[{t},{keys}]x[{keys},{r}] latent read by attn_qk",
               matrix_flops=2 * b * heads * r * pairs, rect_flops=2 * b * heads * r * rect,
               act_write=act.nbytes_flat(n * heads * r), compute=w.compute_dtype.name, kind="attention"),
            out_absorb,
        ]

    def _absorbed_free(self, w, named, n):
        """The absorbed path's rows that read no history: q_absorb, RoPE, the
        latent cache write, out_absorb."""
        heads, r = self.heads, self.kv_lora_rank
        nope, rope, v = self.qk_nope, self.qk_rope, self.v_head_dim
        kv_b = named["kv_b_proj.weight"]
        w_uk = Tensor("kv_b_proj.weight[W_UK]", (heads, nope, r), kv_b.role)
        uk_bytes = w.weight_bytes(w_uk)
        rows = n * heads
        q_absorb = gemm(w, "q_absorb (W_UK)", rows, Tensor("W_UK", (r, nope), kv_b.role),
                        shape=f"{n}x{heads}x[{nope}]x[{nope},{r}]")
        out_absorb = gemm(w, "out_absorb (W_UV)", rows, Tensor("W_UV", (v, r), kv_b.role),
                          shape=f"{n}x{heads}x[{r}]x[{r},{v}]")
        return (q_absorb.replace(weight_read=uk_bytes),
                self._rope(w, n),
                Op("kv_store", "memory", f"[{n},{r}+{rope}] latent and k_pe",
                   act_read=w.act_dtype.nbytes_flat(n * (r + rope)),
                   kv_write=n * self.kv_bytes_per_token(w.kv_dtype, "absorbed"), kind="memory"),
                out_absorb.replace(weight_read=w.weight_bytes(kv_b) - uk_bytes))

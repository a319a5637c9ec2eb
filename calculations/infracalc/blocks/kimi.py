"""Kimi K3's new operators: KDA linear attention, the gated NoPE MLA, the latent MoE
and attention residuals (AttnRes).

Source: moonshotai/Kimi-K3 `modeling_kimi_linear.py` and `configuration_kimi_k3.py`
(pinned with their sha256 in bojieli/ai-infra-book:calculations/configs/sources.lock.json);
tensor list and shapes as the book's checkpoint audit enumerates them
(bojieli/ai-infra-book:calculations/src/infra_calc/topics/k3_checkpoint.py), AttnRes as
its calculator reads `_forward_attn_residual` (topics/attn_res.py).

KDA (Kimi Delta Attention), per layer with H heads of d (j = H*d):
- q, k, v, g projections [j, D]; a low-rank per-channel gate f_b(f_a(x)) ([d, D],
  [j, d]); beta b_proj [H, D]; o_proj [D, j]; A_log [H], dt_bias [j] (fp32);
  o_norm [d]; a depthwise short conv of K taps on q, k and v ([j, 1, K] each).
- per token: the convs 2K + SiLU 4 per channel (3j), L2 norm of q and k (3 per
  value), the gate lower_bound * sigmoid(exp(A_log) (f + dt_bias)) 6 per channel
  (add, mul, sigmoid 3, mul), beta sigmoid 3 per head, the output gate:
  RMSNorm over d then * sigmoid(g) (4 + 3 + 1 = 8 per value).
- the delta rule with a per-channel decay diag(exp(g)) counts as Gated DeltaNet's
  (blocks.linear_attention: recurrent 6 d^2 matrix FLOPs per token and head, the
  decay d^2 vector; chunked form per chunk of 64): the per-channel decay multiplies
  the same d x d state entries the scalar decay does.
- state per request: H x d x d fp32 (the reference keeps it in float32) and the conv
  slots, K x 3j values in the model dtype (as the book counts the short-conv cache).
- `Workload.kda_count` "recurrent-baseline" (`forward --kda-count recurrent-baseline`): the
  book's logical recurrent baseline (bojieli/ai-infra-book:calculations/results/k3-kda-*.md,
  `recurrent_and_other_scalar_flops`) instead: every op below as plain scalar FLOPs (vector
  units), special functions (SiLU, sqrt, rsqrt, exp, sigmoid) not counted, a dot of d terms
  d multiplies + d - 1 adds, and the recurrence in recurrent form for every token whatever T.
  Per token: convs 3j (2K - 1) (K taps, K - 1 adds); L2 norm 2H x 3d (d squares, d - 1 adds,
  epsilon, d divisions); decay gate 3j (bias add, exp(A) x g, lower_bound x sigmoid); beta 0;
  recurrence H (7 d^2 + d) (decay d^2, k^T S d(2d - 1), subtract d, beta d, outer-product add
  2 d^2, q^T S d(2d - 1), 1/sqrt(d) scale d); output gate H (5d + 1) (squares d, d - 1 adds,
  mean 1, epsilon 1, x rsqrt d, x scale d, x sigmoid(g) d). Kimi K3 (69 layers, H 96, d 128,
  K 4): 17,805,312 + 5,087,232 + 2,543,616 + 760,541,184 + 4,245,984 = 790,223,328 per token.

Gated NoPE MLA: the DeepSeek MLA (blocks.mla) with mla_use_nope (no rotation: the
qk_rope dims stay as plain dims, so no RoPE operator) and mla_use_output_gate
(g_proj [heads*v, D]; the attention output times sigmoid(g): 4 per value).

Latent MoE (routed_expert_hidden_size r): the router reads x [D]; the routed copies
are projected once per token to r (routed_expert_down_proj [r, D], RMSNorm
routed_expert_norm [r]), the experts work at width r ([I, r], [r, I]), their
combined output goes back with routed_expert_up_proj [D, r]; the shared experts
run at D. Experts are MXFP4 in the checkpoint.

AttnRes (block size S): the residual stream is a list of saved block outputs plus
the running sum of the current block. Before each sublayer (none before layer 0's
attention) and before the head, the input is a softmax mix over c = saved + 1
candidates: per token RMS-normalize each candidate (3D + 1), one score dot with
norm.weight * proj.weight (2D - 1; the product computed once per call, D), a
softmax (3c - 1, with c exp, c rsqrt and c - 1 max counted 1 each as special
functions), and the weighted sum, 2 c D matrix FLOPs. At every layer i with
i mod S = 0 the running sum is saved as a new block (before that layer's FFN
mix; its attention mix sees the older blocks). Each sublayer output is added to
the running sum (D per token), except the attention output at a block start.
The saved blocks live within one forward pass (not a cache across tokens); after the
last layer the stack holds c_head - 1 blocks of [positions, D] (`forward`'s attn_res).
"""

from ..arch import Block, Tensor, history_free_rows
from ..dtypes import DTYPES
from ..errors import UserError
from ..ops import STAT_BYTES, VECTOR_FLOPS, Op, elementwise, gemm, rmsnorm, saved_inputs
from .linear_attention import CHUNK, chunked_cost, recurrent_cost
from .mla import MLA
from .moe import MoE

KDA_FLOPS = {"conv_silu_extra": 4, "l2norm": 3, "gate": 6, "beta": 3, "gated_norm": 8}


def baseline_flops(heads, d, kernel):
    """The book's logical recurrent baseline per token of one KDA layer (module docstring):
    {op name: scalar FLOPs} of the convs, the L2 norm, the gates, the recurrence and the output gate."""
    j = heads * d
    return {"qkv_conv_silu": 3 * j * (2 * kernel - 1), "qk_l2norm": 2 * heads * 3 * d, "gates": 3 * j,
            "delta_rule": heads * (7 * d * d + d), "gated_o_norm": heads * (5 * d + 1)}
GATE_FLOPS = 4     # sigmoid(g) * o per value (MLA output gate)


class KDA(Block):
    hidden: int
    heads: int
    head_dim: int
    conv_kernel: int
    chunk: int = CHUNK
    state_dtype: str = "fp32"
    conv_dtype: str = "bf16"
    prefix: str = "self_attn"
    a_log_stored: int = 0   # elements of A_log in the official checkpoint when not `heads` (Kimi K3: 128)
    kind = "KDA"

    @property
    def label(self):
        return f"KDA {self.heads}x{self.head_dim} conv{self.conv_kernel}"

    @property
    def width(self):
        return self.heads * self.head_dim

    def tensors(self):
        p, h, j, d, H = self.prefix, self.hidden, self.width, self.head_dim, self.heads
        f32 = dict(stored="fp32")
        return (*(Tensor(f"{p}.{n}_proj.weight", (j, h)) for n in ("q", "k", "v", "g")),
                Tensor(f"{p}.f_a_proj.weight", (d, h)), Tensor(f"{p}.f_b_proj.weight", (j, d)),
                Tensor(f"{p}.b_proj.weight", (H, h)), Tensor(f"{p}.o_proj.weight", (h, j)),
                Tensor(f"{p}.A_log", (H,), "vector", **f32,
                       checkpoint_shape=(self.a_log_stored,) if self.a_log_stored else ()), Tensor(f"{p}.dt_bias", (j,), "vector", **f32),
                Tensor(f"{p}.o_norm.weight", (d,), "vector", **f32),
                *(Tensor(f"{p}.{n}_conv1d.weight", (j, 1, self.conv_kernel), "vector", **f32)
                  for n in ("q", "k", "v")))

    def recurrent_state_bytes(self):
        return DTYPES[self.state_dtype].nbytes_flat(self.heads * self.head_dim * self.head_dim)

    def conv_state_bytes(self):
        return DTYPES[self.conv_dtype].nbytes_flat(self.conv_kernel * 3 * self.width)

    def state_bytes(self, kv_dtype):
        return self.recurrent_state_bytes() + self.conv_state_bytes()

    def kv_formula(self, kv_dtype, mla="absorbed"):
        return (f"KDA state {self.heads} heads x {self.head_dim} x {self.head_dim} in {self.state_dtype} = "
                f"{self.recurrent_state_bytes():,} B + conv slots {self.conv_kernel} x 3 x {self.width:,} in "
                f"{self.conv_dtype} = {self.conv_state_bytes():,} B per request, whatever the context")

    def history_breakpoints(self, lo, hi):
        return (1,) if lo < 1 <= hi else ()

    def shard(self, tp, ep=1):
        """Split by heads (q, k, v, g, f_b, b, o, A_log, dt_bias, convs and the state);
        f_a and o_norm replicated. TP must divide the heads."""
        if self.heads % tp:
            raise UserError(f"TP {tp} does not divide the {self.heads} heads of {self.label}")
        if tp == 1:
            return self
        return self.replace(heads=self.heads // tp, a_log_stored=0)   # a checkpoint-shape fact of the whole model

    def form(self, w):
        chosen = getattr(w, "delta_form", "auto")
        return ("recurrent" if w.tokens == 1 else "chunked") if chosen == "auto" else chosen

    def projection_ops(self, w):
        t = {x.name.split(".", 1)[1]: x for x in self.tensors()}
        n, j, H, d = w.positions, self.width, self.heads, self.head_dim
        conv = 2 * self.conv_kernel + KDA_FLOPS["conv_silu_extra"]
        act = w.act_dtype
        return (
            gemm(w, "q_proj", n, t["q_proj.weight"], replicated=True),
            gemm(w, "k_proj", n, t["k_proj.weight"], saves_input=False),
            gemm(w, "v_proj", n, t["v_proj.weight"], saves_input=False),
            gemm(w, "f_a_proj", n, t["f_a_proj.weight"], saves_input=False),
            gemm(w, "f_b_proj", n, t["f_b_proj.weight"]),
            gemm(w, "b_proj", n, t["b_proj.weight"], saves_input=False),
            gemm(w, "g_proj", n, t["g_proj.weight"], saves_input=False),
            elementwise(w, "qkv_conv_silu", n * 3 * j, conv, shape=f"[{n},3x{j}] k={self.conv_kernel}",
                        kind="activation", saved=saved_inputs(w, n * 3 * j)),
            elementwise(w, "qk_l2norm", n * 2 * j, KDA_FLOPS["l2norm"], kind="norm",
                        saved=saved_inputs(w, n * 2 * j) + n * 2 * H * STAT_BYTES, shape=f"[{n},2,{H},{d}]"),
            elementwise(w, "gates", n * j, KDA_FLOPS["gate"], shape=f"[{n},{j}] decay + [{n},{H}] beta",
                        saved=saved_inputs(w, n * j)).replace(
                vector_flops=n * (j * KDA_FLOPS["gate"] + H * KDA_FLOPS["beta"]),
                weight_read=w.weight_bytes(t["A_log"]) + w.weight_bytes(t["dt_bias"])),
        ), (
            elementwise(w, "gated_o_norm", n * j, KDA_FLOPS["gated_norm"], inputs=2, kind="norm",
                        weight=t["o_norm.weight"], saved=saved_inputs(w, n * j, 2) + n * H * STAT_BYTES,
                        shape=f"[{n},{H},{d}]"),
            gemm(w, "o_proj", n, t["o_proj.weight"]),
        )

    def ops(self, w):
        pre, post = history_free_rows(self, w, "projections", lambda: self.projection_ops(w))
        if getattr(w, "kda_count", "ledger") == "recurrent-baseline":
            return self.baseline(w, pre, post)
        return self.ledger_ops(w, pre, post)

    def baseline(self, w, pre, post):
        """The ledger's rows with the book's recurrent-baseline counts (module docstring): each
        non-matrix row's vector FLOPs = positions x its per-token count; the recurrence has no
        matrix FLOPs."""
        per = baseline_flops(self.heads, self.head_dim, self.conv_kernel)
        n = w.positions
        fix = lambda op: op.replace(vector_flops=n * per[op.name]) if op.name in per else op
        core = [fix(op).replace(matrix_flops=0, rect_flops=0, shape=op.shape.replace(self.form(w), "recurrent baseline"))
                for op in self.ledger_ops(w, (), ())]
        return [*map(fix, pre), *core, *map(fix, post)]

    def ledger_ops(self, w, pre, post):
        heads, d, n, b = w.batch * self.heads, self.head_dim, w.positions, w.batch
        act, fp32 = w.act_dtype, DTYPES["fp32"]
        rec_m, rec_v = recurrent_cost(w.tokens, d, d)
        ch_c, ch_d, ch_v = chunked_cost(w.tokens, d, d, self.chunk)
        form = self.form(w)
        m, rect, vec = (rec_m, rec_m, rec_v) if form == "recurrent" else (ch_c, ch_d, ch_v)
        state, conv = b * self.recurrent_state_bytes(), b * self.conv_state_bytes()
        reads = w.history > 0
        core = Op("delta_rule", "attention", f"{b}x{self.heads}x[{w.tokens},{d}x{d}] {form}",
                  matrix_flops=heads * m, rect_flops=heads * rect,
                  vector_flops=heads * vec,
                  act_read=act.nbytes_flat(n * 3 * self.width) + fp32.nbytes_flat(n * self.width),
                  kv_read=(state + conv) if reads else 0, kv_write=state + conv,
                  act_write=act.nbytes_flat(n * self.width), compute=w.compute_dtype.name, kind="attention",
                  saved_bytes=act.nbytes_flat(n * 3 * self.width) + fp32.nbytes_flat(n * self.width))
        return [*pre, core, *post]


class GatedMLA(MLA):
    """MLA with mla_use_nope (no RoPE operator) and mla_use_output_gate (g_proj)."""
    nope: bool = True

    kind = "gated NoPE MLA"

    def tensors(self):
        out = list(super().tensors())
        out.insert(len(out) - 1, Tensor(f"{self.prefix}.g_proj.weight", (self.heads * self.v_head_dim, self.hidden)))
        return tuple(out)

    def ops(self, w):
        rows = [op for op in super().ops(w) if not (self.nope and op.kind == "rope")]
        n, v = w.positions, self.heads * self.v_head_dim
        g = next(t for t in self.tensors() if t.name.endswith("g_proj.weight"))
        gate = [gemm(w, "g_proj", n, g, saves_input=False),
                elementwise(w, "output_gate", n * v, GATE_FLOPS, inputs=2, kind="activation",
                            shape=f"[{n},{v}] sigmoid(g) * o", saved=saved_inputs(w, n * v, 2))]
        at = next(i for i, op in enumerate(rows) if op.name == "o_proj")
        return rows[:at] + gate + rows[at:]


class LatentMoE(MoE):
    """MoE whose routed experts work at width `latent` (see module docstring)."""
    latent: int = 0

    def _expert(self):
        p, r, i = self.prefix, self.latent, self.expert_inter
        return [Tensor(f"{p}.experts.w1.weight", (i, r), "expert"), Tensor(f"{p}.experts.w3.weight", (i, r), "expert"),
                Tensor(f"{p}.experts.w2.weight", (r, i), "expert")]

    def _latent(self):
        p, h, r = self.prefix, self.hidden, self.latent
        return [Tensor(f"{p}.routed_expert_down_proj.weight", (r, h)),
                Tensor(f"{p}.routed_expert_up_proj.weight", (h, r)),
                Tensor(f"{p}.routed_expert_norm.weight", (r,), "vector")]

    def tensors(self):
        return tuple(list(super().tensors()) + self._latent())

    def active_params(self):
        return super().active_params() + sum(t.params for t in self._latent())

    def ops(self, w):
        """The parent's rows computed at the latent width for the experts, with the
        down projection and norm before them and the up projection after the combine."""
        n = w.positions
        wide = super().ops(w)
        narrow = MoE.ops(self.replace(hidden=self.latent, shared_inter=0), w)
        down, up, norm = self._latent()
        by = {op.name: op for op in narrow}
        head = [op for op in wide if op.name in ("router", "routing")]
        experts = [by[k] for k in ("experts.gate_proj", "experts.up_proj", f"experts.{self.act}",
                                   "experts.down_proj", "experts.combine")]
        shared = [op for op in wide if op.name.startswith("shared.")]
        latent = [gemm(w, "latent_down", n, down, saves_input=False),
                  rmsnorm(w, "latent_norm", n, norm, replicated=False)]
        return head + latent + experts + [gemm(w, "latent_up", n, up)] + shared

    def shard(self, tp, ep=1):
        """As MoE.shard; the latent projections and norm replicated (the latent
        width is the experts' hidden width)."""
        return super().shard(tp, ep)


class AttnRes(Block):
    """One AttnRes mix over `candidates` blocks (and the prefix add of its sublayer)."""
    history_independent = True
    name: str                 # self_attention_res | mlp_res | output_attn_res
    hidden: int
    candidates: int           # saved blocks + 1; 0: the tensors only (layer 0's unused attention mix)
    saves_block: bool = False  # this layer starts a block: save the running sum first

    @property
    def label(self):
        return f"AttnRes {self.name} over {self.candidates}" if self.candidates else ""

    def tensors(self):
        return (Tensor(f"{self.name}_norm.weight", (self.hidden,), "vector"),
                Tensor(f"{self.name}_proj.weight", (1, self.hidden), "vector"))

    def ops(self, w):
        n, h, c = w.positions, self.hidden, self.candidates
        act = w.act_dtype
        out = []
        if self.saves_block:
            out.append(Op(f"{self.name}.save_block", "memory", f"[{n},{h}] appended to the block stack",
                          act_read=act.nbytes_flat(n * h), act_write=act.nbytes_flat(n * h), kind="memory"))
        if c:
            rows = n * c
            scalar = rows * (3 * h + 1) + h + rows * (2 * h - 1) + n * (3 * c - 1)
            special = 2 * rows + n * (c - 1)      # rsqrt and exp per candidate, max comparisons
            out.append(Op(f"{self.name}.mix", "vector", f"[{n},{c},{h}] scores, softmax over {c}",
                          matrix_flops=0, vector_flops=scalar + special,
                          weight_read=sum(w.weight_bytes(t) for t in self.tensors()),
                          act_read=act.nbytes_flat(rows * h), act_write=4 * rows,
                          kind="softmax", saved_bytes=act.nbytes_flat(rows * h) + 4 * rows))
            out.append(Op(f"{self.name}.sum", "linear", f"[{n},1,{c}]x[{n},{c},{h}]",
                          matrix_flops=2 * n * c * h, act_read=act.nbytes_flat(rows * h) + 4 * rows,
                          act_write=act.nbytes_flat(n * h), compute=w.compute_dtype.name, kind="elementwise"))
        return out

    def shard(self, tp, ep=1):
        """Replicated: every TP device mixes its tokens' full hidden rows."""
        return self


class PrefixAdd(Block):
    """The sublayer output added to the block's running sum (AttnRes): D per token."""
    history_independent = True
    hidden: int

    def ops(self, w):
        n = w.positions
        return [elementwise(w, "prefix_add", n * self.hidden, VECTOR_FLOPS["residual"], inputs=2,
                            shape=f"[{n},{self.hidden}]", kind="residual")]


class AttnResHeadNorm(Block):
    """The output AttnRes mix over every saved block, then the final RMSNorm."""
    history_independent = True
    hidden: int
    candidates: int

    def tensors(self):
        return (*AttnRes("output_attn_res", self.hidden, self.candidates).tensors(),
                Tensor("norm.weight", (self.hidden,), "vector"))

    def ops(self, w):
        return [*AttnRes("output_attn_res", self.hidden, self.candidates).ops(w),
                rmsnorm(w, "norm", w.positions, self.tensors()[-1])]

    def block_stack_bytes(self, w):
        """The saved blocks held across the layers of one pass when the head mixes them:
        every candidate but the running sum, (c - 1) x [positions, D] in the activation
        format (built anew each pass; not a cache across tokens)."""
        return (self.candidates - 1) * w.act_dtype.nbytes_flat(w.positions * self.hidden)

    def shard(self, tp, ep=1):
        return self




"""Manifold-constrained hyper-connections (mHC, DeepSeek-V4): m residual streams.

Source: deepseek-ai/DeepSeek-V4-Flash:inference/model.py (Block.hc_pre, Block.hc_post,
ParallelHead.hc_head, Transformer.forward), pinned with its sha256 in
bojieli/ai-infra-book:calculations/configs/sources.lock.json.

The residual stream is m = hc_mult copies of the hidden state, x in [m, D] per
token, kept in the activation format. Each sublayer (attention, FFN) is wrapped:

    pre  (HCPre):  r = rsqrt(mean(x^2) over the m*D values)
                   mixes = (x.flatten() @ fn^T) * r            fn [M, m*D], M = (2 + m) m
                   pre, post, comb = split_sinkhorn(mixes, scale [3], base [M])
                   y = sum_j pre_j * x_j                        the sublayer's input [D]
    post (HCPost): x'_j = post_j * f(y) + sum_i comb_ij * x_i   [m, D]

and the model ends with a head mix (HCHead): mixes = (x.flatten() @ fn^T) * r with
fn [m, m*D], pre = sigmoid(mixes * scale + base) + eps, y = sum_j pre_j x_j, then
the final RMSNorm. The embedding output is copied into the m streams.

Counting rules, per token (D hidden, m streams, M = (2 + m) m, I Sinkhorn iterations),
following the source expressions as the book's calculator does
(bojieli/ai-infra-book:calculations/src/infra_calc/topics/hyper_connections.py:
reductions of n values n - 1 adds, a per-cell epsilon counted per cell) and adding
one FLOP per special function (sigmoid, exp, max comparison, rsqrt: our convention
that a transcendental counts 1; the book lists them apart):
- HCPre: mixes GEMM 2*m*D*M matrix FLOPs (fp32 weights); vector: the RMS statistic
  2*m*D + 1 (+ 1 rsqrt), the scale by it M, the split SINKHORN(m, I) = 6m + 2m^2
  (affine maps) + 4m^2 - m (initial row softmax) + (2I - 1) (m(m-1) + 2m^2)
  (one column, then I - 1 row/column normalization pairs) plus its specials
  2m sigmoid + m^2 exp + m(m-1) max, and the weighted sum (2m - 1)*D. Reads x
  (m*D), fn, base, scale; writes y (D) and post and comb (m + m^2 fp32 values).
- HCPost: (2m^2 + m)*D vector FLOPs (m^2 D products, m(m-1) D adds, m D post
  products, m D final adds); reads f (D), x (m*D), post and comb; writes x' (m*D).
- HCHead: mixes GEMM 2*m*D*m; vector 2*m*D + 1 + 1 (rsqrt), 4m (statistic, scale,
  base, epsilon) + m sigmoid, (2m - 1)*D; reads x (m*D) and its weights, writes
  y (D). The final norm is the usual RMSNorm.
- the embedding's copy into the streams reads D and writes m*D values per token.
Convention `hc_contractions` = "matrix" (the book's mHC training wrapper,
bojieli/ai-infra-book:calculations/src/infra_calc/topics/v4_hc_training.py, `train
--hc-contractions matrix`): the pre weighted sum counts 2mD matrix FLOPs instead of
(2m - 1) D vector, the post stream mix 2m^2 D matrix instead of its (2m^2 - m) D vector
(the post products and final adds, 2mD, stay vector); in the backward, dpre (2mD), dcomb
and dx_residual (4m^2 D), dz and dpost (4mD) are matrix FLOPs (`vjp_matrix_flops`): per
token and sublayer 2mD + 2m^2 D forward, 6mD + 4m^2 D backward.
Every tensor here is FP32 in the checkpoint. None keeps a cache; all are
replicated under tensor parallelism (the reference's are plain parameters).
Training keeps each op's inputs (x, and f for HCPost) and post/comb.
"""

from ..arch import Block, Tensor
from ..ops import FP32, Op, gemm, train_count, train_rule
from .basic import Embedding

def sinkhorn_arithmetic(m, iters):
    """Scalar FLOPs of hc_split_sinkhorn for one token, specials excluded: the affine
    maps of pre/post (6m) and comb (2m^2), the initial row softmax (subtract max,
    sum, divide, epsilon: 4m^2 - m), then 2I - 1 normalizations of m(m-1) + 2m^2."""
    return 6 * m + 2 * m * m + (4 * m * m - m) + (2 * iters - 1) * (m * (m - 1) + 2 * m * m)


def sinkhorn_specials(m):
    """Special functions of the split: 2m sigmoid, m^2 exp, m(m-1) max comparisons."""
    return 2 * m + m * m + m * (m - 1)


def split_flops(m, iters):
    """Vector FLOPs of hc_split_sinkhorn for one token (a special function counts 1)."""
    return sinkhorn_arithmetic(m, iters) + sinkhorn_specials(m)


def pre_sum_matrix(m, d):
    """hc_contractions "matrix": the pre weighted sum y = sum_j pre_j x_j of one token as a
    [1, m] x [m, D] product, 2mD matrix FLOPs; its backward's dpre_j = dy . x_j is as large."""
    return 2 * m * d


def post_mix_matrix(m, d):
    """hc_contractions "matrix": the post stream mix sum_i comb_ij x_i of one token as an
    [m, m] x [m, D] product, 2m^2 D matrix FLOPs."""
    return 2 * m * m * d


def post_vjp_matrix(m, d):
    """hc_contractions "matrix": the post's backward contractions of one token: dcomb and
    dx_residual (the mix's two gradients, 4m^2 D) and dz = sum_j post_j dout_j, dpost_j =
    dout_j . z (2mD each): 4m^2 D + 4mD."""
    return 4 * m * m * d + 4 * m * d


def train_pre(rows, m, d, iters):
    """The book's training count of one sublayer's hc_pre over R rows (its mHC training wrapper
    under hc_contractions "matrix", the pre weighted sum and the post mix as matrix work;
    bojieli/ai-infra-book:calculations/research/v4-hc-training-completion, results/
    v4-hc-training-*.md; the frozen split of .../v4-training-reference). n = mD, M = (2 + m) m,
    N = 2I - 1 normalizations. Per row, forward: the RMS statistic 2n + 1 (one rsqrt) and the scale
    of the M mixes; the split 2M (affine maps) + 2m (pre, post) + m (4m - 1) (row softmax) + N 2m^2
    (normalizations) = 5m + (6 + 2N) m^2, with 2m sigmoid, m^2 exp, m(m - 1) max compares.
    Backward per row: the mixes 3M - 1, the RMS n + 4, the pre n, the joins of x's four gradient
    branches 3n: 5n + 3M + 3; the split 7m + (N + 1)(4m^2 - m) + M; per sublayer (over the rows)
    its scale gradients 2RM - 3 and base gradient M (R - 1). Keeps in FP32 x (n), r, the mixes
    twice, pre and post (m each) and the split's 2m + m^2 + N (m^2 + m) values."""
    n, mx, norms = m * d, (2 + m) * m, 2 * iters - 1
    split_fwd = 5 * m + (6 + 2 * norms) * m * m
    split_bwd = 7 * m + (norms + 1) * (4 * m * m - m) + mx
    split_kept = 2 * m + m * m + norms * (m * m + m)
    kept = n + 1 + 2 * mx + 2 * m + split_kept
    split = ("sinkhorn split", rows * split_fwd, rows * split_bwd + 2 * rows * mx - 3 + mx * (rows - 1),
             FP32 * rows * split_kept)
    return train_count(rows * (2 * n + 1 + mx) + split[1], rows * (5 * n + 3 * mx + 3) + split[2],
                       saved=FP32 * rows * kept, rsqrt=rows, sigmoid=rows * 2 * m, exp=rows * m * m,
                       max_compare=rows * m * (m - 1)).replace(parts=(split,))


def train_post(rows, m, d):
    """The book's training count of one sublayer's hc_post over R rows (matrix convention): the
    post products and the final adds, 2mD per row; its backward contractions are matrix work;
    keeps the sublayer's output in FP32 (D per row)."""
    return train_count(rows * 2 * m * d, 0, saved=FP32 * rows * d)


def _fp32(name, shape):
    return Tensor(name, shape, "vector", stored="fp32")


class HCPre(Block):
    """hc_pre of one sublayer: the m streams mixed down to the sublayer's input."""
    history_independent = True
    name: str            # hc_attn | hc_ffn
    hidden: int
    streams: int
    iters: int = 20

    @property
    def mixes(self):
        return (2 + self.streams) * self.streams

    def tensors(self):
        m, d = self.streams, self.hidden
        return (_fp32(f"{self.name}_fn", (self.mixes, m * d)), _fp32(f"{self.name}_base", (self.mixes,)),
                _fp32(f"{self.name}_scale", (3,)))

    def ops(self, w):
        n, m, d, mx = w.positions, self.streams, self.hidden, self.mixes
        fn, base, scale = self.tensors()
        act, fp32 = w.act_dtype, 4
        mix = gemm(w, f"{self.name}.mix", n, fn, shape=f"[{n},{m}x{d}]x[{m * d},{mx}] fp32")
        vector = n * (2 * m * d + 2 + mx + split_flops(m, self.iters))
        matrix = vjp = 0
        if w.hc_contractions == "matrix":   # y = pre . x as a [1,m]x[m,D] product; its VJP's dpre = dy . x_j
            matrix = vjp = n * pre_sum_matrix(m, d)
        else:
            vector += n * (2 * m - 1) * d
        combine = Op(f"{self.name}.pre", "vector", f"[{n},{m},{d}] -> [{n},{d}], Sinkhorn {self.iters}",
                     matrix_flops=matrix, vjp_matrix_flops=vjp, compute=w.compute_dtype.name if matrix else "",
                     vector_flops=vector,
                     weight_read=w.weight_bytes(base) + w.weight_bytes(scale),
                     act_read=act.nbytes_flat(n * m * d) + n * mx * fp32,
                     act_write=act.nbytes_flat(n * d) + n * (m + m * m) * fp32,
                     kind="elementwise", saved_bytes=act.nbytes_flat(n * m * d) + n * mx * fp32,
                     book_train=train_rule(train_pre, n, m, d, self.iters)
                     if w.hc_contractions == "matrix" else None)
        return [mix, combine]

    def shard(self, tp, ep=1):
        """Replicated: every TP device holds the fp32 mixing weights and mixes its tokens."""
        return self


class HCPost(Block):
    """hc_post of one sublayer: the output spread back over the m streams."""
    history_independent = True
    name: str
    hidden: int
    streams: int

    def ops(self, w):
        n, m, d = w.positions, self.streams, self.hidden
        act = w.act_dtype
        matrix = vjp = 0
        vector = n * (2 * m * m + m) * d
        if w.hc_contractions == "matrix":
            matrix, vjp = n * post_mix_matrix(m, d), n * post_vjp_matrix(m, d)
            vector = n * 2 * m * d
        return [Op(f"{self.name}.post", "vector", f"[{n},{d}] + [{n},{m},{d}] -> [{n},{m},{d}]",
                   matrix_flops=matrix, vjp_matrix_flops=vjp, compute=w.compute_dtype.name if matrix else "",
                   vector_flops=vector,
                   act_read=act.nbytes_flat(n * d) + act.nbytes_flat(n * m * d) + n * (m + m * m) * 4,
                   act_write=act.nbytes_flat(n * m * d), kind="residual",
                   saved_bytes=act.nbytes_flat(n * d) + act.nbytes_flat(n * m * d) + n * (m + m * m) * 4,
                   book_train=train_rule(train_post, n, m, d) if w.hc_contractions == "matrix" else None)]


class HCHeadNorm(Block):
    """The model's last step: hc_head (m streams -> one) then the final RMSNorm.

    mixed = False (DeepSeek-V4.1's single-pass mHC: each sublayer's mixes give the next
    sublayer's pre weights, so the last FFN's give the head's): no hc_head weights and no
    mixing GEMM; the weighted sum (2m - 1) D per token remains."""
    history_independent = True
    hidden: int
    streams: int
    prefix: str = ""
    mixed: bool = True

    def tensors(self):
        m, d, p = self.streams, self.hidden, self.prefix
        norm = Tensor(f"{p}norm.weight", (d,), "vector")
        if not self.mixed:
            return (norm,)
        return (_fp32(f"{p}hc_head_fn", (m, m * d)), _fp32(f"{p}hc_head_base", (m,)),
                _fp32(f"{p}hc_head_scale", (1,)), norm)

    def ops(self, w):
        from ..ops import rmsnorm
        n, m, d = w.positions, self.streams, self.hidden
        act = w.act_dtype
        if not self.mixed:
            (norm,) = self.tensors()
            head = Op("hc_head", "vector", f"[{n},{m},{d}] -> [{n},{d}] (weights from the last sublayer)",
                      vector_flops=n * (2 * m - 1) * d,
                      act_read=act.nbytes_flat(n * m * d) + n * m * 4, act_write=act.nbytes_flat(n * d),
                      kind="elementwise", saved_bytes=act.nbytes_flat(n * m * d) + n * m * 4)
            return [head, rmsnorm(w, "norm", n, norm)]
        fn, base, scale, norm = self.tensors()
        mix = gemm(w, "hc_head.mix", n, fn, shape=f"[{n},{m}x{d}]x[{m * d},{m}] fp32")
        head = Op("hc_head", "vector", f"[{n},{m},{d}] -> [{n},{d}]",
                  vector_flops=n * (2 * m * d + 2 + 5 * m + (2 * m - 1) * d),
                  weight_read=w.weight_bytes(base) + w.weight_bytes(scale),
                  act_read=act.nbytes_flat(n * m * d) + n * m * 4, act_write=act.nbytes_flat(n * d),
                  kind="elementwise", saved_bytes=act.nbytes_flat(n * m * d) + n * m * 4)
        return [mix, head, rmsnorm(w, "norm", n, norm)]

    def shard(self, tp, ep=1):
        """Replicated, like the final norm."""
        return self


class HCEmbedding(Embedding):
    """The token embedding, then its copy into the m residual streams
    (Transformer.forward: h.unsqueeze(2).repeat(1, 1, hc_mult, 1))."""
    streams: int = 1
    name: str = "embed.weight"

    def tensors(self):
        return (Tensor(self.name, (self.vocab, self.hidden), "embedding"),)

    def ops(self, w):
        out = super().ops(w)
        n, d, m = w.positions, self.hidden, self.streams
        out.append(Op("hc_expand", "memory", f"[{n},{d}] -> [{n},{m},{d}]",
                      act_read=w.act_dtype.nbytes_flat(n * d), act_write=w.act_dtype.nbytes_flat(n * m * d),
                      kind="memory"))
        return out

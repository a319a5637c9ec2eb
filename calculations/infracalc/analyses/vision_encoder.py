"""The vision encoder of a vision-language model, per image (`encode`): patches -> ViT blocks ->
merger and DeepStack mergers -> tokens for the language model; its matrix FLOPs, weight bytes,
encoder-cache bytes and the KV the image's tokens add to the language model.

An image of W x H pixels (multiples of p s: the preprocessor's resize is not modelled) is a grid
of (H/p) x (W/p) = N patches; a still image is repeated over the t frames of one temporal patch,
so each patch is C t p^2 inputs. Every s x s block of patches merges into one token: T = N / s^2.
With d = hidden, I = intermediate, L = depth, m = d s^2, o = out_hidden, k = DeepStack mergers
(a multiply-add is 2 FLOPs; attention is bidirectional over the image's N patches, no mask):

  patch embed (Conv3d)     2 N (C t p^2) d
  per block (x L)          qkv 2 N d 3d + QK^T 2 N^2 d + PV 2 N^2 d + proj 2 N d^2 + MLP 2 (2 N d I)
  merger and each of the k DeepStack mergers: 2 T m m + 2 T m o

Per image: the sum; per request: that x the images encoded (those not served from the encoder
cache). Encoder cache (EC) per image: the merger's and the k DeepStack mergers' outputs the
language model consumes, T o (1 + k) values in the activation format. KV per image: the language
model's cache of T tokens (`kv`), a fixed recurrent state excluded (`encode` passes kv(T) - kv(0):
Qwen3.5/3.6's Gated DeltaNet state belongs to the request, not to an image). Vector work (LayerNorms, GELU, softmax, position embedding) is
not counted: unknown here. Weights (params at the weight format) are read once per request that encodes.
"""

from ..errors import UserError


def tower_of(arch):
    for part in arch.parts:
        if part.tower is not None:
            return part.tower
    raise UserError(f"model '{arch.id}' has no vision encoder this tool costs (modelled: qwen3_vl, qwen3_5, qwen3_5_moe)")


def grid(tower, width, height):
    """(patches, tokens) of a width x height image."""
    side = tower.patch * tower.merge
    if width % side or height % side:
        raise UserError(f"image {width}x{height}: both sides must be multiples of {side} pixels "
                        f"(patch {tower.patch} x merge {tower.merge}); resize it first")
    n = (width // tower.patch) * (height // tower.patch)
    return n, n // tower.merge ** 2


def image_rows(tower, width, height):
    """The per-image operator rows: name, count (runs per image), matrix FLOPs of all runs."""
    d, inter, n_layers = tower.hidden, tower.intermediate, tower.depth
    n, t = grid(tower, width, height)
    m, o, k = d * tower.merge ** 2, tower.out_hidden, len(tower.deepstack)
    patch_inputs = tower.channels * tower.temporal_patch * tower.patch ** 2
    rows = [("patch_embed", 1, 2 * n * patch_inputs * d, f"[{n},{patch_inputs}]x[{patch_inputs},{d}]"),
            ("blocks.qkv", n_layers, n_layers * 2 * n * d * 3 * d, f"[{n},{d}]x[{d},{3 * d}]"),
            ("blocks.attn_qk", n_layers, n_layers * 2 * n * n * d, f"{tower.heads} heads, {n}x{n} pairs"),
            ("blocks.attn_pv", n_layers, n_layers * 2 * n * n * d, f"{tower.heads} heads, {n}x{n} pairs"),
            ("blocks.proj", n_layers, n_layers * 2 * n * d * d, f"[{n},{d}]x[{d},{d}]"),
            ("blocks.mlp_fc1", n_layers, n_layers * 2 * n * d * inter, f"[{n},{d}]x[{d},{inter}]"),
            ("blocks.mlp_fc2", n_layers, n_layers * 2 * n * inter * d, f"[{n},{inter}]x[{inter},{d}]"),
            ("merger", 1, 2 * t * m * m + 2 * t * m * o, f"[{t},{m}]x[{m},{m}], [{t},{m}]x[{m},{o}]")]
    if k:
        rows.append(("deepstack_mergers", k, k * (2 * t * m * m + 2 * t * m * o),
                     f"{k} x ([{t},{m}]x[{m},{m}], [{t},{m}]x[{m},{o}]) at blocks {','.join(map(str, tower.deepstack))}"))
    return n, t, [{"name": a, "count": c, "matrix_flops": f, "shape": s} for a, c, f, s in rows]


def encode(arch, images, cached, weight_dtype, act_dtype, kv_bytes_per_image):
    """The `encode` figures: per image (each W x H of `images`), per request (`cached` of them
    served from the encoder cache, the first ones by convention: every image of one size costs
    the same). `kv_bytes_per_image(tokens)` is the language model's cache of that many tokens."""
    tower = tower_of(arch)
    if cached > len(images):
        raise UserError(f"--cached {cached} exceeds the {len(images)} image(s) of the request")
    per_image = []
    for i, (w, h) in enumerate(images):
        n, t, rows = image_rows(tower, w, h)
        per_image.append({"image": i, "width": w, "height": h, "patches": n, "tokens": t,
                          "matrix_flops": sum(r["matrix_flops"] for r in rows),
                          "ec_bytes": act_dtype.nbytes_flat(t * tower.out_hidden * (1 + len(tower.deepstack))),
                          "kv_bytes": kv_bytes_per_image(t), "encoded": i >= cached, "rows": rows})
    encoded = [p for p in per_image if p["encoded"]]
    weights = weight_dtype.nbytes_flat(tower.params)
    return {"tower": {"params": tower.params, "weight_bytes": weights,
                      "depth": tower.depth, "hidden": tower.hidden, "patch": tower.patch, "merge": tower.merge,
                      "deepstack": list(tower.deepstack)},
            "images": per_image,
            "encodes": len(encoded),
            "image_tokens": sum(p["tokens"] for p in per_image),
            "request_matrix_flops": sum(p["matrix_flops"] for p in encoded),
            "request_weight_bytes": weights if encoded else 0,
            "ec_bytes": sum(p["ec_bytes"] for p in per_image),
            "kv_bytes": sum(p["kv_bytes"] for p in per_image)}


CONVENTIONS = (
    "An image of W x H pixels is (H/p)(W/p) patches of C t p^2 inputs (a still image repeated over the t frames "
    "of one temporal patch); s x s patches merge into one language token. Sides must be multiples of p s: the "
    "preprocessor's resize is not modelled.",
    "Matrix FLOPs (2 per multiply-add): patch embed, per block qkv, QK^T and PV over all N^2 patch pairs "
    "(bidirectional), proj and the two MLP matrices; the merger and each DeepStack merger (two matrices on T "
    "tokens). Vector work (LayerNorm, GELU, softmax, position embedding) is not counted (unknown here).",
    "Encoder cache (EC) per image: the merger's and DeepStack mergers' outputs, T x out_hidden x (1 + k) values in "
    "the activation format; KV per image: the language model's cache of the image's T tokens (kv).",
    "Cached images (--cached K) are served from the encoder cache: the first K, and they cost no encoder pass; "
    "the tower's weights are read once per request that encodes any image.",
)

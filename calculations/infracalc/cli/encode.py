"""`encode`: a vision-language model's vision encoder per image and per request (patches, ViT
blocks, merger, DeepStack), its encoder-cache and KV bytes; with --output-len, the whole request
(encoder passes + the language model's prefill and decode)."""

import argparse

from . import common


def image_size(text):
    """WxH in pixels, e.g. 640x640."""
    w, sep, h = text.lower().partition("x")
    width, height = common.digits(w), common.digits(h)
    if not sep or not width or not height or max(width, height) > 1 << 20:
        raise argparse.ArgumentTypeError(f"must be WIDTHxHEIGHT in pixels, e.g. 640x640, got '{text}'")
    return width, height


def add_arguments(p):
    common.add_model(p)
    p.add_argument("--image", type=image_size, action="append", required=True, metavar="WxH",
                   help="an image of W x H pixels (repeat for several; sides multiples of patch x merge)")
    p.add_argument("--images", type=common.positive_int, default=1, metavar="N",
                   help="repeat the --image list N times (default 1)")
    p.add_argument("--cached", type=common.non_negative_int, default=0, metavar="K",
                   help="images served from the encoder cache (no encoder pass; default 0)")
    p.add_argument("--text-tokens", type=common.tokens_or_zero, default=0, metavar="T",
                   help="text tokens of the prompt besides the images' (with --output-len)")
    p.add_argument("--output-len", type=common.positive_int, default=None, metavar="G",
                   help="the whole request: prefill of image + text tokens, then G - 1 decode steps "
                        "(G counts the token the prefill yields, as decode's --output-len)")
    common.add_dtypes(p)
    common.add_output(p)


def run(args):
    from ..analyses import kv, vision_encoder
    from ..analyses.records import SCHEMA_VERSION
    from ..errors import UserError
    from ..load.models import load_model
    from ..render import encode as render

    arch = load_model(args.model)
    w = common.workload(args, arch, 1, 1, 0)
    images = list(args.image) * args.images
    state = kv.bytes_per_request(arch, w, 0)   # a recurrent state (Gated DeltaNet) is per request, not per image
    rec = vision_encoder.encode(arch, images, args.cached, w.weight_dtype, w.act_dtype,
                                lambda t: kv.bytes_per_request(arch, w, t) - state)
    request = None
    if args.output_len is not None:
        from ..analyses.serve.replay import request_matrix_flops

        prompt = rec["image_tokens"] + args.text_tokens
        final = prompt + args.output_len - 1
        if final > arch.max_context:
            raise UserError(f"the request's {final:,} tokens exceed the model's context of {arch.max_context:,}")
        language = request_matrix_flops(arch, w, prompt, args.output_len)
        request = {"prompt_tokens": prompt, "text_tokens": args.text_tokens, "output_len": args.output_len,
                   "decode_calls": args.output_len - 1, "language_matrix_flops": language,
                   "vision_matrix_flops": rec["request_matrix_flops"],
                   "matrix_flops": language + rec["request_matrix_flops"],
                   "final_kv_bytes": kv.bytes_per_request(arch, w, final)}
    elif args.text_tokens:
        raise UserError("--text-tokens describes the whole request; give --output-len too")
    out = {"schema_version": SCHEMA_VERSION, "command": "encode",
           "model": {"id": arch.id, "model_type": arch.model_type},
           "inputs": {"images": [f"{a}x{b}" for a, b in images], "cached": args.cached,
                      "weight_dtype": w.weight_dtype.name, "act_dtype": w.act_dtype.name, "kv_dtype": w.kv_dtype.name},
           **rec, "request": request, "conventions": list(vision_encoder.CONVENTIONS) + (
               [f"KV per image excludes the language model's fixed recurrent state ({state:,} B per request, "
                "Gated DeltaNet): the image's tokens add only their attention cache."] if state else [])}
    return common.emit(args, out, render.markdown, render.csv)

"""`encode` records -> Markdown and CSV."""

from . import units as u
from .table import inline, markdown_table, to_csv

CSV_COLUMNS = ("image", "width", "height", "patches", "tokens", "encoded", "matrix_flops", "ec_bytes", "kv_bytes")


def markdown(rec):
    t, i = rec["tower"], rec["inputs"]
    deepstack = f"DeepStack at blocks {', '.join(map(str, t['deepstack']))}" if t["deepstack"] else "no DeepStack"
    lines = [f"# encode: {inline(rec['model']['id'])} vision encoder, {len(rec['images'])} image(s), "
             f"{i['cached']} from the encoder cache", "",
             f"- Tower: {t['depth']} blocks of hidden {t['hidden']}, patch {t['patch']}, merge {t['merge']}x{t['merge']}, "
             f"{deepstack}; {u.integer(t['params'])} params, "
             f"{u.integer(t['weight_bytes'])} B of weights at {i['weight_dtype']}",
             f"- Formats: weights {i['weight_dtype']}, activations and encoder cache {i['act_dtype']}, KV {i['kv_dtype']}",
             "", "## Per image", "",
             markdown_table(["image", "size", "patches", "tokens", "encoded", "matrix FLOPs", "EC bytes", "KV bytes"],
                            [[str(p["image"]), f"{p['width']}x{p['height']}", u.integer(p["patches"]),
                              u.integer(p["tokens"]), "yes" if p["encoded"] else "cached",
                              u.integer(p["matrix_flops"]), u.integer(p["ec_bytes"]), u.integer(p["kv_bytes"])]
                             for p in rec["images"]], "lrrrlrrr"),
             "", f"## Operators of image 0 ({rec['images'][0]['width']}x{rec['images'][0]['height']})", "",
             markdown_table(["operator", "runs", "shape", "matrix FLOPs"],
                            [[r["name"], str(r["count"]), r["shape"], u.integer(r["matrix_flops"])]
                             for r in rec["images"][0]["rows"]], "lrlr"),
             "", "## Request", "",
             f"- Encoder passes: {rec['encodes']}; vision matrix FLOPs {u.integer(rec['request_matrix_flops'])}; "
             f"image tokens {u.integer(rec['image_tokens'])}",
             f"- Encoder cache {u.integer(rec['ec_bytes'])} B and language KV {u.integer(rec['kv_bytes'])} B for "
             f"the images' tokens"]
    q = rec["request"]
    if q:
        lines += [f"- Whole request: prompt {u.integer(q['prompt_tokens'])} positions ({u.integer(q['text_tokens'])} "
                  f"text), {q['decode_calls']} decode calls; matrix FLOPs {u.integer(q['matrix_flops'])} = vision "
                  f"{u.integer(q['vision_matrix_flops'])} + language {u.integer(q['language_matrix_flops'])}; "
                  f"KV at the end {u.integer(q['final_kv_bytes'])} B"]
    lines += ["", "## Conventions", ""] + [f"- {c}" for c in rec["conventions"]]
    return "\n".join(lines) + "\n"


def csv(rec):
    return to_csv(CSV_COLUMNS, [[p[k] for k in CSV_COLUMNS] for p in rec["images"]])

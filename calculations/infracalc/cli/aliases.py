"""The names users already type: the flags of vLLM, SGLang and Megatron-LM where they mean
what one of ours means, and a few that translate into ours.

Renames (`RENAMES`) are registered on the command's own option, so `--help` lists them
beside it and argparse parses them as the option itself. Translations (`TRANSLATIONS`) take
the value in the other tool's terms and give our option its value, the rule stated in the
help text of each.
"""

# alias -> our option; each used where the command has that option.
RENAMES = {
    # vLLM engine arguments (docs.vllm.ai, "Engine Arguments")
    "--tensor-parallel-size": "--tp", "-tp": "--tp",
    "--pipeline-parallel-size": "--pp", "-pp": "--pp",
    "--data-parallel-size": "--dp", "-dp": "--dp",
    "--max-model-len": "--context",
    "--kv-cache-dtype": "--kv-dtype",
    # SGLang server arguments (sgl-project/sglang: python/sglang/srt/server_args.py)
    "--tp-size": "--tp", "--pp-size": "--pp", "--dp-size": "--dp", "--ep-size": "--ep",
    "--context-length": "--context",
    # Megatron-LM (NVIDIA/Megatron-LM: megatron/training/arguments.py)
    "--tensor-model-parallel-size": "--tp",
    "--pipeline-model-parallel-size": "--pp",
    "--context-parallel-size": "--cp",
    "--expert-model-parallel-size": "--ep",
    "--sequence-parallel": "--sp",
    "--micro-batch-size": "--micro-batch",
    "--global-batch-size": "--global-batch",
    "--seq-length": "--seq",
    "--recompute-granularity": "--recompute",
}

# alias -> (our option, what the alias means, how its value becomes ours)
TRANSLATIONS = {
    "--gpu-memory-utilization": (
        "--reserve", "vLLM: the fraction U of device memory for weights, activations and cache",
        "the reserve is the rest, (1 - U) of memory"),
    "--mem-fraction-static": (
        "--reserve", "SGLang: the fraction F of device memory for weights and the KV pool",
        "the reserve is the rest, (1 - F) of memory"),
    "--dtype": (
        "--act-dtype", "vLLM/SGLang: the model's weight and activation format (auto, bfloat16, "
        "float16, ...)", "sets --act-dtype and, unless given, --weight-dtype; auto keeps the defaults"),
    "--quantization": (
        "--weight-dtype", "vLLM/SGLang: the weight quantization method",
        "fp8 is --weight-dtype fp8 --act-dtype fp8 (W8A8); AWQ and GPTQ are refused, naming the format"),
}

# vLLM's AWQ/GPTQ checkpoints: 4-bit weights, one FP16 scale per group of 128 (the default
# group size) and a packed 4-bit zero point per group, which no format of ours counts.
_GROUPED_INT4 = ("awq", "gptq", "awq_marlin", "gptq_marlin", "compressed-tensors")


def register(parser):
    """Give every option of `parser` its renames, so argparse takes them as the option."""
    table = parser._option_string_actions   # argparse's option-string index
    for alias, ours in RENAMES.items():
        action = table.get(ours)
        if action is not None and alias not in table:
            action.option_strings.append(alias)
            table[alias] = action
    for alias, (ours, meaning, rule) in TRANSLATIONS.items():
        if ours in table and alias not in table:
            parser.add_argument(alias, dest=f"alias_{alias[2:].replace('-', '_')}", default=None,
                                metavar="VALUE", help=f"{meaning}; {rule}")


def translate(args):
    """Fold the translated aliases into our options (after parsing); a conflict is an error."""
    from ..errors import UserError, quote

    def alias(flag):
        return getattr(args, f"alias_{flag[2:].replace('-', '_')}", None)

    for flag in ("--gpu-memory-utilization", "--mem-fraction-static"):
        value = alias(flag)
        if value is None:
            continue
        from fractions import Fraction

        from .common import _float_in

        used = _float_in(value, lambda v: 0 < v <= 1, "(0, 1]")
        if args.reserve is not None:
            raise UserError(f"{flag} and --reserve both set the reserve; keep one")
        args.reserve = ("percent", (1 - Fraction(str(used))) * 100)
    value = alias("--dtype")
    if value is not None and value.lower() != "auto":
        from ..dtypes import dtype

        name = dtype(value).name
        if args.act_dtype not in (None, "bf16", name):
            raise UserError(f"--dtype {quote(value)} and --act-dtype {args.act_dtype} disagree; keep one")
        args.act_dtype = name
        if getattr(args, "weight_dtype", "absent") is None:
            args.weight_dtype = name
    value = alias("--quantization")
    if value is not None:
        method = value.lower()
        if method in _GROUPED_INT4:
            raise UserError(f"--quantization {quote(value)}: 4-bit weights with one FP16 scale per 128 "
                            "values are --weight-dtype int4-g128-fp16 (the per-group zero points are "
                            "not counted)")
        if method != "fp8":
            raise UserError(f"--quantization {quote(value)} has no equivalent here; give the weight "
                            "format with --weight-dtype (see --help for the formats)")
        if args.weight_dtype not in (None, "bf16", "fp8"):
            raise UserError(f"--quantization fp8 and --weight-dtype {args.weight_dtype} disagree; keep one")
        args.weight_dtype = "fp8"
        if getattr(args, "kv_dtype", "absent") is None:
            args.kv_dtype = args.act_dtype or "bf16"   # vLLM's cache keeps the model format (auto)
        args.act_dtype = "fp8"

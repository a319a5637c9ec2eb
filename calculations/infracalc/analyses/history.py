"""Public training history: the published token counts and GPU-hours of 13 models, and what
follows from them by arithmetic alone.

For each model, with N its stated parameter proxy (a nominal dense size, or the activated
parameters of an MoE) and D its published training tokens:

    proxy work  = 6 N D                    (FLOPs; not the model's operator-by-operator work)
    D / N       = an exact fraction        (the same proxy N)
    days        = GPU-hours / devices / 24 (exact), only where the source reports a device count:
                  under a constant allocation of that many devices ('reported_configuration'), or
                  a lower bound when the count is a reported maximum ('reported_maximum')

Three declared operations on the catalogue (each returns null where a figure it needs is
unknown, never a guess):

    growth of target over baseline = N_t / N_b, D_t / D_b and 6 N_t D_t / (6 N_b D_b)   (exact)
    days over a declared device-count range [lo, hi] = GPU-hours / (hi x 24) .. GPU-hours / (lo x 24)
    scoped cost = GPU-hours x price per GPU-hour + service usage x price per unit + other cost
                  (declared prices and units; null when GPU-hours or the other cost are unknown)

By hand: Llama 2 7B over Llama 1 7B grows N by 7e9 / 6.7e9 = 70/67, D by 2 and 6ND by 140/67;
Llama 2 70B's 1,720,320 GPU-hours on 1,024..4,096 GPUs take 35/2..70 days; DeepSeek-V3's
2,664,000 GPU-hours at 2 a GPU-hour plus 10^6 requests at 1/100 cost 5,328,000 + 10,000.

Nothing unknown is filled in: a model whose source gives no GPU-hours, token count or device
count keeps null there. GPU-hours on different GPUs are not a normalized compute comparison.
The facts are the sources' (paper, table or model card, named per row), as the book's
calculator transcribes them (bojieli/ai-infra-book:calculations/results/training-history-published.md).
"""

from fractions import Fraction

from ..record import Record

LLAMA1 = "Touvron et al., LLaMA (arXiv:2302.13971v1)"
LLAMA2 = "Touvron et al., Llama 2 (arXiv:2307.09288)"
LLAMA31_CARD = "meta-llama/llama-models:models/llama3_1/MODEL_CARD.md"
LLAMA3 = "Llama Team, The Llama 3 Herd of Models (arXiv:2407.21783)"
QWEN25 = "Qwen Team, Qwen2.5 Technical Report (arXiv:2412.15115v2)"
QWEN3 = "Qwen Team, Qwen3 Technical Report (arXiv:2505.09388v1)"
QWEN35 = "Qwen3.5 launch blog (qwen.ai/blog?id=qwen3.5)"
DSV3 = "DeepSeek-AI, DeepSeek-V3 Technical Report (arXiv:2412.19437)"
DSV4 = "DeepSeek-AI, DeepSeek-V4 (arXiv:2606.19348)"


class Trained(Record):
    """One model's published training figures (None: not disclosed in the source)."""
    id: str
    proxy_params: object           # N of 6ND (int) or None
    proxy_kind: str                # nominal_dense_proxy | active_parameter_proxy
    tokens: object                 # D (int) or None
    gpu_hours: object = None
    gpu: object = None
    devices: object = None
    device_role: object = None     # reported_configuration | reported_maximum
    total_params: object = None    # reported total / activated parameters (MoE)
    active_params: object = None
    source: str = ""
    note: str = ""


DENSE, ACTIVE = "nominal_dense_proxy", "active_parameter_proxy"
CONFIG, MAXIMUM = "reported_configuration", "reported_maximum"

CATALOGUE = (
    Trained("llama1-7b", 6_700_000_000, DENSE, 10**12, 82_432, "A100-80GB", source=f"{LLAMA1}, Tables 2 and 15"),
    Trained("llama1-65b", 65_200_000_000, DENSE, 1_400_000_000_000, 1_022_362, "A100-80GB", 2048, CONFIG,
            source=f"{LLAMA1}, Table 15 and section 2.4",
            note="constant 2,048-GPU allocation assumed; the paper's 'approximately 21 days' is a separate value"),
    Trained("llama2-7b", 7 * 10**9, DENSE, 2 * 10**12, 184_320, "A100-80GB", source=f"{LLAMA2}, Tables 1 and 2"),
    Trained("llama2-70b", 70 * 10**9, DENSE, 2 * 10**12, 1_720_320, "A100-80GB", source=f"{LLAMA2}, Tables 1 and 2"),
    Trained("llama31-8b", 8 * 10**9, DENSE, 15 * 10**12, 1_460_000, "H100-80GB",
            source=f"{LLAMA31_CARD}, training energy use table",
            note="15T approximate (the family card says 15T+); GPU-hours are the card's training total"),
    Trained("llama31-70b", 70 * 10**9, DENSE, 15 * 10**12, 7_000_000, "H100-80GB",
            source=f"{LLAMA31_CARD}, training energy use table", note="15T approximate (15T+)"),
    Trained("llama31-405b", 405 * 10**9, DENSE, 15_600_000_000_000, 30_840_000, "H100-80GB", 16384, MAXIMUM,
            source=f"{LLAMA3}, section 3 and Table 4; {LLAMA31_CARD}",
            note="30.84M GPU-hours from the model card, the 16,384-GPU maximum from the paper's pretraining: "
                 "the days are a lower bound only if both cover the same scope"),
    Trained("qwen25-7b-proxy", 7 * 10**9, DENSE, 18 * 10**12, source=f"{QWEN25}, sections 3.1-3.2",
            note="family pretraining tokens on a nominal 7B; GPU-hours not disclosed"),
    Trained("qwen3-8b-proxy", 8 * 10**9, DENSE, 36 * 10**12, source=f"{QWEN3}, section 3",
            note="family token scale on a nominal 8B; Table 21's RL (17,920 h) and distillation (1,800 h) are "
                 "post-training alternatives, not pretraining hours"),
    Trained("qwen35-397b", None, DENSE, None, source=QWEN35,
            note="no token count or GPU-hours in the launch page"),
    Trained("deepseek-v3-pretraining", 37 * 10**9, ACTIVE, 14_800_000_000_000, 2_664_000, "H800", 2048, CONFIG,
            671 * 10**9, 37 * 10**9, source=f"{DSV3}, Table 1 and section 3",
            note="pretraining only; context extension 119K and post-training 5K GPU-hours apart"),
    Trained("deepseek-v4-flash", 13 * 10**9, ACTIVE, 32 * 10**12, total_params=284 * 10**9,
            active_params=13 * 10**9, source=f"{DSV4}, section 4.2", note="GPU-hours not disclosed"),
    Trained("deepseek-v4-pro", 49 * 10**9, ACTIVE, 33 * 10**12, total_params=1_600 * 10**9,
            active_params=49 * 10**9, source=f"{DSV4}, section 4.2", note="GPU-hours not disclosed"),
)

# Stage observations a paper reports (not a whole-run MFU): Llama 3's Table 4.
STAGE_MFU = (
    {"model": "llama31-405b", "gpu": "H100-80GB", "gpus": 8192, "seq": 8192, "tp": 8, "cp": 1, "pp": 16, "dp": 64,
     "tflops_per_gpu": 430, "bf16_mfu": "43/100", "source": f"{LLAMA3}, Table 4"},
    {"model": "llama31-405b", "gpu": "H100-80GB", "gpus": 16384, "seq": 8192, "tp": 8, "cp": 1, "pp": 16, "dp": 128,
     "tflops_per_gpu": 400, "bf16_mfu": "41/100", "source": f"{LLAMA3}, Table 4"},
    {"model": "llama31-405b", "gpu": "H100-80GB", "gpus": 16384, "seq": 131072, "tp": 8, "cp": 16, "pp": 16, "dp": 8,
     "tflops_per_gpu": 380, "bf16_mfu": "38/100", "source": f"{LLAMA3}, Table 4"},
)

# Reported stage GPU-hours: DeepSeek-V3's add up to its reported total (Table 1).
STAGE_HOURS = (
    {"model": "deepseek-v3", "pretraining": 2_664_000, "context_extension": 119_000, "posttraining": 5_000,
     "reported_total": 2_788_000, "source": f"{DSV3}, Table 1"},
)


def _fraction(f):
    return None if f is None else (str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}")


def row(m):
    """The computed columns of one catalogue entry."""
    n, d = m.proxy_params, m.tokens
    days = Fraction(m.gpu_hours, m.devices * 24) if m.gpu_hours and m.devices else None
    return {
        "model": m.id, "reported_total_params": m.total_params, "reported_active_params": m.active_params,
        "proxy_params": n, "proxy_kind": m.proxy_kind, "tokens": d,
        "proxy_6nd_flops": 6 * n * d if n and d else None,
        "tokens_per_param": _fraction(Fraction(d, n)) if n and d else None,
        "gpu_hours": m.gpu_hours, "gpu": m.gpu, "devices": m.devices, "device_role": m.device_role,
        "days": _fraction(days), "days_decimal": None if days is None else float(days),
        "source": m.source, "note": m.note,
    }


def _ratio(a, b):
    return _fraction(Fraction(a, b)) if a and b else None


def growth(baseline, target):
    """Target over baseline: the parameter proxy, the tokens and 6ND, exact (null if either is unknown)."""
    b, t = ENTRY[baseline], ENTRY[target]
    work = lambda m: 6 * m.proxy_params * m.tokens if m.proxy_params and m.tokens else None
    return {"baseline": baseline, "target": target,
            "proxy_params_growth": _ratio(t.proxy_params, b.proxy_params),
            "tokens_growth": _ratio(t.tokens, b.tokens), "proxy_6nd_growth": _ratio(work(t), work(b))}


def count_range(model, low, high):
    """Days of the published GPU-hours on a declared constant device count from low to high:
    the fewest days at high, the most at low (null without published GPU-hours)."""
    hours = ENTRY[model].gpu_hours
    days = (lambda n: _fraction(Fraction(hours, n * 24)) if hours else None)
    return {"model": model, "min_devices": low, "max_devices": high,
            "days_at_max_devices": days(high), "days_at_min_devices": days(low)}


def lifecycle(model, gpu_hour_price, service_usage, service_price, other_cost=None):
    """Declared prices (Fractions) on the published GPU-hours and a declared service usage:
    training = hours x price, service = usage x price, scoped = their sum + the other cost; the
    training and scoped costs are null when the GPU-hours are unknown, the scoped one also when
    the other cost is not declared (0 excludes it explicitly)."""
    hours = ENTRY[model].gpu_hours
    training = hours * gpu_hour_price if hours else None
    service = service_usage * service_price
    scoped = training + service + other_cost if training is not None and other_cost is not None else None
    return {"model": model, "training_gpu_hours": hours, "gpu_hour_price": _fraction(gpu_hour_price),
            "service_usage": service_usage, "service_price": _fraction(service_price),
            "other_cost": _fraction(other_cost), "training_cost": _fraction(training),
            "service_cost": _fraction(service), "scoped_cost": _fraction(scoped)}


def history(models=(), comparisons=(), count_ranges=(), lifecycles=()):
    """The catalogue (or the named models of it), its stage observations and stage sums, and the
    declared operations: comparisons ((baseline, target), ...), count_ranges ((model, low, high), ...),
    lifecycles (keyword dicts of `lifecycle`)."""
    chosen = [m for m in CATALOGUE if not models or m.id in models]
    stages = [dict(s, summed=s["pretraining"] + s["context_extension"] + s["posttraining"]) for s in STAGE_HOURS]
    for s in stages:
        s["sum_matches_reported"] = s["summed"] == s["reported_total"]
    rec = {"models": len(chosen), "catalogue": [row(m) for m in chosen],
           "stage_mfu": [s for s in STAGE_MFU if s["model"] in {m.id for m in chosen}],
           "stage_hours": stages if any(m.id.startswith("deepseek-v3") for m in chosen) else []}
    if comparisons:
        rec["comparisons"] = [growth(b, t) for b, t in comparisons]
    if count_ranges:
        rec["count_ranges"] = [count_range(*r) for r in count_ranges]
    if lifecycles:
        rec["lifecycle"] = [lifecycle(**c) for c in lifecycles]
    return rec


ENTRY = {m.id: m for m in CATALOGUE}


def ids():
    return [m.id for m in CATALOGUE]

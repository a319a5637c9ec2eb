"""An encoder / prefill-decode (E/PD) pool for one repeated image request: the encoder-cache (EC)
tensor each request sends, and the request rate a fixed split of workers can at best sustain (the
book's chapter-12 multimodal cache bound).

W workers split into e encoder workers and W - e PD workers (every e in 1 .. W - 1). A request of
n images, a fraction h of them served from the encoder cache, sends its full EC (n x the EC bytes of
one image, hit or miss) over one shared network of b bytes/s. Known bounds of a split, requests/s:

    uncached encoding  r_E e / (n (1 - h))     (none when h = 1: the cache's own service is unknown)
    PD                 r_PD (W - e)
    network            b / (n x EC bytes)

The split's bound is their minimum; the best bound is the largest over the splits (every split
reaching it kept). An arrival rate strictly below it is a necessary condition only: queueing,
bursts, tails and the cache's lookup service are not in it. Exact fractions.
"""

from fractions import Fraction


def pool_splits(workers, images, hit, encoder_rate, pd_rate, network_rate, request_ec_bytes):
    """[{encoder_workers, pd_workers, bounds..., bound, bottlenecks, the EC bytes/s the network carries at the
    bound (bound x the request's EC bytes)}] for e = 1 .. workers - 1."""
    network = Fraction(network_rate) / request_ec_bytes
    rows = []
    for e in range(1, workers):
        bounds = {"pd": pd_rate * (workers - e), "network": network}
        if hit < 1:
            bounds["uncached_encode"] = Fraction(encoder_rate) * e / (images * (1 - hit))
        bound = min(bounds.values())
        rows.append({"encoder_workers": e, "pd_workers": workers - e,
                     "uncached_encode_exact": str(bounds["uncached_encode"]) if "uncached_encode" in bounds else None,
                     "pd_exact": str(bounds["pd"]), "network_exact": str(network), "bound_exact": str(bound),
                     "bound": bound, "bottlenecks": [k for k in ("uncached_encode", "pd", "network")
                                                     if bounds.get(k) == bound],
                     "network_bytes_per_s_at_bound_exact": str(bound * request_ec_bytes)})
    return rows


EC_POOL_CONVENTIONS = [
    "One request: n copies of one image (sides multiples of patch x merge; the preprocessor's resize is not "
    "modelled). EC per image: the merger's and every DeepStack merger's outputs, T x out_hidden x (1 + k) values "
    "in the activation format; KV per position: the language model's K and V of all layers (kv).",
    "Workers split into e encoder and W - e PD workers, every e from 1 to W - 1. Known bounds in requests/s: "
    "uncached encoding r_E e / (n (1 - h)) (none at h = 1: the cache's service capacity is unknown, not "
    "infinite), PD r_PD (W - e), and the shared network b / request EC bytes (every image's EC is sent, hit or "
    "miss). A split's bound is their minimum; the best bound the largest, every split reaching it listed.",
    "Declared rates, sizes and fractions; one-way payload / bandwidth times only (no RTT, queueing or "
    "serialization). An arrival rate strictly below the bound is necessary, not sufficient, for stability.",
]

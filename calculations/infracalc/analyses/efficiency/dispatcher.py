"""Predicted time of an EP dispatch or combine run by Megatron-Core's flex dispatcher (its DeepEP or
HybridEP backend), at the backend's published rate (issue 18 item 4, the dispatcher's cost).

A published benchmark reports a bandwidth B = counted bytes / time, per rank, and the prediction is

    t = counted bytes x skew / (B x link / link of the measured platform)

with the counted bytes those the benchmark counts, from the all-to-all's S (sent + kept, one copy per
routed expert; `collectives.ep_collectives`):
- inside a scale-up domain (NVLink), the rows a rank receives, one per (token, destination rank), its
  own included: S x rank_share (E[distinct ranks] / k; `collectives.rank_share`). DeepEP counts
  recv_x.numel() (deepseek-ai/DeepEP tests/test_intranode.py), HybridEP dispatched_hidden.numel()
  (tests/test_hybrid_ep.py), both x the format's bytes;
- across domains (RDMA), the rows a rank sends, one per (token, destination node), its own node included
  (DeepEP's num_rdma_token_sent, tests/test_internode.py; its README: "the results are logical
  bandwidth"): S x nic_share (`collectives.node_share`; nodes/(nodes - 1) times the remote nodes, which
  is S x nic_share exactly).
A token reaches as many ranks and nodes as the model's routing gives (uniform, `routing`), not the
benchmark's (DeepEP's internode test limits each token to 4 nodes, as DeepSeek-V3 does): the bytes are
the model's, the rate the benchmark's.

Rates, GB/s per rank (dispatch, combine), at the SM count the benchmark ran, on the device it ran:
- DeepEP normal kernels (deepseek-ai/DeepEP README, 'Normal kernels with NVLink and RDMA forwarding',
  H800, 4096 tokens per batch, hidden 7168, top-8, FP8 dispatch, BF16 combine; 24 SMs, the README's
  Buffer.set_num_sms(24)): EP 8 over NVLink 153 / 158; EP 16, 32, 64 over one CX7 400 Gb/s NIC per GPU
  43 / 43, 58 / 57, 51 / 50. Megatron-Core runs DeepEP at moe_deepep_num_sms = 20 (NVIDIA/Megatron-LM
  megatron/core/transformer/transformer_config.py): no published figure at 20 SMs, so the 24-SM rate
  stands (a stated stand-in, optimistic where the kernel is SM-bound).
- HybridEP (deepseek-ai/DeepEP Hybrid-EP_Implementation.md, the hybrid-ep branch of pull request #420;
  4096 tokens per rank, hidden 7168, top-8, 8 local experts, uniform random routing; 'Torch API',
  what Megatron calls, at 16 SMs, Megatron's moe_hybridep_num_sms = 16; BF16 dispatch, "algorithm
  bandwidth" on the rows received): GB200 NVL72 at 8, 16, 24, 32, 36 ranks 550.10 / 538.44,
  472.84 / 474.48, 441.89 / 444.40, 485.50 / 423.19, 469.96 / 418.27; B200 (HGX, 8 ranks)
  535.94 / 530.86; H100 over RDMA (one 400 Gb/s NIC per GPU; its rows per (token, destination node),
  the own node included "to align with the implementation in the DeepEP": tests/utils.py,
  count_rdma_send_from_routing_map) at 16, 32, 64 ranks 54.47 / 53.35, 47.36 / 52.53, 41.24 / 46.57.
- DeepEP on B200 (the same document's DeepEP rows, Torch API, BF16, 8 ranks, at DeepEP's README SM
  count, 24): 494 / 420.
A row applies to the devices of its generation and fabric (`PLATFORM`): DeepEP's H800 rows to every SM90
NVLink 4 node (H800, H100 SXM, H200, H20), scaled by the link's per-direction bandwidth over the H800's
(450 / 200 GB/s: the kernels reach the same share of the link, 0.765 / 0.79; DeepEP issue #16 measures
337 GB/s, 0.750, on H20's 18-link NVLink 4 at the test's default SM count), its RDMA rows to SM90 nodes
with the same 50 GB/s NIC, its B200 row to B200 and B300; HybridEP's GB200 rows to GB200 and GB300
(NVL72), its B200 row to B200 and B300 (HGX), its H100 RDMA rows to SM90 nodes with the same NIC
(Megatron Bridge runs DeepEP on neither GB200 nor GB300: NVIDIA-NeMo/Megatron-Bridge issue #5992). A group of n ranks takes the row of the largest measured rank count <= n (GB200's 36 for EP 64
inside an NVL72: no published row beyond, an extrapolation, stated); fewer ranks than measured, another
generation or fabric, or no row: None, and the dispatch is priced by NCCL's model as before
(efficiency.collective, a stated stand-in). Each format is priced at its table's rate (DeepEP's FP8
dispatch, HybridEP's BF16): the format changes the bytes, not the rate, here.

The SMs the kernels occupy (`SMS`) are the GEMMs' loss where the recipe overlaps the dispatch with
compute (train_time's overlap_ep): for the time c the EP collectives run, the compute gets N - s of the
device's N SMs, so a phase of compute g takes max(c, g + c s / N) and the collectives' exposed share is
max(c - g, c s / N) (`sm_share`, train_time._pass_of). Without the overlap the kernels run alone and
their SMs cost nothing beyond their time.
"""

# SMs each backend's kernels occupy while they run, as Megatron-Core runs them (NVIDIA/Megatron-LM
# megatron/core/transformer/transformer_config.py: moe_deepep_num_sms = 20, moe_hybridep_num_sms = 16;
# DeepSeek-V3's own dispatch kernels likewise take 20 SMs, arXiv:2412.19437 section 3.2.2).
SMS = {"deepep": 20, "hybridep": 16}

DEEPEP_SOURCE = ("deepseek-ai/DeepEP README, 'Normal kernels with NVLink and RDMA forwarding' (H800, 24 SMs; "
                 "commit 0aaa6744)")
HYBRIDEP_SOURCE = ("deepseek-ai/DeepEP Hybrid-EP_Implementation.md (hybrid-ep branch, pull request #420): "
                   "HybridEP Torch API, 16 SMs, BF16 dispatch")

# (backend, measured platform, tier) -> (the measured link's per-direction GB/s, ((ranks, dispatch GB/s,
# combine GB/s), ...) ascending)
RATES = {
    ("deepep", "h800", "up"): (200.0, ((8, 153.0, 158.0),)),
    ("deepep", "h800", "out"): (50.0, ((16, 43.0, 43.0), (32, 58.0, 57.0), (64, 51.0, 50.0))),
    ("hybridep", "gb200", "up"): (900.0, ((8, 550.10, 538.44), (16, 472.84, 474.48), (24, 441.89, 444.40),
                                          (32, 485.50, 423.19), (36, 469.96, 418.27))),
    ("hybridep", "b200", "up"): (900.0, ((8, 535.94, 530.86),)),
    ("hybridep", "h100", "out"): (50.0, ((16, 54.47, 53.35), (32, 47.36, 52.53), (64, 41.24, 46.57))),
    ("deepep", "b200", "up"): (900.0, ((8, 494.0, 420.0),)),
}
# backend -> device -> the platform its rows were measured on (same GPU generation and fabric)
PLATFORM = {
    "deepep": {"h800": "h800", "h100-sxm": "h800", "h200": "h800", "h20": "h800", "b200": "b200", "b300": "b200"},
    "hybridep": {"gb200": "gb200", "gb300": "gb200", "b200": "b200", "b300": "b200",
                 "h100-sxm": "h100", "h200": "h100", "h800": "h100", "h20": "h100"},
}


def sm_share(dispatcher, device_id):
    """s / N: the share of the device's SMs the backend's kernels occupy (`SMS`, efficiency.matmul.SMS),
    0 for NCCL's all-to-all (no published SM count used) or a device without a published SM count."""
    from .matmul import SMS as DEVICE_SMS

    n = DEVICE_SMS.get(device_id)
    return SMS[dispatcher] / n if dispatcher in SMS and n else 0.0


def rate(dispatcher, device_id, link, tier, ranks, direction):
    """Bytes/s per rank the backend `dispatcher` reaches for `direction` ("dispatch" or "combine") over
    `ranks` ranks on `link` of tier `tier` (the module docstring), or None where no published row applies."""
    platform = PLATFORM.get(dispatcher, {}).get(device_id)
    measured = RATES.get((dispatcher, platform, tier))
    if measured is None or link is None:
        return None
    link_gbps, rows = measured
    got = [row for row in rows if row[0] <= ranks]
    if not got:
        return None
    gbps = got[-1][1 if direction == "dispatch" else 2]
    return gbps * 1e9 * (link.bytes_per_s / (link_gbps * 1e9))


def counted_bytes(c):
    """The bytes a backend's benchmark counts for one run of the all-to-all `c` (module docstring):
    S x rank_share inside a domain, S x nic_share across domains."""
    return c.bytes * (c.rank_share if c.tier == "up" else c.nic_share)


def direction(c):
    """"combine" for an EP combine all-to-all (`collectives.ep_collectives` names it), else "dispatch"."""
    return "combine" if "combine" in c.name else "dispatch"


def seconds(c, links, device_id, dispatcher):
    """Seconds of one run of the EP all-to-all `c` by `dispatcher` at its published rate
    (counted bytes x skew / rate), or None where no row applies (NCCL's model prices it). The caller
    names the dispatcher for the EP collectives only (train_time.run_s)."""
    if dispatcher not in PLATFORM or c.kind != "all_to_all":
        return None
    link = links.get(c.tier)
    r = rate(dispatcher, device_id, link, c.tier, c.group, direction(c))
    if r is None:
        return None
    return counted_bytes(c) * c.skew / r

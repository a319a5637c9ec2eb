"""The conventions, definitions and options `parallel` states in every record."""

PARALLEL_CONVENTIONS = (
    "Devices = tp x pp x dp x cp; expert parallelism is carved out of the tp x dp devices of a "
    "stage (EP ranks from the TP group first, then from data-parallel replicas); each device "
    "runs its shard (the layout library's placement rules, docs/layout.md).",
    "Batch B = concurrent requests per model replica (one DP replica); the cluster carries "
    "dp x B. The replica's B requests run in m micro-batches of B/m (default m = gcd(B, pp)).",
    "Per device and phase (the estimate): the operator-sum roofline of its shard (the sum of "
    "per-operator roofline times, decode steps in closed form) plus exposed communication: all of "
    "it by default; with --overlap the part exceeding the shard's roofline time (hidden up to that "
    "time). The lower bound beside it is defined in the output.",
    "Pipeline: a micro-batch's pass takes L = sum of stage times + (pp - 1) boundary transfers; "
    "TTFT of the batch = L + (m - 1) x the slowest stage; a decode step recurs every "
    "max(L, m x slowest stage) (the TPOT); bubble = the slowest stage's idle share of that cycle. "
    "Summed over decode steps these maxima are taken of the sums (shorter, for the estimate and the "
    "lower bound alike).",
    "Data parallelism: replicas share nothing; cluster tokens/s = dp x a replica's; per device = "
    "cluster / devices.",
    "Collectives per micro-batch pass (collectives.py, costed by comm.py on the tier the group "
    "spans): TP 2 all-reduces of [tokens, hidden] per layer (SP: reduce-scatter + all-gather), "
    "the vocab-parallel embedding's all-reduce and the head's logits all-gather; EP (the convention "
    "train shares, collectives.moe_collectives, Megatron-LM's all-to-all token dispatcher): "
    "dispatch and combine all-to-all per MoE layer, each TP rank sending its 1/tp slice of the "
    "replica's tokens, plus an all-gather and a reduce-scatter over the expert-TP group when "
    "ep < tp; an MoE layer under EP keeps its TP reduction only with shared experts or without "
    "SP; PP (collectives.pp_boundary_collectives, Megatron's scatter/gather): per boundary each "
    "TP rank sends its 1/tp slice of [tokens, hidden], and without SP the receiving stage "
    "all-gathers it over TP; CP in prefill the ring pass of K/V shards (cp - 1 per "
    "layer), in decode one all-reduce of [B, hidden] per cache-keeping layer to merge the "
    "ranks' partial attention.",
    "Context parallelism: the prompt is split contiguously, ceil(P/cp) tokens per rank; the "
    "last rank (the most causal pairs) bounds the prefill; in decode every rank runs the new "
    "tokens' projections against its share of the history, ceil(H/cp) tokens (weights "
    "replicated over CP, like DP); recurrent (linear-attention) layers' state hand-off between CP "
    "ranks is not charged.",
    "Capacity per stage as `kv`: weights + reserve + B x the cache of P + G - 1 tokens on that "
    "stage's layers (ceil((P + G - 1)/cp) tokens under CP); the binding stage fits the fewest. "
    "A layout that does not fit is a result with its shortfall; its times are computed as if "
    "memory were unlimited.",
)

ESTIMATE = (
    "Estimate (the 'latency' figures, what the search ranks): per stage the operator-sum roofline "
    "of its shard (each operator max(FLOPs / peak, bytes / bandwidth), summed) plus exposed "
    "communication, every collective with the --algorithm (ring by default) and none of it "
    "overlapped (with --overlap: max(roofline, communication)); PP boundary transfers on the "
    "critical path. Not a bound: real runs can beat it (fused kernels, overlapped communication, "
    "faster collective algorithms).")
LOWER_BOUND = (
    "Lower bound (the 'lower_bound' figures; no real run of this layout and batch can be faster, "
    "under the stated device peaks, bandwidths and link alpha-beta figures): per stage "
    "max(ideal, fastest communication), ideal = max(matrix FLOPs / matrix peak, vector FLOPs / "
    "vector peak, (weight bytes read + KV bytes read and written) / memory bandwidth) -- the "
    "units run in parallel, operators fuse, weights and cache are read once per pass -- and "
    "communication fully hidden under that work, or, where it exceeds it, the time of its "
    "collectives at comm.lower_bound_s: the fastest applicable algorithm (ring, tree, in-network, "
    "binomial; all-to-all with every send at once), and for a group spanning scale-up domains no "
    "faster than the physical floor (a domain's bytes through its NICs, a rank's through all its "
    "links); "
    "PP boundary transfers not charged; the same pipeline composition (a micro-batch crosses "
    "every stage; the slowest stage serves all m micro-batches; decode steps are sequential). "
    "Tokens/s figures under it are upper bounds.")
SERVING_LAYOUT = (
    "Serving-throughput bound on a layout: each distinct stage shard (its share of the weights, "
    "its memory beside them and the reserve for the caches of its layers) goes through decode's "
    "serving bound below; a replica serves at most its slowest stage's rate, the cluster dp "
    "replicas' (requests/s = output tokens/s / G). Communication is not charged (hidden "
    "entirely), so it stays an upper bound. Under context parallelism a stage's bound is its CP "
    "group's: the cp devices holding one shard taken as one device of cp x its cache room, peaks "
    "and bandwidth, charged every request's whole work and one weight read a step (CP moves a "
    "request's work between the ranks, it adds none, so this bounds any split).")

LEFT_OUT = (
    "Neither the estimate nor the lower bound charges scheduling, kernel launch and "
    "synchronisation, host work, NCCL's fixed per-call latency, uneven "
    "routing beyond the routing model, or activation memory beyond the reserve; the estimate is "
    "therefore not an upper bound either.",
    "Decode steps of a pipeline are composed from sums over the steps; the per-step maxima "
    "(slowest stage, exposed communication under --overlap) are taken of the sums, which can "
    "only shorten the time.",
)

OBJECTIVES = ("throughput", "ttft", "tpot", "predicted")
CP_SPLITS = ("contiguous", "zigzag")   # --cp-split
ALGORITHMS = ("ring", "binomial", "best")   # --algorithm
LOGITS_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}   # --logits-dtype: bytes per gathered logit
PP_SENDS = ("slice", "replicated")   # --pp-send


def comm_conventions(plan):
    algo = {"ring": "ring for every collective (nccl-tests' formulas)",
            "binomial": "the book's unsegmented binomial tree for every all-reduce (2 ceil(log2 n) rounds "
                        "of the whole buffer; wire bytes are the busiest rank's, ceil(log2 n) S), ring for "
                        "the other collectives",
            "best": "the fastest applicable algorithm per collective (ring, tree, in-network, direct "
                    "all-to-all; across scale-up domains also two-level and NVLS-tree), as NCCL's "
                    "tuner"}[plan.algorithm]
    zigzag = ("Context parallelism, --cp-split zigzag (load-balanced causal split, as Megatron-LM's "
              "context parallelism): the prompt in 2 x cp chunks of P/(2cp), rank r holding chunks r and "
              "2cp-1-r; every rank does 1/cp of the prompt's causal pairs, costed as one pass of P/cp "
              "tokens after (cp-1) P/(2cp) (the same pairs); this replaces the contiguous split above "
              "for the prefill (decode and capacity unchanged).",)
    logits = (f"Head logits on the wire as {plan.logits_dtype} (--logits-dtype; {LOGITS_BYTES.get(plan.logits_dtype)} "
              "bytes per logit; the book's dense communication path gathers FP32 logits) instead of the "
              "activation format.",)
    replicated = ("PP boundary, --pp-send replicated (the book's basic placement): without SP every TP rank "
                  "sends the whole replicated [tokens, hidden] to its matching rank of the next stage, one "
                  "point-to-point send and no all-gather (the same bytes per rank as the scatter/gather, one "
                  "step instead of tp); this replaces the PP convention above.",)
    return ((f"Collective time: alpha-beta on the tier the group spans (comm.py, docs/communication.md), "
             f"{algo}; a group fitting one scale-up domain of {plan.domain} devices uses the scale-up link; "
             "a wider one, g of its ranks in each domain, uses their g NICs at once (one ring per rail) and "
             "the scale-up link among those g.",) + (zigzag if plan.cp_split == "zigzag" else ())
            + (logits if plan.logits_dtype else ()) + (replicated if plan.pp_send == "replicated" else ()))

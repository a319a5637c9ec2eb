"""Mixture of experts: a router, E routed experts (top-k per token), optional
shared experts.

The router weight has its own role ("router") so a checkpoint that quantizes
the other matrices but keeps the router in BF16 (DeepSeek-V3) can say so.

Per token: router 2*hidden*E matrix FLOPs; each of the k chosen experts runs a
gated MLP, 2*3*hidden*I; shared experts run on every token. The k expert
outputs are weighted and summed (`experts.combine`, 2 vector FLOPs per routed
value; it reads the k outputs and the k routing weights of each token) and the shared experts' output is added to that sum (`shared.add`, 1
per element; Qwen3-Next first scales it by sigmoid(x . w_gate), one gate per
token: 3 per token and 2 per element). Expert weights are
read once per pass for each expert the batch touches. With N tokens each
choosing k of E experts, the routing model gives the expected number touched:
- uniform: E * (1 - (1 - k/E)^N) (each token picks k distinct experts at random);
- balanced: min(E, N*k) (tokens spread evenly over experts);
- concentrated: k (every token picks the same experts);
- histogram: sum_i 1 - (1 - p_i)^N with p_i = min(1, k * load_i / sum(load)).
An expectation is rarely whole: it is rounded up to whole experts, so weight
bytes stay exact integers and never undercount.
Training keeps: the router's input (shared by the shared experts and their
gate), the routing scores, each routed copy's input to gate_proj (shared by
up_proj), the activation's inputs and its routing weight and down_proj's input
per routed copy, the shared experts' like a dense MLP, and the sigmoid gate's
output and the shared output it scales. The combine keeps nothing: the routing
weight's gradient <dy, W_down a> = <W_down^T dy, a> needs only the activation's
output a, which down_proj keeps (or the activation recomputes), as
Megatron-Core's grouped experts apply the weights inside the activation
(weighted_bias_swiglu_impl, megatron/core/transformer/moe/experts.py). FLOPs
count the forward as written, the weighting in the combine. Per device these follow the shard's
routed copies (the n*k copies of its tokens split min(tp, ep) ways).
"""

import math

from ..arch import Block, Tensor
from ..errors import UserError
from ..ops import VECTOR_FLOPS, Op, elementwise, gemm, saved_inputs, train_count, train_rule
from ..splits import ceil_div, expert_tp

from ..workload import ROUTING_MODELS  # noqa: F401  (re-exported: the routing models below)
ROUTER_FLOPS_PER_SCORE = 5   # score function (softmax or sigmoid) and top-k selection


def _ceil_expectation(x):
    """Round an expected count up, ignoring float noise below 1e-9."""
    nearest = round(x)
    return nearest if abs(x - nearest) < 1e-9 else math.ceil(x)


def experts_touched(routing, experts, top_k, tokens, loads=()):
    """Expected distinct experts hit by `tokens` tokens, rounded up."""
    if tokens == 0:
        return 0
    if routing == "concentrated":
        return top_k
    if routing == "balanced":
        return min(experts, tokens * top_k)
    if routing == "uniform":
        return _ceil_expectation(experts * (1 - (1 - top_k / experts) ** tokens))
    if routing == "histogram":
        if len(loads) != experts:
            raise UserError(f"routing histogram has {len(loads)} entries; this model has {experts} experts per layer")
        total = sum(loads)
        probs = [min(1.0, top_k * load / total) for load in loads]
        return _ceil_expectation(sum(1 - (1 - p) ** tokens for p in probs))
    raise UserError(f"unknown routing model '{routing}'")



def train_router(rows, experts, k, hashed):
    """The book's training count of DeepSeek-V4's router over R rows (sqrt(softplus) scores, the
    k chosen weights normalized and scaled; bojieli/ai-infra-book:calculations/research/
    v4-hc-training-completion, results/v4-training-primitives-*.md): forward per row the sum of
    the k chosen scores (k - 1), their division and route scale (2k), and where the scores choose
    (not a hash layer) the E bias adds; E softplus and E sqrt. Backward per row 5k - 1 over the
    chosen and 3E for the sqrt(softplus) derivative, with E sigmoids. Nothing kept here (the
    router GEMM keeps its input)."""
    return train_count(rows * (3 * k - 1) + (0 if hashed else rows * experts), rows * (5 * k - 1 + 3 * experts),
                       backward_specials={"sigmoid": rows * experts}, softplus=rows * experts,
                       sqrt=rows * experts)


class MoE(Block):
    history_independent = True   # no cache, no position (see Block)
    hidden: int
    experts: int
    top_k: int
    expert_inter: int
    shared_inter: int = 0        # total intermediate size of the shared expert(s)
    act: str = "swiglu"
    router_bias: bool = False    # bias on the router linear (GPT-OSS)
    expert_bias: bool = False    # biases on every expert projection (GPT-OSS)
    score_bias: bool = False     # e_score_correction_bias per expert (DeepSeek-V3)
    shared_gate: bool = False    # sigmoid gate [1, hidden] on the shared expert (Qwen3-Next)
    shared_name: str = "shared_experts"  # checkpoint module name (Qwen3-Next: shared_expert)
    hash_vocab: int = 0          # hash routing (DeepSeek-V4 hash layers): a [vocab, top_k] int64 table
    scoring: str = ""            # the router's score function where a book rule needs it ("sqrtsoftplus": V4)
    vl_bias: bool = False        # a second fp32 score bias per expert, gate.bias_vl (DeepSeek-V4.1; not
                                 # used by text routing: a parameter, no operator)
                                 # tid2eid picks each token's experts by token id (no score bias)
    prefix: str = "mlp"
    tp: int = 1                  # placement (set by `shard`): the layout's TP degree
    ep: int = 1                  # placement: expert-parallel degree; experts / ep held here

    @property
    def label(self):
        shared = f" + shared {self.shared_inter}" if self.shared_inter else ""
        where = f" ({self.local_experts} local, EP {self.ep})" if self.ep > 1 else ""
        return f"MoE {self.experts}x{self.expert_inter} top-{self.top_k}{shared}{where}"

    @property
    def local_experts(self):
        return self.experts // self.ep

    def shard(self, tp, ep=1):
        """One device of a TP x EP layout: experts / ep local routed experts
        (EP ranks taken from the TP group first, then from DP replicas: see
        `splits.expert_tp`), each expert's gate/up split by columns and down by rows
        over the expert TP degree (biases alike; the down bias replicated);
        shared experts TP-split over tp like a dense MLP; the router and its
        biases replicated. Routed token copies per device: the n*k copies of the
        device's tokens split min(tp, ep) ways (uniform in expectation)."""
        if self.tp != 1 or self.ep != 1:
            raise UserError(f"{self.label} is already a shard")
        if self.experts % ep:
            raise UserError(f"EP {ep} does not divide the {self.experts} routed experts of {self.label}")
        if (tp % ep if ep <= tp else ep % tp):
            raise UserError(f"EP {ep} and TP {tp}: one must divide the other (EP ranks are taken "
                            "from the TP group first, then from data-parallel replicas)")
        etp = expert_tp(tp, ep)
        if self.expert_inter % etp:
            raise UserError(f"expert TP {etp} does not divide the expert intermediate size "
                            f"{self.expert_inter} of {self.label}")
        if self.shared_inter % tp:
            raise UserError(f"TP {tp} does not divide the shared-expert intermediate size "
                            f"{self.shared_inter} of {self.label}")
        return self.replace(expert_inter=self.expert_inter // etp,
                            shared_inter=self.shared_inter // tp, tp=tp, ep=ep)

    def _router(self):
        p = self.prefix
        out = [Tensor(f"{p}.gate.weight", (self.experts, self.hidden), "router")]
        if self.router_bias:
            out.append(Tensor(f"{p}.gate.bias", (self.experts,), "vector"))
        if self.score_bias:
            out.append(Tensor(f"{p}.gate.e_score_correction_bias", (self.experts,), "vector", stored="fp32"))
        if self.hash_vocab:
            out.append(Tensor(f"{p}.gate.tid2eid", (self.hash_vocab, self.top_k), "table", stored="int64"))
        if self.vl_bias:
            out.append(Tensor(f"{p}.gate.bias_vl", (self.experts,), "vector", stored="fp32"))
        return out

    def _expert(self):
        """One routed expert's tensors (stacked over E in `tensors`)."""
        p, h, i = self.prefix, self.hidden, self.expert_inter
        out = [Tensor(f"{p}.experts.gate_proj.weight", (i, h), "expert"),
               Tensor(f"{p}.experts.up_proj.weight", (i, h), "expert"),
               Tensor(f"{p}.experts.down_proj.weight", (h, i), "expert")]
        if self.expert_bias:
            out += [Tensor(f"{p}.experts.gate_proj.bias", (i,), "vector"),
                    Tensor(f"{p}.experts.up_proj.bias", (i,), "vector"),
                    Tensor(f"{p}.experts.down_proj.bias", (h,), "vector")]
        return out

    def _shared(self):
        if not self.shared_inter:
            return []
        p, h, i = self.prefix, self.hidden, self.shared_inter
        s = f"{p}.{self.shared_name}"
        out = [Tensor(f"{s}.gate_proj.weight", (i, h)), Tensor(f"{s}.up_proj.weight", (i, h)),
               Tensor(f"{s}.down_proj.weight", (h, i))]
        if self.shared_gate:
            out.append(Tensor(f"{p}.shared_expert_gate.weight", (1, h)))
        return out

    def tensors(self):
        stacked = [t.replace(shape=(self.local_experts,) + t.shape) for t in self._expert()]
        return tuple(self._router() + stacked + self._shared())

    def active_params(self):
        one = sum(t.params for t in self._expert())
        return (sum(t.params for t in self._router()) + self.top_k * one
                + sum(t.params for t in self._shared()))

    def experts_read(self, w, positions):
        """Local experts a pass of `positions` tokens reads on this device: the experts touched by
        the tokens the EP group routes (ep / tp replicas' tokens when ep > tp), this device's 1/ep
        share of them, rounded up, at most its local experts."""
        group = positions * max(1, self.ep // self.tp)
        touched = experts_touched(w.routing, self.experts, self.top_k, group, w.routing_loads)
        return min(self.local_experts, ceil_div(touched, self.ep))

    def ops(self, w):
        n, h, e, k, i = w.positions, self.hidden, self.experts, self.top_k, self.expert_inter
        ways = min(self.tp, self.ep)
        routed = ceil_div(n * k, ways)   # this device's share of the routed copies
        router = self._router()
        table = router[-2 if self.vl_bias else -1] if self.score_bias or self.hash_vocab else None
        if self.hash_vocab:   # the token ids' rows of tid2eid replace the top-k choice
            table = table.replace(shape=(min(n, self.hash_vocab), k))
        out = [gemm(w, "router", n, router[0], router[1] if self.router_bias else None, replicated=True),
               Op("routing", "vector", f"[{n},{e}] " + (f"hash: tid2eid rows" if self.hash_vocab else f"top-{k}"),
                  vector_flops=n * e * ROUTER_FLOPS_PER_SCORE,
                  weight_read=w.weight_bytes(table) if table is not None else 0,
                  act_read=w.act_dtype.nbytes_flat(n * e),
                  kind="routing", weight=table.name if table is not None else "",
                  saved_bytes=saved_inputs(w, n * e),
                  book_train=train_rule(train_router, n, e, k, bool(self.hash_vocab))
                  if self.scoring == "sqrtsoftplus" else None)]
        touched = self.experts_read(w, n)
        local = self.local_experts
        gate, up, down = self._expert()[:3]
        biases = self._expert()[3:] if self.expert_bias else (None, None, None)
        for name, t, bias, saves in (("experts.gate_proj", gate, biases[0], True),
                                     ("experts.up_proj", up, biases[1], False)):
            op = gemm(w, name, routed, t, bias, shape=f"{routed} routed x [{h},{i}], {touched}/{local} experts read",
                      saves_input=saves)
            out.append(op.replace(weight_read=op.weight_read * touched))
        out.append(elementwise(w, f"experts.{self.act}", routed * i, VECTOR_FLOPS[self.act], inputs=2,
                               shape=f"[{routed},{i}]", kind="activation",
                               saved=saved_inputs(w, routed * i, 2) + saved_inputs(w, routed)))
        op = gemm(w, "experts.down_proj", routed, down, biases[2],
                  shape=f"{routed} routed x [{i},{h}], {touched}/{local} experts read")
        out.append(op.replace(weight_read=op.weight_read * touched))
        combine = elementwise(w, "experts.combine", routed * h, VECTOR_FLOPS["moe_combine"],
                              shape=f"[{n},{k},{h}] -> [{n},{h}]")
        # reads the k expert outputs per token and their k routing weights; writes one row
        out.append(combine.replace(act_read=combine.act_read + w.act_dtype.nbytes_flat(routed),
                                   act_write=w.act_dtype.nbytes_flat(n * h)))
        shared = self._shared()
        if shared:
            out += [gemm(w, "shared.gate_proj", n, shared[0], saves_input=False),
                    gemm(w, "shared.up_proj", n, shared[1], saves_input=False),
                    elementwise(w, f"shared.{self.act}", n * self.shared_inter, VECTOR_FLOPS[self.act],
                                inputs=2, shape=f"[{n},{self.shared_inter}]", kind="activation",
                                saved=saved_inputs(w, n * self.shared_inter, 2)),
                    gemm(w, "shared.down_proj", n, shared[2])]
            add = elementwise(w, "shared.add", n * h, VECTOR_FLOPS["residual"], inputs=2,
                              shape=f"[{n},{h}] + [{n},{h}]", kind="residual")
            if self.shared_gate:
                out += [gemm(w, "shared.gate", n, shared[3], saves_input=False),
                        elementwise(w, "shared.sigmoid", n, VECTOR_FLOPS["sigmoid"], shape=f"[{n},1]",
                                    kind="activation", saved=saved_inputs(w, n))]
                add = add.replace(vector_flops=n * h * VECTOR_FLOPS["gated_add"],
                                  act_read=add.act_read + w.act_dtype.nbytes_flat(n),
                                  shape=f"[{n},{h}] + sigmoid gate [{n},1] x [{n},{h}]",
                                  kind="elementwise", saved_bytes=saved_inputs(w, n * h))
            out.append(add)
        return out

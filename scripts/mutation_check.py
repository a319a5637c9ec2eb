"""Mutation check of the parallel and train math: each mutant is a one-line change of a formula
(a file, the exact text it replaces, the text it puts in); the unit tests of those commands
must fail on every one. Runs on a copy of calculations/ and tests/ (the tree is never
touched), one mutant at a time, and prints each mutant's verdict and the count caught.

    python3 scripts/mutation_check.py            # every mutant (about 15 s each)
    python3 scripts/mutation_check.py --match pipeline

A mutant that escapes is a formula no unit test pins: add an exact, hand-derived test for it.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = "calculations/infracalc/"

# The unit tests of the multi-device and training math (no stored-result comparison).
TESTS = ("test_parallel test_parallel_bound test_parallel_independent test_parallel_options test_parallel_speed "
         "test_search_prune test_search_size test_search_predicted test_train test_train_acceptance "
         "test_train_bound test_train_flops test_train_formulas test_train_memory test_comm test_comm_across "
         "test_comm_convention test_layout test_collective_command test_published_recipes test_moe "
         "test_mla test_collective_pins test_train_pins test_one_vocabulary test_predicted_ceiling "
         "test_collective_prediction test_book_train test_prediction test_efficiency test_trtllm_bench "
         "test_parallel_predicted test_first_screen_predicted test_dispatcher test_attention_rates").split()

# (file under calculations/infracalc/, text replaced (exactly once), replacement, what it breaks)
MUTANTS = (
    # parallel's predicted figure per stage (analyses/parallel/predicted.py)
    ("analyses/parallel/predicted.py", "total += count * unit_s(", "total += unit_s(", "predicted stage: count x each layer"),
    ("analyses/parallel/predicted.py", "return runs * collective.seconds(", "return collective.seconds(", "predicted collective runs"),
    ("analyses/parallel/predicted.py", '"total" if phase == "decode" else phase', 'phase', "predicted decode phase sums every step"),
    # pipeline composition (analyses/parallel/pipeline.py)
    ("analyses/parallel/pipeline.py", "+ (pp - 1) * transfer_s", "+ pp * transfer_s", "pass: pp-1 boundary transfers"),
    ("analyses/parallel/pipeline.py", '"ttft_s": L + full - slowest', '"ttft_s": L + full', "prefill TTFT of m micro-batches"),
    ("analyses/parallel/pipeline.py", "1 - full / (L + full - slowest) if L", "1 - full / (L + full) if L", "prefill bubble"),
    ("analyses/parallel/pipeline.py", "cycle = max(L, full)", "cycle = full", "decode cycle max(L, m x slowest)"),
    ("analyses/parallel/pipeline.py", "e2e = batch * plan.G / total", "e2e = batch * plan.steps / total", "end-to-end tokens G"),
    ("analyses/parallel/pipeline.py", '"tpot_mean_s": dec / steps if', '"tpot_mean_s": dec / plan.G if', "mean TPOT over G-1 steps"),
    ("analyses/parallel/pipeline.py", '"decode_tokens_per_s_per_device": rate * dp / n', '"decode_tokens_per_s_per_device": rate / n', "per-device decode rate"),
    ("analyses/parallel/pipeline.py", "else math.gcd(batch, lay.pp)", "else min(batch, lay.pp)", "micro-batches gcd(B, pp)"),
    ("analyses/parallel/pipeline.py", "    c = ceil_div(plan.P, lay.cp)\n", "    c = plan.P // lay.cp\n", "prompt tokens per CP rank"),
    ("analyses/parallel/pipeline.py", "xc, xs = transfer(plan, lay, b * c)", "xc, xs = transfer(plan, lay, b * plan.P)", "prefill boundary tokens b ceil(P/cp)"),
    ("analyses/parallel/pipeline.py", "transfer_s=xs * runs,", "transfer_s=xs,", "decode boundary transfers per step"),
    # per-part costs (analyses/parallel/costs.py)
    ("analyses/parallel/costs.py", "return [(2 * h, (cp - 1) * h)]", "return [(2 * h, cp * h)]", "zig-zag rank history"),
    ("analyses/parallel/costs.py", "return [(last, (cp - 1) * c)]", "return [(last, (cp - 1) * c - 1)]", "contiguous last rank history"),
    ("analyses/parallel/costs.py", "x, y = lo - cp * (lo2 - 1) - 1, cp * hi2 - hi", "x, y = lo - cp * (lo2 - 1), cp * hi2 - hi", "CP decode end correction"),
    ("analyses/parallel/costs.py", "plan.P, plan.P + plan.steps - 1", "plan.P, plan.P + plan.steps", "decode history range"),
    ("analyses/parallel/costs.py", "total = total.plus(unit_cost(plan, unit(plan, layer), w, spec)[i].times(count))", "total = total.plus(unit_cost(plan, unit(plan, layer), w, spec)[i])", "stage = top + count x layer"),
    # stage evaluation and communication (analyses/parallel/stage.py, communication.py)
    ("analyses/parallel/stage.py", "comm_s = plain_sum(times) * runs", "comm_s = plain_sum(times)", "collectives recur per decode step"),
    ("analyses/parallel/communication.py", "return max(roofline_s, comm_s) if plan.overlap", "return min(roofline_s, comm_s) if plan.overlap", "--overlap stage time"),
    ("analyses/parallel/stage.py", '(f("weight_read") + f("kv_read") + f("kv_write"))', '(f("weight_read") + f("kv_read"))', "ideal bytes include KV writes"),
    ("analyses/parallel/stage.py", "return ideal, fastest, max(ideal, fastest)", "return ideal, fastest, ideal", "stage lower bound max(ideal, comm)"),
    ("analyses/parallel/search.py", "        b *= 4\n", "        b *= 2\n", "search batches: powers of 4"),
    # collectives (collectives.py, analyses/stage_comm.py)
    ("collectives.py", "    s = tokens * hidden * act_bytes\n", "    s = tokens * hidden * 2\n", "TP buffer bytes"),
    ("collectives.py", "logits = head_tokens * vocab * (logits_bytes or act_bytes)", "logits = tokens * vocab * (logits_bytes or act_bytes)", "head logits gather of the last positions"),
    ("collectives.py", "copies = ceil_div(tokens * top_k, share)", "copies = tokens * top_k // share", "EP copies rounded up"),
    ("collectives.py", '"all_gather", etp * dispatch.bytes,', '"all_gather", dispatch.bytes,', "expert-TP gather etp x S"),
    ("collectives.py", "pp_collectives(1, ceil_div(tokens * hidden, tp), act_bytes, 1, tier_pp)", "pp_collectives(1, tokens * hidden, act_bytes, 1, tier_pp)", "PP send 1/tp slice"),
    ("collectives.py", "count=(cp - 1) * layers, dim=\"cp\"", "count=cp * layers, dim=\"cp\"", "CP ring cp-1 steps"),
    ("collectives.py", '"all_gather", params, 2)]', '"all_gather", params, 1)]', "ZeRO-3 gathers forward and backward"),
    ("collectives.py", "    return bool(shared) or not sp\n", "    return bool(shared)\n", "MoE keeps TP reduction without SP"),
    ("analyses/stage_comm.py", "vocab=lay.tp * ceil_div(arch.vocab_size, lay.tp)", "vocab=arch.vocab_size", "padded vocabulary"),
    ("analyses/stage_comm.py", 'lay.group_stride("pp") + 1 if d == "pp"', 'lay.group_stride("pp") if d == "pp"', "PP pair span"),
    ("analyses/stage_comm.py", "tokens * t.hidden * t.act_bytes, cp, cp_tier", "tokens * t.hidden, cp, cp_tier", "CP decode merge bytes"),
    # alpha-beta costing (comm.py)
    ("comm.py", "        return 2 * (n - 1) / n\n", "        return (n - 1) / n\n", "all-reduce bus factor"),
    ("comm.py", "        return 2 * (n - 1)\n", "        return n - 1\n", "all-reduce ring steps"),
    ("comm.py", "max(1 / (g * b_o), inside)", "1 / (g * b_o)", "ring across domains: inside traffic"),
    # train collectives and step time (analyses/train_time.py)
    ("analyses/train_time.py", "CE_ALLREDUCES = 3 ", "CE_ALLREDUCES = 2 ", "three cross-entropy all-reduces"),
    ("analyses/train_time.py", '"all_reduce", tokens * 4, tp, t_tp', '"all_reduce", tokens * 2, tp, t_tp', "CE all-reduce fp32 per token"),
    ("analyses/train_time.py", "count=2 * c.count), \"backward\")", "count=c.count), \"backward\")", "CP backward K/V and dK/dV"),
    ("analyses/train_time.py", "out += [(c, \"recompute\")] if level != \"none\"", "out += [(c, \"recompute\")] if level == \"full\"", "CP ring recomputed under selective"),
    ("analyses/train_time.py", "    return chunks - (1 if at_end else 0)\n", "    return 1\n", "PP sends per chunk"),
    ("analyses/train_time.py", "    return 2 + (level == \"full\")\n", "    return 2\n", "layer collectives re-run by full recompute"),
    ("analyses/train_time.py", "rest = plain_sum(t.total for t in times) - tb.total", "rest = plain_sum(t.total for t in times)", "1F1B bubble"),
    ("analyses/train_time.py", "return rest / chunks, ", "return rest, ", "interleaved bubble / v"),
    ("analyses/train_time.py", "(pp - 1) * (f + b - 2 * w)", "(pp - 1) * (f + b - w)", "zero-bubble ZB-H1 bubble"),
    ("analyses/train_time.py", "(pp // 2 - 1) * ((f + b) + b - 3 * w)", "(pp // 2) * ((f + b) + b - 3 * w)", "DualPipe bubble"),
    ("analyses/train_time.py", "r.memory_s(updated * (2 * optimizer_bytes", "r.memory_s(updated * (optimizer_bytes", "optimizer update bytes"),
    ("analyses/train_time.py", "(ceil_div(dense, lay.dp * lay.cp)", "(ceil_div(dense, lay.dp)", "ZeRO update share over dp x cp"),
    ("analyses/train_time.py", "sync = max(s.dp_exposed_s + s.optimizer_s for s in stages)", "sync = sum(s.dp_exposed_s + s.optimizer_s for s in stages)", "sync of the slowest stage"),
    ("analyses/train_time.py", "pipeline = m * times[b].total + bub", "pipeline = (m - 1) * times[b].total + bub", "pipeline m t_b + bubble"),
    ("analyses/train_time.py", "exposed += max(0.0, t.seconds - compute.forward)", "exposed += max(0.0, t.seconds - compute.backward)", "--overlap-dp: gathers under the forward"),
    ("analyses/train_time.py", "count=c.count * micro_batches)", "count=c.count)", "ZeRO-3 gathers every micro-batch"),
    ("analyses/train_time.py", "(fw + (fb - fw) / split) / bps)", "(fb / split) / bps)", "forward bytes: weights not split by CP"),
    ("analyses/train_time.py", "split = seq_split if seq else cp", "split = cp", "sequence-parallel rows split tp ways"),
    ("analyses/train_time.py", "0 if op.kind == \"memory\" else 2 * wb,", "0 if op.kind == \"memory\" else wb,", "backward reads the weights twice"),
    ("analyses/train_time.py", "weights = 2 * lay.micro_batches * shard", "weights = lay.micro_batches * shard", "step bound: weights read twice"),
    ("analyses/train_time.py", "ceil_div(w.positions, lay.cp), stage_comm.Traffic(", "w.positions, stage_comm.Traffic(", "tokens per CP rank in training"),
    ("analyses/train_time.py", "d, e = of(placement.stages(arch, lay)[lay.pp - 1 - st.index])", "d, e = of(placement.stages(arch, lay)[lay.pp - 1])", "DualPipe reverse stage"),
    # train memory (analyses/train_memory.py)
    ("analyses/train_memory.py", "ceil_div(g, dp) if zero >= 2", "ceil_div(g, dp) if zero >= 1", "ZeRO-2 shards gradients"),
    ("analyses/train_memory.py", "layout.tp * layout.dp * layout.cp // (layout.expert_tp", "layout.tp * layout.dp // (layout.expert_tp", "expert-DP group"),
    ("analyses/train_memory.py", "return min(pp - stage, micro_batches), 1", "return min(pp - stage + 1, micro_batches), 1", "1F1B micro-batches in flight"),
    ("analyses/train_memory.py", "held = 2 * (pp - stage - 1) + (chunks - 1) * pp + 1", "held = 2 * (pp - stage - 1) + (chunks - 1) * pp", "interleaved chunks in flight"),
    ("analyses/train_memory.py", "return unit * (2 * weight_bytes + grad_bytes)", "return unit * (weight_bytes + grad_bytes)", "FSDP gather buffers"),
    ("analyses/train_memory.py", "seq = ceil_div(replicated, tp) if sp else replicated", "seq = replicated", "SP splits the sequence region"),
    ("analyses/train_memory.py", "full = ceil_div(ceil_div(full_in, tp) if sp else full_in, cp)", "full = ceil_div(full_in, cp)", "full recompute keeps the input / tp under SP"),
    # train FLOPs (analyses/train_flops.py) and the train record (analyses/train.py)
    ("analyses/train_flops.py", "return Backward(2 * op.matrix_flops, op.vector_flops, 2 * op.bytes_moved)", "return Backward(op.matrix_flops, op.vector_flops, 2 * op.bytes_moved)", "GEMM backward 2x"),
    ("analyses/train_flops.py", "extra = op.matrix_flops if flash_recompute", "extra = op.matrix_flops // 2 if flash_recompute", "flash backward recomputes QK^T"),
    ("analyses/train_flops.py", "return Backward(0, w.positions * hidden, op.act_write", "return Backward(0, 0, op.act_write", "embedding scatter-add"),
    ("analyses/train_flops.py", "+ 6 * b * s * h * v", "+ 4 * b * s * h * v", "Megatron eq. 3 head term"),
    ("analyses/train_flops.py", "passes = 4 if recompute else 3", "passes = 3 if recompute else 3", "Megatron eq. 3 recompute passes"),
    ("analyses/train.py", "return global_batch // (dp * micro_batch)", "return global_batch // micro_batch", "micro-batches per step"),
    ("analyses/train.py", "steps = ceil_div(train_tokens, tokens)\n        out[\"train\"] =", "steps = train_tokens // tokens\n        out[\"train\"] =", "training steps rounded up"),
    # search floors (a floor above the exact value would prune a layout that belongs in the top)
    ("analyses/parallel/bound.py", "r = r * cp - first.time_s * x - last.time_s * y", "r = r * cp", "CP decode floor's end correction"),
    ("analyses/parallel/bound.py", "comms.stage_time(plan, max(R), min(C) if comm", "comms.stage_time(plan, max(R), max(C) if comm", "prefill floor takes the least collective time"),
    ("analyses/train_time.py", "return lay.micro_batches * max(c) + (rest", "return (lay.micro_batches + 1) * max(c) + (rest", "train step floor m x max c"),
    # the predicted search's ceiling (analyses/efficiency/serving.py): a floor above the iteration
    ("analyses/efficiency/serving.py", "                    token_flops += 2 * count * t.params", "                    token_flops += 3 * count * t.params", "2 FLOPs a parameter a position"),
    ("blocks/moe.py", "return min(self.local_experts, ceil_div(touched, self.ep))", "return self.local_experts", "only the experts touched are read"),
    ("analyses/efficiency/serving.py", 'getattr(b, "chunk", None)) - 1)', 'getattr(b, "chunk", None)))', "a decode reads the cached keys, not its own"),
    ("analyses/efficiency/serving.py", "        decodes = max(n * attention_pair_flops(arch, w, history, 1, readers) / rates.attention_flops_per_s,", "        decodes = (n * attention_pair_flops(arch, w, history, 1, readers) / rates.attention_flops_per_s +", "a group of rows takes max(compute, memory)"),
    ("analyses/efficiency/serving.py", "    m = math.ceil(n / lay.pp)\n    tokens", "    m = n\n    tokens", "a pipeline stage runs ceil(N / pp) requests"),
    # more train and parallel formulas
    ("analyses/parallel/costs.py", "return max(options, key=lambda o: o[0].time_s)", "return min(options, key=lambda o: o[0].time_s)", "slowest CP rank bounds the prefill"),
    ("analyses/parallel/pipeline.py", '"ttft_first_s": L,', '"ttft_first_s": L + slowest,', "first micro-batch's TTFT"),
    ("analyses/train_time.py", "p[phase] += max(0.0, tp[phase] - getattr(hide_tp_under, phase), ep[phase] * ep_sm_share)", "p[phase] += tp[phase]", "--overlap-tp hides TP under compute"),
    ("analyses/train_memory.py", "ModelStates(ceil_div(w, dp) if zero >= 3 else w,", "ModelStates(w,", "ZeRO-3 shards the weights"),
    ("collectives.py", 'return [c("DP gradient all-reduce", "all_reduce", grad_bytes)]', 'return [c("DP gradient all-reduce", "reduce_scatter", grad_bytes)]', "ZeRO-0 all-reduces the gradients"),
    ("splits.py", "return tp // ep if ep <= tp else 1", "return tp // ep if ep < tp else ep // tp", "expert TP 1 when ep >= tp"),
    ("analyses/stage_comm.py", "mlp = 1 if not moe or comm.moe_keeps_tp_reduction", "mlp = 0 if not moe or comm.moe_keeps_tp_reduction", "dense layer keeps its MLP all-reduce"),
    # the search skeleton (analyses/ranking.py)
    ("analyses/ranking.py", "rejections.add(e.reason, lay.label())", "rejections.add(str(e), lay.label())", "a missing tier counted by its one reason"),
    # serving memory (layout.py)
    ("layout.py", "    tokens = ceil_div(context, layout.cp)\n", "    tokens = context // layout.cp\n", "KV per CP rank ceil(context/cp)"),
    ("layout.py", "return self.weight_bytes + self.reserve_bytes + batch * self.kv_bytes_per_request", "return self.weight_bytes + batch * self.kv_bytes_per_request", "stage memory needs the reserve"),
    ("layout.py", "return self.group_stride(dim) * (self._size(dim) - 1) + 1", "return self.group_stride(dim) * self._size(dim)", "group span"),
    # session 6 (2026-12-03): the expert output bias, the host-link cap, the two-node tree, forced
    # NCCL_ALGO, the per-release expert host constant, the fit grids, would_fit's states floor, the
    # memoized per-block seconds, the book's training counting rules
    ("analyses/train_time.py", "return 6 * plane, 8 * plane", "return 6 * plane, 6 * plane", "expert bias backward 8 planes"),
    ("analyses/train_time.py", "copies = ceil_div(positions * block.top_k, min(block.tp, block.ep))\n    plane",
     "copies = ceil_div(positions * block.top_k, block.ep)\n    plane", "expert bias copies over min(tp, ep)"),
    ("analyses/train_time.py", "    f = r.memory_s(fwd / lay.cp)\n    return Pass(forward=f, backward=r.memory_s(bwd / lay.cp), recompute=f if",
     "    f = r.memory_s(fwd)\n    return Pass(forward=f, backward=r.memory_s(bwd / lay.cp), recompute=f if", "expert bias bytes per CP rank"),
    ("comm.py", "    if out.bytes_per_s <= host.bytes_per_s:\n        return capped", "    if True:\n        return capped", "NICs capped at the PCIe host link"),
    ("comm.py", "    t_m = 1 if m == 2 else 2\n", "    t_m = 2\n", "two-node tree carries S per direction"),
    ("comm.py", "return s * max(t_m / (g * b_o), 2 / b_u if g > 1", "return s * max(2 * t_m / (g * b_o), 2 / b_u if g > 1", "tree across domains t_m S / (g B_o)"),
    ("analyses/efficiency/collective.py", "PCI_NCCL_SHARE = 0.75", "PCI_NCCL_SHARE = 1.0", "NIC path at NCCL's PCIe figure"),
    ("analyses/efficiency/collective.py", "        names = [NCCL_ALGOS[forced]]", "        names = names", "a forced NCCL_ALGO prices that algorithm alone"),
    ("analyses/validate_predict.py", "got = EXPERT_HOST_FITTED.get(stack(case), {}).get(model_id(case))", "got = None",
     "expert host constant of the case's own stack"),
    ("analyses/train_time.py", "forward=max(0.0, host.forward - gpu.forward)", "forward=host.forward",
     "host exposed only beyond the MoE blocks' GPU time"),
    ("analyses/train_time.py", "            if not overlap_ep:   # the overlapped schedule's", "            if True:   # the overlapped schedule's",
     "host time in full under the overlapped schedule"),
    ("analyses/train_time.py", "                out = out + seconds_pass(list(rows)).times(count)\n    return out",
     "                out = out + seconds_pass(list(rows))\n    return out", "MoE blocks' GPU time over the stage's MoE layers"),
    ("analyses/validate_predict.py", 'or not recipe.get("per_expert_gemms") or case["setup"].get("overlap_ep"):',
     'or not recipe.get("per_expert_gemms"):', "overlapped-schedule cases out of the expert host fit"),
    ("analyses/validate_predict.py", "{src.get('title', '').split(',')[0]}", "{src.get('title', '')}",
     "one stack over a page's releases"),
    ("analyses/validate_predict.py", "round(i * 1e-5, 8) for i in range(61))", "round(i * 2e-5, 8) for i in range(31))", "expert host grid 10 us steps"),
    # the host step's floor under a serving iteration (analyses/efficiency/serving.py, fit.py)
    ("analyses/efficiency/serving.py", "    it = max(gpu + per_token_s(n) + host, floor)", "    it = gpu + per_token_s(n) + host", "grace host step floors the iteration"),
    ("analyses/efficiency/serving.py", "{(\"TensorRT-LLM\", \"Grace\"): 44.53e-3 / 1536}", "{(\"TensorRT-LLM\", \"Grace\"): 44.53e-3 / 1024}", "grace host step per request 44.53 ms / 1536"),
    ("analyses/efficiency/serving.py", "                   host_floor_s(engine, device, batch))", "                   0.0)", "grace host step at a batch"),
    ("analyses/efficiency/serving.py", "    it = max(pp * t + host, floor)", "    it = pp * t + host", "grace host step floors the pipeline"),
    ("analyses/efficiency/fit.py", "            errs[i] = s[4] / floor - 1", "            pass", "grace host step in the fit's errors"),
    ("analyses/efficiency/fit.py", "w[i] = 1 / (len(fams) * len(groups) * len(g))", "w[i] = 1 / len(fams)",
     "serving fit weighs each case, not each configuration"),
    ("analyses/efficiency/fit.py", "u = w / math.sqrt(r * r + DELTA * DELTA)", "u = w",
     "serving fit least squares instead of least absolute error"),
    ("analyses/efficiency/fit.py", "        if floor >= m:", "        if False:", "serving fit ignores a host step above the measurement"),
    ("analyses/efficiency/fit.py", "options = (None, 0.0) if u is None else (None, 0.0, u)", "options = (None, 0.0)",
     "serving fit's box without upper bounds"),
    ("analyses/train.py", "        if states_floor(mem, lay, s, change.get(\"zero\", s.zero)) > capacity:",
     "        if states_floor(mem, lay, s, change.get(\"zero\", s.zero)) > 0.5 * capacity:", "would_fit prunes by the states floor only"),
    ("analyses/train.py", "        states = [states[i] + states[lay.pp - 1 - i] for i in range(len(states))]", "        states = states",
     "DualPipe's floor adds the partner stage"),
    ("analyses/train_time.py", '("train seconds", b, w, r, cp, recompute, flash, sp_tp)', '("train seconds", b, w, r, cp, recompute, flash)',
     "per-block seconds memo keyed by sp_tp"),
    ("analyses/train_time.py", '("train seconds", b, w, r, cp, recompute, flash, sp_tp)', '("train seconds", b, w, r, recompute, flash, sp_tp)',
     "per-block seconds memo keyed by cp"),
    ("ops.py", "6 * rows * width + (2 * rows - 1) * width", "6 * rows * width + 2 * rows * width", "book RMSNorm backward 6RD + (2R - 1)D"),
    ("ops.py", "return train_count(4 * pairs - rows, 5 * pairs - rows,", "return train_count(4 * pairs - rows, 5 * pairs,", "book softmax backward 5K - 1"),
    ("analyses/train_book.py", "ADAMW_PER_PARAM = 14 ", "ADAMW_PER_PARAM = 13 ", "book AdamW 14 per parameter"),
    ("blocks/compressed_attention.py", "return train_count(4 * slots + 2 * rows,", "return train_count(4 * slots + rows,", "book window core 4P + 2Q"),
    ("blocks/moe.py", "rows * (5 * k - 1 + 3 * experts)", "rows * (5 * k + 3 * experts)", "book sqrt(softplus) router backward"),
    ("blocks/hyper_connections.py", "return train_count(rows * 2 * m * d, 0,", "return train_count(rows * m * d, 0,", "book mHC post forward"),
    ("blocks/compressed_attention.py", "return train_count(rows * (3 * width + 1), 5 * rows * width,", "return train_count(rows * (3 * width), 5 * rows * width,",
     "book weightless q_rms 3D + 1"),
    ("analyses/validate_predict.py", 'overlap_tp=s.get("overlap_tp", recipe["overlap_tp"])', 'overlap_tp=recipe["overlap_tp"]',
     "a case's own overlap_tp"),
    ("analyses/efficiency/collective.py", "A2A_NVLINK_BUSBW_GBPS.get(gen, ()) if n <= ranks]", "A2A_NVLINK_BUSBW_GBPS.get(gen, ()) if n < ranks]",
     "a2a rate of the largest measured count <= n"),
    ("analyses/validate_predict.py", '    return True, case["source"].get("url_or_ref") == collective.A2A_URL', "    return True, False",
     "in-sample cases by their publication"),
    # the flex dispatcher's backends at their published rates (analyses/efficiency/dispatcher.py, issue 18 item 4)
    ("analyses/efficiency/dispatcher.py", "return c.bytes * (c.rank_share if c.tier == \"up\" else c.nic_share)",
     "return c.bytes", "the rows a backend's benchmark counts"),
    ("analyses/efficiency/dispatcher.py", "got = [row for row in rows if row[0] <= ranks]",
     "got = [row for row in rows if row[0] < ranks]", "the row of the largest measured count <= n"),
    ("analyses/efficiency/dispatcher.py", "return gbps * 1e9 * (link.bytes_per_s / (link_gbps * 1e9))",
     "return gbps * 1e9", "a row scaled by the link over the measured platform's"),
    ("analyses/efficiency/dispatcher.py", "gbps = got[-1][1 if direction == \"dispatch\" else 2]", "gbps = got[-1][1]",
     "the combine's own rate"),
    ("analyses/efficiency/dispatcher.py", "return counted_bytes(c) * c.skew / r", "return counted_bytes(c) / r",
     "the busiest rank's skew"),
    ("analyses/efficiency/dispatcher.py", 'SMS = {"deepep": 20, "hybridep": 16}', 'SMS = {"deepep": 24, "hybridep": 16}',
     "Megatron's 20 DeepEP SMs"),
    ("analyses/efficiency/collective.py", "    if t is not None:   # the flex dispatcher's", "    if False:   # the flex dispatcher's",
     "the flex dispatcher priced at its backend's rate"),
    ("analyses/train_time.py", "getattr(hide_tp_under, phase), ep[phase] * ep_sm_share)",
     "getattr(hide_tp_under, phase))", "the overlapped dispatch's SMs taken from compute"),
    ("collectives.py", "return float(distinct_devices(experts, top_k, ep) / top_k)",
     "return float(distinct_devices(experts, top_k, ep) / ep)", "one copy per destination rank: E[ranks] / k"),
    # trtllm-bench's build rule (analyses/efficiency/trtllm_bench.py) and its token limit (serving.py)
    ("analyses/efficiency/trtllm_bench.py", "engine = param_count / 1000 ** 3", "engine = param_count / 1024 ** 3", "the rule's engine in 10^9 bytes"),
    ("analyses/efficiency/trtllm_bench.py", "2 * layers * max(tp, kv_heads)", "2 * layers * kv_heads", "at least one KV head per TP rank"),
    ("analyses/efficiency/trtllm_bench.py", "KV_CACHE_GPU_MEM_FRACTION = 0.95", "KV_CACHE_GPU_MEM_FRACTION = 0.9", "the build's cache fraction 0.95"),
    ("analyses/efficiency/trtllm_bench.py", "raw_batch * (1 + input_len / output_len)", "raw_batch * input_len / output_len", "max num tokens N (1 + ISL / OSL)"),
    ("analyses/efficiency/serving.py", "int(max_tokens / (1 + cp_split(", "int(max_tokens / (2 + cp_split(", "token limit N (1 + P / (G - 1)) <= M"),
    # v1.0's PyTorch rule (trtllm_bench.pytorch_setting) and the checkpoint's elements (dtypes.py)
    ("analyses/efficiency/trtllm_bench.py", '"nvfp4": 0.5}', '"nvfp4": 1.0}', "trtllm-bench v1.0: NVFP4 0.5 bytes per element"),
    ("analyses/efficiency/trtllm_bench.py", "BYTES_PER_ELEM[weight_format] / 1024 ** 3", "BYTES_PER_ELEM[weight_format] / 1000 ** 3",
     "trtllm-bench v1.0: the engine in GiB"),
    ("analyses/efficiency/trtllm_bench.py", "max(tokens, max_input_len + batch)", "tokens",
     "trtllm-bench v1.0: max num tokens >= longest prompt + batch (chunked prefill off)"),
    ("analyses/efficiency/trtllm_bench.py", "kv_fraction * (memory - engine)", "0.95 * (memory - engine)",
     "trtllm-bench v1.0: the run's KV fraction"),
    ("dtypes.py", "total = ceil_div(n * self.bits, 8) if self.bits < 8 else n", "total = n",
     "checkpoint elements: sub-byte values packed into uint8"),
    ("analyses/efficiency/trtllm_bench.py", "raw_batch = min(requests, MAX_BATCH) / pp", "raw_batch = min(requests, MAX_BATCH)", "trtllm-bench rule: batch per pipeline stage"),
    ("analyses/efficiency/trtllm_bench.py", "min(raw_batch * (1 + input_len / output_len), MAX_TOKENS)", "raw_batch * (1 + input_len / output_len)", "trtllm-bench rule: tokens capped at 32768"),
    ("analyses/efficiency/trtllm_bench.py", "return max(64, 32 * math.ceil(raw / 32))", "return max(32, 32 * math.ceil(raw / 32))", "trtllm-bench rule: batch at least 64"),
    ("analyses/efficiency/trtllm_bench.py", "return 128 * math.ceil(raw / 128)", "return 256 * math.ceil(raw / 256)", "trtllm-bench rule: batch to 128 below 1024"),
    ("analyses/efficiency/trtllm_bench.py", "return max(2048, 256 * math.ceil(raw / 256))", "return 256 * math.ceil(raw / 256)", "trtllm-bench rule: tokens at least 2048"),
    ("analyses/efficiency/trtllm_bench.py", "    if raw < 8192:\n", "    if raw < 4096:\n", "trtllm-bench rule: tokens to 512 below 8192"),
    ("analyses/efficiency/serving.py", 'HOST_CPU = {"gb200": "Grace", "gb300": "Grace"}', 'HOST_CPU = {"gb200": "Grace"}', "grace host step on GB300 too"),
    # the L40S's own rates (analyses/efficiency/matmul.py, memory.py, predict.py)
    ("analyses/efficiency/matmul.py", "2 * 512 * 4096 * 4096 / 45.50e-6 / 1e12", "2 * 512 * 4096 * 4096 / 45.05e-6 / 1e12",
     "L40S FP8 rate from the measured 45.50 us"),
    ("analyses/efficiency/memory.py", "return (got / 3350e9 * share,", "return (got / 3350e9,", "inline ECC keeps 15/16 of the stream"),
    ("analyses/efficiency/predict.py", '        order = tuple(f for f in order if f in ("bf16", "fp16"))', "        order = order",
     "16-bit attention on a device with no FP8 attention kernel"),
    # the mixed iteration's GEMM shape and the Server run's p99 TPOT (analyses/efficiency/serving.py)
    ("analyses/efficiency/serving.py", "    m = ga[0] + round(gb[0] * prefills)\n", "    m = ga[0]\n", "one GEMM's rows: decode + prefill tokens"),
    ("analyses/efficiency/serving.py", "math.ceil(m + Z_TAIL * math.sqrt(2 * m / 3))", "math.ceil(m + Z_TAIL * math.sqrt(m))",
     "p99 window concurrency, variance 2m/3"),
    ("analyses/efficiency/serving.py", "        n = latency_limited(lambda m: step_s(tail_concurrency(m, memory_n)), n, tpot_limit_s)\n    gpu, rows",
     "        n = latency_limited(step_s, n, tpot_limit_s)\n    gpu, rows", "Server limit on the p99 request's iteration"),
    # training's fused attention rates (analyses/efficiency/attention.py, train_time.row_terms)
    ("analyses/efficiency/attention.py", "table_figure(FORWARD_CAUSAL, head_dim, 2 * keys_per_query)",
     "table_figure(FORWARD_CAUSAL, head_dim, keys_per_query)", "attention forward at the causal figure of S = 2k"),
    ("analyses/efficiency/attention.py", "work = BACKWARD_FLOPS * forward_flops", "work = 2 * forward_flops",
     "attention backward: FA's 2.5x the forward work"),
    ("analyses/efficiency/attention.py", "f = (x - xs[i - 1]) / (xs[i] - xs[i - 1])",
     "f = (x - xs[i - 1]) / xs[i]", "attention table interpolation"),
    ("analyses/train_time.py", "geometry = (op.head_dim, w.tokens * op.matrix_flops / op.rect_flops)",
     "geometry = (op.head_dim, op.matrix_flops / op.rect_flops)", "attention keys per query T x FLOPs / rectangle"),
)


def run_tests(tree, tests, timeout):
    """True when the tests fail (the mutant is caught)."""
    try:
        p = subprocess.run([sys.executable, "-m", "unittest", "-f", *tests], cwd=os.path.join(tree, "tests"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout,
                           env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    except subprocess.TimeoutExpired:
        return True   # a mutant that hangs the tests is caught
    return p.returncode != 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--match", default="", help="only mutants whose file or description contains TEXT")
    ap.add_argument("--tests", default=" ".join(TESTS), help="the unit test modules to run")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    tests = args.tests.split()
    chosen = [m for m in MUTANTS if args.match in m[0] or args.match in m[3]]
    for path, old, _, what in chosen:   # every mutant's text must still be in the code, once
        n = open(os.path.join(ROOT, PKG, path), encoding="utf-8").read().count(old)
        if n != 1:
            sys.exit(f"{path}: the text of mutant '{what}' occurs {n} times, not once: update the mutant")
    tree = tempfile.mkdtemp(prefix="mutants-")
    try:
        shutil.copytree(os.path.join(ROOT, "calculations"), os.path.join(tree, "calculations"),
                        ignore=shutil.ignore_patterns("__pycache__", "results"))
        os.symlink(os.path.join(ROOT, "calculations", "results"), os.path.join(tree, "calculations", "results"))
        shutil.copytree(os.path.join(ROOT, "tests"), os.path.join(tree, "tests"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        if run_tests(tree, tests, args.timeout):
            sys.exit("the unmutated tests fail: fix them first")
        escaped = []
        for path, old, new, what in chosen:
            f = os.path.join(tree, PKG, path)
            text = open(f, encoding="utf-8").read()
            with open(f, "w", encoding="utf-8") as out:
                out.write(text.replace(old, new))
            try:
                caught = run_tests(tree, tests, args.timeout)
            finally:
                with open(f, "w", encoding="utf-8") as out:
                    out.write(text)
            print(f"{'caught ' if caught else 'ESCAPED'}  {path}: {what}", flush=True)
            if not caught:
                escaped.append(what)
        print(f"{len(chosen) - len(escaped)} of {len(chosen)} mutants caught")
        sys.exit(1 if escaped else 0)
    finally:
        shutil.rmtree(tree)


if __name__ == "__main__":
    main()

"""The collectives of a stage and a PP boundary, and their seconds on the tier each group spans."""

from ... import comm
from ... import layout as placement
from ...collectives import ceil_div


class Communication:
    """The communication methods of `Plan` (plan.py), memoized in its cache."""

    def tier(self, lay, dim):
        span = lay.group_stride("pp") + 1 if dim == "pp" else lay.group_span(dim)
        return "up" if span <= self.domain else "out"

    def local(self, lay, dim):
        """Ranks of the `dim` group inside one scale-up domain when it spans several (1 when it
        fits one: then unused): `comm.ranks_per_domain`."""
        return 1 if self.tier(lay, dim) == "up" else comm.ranks_per_domain(lay, dim, self.domain)

    def tiers(self, lay):
        """The tier of the tp, ep, cp and pp groups, then the ranks per domain (`local`) of the
        tp, ep and cp groups (memoized per layout)."""
        return self.memo(("tiers", lay), lambda: tuple(self.tier(lay, d) for d in ("tp", "ep", "cp", "pp")) +
                         tuple(self.local(lay, d) for d in ("tp", "ep", "cp")))

    def comm_tiers(self, lay):
        """The tiers and ranks per domain of the tp, ep and cp groups: all a stage's own
        collectives depend on (the PP tier only prices boundary transfers), so layouts differing
        in it share them: (tp, ep, cp tiers, tp, ep, cp locals)."""
        return self.memo(("comm tiers", lay), lambda: self.tiers(lay)[:3] + self.tiers(lay)[4:])

    def collectives(self, lay, stage, phase, b, tokens_per_rank):
        """[Collective] one device of `stage` takes part in during one micro-batch pass of
        `phase` ("prefill" or "decode"), b requests of tokens_per_rank new tokens each: its
        top blocks' and, per distinct layer, one layer's collectives x the layer count
        (runs of the same collective merged)."""
        def make():
            merged = {}
            parts = [(self.top_collectives(lay, stage, b, tokens_per_rank), 1)]
            parts += [(self.layer_collectives(lay, layer, phase, b, tokens_per_rank), count)
                      for layer, count in self.kind(lay, stage)[0]]
            for cs, count in parts:
                for c in cs:
                    key = c.replace(count=1)
                    merged[key] = merged.get(key, 0) + c.count * count
            return [c.replace(count=n) for c, n in merged.items()]
        return self.memo(self._comm_key(lay, ("stage", self.kind_id(lay, stage)), phase, b, tokens_per_rank), make)

    def comm_s(self, lay, stage, phase, b, tokens_per_rank):
        """Seconds of every collective of `collectives(...)`, summed the same way, without
        building the merged list (what a search needs)."""
        def make():
            total = self.top_s(lay, (stage.has_embedding, stage.has_head), b, tokens_per_rank)
            for layer, count in self.kind(lay, stage)[0]:
                total += count * self.layer_comm_s(lay, layer, phase, b, tokens_per_rank)
            return total
        return self.memo(self._comm_key(lay, ("stage s", self.kind_id(lay, stage)), phase, b, tokens_per_rank),
                         make)

    def top_s(self, lay, key, b, tokens_per_rank):
        """Seconds of the top blocks' collectives (key = (embedding?, head?)) of one pass."""
        emb, head = key
        return self.memo(("top s", lay.tp, lay.sp, self.tiers(lay)[0], self.tiers(lay)[4], emb, head, b,
                          tokens_per_rank),
                         lambda: sum(self.comm_time(c) for c in self.top_collectives(
                             lay, placement.Stage(0, 0, 0, emb, head), b, tokens_per_rank)))

    def _comm_key(self, lay, what, phase, b, tokens_per_rank):
        return ("comm", lay.tp, lay.ep, lay.cp, lay.sp, self.comm_tiers(lay), what, phase, b, tokens_per_rank)

    def layer_comm_s(self, lay, layer, phase, b, tokens_per_rank):
        """Seconds of `layer_collectives`, summed in its order, from the memoized groups'
        seconds (no collective is built or costed twice)."""
        return self.memo(self._comm_key(lay, ("layer s", layer), phase, b, tokens_per_rank), lambda: sum(
            t for _, times in self.layer_groups(lay, layer, phase, b * tokens_per_rank) for t in times))

    def top_collectives(self, lay, stage, b, tokens_per_rank):
        """The embedding's and the head's TP collectives (vocab-parallel) of one pass."""
        if lay.tp == 1 or not (stage.has_embedding or stage.has_head):
            return []
        arch = self.arch
        return comm.tp_collectives(b * tokens_per_rank, arch.hidden_size, self.act_bytes, lay.tp, lay.sp, 0,
                                   self.tier(lay, "tp"), embedding=stage.has_embedding,
                                   head_tokens=b if stage.has_head else 0,
                                   vocab=lay.tp * ceil_div(arch.vocab_size, lay.tp), local=self.tiers(lay)[4])

    def layer_collectives(self, lay, layer, phase, b, tokens_per_rank):
        """The collectives of ONE layer (its shard `layer`) in one pass, each with count 1 (or
        cp - 1 for the CP ring pass)."""
        return self.memo(self._comm_key(lay, ("layer", layer), phase, b, tokens_per_rank), lambda: [
            c for cs, _ in self.layer_groups(lay, layer, phase, b * tokens_per_rank) for c in cs])

    def comm_group(self, key, build):
        """(collectives, their seconds) of one collectives.py call build(), memoized by `key`,
        the arguments it depends on (layouts and layers that pass the same share them)."""
        def make():
            cs = tuple(build())
            return cs, tuple(self.comm_time(c) for c in cs)
        return self.memo(("comm group",) + key, make)

    def layer_groups(self, lay, layer, phase, tokens):
        """One layer's collectives in one pass of `tokens` tokens per rank, as `comm_group`s:
        TP's, EP's, CP's (in this order)."""
        w, act, hidden = self.w, self.act_bytes, self.arch.hidden_size
        tp_tier, ep_tier, cp_tier, tp_local, ep_local, cp_local = self.comm_tiers(lay)
        tp, ep, cp, sp = lay.tp, lay.ep, lay.cp, lay.sp
        out = []
        moe = [blk for blk in layer.blocks if hasattr(blk, "experts")]
        if tp > 1:
            mlp = 1 if not moe or comm.moe_keeps_tp_reduction(tp, ep, sp, moe[0].shared_inter) else 0
            out.append(self.comm_group(("tp", tokens, tp, sp, tp_tier, tp_local, mlp), lambda: comm.tp_collectives(
                tokens, hidden, act, tp, sp, 1, tp_tier, embedding=False, mlp_layers=mlp, local=tp_local)))
        if ep > 1 and moe:
            k, experts = moe[0].top_k, moe[0].experts
            wire = (comm.token_bytes(hidden, self.dispatch_dtype, act), comm.token_bytes(hidden, self.combine_dtype, act))
            out.append(self.comm_group(("ep", tokens, k, experts, tp, ep, ep_tier, tp_tier, ep_local, tp_local, wire),
                                       lambda: comm.moe_collectives(
                                           tokens, k, hidden, act, tp, ep, 1, ep_tier, tp_tier, self.ep_dedup,
                                           w.routing, experts=experts, loads=w.routing_loads,
                                           dispatch_token_bytes=wire[0], combine_token_bytes=wire[1],
                                           local_ep=ep_local, local_tp=tp_local)))
        if cp > 1:
            per_token = layer.kv_bytes_per_token(w.kv_dtype, (self.wp if phase == "prefill" else self.wd).mla)
            if per_token and phase == "prefill":
                out.append(self.comm_group(("cp", tokens, per_token, cp, cp_tier, cp_local), lambda: comm.cp_collectives(
                    tokens, per_token, cp, 1, cp_tier, local=cp_local)))
            elif per_token:
                out.append(self.comm_group(("cp merge", tokens, cp, cp_tier, cp_local), lambda: [comm.Collective(
                    "CP decode merge of partial attention", "all_reduce", tokens * hidden * act, cp, cp_tier,
                    1, "cp", local=cp_local)]))
        return out

    def comm_time(self, c):
        """Seconds of all c.count runs of a collective on its tier (`comm.run_s`, as the
        `collective` command and `train` charge it)."""
        return comm.run_s(c, self.links, self.algorithm) * c.count

    def comm_time_fastest(self, c):
        """Seconds of all c.count runs of a collective at `comm.lower_bound_s` (the fastest
        applicable algorithm, the binomial tree, and across domains the physical floor): what the
        lower bound charges."""
        return comm.run_s(c, self.links, "bound") * c.count

    def algorithm_for(self, c):
        """The named algorithm where it applies (binomial: all-reduces), ring otherwise."""
        return "binomial" if self.algorithm == "binomial" and c.kind == "all_reduce" else "ring"

    def transfer(self, lay, tokens):
        """([Collective], seconds) of one PP boundary crossing of `tokens` token activations
        (`collectives.pp_boundary_collectives`: the 1/tp slice per TP rank, and without SP the
        receiver's TP all-gather)."""
        if lay.pp == 1:
            return [], 0.0

        def make():
            cs = comm.pp_boundary_collectives(tokens, self.arch.hidden_size, self.act_bytes, lay.tp, lay.sp,
                                              self.tier(lay, "pp"), self.tier(lay, "tp"), local_tp=tiers[4])
            return cs, sum(self.comm_time(c) for c in cs)
        tiers = self.tiers(lay)
        return self.memo(("transfer", lay.tp, lay.sp, tiers[3], tiers[0], tiers[4], tokens), make)

    def stage_time(self, roofline_s, comm_s):
        return max(roofline_s, comm_s) if self.overlap else roofline_s + comm_s

"""`parallel`: serving a model on N devices under a layout (and a search over layouts).

Each device runs its shard (`layout.shard`: an ordinary architecture), so its time
in a phase is the roofline bound of the shard's ledger (as `decode`: the sum of
per-operator bounds, decode steps summed in closed form) plus the communication
it cannot hide (the collectives of `collectives`/`comm`). Stages compose into a
pipeline and replicas into a cluster:

- stage time tau_s = roofline_s + comm_s (no overlap, the default), or
  max(roofline_s, comm_s) with --overlap (communication hidden under the
  shard's kernels up to their time);
- pipeline of pp stages, B requests per replica in m micro-batches of b = B/m:
  one pass of a micro-batch takes L = sum_s tau_s + (pp - 1) x the boundary
  transfer; a prefill of the B prompts ends after L + (m - 1) max_s tau_s (the
  TTFT of the batch); a decode step, in which each micro-batch must leave the
  last stage before its next token can enter the first, recurs every
  cycle = max(L, m max_s tau_s): the TPOT; the slowest stage idles a fraction
  1 - m max_s tau_s / cycle of it (the bubble);
- data parallelism multiplies throughput: dp replicas share nothing.

The per-layer costs are memoized by (layer shard, workload), and a stage's cost
is the sum over its distinct layers of count x the layer's cost, so a search over
thousands of layouts builds each (tp, ep) shard's ledgers once per batch.

The package, in the order data flows: conventions (what every record states), costs
(per-part cost vectors), communication (collectives and their seconds), plan (what a
command or search shares), stage (one stage in one phase), pipeline (stages composed),
records (`parallel`, `--batch-sweep`), search (`--search`; imported from `.search` by its callers,
so a command on one layout does not load it, its floors or the ranking).
"""

from .conventions import (ALGORITHMS, CP_SPLITS, ESTIMATE, LEFT_OUT, LOWER_BOUND, OBJECTIVES,
                          PARALLEL_CONVENTIONS, SERVING_LAYOUT, comm_conventions)
from .costs import Cost
from .pipeline import check_cp, latency, latency_bound, micro_batches, phases, phases_bound, ranked_phase
from .plan import Plan, ServingOptions, stage_kinds, stages
from .records import (SWEEP_COLUMNS, header, inputs_record, layout_record, memory, memory_record,
                      notes, parallel, search_memory, serving_record, sweep)
from .stage import StageFigures, evaluate, ideal_s, stage_figures, stage_records, stage_times

__all__ = [
    'ALGORITHMS', 'check_cp', 'comm_conventions', 'Cost', 'CP_SPLITS', 'ESTIMATE', 'evaluate',
    'header', 'ideal_s', 'inputs_record', 'latency', 'latency_bound', 'layout_record',
    'LEFT_OUT', 'LOWER_BOUND', 'memory', 'memory_record', 'micro_batches', 'notes',
    'OBJECTIVES', 'parallel', 'PARALLEL_CONVENTIONS', 'phases', 'phases_bound', 'Plan', 'ranked_phase',
    'search_memory', 'SERVING_LAYOUT',
    'serving_record', 'ServingOptions', 'stage_figures', 'stage_kinds', 'stage_records', 'stage_times',
    'stages', 'sweep', 'SWEEP_COLUMNS', 'StageFigures',
]

"""Dynamic-sampling filters of the trainers: which rows or groups survive into the training batch.

* `nemo-rl` (`grpo.dynamic_sampling`, NVIDIA-NeMo/RL `nemo_rl/algorithms/grpo.py` @ 7ea279ab):
  per row, keep where the DAPO-pass std is not 0 (`std_guard=legacy`), or where the row's peers
  are not all equal (`trivial`, PR #4158). With leave-one-out a lone success has std 0 and is
  dropped while its siblings stay (PR #3469).
* `verl` (`filter_groups`; verl 0.9.1 `verl/trainer/ppo/v1/replay_buffer.py`
  `ReplayBuffer._dapo_filtered_keys`, L261): per group, evict when it has more than one row and
  `np.std(metric) == 0` (population std), before the batch is formed; singletons are kept.
* `openrlhf` (`dynamic_filtering`; OpenRLHF 0.11.2 `openrlhf/trainer/ppo_utils/samples_generator.py`
  `SamplesGenerator._generate_vllm`, L169): per group, keep when `0 < mean(score) < 1` (strict,
  `dynamic_filtering_range`), on the raw score, never the shaped reward.

`filter_on=reward` filters on the reward the trainer sees (shaped for nemo-rl and verl, raw for
openrlhf); `filter_on=resolved` on the binary outcome (verl's `acc`)."""

from __future__ import annotations

import polars as pl

from replay_cli.config import AdvantageParams
from replay_cli.maths.advantages import add_baseline_and_std, add_peers_all_equal


def add_kept(
    lf: pl.LazyFrame, metric: pl.Expr, gid: str, valid: str, p: AdvantageParams, out: str
) -> pl.LazyFrame:
    """Add a boolean column `out`: the row survives the configured filter."""
    t = f"_{out}_"
    lf = lf.with_columns(metric.cast(pl.Float64).alias(t + "m"))
    m = pl.col(t + "m")
    if p.filter == "none":
        kept = pl.lit(True)
    elif p.filter == "nemo-rl":
        dapo = p.model_copy(update={"estimator": "grpo"})
        lf = add_baseline_and_std(lf, t + "m", valid, gid, dapo, t + "b", t + "std")
        lf = add_peers_all_equal(lf, t + "m", valid, gid, dapo, t + "eq")
        kept = pl.col(t + "std") != 0 if p.std_guard == "legacy" else ~pl.col(t + "eq")
    elif p.filter == "verl":
        kept = (m.std(ddof=0).over(gid) > 0) | (pl.len().over(gid) == 1)
    else:
        mean = m.mean().over(gid)
        kept = (mean > 0) & (mean < 1)
    lf = lf.with_columns(kept.alias(out))
    return lf.drop(c for c in lf.collect_schema().names() if c.startswith(t))

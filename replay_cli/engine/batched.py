"""The batched path of a sweep: NeMo-RL GRPO configs without a dynamic-sampling filter that share
the estimator settings and the masking, evaluated together as (configs × rows) numpy arrays.

Everything that does not depend on the config is computed once per chunk and batch: the sort and
group runs (`ChunkArrays`), the masked rows and the valid mask, the shaping-off advantages. Filters
and peer estimators take the polars plans of row_plans.py instead."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from replay_cli import schema as S
from replay_cli.config import ReplayConfig
from replay_cli.engine.row_batch import RowBatch
from replay_cli.engine.row_plans import RawKey, raw_key
from replay_cli.maths.chunk_arrays import ChunkArrays
from replay_cli.maths.grpo_arrays import baseline_only, grpo
from replay_cli.maths.rounding import f32_bound
from replay_cli.maths.shaping import shape_arrays


def batchable(cfg: ReplayConfig) -> bool:
    """Configs the batched path computes: NeMo-RL's estimator, no dynamic-sampling filter."""
    return cfg.advantage.estimator == "grpo" and cfg.advantage.filter == "none"


def shaping_off_advantages(c: ChunkArrays, key: RawKey) -> np.ndarray:
    """`advantage_raw` (float64, 0.0 on validation rows): the advantages with shaping off."""
    a, mask_flagged = key
    masked = c.mask_sample & mask_flagged
    valid = ~masked if a.exclude_masked else np.ones(len(masked), bool)
    raw = grpo(c.reward, valid, c.runs, a).advantage.astype(np.float64)
    return np.where(c.train, raw, 0.0)


def grpo_rows(
    c: ChunkArrays, batch: Sequence[ReplayConfig], raw_cache: dict[RawKey, np.ndarray]
) -> RowBatch:
    """Shaping and advantages of a batch of configs with one `raw_key` over a chunk."""
    key = raw_key(batch[0])
    if any(raw_key(cfg) != key for cfg in batch):
        raise ValueError("a batch of the batched path shares its estimator and masking")
    a, mask_flagged = key
    shaped = [shape_arrays(c, cfg.shaping) for cfg in batch]
    rewards = np.stack([s.reward_shaped for s in shaped])
    masked = c.mask_sample & mask_flagged
    every = np.ones(len(masked), bool)
    valid, toggled_valid = (~masked, every) if a.exclude_masked else (every, ~masked)
    out = grpo(rewards, valid, c.runs, a)
    # The baseline with masked rows voting vs not: the same baseline when no row is masked.
    toggled = baseline_only(rewards, toggled_valid, c.runs, a) if masked.any() else out.baseline
    if key not in raw_cache:
        raw_cache[key] = shaping_off_advantages(c, key)
    bonus = [s.bonus for s in shaped]
    bound = f32_bound(rewards.astype(np.float32), valid, c.runs, a, out.unclipped, out.peers_equal)
    return RowBatch(
        chunk=c,
        configs=list(batch),
        reward_shaped=rewards,
        deduction=np.stack([s.deduction for s in shaped]),
        bonus=None if all(np.isscalar(x) for x in bonus) else np.stack(np.broadcast_arrays(*bonus)),
        charged=np.stack([s.charged for s in shaped]),
        floored=np.stack([s.floored for s in shaped]),
        masked=masked,
        kept=every,
        grpo=out,
        toggled=toggled,
        adv_raw=raw_cache[key],
        f32_bound=bound,
    )


def row_frame(b: RowBatch, k: int) -> pl.DataFrame:
    """The per-row report of config k (spec §6): the input columns, then the report columns."""
    c = b.chunk
    frame = c.frame
    inputs = [n for n in frame.columns if n not in S.CHUNK_IDS]
    scored = b.scored
    absent = pl.Series(values=~scored) if not scored.all() else None

    def f64(values: np.ndarray) -> pl.Series:
        out = pl.Series(values=values.astype(np.float64, copy=False))
        return out if absent is None else out.set(absent, None)

    def pick(values: np.ndarray) -> np.ndarray:
        return b.per_config(values)[k]

    raw = pl.Series(values=b.adv_raw)
    if not c.all_train:
        raw = raw.set(pl.Series(values=c.is_val), None)
    columns = {
        S.CONFIG_ID: pl.repeat(b.configs[k].config_id, len(frame), eager=True),
        S.REWARD_RAW: frame[S.REWARD],
        S.REWARD_SHAPED: pick(b.reward_shaped),
        S.MINUTES: c.minutes,
        S.BONUS: np.zeros(len(frame)) if b.bonus is None else pick(b.bonus),
        S.DEDUCTION: pick(b.deduction),
        S.CHARGED: pick(b.charged),
        S.FLOORED: pick(b.floored),
        S.MASKED: pick(b.masked),
        S.KEPT: pick(b.kept),
        S.BASELINE: f64(pick(b.grpo.baseline)),
        S.STD: f64(pick(b.grpo.std)),
        S.ADV_UNCLIPPED: f64(pick(b.grpo.unclipped)),
        S.ADVANTAGE: f64(pick(b.grpo.advantage)),
        S.ADV_RAW: raw,
        S.TRIVIAL_PEERS: pick(b.grpo.peers_equal),
        S.NORMALIZED: pick(b.grpo.normalized),
        S.BASELINE_NO_MASKED: f64(pick(b.toggled)),
    }
    report = pl.DataFrame({name: columns[name] for name in S.REPORT_COLUMNS})
    if b.f32_bound is not None:
        report = report.with_columns(f64(pick(b.f32_bound)).alias(S.ADV_F32_BOUND))
    return pl.concat([frame.select(inputs), report], how="horizontal")

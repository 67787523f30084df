"""The decision measure of a replay: per config, what one step of fixed size (maths/effort.py)
does to the resolve rate and to the minutes of successes and failures, beside the same step from
the shaping-off advantages of the same rows, with paired bootstrap intervals over problems.

The replay gathers, chunk by chunk, each training group's logged rollouts per effort level
(`GroupLevels`, config-independent) and each config's advantages summed per level
(`ConfigLevels`); `measure` builds the effort model of every problem once, takes each config's
step and its shaping-off twin's, and resamples problems by reweighting their sums (engine/
bootstrap.py), never by replaying again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from replay_cli import schema as S
from replay_cli.engine.pushes import LENGTHS, length_bucket
from replay_cli.engine.row_batch import RowBatch
from replay_cli.frames import collect
from replay_cli.maths.chunk_arrays import ChunkArrays, run_seconds
from replay_cli.maths.effort import (
    Direction,
    EffortLevels,
    EffortModel,
    limit_of,
    solve_eta,
    stepped,
    window_start,
)
from replay_cli.maths.segments import Runs
from replay_cli.maths.thresholds import SIGNAL_EPS

SCOPES = ("", *(f"@{name}" for name in LENGTHS))
"""The summary's suffixes of the measure: all problems, then each length bucket."""
CONFIG_BLOCK = 8
"""Configs whose steps are computed together ((configs, problems, levels) arrays)."""


def effort_levels(
    rollouts_frame: pl.LazyFrame, length_edges: tuple[float, float], levels: int
) -> tuple[EffortLevels, pl.DataFrame | None]:
    """The input's effort levels (one pass over the training rows' run times) and, where rows
    name their problem (`instance_id`), each problem's length bucket (by the median run time of
    all its training rollouts, so a problem's groups share their levels)."""
    columns = rollouts_frame.collect_schema().names()
    train = rollouts_frame.filter(pl.col(S.SPLIT) != S.SPLIT_VALIDATION)
    pooled = S.INSTANCE_ID in columns
    key = [S.INSTANCE_ID] if pooled else list(S.GROUP_KEYS)
    seconds = train.select(*key, run_seconds())
    medians = seconds.group_by(key).agg(pl.col(S.RUN_TIME).median().alias("_median"))
    lo, hi = length_edges
    bucket = (
        pl.when(pl.col("_median") <= lo).then(0).when(pl.col("_median") > hi).then(2).otherwise(1)
    )
    medians = medians.with_columns(bucket.cast(pl.Int8).alias("_bucket"))
    stats = collect(
        seconds.select(pl.col(S.RUN_TIME).max().alias("longest"), pl.len().alias("rows"))
    )
    longest = float(stats["longest"][0] or 0.0) / 60
    rows = int(stats["rows"][0])
    near = collect(seconds.select((pl.col(S.RUN_TIME) / 60 >= window_start(longest)).sum())).item()
    limit = limit_of(longest, int(near or 0), rows)
    below = seconds.join(medians, on=key, nulls_equal=True)
    if limit is not None:
        below = below.filter(pl.col(S.RUN_TIME) / 60 < limit)
    qs = np.linspace(0, 1, levels)[1:-1]
    edges_frame = collect(
        below.group_by("_bucket").agg(
            *(
                (pl.col(S.RUN_TIME) / 60).quantile(float(q), "linear").alias(f"q{i}")
                for i, q in enumerate(qs)
            )
        )
    )
    edges = []
    for b in range(3):
        row = edges_frame.filter(pl.col("_bucket") == b)
        edges.append(
            tuple(float(row[f"q{i}"][0]) for i in range(len(qs)))
            if row.height
            else (0.0,) * len(qs)
        )
    buckets = collect(medians.select(S.INSTANCE_ID, "_bucket")) if pooled else None
    return EffortLevels(tuple(edges), limit), buckets


@dataclass
class GroupLevels:
    """A chunk's training groups (in the group table's order): logged rollouts per effort level
    (all training rows, loss-masked ones too: they are behaviour), successes and summed minutes
    per level, the group's length bucket and its problem (None: each group is its own)."""

    count: np.ndarray
    success: np.ndarray
    minutes: np.ndarray
    bucket: np.ndarray
    problem: pl.Series | None


@dataclass
class ChunkLevels:
    """A chunk's effort levels: each row's level, and its groups' `GroupLevels`."""

    rows: np.ndarray
    groups: GroupLevels

    @classmethod
    def of(
        cls, c: ChunkArrays, levels: EffortLevels, problem_buckets: pl.DataFrame | None
    ) -> ChunkLevels:
        runs, pick = c.runs, c.train_runs
        if problem_buckets is not None:
            first = c.frame[S.INSTANCE_ID].gather(runs.starts)
            joined = pl.DataFrame({S.INSTANCE_ID: first}).join(
                problem_buckets, on=S.INSTANCE_ID, how="left", maintain_order="left"
            )
            bucket = joined["_bucket"].fill_null(1).to_numpy().astype(np.int8)
        else:
            bucket = length_bucket(c.run_median_seconds, c.length_edges).astype(np.int8)
        rows = levels.of_rows(c.minutes, runs.rows(bucket))
        k = levels.count
        train = c.train
        count = np.stack([runs.sum(train & (rows == j)) for j in range(k)], -1)[pick]
        success = np.stack([runs.sum(train & c.resolved & (rows == j)) for j in range(k)], -1)[pick]
        minutes = np.stack(
            [runs.sum(np.where(train & (rows == j), c.minutes, 0.0)) for j in range(k)], -1
        )[pick]
        problem = None
        if problem_buckets is not None:
            problem = c.frame[S.INSTANCE_ID].gather(runs.starts[pick])
        return cls(rows, GroupLevels(count, success, minutes, bucket[pick], problem))


@dataclass
class ConfigLevels:
    """One config's advantages over a chunk's training groups, per effort level: ā (the mean
    over the group's trainable rows of A at that level, 0 elsewhere), āy (the same of A × resolved),
    and the same from the shaping-off advantages; `off_tied`: shaping off gives the group no
    signal (its outcomes are all equal), so what the config trains there is about time only."""

    a: np.ndarray
    ay: np.ndarray
    a_off: np.ndarray
    ay_off: np.ndarray
    off_tied: np.ndarray
    off_key: Any


def config_levels(b: RowBatch, levels: np.ndarray, count: int, off_key: Any) -> list[ConfigLevels]:
    """Every config of a row batch: its per-level advantage means over the training groups."""
    c = b.chunk
    runs, pick = c.runs, c.train_runs
    t = b.per_config(b.trainable)
    n = np.maximum(runs.sum(t), 1)[:, pick]

    def per_level(adv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = np.where(t, adv, 0.0).astype(np.float64)
        ay = a * c.resolved
        sums = [runs.sum(np.where(levels == j, a, 0.0)) for j in range(count)]
        sums_y = [runs.sum(np.where(levels == j, ay, 0.0)) for j in range(count)]
        return (
            np.stack(sums, -1)[:, pick] / n[..., None],
            np.stack(sums_y, -1)[:, pick] / n[..., None],
        )

    a, ay = per_level(b.grpo.advantage)
    raw = np.broadcast_to(b.adv_raw, t.shape)
    a_off, ay_off = per_level(raw)
    tied = runs.sum(t & (np.abs(raw) > SIGNAL_EPS))[:, pick] == 0
    keys = off_key if isinstance(off_key, list) else [off_key] * len(b.configs)
    return [
        ConfigLevels(a[k], ay[k], a_off[k], ay_off[k], tied[k], keys[k])
        for k in range(len(b.configs))
    ]


@dataclass(frozen=True)
class Problems:
    """The training groups of the whole input gathered into problems: the effort model, each
    group's problem, and the sort that puts a problem's groups together."""

    model: EffortModel
    of_group: np.ndarray
    order: np.ndarray | None
    runs: Runs | None

    @classmethod
    def of(cls, groups: Sequence[GroupLevels]) -> Problems:
        count = np.concatenate([g.count for g in groups])
        success = np.concatenate([g.success for g in groups])
        minutes = np.concatenate([g.minutes for g in groups])
        bucket = np.concatenate([g.bucket for g in groups]).astype(np.int64)
        if groups and groups[0].problem is not None:
            keys = pl.concat([g.problem for g in groups])
            codes = keys.rank("dense").fill_null(0).to_numpy().astype(np.int64)
            codes = np.unique(codes, return_inverse=True)[1]
            order = np.argsort(codes, kind="stable")
            runs = Runs(codes[order])
            fold = lambda x: runs.sum(np.moveaxis(x[order], 0, -1)).T
            model = EffortModel.of_counts(
                fold(count).astype(np.float64),
                fold(success).astype(np.float64),
                fold(minutes),
                bucket[order][runs.starts],
                runs.lengths,
            )
            return cls(model, codes, order, runs)
        model = EffortModel.of_counts(
            count.astype(np.float64),
            success.astype(np.float64),
            minutes,
            bucket,
            np.ones(len(bucket)),
        )
        return cls(model, np.arange(len(bucket)), None, None)

    def mean(self, x: np.ndarray) -> np.ndarray:
        """Per problem, the mean over its groups of a (groups, levels) array."""
        if self.runs is None:
            return x
        summed = self.runs.sum(np.moveaxis(x[self.order], 0, -1))
        return np.moveaxis(summed, -1, 0) / self.runs.lengths[:, None]


@dataclass(frozen=True)
class Steps:
    """One step per config (or shaping-off twin) on every problem: per problem the resolve
    probability P, the summed minutes of successes PM and of all rollouts M before and after, the
    resolve probability with only the effort moved (Pe), the step's KL, and its first-order P."""

    kl: np.ndarray
    d_p: np.ndarray
    d_pm: np.ndarray
    d_m: np.ndarray
    d_pe: np.ndarray
    first_p: np.ndarray
    eta: np.ndarray


def take_steps(model: EffortModel, a: np.ndarray, ay: np.ndarray, budget: float) -> Steps:
    """The fixed-KL step of each config (rows of a, ay: (configs, problems, levels))."""
    direction = Direction.of(model, a, ay)
    eta = solve_eta(model, direction, budget)
    pi2, p2 = stepped(model, direction, eta)
    pi, p, m = model.pi, model.p, model.m
    from replay_cli.maths.effort import kl as kl_of

    p0, pm0, m0 = (pi * p).sum(-1), (pi * p * m).sum(-1), (pi * m).sum(-1)
    mean_d = (pi * direction.d).sum(-1, keepdims=True)
    first = (pi * (direction.d - mean_d) * p).sum(-1) + (pi * p * (1 - p) * direction.e).sum(-1)
    return Steps(
        kl=kl_of(model, pi2, p2),
        d_p=(pi2 * p2).sum(-1) - p0,
        d_pm=(pi2 * p2 * m).sum(-1) - pm0,
        d_m=(pi2 * m).sum(-1) - m0,
        d_pe=(pi2 * p).sum(-1) - p0,
        first_p=eta[:, None] * first,
        eta=eta,
    )

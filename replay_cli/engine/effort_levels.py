"""Each rollout's effort level, gathered from a replay chunk by chunk: each training group's logged
rollouts per level (`maths.problems.GroupLevels`, config-independent) and each config's advantages
summed per level (`ConfigLevels`). The first-step diagnostic (engine/first_step.py) and the forecast
(replay_cli/forecast/) start from them and the problems they make up (`maths.problems.Problems`),
never replaying again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from replay_cli import schema as S
from replay_cli.engine.pushes import length_bucket
from replay_cli.engine.row_batch import RowBatch
from replay_cli.forecast.pool import LOGGED
from replay_cli.forecast.start import start_steps
from replay_cli.frames import collect
from replay_cli.maths.chunk_arrays import ChunkArrays, minutes_of, run_seconds
from replay_cli.maths.effort import EffortLevels, limit_of, window_start
from replay_cli.maths.problems import GroupLevels
from replay_cli.maths.thresholds import SIGNAL_EPS, with_signal


def start_window(frame: pl.LazyFrame) -> pl.LazyFrame:
    """The training rows of the log's first W distinct steps (forecast/start.py): what the
    effort levels' edges, the problems' buckets and the forecast's sample are read from, so that
    a log and its first W steps start alike (the whole input where it has at most W steps)."""
    train = frame.filter(pl.col(S.SPLIT) != S.SPLIT_VALIDATION)
    steps = collect(train.select(pl.col(S.STEP).unique().sort()))[S.STEP]
    width = start_steps(len(steps))
    if width >= len(steps):
        return train
    return train.filter(pl.col(S.STEP) <= steps[width - 1])


def forecast_keys(
    medians: pl.LazyFrame, key: list[str], per_bucket: int, seeds: int, seed: int
) -> pl.DataFrame:
    """The problems the forecast keeps rows of: for each seed, up to `per_bucket` problems of
    each length bucket drawn at random; one row per problem with a bit per seed that drew it."""
    chosen = []
    for s in range(seeds):
        order = pl.int_range(pl.len()).shuffle(seed=seed * 1_000 + s).over("_bucket")
        bit = pl.lit(1 << s, dtype=pl.Int64).alias("_seeds")
        chosen.append(medians.filter(order < per_bucket).select(*key, bit))
    drawn = pl.concat(chosen).group_by(key).agg(pl.col("_seeds").sum().cast(pl.Int64))
    return collect(drawn).sort(key)


def effort_levels(
    rollouts_frame: pl.LazyFrame,
    length_edges: tuple[float, float],
    levels: int,
    forecast: tuple[int, int, int] | None = None,
) -> tuple[EffortLevels, pl.DataFrame | None, pl.DataFrame | None]:
    """The effort levels of the training rows' run times (the caller passes the start window),
    where rows name their problem each problem's length bucket (by its median run time, so its
    groups share their levels), and with `forecast` (problems per bucket, seeds, seed) the
    problems whose rows the forecast keeps."""
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
    # Minutes by numpy's IEEE division, as the chunks compute each row's level (polars divides
    # by a literal through its reciprocal, one ulp off in some rows: a row on an edge would fall
    # on the other side of it).
    rows = collect(seconds.join(medians, on=key, nulls_equal=True).select(S.RUN_TIME, "_bucket"))
    minutes = minutes_of(rows[S.RUN_TIME].to_numpy())
    row_bucket = rows["_bucket"].to_numpy()
    longest = float(minutes.max()) if len(minutes) else 0.0
    near = int((minutes >= window_start(longest)).sum())
    limit = limit_of(longest, near, len(minutes))
    below = np.ones(len(minutes), bool) if limit is None else minutes < limit
    qs = np.linspace(0, 1, levels)[1:-1]
    edges = tuple(
        tuple(float(x) for x in np.quantile(mine, qs)) if len(mine) else (0.0,) * len(qs)
        for mine in (minutes[below & (row_bucket == b)] for b in range(3))
    )
    buckets = collect(medians.select(S.INSTANCE_ID, "_bucket")) if pooled else None
    keys = None if forecast is None else forecast_keys(medians.sort(key), key, *forecast)
    return EffortLevels(edges, limit), buckets, keys


@dataclass
class ChunkLevels:
    """A chunk's effort levels: each row's level, and its groups' `GroupLevels`."""

    rows: np.ndarray
    groups: GroupLevels

    @classmethod
    def of(
        cls,
        c: ChunkArrays,
        levels: EffortLevels,
        problem_buckets: pl.DataFrame | None,
        forecast_keys: pl.DataFrame | None = None,
        edges: tuple[float, float] | None = None,
    ) -> ChunkLevels:
        """A chunk's levels; `edges`: the length buckets' edges a group without a problem name
        is bucketed by (the start window's; default the chunk's own)."""
        runs, pick = c.runs, c.train_runs
        if problem_buckets is not None:
            first = c.frame[S.INSTANCE_ID].gather(runs.starts)
            joined = pl.DataFrame({S.INSTANCE_ID: first}).join(
                problem_buckets, on=S.INSTANCE_ID, how="left", maintain_order="left"
            )
            bucket = joined["_bucket"].fill_null(1).to_numpy().astype(np.int8)
        else:
            edges = c.length_edges if edges is None else edges
            bucket = length_bucket(c.run_median_seconds, edges).astype(np.int8)
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
        step = c.frame[S.STEP].gather(runs.starts[pick]).to_numpy()
        groups = GroupLevels(count, success, minutes, bucket[pick], problem, step=step)
        if forecast_keys is not None:
            groups.seeds, groups.rows = _kept_rows(c, rows, pick, forecast_keys)
        return cls(rows, groups)


def _kept_rows(
    c: ChunkArrays, levels: np.ndarray, pick: np.ndarray, keys: pl.DataFrame
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The forecast's seeds per training group, and the logged rows of the groups it keeps."""
    key = [k for k in keys.columns if k != "_seeds"]
    first = c.frame.select(key).gather(c.runs.starts[pick])
    seeds = first.join(keys, on=key, how="left", maintain_order="left", nulls_equal=True)
    bits = seeds["_seeds"].fill_null(0).to_numpy()
    kept_group = np.zeros(len(c.runs), bool)
    kept_group[pick[bits > 0]] = True
    local = np.full(len(c.runs), -1)
    local[pick] = np.arange(len(pick))
    row_run = c.run_of_row
    keep = kept_group[row_run] & c.train
    rows = {"group": local[row_run[keep]], "level": levels[keep]}
    rows |= {k: getattr(c, k)[keep] for k in LOGGED if k not in rows}
    return bits, rows


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
    # One weighted bincount per array over (group, level) cells instead of a masked sum per level.
    cell = c.run_of_row * count + levels
    cells = len(runs) * count

    def per_level(adv: np.ndarray, trainable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = with_signal(adv, trainable, runs)
        sums = [np.bincount(cell, weights=row, minlength=cells) for row in a]
        sums_y = [np.bincount(cell, weights=row * c.resolved, minlength=cells) for row in a]

        def cells_of(x: list[np.ndarray]) -> np.ndarray:
            return np.stack(x).reshape(len(x), len(runs), count)[:, pick] / n[: len(x), :, None]

        return cells_of(sums), cells_of(sums_y)

    a, ay = per_level(b.grpo.advantage, t)
    if b.trainable.ndim == 1:  # the shaping-off advantages and trainable rows shared: once,
        # and every config of the batch holds a view of the one array (not a copy each)
        shape = (len(b.configs), *pick.shape, count)
        a_off, ay_off = (np.broadcast_to(x, shape) for x in per_level(b.adv_raw[None], t[:1]))
    else:
        a_off, ay_off = per_level(np.broadcast_to(b.adv_raw, t.shape), t)
    raw = np.broadcast_to(b.adv_raw, t.shape)
    tied = runs.sum(t & (np.abs(raw) > SIGNAL_EPS))[:, pick] == 0
    keys = off_key if isinstance(off_key, list) else [off_key] * len(b.configs)
    return [
        ConfigLevels(a[k], ay[k], a_off[k], ay_off[k], tied[k], keys[k])
        for k in range(len(b.configs))
    ]

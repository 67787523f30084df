"""A chunk's config-independent inputs as numpy arrays (`ChunkArrays`, built once per chunk), and
the definitions they are computed with: agent minutes and the chunk's input counts."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl

from replay_cli import schema as S
from replay_cli.frames import count
from replay_cli.maths.segments import Runs


def minutes(run_time: pl.Expr | None = None) -> pl.Expr:
    """`max(run_time, 0) / 60`; null, NaN and ±inf count as 0 minutes (upstream: null only).

    For display only (`inspect`): polars divides by a literal as a multiplication by its
    reciprocal, 1 ulp off Python's division in about 9% of rows; the replay uses
    `minutes_of`, numpy's division, as the trainer's Python does."""
    run_time = pl.col(S.RUN_TIME) if run_time is None else run_time
    return pl.when(run_time.is_finite()).then(run_time.clip(lower_bound=0.0) / 60.0).otherwise(0.0)


def run_seconds() -> pl.Expr:
    """The run time in seconds as the shaping counts it: `max(run_time, 0)`, null, NaN and ±inf
    0. Its median over a group is the group's length (the problem-length buckets)."""
    rt = pl.col(S.RUN_TIME)
    return pl.when(rt.is_finite()).then(rt.clip(lower_bound=0.0)).otherwise(0.0).alias(S.RUN_TIME)


def minutes_of(run_time: np.ndarray) -> np.ndarray:
    """`max(run_time, 0) / 60` with IEEE division (null, NaN and ±inf: 0 minutes)."""
    finite = np.isfinite(run_time)
    return np.where(finite, np.maximum(np.where(finite, run_time, 0.0), 0.0) / 60.0, 0.0)


def input_counts() -> list[pl.Expr]:
    """The config-independent counts of a chunk (the same for every config)."""
    train, resolved, rt = ~pl.col(S.IS_VAL), pl.col(S.RESOLVED), pl.col(S.RUN_TIME)
    return [
        pl.len().cast(pl.Int64).alias("n_rows"),
        count(pl.col(S.IS_VAL)).alias("n_validation"),
        count(train).alias("n_train"),
        count(train & resolved).alias("n_train_resolved"),
        count(rt.is_nan() | rt.is_infinite()).alias("n_run_time_invalid"),
        rt.is_null().sum().cast(pl.Int64).alias("n_run_time_null"),
        count(rt < 0).alias("n_run_time_negative"),
    ]


@dataclass
class ChunkArrays:
    """The chunk's inputs, rows sorted by the group id; `runs` are its groups (train and
    validation groups apart), `steps` its steps."""

    frame: pl.DataFrame
    runs: Runs
    steps: Runs
    reward: np.ndarray  # null -> 0.0
    truthy: np.ndarray  # reward not null and != 0 (the correct gate's Python truthiness)
    negative: np.ndarray  # reward < 0 (null: no)
    resolved: np.ndarray
    minutes: np.ndarray
    calls: np.ndarray
    mask_sample: np.ndarray
    zeroed: np.ndarray
    is_val: np.ndarray
    train: np.ndarray
    train_runs: np.ndarray  # indices of the runs that hold training rows
    length_edges: tuple[float, float] = (0.0, 0.0)
    """Tercile edges of the input's group median run times (seconds): short / medium / long."""

    @classmethod
    def of(cls, chunk: pl.DataFrame, length_edges: tuple[float, float] = (0.0, 0.0)) -> ChunkArrays:
        reward = chunk[S.REWARD]
        runs = Runs(chunk[S.GID])
        is_val = chunk[S.IS_VAL].to_numpy()
        train = ~is_val
        return cls(
            frame=chunk,
            runs=runs,
            steps=Runs(chunk[S.STEP]),
            reward=reward.fill_null(0.0).to_numpy(),
            truthy=(reward.is_not_null() & (reward != 0)).to_numpy(),
            negative=(reward < 0).fill_null(False).to_numpy(),
            resolved=chunk[S.RESOLVED].to_numpy(),
            minutes=minutes_of(chunk[S.RUN_TIME].to_numpy()),
            calls=chunk[S.CALLS].to_numpy(),
            mask_sample=chunk[S.MASK_SAMPLE].to_numpy(),
            zeroed=chunk[S.ZEROED].to_numpy(),
            is_val=is_val,
            train=train,
            train_runs=np.flatnonzero(train[runs.starts]) if len(runs) else runs.starts,
            length_edges=length_edges,
        )

    @cached_property
    def run_of_row(self) -> np.ndarray:
        """The index of each row's run."""
        return np.repeat(np.arange(len(self.runs)), self.runs.lengths)

    @cached_property
    def run_median_seconds(self) -> np.ndarray:
        """Per run, the median of its rows' run times (`run_seconds()`), the group's length."""
        medians = self.frame.group_by(S.GID, maintain_order=True).agg(run_seconds().median())
        return medians[S.RUN_TIME].to_numpy()

    @cached_property
    def group_keys(self) -> dict[str, pl.Series]:
        """(step, group_id) of each training group."""
        first = self.runs.starts[self.train_runs]
        return {k: self.frame[k].gather(first) for k in S.GROUP_KEYS}

    @cached_property
    def input_counts(self) -> pl.DataFrame:
        """The config-independent counts of the chunk's diagnostics (one row)."""
        return self.frame.select(input_counts())

    @property
    def all_train(self) -> bool:
        return not self.is_val.any()

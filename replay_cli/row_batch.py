"""A chunk's rows as numpy arrays: the config-independent inputs (`ChunkArrays`, built once per
chunk) and the per-row results of a batch of configs (`RowBatch`, configs × rows).

The group, step and diagnostic tables are reductions over these arrays, so the configs of a
batch share every reduction call; arrays that do not depend on the config (masked rows, the
filter's survivors, the shaping-off advantages) are shared with a shape of (rows,) and
broadcast.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl

from replay_cli import schema as S
from replay_cli.config import ReplayConfig
from replay_cli.grpo_arrays import GrpoArrays
from replay_cli.segments import Runs
from replay_cli.shaping import minutes_of


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

    @classmethod
    def of(cls, chunk: pl.DataFrame) -> ChunkArrays:
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
        )

    @cached_property
    def run_of_row(self) -> np.ndarray:
        """The index of each row's run."""
        return np.repeat(np.arange(len(self.runs)), self.runs.lengths)

    @cached_property
    def group_keys(self) -> dict[str, pl.Series]:
        """(step, group_id) of each training group."""
        first = self.runs.starts[self.train_runs]
        return {k: self.frame[k].gather(first) for k in S.GROUP_KEYS}

    @cached_property
    def input_counts(self) -> pl.DataFrame:
        """The config-independent counts of the chunk's diagnostics (one row)."""
        from replay_cli.diagnostics import input_counts

        return self.frame.select(input_counts())

    @property
    def all_train(self) -> bool:
        return not self.is_val.any()


@dataclass
class RowBatch:
    """Per-row results of a batch of configs over one chunk: arrays of (configs, rows), or
    (rows,) when shared by every config of the batch. Values of the advantage arrays are
    meaningful on `scored` rows only (training rows the filter kept); `adv_raw` holds 0.0 where
    the shaping-off run has no advantage."""

    chunk: ChunkArrays
    configs: list[ReplayConfig]
    reward_shaped: np.ndarray
    deduction: np.ndarray
    bonus: np.ndarray | None  # None: no config of the batch pays a bonus
    charged: np.ndarray
    floored: np.ndarray
    masked: np.ndarray
    kept: np.ndarray
    grpo: GrpoArrays
    toggled: np.ndarray  # the baseline with masked rows voting vs not
    adv_raw: np.ndarray

    @cached_property
    def trainable(self) -> np.ndarray:
        return self.chunk.train & ~self.masked & self.kept

    @property
    def clipped(self) -> bool:
        """Some config of the batch clips: its advantage and unclipped advantage differ."""
        return any(cfg.advantage.clips for cfg in self.configs)

    @cached_property
    def advantage_abs(self) -> np.ndarray:
        return np.abs(self.grpo.advantage)

    @property
    def scored(self) -> np.ndarray:
        return self.chunk.train & self.kept

    @classmethod
    def from_frame(cls, chunk: ChunkArrays, cfg: ReplayConfig, rows: pl.DataFrame) -> RowBatch:
        """One config's per-row report frame (the polars plans of filters and peer estimators),
        in the chunk's row order."""

        def col(name: str, fill: float = 0.0) -> np.ndarray:
            column = rows[name]
            return column.fill_null(False if column.dtype == pl.Boolean else fill).to_numpy()[None]

        return cls(
            chunk=chunk,
            configs=[cfg],
            reward_shaped=col(S.REWARD_SHAPED),
            deduction=col(S.DEDUCTION),
            bonus=col(S.BONUS),
            charged=col(S.CHARGED),
            floored=col(S.FLOORED),
            masked=col(S.MASKED),
            kept=col(S.KEPT),
            grpo=GrpoArrays(
                baseline=col(S.BASELINE),
                std=col(S.STD, np.nan),
                unclipped=col(S.ADV_UNCLIPPED),
                advantage=col(S.ADVANTAGE),
                peers_equal=col(S.TRIVIAL_PEERS),
                normalized=col(S.NORMALIZED),
            ),
            toggled=col(S.BASELINE_NO_MASKED),
            adv_raw=col(S.ADV_RAW),
        )

    def per_config(self, values: np.ndarray) -> np.ndarray:
        """A shared or per-config array as (configs, ...)."""
        return np.broadcast_to(values, (len(self.configs), *values.shape[-1:]))


def above(x: np.ndarray, threshold: float) -> np.ndarray:
    """`x > threshold` as float64 compares it, without converting a float32 x: against the
    largest float32 not above the threshold (no float32 lies strictly between the two)."""
    t = x.dtype.type(threshold)
    if x.dtype == np.float32 and float(t) > threshold:
        t = np.nextafter(t, x.dtype.type(-np.inf))
    return x > t


def below(x: np.ndarray, threshold: float) -> np.ndarray:
    """`x < threshold` as float64 compares it (see `above`)."""
    t = x.dtype.type(threshold)
    if x.dtype == np.float32 and float(t) < threshold:
        t = np.nextafter(t, x.dtype.type(np.inf))
    return x < t

"""The input's training groups per effort level (`GroupLevels`, gathered by the engine chunk by
chunk, config-independent) and the problems they make up (`Problems`: the effort model of
maths/effort.py, each group's problem). The first-step diagnostic and the forecast start from them,
never replaying again."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from replay_cli.maths.effort import EffortModel
from replay_cli.maths.segments import Runs


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
    seeds: np.ndarray | None = None
    """Per group, a bit per forecast seed that drew its problem (None: no forecast)."""
    rows: dict[str, np.ndarray] | None = None
    """The logged training rollouts of the forecast's groups (`forecast.pool.LOGGED`, and `group`:
    the group's position in this chunk's training groups)."""
    step: np.ndarray | None = None
    """Per group, its training step (the forecast's start and fit read the log's steps)."""


@dataclass(frozen=True)
class Problems:
    """The training groups of the whole input gathered into problems: the effort model, each
    group's problem, and the sort that puts a problem's groups together."""

    model: EffortModel
    of_group: np.ndarray
    order: np.ndarray | None
    runs: Runs | None

    @classmethod
    def of(cls, groups: Sequence[GroupLevels]) -> Problems | None:
        """The problems of the gathered groups (None where the input has no training group)."""
        if not groups or sum(len(g.bucket) for g in groups) == 0:
            return None
        count = np.concatenate([g.count for g in groups])
        success = np.concatenate([g.success for g in groups])
        minutes = np.concatenate([g.minutes for g in groups])
        bucket = np.concatenate([g.bucket for g in groups]).astype(np.int64)
        if groups and groups[0].problem is not None:
            keys = pl.concat([g.problem for g in groups])
            codes = keys.rank("dense").fill_null(0).to_numpy().astype(np.int64)
            # Problems numbered by their first group (not by their ids' sort order), so an
            # `instance_id` that pools nothing lays problems out as the groups are laid out and
            # the bootstrap draws the same weight for each group as without the column.
            _, first, codes = np.unique(codes, return_index=True, return_inverse=True)
            codes = np.argsort(np.argsort(first, kind="stable"), kind="stable")[codes]
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
        as_float = count.astype(np.float64), success.astype(np.float64)
        model = EffortModel.of_counts(*as_float, minutes, bucket, np.ones(len(bucket)))
        return cls(model, np.arange(len(bucket)), None, None)

    def mean(self, x: np.ndarray) -> np.ndarray:
        """Per problem, the mean over its groups of a (groups, levels) array."""
        if self.runs is None:
            return x
        summed = self.runs.sum(np.moveaxis(x[self.order], 0, -1))
        return np.moveaxis(summed, -1, 0) / self.runs.lengths[:, None]

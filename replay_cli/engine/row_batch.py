"""A chunk's rows as numpy arrays: the config-independent inputs (`ChunkArrays`, built once per
chunk) and the per-row results of a batch of configs (`RowBatch`, configs × rows).

The group, step and diagnostic tables are reductions over these arrays, so the configs of a batch
share every reduction call; arrays that do not depend on the config (masked rows, the filter's
survivors, the shaping-off advantages) are shared with a shape of (rows,) and broadcast."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl

from replay_cli import schema as S
from replay_cli.config import ReplayConfig
from replay_cli.maths.chunk_arrays import ChunkArrays
from replay_cli.maths.grpo_arrays import GrpoArrays


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
    f32_bound: np.ndarray | None = None  # maths/rounding.py; None for peer estimators

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
        in the chunk's row order; the float32 bound is NeMo-RL GRPO's only."""

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
            f32_bound=col(S.ADV_F32_BOUND) if cfg.advantage.estimator == "grpo" else None,
        )

    def per_config(self, values: np.ndarray) -> np.ndarray:
        """A shared or per-config array as (configs, ...)."""
        return np.broadcast_to(values, (len(self.configs), *values.shape[-1:]))

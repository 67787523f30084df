"""The replay of the forecast's simulated rollouts, by the replay's own functions: shaping and
NeMo-RL's GRPO for batchable configs (one GRPO call over a block of runs), the polars plans for
filters and peer estimators. The forecast (replay_cli/forecast/) sits below the engine, so the
engine lends it these as `REPLAY` (`forecast.simulate.Replay`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from replay_cli import schema as S
from replay_cli.config import ReplayConfig
from replay_cli.engine.batched import batchable
from replay_cli.engine.row_plans import planned_rows, raw_key
from replay_cli.forecast.simulate import Replay
from replay_cli.maths.chunk_arrays import ChunkArrays
from replay_cli.maths.grpo_arrays import grpo
from replay_cli.maths.segments import Runs
from replay_cli.maths.shaping import shape_arrays


def _chunk(rows: dict[str, np.ndarray], runs: Runs) -> ChunkArrays:
    """A simulated chunk as the shaping and GRPO functions read it (every row trains)."""
    n = len(rows["reward"])
    reward = rows["reward"].astype(np.float64)
    return ChunkArrays(
        frame=pl.DataFrame(),
        runs=runs,
        steps=Runs.of_lengths(np.array([n])),
        reward=reward,
        truthy=reward != 0,
        negative=reward < 0,
        resolved=rows["resolved"].astype(bool),
        minutes=rows["minutes"].astype(np.float64),
        calls=rows["calls"],
        mask_sample=rows["mask_sample"].astype(bool),
        zeroed=rows["zeroed"].astype(bool),
        is_val=np.zeros(n, bool),
        train=np.ones(n, bool),
        train_runs=np.arange(len(runs)),
    )


def _frame(rows: dict[str, np.ndarray], runs: Runs) -> pl.DataFrame:
    """A simulated chunk as the polars plans read it (filters and peer estimators)."""
    n = len(rows["reward"])
    group = np.repeat(np.arange(len(runs)), runs.lengths)
    index = np.arange(n) - np.repeat(runs.starts, runs.lengths)
    return pl.DataFrame(
        {
            S.STEP: np.ones(n, np.int64),
            S.GROUP_ID: group.astype(np.int64),
            S.ROLLOUT_INDEX: index.astype(np.int64),
            S.REWARD: rows["reward"].astype(np.float64),
            S.RESOLVED: rows["resolved"].astype(bool),
            S.RUN_TIME: rows["minutes"].astype(np.float64) * 60.0,
            S.CALLS: rows["calls"].astype(np.int64),
            S.MASK_SAMPLE: rows["mask_sample"].astype(bool),
            S.SPLIT: np.full(n, S.SPLIT_TRAIN),
            S.ZEROED: rows["zeroed"].astype(bool),
            S.IS_VAL: np.zeros(n, bool),
            S.GID: group.astype(np.int64),
            S.BID: np.full(n, 2, np.int64),
        }
    )


def _planned(
    cfg: ReplayConfig, rows: dict[str, np.ndarray], runs: Runs
) -> tuple[np.ndarray, np.ndarray]:
    """(trained advantage, trainable) of a config over simulated rollouts by the polars plans
    (filters and peer estimators)."""
    (out,) = planned_rows(ChunkArrays.of(_frame(rows, runs)), [cfg], {})
    advantage = out[S.ADVANTAGE].fill_null(0.0).to_numpy().astype(np.float64)
    trainable = (~out[S.MASKED] & out[S.KEPT]).to_numpy()
    return advantage, trainable


def _batched_advantages(
    runs: Sequence[ReplayConfig], drawn: dict[str, np.ndarray], groups: Runs, tiled: Runs
) -> tuple[np.ndarray, np.ndarray]:
    """(trained advantage, trainable) of batchable runs sharing a `raw_key` over their drawn
    rollouts, back to back (`tiled`: one run's `groups` repeated per run): each run shaped by
    its own settings, then one GRPO call over every group, which is per group as the replay's."""
    n = len(drawn["reward"]) // len(runs)
    shaped = np.concatenate(
        [
            shape_arrays(
                _chunk({k: v[j * n : (j + 1) * n] for k, v in drawn.items()}, groups), cfg.shaping
            ).reward_shaped
            for j, cfg in enumerate(runs)
        ]
    )
    a, mask_flagged = raw_key(runs[0])
    masked = drawn["mask_sample"].astype(bool) & mask_flagged
    valid = ~masked if a.exclude_masked else np.ones(len(masked), bool)
    return grpo(shaped, valid, tiled, a).advantage.astype(np.float64), ~masked


def advantages(
    runs: Sequence[ReplayConfig], drawn: dict[str, np.ndarray], groups: Runs, tiled: Runs
) -> tuple[np.ndarray, np.ndarray]:
    """(trained advantage, trainable) of runs sharing a `key` over their drawn rollouts, back to
    back: batchable runs in one GRPO call, any other config alone by the polars plans."""
    if batchable(runs[0]):
        return _batched_advantages(runs, drawn, groups, tiled)
    (cfg,) = runs
    return _planned(cfg, drawn, groups)


def key(cfg: ReplayConfig) -> object | None:
    """What batchable runs replayed in one block share (their shaping-off advantages' key);
    None for a config the polars plans replay alone."""
    return raw_key(cfg) if batchable(cfg) else None


REPLAY = Replay(key, advantages)

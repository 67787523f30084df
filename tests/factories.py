"""Test-data factory: rollout tables with valid defaults, so each test states only what it is about."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from replay_cli import ReplayConfig, api, build_config
from replay_cli import schema as S
from replay_cli.report.options import ReportOptions
from replay_cli.result import ReplayResult
from replay_cli.rollouts.synth import synth_rollouts
from replay_cli.rollouts.validation import rollouts_from_frame

# Valid values for the required columns; the optional ones take the schema's own defaults.
DEFAULTS: dict[str, Any] = {
    S.REWARD: 0.0,
    S.RESOLVED: False,
    S.RUN_TIME: 600.0,
    **S.DEFAULTS,
    S.STEP: 1,  # not the schema's 0, so a test that forgets the step still has one
    S.CALLS: 10,
}

SCHEMA = {**S.NORMALISED_TYPES, S.GROUP_ID: pl.Int64()}


def rollouts(**columns: list[Any]) -> pl.DataFrame:
    """One group (group_id 0) unless group_id is given; other columns get valid defaults."""
    n = len(next(iter(columns.values())))
    data: dict[str, list[Any]] = {S.GROUP_ID: [0] * n}
    data.update({k: [v] * n for k, v in DEFAULTS.items()})
    data.update(columns)
    if S.ROLLOUT_INDEX not in columns:
        data[S.ROLLOUT_INDEX] = list(range(n))
    if S.RESOLVED not in columns and S.REWARD in columns:
        data[S.RESOLVED] = [r is not None and r > 0 for r in data[S.REWARD]]
    schema = {k: SCHEMA.get(k) for k in data}
    return pl.DataFrame(
        data, schema={k: v for k, v in schema.items() if v is not None}, strict=False
    )


def replay_frame(
    frame: pl.DataFrame, shaping: dict | None = None, advantage: dict | None = None, **kw: Any
) -> ReplayResult:
    """Replay one config over an in-memory frame (with the forecast, as every command runs)."""
    config = build_config({"shaping": shaping or {}, "advantage": advantage or {}, **kw})
    return api.replay(rollouts_from_frame(frame), [config])


def replay_rows(
    frame: pl.DataFrame, shaping: dict | None = None, advantage: dict | None = None, **kw: Any
) -> ReplayResult:
    """Replay one config over an in-memory frame without the forecast: for tests of the rows,
    groups and steps, which the forecast does not touch (it costs most of a small replay)."""
    config = build_config({"shaping": shaping or {}, "advantage": advantage or {}, **kw})
    return api.replay(rollouts_from_frame(frame), [config], ReportOptions(forecast=None)).result


def config(shaping: dict | None = None, advantage: dict | None = None, **kw: Any) -> ReplayConfig:
    return build_config({"shaping": shaping or {}, "advantage": advantage or {}, **kw})


def write_small_synth(path: Path, seed: int, groups_per_step: int = 8) -> Path:
    """A small synthetic rollout Parquet file (3 steps, groups of 4, 2 validation groups)."""
    synth_rollouts(
        steps=3, groups_per_step=groups_per_step, group_size=4, seed=seed, validation_groups=2
    ).write_parquet(path)
    return path


def forecast(rollouts: Any, configs: list[ReplayConfig], settings: Any) -> Any:
    """The report of a replay of `configs` with the forecast under `settings` (a `Report`)."""
    return api.replay(rollouts, configs, ReportOptions(forecast=settings))

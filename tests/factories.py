"""Test-data factory: rollout tables with valid defaults, so each test states only what it is about."""

from __future__ import annotations

from typing import Any

import polars as pl

from replay_cli import ReplayConfig, build_config, run_replay
from replay_cli.engine import ReplayResult
from replay_cli.validation import rollouts_from_frame

DEFAULTS: dict[str, Any] = {
    "step": 1,
    "reward": 0.0,
    "resolved": False,
    "openhands_run_time": 600.0,
    "calls": 10,
    "mask_sample": False,
    "split": "train",
    "zeroed_by_penalty": False,
}

SCHEMA = {
    "step": pl.Int64,
    "group_id": pl.Int64,
    "rollout_index": pl.Int64,
    "reward": pl.Float64,
    "resolved": pl.Boolean,
    "openhands_run_time": pl.Float64,
    "calls": pl.Int64,
    "mask_sample": pl.Boolean,
    "split": pl.String,
    "zeroed_by_penalty": pl.Boolean,
}


def rollouts(**columns: list[Any]) -> pl.DataFrame:
    """One group (group_id 0) unless group_id is given; other columns get valid defaults."""
    n = len(next(iter(columns.values())))
    data: dict[str, list[Any]] = {"group_id": [0] * n}
    data.update({k: [v] * n for k, v in DEFAULTS.items()})
    data.update(columns)
    if "rollout_index" not in columns:
        data["rollout_index"] = list(range(n))
    if "resolved" not in columns and "reward" in columns:
        data["resolved"] = [r is not None and r > 0 for r in data["reward"]]
    schema = {k: SCHEMA.get(k) for k in data}
    return pl.DataFrame(
        data, schema={k: v for k, v in schema.items() if v is not None}, strict=False
    )


def replay_frame(
    frame: pl.DataFrame, shaping: dict | None = None, advantage: dict | None = None, **kw: Any
) -> ReplayResult:
    """Replay one config over an in-memory frame."""
    config = build_config({"shaping": shaping or {}, "advantage": advantage or {}, **kw})
    return run_replay(rollouts_from_frame(frame), [config])


def config(shaping: dict | None = None, advantage: dict | None = None, **kw: Any) -> ReplayConfig:
    return build_config({"shaping": shaping or {}, "advantage": advantage or {}, **kw})

"""Shaped runs as evidence (issue 53, item 4): a pilot is a run trained with shaping on, its log
read with the config it was trained with (`config.Pilot`). The forecast of that config, from the
pilot's own start, must reproduce the pilot's logged trajectory: the same stages as the user's
log (`backtest.STAGES`: the start window, the cautious reading's path, the backtest on the last
third), with `simulate` running the pilot's config instead of shaping off. The pilot's groups are
binned on the user's log's effort levels and length buckets (the engine gathers them), so its
shares and long problems read as the user's do.

What a pilot does not change: the verdict's numbers (the rule reads the forecast of the user's
log alone); a failed pilot backtest adds to the confidence's caveat."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.config import ReplayConfig
from replay_cli.forecast.backtest import MIN_BACKTEST, OFF, STAGES, Prepared
from replay_cli.forecast.simulate import Replay, path
from replay_cli.maths.problems import GroupLevels, Problems

CHECKED = STAGES[:3]
"""A pilot's stages: its start, the cautious reading's path (the fit is the user's log's), the
backtest; the reading stage is the main forecast's alone."""


@dataclass(frozen=True)
class PilotLog:
    """A pilot as the forecast reads it: its log's name, its config and its training groups per
    effort level (the user's log's levels and buckets)."""

    name: str
    config: ReplayConfig
    groups: Sequence[GroupLevels]


def _why(s: Prepared) -> str:
    """Why a pilot's backtest did not run: the log's own reason (no problem names, too few
    steps, no problem logged twice), else too few steps for the backtest."""
    if s.fit is not None and s.fit.why not in (None, OFF):
        return s.fit.why
    return f"the log spans {s.distinct} distinct steps and the backtest needs {MIN_BACKTEST}"


def checked(
    pilot: PilotLog, seeds: int, seed: int, interval: float, budget: float, replay: Replay
) -> dict[str, float | str | None]:
    """One pilot's row: its name, config, the backtest of its config's forecast against its last
    third (the backtest's columns and line), or why it could not be checked."""
    label = pilot.config.label
    row: dict[str, float | str | None] = {
        C.FORECAST_PILOT: Path(pilot.name).name,
        S.CONFIG_ID: pilot.config.config_id,
        C.FORECAST_PILOT_CONFIG: label,
    }
    problems = Problems.of(pilot.groups)
    if problems is None:
        return row | {C.FORECAST_BACKTEST: "cannot be checked: the log has no training group"}
    s = Prepared(
        problems,
        pilot.groups,
        seeds,
        seed,
        interval,
        path(pilot.config, budget, seed, replay),
        False,
        label,
        "that run",
    )
    for stage in CHECKED:
        s = stage(s)
    row |= s.columns
    if C.FORECAST_BACKTEST not in s.columns:
        row[C.FORECAST_BACKTEST] = f"cannot be checked: {_why(s)}"
    return row


def pilot_table(
    pilots: Sequence[PilotLog],
    seeds: int,
    seed: int,
    interval: float,
    budget: float,
    replay: Replay,
) -> pl.DataFrame | None:
    """pilots.parquet: one row per pilot (None without pilots)."""
    if not pilots:
        return None
    rows = [checked(p, seeds, seed, interval, budget, replay) for p in pilots]
    return pl.from_dicts(rows, infer_schema_length=None)

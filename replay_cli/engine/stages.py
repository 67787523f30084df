"""The stages after the replay proper: from the effort levels a replay gathered (`Gathered`), the
first step's diagnostic columns and, where asked, the forecast (its table, its summary columns
at the horizon, which the rule reads, and its resamples, which the confidence reads). The engine's
entry points (`run_replay`, the Ray engine) call `outcomes` once the rows are replayed, on what the
accumulator gathered; no replay work happens here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import polars as pl

from replay_cli import schema as S
from replay_cli.config import EffortSettings, ForecastSettings, ReplayConfig
from replay_cli.engine.effort_levels import ConfigLevels
from replay_cli.engine.first_step import diagnose
from replay_cli.engine.simulated import REPLAY
from replay_cli.forecast.pilots import PilotLog, pilot_table
from replay_cli.forecast.runs import forecast
from replay_cli.maths.problems import GroupLevels, Problems
from replay_cli.progress import Progress, phase
from replay_cli.result import ReplayResult


@dataclass(frozen=True)
class Gathered:
    """What the replay gathered for the stages: each input chunk's training groups per effort
    level, the problems they make up, and each config's advantages summed per level and chunk."""

    groups: list[GroupLevels]
    problems: Problems | None
    efforts: dict[str, list[ConfigLevels]]


def outcomes(
    result: ReplayResult,
    gathered: Gathered,
    configs: Sequence[ReplayConfig],
    settings: EffortSettings,
    ahead: ForecastSettings | None,
    progress: Progress | None = None,
    pilots: Sequence[PilotLog] = (),
) -> ReplayResult:
    """The result with the first step's columns and, with `ahead`, the forecast's joined to its
    summary (config by config, after the replay's own columns), and each pilot's backtest (the
    pilots table)."""
    phase(progress, "first-step diagnostic")
    first = diagnose(gathered.problems, gathered.efforts, settings)
    rows = {r[S.CONFIG_ID]: {**r, **first[r[S.CONFIG_ID]]} for r in result.summary.to_dicts()}
    table, resamples, checked = None, None, None
    if ahead is not None and gathered.problems is not None:
        phase(progress, "forecast")
        table, at_t, resamples = forecast(
            gathered.problems, gathered.groups, configs, ahead, settings.step_kl, settings, REPLAY
        )
        for cid, row in rows.items():
            row |= at_t[cid]
        checked = pilot_table(
            pilots, ahead.seeds, ahead.seed, settings.interval, settings.step_kl, REPLAY
        )
    summary = pl.from_dicts(list(rows.values()), infer_schema_length=None)
    return replace(result, summary=summary, forecast=table, resamples=resamples, pilots=checked)

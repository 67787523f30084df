"""What a replay returns: the report tables in memory (`ReplayResult`); the verdict on them is
the report's (`report.model.Report`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from replay_cli.config import ReplayConfig


@dataclass(frozen=True)
class ReplayResult:
    """The report tables of spec §6 for one or more configs.

    The engine builds the tables; the API adds the notes with `dataclasses.replace`, so nothing
    fills a result after it is made. `rows` and `groups` are None when they were streamed to sinks
    instead of kept in memory. `advantages` (trainable rows) and `deductions` (charged rows) per
    config_id and the input's `minutes` back the distribution charts and the quantiles."""

    rows: pl.DataFrame | None
    groups: pl.DataFrame | None
    steps: pl.DataFrame
    summary: pl.DataFrame
    configs: list[ReplayConfig]
    advantages: dict[str, pl.Series] = field(default_factory=dict)
    deductions: dict[str, pl.Series] = field(default_factory=dict)
    minutes: pl.Series | None = None
    top_groups: pl.DataFrame | None = None
    """`maths.top_groups.top_groups` of the group table (kept while its rows are streamed)."""
    resamples: pl.DataFrame | None = None
    """The forecast's numbers the rule reads per bootstrap resample and config (forecast/horizon.RESAMPLED): the confidence reads them."""
    forecast: pl.DataFrame | None = None
    """The forecast per config, budget, step, bucket and metric (replay_cli/forecast/); None
    unless asked for."""
    pilots: pl.DataFrame | None = None
    """Per pilot run (`--pilot`) its config and its backtest (forecast/pilots.py); None
    without pilots."""
    notes: list[str] = field(default_factory=list)
    """Warnings about the replay itself (e.g. an estimator that needs a column the input lacks)."""
    input_notes: list[str] = field(default_factory=list)
    """How the input was read (groups derived from row order, resolved taken from the reward,
    replay-written columns dropped): printed with the report, and in the manifest."""
    computed_by: list[str] = field(default_factory=list)
    """Where arithmetic other than replay_cli's own kernels ran (`--precision torch`: torch's
    version and device), for the manifest and the terminal."""

"""What a replay returns: the report tables in memory (`ReplayResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from replay_cli.config import ReplayConfig


@dataclass
class ReplayResult:
    """The report tables of spec §6 for one or more configs.

    `rows` and `groups` are None when they were streamed to sinks instead of kept in memory.
    `advantages` (trainable rows) and `deductions` (charged rows) per config_id and the input's
    `minutes` back the distribution charts and the quantiles.
    """

    rows: pl.DataFrame | None
    groups: pl.DataFrame | None
    steps: pl.DataFrame
    summary: pl.DataFrame
    configs: list[ReplayConfig]
    advantages: dict[str, pl.Series] = field(default_factory=dict)
    deductions: dict[str, pl.Series] = field(default_factory=dict)
    minutes: pl.Series | None = None
    findings: pl.DataFrame | None = None
    recommendation: pl.DataFrame | None = None
    """`advice.recommendation.recommend(summary)`: the role of every config and why."""
    top_groups: pl.DataFrame | None = None
    """`advice.top_groups.top_groups` of the group table (kept while its rows are streamed)."""
    notes: list[str] = field(default_factory=list)
    """Warnings about the replay itself (e.g. an estimator that needs a column the input lacks)."""
    input_notes: list[str] = field(default_factory=list)
    """How the input was read (groups derived from row order, resolved taken from the reward,
    replay-written columns dropped): printed with the report, and in the manifest."""
    computed_by: list[str] = field(default_factory=list)
    """Where arithmetic other than replay_cli's own kernels ran (`--precision torch`: torch's
    version and device), for the manifest and the terminal."""

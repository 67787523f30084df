"""How a report is written, as one frozen object the CLI and notebooks build
(`ReportOptions`): output, engine, the first-step diagnostic's settings and the rule."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from replay_cli.advice.rule import Rule
from replay_cli.config import DEFAULT_CHUNK_ROWS, EffortSettings, ForecastSettings, Pilot
from replay_cli.io.parquet import RowsMode

Engine = Literal["local", "ray"]


class ReportOptions(BaseModel):
    """Everything about a report that is not a replay parameter. A new option is a field here,
    read where it acts; nothing threads it through signatures."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    force: bool = Field(False, description="replace an existing report directory")
    charts: bool = Field(False, description="draw the PNG charts")
    rows: RowsMode = Field(
        "all", description="the per-row table: all rows, a sample of whole groups, or none"
    )
    highlight: tuple[str, ...] = Field(
        (), description="configs drawn step by step (default: off, recommended, runner-up)"
    )
    tensorboard: Path | None = Field(None, description="also write TensorBoard runs here")
    wandb: Path | None = Field(None, description="also write offline W&B runs here")
    engine: Engine = Field("local", description="where the chunks run: local threads or Ray")
    ray_address: str | None = Field(None, description="the Ray cluster to join")
    chunk_rows: int = Field(DEFAULT_CHUNK_ROWS, ge=1, description="rows per chunk of whole steps")
    effort: EffortSettings = Field(
        EffortSettings(),
        description="the effort model's step and the bootstrap (the first-step diagnostic and the forecast)",
    )
    forecast: ForecastSettings | None = Field(
        ForecastSettings(),
        description="the forecast whose outcome at the horizon the rule reads (None: no "
        "forecast, and the verdict does not judge resolve rate)",
    )
    rule: Rule = Field(Rule(), description="the recommendation's thresholds")
    pilots: tuple[Pilot, ...] = Field(
        (),
        description="runs trained with shaping on, each backtested under its own config beside "
        "the user's log (forecast/pilots.py)",
    )

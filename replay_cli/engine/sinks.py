"""A replay streamed into a report directory: the per-row and group tables go to Parquet files as
the chunks finish, on the local threads or on Ray (the one place that picks the engine)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from replay_cli import schema as S
from replay_cli.config import (
    DEFAULT_CHUNK_ROWS,
    EffortSettings,
    ForecastSettings,
    Pilot,
    ReplayConfig,
)
from replay_cli.engine.run import run_replay
from replay_cli.errors import ConfigError
from replay_cli.io.parquet import ParquetRowSink, RowsMode
from replay_cli.progress import Progress
from replay_cli.result import ReplayResult
from replay_cli.rollouts.validation import Rollouts


def replay_into(
    directory: Path,
    rollouts: Rollouts,
    configs: Sequence[ReplayConfig],
    *,
    rows: RowsMode = "all",
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    settings: EffortSettings | None = None,
    forecast: ForecastSettings | None = None,
    load_args: dict[str, Any] | None = None,
    progress: Progress | None = None,
    pilots: Sequence[tuple[Pilot, Rollouts]] = (),
) -> ReplayResult:
    """Replay into `directory`: rollouts.parquet (all rows, a sample of whole groups, or none)
    and groups.parquet are written chunk by chunk, so the result's `rows` and `groups` are
    None. `engine="ray"` runs the chunks as Ray tasks (workers read the input again, so it needs
    `load_args`: the files and how to load them) and gives the same tables."""
    group_sink = ParquetRowSink(directory / "groups.parquet", statistics=S.CONFIG_GROUP_KEYS)
    if engine == "ray":
        from replay_cli.engine.ray_engine import merge_parts, run_replay_ray

        if load_args is None:
            raise ConfigError("--engine ray needs input files that the workers can read.")
        try:
            result, parts = run_replay_ray(
                load_args,
                rollouts,
                configs,
                progress,
                chunk_rows=chunk_rows,
                part_dir=directory / "_parts",
                rows_mode=rows,
                address=ray_address,
                group_sink=group_sink,
                settings=settings,
                forecast=forecast,
                pilots=pilots,
            )
        finally:
            group_sink.close()
        merge_parts(parts, directory / "rollouts.parquet")
        shutil.rmtree(directory / "_parts", ignore_errors=True)
        return result
    sink = ParquetRowSink(directory / "rollouts.parquet", rows, statistics=S.CONFIG_GROUP_KEYS)
    try:
        return run_replay(
            rollouts,
            configs,
            progress=progress,
            row_sink=sink,
            chunk_rows=chunk_rows,
            group_sink=group_sink,
            with_rows=rows != "none",
            settings=settings,
            forecast=forecast,
            pilots=pilots,
        )
    finally:
        sink.close()
        group_sink.close()

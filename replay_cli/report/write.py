"""Write a report directory atomically: Parquet tables, findings, charts, a manifest and
index.html (spec §6)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import polars as pl

from replay_cli.advice.findings import findings
from replay_cli.advice.recommendation import recommend
from replay_cli.config import unique_labels
from replay_cli.io.files import staged_directory
from replay_cli.io.parquet import ROW_GROUP_SIZE, RowsMode
from replay_cli.maths.peers import whitening_weights
from replay_cli.report.html import render_index
from replay_cli.result import ReplayResult
from replay_cli.rollouts.validation import Rollouts

TABLES = ("rollouts", "groups", "steps", "summary", "findings")


def manifest(
    result: ReplayResult,
    rollouts: Rollouts,
    argv: list[str] | None = None,
    rows_mode: RowsMode = "all",
    highlight: list[str] | None = None,
) -> dict[str, Any]:
    """Tool version, command line, input files with sizes and hashes, configs and loading notes."""
    labels = unique_labels(result.configs)
    return {
        "tool": "replay_cli",
        "version": version("replay-cli"),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "command_line": argv if argv is not None else sys.argv,
        "inputs": [vars(f) for f in rollouts.files],
        "resolved_derived_from_reward": rollouts.resolved_derived,
        "notes": [*rollouts.notes, *result.notes],
        "computed_by": result.computed_by,
        "rows": rows_mode,
        "highlight": highlight,
        **(
            {"whitening_weights": whitening_weights(rollouts.frame.collect_schema().names())}
            if any(c.advantage.estimator == "reinforce-pp-baseline" for c in result.configs)
            else {}
        ),
        "configs": [
            {"config_id": c.config_id, "label": labels[c.config_id], **c.model_dump(mode="json")}
            for c in result.configs
        ],
        "tables": {
            name: f"{name}.parquet" for name in TABLES if name != "rollouts" or rows_mode != "none"
        },
    }


def write_tables(directory: Path, tables: dict[str, pl.DataFrame]) -> None:
    """`name.parquet` per table."""
    for name, frame in tables.items():
        frame.write_parquet(directory / f"{name}.parquet", row_group_size=ROW_GROUP_SIZE)


def write_directory(
    out: Path,
    tables: dict[str, pl.DataFrame],
    extra: Callable[[Path], object] | None = None,
    *,
    force: bool = False,
) -> Path:
    """Write tables (and whatever `extra` puts in the directory) as one atomic directory."""
    with staged_directory(out, force) as tmp:
        write_tables(tmp, tables)
        if extra is not None:
            extra(tmp)
        render_index(tmp)
    return Path(out)


def finish_report(
    tmp: Path,
    result: ReplayResult,
    rollouts: Rollouts,
    *,
    charts: Callable[[ReplayResult, Path, list[str] | None], list[Path]] | None = None,
    argv: list[str] | None = None,
    rows_mode: RowsMode = "all",
    highlight: list[str] | None = None,
    tensorboard: Path | None = None,
) -> None:
    """Everything of a report but the per-row table: groups, steps, summary, findings, charts,
    manifest and index.html."""
    tables = {"steps": result.steps, "summary": result.summary}
    if result.groups is not None:
        tables["groups"] = result.groups
    if result.rows is not None:
        tables["rollouts"] = result.rows
    write_tables(tmp, tables)
    if result.recommendation is None:
        result.recommendation = recommend(result.summary)
    if result.findings is None:  # the engine has them when it kept the groups in memory
        groups = pl.scan_parquet(tmp / "groups.parquet")
        result.findings = findings(result.summary, groups, result.top_groups, result.recommendation)
    write_tables(tmp, {"findings": result.findings, "recommendation": result.recommendation})
    if charts is not None:
        charts(result, tmp / "charts", highlight)
    about = manifest(result, rollouts, argv, rows_mode, highlight)
    if tensorboard is not None:
        about["tensorboard"] = str(tensorboard)
    text = json.dumps(about, indent=2) + "\n"
    (tmp / "manifest.json").write_text(text)
    render_index(tmp, result.top_groups)


def write_report(
    out: Path,
    result: ReplayResult,
    rollouts: Rollouts,
    *,
    force: bool = False,
    charts: Callable[[ReplayResult, Path, list[str] | None], list[Path]] | None = None,
    argv: list[str] | None = None,
) -> Path:
    """The report of spec §6 from an in-memory result: four tables, optional charts/, manifest.json."""
    with staged_directory(out, force) as tmp:
        finish_report(tmp, result, rollouts, charts=charts, argv=argv)
    return Path(out)
